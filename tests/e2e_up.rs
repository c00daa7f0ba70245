//! `rkers up` end to end on the sandbox with the real Kubernetes v1.20 binaries: a 3-host
//! cluster comes up and works, a second `up` changes nothing, a config change recreates only
//! what it affects, pods spread over the workers reach each other across hosts, and hosts and
//! etcd members come and go.
//!
//! One test function: the steps build on each other and share the sandbox, which nothing else
//! may use meanwhile (nextest runs it in the `sandbox` group). Skips with a reason when not root
//! or when the sandbox and images are not there.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use rkers::kubeapi::KubeApi;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn sandbox_script() -> PathBuf {
    std::env::var_os("RKERS_SANDBOX_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/sandbox"))
}

fn sandbox(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(sandbox_script())
        .args(args)
        .output()
        .expect("run scripts/sandbox");
    assert!(
        out.status.success(),
        "scripts/sandbox {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn on_host(host: &str, cmd: &str) -> String {
    sandbox(&["exec", host, "sh", "-c", cmd])
}

/// `name id` of every running or created container on each host.
fn container_ids(hosts: &[&str]) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    for h in hosts {
        for line in on_host(h, "docker ps -a --format '{{.Names}} {{.ID}}'").lines() {
            if let Some((name, id)) = line.split_once(' ')
                && !name.starts_with("k8s_")
            {
                ids.insert(format!("{h}/{name}"), id.to_string());
            }
        }
    }
    ids
}

struct Cluster {
    dir: tempfile::TempDir,
    config: PathBuf,
    known_hosts: PathBuf,
}

impl Cluster {
    fn rkers(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--known-hosts")
            .arg(&self.known_hosts)
            .output()
            .expect("run rkers");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    fn up(&self) -> String {
        let started = Instant::now();
        let (ok, text) = self.rkers(&["up"]);
        assert!(ok, "rkers up failed:\n{text}");
        eprintln!("rkers up took {:.1}s", started.elapsed().as_secs_f64());
        text
    }

    fn dry_run(&self) -> String {
        let (ok, text) = self.rkers(&["up", "--dry-run"]);
        assert!(ok, "rkers up --dry-run failed:\n{text}");
        text
    }

    fn edit(&self, f: impl FnOnce(&str) -> String) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, f(&text)).unwrap();
    }

    fn kubeconfig(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("kube_config_cluster.yml")).unwrap()
    }
}

