//! `rkers up` end to end on the sandbox with the real Kubernetes v1.20 binaries: a 3-host
//! cluster comes up and works, a second `up` changes nothing, a config change recreates only
//! what it affects, pods spread over the workers reach each other across hosts, and hosts come and
//! go (etcd members come and go in e2e_dry_run_truth).
//!
//! One test function: the steps build on each other and share the sandbox, which nothing else
//! may use meanwhile (nextest runs it in the `sandbox` group). Skips with a reason when not root
//! or when the sandbox and images are not there.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use rkers::kubeapi::KubeApi;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::e2e::{E2e, SandboxEnv, node_entry, wait_nodes_ready};

#[tokio::test(flavor = "multi_thread")]
async fn cluster_lifecycle_on_the_sandbox() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    // Fresh hosts, so every step below starts from a known state and the first up is cold.
    cluster.fresh();
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

    // RKE1's log links (§8.5) point at each component's Docker log.
    let links = sb.on_host(
        "host1",
        "for l in /var/lib/rancher/rke/log/*.log; do [ -e \"$l\" ] && basename \"$l\"; done",
    );
    for name in ["etcd_", "kube-apiserver_", "kubelet_", "kube-proxy_"] {
        assert!(
            links.lines().any(|l| l.starts_with(name)),
            "no log link for {name}: {links}"
        );
    }

    // They were made inside the running kubelet, not by a helper container per host (issue 19).
    let linkers = sb.on_host(
        "host1",
        "docker events --since 30m --until 0s --filter event=create --filter event=exec_create \
         --format '{{.Action}} {{.Actor.Attributes.name}}' \
         | sed -n -e 's|^exec_create: .*/var/lib/rancher/rke/log.*|log links by exec|p' -e '/rke-log-linker/p'",
    );
    assert!(
        linkers.contains("log links by exec") && !linkers.contains("rke-log-linker"),
        "log links were not made inside kubelet: {linkers}"
    );

    // etcd's data directory was made private by the host's shell (the sandbox's SSH user is
    // root and its Docker runs without SELinux), not by RKE1's etcd-fix-perm helper container.
    // The creates of etcd itself are counted too, so events that say nothing fail the check.
    let fix_perm = sb.on_host(
        "host1",
        "docker events --since 30m --until 0s --filter event=create \
         --format '{{.Actor.Attributes.name}}' \
         | awk '$0 == \"etcd-fix-perm\" { h++ } $0 == \"etcd\" { e++ } END { print h + 0, (e ? \"seen\" : \"none\") }'; \
         stat -c %a /var/lib/etcd",
    );
    assert_eq!(
        fix_perm.split_whitespace().collect::<Vec<_>>(),
        ["0", "seen", "700"],
        "etcd-fix-perm ran, etcd's create was not seen, or /var/lib/etcd is not private: \
         {fix_perm}"
    );

    // 2. etcd is healthy through etcdctl with the certificates rkers made and deployed.
    let health = sb.on_host("host1", "docker exec etcd etcdctl endpoint health 2>&1");
    assert!(health.contains("is healthy"), "{health}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cluster.state_path()).unwrap()).unwrap();
    assert!(
        state["currentState"]["certificatesBundle"]
            [format!("kube-etcd-{}", sb.ip(1).replace('.', "-")).as_str()]["certificatePEM"]
            .is_string()
    );

    // 3. A second up with nothing changed: no action planned, every container kept.
    let before = sb.container_ids(&hosts);
    let plan = cluster.dry_run();
    assert!(plan.contains("0 actions on 3 hosts"), "{plan}");
    let since = sb.on_host("host1", "date +%s").trim().to_string();
    let noop = cluster.up();
    assert_eq!(
        sb.container_ids(&hosts),
        before,
        "a no-op up must not recreate containers"
    );
    // The etcd member report comes from etcd's JSON gateway, not an `etcdctl` exec in the etcd
    // container (a third of a no-op's time when it did).
    assert!(
        noop.contains(&format!(
            "etcd cluster has 1 members: etcd-host1 (https://{}:2380)",
            sb.ip(1)
        )),
        "{noop}"
    );
    let etcdctl_execs = sb.on_host(
        "host1",
        &format!(
            "docker events --since {since} --until 0s --filter event=exec_create \
             --filter container=etcd --format '{{{{.Action}}}}'"
        ),
    );
    assert!(
        !etcdctl_execs.contains("member list"),
        "the no-op up ran etcdctl in the etcd container: {etcdctl_execs}"
    );
    // The files were read in the host's root shell, not through Docker's archive API (dockerd
    // re-executes itself for each read) nor the file helper; nor was the helper ever created
    // to write them. One read through the archive API, made here, shows such reads are seen.
    let archive_reads = sb.on_host(
        "host1",
        &format!(
            "docker cp kubelet:/etc/kubernetes/ssl/kube-ca.pem - > /dev/null; sleep 1; \
             docker events --since {since} --until 0s --filter event=archive-path \
             --filter event=extract-to-dir --format '{{{{.Action}}}} {{{{.Actor.Attributes.name}}}}'; \
             docker events --since 30m --until 0s --filter event=create \
             --format '{{{{.Actor.Attributes.name}}}}' | grep -c '^rkers-file' || true"
        ),
    );
    assert_eq!(
        archive_reads.lines().collect::<Vec<_>>(),
        ["archive-path kubelet", "0"],
        "the no-op read the files through Docker, or a file helper was created: {archive_reads}"
    );

    // A file RKE1's deployer manages but the config no longer asks for is deleted (§13).
    sb.on_host(
        "host2",
        "echo stale > /etc/kubernetes/kube-api-authn-webhook.yaml",
    );
    let plan = cluster.dry_run();
    assert!(
        plan.contains("remove /etc/kubernetes/kube-api-authn-webhook.yaml")
            && plan.contains("1 action on 3 hosts"),
        "{plan}"
    );
    cluster.up();
    let (present, _) = sb.try_on_host(
        "host2",
        "test -e /etc/kubernetes/kube-api-authn-webhook.yaml",
    );
    assert!(!present, "the stale webhook config is still on host2");

    // 4. One kube-api extra_args entry changed: only kube-apiserver is recreated.
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    extra_args:\n      audit-log-maxage: \"7\"\n",
        )
    });
    let plan = cluster.dry_run();
    assert!(plan.contains("recreate container kube-apiserver"), "{plan}");
    // With the etcd snapshot taken first, its log links, and the state Secret that records
    // the new flag.
    assert!(
        plan.contains("take etcd snapshot rkers-pre-")
            && plan.contains("link the logs of kube-apiserver")
            && plan.contains("4 actions on 4 hosts"),
        "{plan}"
    );
    cluster.up();
    let after = sb.container_ids(&hosts);
    let changed: Vec<&String> = before
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert_eq!(
        changed,
        ["host1/kube-apiserver"],
        "only kube-apiserver may change"
    );
    let entry = sb.on_host(
        "host1",
        "docker inspect kube-apiserver --format '{{json .Config.Entrypoint}}'",
    );
    assert!(entry.contains("--audit-log-maxage=7"), "{entry}");

    // 5. A Deployment spread over the three hosts; each pod reaches the others across hosts.
    pods_reach_each_other(&sb, &api, &hosts).await;

    // 6. A fourth host joins as a worker, then leaves: its node object is deleted and its
    //    containers removed.
    let four = PathBuf::from(
        sb.run(&["up", "--hosts", "4"])
            .lines()
            .last()
            .unwrap()
            .trim(),
    );
    let host4 = node_entry(&std::fs::read_to_string(&four).unwrap(), &sb.ip(4));
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
        plan.contains(&sb.ip(4)) && plan.contains("delete node host4"),
        "{plan}"
    );
    cluster.up();
    wait_nodes_ready(&api, &hosts, Duration::from_secs(60)).await;
    let left = sb.on_host("host4", "docker ps -a --format '{{.Names}}'");
    for name in ["kubelet", "kube-proxy", "nginx-proxy", "service-sidekick"] {
        assert!(
            !left.lines().any(|l| l == name),
            "{name} left on host4: {left}"
        );
    }

    // etcd growing to three members and shrinking back is e2e_dry_run_truth's
    // `up_with_hosts_and_etcd_members_coming_and_going_applies_exactly_its_dry_run`: the same
    // two `up`s, with these steps' health and label assertions too.
}

async fn pods_reach_each_other(sb: &SandboxEnv, api: &KubeApi, hosts: &[&str]) {
    let image = format!("{}/rkers/rke-tools:v0.1.100-rkers1", sb.registry);
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
        let container = sb.on_host(
            node,
            &format!(
                "docker ps -q --filter label=io.kubernetes.pod.name={pod} --filter label=io.kubernetes.container.name=echo"
            ),
        );
        let container = container.trim();
        for (_, other_node, ip) in running.iter().filter(|(_, n, _)| n != node) {
            let answer = sb.on_host(
                node,
                &format!("docker exec {container} nc -w 5 {ip} 8080 </dev/null"),
            );
            assert!(
                answer.trim().starts_with("echo-"),
                "pod on {node} could not reach the pod on {other_node} ({ip}): {answer:?}"
            );
        }
    }
}
