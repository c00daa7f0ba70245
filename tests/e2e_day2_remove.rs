//! Day-2 operations end to end on the sandbox with the real Kubernetes v1.20 binaries:
//! `rkers version`, `rkers util get-state-file` (from the API, and from the hosts' files with
//! the API server stopped), secrets encryption at rest read straight from etcd, `rkers encrypt
//! rotate-key`, a kubelet replacement Docker refuses (the old one put back), and `rkers remove`
//! (refused without a terminal, dry run with a leftover `old-kubelet`, a host powered off, a
//! host whose step fails after connecting, then complete). It ends by bringing the standard cluster back with one `up`.
//!
//! One test function: the steps build on each other and share the sandbox (nextest runs it in
//! the `sandbox` group). Skips with a reason when not root or when the sandbox is not there.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS, wait_nodes_ready};

const SECRET: &str = "rkers-e2e-day2";
const MARKER: &str = "plaintext-marker-7f3a91";

/// The raw etcd value of the test Secret, as etcdctl prints it on host1.
fn etcd_value(cluster: &E2e) -> String {
    cluster.env.on_host(
        "host1",
        &format!(
            "docker exec etcd etcdctl get /registry/secrets/default/{SECRET} --print-value-only"
        ),
    )
}

fn secret_plaintext(cluster: &E2e) -> String {
    let (ok, out) = cluster.kubectl(&["get", "secret", SECRET, "-o", "jsonpath={.data.value}"]);
    assert!(ok, "{out}");
    use base64::Engine;
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(out.trim())
            .unwrap(),
    )
    .unwrap()
}

