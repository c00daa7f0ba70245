//! The PKI's own view of the cluster (hosts, SANs, service ranges) and the SAN lists derived
//! from it (§11.1).

use std::net::IpAddr;

use ipnet::IpNet;

use super::PkiError;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostRoles {
    pub etcd: bool,
    pub controlplane: bool,
    pub worker: bool,
}

/// A node as the PKI sees it; empty strings mean "not set", as in `cluster.yml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PkiHost {
    pub address: String,
    pub internal_address: String,
    pub hostname_override: String,
    pub roles: HostRoles,
}

/// `services.etcd.{ca_cert,cert,key}` of a cluster using external etcd (PEM text).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExternalEtcd {
    pub ca_cert: String,
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for ExternalEtcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalEtcd")
            .field("ca_cert_len", &self.ca_cert.len())
            .field("cert_len", &self.cert.len())
            .field("key", &"<redacted>")
            .finish()
    }
}

/// Everything certificate generation depends on.
#[derive(Debug, Clone, Default)]
pub struct PkiSpec {
    /// Nodes in `cluster.yml` order (the order decides SAN order and the first controlplane).
    pub hosts: Vec<PkiHost>,
    /// `authentication.sans`.
    pub extra_sans: Vec<String>,
    /// `services.kube-api.service_cluster_ip_range`, split on `,` (see [`parse_service_cidrs`]).
    pub service_cidrs: Vec<IpNet>,
    /// `services.kubelet.cluster_domain`.
    pub cluster_domain: String,
    pub cluster_name: String,
    /// `services.kubelet.generate_serving_certificate`.
    pub kubelet_serving_certs: bool,
    /// Set when `services.etcd.external_urls` is non-empty.
    pub external_etcd: Option<ExternalEtcd>,
    /// `configPath` recorded in the `kube-admin` entry: the local kubeconfig path (§6).
    pub admin_kubeconfig_path: String,
}

impl PkiSpec {
    pub fn etcd_hosts(&self) -> impl Iterator<Item = &PkiHost> {
        self.hosts.iter().filter(|h| h.roles.etcd)
    }

    pub fn controlplane_hosts(&self) -> impl Iterator<Item = &PkiHost> {
        self.hosts.iter().filter(|h| h.roles.controlplane)
    }

    /// SANs of `kube-apiserver`: every controlplane host, the user SANs, then the fixed names.
    pub fn kube_api_alt_names(&self) -> AltNames {
        alt_names(self.controlplane_hosts(), &self.extra_sans, self)
    }

    /// SANs shared by every `kube-etcd-*` certificate: every etcd host and the fixed names.
    pub fn etcd_alt_names(&self) -> AltNames {
        alt_names(self.etcd_hosts(), &[], self)
    }
}

/// DNS and IP SANs, in the order RKE1 puts them into the certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AltNames {
    pub dns_names: Vec<String>,
    pub ips: Vec<IpAddr>,
}

impl AltNames {
    fn push(&mut self, name: &str) {
        match name.parse::<IpAddr>() {
            Ok(ip) => self.ips.push(ip.to_canonical()),
            Err(_) => self.dns_names.push(name.to_string()),
        }
    }

    fn push_host(&mut self, host: &PkiHost) {
        self.push(&host.address);
        if !host.internal_address.is_empty() && host.internal_address != host.address {
            self.push(&host.internal_address);
        }
        // The hostname override is always a DNS name, even when it looks like an IP (as RKE1).
        if !host.hostname_override.is_empty() && host.hostname_override != host.address {
            self.dns_names.push(host.hostname_override.clone());
        }
    }

    pub fn for_host(host: &PkiHost) -> AltNames {
        let mut names = AltNames::default();
        names.push_host(host);
        names
    }

