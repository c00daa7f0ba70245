//! `rkers cert list` and `rkers cert rotate` end to end on the sandbox with the real Kubernetes
//! binaries: expiry per host, a kubelet-only rotation that restarts only the kubelets, a host
//! down during a rotation, and a CA rotation interrupted by SIGINT and then finished by a
//! second run, after which the admin kubeconfig (new CA) works, every node is Ready and etcd is
//! healthy.
//!
//! One test function: the steps build on each other and share the sandbox (nextest runs it in
//! the `sandbox` group). It leaves `generate_serving_certificate` on; `E2e::standard()` puts
//! the config back with one `up`.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS, SandboxEnv, wait_nodes_ready};

/// `host/name -> StartedAt` of every rkers-managed container.
fn started_at(sb: &SandboxEnv) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for h in HOSTS {
        for line in sb
            .on_host(
                h,
                "docker ps -a --format '{{.Names}}' | grep -v '^k8s_' | \
                 xargs docker inspect --format '{{.Name}} {{.State.StartedAt}}'",
            )
            .lines()
        {
            if let Some((name, at)) = line.split_once(' ') {
                out.insert(format!("{h}/{}", name.trim_start_matches('/')), at.into());
            }
        }
    }
    out
}

fn changed_keys(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn bundle_pem(state: &serde_json::Value, which: &str, name: &str) -> String {
    state[which]["certificatesBundle"][name]["certificatePEM"]
        .as_str()
        .unwrap_or_else(|| panic!("{which} {name} missing from the state"))
        .to_string()
}

fn cert_list_json(cluster: &E2e) -> Vec<serde_json::Value> {
    let (ok, out) = cluster.rkers(&["cert", "list", "--output", "json"]);
    assert!(ok, "cert list failed:\n{out}");
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("certificate").is_some())
        .collect()
}

fn etcd_healthy(sb: &SandboxEnv) {
    let health = sb.on_host("host1", "docker exec etcd etcdctl endpoint health 2>&1");
    assert!(health.contains("is healthy"), "{health}");
}