async fn wait_nodes_ready(api: &KubeApi, names: &[&str], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(api.client.clone());
        let list = nodes.list(&ListParams::default()).await.unwrap();
        let ready: BTreeSet<String> = list
            .items
            .iter()
            .filter(|n| rkers::kubeapi::nodes::is_ready(n))
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let all: BTreeSet<String> = list
            .items
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let want: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        if want.is_subset(&ready) && all == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nodes not as expected: want {want:?} Ready, have {all:?}, ready {ready:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn etcd_members(host: &str) -> Vec<String> {
    let out = on_host(host, "docker exec etcd etcdctl member list");
    out.lines()
        .filter_map(|l| l.split(", ").nth(2).map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_lifecycle_on_the_sandbox() {
    if let Err(reason) = support::require_root_and(&["ip", "nsenter", "unshare"]) {
        support::skip(&reason);
        return;
    }
    if !sandbox_script().exists() {
        support::skip("scripts/sandbox not found");
        return;
    }
    let registry = Command::new("curl")
        .args(["-sf", "http://127.0.0.1:5000/v2/rkers/hyperkube/tags/list"])
        .output();
    if !registry
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("v1.20.2"))
    {
        support::skip(
            "the sandbox registry has no rkers/hyperkube image: run scripts/build-images",
        );
        return;
    }

    // Fresh hosts, so every step below starts from a known state.
    sandbox(&["down", "--purge"]);
    let sandbox_yml = PathBuf::from(
        sandbox(&["up", "--hosts", "3", "--roles", "default"])
            .lines()
            .last()
            .unwrap()
            .trim(),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cluster.yml");
    std::fs::copy(&sandbox_yml, &config).unwrap();
    let cluster = Cluster {
        config,
        known_hosts: dir.path().join("known_hosts"),
        dir,
    };
    let hosts = ["host1", "host2", "host3"];

    // 1. Cold up: every node registers and becomes Ready; the API server answers /readyz.
    cluster.up();
    let api = KubeApi::from_kubeconfig(&cluster.kubeconfig())
        .await
        .unwrap();
    wait_nodes_ready(&api, &hosts, Duration::from_secs(180)).await;
    let readyz = api
        .client
        .request_text(http::Request::get("/readyz").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(readyz, "ok");
    assert_eq!(api.server_version().await.unwrap(), "v1.20.2");

    // 2. etcd is healthy through etcdctl with the certificates rkers made and deployed.
    let health = on_host("host1", "docker exec etcd etcdctl endpoint health 2>&1");
    assert!(health.contains("is healthy"), "{health}");
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cluster.dir.path().join("cluster.rkestate")).unwrap(),
    )
    .unwrap();
    assert!(
        state["currentState"]["certificatesBundle"]["kube-etcd-10-77-0-11"]["certificatePEM"]
            .is_string()
    );

    // 3. A second up with nothing changed: no action planned, every container kept.
    let before = container_ids(&hosts);
    let plan = cluster.dry_run();
    assert!(plan.contains("0 actions on 3 hosts"), "{plan}");
    cluster.up();
    assert_eq!(
        container_ids(&hosts),
        before,
        "a no-op up must not recreate containers"
    );

    // 4. One kube-api extra_args entry changed: only kube-apiserver is recreated.
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    extra_args:\n      audit-log-maxage: \"7\"\n",
        )
    });
    let plan = cluster.dry_run();
    assert!(plan.contains("recreate container kube-apiserver"), "{plan}");
    assert!(plan.contains("1 action on 3 hosts"), "{plan}");
    cluster.up();
    let after = container_ids(&hosts);
    let changed: Vec<&String> = before
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert_eq!(
        changed,
        ["host1/kube-apiserver"],
        "only kube-apiserver may change"
    );
    let entry = on_host(
        "host1",
        "docker inspect kube-apiserver --format '{{json .Config.Entrypoint}}'",
    );
    assert!(entry.contains("--audit-log-maxage=7"), "{entry}");

    // 5. A Deployment spread over the three hosts; each pod reaches the others across hosts.
    pods_reach_each_other(&api, &hosts).await;

    // 6. A fourth host joins as a worker, then leaves: its node object is deleted and its
    //    containers removed.
    let four = PathBuf::from(
        sandbox(&["up", "--hosts", "4"])
            .lines()
            .last()
            .unwrap()
            .trim(),
    );
    let host4 = extract_node(&std::fs::read_to_string(&four).unwrap(), "10.77.0.14");
    cluster.edit(|t| t.replacen("cluster_name:", &format!("{host4}cluster_name:"), 1));
    cluster.up();
    wait_nodes_ready(
        &api,
        &["host1", "host2", "host3", "host4"],
        Duration::from_secs(180),
    )
    .await;
    cluster.edit(|t| t.replace(&host4, ""));
    let plan = cluster.dry_run();
    assert!(
        plan.contains("10.77.0.14") && plan.contains("delete node host4"),
        "{plan}"
    );
    cluster.up();
    wait_nodes_ready(&api, &hosts, Duration::from_secs(60)).await;
    let left = on_host("host4", "docker ps -a --format '{{.Names}}'");
    for name in ["kubelet", "kube-proxy", "nginx-proxy", "service-sidekick"] {
        assert!(
            !left.lines().any(|l| l == name),
            "{name} left on host4: {left}"
        );
    }

    // 7. etcd grows from one member to three, then shrinks back to one.
    cluster.edit(|t| t.replace("role: [worker]", "role: [etcd, worker]"));
    cluster.up();
    let members = etcd_members("host1");
    assert_eq!(members.len(), 3, "{members:?}");
    for h in &hosts {
        let health = on_host(h, "docker exec etcd etcdctl endpoint health 2>&1");
        assert!(health.contains("is healthy"), "{h}: {health}");
    }
    cluster.edit(|t| t.replace("role: [etcd, worker]", "role: [worker]"));
    cluster.up();
    let members = etcd_members("host1");
    assert_eq!(members, ["etcd-host1"], "{members:?}");
    assert!(
        !on_host("host2", "docker ps -a --format '{{.Names}}'")
            .lines()
            .any(|l| l == "etcd")
    );
    wait_nodes_ready(&api, &hosts, Duration::from_secs(60)).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(api.client.clone());
    let host2 = nodes.get("host2").await.unwrap();
    assert!(
        !host2
            .metadata
            .labels
            .unwrap()
            .contains_key("node-role.kubernetes.io/etcd")
    );
}

