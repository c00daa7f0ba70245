//! Later runs (§11.3): what is kept, re-signed with the same key, created and deleted.

#[path = "pki_support.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;

use rkers::pki::{Bundle, PkiError, generate_bundle, reconcile_bundle};
use rkers::state::StateFile;
use support::*;

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn sans_of(bundle: &Bundle, name: &str) -> (Vec<String>, Vec<std::net::IpAddr>) {
    let info = bundle[name].info().unwrap();
    (info.dns_names, info.ip_addresses)
}

#[test]
fn unchanged_config_only_resigns_kube_admin() {
    let spec = spec_split_roles();
    let old = generate_bundle(&spec).unwrap();
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert_eq!(changes.changed, set(&["kube-admin"]));
    assert!(changes.removed.is_empty());
    assert!(!changes.affects_nodes());
    for (name, entry) in &old {
        if name == "kube-admin" {
            assert_eq!(new[name].key_pem, entry.key_pem, "admin keeps its key");
            assert_ne!(
                new[name].certificate_pem, entry.certificate_pem,
                "admin re-signed"
            );
            assert_ne!(new[name].config, entry.config, "admin kubeconfig rebuilt");
        } else {
            assert_eq!(&new[name], entry, "{name} must be untouched");
        }
    }
}

#[test]
fn adding_an_etcd_host_resigns_only_etcd_certs() {
    let mut spec = spec_split_roles();
    let old = generate_bundle(&spec).unwrap();
    // The second worker also becomes an etcd member; no controlplane change.
    spec.hosts[1].roles.etcd = true;
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert_eq!(
        changes.changed,
        set(&["kube-admin", "kube-etcd-192-168-0-1", "kube-etcd-10-0-0-2"])
    );
    assert!(changes.removed.is_empty());
    assert!(changes.affects_nodes());
    // The existing member keeps its key; its SANs now include the new member.
    assert_eq!(
        new["kube-etcd-192-168-0-1"].key_pem,
        old["kube-etcd-192-168-0-1"].key_pem
    );
    let (_, ips) = sans_of(&new, "kube-etcd-192-168-0-1");
    assert!(ips.contains(&"10.0.0.2".parse().unwrap()));
    assert_eq!(
        sans_of(&new, "kube-etcd-10-0-0-2"),
        sans_of(&new, "kube-etcd-192-168-0-1")
    );
    assert_eq!(new["kube-apiserver"], old["kube-apiserver"]);

    let dir = tempfile::tempdir().unwrap();
    for name in ["kube-etcd-192-168-0-1", "kube-etcd-10-0-0-2"] {
        let (ok, out) = openssl_verify(
            dir.path(),
            &new["kube-ca"].certificate_pem,
            &new[name].certificate_pem,
            Some("sslserver"),
        );
        assert!(ok, "{name}: {out}");
    }
}

#[test]
fn adding_a_controlplane_host_resigns_apiserver_with_same_key() {
    let mut spec = spec_split_roles();
    let old = generate_bundle(&spec).unwrap();
    spec.hosts[2].roles.controlplane = true;
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert_eq!(changes.changed, set(&["kube-admin", "kube-apiserver"]));
    assert_eq!(new["kube-apiserver"].key_pem, old["kube-apiserver"].key_pem);
    let (dns, _) = sans_of(&new, "kube-apiserver");
    assert!(dns.contains(&"worker3.example.com".to_string()), "{dns:?}");
    // The service account key is never touched.
    assert_eq!(
        new["kube-service-account-token"],
        old["kube-service-account-token"]
    );
}

#[test]
fn changing_user_sans_resigns_apiserver() {
    let mut spec = spec_split_roles();
    let old = generate_bundle(&spec).unwrap();
    spec.extra_sans.push("api.example.com".into());
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert!(changes.changed.contains("kube-apiserver"));
    assert!(
        !changes.changed.iter().any(|n| n.starts_with("kube-etcd")),
        "etcd has no user SANs"
    );
    assert!(
        sans_of(&new, "kube-apiserver")
            .0
            .contains(&"api.example.com".to_string())
    );
}

#[test]
fn removing_a_host_deletes_its_certificates() {
    let mut spec = spec_all_roles();
    let old = generate_bundle(&spec).unwrap();
    spec.hosts.remove(1);
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert_eq!(
        changes.removed,
        set(&["kube-etcd-10-1-0-2", "kube-kubelet-10-1-0-2"])
    );
    assert!(!new.contains_key("kube-etcd-10-1-0-2"));
    assert!(!new.contains_key("kube-kubelet-10-1-0-2"));
    // Remaining etcd certs and the API server drop the removed node from their SANs.
    assert_eq!(
        changes.changed,
        set(&[
            "kube-admin",
            "kube-apiserver",
            "kube-etcd-172-26-14-216",
            "kube-etcd-172-26-14-218"
        ])
    );
    // Serving certificates of the remaining nodes are kept as they are.
    assert_eq!(
        new["kube-kubelet-172-26-14-216"],
        old["kube-kubelet-172-26-14-216"]
    );
}

