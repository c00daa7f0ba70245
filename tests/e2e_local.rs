//! `rkers up --local` / `remove --local` end to end, on a sandbox host standing in for "the
//! local machine": rkers runs in that host's network namespace (so `127.0.0.1`, RKE1's local
//! node, is the host) with `DOCKER_HOST` naming the host's dockerd through its launcher's
//! `/proc/PID/root`; no SSH is used, and no kubelet runs on the machine itself.
//!
//! 1. `up --local` gives a Ready node `localhost` (kubectl through the written kubeconfig).
//! 2. A second `up --local` plans no action and keeps every container.
//! 3. `rollback --local` after `up --local` added a kubelet flag gives kubelet its old
//!    arguments back, and `up --local` with the old cluster.yml is then a no-op.
//! 4. `remove --local` leaves no container on that daemon (the helper included).
//!
//! The sandbox instance is given as `RKERS_LOCAL_E2E`, the environment scripts/sandbox reads
//! for it as `KEY=VALUE` words (as `tests/e2e_api.rs` takes `RKERS_API_E2E_A`):
//!
//! ```text
//! RKERS_LOCAL_E2E="SANDBOX_INSTANCE=a RKERS_SANDBOX_DIR=/var/lib/rkers-sandbox-a SANDBOX_BRIDGE=rkbra \
//!   SANDBOX_SUBNET_PREFIX=10.77.20 SANDBOX_POD_PREFIX=10.80 SANDBOX_REGISTRY_LOCAL=127.0.0.1:5020 \
//!   SANDBOX_REGISTRY_STORAGE=/var/lib/rkers-sandbox/registry/storage"
//! ```
//!
//! The instance is started fresh (one host) and taken down when the test passes. Skips,
//! saying so, when the variable is unset or the test is not root.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::docker_host::Instance;

#[test]
fn up_and_remove_on_the_local_docker_daemon() {
    let Some(sb) = Instance::fresh("RKERS_LOCAL_E2E") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("cluster.yml");
    std::fs::write(&config, sb.cluster_yml()).unwrap();
    let config_arg = config.to_str().unwrap();
    let rkers = PathBuf::from(env!("CARGO_BIN_EXE_rkers"));
    let kubeconfig = work.path().join("kube_config_cluster.yml");

    // 1. up --local: one node, `localhost`, Ready.
    let started = Instant::now();
    let (ok, text) = sb.in_host(&rkers, &["up", "--local", "--config", config_arg]);
    assert!(ok, "rkers up --local failed:\n{text}");
    eprintln!("up --local took {:.1}s", started.elapsed().as_secs_f64());
    let kubeconfig_text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        kubeconfig_text.contains("https://127.0.0.1:6443"),
        "{kubeconfig_text}"
    );
    let ready = sb.wait_ready(&kubeconfig, &["localhost"], Duration::from_secs(180));
    eprintln!(
        "node Ready {:.1}s after up began: {}",
        started.elapsed().as_secs_f64(),
        ready.trim()
    );
    let before = sb.containers();
    for name in ["etcd", "kube-apiserver", "kubelet", "kube-proxy"] {
        assert!(
            before.iter().any(|c| c.starts_with(&format!("{name} "))),
            "{name} is not on the daemon: {before:?}"
        );
    }
    assert!(
        !before.iter().any(|c| c.starts_with("rkers-local-shell")),
        "the helper outlived the run: {before:?}"
    );

    // The link itself: commands run in the host's namespaces (its hostname), with stdin and
    // exit codes, and what each costs.
    let alpine = std::fs::read_to_string(&config)
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("alpine: ").map(str::to_string))
        .expect("the sandbox's cluster.yml names the alpine image");
    let docker_host = sb.docker_host();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        use rkers::hosts::HostLink;
        use rkers::hosts::local::{DockerEndpoint, LocalLink};
        let endpoint = std::sync::Arc::new(DockerEndpoint::parse(Some(&docker_host)).unwrap());
        let link = LocalLink::open(
            "host1",
            endpoint.clone(),
            &alpine,
            &[],
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let out = link.exec("hostname").await.unwrap();
        assert_eq!(out.stdout_str().trim(), "host1", "{out:?}");
        let out = link.exec("echo err >&2; exit 3").await.unwrap();
        assert_eq!(
            (out.exit_status, out.stderr.as_slice()),
            (Some(3), &b"err\n"[..])
        );
        let out = link.exec_with_input("cat", "cat", b"a\0b").await.unwrap();
        assert_eq!(out.stdout, b"a\0b");
        let timed = Instant::now();
        for _ in 0..10 {
            assert!(link.exec("true").await.unwrap().success());
        }
        eprintln!(
            "one host command through the helper: {:.0} ms",
            timed.elapsed().as_secs_f64() * 100.0
        );
        link.close().await;
        // A link dropped without closing (a failed run) takes its helper with it.
        let dropped = LocalLink::open("host1", endpoint, &alpine, &[], Duration::from_secs(60))
            .await
            .unwrap();
        assert!(
            sb.containers()
                .iter()
                .any(|c| c.starts_with("rkers-local-shell ")),
            "no helper while a link is open"
        );
        drop(dropped);
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while sb
        .containers()
        .iter()
        .any(|c| c.starts_with("rkers-local-shell "))
    {
        assert!(Instant::now() < deadline, "a dropped link's helper stays");
        std::thread::sleep(Duration::from_millis(500));
    }

    // 2. A second up --local is a no-op.
    let (ok, plan) = sb.in_host(
        &rkers,
        &["up", "--local", "--dry-run", "--config", config_arg],
    );
    assert!(ok, "up --local --dry-run failed:\n{plan}");
    assert!(plan.contains("0 actions on 1 host"), "{plan}");
    let started = Instant::now();
    let (ok, text) = sb.in_host(&rkers, &["up", "--local", "--config", config_arg]);
    assert!(ok, "second rkers up --local failed:\n{text}");
    eprintln!(
        "second up --local took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        sb.containers(),
        before,
        "a no-op up must keep every container"
    );

    // 3. rollback --local.
    sb.rollback_of_a_kubelet_flag(&rkers, &config, &["--local"], 1, &|| {
        vec![sb.docker(&["inspect", "-f", "{{json .Args}}", "kubelet"])]
    });

    // 4. remove --local leaves nothing of rkers on the daemon.
    let started = Instant::now();
    let (ok, text) = sb.in_host(
        &rkers,
        &["remove", "--local", "--force", "--config", config_arg],
    );
    assert!(ok, "rkers remove --local failed:\n{text}");
    eprintln!(
        "remove --local took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let left = sb.containers();
    assert!(left.is_empty(), "containers left on the daemon: {left:?}");
    assert!(!work.path().join("cluster.rkestate").exists());

    sb.sandbox(&["down"]);
}
