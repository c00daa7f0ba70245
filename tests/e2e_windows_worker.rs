//! A Windows worker joins the sandbox cluster through `rkers up`, stays put on a second `up`,
//! has only its kubelet recreated for a Windows-only kubelet flag, and is torn down through wins
//! when it leaves cluster.yml; no Linux container changes on the way.
//!
//! Everything Linux is real (the sandbox hosts' sshd, dockerd and Kubernetes v1.20). The Windows
//! host is what cannot run here, so it is the repository's test doubles behind a real local
//! sshd: the Windows shell (tests/windows_host/fake_windows_shell.py, which carries out the host
//! agent's protocol on a directory standing in for C:) and the Windows Docker Engine API
//! (tests/windows_docker). The test plays the Windows kubelet's one visible act: once rkers has
//! started the kubelet container, it registers the node with the API server, authenticating with
//! the certificate and key rkers wrote onto the Windows host, through the kubeconfig rkers wrote
//! there.
//!
//! Windows workers need flannel, and no flannel image can be built here: every `up` of the
//! mixed cluster ends at the network plugin's rollout, after all host work is done, and the test
//! checks that this is the only failure.

mod support;
mod windows_docker;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use rkers::phases::windows::{REMOVE_CONTAINER, SWEEP_CONTAINER};
use rkers::plan::{self, IMAGE_WINS_PATHS};
use support::e2e::{E2e, HOSTS};
use windows_docker::{StepOutcome, WindowsHostDouble};

const WINDOWS_NODE: &str = "win1";
const WINDOWS_CONTAINERS: [&str; 4] = [
    plan::SERVICE_SIDEKICK,
    plan::NGINX_PROXY,
    plan::KUBELET,
    plan::KUBE_PROXY,
];

/// The Windows worker: its shell and Docker doubles behind a real sshd.
struct WindowsHost(WindowsHostDouble);

impl std::ops::Deref for WindowsHost {
    type Target = WindowsHostDouble;
    fn deref(&self) -> &WindowsHostDouble {
        &self.0
    }
}

impl WindowsHost {
    async fn start(sidekick_image: &str) -> WindowsHost {
        let host = WindowsHostDouble::start().await;
        host.docker.add_image_file(
            sidekick_image,
            IMAGE_WINS_PATHS[0],
            b"MZ wins.exe of the test",
        );
        // What the host's PowerShell prints for the sweep and the teardown, run through wins.
        host.docker.on_step(
            SWEEP_CONTAINER,
            StepOutcome::Runs {
                output: "{\"stopped\":[]}".into(),
            },
        );
        host.docker.on_step(
            REMOVE_CONTAINER,
            StepOutcome::Runs {
                output: String::new(),
            },
        );
        WindowsHost(host)
    }

    /// The node entry of cluster.yml.
    fn node_entry(&self) -> String {
        format!(
            "  - address: 127.0.0.1\n    hostname_override: {WINDOWS_NODE}\n    user: root\n    \
             port: \"{}\"\n    role: [worker]\n    ssh_key_path: {}\n    docker_socket: {}\n",
            self.sshd.port,
            self.key.display(),
            self.docker.socket_str()
        )
    }
}

/// cluster.yml with the Windows worker added and flannel (vxlan, as Windows needs) as the
/// network plugin.
fn with_windows_worker(text: &str, windows: &WindowsHost) -> String {
    let network = "network:\n  # No CNI images exist here: the sandbox writes a bridge CNI config and routes itself.\n  plugin: none\n";
    assert!(
        text.contains(network),
        "sandbox cluster.yml changed:\n{text}"
    );
    text.replacen("nodes:\n", &format!("nodes:\n{}", windows.node_entry()), 1)
        .replace(
            network,
            "network:\n  plugin: flannel\n  options:\n    flannel_backend_type: vxlan\n    \
             flannel_backend_vni: \"4096\"\n    flannel_backend_port: \"4789\"\n\
             addon_job_timeout: 15\n",
        )
}

fn scalar<'a>(yml: &'a str, key: &str) -> &'a str {
    yml.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("{key} not in cluster.yml"))
        .trim()
}

/// rkers with this cluster's config and a known_hosts of its own: the sandbox's host keys plus
/// what accept-new records for the Windows double (whose port changes every run, so it must not
/// go into the sandbox's file).
fn rkers(e2e: &E2e, known_hosts: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rkers"));
    cmd.args(args)
        .arg("--config")
        .arg(&e2e.config)
        .arg("--known-hosts")
        .arg(known_hosts);
    cmd
}

