//! Rolling upgrades on the sandbox (§17, `upgrade_strategy`): a kubelet flag changes on every
//! host of a running cluster with `drain: true` and `max_unavailable_worker: 1`.
//!
//! First a pod no controller manages sits on host2, so draining host2 must fail: the run stops
//! there, host2 is uncordoned again, and host3 is left alone because the budget of one failure
//! is used up. Without that pod the next run upgrades the workers one at a time, evicting the
//! Deployment's pods, and leaves every node schedulable.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS};

const STRATEGY: &str = "upgrade_strategy:
  max_unavailable_worker: 1
  max_unavailable_controlplane: 1
  drain: true
  node_drain_input:
    delete_local_data: true
    grace_period: 2
    timeout: 180
";

#[tokio::test(flavor = "multi_thread")]
async fn workers_are_upgraded_one_at_a_time_and_never_left_cordoned() {
    let Some(e2e) = E2e::new() else { return };
    let api = e2e.standard().await;
    let sb = e2e.env.clone();
    let image = format!("{}/rkers/rke-tools:v0.1.100-rkers1", sb.registry);

    // Three replicas, one per host, and a bare pod on host2.
    let deployments: Api<Deployment> = Api::namespaced(api.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), "default");
    let _ = deployments.delete("web", &DeleteParams::default()).await;
    // e2e_up's pods would be drained too; under CI's load one once stayed Terminating on
    // host2's kubelet past the drain timeout. They are not what this test is about.
    let _ = deployments.delete("echo", &DeleteParams::default()).await;
    let _ = pods
        .delete("bare", &DeleteParams::default().grace_period(0))
        .await;
    let web: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}
                    ]}},
                    "containers": [{"name": "web", "image": image, "command": ["sleep", "100000"]}]
                }
            }
        }
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    let bare: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bare"},
        "spec": {
            "nodeName": "host2",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "bare", "image": image, "command": ["sleep", "100000"]}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &bare).await.unwrap();
    let original = wait_running(&api, "app=web", 3).await;

    let before = sb.container_ids(&HOSTS);
    e2e.edit(|t| {
        t.replace(
            "  kubelet:\n    extra_args:\n",
            "  kubelet:\n    extra_args:\n      max-pods: \"111\"\n",
        ) + STRATEGY
    });
    let plan = e2e.dry_run();
    // Per host the kubelet recreated and its logs linked; the state Secret gets the new flag.
    assert!(plan.contains("7 actions on 4 hosts"), "{plan}");
    assert!(
        plan.contains("rolling upgrade of workers, 1 at a time")
            && plan.contains("cordoned and drained first: host2, host3"),
        "{plan}"
    );

    // 1. host2 cannot be drained: it fails, is uncordoned, and host3 is not touched.
    let (ok, text) = e2e.rkers(&["up", "--output", "json"]);
    assert!(!ok, "up must fail while host2 cannot be drained:\n{text}");
    assert!(
        text.contains(&sb.ip(2)) && text.contains("default/bare") && text.contains("force"),
        "the error must name host2 and the pod that blocks its drain:\n{text}"
    );
    assert!(
        text.contains(&sb.ip(3)) && text.contains("not upgraded"),
        "host3 must be left alone once the budget is used up:\n{text}"
    );
    let after = sb.container_ids(&HOSTS);
    assert_ne!(
        after["host1/kubelet"], before["host1/kubelet"],
        "host1 upgraded with the control plane"
    );
    assert_eq!(after["host2/kubelet"], before["host2/kubelet"]);
    assert_eq!(after["host3/kubelet"], before["host3/kubelet"]);
    assert_no_node_cordoned(&api).await;

    // 2. Without the bare pod the workers go one at a time, draining each.
    pods.delete("bare", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let started = Instant::now();
    let (ok, text) = e2e.rkers(&["up", "--output", "json"]);
    assert!(ok, "up failed:\n{text}");
    eprintln!("rolling up took {:.1}s", started.elapsed().as_secs_f64());
    let after = sb.container_ids(&HOSTS);
    for h in ["host2", "host3"] {
        assert_ne!(
            after[&format!("{h}/kubelet")],
            before[&format!("{h}/kubelet")],
            "{h} kubelet"
        );
        assert_eq!(
            after[&format!("{h}/kube-proxy")],
            before[&format!("{h}/kube-proxy")],
            "{h} kube-proxy"
        );
    }
    let windows = upgrade_windows(&text, "worker plane");
    assert_eq!(
        windows.len(),
        2,
        "two workers upgraded with cordon: {windows:?}\n{text}"
    );
    let (a, b) = (&windows[0], &windows[1]);
    assert!(
        a.2 <= b.1 || b.2 <= a.1,
        "max_unavailable_worker 1: the workers' upgrades overlap: {windows:?}"
    );
    assert_no_node_cordoned(&api).await;
    let now = wait_running(&api, "app=web", 3).await;
    let kept: Vec<&String> = original.intersection(&now).collect();
    assert!(
        kept.is_empty(),
        "every node was drained, yet pods {kept:?} were never evicted"
    );

    // Back to the standard cluster for the next test.
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    e2e.standard().await;
}

/// UIDs of the Running pods matching `selector`, once there are `n` of them.
async fn wait_running(api: &rkers::kubeapi::KubeApi, selector: &str, n: usize) -> BTreeSet<String> {
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = pods
            .list(&ListParams::default().labels(selector))
            .await
            .unwrap();
        let running: BTreeSet<String> = list
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        if running.len() == n {
            return running;
        }
        if Instant::now() >= deadline {
            let why = support::e2e::why_pods_wait(api, "default", selector).await;
            panic!("{selector}: {} of {n} pods running{why}", running.len());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn assert_no_node_cordoned(api: &rkers::kubeapi::KubeApi) {
    let nodes: Api<Node> = Api::all(api.client.clone());
    for node in nodes.list(&ListParams::default()).await.unwrap().items {
        let name = node.metadata.name.clone().unwrap_or_default();
        assert!(
            !node
                .spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false),
            "node {name} left cordoned"
        );
        assert!(
            !node
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key(rkers::kubeapi::drain::CORDONED_BY_RKERS),
            "node {name} still marked as cordoned by rkers"
        );
    }
}

type Time = time::OffsetDateTime;

fn parse_time(v: &serde_json::Value) -> Time {
    Time::parse(
        v.as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
}

/// `(host, started, finished)` of each successful "rolling upgrade" in `phase`, from the JSON
/// events on stdout.
fn upgrade_windows(output: &str, phase: &str) -> Vec<(String, Time, Time)> {
    let events: Vec<serde_json::Value> = output
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e["phase"] == phase && e["action"] == "rolling upgrade")
        .collect();
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e["status"] == "ok") {
        let host = e["host"].as_str().unwrap().to_string();
        let start = events
            .iter()
            .find(|s| s["status"] == "started" && s["host"] == e["host"])
            .map(|s| parse_time(&s["time"]))
            .unwrap();
        out.push((host, start, parse_time(&e["time"])));
    }
    out
}
