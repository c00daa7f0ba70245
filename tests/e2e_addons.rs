//! Addons end to end on the sandbox's real API server (v1.20): a user addon is applied with
//! server-side apply and its Deployment (on the sandbox's pause image) becomes ready; a second
//! `up` plans and changes nothing; an object removed from the addon is pruned; a DNS addon whose image
//! does not exist fails `up` with the image and the ImagePullBackOff in the error, after its
//! objects were created; switching `dns.provider` removes the old provider's objects. At the end
//! the standard config (no addons) is restored and `up` prunes everything again.
//!
//! No CoreDNS, flannel, calico, metrics-server or ingress-nginx image can be built here (Debian
//! has no packages for them), so system addons (network plugin, DNS, metrics-server, ingress) are
//! exercised through their object creation, failure path and prune only; their rendering is
//! covered by the template tests in crates/rkers-engine/src/addons/gotemplate.rs and plan.rs.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::Api;
use std::time::Instant;
use support::e2e::E2e;

const NS: &str = "rkers-e2e-addons";

fn pause_image(config: &str) -> String {
    config
        .lines()
        .find_map(|l| l.trim().strip_prefix("pod_infra_container: "))
        .expect("sandbox cluster.yml names the pause image")
        .trim()
        .to_string()
}

fn user_addon(pause: &str, with_drop: bool) -> String {
    let mut docs = vec![
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: pause\n  namespace: {NS}\n\
             spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: pause}}\n  template:\n\
             \x20   metadata:\n      labels: {{app: pause}}\n    spec:\n      containers:\n\
             \x20     - name: pause\n        image: {pause}\n        imagePullPolicy: IfNotPresent\n"
        ),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: {NS}\ndata:\n  a: \"1\"\n"
        ),
    ];
    if with_drop {
        docs.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: drop\n  namespace: {NS}\ndata:\n  b: \"2\"\n"
        ));
    }
    let body: String = docs.join("---\n");
    let indented: String = body.lines().map(|l| format!("  {l}\n")).collect();
    format!("addons: |-\n{indented}")
}

fn with_addons(base: &str, extra: &str, dns: &str) -> String {
    assert!(
        base.contains("dns:\n  provider: none\n"),
        "sandbox cluster.yml has the dns block"
    );
    let text = base.replace("dns:\n  provider: none\n", dns);
    // Five steps below fail on a missing image and so wait the whole timeout each: long enough
    // for the kubelet's pull to fail (seconds against the sandbox registry, even under load),
    // short enough not to idle.
    format!("{text}addon_job_timeout: 15\n{extra}")
}