/// The node entry of `address` in a sandbox cluster.yml, as text.
fn extract_node(yml: &str, address: &str) -> String {
    let start = yml
        .find(&format!("  - address: {address}\n"))
        .expect("node in sandbox cluster.yml");
    let rest = &yml[start + 4..];
    // The entry ends where the next node or the next top-level key starts, whichever is first
    // (`private_registries` further down has list items too).
    let end = ["\n  - ", "\ncluster_name:"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .map(|i| i + 1)
        .unwrap();
    yml[start..start + 4 + end].to_string()
}

async fn pods_reach_each_other(api: &KubeApi, hosts: &[&str]) {
    let image = format!("{}/rkers/rke-tools:v0.1.100-rkers1", "10.77.0.1:5000");
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "echo", "namespace": "default"},
        "spec": {
            "replicas": hosts.len(),
            "selector": {"matchLabels": {"app": "echo"}},
            "template": {
                "metadata": {"labels": {"app": "echo"}},
                "spec": {
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "echo"}}, "topologyKey": "kubernetes.io/hostname"}
                    ]}},
                    "containers": [{
                        "name": "echo",
                        "image": image,
                        "command": ["/bin/sh", "-c", "exec nc -lk -p 8080 -e hostname"]
                    }]
                }
            }
        }
    }))
    .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(api.client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(180);
    let running = loop {
        let list = pods
            .list(&ListParams::default().labels("app=echo"))
            .await
            .unwrap();
        let running: Vec<(String, String, String)> = list
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .filter_map(|p| {
                Some((
                    p.metadata.name.clone()?,
                    p.spec.as_ref()?.node_name.clone()?,
                    p.status.as_ref()?.pod_ip.clone()?,
                ))
            })
            .collect();
        if running.len() == hosts.len() {
            break running;
        }
        if Instant::now() > deadline {
            let states: Vec<String> = list
                .items
                .iter()
                .map(|p| {
                    format!(
                        "{:?}: {:?}",
                        p.metadata.name,
                        p.status.as_ref().map(|s| &s.container_statuses)
                    )
                })
                .collect();
            panic!("echo pods not running after 180s: {states:#?}");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let nodes: BTreeSet<&str> = running.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(nodes.len(), hosts.len(), "one pod per host: {running:?}");
    for (pod, node, _) in &running {
        let container = on_host(
            node,
            &format!(
                "docker ps -q --filter label=io.kubernetes.pod.name={pod} --filter label=io.kubernetes.container.name=echo"
            ),
        );
        let container = container.trim();
        for (_, other_node, ip) in running.iter().filter(|(_, n, _)| n != node) {
            let answer = on_host(
                node,
                &format!("docker exec {container} nc -w 5 {ip} 8080 </dev/null"),
            );
            assert!(
                answer.trim().starts_with("echo-"),
                "pod on {node} could not reach the pod on {other_node} ({ip}): {answer:?}"
            );
        }
    }
    let _ = Path::new("");
}
