//! Shared helpers of the PKI tests (included with `#[path]`; also built alone, with no tests).
#![allow(dead_code)]

use std::fs;
use std::path::Path;
use std::process::Command;

use rkers::pki::{HostRoles, PkiHost, PkiSpec, parse_service_cidrs};
use x509_parser::prelude::*;

pub fn host(address: &str, internal: &str, hostname: &str, roles: &str) -> PkiHost {
    PkiHost {
        address: address.into(),
        internal_address: internal.into(),
        hostname_override: hostname.into(),
        roles: HostRoles {
            etcd: roles.contains('e'),
            controlplane: roles.contains('c'),
            worker: roles.contains('w'),
        },
    }
}

/// 1 controlplane+etcd node, 2 workers, no serving certificates.
pub fn spec_split_roles() -> PkiSpec {
    PkiSpec {
        hosts: vec![
            host("10.0.0.1", "192.168.0.1", "node-1", "ce"),
            host("10.0.0.2", "", "", "w"),
            host("worker3.example.com", "", "", "w"),
        ],
        extra_sans: vec!["lb.example.com".into(), "203.0.113.5".into()],
        service_cidrs: parse_service_cidrs("10.43.0.0/16").unwrap(),
        cluster_domain: "cluster.local".into(),
        cluster_name: "local".into(),
        kubelet_serving_certs: false,
        external_etcd: None,
        admin_kubeconfig_path: "./kube_config_cluster.yml".into(),
    }
}

/// 3 nodes with every role, kubelet serving certificates on.
pub fn spec_all_roles() -> PkiSpec {
    PkiSpec {
        hosts: vec![
            host("172.26.14.216", "", "", "cew"),
            host("172.26.14.217", "10.1.0.2", "", "cew"),
            host("172.26.14.218", "", "Node-3", "cew"),
        ],
        extra_sans: vec![],
        service_cidrs: parse_service_cidrs("10.43.0.0/16").unwrap(),
        cluster_domain: "example.internal".into(),
        cluster_name: "prod".into(),
        kubelet_serving_certs: true,
        external_etcd: None,
        admin_kubeconfig_path: "/clusters/kube_config_prod.yml".into(),
    }
}

pub fn der_of(pem_text: &str) -> Vec<u8> {
    let block = ::pem::parse(pem_text).expect("PEM");
    assert_eq!(block.tag(), "CERTIFICATE");
    block.into_contents()
}

pub fn with_cert<R>(pem_text: &str, f: impl FnOnce(&X509Certificate<'_>) -> R) -> R {
    let der = der_of(pem_text);
    let (_, cert) = X509Certificate::from_der(&der).expect("X.509");
    f(&cert)
}

pub fn openssl(args: &[&str]) -> (bool, String) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `openssl verify -CAfile ca [-purpose p] leaf` → whether it printed `OK`.
pub fn openssl_verify(
    dir: &Path,
    ca_pem: &str,
    leaf_pem: &str,
    purpose: Option<&str>,
) -> (bool, String) {
    let ca = dir.join("verify-ca.pem");
    let leaf = dir.join("verify-leaf.pem");
    fs::write(&ca, ca_pem).unwrap();
    fs::write(&leaf, leaf_pem).unwrap();
    let mut args = vec!["verify", "-CAfile", ca.to_str().unwrap()];
    if let Some(p) = purpose {
        args.extend(["-purpose", p]);
    }
    args.push(leaf.to_str().unwrap());
    let (ok, text) = openssl(&args);
    (ok && text.contains(": OK"), text)
}