#[tokio::test(flavor = "multi_thread")]
async fn addons_apply_prune_and_fail_clearly() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let base = std::fs::read_to_string(&cluster.config).unwrap();
    let pause = pause_image(&base);
    let started = Instant::now();
    let none = "dns:\n  provider: none\n";

    // 1. A user addon: applied, its Deployment ready, the RKE1 ConfigMap stored.
    std::fs::write(
        &cluster.config,
        with_addons(&base, &user_addon(&pause, true), none),
    )
    .unwrap();
    let out = cluster.up();
    assert!(
        out.contains("[addons] rke-user-addon: applied 4 objects"),
        "{out}"
    );
    let deploys: Api<Deployment> = Api::namespaced(api.client.clone(), NS);
    // Like RKE1's addon job, up applies user addons and does not wait for their workloads;
    // the Deployment must become available on its own shortly after.
    let mut available = None;
    let mut managed = Vec::new();
    for _ in 0..60 {
        let d = deploys.get("pause").await.unwrap();
        managed = d.metadata.managed_fields.unwrap_or_default();
        available = d.status.and_then(|s| s.available_replicas);
        if available == Some(1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    assert_eq!(
        available,
        Some(1),
        "the user addon's Deployment never became available"
    );
    let cms: Api<ConfigMap> = Api::namespaced(api.client.clone(), NS);
    assert!(cms.get_opt("drop").await.unwrap().is_some());
    let stored: Api<ConfigMap> = Api::namespaced(api.client.clone(), "kube-system");
    let cm = stored.get("rke-user-addon").await.unwrap();
    assert!(cm.data.unwrap()["rke-user-addon"].contains("name: drop"));
    assert!(
        managed
            .iter()
            .any(|m| m.manager.as_deref() == Some("rkers")
                && m.operation.as_deref() == Some("Apply"))
    );

    // 2. A second up changes nothing: its dry run read every object (a server-side apply as
    //    a dry run each) and plans nothing, and the addon is not applied again.
    let plan = cluster.dry_run();
    assert!(plan.contains("0 actions on 3 hosts"), "{plan}");
    let out = cluster.up();
    assert!(!out.contains("[addons] rke-user-addon: applied"), "{out}");

    // 3. An object removed from the addon is pruned; the others stay.
    std::fs::write(
        &cluster.config,
        with_addons(&base, &user_addon(&pause, false), none),
    )
    .unwrap();
    let out = cluster.up();
    assert!(
        out.contains(&format!("pruned ConfigMap {NS}/drop")),
        "{out}"
    );
    assert!(cms.get_opt("drop").await.unwrap().is_none());
    assert!(cms.get_opt("keep").await.unwrap().is_some());

    // 4. CoreDNS with an image that does not exist: objects created, then a failure that names
    //    the image and the pull error.
    let missing = pause.rsplit_once('/').unwrap().0.to_string() + "/rkers-no-such-image:v0";
    let with_images = |provider: &str| {
        let text = with_addons(&base, "", &format!("dns:\n  provider: {provider}\n"));
        text.replace(
            "system_images:\n",
            &format!(
                "system_images:\n  coredns: {missing}\n  coredns_autoscaler: {missing}\n  kubedns: {missing}\n  \
                 dnsmasq: {missing}\n  kubedns_sidecar: {missing}\n  kubedns_autoscaler: {missing}\n"
            ),
        )
    };
    std::fs::write(&cluster.config, with_images("coredns")).unwrap();
    let (ok, out) = cluster.rkers(&["up"]);
    assert!(
        !ok,
        "up must fail when an addon image does not exist:\n{out}"
    );
    assert!(out.contains("rkers-no-such-image:v0"), "{out}");
    assert!(
        out.contains("ImagePullBackOff") || out.contains("ErrImagePull"),
        "{out}"
    );
    assert!(out.contains("coredns"), "{out}");
    let system_deploys: Api<Deployment> = Api::namespaced(api.client.clone(), "kube-system");
    assert!(system_deploys.get_opt("coredns").await.unwrap().is_some());
    let services: Api<Service> = Api::namespaced(api.client.clone(), "kube-system");
    let svc = services.get("kube-dns").await.unwrap();
    assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("10.43.0.10"));

    // 5. Switching to kube-dns removes CoreDNS's objects first (kube-dns then fails the same way).
    std::fs::write(&cluster.config, with_images("kube-dns")).unwrap();
    let (ok, out) = cluster.rkers(&["up"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("pruned Deployment kube-system/coredns"),
        "{out}"
    );
    assert!(system_deploys.get_opt("coredns").await.unwrap().is_none());
    assert!(system_deploys.get_opt("kube-dns").await.unwrap().is_some());
    assert!(stored.get_opt("rke-coredns-addon").await.unwrap().is_none());

    // 6. The other system addons, one at a time and each with images that do not exist: the
    //    network plugin, metrics-server and ingress objects are created and kept in RKE1's
    //    ConfigMap, `up` fails naming the image, and the next config without them prunes them.
    let base_none = with_addons(&base, "", none);
    let missing_images = |text: String| {
        text.replace(
            "system_images:\n",
            &format!(
                "system_images:\n  flannel: {missing}\n  flannel_cni: {missing}\n  metrics_server: {missing}\n  \
                 ingress: {missing}\n  ingress_backend: {missing}\n  ingress_webhook: {missing}\n"
            ),
        )
    };
    let steps = [
        (
            "rke-network-plugin",
            base_none.replace("  plugin: none\n", "  plugin: flannel\n"),
        ),
        (
            "rke-metrics-addon",
            base_none.replace(
                "monitoring:\n  provider: none\n",
                "monitoring:\n  provider: metrics-server\n",
            ),
        ),
        (
            "rke-ingress-controller",
            base_none.replace(
                "ingress:\n  provider: none\n",
                "ingress:\n  provider: nginx\n",
            ),
        ),
    ];
    let mut previous: Option<&str> = None;
    for (resource, text) in &steps {
        assert_ne!(
            text, &base_none,
            "{resource}: the sandbox config has the addon's block"
        );
        std::fs::write(&cluster.config, missing_images(text.clone())).unwrap();
        let (ok, out) = cluster.rkers(&["up"]);
        assert!(!ok, "{resource}: up must fail without its images:\n{out}");
        assert!(
            out.contains(&format!("[addons] {resource}")) && out.contains("applied"),
            "{out}"
        );
        assert!(out.contains("rkers-no-such-image:v0"), "{resource}: {out}");
        assert!(
            stored.get_opt(resource).await.unwrap().is_some(),
            "{resource}: RKE1's ConfigMap is kept"
        );
        if let Some(before) = previous {
            assert!(out.contains(&format!("[addons] {before}: pruned")), "{out}");
            assert!(
                stored.get_opt(before).await.unwrap().is_none(),
                "{before} not pruned"
            );
        }
        previous = Some(resource);
    }

    // 7. Back to the standard config: every addon object is pruned.
    cluster.standard().await;
    assert!(system_deploys.get_opt("kube-dns").await.unwrap().is_none());
    assert!(deploys.get_opt("pause").await.unwrap().is_none());
    assert!(stored.get_opt("rke-user-addon").await.unwrap().is_none());
    assert!(
        stored
            .get_opt("rke-ingress-controller")
            .await
            .unwrap()
            .is_none()
    );
    eprintln!("addon steps took {:.0}s", started.elapsed().as_secs_f64());
}

/// The CNI readiness wait on the real API server: it returns at once while every node is Ready,
/// and when a node's kubelet stops it fails naming that node, its Ready condition and the
/// state of the network plugin's pods on it (here a stand-in pod labelled like a CNI agent).
#[tokio::test(flavor = "multi_thread")]
async fn cni_readiness_names_the_node_without_a_network() {
    use rkers::addons::wait::wait_nodes_network;
    use std::collections::BTreeMap;
    use std::time::Duration;
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let base = std::fs::read_to_string(&cluster.config).unwrap();
    let pause = pause_image(&base);
    let selector: BTreeMap<String, String> =
        [("app".to_string(), "rkers-e2e-fake-cni".to_string())].into();
    let cni = vec![("default".to_string(), selector)];
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: rkers-e2e-fake-cni\n  labels: {{app: rkers-e2e-fake-cni}}\n\
         spec:\n  nodeName: host3\n  containers:\n  - name: pause\n    image: {pause}\n    imagePullPolicy: IfNotPresent\n"
    );
    let file = cluster.dir.join("fake-cni-pod.yaml");
    std::fs::write(&file, pod).unwrap();
    let (ok, out) = cluster.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    assert!(ok, "{out}");

    wait_nodes_network(&api, &cni, Duration::from_secs(30))
        .await
        .expect("every node is Ready");

    // With its kubelet stopped, nothing reports host3 Ready again. The controller manager would
    // mark it Unknown only once its status is 40 s stale; the test writes that same condition
    // itself rather than idle for it. The wait is then given 10 s.
    cluster.env.on_host("host3", "docker stop kubelet");
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(api.client.clone());
    let unknown = serde_json::json!({"status": {"conditions": [{
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
    }]}});
    nodes
        .patch_status(
            "host3",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Strategic(&unknown),
        )
        .await
        .unwrap();
    let node = nodes.get("host3").await.unwrap();
    assert!(
        !rkers::kubeapi::nodes::is_ready(&node),
        "host3 is still Ready: {:?}",
        node.status.and_then(|s| s.conditions)
    );
    let err = wait_nodes_network(&api, &cni, Duration::from_secs(10))
        .await
        .expect_err("host3's kubelet is stopped")
        .to_string();
    cluster.env.on_host("host3", "docker start kubelet");
    assert!(err.contains("node host3:"), "{err}");
    assert!(
        !err.contains("node host1:") && !err.contains("node host2:"),
        "{err}"
    );
    assert!(
        err.contains("rkers-e2e-fake-cni"),
        "the plugin's pod on host3 is described: {err}"
    );

    support::e2e::wait_nodes_ready(&api, &support::e2e::HOSTS, Duration::from_secs(180)).await;
    let (ok, out) = cluster.kubectl(&["delete", "pod", "rkers-e2e-fake-cni", "--wait=false"]);
    assert!(ok, "{out}");
}
