//! `rkers rollback` (issue 30, item 3) on the sandbox: after a successful change of a kubelet
//! flag, the rollback's dry run lists exactly the kubelet recreations an `up` with the old
//! cluster.yml would make, the rollback applies them (each kubelet runs with its old arguments
//! again), names the cluster.yml key that still differs, and `up` with the old cluster.yml is
//! then a no-op. Refusals need no hosts: no state, and a state without a previous run.
//!
//! Then `rollback --restore-snapshot` on the same cluster: after a kube-apiserver flag change
//! (which makes `up` take its `rkers-pre-…` snapshot) and a ConfigMap written since, its dry
//! run lists the restore and the containers it replaces and changes nothing; the run restores
//! etcd from that snapshot (the ConfigMap is gone) and the old kube-apiserver flags. Crossing
//! back over a minor (a state doctored to say v1.21 runs: only v1.20.2 runs here) is refused
//! without `--restore-snapshot` and planned with it.
//!
//! nextest runs this binary in the `sandbox` group (one at a time on the shared hosts).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use support::e2e::{E2e, HOSTS, dry_run_actions, wait_nodes_ready};

const KUBELET_FLAG: &str = "      max-pods: \"120\"\n";
const FLAG_AFTER: &str = "      housekeeping-interval: \"30s\"\n";

/// Each host's kubelet arguments.
fn kubelet_args(cluster: &E2e) -> BTreeMap<&'static str, String> {
    HOSTS
        .iter()
        .map(|h| {
            (
                *h,
                cluster
                    .env
                    .on_host(h, "docker inspect -f '{{json .Args}}' kubelet"),
            )
        })
        .collect()
}

/// The actions of a dry run on the hosts (not the `cluster` pseudo-host's), sorted.
fn host_actions(cluster: &E2e, args: &[&str]) -> Vec<(String, String)> {
    let (ok, text) = cluster.rkers(args);
    assert!(ok, "rkers {args:?} failed:\n{text}");
    let mut actions: Vec<(String, String)> = dry_run_actions(&text)
        .into_iter()
        .filter(|(h, _)| h != "cluster")
        .collect();
    actions.sort();
    actions
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_goes_back_to_the_previous_run() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let started = std::time::Instant::now();
    let old_yml = std::fs::read_to_string(&cluster.config).unwrap();
    let args_before = kubelet_args(&cluster);

    refusals(&cluster);

    // The change: one kubelet flag, applied by a successful `up`.
    cluster.edit(|t| t.replacen(FLAG_AFTER, &format!("{FLAG_AFTER}{KUBELET_FLAG}"), 1));
    assert!(
        std::fs::read_to_string(&cluster.config)
            .unwrap()
            .contains("max-pods")
    );
    cluster.up();
    for (host, args) in kubelet_args(&cluster) {
        assert!(args.contains("--max-pods=120"), "{host}: {args}");
    }
    let previous = &cluster.state()["rkersPrevious"]["rkeConfig"];
    assert!(
        previous["services"]["kubelet"]["extraArgs"]
            .get("max-pods")
            .is_none()
            && previous["services"]["kubelet"]["extraArgs"]["housekeeping-interval"] == "30s",
        "the previous run's config is kept: {previous}"
    );

    // What `up` with the old cluster.yml would do is exactly what the rollback plans: each
    // host's kubelet recreated without the flag.
    std::fs::write(&cluster.config, &old_yml).unwrap();
    let with_old_yml = host_actions(&cluster, &["up", "--dry-run"]);
    cluster.edit(|t| t.replacen(FLAG_AFTER, &format!("{FLAG_AFTER}{KUBELET_FLAG}"), 1));
    let planned = host_actions(&cluster, &["rollback", "--dry-run"]);
    assert_eq!(planned, with_old_yml);
    // Per host: kubelet recreated, and its log link written for the new container.
    assert_eq!(planned.len(), 2 * HOSTS.len(), "{planned:#?}");
    for pair in planned.chunks(2) {
        let [(h1, link), (h2, recreate)] = pair else {
            unreachable!()
        };
        assert_eq!(h1, h2, "{planned:#?}");
        assert_eq!(link, "link the logs of kubelet", "{planned:#?}");
        assert!(
            recreate.starts_with("recreate container kubelet")
                && recreate.contains("entrypoint: ---max-pods=120"),
            "{h2}: {recreate}"
        );
    }

    // The rollback: every kubelet runs with its old arguments again, and the key the user's
    // cluster.yml still differs at is named.
    let (ok, out) = cluster.rkers(&["rollback", "--output", "json"]);
    assert!(ok, "rkers rollback failed:\n{out}");
    assert_eq!(kubelet_args(&cluster), args_before);
    let events: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let differs: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["data"]["cluster_yml_differs"].as_array())
        .flatten()
        .collect();
    assert_eq!(differs.len(), 1, "{out}");
    assert_eq!(differs[0]["key"], "services.kubelet.extra_args.max-pods");
    assert_eq!(differs[0]["left"], "\"120\"");
    assert!(differs[0]["right"].is_null(), "{out}");
    // Going back is itself a run: the state it replaced is now the previous one.
    let previous = &cluster.state()["rkersPrevious"]["rkeConfig"];
    assert_eq!(
        previous["services"]["kubelet"]["extraArgs"]["max-pods"],
        "120"
    );

    // With the old cluster.yml, `up` has nothing left to do.
    std::fs::write(&cluster.config, &old_yml).unwrap();
    let plan = cluster.dry_run();
    assert!(
        plan.contains(&format!("0 actions on {} hosts", HOSTS.len())),
        "{plan}"
    );
    eprintln!(
        "the rollback test's own work took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;

    restore_snapshot(&cluster, &api).await;
}

