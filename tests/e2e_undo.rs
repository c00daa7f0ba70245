//! Upgrades that undo themselves (issue 30, items 1 and 2) on the sandbox: a change to the
//! control plane takes an etcd snapshot first, and a recreated kube-apiserver that fails its
//! health check (an unknown flag) is replaced by the one it replaced: the run fails naming
//! the host, the container, the check and the log, the API answers again, no `old-…`
//! container is left, the state keeps what the cluster runs, and a second identical `up` fails
//! the same way without making anything worse. Reverting the config then succeeds, and a
//! stale `old-…` container a killed run left is cleaned up by the next `up`.
//!
//! The same for a worker: the Kubernetes image changed to one whose kubelet exits at once
//! (RKE1 sets every service's `image` from `system_images`), `max_unavailable_worker: 1`. The
//! first worker's kubelet is put back, the other worker is
//! not touched, every node is Ready and uncordoned, the state's current side stays the last
//! healthy run's (it is recorded after the worker plane), and a second `up` fails the same way.
//!
//! nextest runs this binary in the `sandbox` group (one at a time on the shared hosts).

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS, wait_nodes_ready};

const BAD_FLAG: &str = "services:\n  kube-api:\n    extra_args:\n      no-such-flag: \"1\"\n";

/// The `rkers-pre-…` snapshot archives on `host`.
fn pre_change_snapshots(cluster: &E2e, host: &str) -> Vec<String> {
    cluster
        .env
        .on_host(host, "ls /opt/rke/etcd-snapshots/ 2>/dev/null || true")
        .lines()
        .filter(|l| l.starts_with("rkers-pre-") && l.ends_with(".zip"))
        .map(str::to_string)
        .collect()
}

fn old_containers(cluster: &E2e) -> Vec<String> {
    HOSTS
        .iter()
        .flat_map(|h| {
            cluster
                .env
                .container_names(h)
                .into_iter()
                .filter(|n| n.starts_with("old-"))
                .map(move |n| format!("{h}/{n}"))
        })
        .collect()
}

