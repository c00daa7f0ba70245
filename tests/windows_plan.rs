//! The Windows worker plan: golden specs of every container, file and the wins config, flags per
//! Kubernetes version (compiled-in KDM metadata), the validation of cluster shapes Windows
//! workers need, and a Linux/Windows mixed cluster in which the Linux hosts' plans are exactly
//! those of the same cluster without the Windows host.

mod wins;

use rkers::plan::{
    self, CONTAINER_USER, ClusterPlan, HostPlan, KUBE_PROXY, KUBELET, NGINX_PROXY, PlanError,
    SERVICE_SIDEKICK, WINS_PIPE_BIND, WinsProcess,
};
use serde_json::{Value, json};
use wins::support::*;

fn host<'p>(plan: &'p ClusterPlan, address: &str) -> &'p HostPlan {
    plan.hosts
        .iter()
        .find(|h| h.address == address)
        .unwrap_or_else(|| panic!("no host {address}"))
}

fn process<'p>(plan: &'p ClusterPlan, container: &str) -> &'p WinsProcess {
    plan.windows[WINDOWS_HOST]
        .processes
        .iter()
        .find(|p| p.container == container)
        .unwrap_or_else(|| panic!("no wins process for {container}"))
}

fn snapshot(name: &str, value: &Value) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_yaml_snapshot!(name, value));
}