/// The key names of the applied provider file (currentState.encryptionConfig).
fn applied_keys(cluster: &E2e) -> Vec<String> {
    let text = cluster.state()["currentState"]["encryptionConfig"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    rkers::plan::encryption::aescbc_keys(&text)
        .map(|k| k.into_iter().map(|k| k.name).collect())
        .unwrap_or_default()
}

fn rke_containers(cluster: &E2e, host: &str) -> Vec<String> {
    const RKE: &[&str] = &[
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "kube-proxy",
        "nginx-proxy",
        "service-sidekick",
    ];
    cluster
        .env
        .container_names(host)
        .into_iter()
        .filter(|n| RKE.contains(&n.as_str()))
        .collect()
}

fn dir_entries(cluster: &E2e, host: &str, dir: &str) -> String {
    cluster
        .env
        .on_host(host, &format!("ls -A {dir} 2>/dev/null || true"))
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn day2_operations_on_the_sandbox() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    let started = Instant::now();
    cluster.standard().await;
    eprintln!("standard: {:.1}s", started.elapsed().as_secs_f64());

    // 1. version: the server's version through the admin kubeconfig, printed as RKE1 does.
    // (`version` takes only --config, as in RKE1.)
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rkers"))
        .arg("version")
        .arg("--config")
        .arg(&cluster.config)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.contains(
            "Server Version: version.Info{Major:\"1\", Minor:\"20\", GitVersion:\"v1.20.2\""
        ),
        "{out}"
    );

    // 2. get-state-file from the in-cluster Secret: the same certificates come back, 0600, the
    //    dry run writes nothing.
    let original = std::fs::read(cluster.state_path()).unwrap();
    let original_json = cluster.state();
    std::fs::remove_file(cluster.state_path()).unwrap();
    let (ok, out) = cluster.rkers(&["util", "get-state-file", "--dry-run"]);
    assert!(ok && out.contains("would write"), "{out}");
    assert!(!cluster.state_path().exists());
    let (ok, out) = cluster.rkers(&["util", "get-state-file"]);
    assert!(ok, "{out}");
    assert!(out.contains("full-cluster-state Secret"), "{out}");
    // The same certificates and keys, but for kube-admin's certificate: every `up` signs it
    // again (same key, same CA) without saving the Secret when nothing else changed, so the
    // Secret may hold an earlier one, as valid. Compared without printing the keys.
    let recovered = cluster.state();
    let bundle = |state: &serde_json::Value| {
        let mut b = state["currentState"]["certificatesBundle"].clone();
        if let Some(admin) = b.get_mut("kube-admin").and_then(|a| a.as_object_mut()) {
            for field in ["certificatePEM", "config", "configPath"] {
                admin.remove(field);
            }
        }
        b
    };
    let (recovered_bundle, original_bundle) = (bundle(&recovered), bundle(&original_json));
    assert!(
        recovered_bundle
            .as_object()
            .is_some_and(|b| b.contains_key("kube-ca")),
        "the recovered state has its CA"
    );
    assert!(
        recovered_bundle == original_bundle,
        "the recovered certificates differ from the state's: {:?} against {:?}",
        recovered_bundle
            .as_object()
            .map(|b| b.keys().collect::<Vec<_>>()),
        original_bundle
            .as_object()
            .map(|b| b.keys().collect::<Vec<_>>())
    );
    let mode = std::fs::metadata(cluster.state_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // 3. get-state-file with the API server stopped: rebuilt from the hosts' files, the CA and
    //    the service certificates are the cluster's own.
    sb.on_host("host1", "docker stop kube-apiserver >/dev/null");
    std::fs::remove_file(cluster.state_path()).unwrap();
    let (ok, out) = cluster.rkers(&["util", "get-state-file"]);
    sb.on_host("host1", "docker start kube-apiserver >/dev/null");
    assert!(ok, "{out}");
    assert!(out.contains("files on host(s)"), "{out}");
    let rebuilt = cluster.state();
    for name in [
        "kube-ca",
        "kube-apiserver",
        "kube-node",
        "kube-service-account-token",
    ] {
        assert_eq!(
            rebuilt["currentState"]["certificatesBundle"][name]["certificatePEM"],
            original_json["currentState"]["certificatesBundle"][name]["certificatePEM"],
            "{name}"
        );
    }
    assert!(rkers::state::StateFile::load(&cluster.state_path()).is_ok());
    // The exact original file back, so the next `up` sees no change from this step.
    std::fs::write(cluster.state_path(), &original).unwrap();
    let api = cluster.api().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    while api.server_version().await.is_err() {
        assert!(
            Instant::now() < deadline,
            "kube-apiserver did not come back"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(120)).await;

    // 4. Secrets encryption: a Secret written before is rewritten encrypted by `up`.
    let _ = cluster.kubectl(&["delete", "secret", SECRET, "--ignore-not-found"]);
    let (ok, out) = cluster.kubectl(&[
        "create",
        "secret",
        "generic",
        SECRET,
        &format!("--from-literal=value={MARKER}"),
    ]);
    assert!(ok, "{out}");
    assert!(
        etcd_value(&cluster).contains(MARKER),
        "stored in plaintext before"
    );
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    secrets_encryption_config:\n      enabled: true\n",
        )
    });
    let t = Instant::now();
    cluster.up();
    eprintln!("up with encryption: {:.1}s", t.elapsed().as_secs_f64());
    let keys = applied_keys(&cluster);
    assert_eq!(keys.len(), 1, "{keys:?}");
    let value = etcd_value(&cluster);
    assert!(
        value.starts_with(&format!("k8s:enc:aescbc:v1:{}:", keys[0])),
        "{}",
        &value[..value.len().min(60)]
    );
    assert!(!value.contains(MARKER));
    assert_eq!(secret_plaintext(&cluster), MARKER);
    let flags = sb.on_host(
        "host1",
        "docker inspect kube-apiserver --format '{{json .Args}}'",
    );
    assert!(
        flags.contains("--encryption-provider-config=/etc/kubernetes/ssl/encryption.yaml"),
        "{flags}"
    );

    // 5. Key rotation: the dry run changes nothing; then new key first, Secrets rewritten, old
    //    key gone; readable through the API throughout.
    let (ok, out) = cluster.rkers(&["encrypt", "rotate-key", "--dry-run"]);
    // The one dry-run format: the provider file written and kube-apiserver restarted twice,
    // every Secret rewritten in between.
    assert!(
        ok && out.contains("ssl/encryption.yaml mode 0600 (a new key first, then ")
            && out.matches("restart container kube-apiserver").count() == 2
            && out.contains("cluster:\n  - save the state in Secret")
            && out.contains("  - rewrite every Secret (store every Secret with a new key)"),
        "{out}"
    );
    assert_eq!(applied_keys(&cluster), keys);
    let t = Instant::now();
    let (ok, out) = cluster.rkers(&["encrypt", "rotate-key"]);
    assert!(ok, "rotate-key failed:\n{out}");
    eprintln!("rotate-key: {:.1}s", t.elapsed().as_secs_f64());
    let rotated = applied_keys(&cluster);
    assert_eq!(rotated.len(), 1, "{rotated:?}");
    assert_ne!(rotated, keys);
    assert_eq!(
        cluster.state()["desiredState"]["encryptionConfig"],
        cluster.state()["currentState"]["encryptionConfig"]
    );
    let value = etcd_value(&cluster);
    assert!(
        value.starts_with(&format!("k8s:enc:aescbc:v1:{}:", rotated[0])),
        "{}",
        &value[..value.len().min(60)]
    );
    assert!(!value.contains(MARKER));
    assert_eq!(secret_plaintext(&cluster), MARKER);
    assert!(
        !out.contains(&rotated[0]) || !out.contains("secret:"),
        "{out}"
    );

    // 5b. Encryption off again: Secrets are rewritten in plaintext before the apiserver loses
    //     the provider file, so they stay readable.
    cluster.edit(|t| {
        t.replace(
            "  kube-api:\n    secrets_encryption_config:\n      enabled: true\n",
            "",
        )
    });
    let t = Instant::now();
    cluster.up();
    eprintln!("up with encryption off: {:.1}s", t.elapsed().as_secs_f64());
    let value = etcd_value(&cluster);
    assert!(
        !value.starts_with("k8s:enc:"),
        "{}",
        &value[..value.len().min(60)]
    );
    assert!(value.contains(MARKER));
    assert_eq!(secret_plaintext(&cluster), MARKER);
    let flags = sb.on_host(
        "host1",
        "docker inspect kube-apiserver --format '{{json .Args}}'",
    );
    assert!(!flags.contains("encryption-provider-config"), "{flags}");
    assert_eq!(
        cluster.state()["currentState"]["encryptionConfig"],
        serde_json::Value::Null
    );

    // 5c. A replacement that Docker refuses to start (a file bound over a directory): the
    //     previous kubelet is put back under its name and runs, the failure names the host,
    //     the container and the cause, and no old-kubelet is left.
    let kubelets_before = sb.container_ids(&HOSTS);
    cluster.edit(|t| {
        t.replace(
            "  kubelet:\n    extra_args:\n",
            "  kubelet:\n    extra_binds:\n      - /etc/hostname:/usr\n    extra_args:\n",
        )
    });
    let (ok, out) = cluster.rkers(&["up"]);
    assert!(!ok, "up must fail when kubelet cannot start:\n{out}");
    assert!(
        out.contains("recreate container kubelet")
            && out.contains("not a directory")
            && out.contains("the previous container was put back under its name")
            && out.contains("put back and start the previous container kubelet"),
        "{out}"
    );
    assert!(
        HOSTS
            .iter()
            .any(|h| out.contains(&format!("host {}", sb.ip(h[4..].parse().unwrap())))),
        "{out}"
    );
    let kubelets_after = sb.container_ids(&HOSTS);
    for h in HOSTS {
        let key = format!("{h}/kubelet");
        assert_eq!(
            kubelets_after.get(&key),
            kubelets_before.get(&key),
            "{h}: the same kubelet"
        );
        assert!(
            !kubelets_after.contains_key(&format!("{h}/old-kubelet")),
            "{h}"
        );
        assert_eq!(
            sb.on_host(h, "docker inspect kubelet --format '{{.State.Running}}'")
                .trim(),
            "true",
            "{h}"
        );
    }
    cluster.edit(|t| t.replace("    extra_binds:\n      - /etc/hostname:/usr\n", ""));
    cluster.up();
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(120)).await;

    // 6. remove without a terminal and without --force: refused, nothing touched.
    let out = cluster
        .command(&["remove"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(text.contains("--force"), "{text}");
    assert!(rke_containers(&cluster, "host1").contains(&"etcd".to_string()));

    // 7. remove --dry-run lists the work and changes nothing; the state's backups (every
    //    private key of the cluster) go with it unless --keep-backups.
    let older_backup = cluster
        .dir
        .join("cluster.rkestate.20260101T000000.000000000Z.bak");
    std::fs::copy(cluster.state_path(), &older_backup).unwrap();
    let backups = rkers::state::list_backups(&cluster.state_path()).unwrap();
    assert!(backups.contains(&older_backup), "{backups:?}");
    // What a replacement that failed before rkers put containers back left: remove takes it.
    sb.on_host(
        "host2",
        "docker create --name old-kubelet $(docker inspect kubelet --format '{{.Config.Image}}') true >/dev/null",
    );
    let (ok, out) = cluster.rkers(&["remove", "--dry-run"]);
    assert!(ok, "{out}");
    assert!(out.contains("remove container old-kubelet"), "{out}");
    assert!(out.contains("remove container kube-apiserver"), "{out}");
    assert!(out.contains("/var/lib/etcd"), "{out}");
    // The sandbox's SSH user is root: each host's own shell cleans it, no helper image pulled.
    assert!(out.contains("(as root, in the host's shell)"), "{out}");
    assert!(!out.contains("pull image"), "{out}");
    for b in &backups {
        assert!(
            out.contains(&format!("  - delete {}", b.display())),
            "{out}"
        );
    }
    let (ok, out) = cluster.rkers(&["remove", "--dry-run", "--keep-backups"]);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("keeping {} backup(s) of the state", backups.len()))
            && out.contains(&older_backup.display().to_string())
            && !out.contains(&format!("  - delete {}", older_backup.display())),
        "{out}"
    );
    assert!(cluster.state_path().exists());
    assert!(rke_containers(&cluster, "host1").contains(&"etcd".to_string()));

    // 8. host3 powered off: the others are cleaned, host3 is named, the exit code says so, the
    //    state stays (and loads).
    sb.run(&["stop-host", "host3"]);
    let t = Instant::now();
    let (ok, out) = cluster.rkers(&["remove", "--force"]);
    eprintln!(
        "remove with host3 down: {:.1}s\n{out}",
        t.elapsed().as_secs_f64()
    );
    assert!(!ok, "remove must fail with host3 down:\n{out}");
    assert!(out.contains(&sb.ip(3)), "{out}");
    for h in ["host1", "host2"] {
        assert_eq!(rke_containers(&cluster, h), Vec::<String>::new(), "{h}");
        assert_eq!(dir_entries(&cluster, h, "/etc/kubernetes"), "", "{h}");
        assert_eq!(dir_entries(&cluster, h, "/etc/cni"), "", "{h}");
    }
    assert_eq!(dir_entries(&cluster, "host1", "/var/lib/etcd"), "");
    // Never touched: kubelet's directory still exists.
    assert!(
        sb.try_on_host("host1", "test -d /var/lib/kubelet").0,
        "/var/lib/kubelet must stay"
    );
    assert!(
        rkers::state::StateFile::load(&cluster.state_path())
            .unwrap()
            .is_some()
    );
    assert!(
        !sb.container_names("host2")
            .contains(&"old-kubelet".to_string())
    );
    // (start-host writes the sandbox's CNI config on every host again.)
    sb.run(&["start-host", "host3"]);
    assert!(!rke_containers(&cluster, "host3").is_empty());

    // 8b. A host step that fails after connecting (a file in host3's /etc/kubernetes cannot be
    //     deleted): every local file stays (state, its backups, kubeconfig), and the message
    //     names the host and why.
    let stuck = "/etc/kubernetes/rkers-e2e-immutable";
    sb.on_host("host3", &format!("touch {stuck} && chattr +i {stuck}"));
    let (ok, out) = cluster.rkers(&["remove", "--force"]);
    sb.on_host("host3", &format!("chattr -i {stuck}"));
    assert!(!ok, "remove must fail when host3's step fails:\n{out}");
    assert!(
        out.contains(&sb.ip(3)) && out.contains("rkers-e2e-immutable"),
        "{out}"
    );
    assert!(
        out.contains("were kept") && !out.contains("Cluster removed"),
        "{out}"
    );
    assert!(
        rkers::state::StateFile::load(&cluster.state_path())
            .unwrap()
            .is_some()
    );
    assert!(cluster.kubeconfig_path().exists());
    assert!(older_backup.exists());

    // 9. With host3 back, remove completes: every host clean, state and kubeconfig gone.
    let (ok, out) = cluster.rkers(&["remove", "--force"]);
    assert!(ok, "{out}");
    assert!(out.contains("Cluster removed successfully"), "{out}");
    assert_eq!(rke_containers(&cluster, "host3"), Vec::<String>::new());
    assert_eq!(dir_entries(&cluster, "host3", "/etc/kubernetes"), "");
    assert!(!cluster.state_path().exists());
    assert!(!cluster.kubeconfig_path().exists());
    assert_eq!(
        rkers::state::list_backups(&cluster.state_path()).unwrap(),
        Vec::<std::path::PathBuf>::new()
    );

    // 10. up brings the standard cluster back on the cleaned hosts.
    let t = Instant::now();
    cluster.standard().await;
    eprintln!(
        "standard after remove: {:.1}s (total {:.1}s)",
        t.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