const APISERVER_FLAG: &str = "  kube-api:\n    extra_args:\n      event-ttl: \"2h0m0s\"\n";
const CONFIGMAP: &str = "rkers-rollback-written-since";

/// `rollback --restore-snapshot` after a kube-apiserver flag change, on `cluster` as the
/// first part of the test left it (cluster.yml the sandbox's own, `up` a no-op).
async fn restore_snapshot(cluster: &E2e, api: &rkers::kubeapi::KubeApi) {
    let started = std::time::Instant::now();
    let old_yml = std::fs::read_to_string(&cluster.config).unwrap();
    let apiserver_before = cluster.env.on_host(
        HOSTS[0],
        "docker inspect -f '{{json .Args}}' kube-apiserver",
    );
    let config_before = cluster.state()["currentState"]["rkeConfig"].clone();

    cluster.edit(|t| t.replacen("services:\n", &format!("services:\n{APISERVER_FLAG}"), 1));
    let out = cluster.up();
    assert!(out.contains("rkers-pre-"), "no pre-run snapshot:\n{out}");
    let snapshot = cluster.state()["rkersPrevious"]["snapshot"]
        .as_str()
        .expect("the run records its pre-run snapshot")
        .to_string();
    assert!(snapshot.starts_with("rkers-pre-"), "{snapshot}");
    let apiserver_changed = cluster.env.on_host(
        HOSTS[0],
        "docker inspect -f '{{json .Args}}' kube-apiserver",
    );
    assert!(
        apiserver_changed.contains("--event-ttl=2h0m0s"),
        "{apiserver_changed}"
    );
    // A run stopped midway may have left it.
    let (ok, out) = cluster.kubectl(&["delete", "configmap", CONFIGMAP, "--ignore-not-found"]);
    assert!(ok, "{out}");
    let (ok, out) = cluster.kubectl(&["create", "configmap", CONFIGMAP, "--from-literal=a=b"]);
    assert!(ok, "{out}");

    minor_crossing(cluster, &snapshot);

    // The dry run: the restore of that snapshot, the containers it replaces, then `up`; and
    // nothing changes.
    let containers = cluster.env.container_ids(&HOSTS);
    let state_text = std::fs::read_to_string(cluster.state_path()).unwrap();
    let (ok, plan) = cluster.rkers(&["rollback", "--restore-snapshot", "--dry-run"]);
    assert!(ok, "rollback --restore-snapshot --dry-run failed:\n{plan}");
    assert!(plan.contains(&snapshot), "{plan}");
    let actions = dry_run_actions(&plan);
    let has = |host: &str, prefix: &str| {
        actions
            .iter()
            .any(|(h, a)| h == host && a.starts_with(prefix))
    };
    let etcd_host = cluster.env.ip(1);
    assert!(
        has(&etcd_host, &format!("restore snapshot {snapshot} into ")),
        "{plan}"
    );
    for container in ["etcd", "kube-apiserver"] {
        let removal = format!("remove container {container} (replaced on the restored data)");
        assert!(has(&etcd_host, &removal), "{plan}");
    }
    assert!(has("cluster", "run `rkers up`"), "{plan}");
    assert_eq!(cluster.env.container_ids(&HOSTS), containers);
    assert_eq!(
        std::fs::read_to_string(cluster.state_path()).unwrap(),
        state_text
    );
    assert!(cluster.kubectl(&["get", "configmap", CONFIGMAP]).0);

    let rollback_started = std::time::Instant::now();
    let (ok, out) = cluster.rkers(&["rollback", "--restore-snapshot"]);
    assert!(ok, "rollback --restore-snapshot failed:\n{out}");
    eprintln!(
        "rollback --restore-snapshot took {:.1}s",
        rollback_started.elapsed().as_secs_f64()
    );
    let (found, out) = cluster.kubectl(&["get", "configmap", CONFIGMAP]);
    assert!(
        !found && out.contains("NotFound"),
        "etcd was not restored: {out}"
    );
    assert_eq!(
        cluster.env.on_host(
            HOSTS[0],
            "docker inspect -f '{{json .Args}}' kube-apiserver"
        ),
        apiserver_before
    );
    assert_eq!(cluster.state()["currentState"]["rkeConfig"], config_before);
    std::fs::write(&cluster.config, &old_yml).unwrap();
    let plan = cluster.dry_run();
    assert!(
        plan.contains(&format!("0 actions on {} hosts", HOSTS.len())),
        "{plan}"
    );
    wait_nodes_ready(api, &HOSTS, Duration::from_secs(180)).await;
    eprintln!(
        "the restore-snapshot part took {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// A state that says the cluster runs v1.21 while its previous run had v1.20 (a copy beside
/// the cluster's): the rollback is refused, naming the snapshot, and `--restore-snapshot`
/// plans the restore of that snapshot.
fn minor_crossing(cluster: &E2e, snapshot: &str) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cluster.yml");
    std::fs::copy(&cluster.config, &config).unwrap();
    let mut state = cluster.state();
    state["currentState"]["rkeConfig"]["kubernetesVersion"] = "v1.21.12-rancher1-1".into();
    std::fs::write(
        dir.path().join("cluster.rkestate"),
        serde_json::to_string(&state).unwrap(),
    )
    .unwrap();
    let rollback = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["rollback", "--dry-run", "--known-hosts"])
            .arg(&cluster.known_hosts)
            .args(extra)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = rollback(&[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("--restore-snapshot") && text.contains(snapshot),
        "{text}"
    );
    let (code, text) = rollback(&["--restore-snapshot"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!("Restoring etcd snapshot {snapshot}")),
        "{text}"
    );
}

/// Without a state, or a state that records no previous run, the rollback is refused with
/// what to do instead, and nothing is touched.
fn refusals(cluster: &E2e) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cluster.yml");
    std::fs::copy(&cluster.config, &config).unwrap();
    let rollback = |config: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["rollback", "--dry-run", "--config"])
            .arg(config)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, err) = rollback(&config);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("never brought up"), "{err}");

    let mut state = cluster.state();
    state.as_object_mut().unwrap().remove("rkersPrevious");
    std::fs::write(
        dir.path().join("cluster.rkestate"),
        serde_json::to_string(&state).unwrap(),
    )
    .unwrap();
    let (code, err) = rollback(&config);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("records no previous run") && err.contains("rkers up"),
        "{err}"
    );
}