/// `rkers up --dry-run`'s output (printed, for a failing run's log), which must succeed.
fn dry_run(e2e: &E2e, known_hosts: &Path, title: &str) -> String {
    let out = rkers(e2e, known_hosts, &["up", "--dry-run"])
        .output()
        .unwrap();
    let plan_text = text(&out);
    eprintln!("--- up --dry-run {title} ---\n{plan_text}");
    assert!(out.status.success(), "{plan_text}");
    plan_text
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `rkers up` while playing the Windows kubelet: once the kubelet container runs on the
/// double, the node is registered with the credentials rkers put on the Windows host (when
/// `register`: a kubelet that already registered its node does not again). Returns rkers'
/// output and whether the node was registered by this call.
async fn up_with_windows_kubelet(
    e2e: &E2e,
    known_hosts: &Path,
    windows: &WindowsHost,
    register: bool,
) -> (Output, bool) {
    let mut child = rkers(e2e, known_hosts, &["up"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut registered = false;
    let out = loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break child.wait_with_output().unwrap();
        }
        if register
            && !registered
            && windows
                .docker
                .container(plan::KUBELET)
                .is_some_and(|c| c.running)
        {
            register_windows_node(e2e, windows).await;
            registered = true;
        }
        assert!(Instant::now() < deadline, "rkers up did not finish");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    (out, registered)
}

/// What the Windows kubelet does first: registers its node, with the kubeconfig and the
/// certificates rkers wrote on the host (their `c:/` paths resolved on the double's drive). The
/// server is the first control plane host's: on Windows the kubeconfig points at nginx-proxy on
/// 127.0.0.1, which is a process of the host and not there.
async fn register_windows_node(e2e: &E2e, windows: &WindowsHost) {
    let kubelet = windows.docker.container(plan::KUBELET).unwrap();
    let wins_line = kubelet
        .wins_command
        .expect("the kubelet launcher runs wins cli prc run");
    assert!(
        wins_line.contains(&format!("--hostname-override={WINDOWS_NODE}")),
        "{wins_line}"
    );
    let kubeconfig_path = windows.on_drive("c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml");
    let kubeconfig: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(&kubeconfig_path).unwrap()).unwrap();
    let file = |v: &serde_norway::Value| -> String {
        let path = v.as_str().expect("a file path");
        assert!(path.starts_with("c:/"), "a Windows path: {path}");
        base64::engine::general_purpose::STANDARD
            .encode(std::fs::read(windows.on_drive(path)).unwrap())
    };
    let cluster = &kubeconfig["clusters"][0]["cluster"];
    let user = &kubeconfig["users"][0]["user"];
    assert_eq!(cluster["server"].as_str(), Some("https://127.0.0.1:6443"));
    let admin: serde_norway::Value = serde_norway::from_str(&e2e.kubeconfig()).unwrap();
    let server = admin["clusters"][0]["cluster"]["server"].as_str().unwrap();
    let node_kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    \
         certificate-authority-data: {}\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    \
         client-key-data: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
         current-context: x\n",
        file(&cluster["certificate-authority"]),
        file(&user["client-certificate"]),
        file(&user["client-key"]),
    );
    let api = rkers::kubeapi::KubeApi::from_kubeconfig(&node_kubeconfig)
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(api.client.clone());
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": WINDOWS_NODE,
            "labels": {
                "kubernetes.io/os": "windows",
                "beta.kubernetes.io/os": "windows",
                "kubernetes.io/hostname": WINDOWS_NODE,
            }
        }
    }))
    .unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("the Windows worker's kube-node credentials register its node");
}

/// The orphan sweep's action, as the dry run lists it and the run reports it applied.
const SWEEP_ACTION: &str =
    "through wins: stop the rancher-wins-* processes that outlived their wins server";

/// How many orphan sweeps the run reports applied, successfully (text output: one `OK` line per
/// applied action).
fn sweeps_applied(out: &Output) -> usize {
    text(out)
        .lines()
        .filter(|l| l.contains("OK    [") && l.contains(&format!("] {SWEEP_ACTION} (")))
        .count()
}