    /// Same names regardless of order or duplicates' positions.
    pub fn same_set(&self, dns_names: &[String], ips: &[IpAddr]) -> bool {
        let mut a_dns = self.dns_names.clone();
        let mut b_dns = dns_names.to_vec();
        a_dns.sort();
        b_dns.sort();
        let mut a_ips = self.ips.clone();
        let mut b_ips: Vec<IpAddr> = ips.iter().map(|ip| ip.to_canonical()).collect();
        a_ips.sort();
        b_ips.sort();
        a_dns == b_dns && a_ips == b_ips
    }
}

fn alt_names<'a>(
    hosts: impl Iterator<Item = &'a PkiHost>,
    extra_sans: &[String],
    spec: &PkiSpec,
) -> AltNames {
    let mut names = AltNames::default();
    for host in hosts {
        names.push_host(host);
    }
    for san in extra_sans {
        names.push(san);
    }
    names.ips.push(IpAddr::from([127, 0, 0, 1]));
    names
        .ips
        .extend(kubernetes_service_ips(&spec.service_cidrs));
    names.dns_names.extend([
        "localhost".to_string(),
        "kubernetes".to_string(),
        "kubernetes.default".to_string(),
        "kubernetes.default.svc".to_string(),
        format!("kubernetes.default.svc.{}", spec.cluster_domain),
    ]);
    names
}

/// Parses `service_cluster_ip_range` (comma-separated for dual stack).
pub fn parse_service_cidrs(value: &str) -> Result<Vec<IpNet>, PkiError> {
    value
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<IpNet>()
                .map_err(|e| PkiError::ServiceCidr {
                    value: value.to_string(),
                    reason: e.to_string(),
                })
        })
        .collect()
}

/// First address of each service range (`10.43.0.0/16` → `10.43.0.1`).
pub fn kubernetes_service_ips(cidrs: &[IpNet]) -> Vec<IpAddr> {
    cidrs
        .iter()
        .map(|net| match net.network() {
            IpAddr::V4(v4) => IpAddr::from(u32::from(v4).wrapping_add(1).to_be_bytes()),
            IpAddr::V6(v6) => IpAddr::from(u128::from(v6).wrapping_add(1).to_be_bytes()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ip_is_first_address_of_each_range() {
        let cidrs = parse_service_cidrs("10.43.0.0/16,fd98::/108").unwrap();
        assert_eq!(
            kubernetes_service_ips(&cidrs),
            vec![
                "10.43.0.1".parse::<IpAddr>().unwrap(),
                "fd98::1".parse().unwrap()
            ]
        );
        // A host address inside the range is masked first, as RKE1 does.
        let cidrs = parse_service_cidrs("10.43.7.9/16").unwrap();
        assert_eq!(
            kubernetes_service_ips(&cidrs),
            vec![IpAddr::from([10, 43, 0, 1])]
        );
        assert!(parse_service_cidrs("10.43.0.0").is_err());
    }

    #[test]
    fn api_alt_names_follow_rke_order() {
        let spec = PkiSpec {
            hosts: vec![
                PkiHost {
                    address: "1.1.1.1".into(),
                    internal_address: "10.0.0.1".into(),
                    hostname_override: "cp1".into(),
                    roles: HostRoles {
                        controlplane: true,
                        ..Default::default()
                    },
                },
                PkiHost {
                    address: "w.example.com".into(),
                    roles: HostRoles {
                        worker: true,
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ],
            extra_sans: vec!["lb.example.com".into(), "5.5.5.5".into()],
            service_cidrs: parse_service_cidrs("10.43.0.0/16").unwrap(),
            cluster_domain: "cluster.local".into(),
            ..Default::default()
        };
        let names = spec.kube_api_alt_names();
        assert_eq!(
            names.dns_names,
            vec![
                "cp1",
                "lb.example.com",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local"
            ]
        );
        let ips: Vec<String> = names.ips.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            ips,
            vec!["1.1.1.1", "10.0.0.1", "5.5.5.5", "127.0.0.1", "10.43.0.1"]
        );
    }
}
