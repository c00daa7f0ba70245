//! `rkers up --dind` / `remove --dind` end to end: the two nodes of cluster.yml (`dind1`
//! with every role, `dind2` a worker) become privileged Docker-in-Docker containers
//! `rke-dind-dind1` and `rke-dind-dind2` on a sandbox host's dockerd, from the image
//! images/dind builds here from Debian's docker.io (`--dind-image`). rkers runs in that host's
//! network namespace with `DOCKER_HOST` naming its dockerd (see `tests/support/docker_host.rs`),
//! so no kubelet runs on the machine itself.
//!
//! 1. `up --dind` starts both containers as asked (`--dind-storage-driver`,
//!    `--dind-dns-server`) and the cluster inside them; with a bridge CNI config written into
//!    each node (the sandbox's part, as it does for its hosts) both nodes are Ready.
//! 2. A second `up --dind` plans no action and keeps every container.
//! 3. `rollback --dind` after `up --dind` added a kubelet flag gives each node's kubelet its
//!    old arguments back, and `up --dind` with the old cluster.yml is then a no-op.
//! 4. `remove --dind` leaves no container on the daemon and no kubeconfig or state.
//!
//! The sandbox instance is `RKERS_DIND_E2E` (its scripts/sandbox environment as `KEY=VALUE`
//! words, like `RKERS_LOCAL_E2E`); the image is `<sandbox registry>/$IMAGE_DIND` of
//! scripts/lib/common.sh (pushed by `scripts/build-images dind`) unless `RKERS_DIND_IMAGE`
//! names another. Skips, saying so, when the variable is unset or the test is not root.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::docker_host::Instance;

const DNS: &str = "192.0.2.53";

/// `IMAGE_DIND` of scripts/lib/common.sh.
fn image_name() -> String {
    let common = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/common.sh");
    std::fs::read_to_string(common)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("IMAGE_DIND="))
        .expect("IMAGE_DIND in scripts/lib/common.sh")
        .trim_matches('"')
        .to_string()
}

/// The sandbox's cluster.yml with its nodes replaced by the two dind nodes.
fn dind_cluster_yml(sandbox_yml: &str) -> String {
    let start = sandbox_yml
        .find("nodes:")
        .expect("nodes in the sandbox's cluster.yml");
    let end = sandbox_yml.find("cluster_name:").expect("cluster_name");
    format!(
        "{}nodes:\n  - address: dind1\n    user: root\n    role: [controlplane, etcd, worker]\n  \
         - address: dind2\n    user: root\n    role: [worker]\n{}",
        &sandbox_yml[..start],
        &sandbox_yml[end..]
    )
}

/// A bridge CNI config and the plugins (from scripts/build-images' cache) in a dind node:
/// what scripts/sandbox does for its own hosts.
fn pod_network(sb: &Instance, container: &str, subnet: &str) {
    let plugins = std::env::var("RKERS_CNI_BIN").unwrap_or("/var/cache/rkers/cni/bin".into());
    sb.docker(&[
        "exec",
        container,
        "mkdir",
        "-p",
        "/etc/cni/net.d",
        "/opt/cni/bin",
    ]);
    sb.docker(&[
        "cp",
        &format!("{plugins}/."),
        &format!("{container}:/opt/cni/bin/"),
    ]);
    let conf = format!(
        r#"{{"cniVersion":"0.4.0","name":"rkers-dind","plugins":[{{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,"hairpinMode":true,"ipam":{{"type":"host-local","ranges":[[{{"subnet":"{subnet}"}}]],"routes":[{{"dst":"0.0.0.0/0"}}]}}}},{{"type":"portmap","capabilities":{{"portMappings":true}},"snat":true}}]}}"#
    );
    sb.docker(&[
        "exec",
        container,
        "sh",
        "-c",
        &format!("printf '%s' '{conf}' > /etc/cni/net.d/10-rkers-dind.conflist"),
    ]);
}