#[tokio::test(flavor = "multi_thread")]
async fn certificates_list_rotate_and_survive_failures() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    let started = Instant::now();
    cluster.standard().await;
    eprintln!("standard: {:.1}s", started.elapsed().as_secs_f64());

    // Serving certificates from the cluster CA, so rotating the kubelet's certificates renews
    // the certificate it serves with.
    cluster.edit(|t| {
        t.replace(
            "  kubelet:\n",
            "  kubelet:\n    generate_serving_certificate: true\n",
        )
    });
    cluster.up();
    let api = cluster.api().await;
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
    eprintln!("serving certs on: {:.1}s", started.elapsed().as_secs_f64());

    // 1. cert list: each host's deployed certificates with their expiry, ten years ahead.
    let rows = cert_list_json(&cluster);
    for n in 1..=3u8 {
        let ip = sb.ip(n);
        let node = rows
            .iter()
            .find(|r| r["host"] == ip.as_str() && r["certificate"] == "kube-node")
            .unwrap_or_else(|| panic!("no kube-node row for {ip}: {rows:?}"));
        assert_eq!(node["source"], "host", "{node}");
        let days = node["days_left"].as_i64().unwrap();
        assert!((3600..=3660).contains(&days), "{node}");
        let serving = format!("kube-kubelet-{}", ip.replace('.', "-"));
        assert!(
            rows.iter()
                .any(|r| r["host"] == ip.as_str() && r["certificate"] == serving.as_str()),
            "{serving} on {ip}: {rows:?}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r["host"] == sb.ip(1).as_str() && r["certificate"] == "kube-apiserver")
    );
    assert!(
        rows.iter()
            .any(|r| r["host"] == "local" && r["certificate"] == "kube-admin")
    );
    let (ok, table) = cluster.rkers(&["cert", "list"]);
    assert!(ok, "{table}");
    assert!(
        table.contains("CERTIFICATE") && table.contains("EXPIRES") && table.contains("kube-ca"),
        "{table}"
    );

    // 2. A host down: the rotation stops before changing anything and names it; the state
    //    stays loadable and unchanged in what it says the cluster runs.
    let state_before = cluster.state();
    sb.run(&["stop-host", "host3"]);
    let (ok, out) = cluster.rkers(&["cert", "rotate", "--service", "kubelet"]);
    sb.run(&["start-host", "host3"]);
    assert!(!ok, "cert rotate must fail with host3 down:\n{out}");
    assert!(out.contains("host3") && out.contains(&sb.ip(3)), "{out}");
    let state = cluster.state();
    assert_eq!(
        bundle_pem(&state, "currentState", "kube-node"),
        bundle_pem(&state_before, "currentState", "kube-node")
    );

    // 3. The dry run after the host is back: only the kubelets restart, nothing is written.
    let state_text = std::fs::read(cluster.state_path()).unwrap();
    let (ok, plan) = cluster.rkers(&["cert", "rotate", "--service", "kubelet", "--dry-run"]);
    assert!(ok, "{plan}");
    assert_eq!(std::fs::read(cluster.state_path()).unwrap(), state_text);
    assert_eq!(
        plan.matches("restart container kubelet").count(),
        3,
        "{plan}"
    );
    assert!(!plan.contains("restart container etcd"), "{plan}");
    assert!(!plan.contains("restart container kube-apiserver"), "{plan}");

    // 4. Rotate the kubelet certificates: new kube-node and serving certificates, only the
    //    kubelet containers restarted (RKE1 restarted everything).
    let host2_serving = format!(
        "cat /etc/kubernetes/ssl/kube-kubelet-{}.pem",
        sb.ip(2).replace('.', "-")
    );
    let serving_before = sb.on_host("host2", &host2_serving);
    let ids_before = sb.container_ids(&HOSTS);
    let started_before = started_at(&sb);
    let t = Instant::now();
    let (ok, out) = cluster.rkers(&["cert", "rotate", "--service", "kubelet"]);
    assert!(ok, "cert rotate --service kubelet failed:\n{out}");
    eprintln!(
        "cert rotate --service kubelet: {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(
        sb.container_ids(&HOSTS),
        ids_before,
        "no container may be recreated"
    );
    let restarted = changed_keys(&started_before, &started_at(&sb));
    assert_eq!(
        restarted,
        ["host1/kubelet", "host2/kubelet", "host3/kubelet"],
        "only the kubelets may restart"
    );
    let serving_after = sb.on_host("host2", &host2_serving);
    assert_ne!(serving_before, serving_after, "serving certificate renewed");
    let state = cluster.state();
    assert_ne!(
        bundle_pem(&state, "currentState", "kube-node"),
        bundle_pem(&state_before, "currentState", "kube-node")
    );
    assert_eq!(
        bundle_pem(&state, "currentState", "kube-apiserver"),
        bundle_pem(&state_before, "currentState", "kube-apiserver")
    );
    // The kubelet serves with the new certificate.
    let served = sb.on_host(
        "host1",
        &format!(
            "echo | openssl s_client -connect {}:10250 2>/dev/null | openssl x509",
            sb.ip(2)
        ),
    );
    assert_eq!(served.trim(), serving_after.trim(), "kubelet serving cert");
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(120)).await;

    // 5. A CA rotation interrupted by SIGINT once the new state is written and the workers'
    //    restarts have begun: exit 130, the state loadable, its current state still the old CA.
    let old_ca = bundle_pem(&cluster.state(), "currentState", "kube-ca");
    let mut child = cluster
        .command(&["cert", "rotate", "--rotate-ca", "--output", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut interrupted = false;
    // Read to the end (rather than stop at the signal) so rkers never writes to a closed pipe.
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        seen.push(line.clone());
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if !interrupted && event["phase"] == "restart worker plane" && event["status"] == "started"
        {
            support::run(
                std::process::Command::new("kill").args(["-INT", &child.id().to_string()]),
            );
            interrupted = true;
        }
    }
    let status = child.wait().unwrap();
    assert!(
        interrupted,
        "never reached the worker restarts:\n{}",
        seen.join("\n")
    );
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    let state = cluster.state();
    assert_ne!(
        bundle_pem(&state, "desiredState", "kube-ca"),
        old_ca,
        "the new CA was written before the hosts were touched"
    );
    assert_eq!(bundle_pem(&state, "currentState", "kube-ca"), old_ca);

    // 6. A second run completes: a CA again new, the admin kubeconfig trusts it and works,
    //    every node is Ready with its certificates, etcd is healthy.
    let t = Instant::now();
    let (ok, out) = cluster.rkers(&["cert", "rotate", "--rotate-ca"]);
    assert!(ok, "cert rotate --rotate-ca failed:\n{out}");
    eprintln!("cert rotate --rotate-ca: {:.1}s", t.elapsed().as_secs_f64());
    let state = cluster.state();
    let new_ca = bundle_pem(&state, "currentState", "kube-ca");
    assert_ne!(new_ca, old_ca);
    assert_eq!(bundle_pem(&state, "desiredState", "kube-ca"), new_ca);
    assert_eq!(
        state["currentState"]["certificatesBundle"]["kube-service-account-token"]["keyPEM"],
        state_before["currentState"]["certificatesBundle"]["kube-service-account-token"]["keyPEM"],
        "the service account key is kept, so existing tokens stay valid"
    );
    let kubeconfig = cluster.kubeconfig();
    let embedded = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .expect("admin kubeconfig embeds the CA");
    let decoded = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, embedded.trim())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(decoded.trim(), new_ca.trim());
    let api = cluster.api().await;
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
    let (ok, out) = cluster.kubectl(&["get", "nodes", "-o", "name"]);
    assert!(ok && out.lines().count() == 3, "{out}");
    etcd_healthy(&sb);
    let ca_on_host3 = sb.on_host("host3", "cat /etc/kubernetes/ssl/kube-ca.pem");
    assert_eq!(ca_on_host3.trim(), new_ca.trim());
    // The controller manager rewrites the token secrets' ca.crt with the new CA by itself.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (ok, out) = cluster.kubectl(&[
            "-n",
            "kube-system",
            "get",
            "secrets",
            "--field-selector",
            "type=kubernetes.io/service-account-token",
            "-o",
            "jsonpath={.items[0].data.ca\\.crt}",
        ]);
        let ca = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, out.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default();
        if ok && ca.trim() == new_ca.trim() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "token secret ca.crt not updated: {out}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }

    // 7. cert list reads the new certificates from the hosts.
    let rows = cert_list_json(&cluster);
    assert!(
        rows.iter()
            .filter(|r| r["certificate"] == "kube-ca")
            .all(|r| r["source"] == "host"),
        "{rows:?}"
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r["certificate"] == "kube-ca")
            .count(),
        3
    );
    eprintln!("total: {:.1}s", started.elapsed().as_secs_f64());
}