/// The API answers through the kubeconfig (the kube-apiserver that runs on host1).
async fn api_answers(cluster: &E2e) {
    for _ in 0..60 {
        let (ok, _) = cluster.kubectl(&["get", "--raw", "/readyz"]);
        if ok {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("the API does not answer after the undo");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_apiserver_upgrade_is_undone_after_a_snapshot() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let h1 = cluster.env.ip(1);
    let state_before = cluster.state()["currentState"].clone();
    let apiserver_before = cluster.env.container_ids(&["host1"])["host1/kube-apiserver"].clone();
    let snapshots_before = pre_change_snapshots(&cluster, "host1");

    cluster.edit(|t| t.replacen("services:\n", BAD_FLAG, 1));
    // The dry run says what the run keeps for its undo and that it takes a snapshot first.
    let plan = cluster.dry_run();
    assert!(
        plan.contains("take etcd snapshot rkers-pre-")
            && plan.contains("(kube-apiserver recreated on ")
            && plan.contains(
                "keep kube-apiserver as old-kube-apiserver until https://localhost:6443/healthz \
                 answers"
            ),
        "{plan}"
    );
    // `--no-snapshot` plans none, and says what that risks.
    let (ok, no_snapshot) = cluster.rkers(&["up", "--dry-run", "--no-snapshot"]);
    assert!(ok, "{no_snapshot}");
    assert!(
        !no_snapshot.contains("take etcd snapshot")
            && no_snapshot.contains("--no-snapshot: no etcd snapshot is taken")
            && no_snapshot.contains("older snapshot"),
        "{no_snapshot}"
    );

    // The run: the snapshot, then kube-apiserver fails its check and is put back.
    let (ok, out) = cluster.rkers(&["up", "--output", "json"]);
    assert!(
        !ok,
        "up must fail with an unknown kube-apiserver flag:\n{out}"
    );
    let events: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let applied = |kind: &str| {
        events
            .iter()
            .filter(|v| v["event"] == "applied" && v["data"]["action"] == kind)
            .cloned()
            .collect::<Vec<_>>()
    };
    let restores = applied("restore_container");
    assert_eq!(restores.len(), 1, "{out}");
    assert_eq!(restores[0]["host"], h1.as_str(), "{out}");
    assert_eq!(restores[0]["data"]["name"], "kube-apiserver", "{out}");
    assert_eq!(restores[0]["status"], "ok", "{out}");
    let snapshots = applied("save_etcd_snapshot");
    assert!(
        snapshots.len() == 1 && snapshots[0]["status"] == "ok",
        "{out}"
    );
    let after_first = check_undone(&cluster, &state_before, &apiserver_before).await;
    assert_eq!(
        after_first.len(),
        snapshots_before.len() + 1,
        "one more rkers-pre- snapshot on host1: {after_first:?}"
    );

    // The same `up` again: it fails the same way, and leaves the host as it was again.
    let (ok, text) = cluster.rkers(&["up"]);
    assert!(!ok, "{text}");
    for part in [
        h1.as_str(),
        "kube-apiserver",
        "https://localhost:6443/healthz",
        "failed its health check",
        "last log lines of the new kube-apiserver",
        "no-such-flag",
        "the host was restored",
    ] {
        assert!(text.contains(part), "the error lacks {part:?}:\n{text}");
    }
    let after_second = check_undone(&cluster, &state_before, &apiserver_before).await;
    assert_eq!(
        after_second.len(),
        after_first.len() + 1,
        "{after_second:?}"
    );

    // Back to the config the cluster runs: up succeeds, nothing old- anywhere.
    cluster.reset_config(3);
    cluster.up();
    assert_eq!(old_containers(&cluster), Vec::<String>::new());
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;

    // A stale old- container (a run killed between its rename and its removal) goes with the
    // next up, and only it.
    cluster.env.on_host(
        "host2",
        "docker create --name old-kube-proxy \"$(docker inspect -f '{{.Config.Image}}' kube-proxy)\" /bin/true >/dev/null",
    );
    let plan = cluster.dry_run();
    assert!(
        plan.contains("remove container old-kube-proxy (left aside by an interrupted run)")
            && plan.contains("1 action on 3 hosts"),
        "{plan}"
    );
    cluster.up();
    assert_eq!(old_containers(&cluster), Vec::<String>::new());
    let plan = cluster.dry_run();
    assert!(plan.contains("0 actions on 3 hosts"), "{plan}");
}

/// After a failed, undone `up`: the API answers through the kube-apiserver that ran before,
/// no `old-…` container is left, and the state still says what the cluster ran. Returns the
/// `rkers-pre-…` snapshots on host1.
async fn check_undone(cluster: &E2e, state_before: &Value, apiserver_before: &str) -> Vec<String> {
    api_answers(cluster).await;
    assert_eq!(
        cluster.env.container_ids(&["host1"])["host1/kube-apiserver"],
        apiserver_before,
        "kube-apiserver is the container that ran before"
    );
    assert_eq!(old_containers(cluster), Vec::<String>::new());
    assert_eq!(
        &cluster.state()["currentState"],
        state_before,
        "the state's current side must stay what the cluster runs"
    );
    let snapshots = pre_change_snapshots(cluster, "host1");
    assert!(!snapshots.is_empty(), "no rkers-pre- snapshot on host1");
    snapshots
}

/// The standard Kubernetes image with a kubelet that exits at once. rkers gives kubelet its
/// own entrypoint (rke-tools' entrypoint.sh, then `kubelet …`), so an image ENTRYPOINT would
/// never run: the binary itself is what fails. Built on `host`, pushed to the sandbox
/// registry under rkers-test/, and untagged there again, so the workers pull it in the run.
/// Returns its name.
fn build_failing_kubelet(cluster: &E2e, host: &str) -> String {
    use base64::Engine;
    let standard = cluster
        .env
        .on_host(host, "docker inspect -f '{{.Config.Image}}' kube-proxy")
        .trim()
        .to_string();
    let instance = std::env::var("SANDBOX_INSTANCE").unwrap_or_else(|_| "0".into());
    let registry = &cluster.env.registry;
    let image = format!("{registry}/rkers-test/kubelet-exits:{instance}");
    let dockerfile = format!(
        "FROM {standard}\nRUN printf '#!/bin/sh\\necho kubelet of the test image exits at \
         once >&2\\nexit 1\\n' > /usr/local/bin/kubelet && chmod 755 /usr/local/bin/kubelet\n"
    );
    let dockerfile = base64::engine::general_purpose::STANDARD.encode(dockerfile);
    let password = std::fs::read_to_string(cluster.env.dir.join("registry-password"))
        .expect("the sandbox's registry password");
    // A Docker client config of its own: the sandbox hosts share the machine's /root.
    cluster.env.on_host(
        host,
        &format!(
            "set -e; echo {dockerfile} | base64 -d | docker build -q -t {image} - >/dev/null
             d=$(mktemp -d); echo '{pw}' | docker --config $d login -u rkers --password-stdin {registry} >/dev/null 2>&1
             docker --config $d push {image} >/dev/null; rm -rf $d; docker rmi {image} >/dev/null",
            pw = password.trim()
        ),
    );
    image
}

/// The worker whose kubelet a failed `up --output json` put back, the only restore it
/// reported, and the other worker.
fn the_one_worker_restored(cluster: &E2e, out: &str) -> (&'static str, &'static str) {
    let restores: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "applied" && v["data"]["action"] == "restore_container")
        .collect();
    assert_eq!(restores.len(), 1, "one worker restored:\n{out}");
    assert_eq!(restores[0]["data"]["name"], "kubelet", "{out}");
    assert_eq!(restores[0]["status"], "ok", "{out}");
    let failed_ip = restores[0]["host"].as_str().unwrap_or_default();
    if failed_ip == cluster.env.ip(2) {
        ("host2", "host3")
    } else {
        assert_eq!(failed_ip, cluster.env.ip(3), "{out}");
        ("host3", "host2")
    }
}

fn nodes_cordoned(cluster: &E2e) -> String {
    let (ok, out) = cluster.kubectl(&[
        "get",
        "nodes",
        "-o",
        "jsonpath={.items[?(@.spec.unschedulable==true)].metadata.name}",
    ]);
    assert!(ok, "{out}");
    out.trim().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_worker_upgrade_is_undone_and_the_state_stays_old() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let started = Instant::now();
    let bad = build_failing_kubelet(&cluster, "host2");
    // host1 (a control plane host, upgraded with its control plane) gets a working
    // image under the new name, so the change succeeds there and fails only on the workers:
    // the failure must come from the worker plane, after the control plane went through.
    cluster.env.on_host(
        "host1",
        &format!("docker tag \"$(docker inspect -f '{{{{.Config.Image}}}}' kube-proxy)\" {bad}"),
    );
    let before = cluster.env.container_ids(&HOSTS);
    let state_before = cluster.state()["currentState"].clone();
    cluster.edit(|t| {
        format!(
            "{}upgrade_strategy:\n  max_unavailable_worker: 1\n",
            t.lines()
                .map(|l| {
                    if l.starts_with("  kubernetes: ") {
                        format!("  kubernetes: {bad}\n")
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect::<String>()
        )
    });
    let plan = cluster.dry_run();
    assert!(
        plan.contains("keep kubelet as old-kubelet until http://localhost:10248/healthz answers")
            && plan.contains("rolling upgrade of workers, 1 at a time"),
        "{plan}"
    );

    // The same `up` twice: each fails on the first worker, puts it back and leaves the rest.
    for attempt in ["first", "second"] {
        let (ok, out) = cluster.rkers(&["up", "--output", "json"]);
        assert!(!ok, "the {attempt} up must fail:\n{out}");
        let (failed, other) = the_one_worker_restored(&cluster, &out);
        for part in [
            "failed its health check",
            "kubelet of the test image exits at once",
            "the host was restored",
            "not upgraded",
        ] {
            assert!(
                out.contains(part),
                "{attempt}: the error lacks {part:?}:\n{out}"
            );
        }
        let now = cluster.env.container_ids(&HOSTS);
        // The failed worker runs the kubelet it ran before; the other one was not touched.
        for (key, id) in &before {
            if key.starts_with(&format!("{failed}/")) || key.starts_with(&format!("{other}/")) {
                assert_eq!(now.get(key), Some(id), "{attempt}: {key} changed:\n{out}");
            }
        }
        assert_ne!(
            now["host1/kubelet"], before["host1/kubelet"],
            "host1's kubelet runs the new image"
        );
        assert_eq!(old_containers(&cluster), Vec::<String>::new());
        assert_eq!(
            cluster.state()["currentState"],
            state_before,
            "{attempt}: a failed worker must leave the state of the last healthy run"
        );
        wait_nodes_ready(&api, &HOSTS, Duration::from_secs(120)).await;
        assert_eq!(
            nodes_cordoned(&cluster),
            "",
            "{attempt}: a node stays cordoned"
        );
    }
    eprintln!(
        "two failed worker upgrades, checked, in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // Back to the standard config: up succeeds and the state records it.
    cluster.reset_config(3);
    cluster.up();
    assert_eq!(old_containers(&cluster), Vec::<String>::new());
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
}

/// kubelet's CNI config directory moved to one only host1 has: host1 (upgraded with the
/// control plane) is Ready with it, while a worker's new kubelet answers its health check but
/// finds no CNI config, so its node stays NotReady. The worker's previous kubelet is kept as
/// `old-kubelet` until the node is Ready again (a Ready the previous kubelet posted does not
/// count), and put back when it is not within `--node-ready-timeout`. Before that undo, `up`
/// exited 0 here: the node still showed the previous kubelet's Ready when the run looked.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_whose_node_stays_not_ready_is_undone() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let started = Instant::now();
    let before = cluster.env.container_ids(&HOSTS);
    let state_before = cluster.state()["currentState"].clone();
    cluster.only_host1_keeps_its_cni_config();
    let plan = cluster.dry_run();
    for worker in ["host2", "host3"] {
        assert!(
            plan.contains(&format!(
                "keep kubelet as old-kubelet until http://localhost:10248/healthz answers and \
                 node {worker} is Ready"
            )),
            "{plan}"
        );
    }

    let (ok, out) = cluster.rkers(&["up", "--node-ready-timeout", "30", "--output", "json"]);
    assert!(
        !ok,
        "up must fail when a worker's node stays NotReady:\n{out}"
    );
    let (failed, _) = the_one_worker_restored(&cluster, &out);
    for part in [
        format!("node {failed} did not report Ready within 30s"),
        "the host was restored".to_string(),
        "not upgraded".to_string(),
    ] {
        assert!(out.contains(&part), "the error lacks {part:?}:\n{out}");
    }
    // The error says why the node is not Ready: the reason its new kubelet posted or, on a
    // loaded machine where that kubelet posted nothing yet within the timeout (CI once), that
    // the only Ready condition is its predecessor's.
    assert!(
        out.contains("cni config uninitialized")
            || out.contains("its Ready condition is still the one its previous kubelet posted"),
        "the error does not say why the node is not Ready:\n{out}"
    );
    // The workers run the containers they ran before; host1 the new kubelet.
    let now = cluster.env.container_ids(&HOSTS);
    for (key, id) in &before {
        if !key.starts_with("host1/") {
            assert_eq!(now.get(key), Some(id), "{key} changed:\n{out}");
        }
    }
    assert_ne!(now["host1/kubelet"], before["host1/kubelet"], "{out}");
    assert_eq!(old_containers(&cluster), Vec::<String>::new());
    assert_eq!(
        cluster.state()["currentState"],
        state_before,
        "a failed worker must leave the state of the last healthy run"
    );
    assert_eq!(nodes_cordoned(&cluster), "", "a node stays cordoned");
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(120)).await;
    eprintln!(
        "a worker undone for its NotReady node, checked, in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // Back to the standard config.
    cluster.reset_config(3);
    cluster.up();
    cluster.env.on_host("host1", "rm -rf /etc/cni/net.d-host1");
    assert_eq!(old_containers(&cluster), Vec::<String>::new());
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
}