#[test]
fn up_and_remove_docker_in_docker_nodes() {
    let Some(sb) = Instance::fresh("RKERS_DIND_E2E") else {
        return;
    };
    let sandbox_yml = sb.cluster_yml();
    let registry = sandbox_yml
        .lines()
        .find_map(|l| l.trim().strip_prefix("- url: "))
        .expect("the sandbox registry in its cluster.yml")
        .to_string();
    let image = std::env::var("RKERS_DIND_IMAGE")
        .unwrap_or_else(|_| format!("{registry}/{}", image_name()));
    // The first two octets of the instance's cluster_cidr: each node's pods get a /24 of it.
    let pods = sandbox_yml
        .lines()
        .find_map(|l| l.trim().strip_prefix("cluster_cidr: "))
        .and_then(|cidr| cidr.rsplitn(3, '.').nth(2))
        .expect("cluster_cidr in the sandbox's cluster.yml")
        .to_string();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("cluster.yml");
    std::fs::write(&config, dind_cluster_yml(&sandbox_yml)).unwrap();
    let config_arg = config.to_str().unwrap();
    let rkers = PathBuf::from(env!("CARGO_BIN_EXE_rkers"));
    let kubeconfig = work.path().join("kube_config_cluster.yml");
    let up_args = [
        "up",
        "--dind",
        "--dind-image",
        &image,
        "--dind-storage-driver",
        "overlay2",
        "--dind-dns-server",
        DNS,
        "--config",
        config_arg,
    ];

    // 1. up --dind.
    let started = Instant::now();
    let (ok, text) = sb.in_host(&rkers, &up_args);
    assert!(ok, "rkers up --dind failed:\n{text}");
    eprintln!("up --dind took {:.1}s", started.elapsed().as_secs_f64());
    for (i, node) in ["dind1", "dind2"].iter().enumerate() {
        let container = format!("rke-dind-{node}");
        let inspect = sb.docker(&[
            "inspect",
            "--format",
            "{{.HostConfig.Privileged}} {{json .HostConfig.Dns}} {{json .Config.Entrypoint}} {{.Config.Hostname}} {{.Config.Image}}",
            &container,
        ]);
        for want in [
            "true ",
            &format!("[\"{DNS}\"]"),
            "--storage-driver=overlay2",
            &format!(" {node} "),
            &image,
        ] {
            assert!(
                inspect.contains(want),
                "{container}: no {want:?} in {inspect}"
            );
        }
        let driver = sb.docker(&[
            "exec",
            &container,
            "docker",
            "info",
            "--format",
            "{{.Driver}}",
        ]);
        assert_eq!(driver.trim(), "overlay2", "{container}");
        let inner = sb.docker(&["exec", &container, "docker", "ps", "--format", "{{.Names}}"]);
        assert!(
            inner.lines().any(|n| n == "kubelet"),
            "{container} runs {inner}"
        );
        pod_network(&sb, &container, &format!("{pods}.{}.0/24", 201 + i));
    }
    let outer = sb.containers();
    assert_eq!(
        outer
            .iter()
            .map(|c| c.split(' ').next().unwrap())
            .collect::<Vec<_>>(),
        ["rke-dind-dind1", "rke-dind-dind2"],
        "the daemon runs exactly the node containers"
    );
    let ready = sb.wait_ready(&kubeconfig, &["dind1", "dind2"], Duration::from_secs(240));
    eprintln!(
        "nodes Ready {:.1}s after up began: {}",
        started.elapsed().as_secs_f64(),
        ready.trim().replace('\n', ", ")
    );

    // 2. A second up --dind is a no-op.
    let mut dry = up_args.to_vec();
    dry.insert(1, "--dry-run");
    let (ok, plan) = sb.in_host(&rkers, &dry);
    assert!(ok, "up --dind --dry-run failed:\n{plan}");
    assert!(plan.contains("0 actions on 2 hosts"), "{plan}");
    let inner_before = sb.docker(&["exec", "rke-dind-dind1", "docker", "ps", "-q"]);
    let (ok, text) = sb.in_host(&rkers, &up_args);
    assert!(ok, "second rkers up --dind failed:\n{text}");
    assert_eq!(sb.containers(), outer, "the node containers were replaced");
    assert_eq!(
        sb.docker(&["exec", "rke-dind-dind1", "docker", "ps", "-q"]),
        inner_before,
        "a no-op up must keep every container of the node"
    );

    // 3. rollback --dind (with up's options, which start no node that runs already).
    let mode = &up_args[1..up_args.len() - 2];
    sb.rollback_of_a_kubelet_flag(&rkers, &config, mode, 2, &|| {
        ["rke-dind-dind1", "rke-dind-dind2"]
            .map(|c| {
                sb.docker(&[
                    "exec",
                    c,
                    "docker",
                    "inspect",
                    "-f",
                    "{{json .Args}}",
                    "kubelet",
                ])
            })
            .to_vec()
    });

    // 4. remove --dind.
    let started = Instant::now();
    let (ok, text) = sb.in_host(
        &rkers,
        &["remove", "--dind", "--force", "--config", config_arg],
    );
    assert!(ok, "rkers remove --dind failed:\n{text}");
    eprintln!("remove --dind took {:.1}s", started.elapsed().as_secs_f64());
    let left = sb.containers();
    assert!(left.is_empty(), "containers left on the daemon: {left:?}");
    assert!(!kubeconfig.exists() && !work.path().join("cluster.rkestate").exists());

    sb.sandbox(&["down"]);
}