/// The containers with their `-EncodedCommand` script decoded, for a reviewable snapshot.
fn readable_containers(host: &HostPlan) -> Value {
    let mut out = serde_json::Map::new();
    for (name, spec) in &host.containers {
        let mut value = serde_json::to_value(spec).unwrap();
        let encoded = spec.entrypoint.last().unwrap();
        value["entrypoint"] = json!(
            spec.entrypoint[..spec.entrypoint.len() - 1]
                .iter()
                .cloned()
                .chain(["<script>".to_string()])
                .collect::<Vec<_>>()
        );
        value["script"] = json!(decode_powershell(encoded).lines().collect::<Vec<_>>());
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

#[test]
fn windows_worker_golden_v120() {
    let (_, plan) = mixed_plan();
    let win = host(&plan, WINDOWS_HOST);
    assert_eq!(win.prefix_path, "c:/");
    assert_eq!(
        win.containers.keys().collect::<Vec<_>>(),
        [SERVICE_SIDEKICK, NGINX_PROXY, KUBELET, KUBE_PROXY]
    );
    snapshot("windows_containers_v120", &readable_containers(win));
    let files: Vec<Value> = win
        .files
        .iter()
        .map(|f| {
            let mut v = serde_json::to_value(f).unwrap();
            v["contents"] = json!(f.contents.lines().collect::<Vec<_>>());
            v
        })
        .collect();
    snapshot("windows_files_v120", &json!(files));
    snapshot(
        "windows_setup_v120",
        &serde_json::to_value(&plan.windows[WINDOWS_HOST]).unwrap(),
    );

    for (name, spec) in &win.containers {
        assert_eq!(spec.user.as_deref(), Some(CONTAINER_USER), "{name}");
        assert!(!spec.privileged, "{name} must not be privileged");
        assert_eq!(
            spec.network_mode, None,
            "{name}: Windows has no host network"
        );
        assert_eq!(spec.pid_mode, None, "{name}");
        assert_eq!(spec.health_check, None, "{name}");
        assert_eq!(spec.restart_policy.as_deref(), Some("always"), "{name}");
        assert!(spec.start, "{name} is started on Windows");
        assert!(
            spec.binds.iter().any(|b| b == WINS_PIPE_BIND),
            "{name} mounts the wins pipe"
        );
        assert_eq!(spec.labels["io.rancher.rke.container.name"], *name);
        assert_eq!(spec.entrypoint[0], "pwsh");
        assert_eq!(
            spec.entrypoint[spec.entrypoint.len() - 2],
            "-EncodedCommand"
        );
    }

    // Each container's script is the launcher of its process; the binary copy comes first.
    for p in &plan.windows[WINDOWS_HOST].processes {
        let script = decode_powershell(win.containers[&p.container].entrypoint.last().unwrap());
        assert!(script.contains(&p.launcher_script()[p.launcher_script().find("if (").unwrap()..]));
        let copy = script
            .find(&format!("-Destination '{}'", p.host_view_path))
            .unwrap();
        let run = script.find("cli prc run").unwrap();
        assert!(
            copy < run,
            "{}: the binary copy must precede the wins start",
            p.container
        );
        // The image's copy sits at the wins path, and the host copy is staged through a bind of
        // this very container onto that same host path.
        assert_eq!(p.image_path, p.path);
        let host_path = via_binds(&win.containers[&p.container].binds, &p.host_view_path)
            .unwrap_or_else(|| panic!("{}: {} is not under a bind", p.container, p.host_view_path));
        assert_eq!(
            host_path.to_lowercase(),
            p.path.replace('\\', "/").to_lowercase()
        );
    }
    let sidekick = decode_powershell(win.containers[SERVICE_SIDEKICK].entrypoint.last().unwrap());
    for cni in [
        "flannel.exe",
        "host-local.exe",
        "win-overlay.exe",
        "win-bridge.exe",
    ] {
        assert!(
            sidekick.contains(&format!(r"'c:\host\opt\cni\bin\{cni}'")),
            "{cni}"
        );
    }

    let kubelet = &process(&plan, KUBELET).args;
    for flag in [
        "--max-pods=60",
        "--cgroups-per-qos=false",
        "--enforce-node-allocatable=",
        "--resolv-conf=",
        "--cert-dir=c:/var/lib/kubelet/pki",
        "--cni-bin-dir=c:/opt/cni/bin",
        "--feature-gates=HyperVContainer=true,WindowsGMSA=true",
        "--image-pull-progress-deadline=30m",
        "--node-ip=10.77.1.21",
        "--pod-infra-container-image=rancher/mirrored-pause:3.6",
        "--kubeconfig=c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml",
        "--client-ca-file=c:/etc/kubernetes/ssl/kube-ca.pem",
        "--root-dir=c:/var/lib/kubelet",
        "--hostname-override=win1",
    ] {
        assert!(
            kubelet.iter().any(|a| a == flag),
            "kubelet lacks {flag}: {kubelet:?}"
        );
    }
    let proxy = &process(&plan, KUBE_PROXY).args;
    for flag in [
        "--proxy-mode=kernelspace",
        "--enable-dsr=false",
        "--feature-gates=WinOverlay=true",
        "--network-name=vxlan0",
        "--kubeconfig=c:/etc/kubernetes/ssl/kubecfg-kube-proxy.yaml",
    ] {
        assert!(
            proxy.iter().any(|a| a == flag),
            "kube-proxy lacks {flag}: {proxy:?}"
        );
    }

    let setup = &plan.windows[WINDOWS_HOST];
    assert_eq!(
        setup.wins_config.white_list.process_paths,
        [
            r"c:\etc\kubernetes\bin\kube-proxy.exe",
            r"c:\etc\kubernetes\bin\kubelet.exe",
            r"c:\etc\nginx\nginx.exe",
            r"c:\etc\rancher\wins\powershell.exe",
            r"c:\opt\bin\flanneld.exe",
        ]
    );
    let file = |path: &str| {
        win.files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("no file {path}"))
    };
    assert_eq!(
        file("c:/etc/rancher/wins/config").contents,
        setup.wins_config.to_yaml()
    );
    assert!(
        file("c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml")
            .contents
            .contains("client-certificate: c:/etc/kubernetes/ssl/kube-node.pem")
    );
    assert!(
        file("c:/etc/nginx/conf/nginx.conf")
            .contents
            .contains("server 10.77.0.11:6443;")
    );
    let net_conf: Value =
        serde_json::from_str(&file("c:/etc/kube-flannel/net-conf.json").contents).unwrap();
    assert_eq!(net_conf["Backend"]["VNI"], 4096);
    assert_eq!(net_conf["Backend"]["Port"], 4789);
    for dir in [
        "c:/etc/kubernetes/ssl",
        "c:/etc/nginx/conf",
        "c:/run",
        "c:/etc/rancher/wins",
    ] {
        assert!(setup.directories.iter().any(|d| d == dir), "{dir}");
    }
}

/// Maps a container path through `host:container[:opts]` binds (Windows paths, either slash).
fn via_binds(binds: &[String], container_path: &str) -> Option<String> {
    let wanted = container_path.replace('\\', "/").to_lowercase();
    binds.iter().find_map(|bind| {
        // Split after the drive letters: `c:/etc/x:c:/host/etc/x[:ro]`.
        let parts: Vec<&str> = bind.split(':').collect();
        if parts.len() < 4 {
            return None;
        }
        let host = format!("{}:{}", parts[0], parts[1]);
        let container = format!("{}:{}", parts[2], parts[3]).to_lowercase();
        let rest = wanted.strip_prefix(&container)?;
        rest.starts_with('/')
            .then(|| format!("{}{rest}", host.trim_end_matches('/')))
    })
}

#[test]
fn flags_follow_the_windows_option_set_of_the_version() {
    let cfg = load(&fixture("cluster-mixed-v120.yml"));
    let facts = facts(&cfg, &[WINDOWS_HOST]);
    let v127 = rkers::metadata::Catalog::embedded()
        .windows_service_options("v1.27.16-rancher1-1", None)
        .unwrap();
    let options = plan::ServiceOptions {
        kubelet: v127.kubelet,
        kubeproxy: v127.kubeproxy,
        ..Default::default()
    };
    let plan = build(&cfg, &facts, Some(&options)).unwrap();
    let kubelet = &process(&plan, KUBELET).args;
    assert!(
        !kubelet.iter().any(|a| a.starts_with("--cni-bin-dir")),
        "{kubelet:?}"
    );
    assert!(
        !kubelet.iter().any(|a| a.starts_with("--feature-gates")),
        "{kubelet:?}"
    );
    assert!(kubelet.iter().any(|a| a == "--cgroups-per-qos=false"));
    let proxy = &process(&plan, KUBE_PROXY).args;
    assert!(
        !proxy.iter().any(|a| a.starts_with("--feature-gates")),
        "{proxy:?}"
    );
}

#[test]
fn mixed_cluster_linux_hosts_are_unaffected() {
    let (cfg, mixed) = mixed_plan();
    let mut linux_only_cfg = cfg.clone();
    linux_only_cfg.nodes.retain(|n| n.address != WINDOWS_HOST);
    let linux_only = build(&linux_only_cfg, &facts(&linux_only_cfg, &[]), None).unwrap();
    assert!(linux_only.windows.is_empty());
    for linux in &linux_only.hosts {
        assert_eq!(host(&mixed, &linux.address), linux, "{}", linux.address);
    }
    // The Windows worker joins the cluster-wide port checks like any worker.
    assert!(
        mixed
            .port_checks
            .iter()
            .any(|c| c.description == "control plane -> worker"
                && c.targets.contains(&"10.77.1.21".to_string()))
    );
    assert!(
        mixed
            .port_checks
            .iter()
            .any(|c| c.description == "worker -> control plane" && c.source == WINDOWS_HOST)
    );

    // Per host: platform, containers and images — what a dry run shows.
    let summary: Vec<Value> = mixed
        .hosts
        .iter()
        .map(|h| {
            json!({
                "address": h.address,
                "platform": if mixed.windows.contains_key(&h.address) { "windows" } else { "linux" },
                "containers": h.containers.values().map(|c| format!("{} ({})", c.name, c.image)).collect::<Vec<_>>(),
                "files": h.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    snapshot("windows_mixed_cluster_summary", &json!(summary));
}

#[test]
fn validation_refuses_unsupported_shapes_and_says_why() {
    let base = load(&fixture("cluster-mixed-v120.yml"));
    let f = facts(&base, &[WINDOWS_HOST]);
    assert_eq!(plan::validate_windows(&base, &f), Vec::<String>::new());
    assert!(plan::validate_windows(&base, &facts(&base, &[])).is_empty());

    let refused = |edit: &dyn Fn(&mut rkers::config::RkeConfig), needle: &str| {
        let mut cfg = base.clone();
        edit(&mut cfg);
        let errors = plan::validate_windows(&cfg, &facts(&cfg, &[WINDOWS_HOST]));
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "expected an error containing {needle:?}, got {errors:#?}"
        );
    };
    refused(
        &|c| c.nodes[2].role = vec!["controlplane".into(), "worker".into()],
        "host 10.77.0.21: role controlplane on a Windows host is refused",
    );
    refused(
        &|c| c.nodes[0].role = vec!["controlplane".into()],
        "needs at least one Linux host with the etcd role",
    );
    refused(
        &|c| c.network.plugin = "calico".into(),
        "support only flannel",
    );
    refused(
        &|c| {
            c.network
                .options
                .insert("flannel_backend_type".into(), "host-gw".into());
        },
        "only with vxlan",
    );
    refused(
        &|c| {
            c.network
                .options
                .insert("flannel_backend_vni".into(), "1".into());
        },
        "flannel_backend_vni \"1\": must be 4096 or more",
    );
    refused(
        &|c| {
            c.network
                .options
                .insert("flannel_backend_port".into(), "8472".into());
        },
        "flannel_backend_port \"8472\": must be 4789",
    );
    refused(
        &|c| c.kubernetes_version = "v1.27.16-rancher1-1".into(),
        "refused from v1.24 on",
    );
    refused(&|c| c.enable_cri_dockerd = Some(true), "enable_cri_dockerd");
    refused(
        &|c| c.win_prefix_path = "d:/rke".into(),
        "win_prefix_path \"d:/rke\"",
    );

    // RKE1's flannel defaults (VNI 1, port 8472) are refused once a Windows host exists.
    let defaults = load(
        &fixture("cluster-mixed-v120.yml")
            .replace("    flannel_backend_vni: \"4096\"\n", "")
            .replace("    flannel_backend_port: \"4789\"\n", ""),
    );
    let errors = plan::validate_windows(&defaults, &facts(&defaults, &[WINDOWS_HOST]));
    assert_eq!(errors.len(), 2, "{errors:#?}");
}

#[test]
fn arguments_wins_would_split_are_refused() {
    let mut cfg = load(&fixture("cluster-mixed-v120.yml"));
    cfg.services
        .kubelet
        .win_extra_args
        .insert("node-labels".into(), "team=a b".into());
    let win = windows_options(&cfg);
    let err = build(&cfg, &facts(&cfg, &[WINDOWS_HOST]), Some(&win)).unwrap_err();
    match err {
        PlanError::Host { host, cause } => {
            assert_eq!(host, WINDOWS_HOST);
            assert!(
                cause.contains("kubelet") && cause.contains("--node-labels=team=a b"),
                "{cause}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_windows_host_without_windows_options_or_as_controlplane_is_an_error() {
    let cfg = load(&fixture("cluster-mixed-v120.yml"));
    let err = build(&cfg, &facts(&cfg, &[WINDOWS_HOST]), None).unwrap_err();
    assert!(
        err.to_string().contains("no Windows service options"),
        "{err}"
    );

    let mut cp = cfg.clone();
    cp.nodes[2].role = vec!["controlplane".into()];
    let win = windows_options(&cp);
    let err = build(&cp, &facts(&cp, &[WINDOWS_HOST]), Some(&win)).unwrap_err();
    assert!(err.to_string().contains("can only be workers"), "{err}");
}

/// The host agent `up` runs over SSH on every Windows worker, as a reviewable snapshot: a change
/// to what runs on customers' hosts shows in review.
#[test]
fn host_agent_script_golden() {
    let script = rkers::plan::host_agent_script();
    snapshot(
        "windows_host_agent",
        &Value::Array(
            script
                .lines()
                .map(|l| Value::String(l.to_string()))
                .collect(),
        ),
    );
}
