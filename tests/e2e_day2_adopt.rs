//! Adopting a cluster RKE1 built (issue 15) and least privilege on the hosts (issue 21), end to
//! end on the sandbox with the real Kubernetes v1.20 binaries.
//!
//! The cluster is made to look exactly as an older RKE1 release leaves it:
//! - every certificate, key and kubeconfig written by the rke-tools `cert-deployer` container
//!   with RKE1's `KUBE_*`/`KUBECFG_*` environment and RKE1's choice of files per node (every etcd
//!   node gets every member's pair, §11.1), so the files carry cert-deployer's bytes and modes;
//! - kube-apiserver as RKE1's v1.2 line creates it (no admission configuration file);
//! - the state in RKE1's own format (no rkers mark).
//!
//! Then: the dry run shows the adoption summary and exactly the accepted changes (the extra keys
//! deleted, key modes fixed, and the newer RKE default for kube-apiserver, each with its reason);
//! `up` without a terminal and without `--yes` refuses and writes nothing; `up --yes` keeps every
//! other container ID and leaves each host with the keys its roles need, mode 0600; a second `up`
//! is a no-op; the state rkers wrote keeps RKE1's layout. Last, a key whose mode drifted is
//! reported and fixed without a restart.

mod support;

use rkers::pki::CertificatePki;
use rkers::state::StateFile;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS, SandboxEnv, dry_run_actions};

const CONTROLPLANE_KEYS: &[&str] = &[
    "kube-apiserver-key.pem",
    "kube-apiserver-proxy-client-key.pem",
    "kube-apiserver-requestheader-ca-key.pem",
    "kube-ca-key.pem",
    "kube-controller-manager-key.pem",
    "kube-scheduler-key.pem",
    "kube-service-account-token-key.pem",
];

/// The private keys a host must hold (issue 21's promise): kube-node and kube-proxy everywhere,
/// its own etcd pair on etcd hosts, the control plane's pairs on controlplane hosts.
fn expected_keys(ip: &str, etcd: bool, controlplane: bool) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = ["kube-node-key.pem", "kube-proxy-key.pem"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if etcd {
        keys.insert(format!("kube-etcd-{}-key.pem", ip.replace('.', "-")));
    }
    if controlplane {
        keys.extend(CONTROLPLANE_KEYS.iter().map(|s| s.to_string()));
    }
    keys
}

/// `name -> "mode uid:gid"` of every private key on the host.
fn private_keys(sb: &SandboxEnv, host: &str) -> BTreeMap<String, String> {
    sb.on_host(
        host,
        "cd /etc/kubernetes/ssl && for f in *-key.pem; do [ -e \"$f\" ] && stat -c '%n %a %u:%g' \"$f\"; done; true",
    )
    .lines()
    .filter_map(|l| {
        let (name, rest) = l.split_once(' ')?;
        Some((name.to_string(), rest.to_string()))
    })
    .collect()
}

fn assert_least_privilege(sb: &SandboxEnv, etcd_hosts: &[&str]) {
    for (i, host) in HOSTS.iter().enumerate() {
        let ip = sb.ip(i as u8 + 1);
        let keys = private_keys(sb, host);
        let names: BTreeSet<String> = keys.keys().cloned().collect();
        assert_eq!(
            names,
            expected_keys(&ip, etcd_hosts.contains(host), *host == "host1"),
            "private keys on {host}"
        );
        for (name, mode) in &keys {
            assert_eq!(mode, "600 0:0", "{host}: {name}");
        }
    }
}

/// The cert-deployer environment RKE1 gives a node: its certificates by RKE1's rule (§11.1:
/// every etcd node gets every member's pair), the CA key only on controlplane nodes.
fn rke1_deploy_env(state: &StateFile, etcd: bool, controlplane: bool) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for (name, entry) in &state.current_state.certificates_bundle {
        let wanted = match name.as_str() {
            "kube-ca" | "kube-node" | "kube-proxy" => true,
            n if n.starts_with("kube-etcd-") => etcd,
            "kube-apiserver"
            | "kube-service-account-token"
            | "kube-controller-manager"
            | "kube-scheduler"
            | "kube-apiserver-requestheader-ca"
            | "kube-apiserver-proxy-client" => controlplane,
            _ => false,
        };
        if !wanted {
            continue;
        }
        let mut entry: CertificatePki = entry.clone();
        if name == "kube-ca" && !controlplane {
            entry.key_pem.clear();
            entry.key_env_name.clear();
        }
        env.extend(entry.deploy_env());
    }
    env
}

