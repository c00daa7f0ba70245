//! Fresh bundles (§11.1, §11.2): every certificate read back with x509-parser and checked with
//! `openssl verify`; kubeconfigs (§6.1); per-host selection (§11.1, §12).

#[path = "pki_support.rs"]
mod support;

use std::collections::BTreeSet;
use std::net::IpAddr;

use base64::Engine;
use rkers::pki::{
    Bundle, PkiSpec, admin_kubeconfig, certs_for_host, generate_bundle, inspect_bundle,
    node_kubeconfig,
};
use support::*;
use x509_parser::prelude::*;
use x509_parser::public_key::PublicKey;

struct Expected {
    cn: String,
    o: Vec<&'static str>,
    server: bool,
    issuer: &'static str,
    ca: bool,
    dns: Vec<String>,
    ips: Vec<&'static str>,
}

fn fixed_dns(domain: &str) -> Vec<String> {
    vec![
        "localhost".into(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
        format!("kubernetes.default.svc.{domain}"),
    ]
}

fn leaf(cn: &str, server: bool) -> Expected {
    Expected {
        cn: cn.into(),
        o: vec![],
        server,
        issuer: "kube-ca",
        ca: false,
        dns: vec![],
        ips: vec![],
    }
}

fn common_expectations() -> Vec<(String, Expected)> {
    let mut v = vec![
        (
            "kube-ca".to_string(),
            Expected {
                ca: true,
                ..leaf("kube-ca", false)
            },
        ),
        (
            "kube-apiserver-requestheader-ca".to_string(),
            Expected {
                ca: true,
                issuer: "kube-apiserver-requestheader-ca",
                ..leaf("kube-apiserver-requestheader-ca", false)
            },
        ),
        (
            "kube-service-account-token".to_string(),
            leaf("kube-service-account-token", false),
        ),
        (
            "kube-controller-manager".to_string(),
            leaf("system:kube-controller-manager", false),
        ),
        (
            "kube-scheduler".to_string(),
            leaf("system:kube-scheduler", false),
        ),
        ("kube-proxy".to_string(), leaf("system:kube-proxy", false)),
        (
            "kube-node".to_string(),
            Expected {
                o: vec!["system:nodes"],
                ..leaf("system:node", false)
            },
        ),
        (
            "kube-admin".to_string(),
            Expected {
                o: vec!["system:masters"],
                ..leaf("kube-admin", false)
            },
        ),
        (
            "kube-apiserver-proxy-client".to_string(),
            Expected {
                issuer: "kube-apiserver-requestheader-ca",
                ..leaf("kube-apiserver-proxy-client", true)
            },
        ),
    ];
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn split_roles_expectations() -> Vec<(String, Expected)> {
    let mut v = common_expectations();
    let mut api_dns = vec!["node-1".to_string(), "lb.example.com".to_string()];
    api_dns.extend(fixed_dns("cluster.local"));
    v.push((
        "kube-apiserver".into(),
        Expected {
            dns: api_dns,
            ips: vec![
                "10.0.0.1",
                "192.168.0.1",
                "203.0.113.5",
                "127.0.0.1",
                "10.43.0.1",
            ],
            ..leaf("kube-apiserver", true)
        },
    ));
    let mut etcd_dns = vec!["node-1".to_string()];
    etcd_dns.extend(fixed_dns("cluster.local"));
    v.push((
        "kube-etcd-192-168-0-1".into(),
        Expected {
            dns: etcd_dns,
            ips: vec!["10.0.0.1", "192.168.0.1", "127.0.0.1", "10.43.0.1"],
            ..leaf("kube-etcd", true)
        },
    ));
    v
}

fn all_roles_expectations() -> Vec<(String, Expected)> {
    let mut v = common_expectations();
    let mut dns = vec!["Node-3".to_string()];
    dns.extend(fixed_dns("example.internal"));
    let ips = vec![
        "172.26.14.216",
        "172.26.14.217",
        "10.1.0.2",
        "172.26.14.218",
        "127.0.0.1",
        "10.43.0.1",
    ];
    v.push((
        "kube-apiserver".into(),
        Expected {
            dns: dns.clone(),
            ips: ips.clone(),
            ..leaf("kube-apiserver", true)
        },
    ));
    for name in [
        "kube-etcd-172-26-14-216",
        "kube-etcd-10-1-0-2",
        "kube-etcd-172-26-14-218",
    ] {
        v.push((
            name.into(),
            Expected {
                dns: dns.clone(),
                ips: ips.clone(),
                ..leaf("kube-etcd", true)
            },
        ));
    }
    v.push((
        "kube-kubelet-172-26-14-216".into(),
        Expected {
            ips: vec!["172.26.14.216"],
            ..leaf("kube-kubelet-172-26-14-216", true)
        },
    ));
    v.push((
        "kube-kubelet-10-1-0-2".into(),
        Expected {
            ips: vec!["172.26.14.217", "10.1.0.2"],
            ..leaf("kube-kubelet-10-1-0-2", true)
        },
    ));
    v.push((
        "kube-kubelet-172-26-14-218".into(),
        Expected {
            dns: vec!["Node-3".into()],
            ips: vec!["172.26.14.218"],
            ..leaf("kube-kubelet-172-26-14-218", true)
        },
    ));
    v
}

fn check_bundle(bundle: &Bundle, expectations: &[(String, Expected)]) {
    let names: BTreeSet<&String> = bundle.keys().collect();
    let expected_names: BTreeSet<&String> = expectations.iter().map(|(n, _)| n).collect();
    assert_eq!(names, expected_names, "bundle entries");

    let now = ::time::OffsetDateTime::now_utc();
    let ten_years = ::time::Duration::days(3650);
    let not_before_of = |ca: &str| {
        with_cert(&bundle[ca].certificate_pem, |c| {
            c.validity().not_before.to_datetime()
        })
    };
    let dir = tempfile::tempdir().unwrap();

    for (name, want) in expectations {
        let entry = &bundle[name];
        assert_eq!(&entry.name, name);
        assert!(
            entry
                .key_pem
                .starts_with("-----BEGIN RSA PRIVATE KEY-----\n"),
            "{name}: key is not PKCS#1 PEM"
        );
        let key = rcgen::KeyPair::from_pem(&entry.key_pem).expect("key parses");
        with_cert(&entry.certificate_pem, |cert| {
            let ctx = name.clone();
            let cn: Vec<&str> = cert
                .subject()
                .iter_common_name()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(cn, vec![want.cn.as_str()], "{ctx}: subject CN");
            let o: Vec<&str> = cert
                .subject()
                .iter_organization()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(o, want.o, "{ctx}: subject O");
            let issuer: Vec<&str> = cert
                .issuer()
                .iter_common_name()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(issuer, vec![want.issuer], "{ctx}: issuer");

            // RSA-2048 and the key in the bundle is the certificate's key.
            match cert.public_key().parsed().unwrap() {
                PublicKey::RSA(rsa) => assert_eq!(rsa.key_size(), 2048, "{ctx}: key size"),
                other => panic!("{ctx}: not RSA: {other:?}"),
            }
            assert_eq!(
                cert.public_key().subject_public_key.data.as_ref(),
                key.public_key_raw(),
                "{ctx}: key does not match certificate"
            );

            let ku = cert.key_usage().unwrap().expect("key usage present");
            assert!(ku.critical, "{ctx}: key usage must be critical");
            assert!(
                ku.value.digital_signature() && ku.value.key_encipherment(),
                "{ctx}: {:?}",
                ku.value
            );
            assert_eq!(ku.value.key_cert_sign(), want.ca, "{ctx}: certSign");
            let bc = cert.basic_constraints().unwrap();
            assert_eq!(
                bc.map(|b| b.value.ca).unwrap_or(false),
                want.ca,
                "{ctx}: CA flag"
            );

            let not_after = cert.validity().not_after.to_datetime();
            let left = not_after - now;
            assert!(
                (left - ten_years).abs() < ::time::Duration::days(1),
                "{ctx}: validity {left} is not 10 years"
            );
            if want.ca {
                assert_eq!(cert.raw_serial(), &[0u8], "{ctx}: CA serial is 0");
                assert!(
                    cert.extended_key_usage().unwrap().is_none(),
                    "{ctx}: CA has no EKU"
                );
            } else {
                assert_eq!(
                    cert.validity().not_before.to_datetime(),
                    not_before_of(want.issuer),
                    "{ctx}: leaf starts when the CA does"
                );
                let eku = cert
                    .extended_key_usage()
                    .unwrap()
                    .expect("EKU present")
                    .value;
                assert!(eku.client_auth, "{ctx}: clientAuth");
                assert_eq!(eku.server_auth, want.server, "{ctx}: serverAuth");
                assert!(!eku.any && eku.other.is_empty(), "{ctx}: extra EKUs");
            }

            let mut dns = Vec::new();
            let mut ips = Vec::new();
            if let Some(san) = cert.subject_alternative_name().unwrap() {
                for gn in &san.value.general_names {
                    match gn {
                        GeneralName::DNSName(d) => dns.push(d.to_string()),
                        GeneralName::IPAddress(b) => {
                            let ip: IpAddr = match b.len() {
                                4 => <[u8; 4]>::try_from(*b).unwrap().into(),
                                _ => <[u8; 16]>::try_from(*b).unwrap().into(),
                            };
                            ips.push(ip.to_string());
                        }
                        other => panic!("{ctx}: unexpected SAN {other:?}"),
                    }
                }
            }
            assert_eq!(dns, want.dns, "{ctx}: DNS SANs");
            assert_eq!(ips, want.ips, "{ctx}: IP SANs");
        });

        // openssl agrees: chain to the right CA, and the purposes fit.
        let ca_name = if want.issuer == "kube-ca" {
            "kube-ca"
        } else {
            "kube-apiserver-requestheader-ca"
        };
        let ca_pem = &bundle[ca_name].certificate_pem;
        let (ok, out) = openssl_verify(dir.path(), ca_pem, &entry.certificate_pem, None);
        assert!(ok, "{name}: openssl verify failed: {out}");
        if !want.ca {
            let (ok, out) = openssl_verify(
                dir.path(),
                ca_pem,
                &entry.certificate_pem,
                Some("sslclient"),
            );
            assert!(ok, "{name}: not valid as TLS client: {out}");
            let (ok, _) = openssl_verify(
                dir.path(),
                ca_pem,
                &entry.certificate_pem,
                Some("sslserver"),
            );
            assert_eq!(ok, want.server, "{name}: TLS server purpose");
        }
        if want.issuer == "kube-apiserver-requestheader-ca" && !want.ca {
            let (ok, _) = openssl_verify(
                dir.path(),
                &bundle["kube-ca"].certificate_pem,
                &entry.certificate_pem,
                None,
            );
            assert!(!ok, "{name} must not chain to kube-ca");
        }
    }
}

fn check_entry_fields(bundle: &Bundle) {
    for (name, entry) in bundle {
        let env = name.to_uppercase().replace('-', "_");
        assert_eq!(entry.env_name, env);
        assert_eq!(entry.key_env_name, format!("{env}_KEY"));
        assert_eq!(entry.path, format!("/etc/kubernetes/ssl/{name}.pem"));
        assert_eq!(
            entry.key_path,
            format!("/etc/kubernetes/ssl/{name}-key.pem")
        );
        let has_kubeconfig = !matches!(
            name.as_str(),
            "kube-ca" | "kube-apiserver" | "kube-service-account-token"
        ) && !name.starts_with("kube-etcd")
            && !name.starts_with("kube-kubelet");
        if name == "kube-admin" {
            assert_eq!(entry.config_env_name, "KUBECFG_KUBE_ADMIN");
            continue;
        }
        if has_kubeconfig {
            assert_eq!(entry.config, node_kubeconfig(name), "{name}: kubeconfig");
            assert_eq!(entry.config_env_name, format!("KUBECFG_{env}"));
            assert_eq!(
                entry.config_path,
                format!("/etc/kubernetes/ssl/kubecfg-{name}.yaml")
            );
        } else {
            assert_eq!(entry.config, "", "{name}: no kubeconfig");
            assert_eq!(entry.config_env_name, "");
            assert_eq!(entry.config_path, "");
        }
    }
    // RKE1's commonName/ouName bookkeeping fields.
    assert_eq!(bundle["kube-ca"].common_name, "system:kube-ca");
    assert_eq!(bundle["kube-node"].common_name, "system:node");
    assert_eq!(bundle["kube-node"].ou_name, "system:nodes");
    assert_eq!(bundle["kube-admin"].common_name, "kube-admin");
    assert_eq!(bundle["kube-admin"].ou_name, "system:masters");
    assert_eq!(
        bundle["kube-service-account-token"].common_name,
        "kube-service-account-token"
    );
}

#[test]
fn split_roles_bundle_has_every_certificate_right() {
    let spec = spec_split_roles();
    let bundle = generate_bundle(&spec).unwrap();
    check_bundle(&bundle, &split_roles_expectations());
    check_entry_fields(&bundle);

    let admin = &bundle["kube-admin"];
    assert_eq!(admin.config_path, "./kube_config_cluster.yml");
    assert_eq!(
        admin.config,
        admin_kubeconfig(&bundle, "local", "https://10.0.0.1:6443").unwrap()
    );
    // Distinct keys everywhere (no kube-node/kube-proxy sharing).
    let keys: BTreeSet<&String> = bundle.values().map(|c| &c.key_pem).collect();
    assert_eq!(keys.len(), bundle.len());
}

#[test]
fn all_roles_bundle_with_serving_certs() {
    let spec = spec_all_roles();
    let bundle = generate_bundle(&spec).unwrap();
    check_bundle(&bundle, &all_roles_expectations());
    check_entry_fields(&bundle);

    let summaries = inspect_bundle(&bundle).unwrap();
    assert_eq!(summaries.len(), bundle.len());
    let api = summaries
        .iter()
        .find(|s| s.name == "kube-apiserver")
        .unwrap();
    assert_eq!(api.issuer_cn, "kube-ca");
    assert!(
        api.dns_names
            .contains(&"kubernetes.default.svc.example.internal".to_string())
    );
    assert!(
        summaries
            .iter()
            .find(|s| s.name == "kube-ca")
            .unwrap()
            .is_ca
    );
}

#[test]
fn admin_kubeconfig_layout() {
    let spec = spec_split_roles();
    let bundle = generate_bundle(&spec).unwrap();
    let text = admin_kubeconfig(&bundle, "local", "https://10.0.0.1:6443").unwrap();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let expected = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    api-version: v1\n    certificate-authority-data: {}\n    server: \"https://10.0.0.1:6443\"\n  name: \"local\"\ncontexts:\n- context:\n    cluster: \"local\"\n    user: \"kube-admin-local\"\n  name: \"local\"\ncurrent-context: \"local\"\nusers:\n- name: \"kube-admin-local\"\n  user:\n    client-certificate-data: {}\n    client-key-data: {}",
        b64(&bundle["kube-ca"].certificate_pem),
        b64(&bundle["kube-admin"].certificate_pem),
        b64(&bundle["kube-admin"].key_pem),
    );
    assert_eq!(text, expected);

    assert_eq!(
        node_kubeconfig("kube-node"),
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    api-version: v1\n    certificate-authority: /etc/kubernetes/ssl/kube-ca.pem\n    server: \"https://127.0.0.1:6443\"\n  name: \"local\"\ncontexts:\n- context:\n    cluster: \"local\"\n    user: \"kube-node-local\"\n  name: \"local\"\ncurrent-context: \"local\"\nusers:\n- name: \"kube-node-local\"\n  user:\n    client-certificate: /etc/kubernetes/ssl/kube-node.pem\n    client-key: /etc/kubernetes/ssl/kube-node-key.pem"
    );
}

#[test]
fn no_controlplane_means_no_admin_kubeconfig() {
    let mut spec = spec_split_roles();
    spec.hosts[0].roles.controlplane = false;
    spec.hosts[1].roles.etcd = true;
    let bundle = generate_bundle(&spec).unwrap();
    assert_eq!(bundle["kube-admin"].config, "");
}

fn names(certs: &[rkers::pki::CertificatePki]) -> Vec<&str> {
    certs.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn hosts_receive_their_certificates_and_workers_no_ca_key() {
    let spec = spec_split_roles();
    let bundle = generate_bundle(&spec).unwrap();

    let cp = certs_for_host(&bundle, &spec, &spec.hosts[0]);
    assert_eq!(
        names(&cp),
        vec![
            "kube-apiserver",
            "kube-apiserver-proxy-client",
            "kube-apiserver-requestheader-ca",
            "kube-ca",
            "kube-controller-manager",
            "kube-etcd-192-168-0-1",
            "kube-node",
            "kube-proxy",
            "kube-scheduler",
            "kube-service-account-token",
        ]
    );
    let ca = cp.iter().find(|c| c.name == "kube-ca").unwrap();
    assert_eq!(
        ca.key_pem, bundle["kube-ca"].key_pem,
        "controlplane keeps the CA key"
    );

    let worker = certs_for_host(&bundle, &spec, &spec.hosts[1]);
    assert_eq!(names(&worker), vec!["kube-ca", "kube-node", "kube-proxy"]);
    let ca = worker.iter().find(|c| c.name == "kube-ca").unwrap();
    assert!(ca.key_pem.is_empty() && ca.key_env_name.is_empty() && ca.key_path.is_empty());
    let env: Vec<String> = worker
        .iter()
        .flat_map(|c| c.deploy_env())
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        env,
        vec![
            "KUBE_CA",
            "KUBE_NODE_KEY",
            "KUBE_NODE",
            "KUBECFG_KUBE_NODE",
            "KUBE_PROXY_KEY",
            "KUBE_PROXY",
            "KUBECFG_KUBE_PROXY"
        ]
    );
    assert!(!worker.iter().any(|c| c.name == "kube-admin"));
}

#[test]
fn etcd_only_host_gets_only_its_own_etcd_and_serving_pairs() {
    // Least privilege (issue 21): RKE1 gave every etcd node every member's pair and every node
    // every node's kubelet serving pair; a host now holds only the pairs its containers read.
    let mut spec: PkiSpec = spec_all_roles();
    spec.hosts.push(host("172.26.14.219", "", "", "e"));
    let bundle = generate_bundle(&spec).unwrap();
    let etcd_only = certs_for_host(&bundle, &spec, &spec.hosts[3]);
    let got = names(&etcd_only);
    assert_eq!(
        got,
        [
            "kube-ca",
            "kube-etcd-172-26-14-219",
            "kube-kubelet-172-26-14-219",
            "kube-node",
            "kube-proxy",
        ]
    );
    assert!(
        etcd_only
            .iter()
            .find(|c| c.name == "kube-ca")
            .unwrap()
            .key_pem
            .is_empty()
    );
    // The other members' and nodes' pairs stay in the bundle (the state), for their own hosts.
    for other in ["kube-etcd-172-26-14-216", "kube-kubelet-172-26-14-216"] {
        assert!(bundle.contains_key(other), "{other}");
    }
}
