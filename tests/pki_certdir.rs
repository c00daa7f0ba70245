//! The cert dir: custom certificates (§11.4) and `cert generate-csr` (§2.8).

#[path = "pki_support.rs"]
mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rkers::pki::{Bundle, PkiSpec, generate_bundle, generate_csrs, load_custom_certs};
use support::*;

fn write_bundle(bundle: &Bundle, dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    for (name, entry) in bundle {
        fs::write(dir.join(format!("{name}.pem")), &entry.certificate_pem).unwrap();
        if entry.has_key() {
            fs::write(dir.join(format!("{name}-key.pem")), &entry.key_pem).unwrap();
        }
    }
}

fn load_err(dir: &Path, spec: &PkiSpec) -> String {
    match load_custom_certs(dir, spec) {
        Ok(_) => panic!("loading {} should fail", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn complete_cert_dir_loads() {
    let spec = spec_split_roles();
    let generated = generate_bundle(&spec).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster_certs");
    write_bundle(&generated, &dir);
    // One key as PKCS#8: stored as PKCS#1 like RKE1 does.
    let proxy_key = dir.join("kube-proxy-key.pem");
    let pkcs8_out = tmp.path().join("pkcs8.pem");
    let (ok, out) = openssl(&[
        "pkcs8",
        "-topk8",
        "-nocrypt",
        "-in",
        proxy_key.to_str().unwrap(),
        "-out",
        pkcs8_out.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    fs::rename(&pkcs8_out, &proxy_key).unwrap();
    assert!(
        fs::read_to_string(&proxy_key)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );

    let custom = load_custom_certs(&dir, &spec).unwrap();
    assert!(custom.warnings.is_empty(), "{:?}", custom.warnings);
    assert_eq!(custom.bundle.len(), generated.len());
    for (name, entry) in &generated {
        let loaded = &custom.bundle[name];
        assert_eq!(loaded.certificate_pem, entry.certificate_pem, "{name}");
        assert_eq!(loaded.key_pem, entry.key_pem, "{name}: key");
        assert_eq!(loaded.env_name, entry.env_name);
        assert_eq!(loaded.config, entry.config, "{name}: kubeconfig");
    }
    assert_eq!(custom.bundle["kube-node"].common_name, "system:node");
    assert_eq!(custom.bundle["kube-admin"].ou_name, "system:masters");
    assert_eq!(
        custom.bundle["kube-admin"].config_path,
        "./kube_config_cluster.yml"
    );
}

#[test]
fn missing_pieces_are_named() {
    let spec = spec_split_roles();
    let generated = generate_bundle(&spec).unwrap();
    let tmp = tempfile::tempdir().unwrap();

    let err = load_err(&tmp.path().join("absent"), &spec);
    assert!(err.contains("does not exist"), "{err}");

    let cases: [(&str, &str); 3] = [
        ("kube-ca.pem", "Failed to find master CA certificate"),
        (
            "kube-node-key.pem",
            "Failed to find [kube-node] Certificate or Key",
        ),
        (
            "kube-etcd-192-168-0-1.pem",
            "Failed to find etcd [kube-etcd-192-168-0-1] Certificate or Key",
        ),
    ];
    for (i, (file, message)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        write_bundle(&generated, &dir);
        fs::remove_file(dir.join(file)).unwrap();
        let err = load_err(&dir, &spec);
        assert!(err.contains(message), "removing {file}: {err}");
        assert!(
            err.contains(&dir.display().to_string()),
            "dir not named: {err}"
        );
    }
}

#[test]
fn missing_request_header_ca_falls_back_with_warning() {
    let spec = spec_split_roles();
    let generated = generate_bundle(&spec).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("certs");
    write_bundle(&generated, &dir);
    fs::remove_file(dir.join("kube-apiserver-requestheader-ca.pem")).unwrap();
    fs::remove_file(dir.join("kube-apiserver-requestheader-ca-key.pem")).unwrap();
    // The proxy client is still signed by the (now absent) request-header CA: rejected.
    let err = load_err(&dir, &spec);
    assert!(
        err.contains("Component [kube-apiserver-proxy-client] is not signed by the custom Request Header CA certificate"),
        "{err}"
    );
    // Re-signed by kube-ca, it loads, with the warning.
    let mut by_ca = generated.clone();
    by_ca.remove("kube-apiserver-requestheader-ca");
    let ca = &generated["kube-ca"];
    let (ok, out) = sign_with_openssl(
        tmp.path(),
        &ca.certificate_pem,
        &ca.key_pem,
        &generated["kube-apiserver-proxy-client"].key_pem,
        "/CN=kube-apiserver-proxy-client",
    );
    assert!(ok, "{out}");
    fs::write(dir.join("kube-apiserver-proxy-client.pem"), out).unwrap();
    let custom = load_custom_certs(&dir, &spec).unwrap();
    assert_eq!(
        custom.warnings,
        vec!["Failed to find RequestHeader CA certificate, using master CA certificate"]
    );
    let header = &custom.bundle["kube-apiserver-requestheader-ca"];
    assert_eq!(header.certificate_pem, ca.certificate_pem);
    assert!(header.key_pem.is_empty());
}

/// Signs a certificate for `key_pem` with the given CA; returns the PEM (or openssl's output).
fn sign_with_openssl(
    dir: &Path,
    ca_pem: &str,
    ca_key: &str,
    key_pem: &str,
    subject: &str,
) -> (bool, String) {
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    fs::write(p("s-ca.pem"), ca_pem).unwrap();
    fs::write(p("s-ca-key.pem"), ca_key).unwrap();
    fs::write(p("s-key.pem"), key_pem).unwrap();
    let (ok, out) = openssl(&[
        "req",
        "-new",
        "-key",
        &p("s-key.pem"),
        "-subj",
        subject,
        "-out",
        &p("s.csr"),
    ]);
    if !ok {
        return (false, out);
    }
    let (ok, out) = openssl(&[
        "x509",
        "-req",
        "-in",
        &p("s.csr"),
        "-CA",
        &p("s-ca.pem"),
        "-CAkey",
        &p("s-ca-key.pem"),
        "-set_serial",
        "77",
        "-days",
        "30",
        "-out",
        &p("s.pem"),
    ]);
    if !ok {
        return (false, out);
    }
    (true, fs::read_to_string(p("s.pem")).unwrap())
}

#[test]
fn foreign_issuer_encrypted_key_and_garbage_are_rejected() {
    let spec = spec_split_roles();
    let generated = generate_bundle(&spec).unwrap();
    let tmp = tempfile::tempdir().unwrap();

    // kube-scheduler signed by some other CA.
    let dir = tmp.path().join("foreign");
    write_bundle(&generated, &dir);
    let p = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let (ok, out) = openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        &p("other-key.pem"),
        "2048",
    ]);
    assert!(ok, "{out}");
    let (ok, out) = openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        &p("other-key.pem"),
        "-subj",
        "/CN=other-ca",
        "-days",
        "30",
        "-out",
        &p("other.pem"),
    ]);
    assert!(ok, "{out}");
    let (ok, signed) = sign_with_openssl(
        tmp.path(),
        &fs::read_to_string(p("other.pem")).unwrap(),
        &fs::read_to_string(p("other-key.pem")).unwrap(),
        &generated["kube-scheduler"].key_pem,
        "/CN=system:kube-scheduler",
    );
    assert!(ok, "{signed}");
    fs::write(dir.join("kube-scheduler.pem"), signed).unwrap();
    let err = load_err(&dir, &spec);
    assert!(
        err.contains("Component [kube-scheduler] is not signed by the custom CA certificate"),
        "{err}"
    );

    // An encrypted key.
    let dir = tmp.path().join("encrypted");
    write_bundle(&generated, &dir);
    let key = dir.join("kube-proxy-key.pem");
    let encrypted = tmp.path().join("encrypted.pem");
    let (ok, out) = openssl(&[
        "pkcs8",
        "-topk8",
        "-v2",
        "aes256",
        "-passout",
        "pass:secret",
        "-in",
        key.to_str().unwrap(),
        "-out",
        encrypted.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    fs::rename(&encrypted, &key).unwrap();
    let err = load_err(&dir, &spec);
    assert!(
        err.contains("failed to read key [kube-proxy-key.pem], make sure it is not encrypted"),
        "{err}"
    );
    assert!(!err.contains("BEGIN"), "key material in error: {err}");

    // A certificate file that is not a certificate.
    let dir = tmp.path().join("garbage");
    write_bundle(&generated, &dir);
    fs::write(
        dir.join("kube-proxy.pem"),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let err = load_err(&dir, &spec);
    assert!(
        err.contains("failed to read certificate [kube-proxy.pem]"),
        "{err}"
    );
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn csrs_are_written_valid_and_reused() {
    let mut spec = spec_all_roles();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("prod_certs");

    // A key that exists before: kept, and the CSR is made for it.
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let own_key = dir.join("kube-proxy-key.pem");
    let (ok, out) = openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        own_key.to_str().unwrap(),
        "2048",
    ]);
    assert!(ok, "{out}");
    let own_key_text = fs::read_to_string(&own_key).unwrap();

    let report = generate_csrs(&spec, &dir).unwrap();
    let expected = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
        "kube-node",
        "kube-admin",
        "kube-apiserver-proxy-client",
        "kube-etcd-172-26-14-216",
        "kube-etcd-10-1-0-2",
        "kube-etcd-172-26-14-218",
        "kube-kubelet-172-26-14-216",
        "kube-kubelet-10-1-0-2",
        "kube-kubelet-172-26-14-218",
    ];
    assert_eq!(report.written, expected);
    assert!(report.kept.is_empty());
    assert_eq!(
        fs::read_to_string(&own_key).unwrap(),
        own_key_text,
        "existing key kept"
    );

    let expectations: &[(&str, &str, bool, &[&str])] = &[
        (
            "kube-apiserver",
            "CN=kube-apiserver",
            true,
            &[
                "DNS:kubernetes.default.svc.example.internal",
                "IP Address:10.43.0.1",
                "IP Address:10.1.0.2",
                "DNS:Node-3",
            ],
        ),
        ("kube-node", "O=system:nodes, CN=system:node", false, &[]),
        ("kube-admin", "O=system:masters, CN=kube-admin", false, &[]),
        (
            "kube-controller-manager",
            "CN=system:kube-controller-manager",
            false,
            &[],
        ),
        (
            "kube-etcd-10-1-0-2",
            "CN=kube-etcd",
            true,
            &["IP Address:172.26.14.216", "DNS:localhost"],
        ),
        (
            "kube-kubelet-172-26-14-218",
            "CN=kube-kubelet-172-26-14-218",
            true,
            &["DNS:Node-3", "IP Address:172.26.14.218"],
        ),
        (
            "kube-apiserver-proxy-client",
            "CN=kube-apiserver-proxy-client",
            true,
            &[],
        ),
    ];
    for name in expected {
        let csr = dir.join(format!("{name}-csr.pem"));
        let key = dir.join(format!("{name}-key.pem"));
        assert_eq!(mode(&csr), 0o640, "{name}");
        // A key that was already there is left exactly as it was (mode included).
        let key_mode = if name == "kube-proxy" { 0o600 } else { 0o640 };
        assert_eq!(mode(&key), key_mode, "{name}");
        assert!(
            fs::read_to_string(&key)
                .unwrap()
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
        let (ok, out) = openssl(&["req", "-verify", "-noout", "-in", csr.to_str().unwrap()]);
        assert!(ok, "{name}: {out}");
        // The CSR is made for the key next to it.
        let (_, csr_pub) = openssl(&["req", "-noout", "-pubkey", "-in", csr.to_str().unwrap()]);
        let (_, key_pub) = openssl(&["rsa", "-pubout", "-in", key.to_str().unwrap()]);
        assert!(
            csr_pub.contains("BEGIN PUBLIC KEY") && key_pub.contains(csr_pub.trim()),
            "{name}: key mismatch"
        );
    }
    for (name, subject, server, sans) in expectations {
        let csr = dir.join(format!("{name}-csr.pem"));
        let (ok, text) = openssl(&[
            "req",
            "-noout",
            "-text",
            "-nameopt",
            "sep_comma_plus_space",
            "-in",
            csr.to_str().unwrap(),
        ]);
        assert!(ok, "{text}");
        assert!(
            text.contains(&format!("Subject: {subject}")),
            "{name}: {text}"
        );
        assert!(text.contains("TLS Web Client Authentication"), "{name}");
        assert_eq!(
            text.contains("TLS Web Server Authentication"),
            *server,
            "{name}"
        );
        for san in *sans {
            assert!(text.contains(san), "{name}: missing {san} in {text}");
        }
    }

    // Second run: nothing to do.
    let before = fs::read_to_string(dir.join("kube-apiserver-csr.pem")).unwrap();
    let report = generate_csrs(&spec, &dir).unwrap();
    assert!(report.written.is_empty(), "{:?}", report.written);
    assert_eq!(report.kept.len(), expected.len());
    assert_eq!(
        fs::read_to_string(dir.join("kube-apiserver-csr.pem")).unwrap(),
        before
    );

    // New SANs: the API server and etcd CSRs are remade with their keys.
    let api_key = fs::read_to_string(dir.join("kube-apiserver-key.pem")).unwrap();
    spec.extra_sans.push("api.example.com".into());
    let report = generate_csrs(&spec, &dir).unwrap();
    assert_eq!(report.written, ["kube-apiserver"]);
    assert_eq!(
        fs::read_to_string(dir.join("kube-apiserver-key.pem")).unwrap(),
        api_key
    );
    let (_, text) = openssl(&[
        "req",
        "-noout",
        "-text",
        "-in",
        dir.join("kube-apiserver-csr.pem").to_str().unwrap(),
    ]);
    assert!(text.contains("DNS:api.example.com"), "{text}");
}

#[test]
fn csr_dir_is_created_0755() {
    let spec = spec_split_roles();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new_certs");
    generate_csrs(&spec, &dir).unwrap();
    assert_eq!(mode(&dir), 0o755);
    assert!(dir.join("kube-etcd-192-168-0-1-csr.pem").exists());
    assert!(
        !dir.join("kube-kubelet-10-0-0-2-csr.pem").exists(),
        "serving certs are off"
    );
}