/// The one failure an `up` of the mixed cluster may have: flannel's pods, whose image does not
/// exist here.
fn assert_only_the_network_plugin_failed(out: &Output) {
    let text = text(out);
    assert!(!out.status.success(), "flannel cannot run here:\n{text}");
    assert!(
        text.contains("error: addon rke-network-plugin: workloads not ready"),
        "{text}"
    );
    // The host phases before the addons finished (wins runs only when there is wins work,
    // nodes only when a node's labels or taints differ from the plan), and the addons phase is
    // the one that failed.
    assert!(
        text.contains("OK    [worker plane] ("),
        "worker plane:\n{text}"
    );
    for phase in ["wins", "nodes"] {
        assert!(
            !text.contains(&format!("START [{phase}]"))
                || text.contains(&format!("OK    [{phase}] (")),
            "{phase}:\n{text}"
        );
    }
    let failed: Vec<&str> = text.lines().filter(|l| l.contains(" FAIL ")).collect();
    assert!(
        !failed.is_empty() && failed.iter().all(|l| l.contains("FAIL  [addons]")),
        "{failed:?}\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_windows_worker_joins_stays_and_leaves() {
    let Some(e2e) = E2e::new() else { return };
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen", "/usr/bin/python3"])
    {
        return support::skip(&r);
    }
    let api = e2e.standard().await;
    let standard_yml = std::fs::read_to_string(&e2e.config).unwrap();
    let sidekick = scalar(&standard_yml, "kubernetes_services_sidecar").to_string();
    let windows = WindowsHost::start(&sidekick).await;
    let known_hosts = windows.dir.path().join("known_hosts");
    std::fs::copy(&e2e.known_hosts, &known_hosts).unwrap();
    let linux_before = e2e.env.container_ids(&HOSTS);

    // 1. The plan: the Windows worker's host steps and containers; no Linux container changes.
    e2e.edit(|t| with_windows_worker(t, &windows));
    let plan_text = dry_run(&e2e, &known_hosts, "with the Windows worker added");
    for step in [
        "create directories c:/etc/kubernetes/bin",
        "upload c:/etc/rancher/wins/config (new)",
        "install wins at c:/etc/rancher/wins/wins.exe",
        "register and start the rancher-wins service",
        SWEEP_ACTION,
        "create and start container kubelet",
    ] {
        assert!(plan_text.contains(step), "{step} missing:\n{plan_text}");
    }
    // The orphan sweep is planned after wins starts and before wins starts any container.
    let at = |text: &str| plan_text.find(text).unwrap();
    assert!(
        at("register and start the rancher-wins service") < at(SWEEP_ACTION)
            && at(SWEEP_ACTION) < at("create and start container"),
        "{plan_text}"
    );
    for host in HOSTS {
        let ip = e2e.env.ip(host[4..].parse().unwrap());
        let section: Vec<&str> = plan_text
            .lines()
            .skip_while(|l| *l != format!("{ip}:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert!(
            !section.iter().any(|l| l.contains("container")),
            "{host} would change for a Windows worker:\n{}",
            section.join("\n")
        );
    }

    // 2. `up`: the Windows worker is brought up; the Linux hosts keep every container.
    let started = Instant::now();
    let (out, registered) = up_with_windows_kubelet(&e2e, &known_hosts, &windows, true).await;
    eprintln!(
        "rkers up with the Windows worker took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    eprintln!("--- up with the Windows worker ---\n{}", text(&out));
    assert!(
        registered,
        "the kubelet container never ran:\n{}",
        text(&out)
    );
    assert_only_the_network_plugin_failed(&out);
    assert_eq!(e2e.env.container_ids(&HOSTS), linux_before);
    assert_eq!(
        sweeps_applied(&out),
        1,
        "the planned sweep applied once:\n{}",
        text(&out)
    );

    // Files: the cluster's CA and the node's kubeconfig, byte for byte what the state holds.
    let state = e2e.state();
    let certs = &state["currentState"]["certificatesBundle"];
    assert_eq!(
        std::fs::read_to_string(windows.on_drive("c:/etc/kubernetes/ssl/kube-ca.pem")).unwrap(),
        certs["kube-ca"]["certificatePEM"].as_str().unwrap()
    );
    assert!(
        state["currentState"]["rkeConfig"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["hostnameOverride"] == WINDOWS_NODE),
        "the Windows worker is in the state"
    );
    let wins_config =
        std::fs::read_to_string(windows.on_drive("c:/etc/rancher/wins/config")).unwrap();
    assert!(wins_config.contains("white_list"), "{wins_config}");
    assert!(
        wins_config.contains(r"- c:\etc\kubernetes\bin\kubelet.exe"),
        "{wins_config}"
    );
    assert!(
        windows
            .on_drive("c:/etc/cni/net.d/10-flannel.conflist")
            .is_file()
    );
    // Private keys only for SYSTEM and Administrators (the double's 0600), certificates as
    // Windows leaves files under c:\ (0644).
    let mode = |path: &str| support::file_mode(&windows.on_drive(path));
    assert_eq!(mode("c:/etc/kubernetes/ssl/kube-node-key.pem"), 0o600);
    assert_eq!(mode("c:/etc/kubernetes/ssl/kube-proxy-key.pem"), 0o600);
    assert_eq!(mode("c:/etc/kubernetes/ssl/kube-node.pem"), 0o644);
    // wins: copied out of the sidekick image, registered once, running.
    assert_eq!(
        std::fs::read(windows.on_drive("c:/etc/rancher/wins/wins.exe")).unwrap(),
        b"MZ wins.exe of the test"
    );
    let service = windows.service();
    assert_eq!(service["registered"], true, "{service}");
    assert_eq!(service["status"], "running", "{service}");
    assert_eq!(service["registrations"], 1, "{service}");

    // Containers: the sweep ran before the first wins-managed container was created, and each
    // of them runs with the wins pipe, as ContainerAdministrator, never privileged.
    let calls = windows.docker.container_calls();
    let position = |call: &str| calls.iter().position(|c| c == call);
    let swept = position(&format!("POST /containers/{SWEEP_CONTAINER}/start"))
        .unwrap_or_else(|| panic!("no orphan sweep: {calls:?}"));
    for name in WINDOWS_CONTAINERS {
        let c = windows
            .docker
            .container(name)
            .unwrap_or_else(|| panic!("{name} missing: {calls:?}"));
        assert!(c.running, "{name} not running");
        let started = position(&format!("POST /containers/{name}/start")).unwrap();
        assert!(
            swept < started,
            "{name} started before the sweep: {calls:?}"
        );
        let hc = &c.create_body["HostConfig"];
        let binds: Vec<&str> = hc["Binds"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b.as_str())
            .collect();
        assert!(
            binds.iter().any(|b| b.starts_with("//./pipe/rancher_wins:")
                || b.starts_with(r"\\.\pipe\rancher_wins:")),
            "{name}: {binds:?}"
        );
        assert_eq!(c.create_body["User"], "ContainerAdministrator", "{name}");
        assert_ne!(hc["Privileged"], true, "{name}");
        let line = c
            .wins_command
            .unwrap_or_else(|| panic!("{name} has no wins launcher"));
        assert!(line.contains(" cli prc run --path "), "{name}: {line}");
    }

    // The node: registered by the Windows kubelet's credentials, labelled by rkers.
    let nodes: Api<Node> = Api::all(api.client.clone());
    let node = nodes.get(WINDOWS_NODE).await.unwrap();
    let labels = node.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("node-role.kubernetes.io/worker")
            .map(String::as_str),
        Some("true"),
        "{labels:?}"
    );

    // 3. A second `up` changes nothing on the Windows worker: it is only observed (no sweep
    //    either, since wins starts nothing).
    let agent_runs = windows.agent_runs().len();
    let docker_calls = windows.docker.calls().len();
    let (out, _) = up_with_windows_kubelet(&e2e, &known_hosts, &windows, false).await;
    assert_only_the_network_plugin_failed(&out);
    assert_eq!(sweeps_applied(&out), 0, "{}", text(&out));
    let changes = windows.docker.writes_since(docker_calls);
    assert!(
        changes.is_empty(),
        "second up changed the Windows worker: {changes:?}"
    );
    for run in &windows.agent_runs()[agent_runs..] {
        assert_eq!(run["mode"], "observe", "{run}");
    }
    assert_eq!(windows.service()["registrations"], 1);
    assert_eq!(windows.service()["starts"], 1);
    assert_eq!(e2e.env.container_ids(&HOSTS), linux_before);

    // 4. A Windows-only kubelet flag: the Windows kubelet alone is recreated (after a sweep),
    //    wins keeps running, and no Linux container changes.
    let kubeproxy_block = "  kubeproxy:\n";
    e2e.edit(|t| {
        assert!(t.contains(kubeproxy_block), "{t}");
        t.replacen(
            kubeproxy_block,
            &format!("    win_extra_args:\n      v: \"3\"\n{kubeproxy_block}"),
            1,
        )
    });
    let plan_text = dry_run(&e2e, &known_hosts, "with a Windows-only kubelet flag");
    let windows_section: Vec<&str> = plan_text
        .lines()
        .skip_while(|l| *l != "127.0.0.1:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.starts_with("  - "))
        .collect();
    assert_eq!(
        windows_section,
        [
            format!("  - {SWEEP_ACTION} ({sidekick})").as_str(),
            "  - recreate container kubelet"
        ],
        "{plan_text}"
    );
    let docker_calls = windows.docker.calls().len();
    let (out, _) = up_with_windows_kubelet(&e2e, &known_hosts, &windows, false).await;
    assert_only_the_network_plugin_failed(&out);
    assert_eq!(sweeps_applied(&out), 1, "{}", text(&out));
    // RKE1's rolling replace (§22.1), the sweep's one-shot left out.
    let changes: Vec<String> = windows
        .docker
        .writes_since(docker_calls)
        .iter()
        .filter(|c| !c.path.contains(SWEEP_CONTAINER) && !c.query.contains(SWEEP_CONTAINER))
        .map(|c| {
            // Create and rename name their container in the query.
            let name = c.query.split('&').find(|kv| kv.starts_with("name="));
            format!("{} {}", c.short(), name.unwrap_or_default())
        })
        .collect();
    assert_eq!(
        changes,
        [
            "DELETE /containers/old-kubelet ",
            "POST /containers/kubelet/stop ",
            "POST /containers/kubelet/rename name=old-kubelet",
            "POST /containers/create name=kubelet",
            "POST /containers/kubelet/start ",
            "DELETE /containers/old-kubelet ",
        ],
        "{}",
        text(&out)
    );
    let calls = windows.docker.calls()[docker_calls..].to_vec();
    let swept = calls
        .iter()
        .position(|c| c.short() == format!("POST /containers/{SWEEP_CONTAINER}/start"))
        .expect("a sweep before wins starts the new kubelet");
    let started = calls
        .iter()
        .position(|c| c.short() == "POST /containers/kubelet/start")
        .unwrap();
    assert!(swept < started);
    let kubelet = windows.docker.container(plan::KUBELET).unwrap();
    assert!(kubelet.running);
    assert!(
        kubelet.wins_command.as_deref().unwrap().contains("--v=3"),
        "{:?}",
        kubelet.wins_command
    );
    assert_eq!(
        windows.service()["restarts"],
        0,
        "wins restarted for a kubelet flag"
    );
    assert_eq!(e2e.env.container_ids(&HOSTS), linux_before);

    // 5. The Windows worker leaves cluster.yml (and flannel goes with it): `up` tears it down
    //    through wins and deletes its node; the Linux hosts keep every container.
    std::fs::write(&e2e.config, &standard_yml).unwrap();
    let plan_text = dry_run(&e2e, &known_hosts, "with the Windows worker gone");
    assert!(
        plan_text.contains("through wins: stop the rancher-wins-* processes"),
        "{plan_text}"
    );
    assert!(plan_text.contains("delete node win1"), "{plan_text}");
    let out = rkers(&e2e, &known_hosts, &["up"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for name in WINDOWS_CONTAINERS {
        assert!(
            windows.docker.container(name).is_none(),
            "{name} still there"
        );
    }
    let removed = windows.docker.removed();
    let teardown = removed
        .iter()
        .find(|(n, _)| n == REMOVE_CONTAINER)
        .and_then(|(_, c)| c.host_script.clone())
        .expect("the teardown ran through wins");
    for piece in [
        "Get-Process -Name 'rancher-wins-*'",
        "Remove-NetFirewallRule",
        "Remove-HnsNetwork",
        r"'c:\etc\kubernetes'",
        "Start-Process",
    ] {
        assert!(teardown.contains(piece), "{piece} missing from {teardown}");
    }
    // The containers went before the host script ran (their wins streams end with them).
    let calls = windows.docker.container_calls();
    let kubelet_gone = calls
        .iter()
        .rposition(|c| c == "DELETE /containers/kubelet")
        .unwrap();
    let script_started = calls
        .iter()
        .rposition(|c| *c == format!("POST /containers/{REMOVE_CONTAINER}/start"))
        .unwrap();
    assert!(kubelet_gone < script_started, "{calls:?}");
    assert!(nodes.get_opt(WINDOWS_NODE).await.unwrap().is_none());
    assert_eq!(e2e.env.container_ids(&HOSTS), linux_before);
    // The standard cluster is back as the next test expects it.
    e2e.standard().await;
}