/// Runs the rke-tools `cert-deployer` on `host` as RKE1 does: a container from the
/// `cert_downloader` image with `/etc/kubernetes` bound and the values in its environment.
fn run_cert_deployer(sb: &SandboxEnv, host: &str, image: &str, env: &[(String, String)]) {
    let mut args: Vec<String> = ["exec", host, "docker", "run", "--rm", "--privileged"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (name, _) in env {
        args.push("-e".into());
        args.push(name.clone());
    }
    args.extend(
        [
            "-v",
            "/etc/kubernetes:/etc/kubernetes",
            image,
            "cert-deployer",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let out = Command::new("bash")
        .arg(&sb.script)
        .args(&args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run cert-deployer");
    assert!(
        out.status.success(),
        "cert-deployer on {host}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// kube-apiserver as RKE1's v1.2 line creates it: no admission configuration flag, checksum or
/// file. Recreated from its own inspect output through Docker's API.
fn make_apiserver_as_rke_1_2(sb: &SandboxEnv) {
    sb.on_host(
        "host1",
        r#"set -e
docker inspect kube-apiserver | jq '.[0] | .Config + {HostConfig: .HostConfig}
  | .Entrypoint |= map(select(startswith("--admission-control-config-file") | not))
  | .Env |= map(select(startswith("RKE_ADMISSION_CONFIG_CHECKSUM=") | not))' >/tmp/apiserver.json
docker rm -f kube-apiserver >/dev/null
curl -sf --unix-socket /var/run/docker.sock -H 'Content-Type: application/json' \
  -d @/tmp/apiserver.json -X POST 'http://docker/containers/create?name=kube-apiserver' >/dev/null
docker start kube-apiserver >/dev/null
rm -f /tmp/apiserver.json /etc/kubernetes/admission.yaml"#,
    );
}

/// Whether a change is one the adoption of this cluster is expected to make, and nothing
/// else: extra keys deleted, key modes fixed, and the newer RKE default for kube-apiserver.
fn accepted(host: &str, action: &str) -> bool {
    let newer_default = "default of newer RKE releases";
    (action.starts_with("remove /etc/kubernetes/ssl/")
        && action.ends_with("-key.pem (private key no container on this host reads)"))
        || (action.starts_with("set /etc/kubernetes/ssl/") && action.contains("to mode 0600"))
        || (host.ends_with(".11")
            && action.starts_with("upload /etc/kubernetes/admission.yaml (new; ")
            && action.contains(newer_default))
        || (host.ends_with(".11")
            && action.starts_with("recreate container kube-apiserver")
            && action.lines().skip(1).all(|l| {
                l.contains(newer_default)
                    || l.trim() == "keep kube-apiserver as old-kube-apiserver until https://localhost:6443/healthz answers"
            }))
        || (host.ends_with(".11") && action == "link the logs of kube-apiserver")
        // The undo's snapshot before that recreate, on every etcd host; it restarts nothing.
        || (action.starts_with("take etcd snapshot rkers-pre-")
            && action
                .lines()
                .next()
                .is_some_and(|l| l.contains(" first (kube-apiserver recreated on ")))
        // The state as RKE1 wrote it lacks what rkers records.
        || (host == "cluster"
            && action == "save the state in Secret kube-system/full-cluster-state (the state changed)")
}

fn wait_readyz(cluster: &E2e) {
    let started = Instant::now();
    loop {
        let (ok, out) = cluster.kubectl(&["get", "--raw", "/readyz"]);
        if ok && out.trim() == "ok" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "kube-apiserver not ready: {out}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn adopting_a_cluster_rke1_built_restarts_nothing_and_keeps_keys_where_read() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    cluster.standard().await;

    // 1. Three etcd members, so RKE1 would give every etcd host every member's key. rkers'
    //    own cluster holds only what each host reads.
    cluster.edit(|t| t.replace("role: [worker]", "role: [etcd, worker]"));
    cluster.up();
    assert_least_privilege(&sb, &HOSTS);

    // 2. The cluster as RKE1 leaves it: state in RKE1's format (no rkers mark), every file
    //    through cert-deployer, kube-apiserver as RKE1's v1.2 line made it.
    let mut state = StateFile::load(&cluster.state_path()).unwrap().unwrap();
    assert!(state.written_by_rkers());
    state.extra.remove(rkers::state::RKERS_MARK);
    let rke1_state = state.to_json().unwrap();
    std::fs::write(cluster.state_path(), &rke1_state).unwrap();
    let config: serde_json::Value =
        serde_norway::from_str(&std::fs::read_to_string(&cluster.config).unwrap()).unwrap();
    let image = config["system_images"]["cert_downloader"].as_str().unwrap();
    for host in HOSTS {
        sb.on_host(host, "rm -f /etc/kubernetes/ssl/*");
        let env = rke1_deploy_env(&state, true, host == "host1");
        run_cert_deployer(&sb, host, image, &env);
        // RKE1's full set: every etcd member's key on every etcd host.
        assert_eq!(
            private_keys(&sb, host).len(),
            expected_keys(&sb.ip(1), true, host == "host1").len() + 2,
            "{host}"
        );
    }
    make_apiserver_as_rke_1_2(&sb);
    wait_readyz(&cluster);
    let ids = sb.container_ids(&HOSTS);

    // 3. The dry run: the adoption summary and exactly the accepted changes, with reasons.
    let (dry, actions) = cluster.adoption_dry_run();
    let unexpected: Vec<_> = actions.iter().filter(|(h, a)| !accepted(h, a)).collect();
    assert!(
        unexpected.is_empty(),
        "unexpected changes: {unexpected:#?}\n{dry}"
    );
    for (i, host) in HOSTS.iter().enumerate() {
        let ip = sb.ip(i as u8 + 1);
        let removed = actions
            .iter()
            .filter(|(h, a)| *h == ip && a.starts_with("remove "))
            .count();
        assert_eq!(removed, 2, "{host}: the other two members' keys go\n{dry}");
    }
    assert!(
        actions
            .iter()
            .any(|(_, a)| a.starts_with("recreate container kube-apiserver")),
        "{dry}"
    );

    // 4. Without a terminal and without --yes: refused (usage, exit 2), nothing written.
    let out = cluster.command(&["up"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--yes"), "{text}");
    assert_eq!(
        std::fs::read_to_string(cluster.state_path()).unwrap(),
        rke1_state
    );
    assert_eq!(sb.container_ids(&HOSTS), ids);

    // 5. `up --yes`: every other container kept, each host left with the keys it reads.
    let (ok, text) = cluster.rkers(&["up", "--yes"]);
    assert!(ok, "{text}");
    let after = sb.container_ids(&HOSTS);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        ids.keys().collect::<Vec<_>>()
    );
    for (name, id) in &ids {
        if name == "host1/kube-apiserver" {
            assert_ne!(&after[name], id, "kube-apiserver takes the newer default");
        } else {
            assert_eq!(&after[name], id, "{name} was restarted");
        }
    }
    assert_least_privilege(&sb, &HOSTS);

    // 6. A second up is a no-op, and no longer an adoption.
    let dry = cluster.dry_run();
    assert!(!dry.contains("Adopting"), "{dry}");
    assert!(dry_run_actions(&dry).is_empty(), "{dry}");

    // 7. The state keeps RKE1's layout: the same keys everywhere, plus the rkers mark.
    let written = StateFile::load(&cluster.state_path()).unwrap().unwrap();
    assert!(written.written_by_rkers());
    let mut unmarked = written.clone();
    unmarked.extra.remove(rkers::state::RKERS_MARK);
    assert_eq!(
        key_shape(&serde_json::from_str(&unmarked.to_json().unwrap()).unwrap()),
        key_shape(&serde_json::from_str(&rke1_state).unwrap())
    );

    // 8. A key whose mode drifted is reported and fixed, nothing restarted.
    sb.on_host("host2", "chmod 644 /etc/kubernetes/ssl/kube-node-key.pem");
    let dry = cluster.dry_run();
    let actions = dry_run_actions(&dry);
    assert_eq!(
        actions,
        [(
            sb.ip(2),
            "set /etc/kubernetes/ssl/kube-node-key.pem to mode 0600 owner 0:0 (was 0644 0:0)"
                .to_string()
        )],
        "{dry}"
    );
    let before = sb.container_ids(&HOSTS);
    cluster.up();
    assert_eq!(sb.container_ids(&HOSTS), before);
    assert_least_privilege(&sb, &HOSTS);

    // Back to the standard cluster for the next test.
    cluster.standard().await;
}

/// Every object key path of a JSON document (values ignored), for comparing layouts.
fn key_shape(v: &serde_json::Value) -> BTreeSet<String> {
    fn walk(v: &serde_json::Value, path: &str, out: &mut BTreeSet<String>) {
        if let serde_json::Value::Object(map) = v {
            for (k, child) in map {
                // Bundle entries are named after hosts and certificates: compare their fields.
                let segment = if path.ends_with("certificatesBundle") {
                    "*"
                } else {
                    k.as_str()
                };
                let p = format!("{path}/{segment}");
                out.insert(p.clone());
                walk(child, &p, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(v, "", &mut out);
    out
}
