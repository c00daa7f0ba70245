//! The per-host assembly of a Linux host: which containers, files, certificates and port
//! checks it gets for its roles, and the cluster's port-check matrix.

use indexmap::IndexMap;

use super::*;
use crate::plan::util::{join_path, uniq};

impl<'a> ClusterView<'a> {
    pub fn linux_host_plan(&self, host: &Host, facts: &HostFacts) -> Result<HostPlan, PlanError> {
        let prefix = host_prefix_path(&self.cfg.prefix_path, &facts.operating_system);
        let mut containers = IndexMap::new();
        let mut add = |spec: ContainerSpec| {
            containers.insert(spec.name.clone(), spec);
        };
        if host.roles.etcd {
            add(self.etcd(host, facts, &prefix));
            if self.cfg.services.etcd.snapshot == Some(true) {
                add(self.etcd_rolling_snapshots(host, facts, &prefix));
            }
        }
        if host.roles.controlplane {
            add(self.sidekick(facts));
            add(self.kube_apiserver(host, facts, &prefix));
            add(self.kube_controller_manager(facts, &prefix));
            add(self.kube_scheduler(facts, &prefix));
        } else {
            add(self.nginx_proxy(facts));
            add(self.sidekick(facts));
        }
        add(self.kubelet(host, facts, &prefix));
        add(self.kube_proxy(host, facts, &prefix));

        let mut port_checks = Vec::new();
        let mut ports = |list: &[u16]| {
            for port in list {
                port_checks.push(PortCheck {
                    address: host.address.clone(),
                    port: *port,
                    protocol: "TCP".into(),
                });
            }
        };
        ports(&[10250]);
        if host.roles.controlplane {
            ports(&[6443]);
        }
        if host.roles.etcd {
            ports(&[2379, 2380]);
        }

        Ok(HostPlan {
            address: host.address.clone(),
            internal_address: host.internal_address.clone(),
            hostname: host.hostname.clone(),
            roles: host.roles.clone(),
            files: self.files(host, &prefix),
            certificate_names: self.certificate_names(host),
            prefix_path: prefix,
            containers,
            port_checks,
        })
    }

    fn files(&self, host: &Host, prefix: &str) -> Vec<FileSpec> {
        let file =
            |container_path: &str, contents: &str, checksum: Option<&str>, remove| FileSpec {
                path: join_path(&[prefix, container_path]),
                container_path: container_path.to_string(),
                contents: contents.to_string(),
                mode: 0o600,
                checksum_env: checksum.map(String::from),
                remove_when_empty: remove,
            };
        let mut files = Vec::new();
        if let Some((_, text)) = &self.cloud {
            files.push(file(
                CLOUD_CONFIG_PATH,
                text,
                Some(CLOUD_CONFIG_SUM_ENV),
                false,
            ));
        }
        if let Some(webhook) = &self.cfg.authentication.webhook {
            files.push(file(AUTHN_WEBHOOK_PATH, &webhook.config_file, None, true));
        }
        if host.roles.controlplane {
            if let Some(text) = self.encryption() {
                files.push(file(ENCRYPTION_PATH, text, None, true));
            }
            if let Some(text) = &self.admission_yaml {
                files.push(file(ADMISSION_PATH, text, Some(ADMISSION_SUM_ENV), true));
            }
            let user_policy = self
                .cfg
                .services
                .kube_api
                .extra_args
                .contains_key("audit-policy-file");
            if let (Some(text), false) = (&self.audit_yaml, user_policy) {
                files.push(file(AUDIT_POLICY_PATH, text, Some(AUDIT_SUM_ENV), true));
            }
        }
        files
    }

    /// Certificate bundles the host receives (§11.1 `getCertKeys`).
    fn certificate_names(&self, host: &Host) -> Vec<String> {
        let mut names = strings(&["kube-ca", "kube-proxy", "kube-node"]);
        if self.cfg.services.kubelet.generate_serving_certificate {
            for h in &self.hosts {
                names.push(cert_name_for_host(
                    &h.address,
                    &h.internal_address,
                    "kube-kubelet",
                ));
            }
        }
        if host.roles.etcd {
            for h in &self.etcd_hosts {
                names.push(cert_name_for_host(
                    &h.address,
                    &h.internal_address,
                    "kube-etcd",
                ));
            }
        }
        if host.roles.controlplane {
            names.extend(strings(&[
                "kube-apiserver",
                "kube-service-account-token",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-apiserver-requestheader-ca",
                "kube-apiserver-proxy-client",
            ]));
            if !self.cfg.services.etcd.external_urls.is_empty() {
                names.extend(strings(&["kube-etcd-client", "kube-etcd-client-ca"]));
            }
        }
        uniq(names)
    }

    /// §10 step 2, in RKE1's order.
    pub fn port_check_matrix(&self) -> Vec<PortCheckSet> {
        let internal = |hosts: &[Host]| -> Vec<String> {
            hosts.iter().map(|h| h.internal_address.clone()).collect()
        };
        let mut out = Vec::new();
        let mut rows = |description: &str, sources: &[Host], targets: &[Host], ports: &[u16]| {
            for source in sources {
                out.push(PortCheckSet {
                    description: description.to_string(),
                    source: source.address.clone(),
                    targets: internal(targets),
                    ports: ports.to_vec(),
                });
            }
        };
        if self.etcd_hosts.len() > 1 {
            rows(
                "etcd <-> etcd",
                &self.etcd_hosts,
                &self.etcd_hosts,
                &[2379, 2380],
            );
        }
        rows(
            "control plane -> etcd",
            &self.cp_hosts,
            &self.etcd_hosts,
            &[2379],
        );
        rows(
            "control plane -> worker",
            &self.cp_hosts,
            &self.worker_hosts,
            &[10250],
        );
        rows(
            "worker -> control plane",
            &self.worker_hosts,
            &self.cp_hosts,
            &[6443],
        );
        out
    }
}