#[test]
fn serving_certs_follow_the_setting() {
    let mut spec = spec_split_roles();
    let old = generate_bundle(&spec).unwrap();
    spec.kubelet_serving_certs = true;
    let (with, changes) = reconcile_bundle(old, &spec).unwrap();
    let added: BTreeSet<String> = changes
        .changed
        .iter()
        .filter(|n| n.starts_with("kube-kubelet"))
        .cloned()
        .collect();
    assert_eq!(
        added,
        set(&[
            "kube-kubelet-192-168-0-1",
            "kube-kubelet-10-0-0-2",
            "kube-kubelet-worker3-example-com"
        ])
    );
    assert_eq!(
        sans_of(&with, "kube-kubelet-worker3-example-com").0,
        vec!["worker3.example.com".to_string()]
    );

    spec.kubelet_serving_certs = false;
    let (without, changes) = reconcile_bundle(with, &spec).unwrap();
    assert_eq!(changes.removed, added);
    assert!(!without.keys().any(|n| n.starts_with("kube-kubelet")));
}

#[test]
fn missing_entries_are_recreated_reusing_keys() {
    let spec = spec_split_roles();
    let mut old = generate_bundle(&spec).unwrap();
    // A scheduler entry with a key but no certificate, and no controller-manager entry at all.
    old.get_mut("kube-scheduler")
        .unwrap()
        .certificate_pem
        .clear();
    let scheduler_key = old["kube-scheduler"].key_pem.clone();
    old.remove("kube-controller-manager");
    old.remove("kube-apiserver-requestheader-ca");
    old.remove("kube-apiserver-proxy-client");
    let (new, changes) = reconcile_bundle(old, &spec).unwrap();
    assert_eq!(new["kube-scheduler"].key_pem, scheduler_key);
    assert!(new["kube-scheduler"].has_certificate());
    for name in [
        "kube-controller-manager",
        "kube-apiserver-requestheader-ca",
        "kube-apiserver-proxy-client",
        "kube-scheduler",
    ] {
        assert!(changes.changed.contains(name), "{name} not reported");
    }
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = openssl_verify(
        dir.path(),
        &new["kube-apiserver-requestheader-ca"].certificate_pem,
        &new["kube-apiserver-proxy-client"].certificate_pem,
        None,
    );
    assert!(ok, "{out}");
}

#[test]
fn legacy_cluster_without_service_account_key_reuses_apiserver_key() {
    let spec = spec_split_roles();
    let mut old = generate_bundle(&spec).unwrap();
    old.remove("kube-service-account-token");
    let (new, _) = reconcile_bundle(old.clone(), &spec).unwrap();
    assert_eq!(
        new["kube-service-account-token"].key_pem, old["kube-apiserver"].key_pem,
        "tokens signed by the old API server key must stay valid"
    );
}

#[test]
fn bundle_without_ca_is_an_error() {
    let spec = spec_split_roles();
    let mut old = generate_bundle(&spec).unwrap();
    old.get_mut("kube-ca").unwrap().key_pem.clear();
    let err = reconcile_bundle(old, &spec).unwrap_err();
    assert!(matches!(err, PkiError::MissingCa { .. }), "{err}");
    assert!(err.to_string().contains("kube-ca"));
}

#[test]
fn rke1_state_bundle_is_reconciled_with_its_own_keys() {
    // A bundle written by RKE1 (keys made by OpenSSL, PKCS#1): its CA signs the new
    // certificates and existing keys are reused.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state/rke1-full.rkestate");
    let state = StateFile::load(&path).unwrap().unwrap();
    let old = state.desired_state.certificates_bundle;
    let mut spec = spec_split_roles();
    spec.hosts[0].internal_address = "10.0.0.1".into();
    let (new, changes) = reconcile_bundle(old.clone(), &spec).unwrap();
    // The fixture's kube-apiserver has no SANs: re-signed, same key.
    assert!(changes.changed.contains("kube-apiserver"));
    assert_eq!(new["kube-apiserver"].key_pem, old["kube-apiserver"].key_pem);
    assert_eq!(new["kube-ca"], old["kube-ca"]);
    // Re-signed (no SANs in the fixture), same key, and fields of a newer RKE survive.
    assert!(changes.changed.contains("kube-etcd-10-0-0-1"));
    assert_eq!(
        new["kube-etcd-10-0-0-1"].key_pem,
        old["kube-etcd-10-0-0-1"].key_pem
    );
    assert_eq!(
        new["kube-etcd-10-0-0-1"].extra["futureCertField"],
        old["kube-etcd-10-0-0-1"].extra["futureCertField"]
    );
    let dir = tempfile::tempdir().unwrap();
    for name in ["kube-apiserver", "kube-etcd-10-0-0-1", "kube-admin"] {
        let (ok, out) = openssl_verify(
            dir.path(),
            &new["kube-ca"].certificate_pem,
            &new[name].certificate_pem,
            None,
        );
        assert!(ok, "{name}: {out}");
    }
}
