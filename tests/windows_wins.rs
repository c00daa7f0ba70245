//! Runs every planned `wins cli prc run` of a Windows worker against a fake wins server that
//! speaks the wins gRPC protocol on a Unix socket (tests/wins). The command line is taken from
//! the container's own `-EncodedCommand` script (not from the plan model), the script's binary
//! copies are carried out through the container's binds, and the fake server checks what the
//! real one checks: whitelist, SHA1 of the host copy, the rename to `rancher-wins-<exe>`, the
//! firewall rules of `--exposes`, and KeepAlive/Wait.

mod wins;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rkers::plan::{ContainerSpec, ExposeProtocol, HostPlan, WinsProcess};
use wins::client::{RunError, WinsClient, split_wins_list};
use wins::proto::{HnsNetwork, HnsNetworkSubnet, RunExposeProtocol};
use wins::server::{self, Event, Shared, State, host_file, sha1_hex, whitelist_from_config};
use wins::support::*;

/// Tokens of the `& '<wins.exe>' cli prc run …` line of a launcher script, after the exe:
/// PowerShell single-quoted literals, bare words, and the `('…' + $sourceVip)` expression.
fn planned_invocation(script: &str, source_vip: Option<&str>) -> Vec<String> {
    let line = script
        .lines()
        .find(|l| l.starts_with("& ") && l.contains(" cli prc run "))
        .expect("the script runs wins cli prc run");
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    let literal = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        let mut text = String::new();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    text.push('\'');
                } else {
                    return text;
                }
            } else {
                text.push(c);
            }
        }
        panic!("unterminated literal in {line}");
    };
    while let Some(&c) = chars.peek() {
        match c {
            ' ' => {
                chars.next();
            }
            '\'' => {
                chars.next();
                tokens.push(literal(&mut chars));
            }
            '(' => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next().expect("closing parenthesis") {
                        ')' => break,
                        ' ' | '+' => {}
                        '\'' => value.push_str(&literal(&mut chars)),
                        '$' => {
                            let name: String =
                                std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_alphanumeric()))
                                    .collect();
                            assert_eq!(name, "sourceVip", "unknown variable in {line}");
                            value.push_str(source_vip.expect("script needs the source VIP"));
                        }
                        other => panic!("unexpected {other:?} in {line}"),
                    }
                }
                tokens.push(value);
            }
            _ => {
                let word: String = std::iter::from_fn(|| chars.next_if(|c| *c != ' ')).collect();
                tokens.push(word);
            }
        }
    }
    assert_eq!(tokens[0], "&");
    tokens.split_off(2)
}

/// `c:/host/x` inside the container → the host path, through `host:container[:ro]` binds.
fn through_binds(binds: &[String], container_path: &str) -> Option<String> {
    let wanted = container_path.replace('\\', "/").to_lowercase();
    binds.iter().find_map(|bind| {
        let parts: Vec<&str> = bind.split(':').collect();
        if parts.len() < 4 || parts[0].len() != 1 {
            return None;
        }
        let container = format!("{}:{}", parts[2], parts[3]).to_lowercase();
        let rest = wanted.strip_prefix(&container)?;
        rest.starts_with('/')
            .then(|| format!("{}:{}{rest}", parts[0], parts[1].trim_end_matches('/')))
    })
}

/// A Windows host and its containers as directories.
struct Node {
    _tmp: tempfile::TempDir,
    host: PathBuf,
    containers: PathBuf,
}

impl Node {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let host = tmp.path().join("host");
        let containers = tmp.path().join("containers");
        Node {
            host,
            containers,
            _tmp: tmp,
        }
    }

    fn container_root(&self, name: &str) -> PathBuf {
        self.containers.join(name)
    }

    /// The image content of a container: each binary its script copies.
    fn install_image(&self, spec: &ContainerSpec) {
        for (from, _) in copies(&script_of(spec)) {
            let file = host_file(&self.container_root(&spec.name), &from);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, image_bytes(&from)).unwrap();
        }
    }

    /// Carries out the script's `Copy-Item` lines: image file → host file through the binds.
    fn run_copies(&self, spec: &ContainerSpec) {
        for (from, to) in copies(&script_of(spec)) {
            let host_path = through_binds(&spec.binds, &to)
                .unwrap_or_else(|| panic!("{}: {to} is not on a bind", spec.name));
            let target = host_file(&self.host, &host_path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(host_file(&self.container_root(&spec.name), &from), target).unwrap();
        }
    }
}

fn image_bytes(path: &str) -> Vec<u8> {
    format!("image build of {path}").into_bytes()
}

fn script_of(spec: &ContainerSpec) -> String {
    decode_powershell(spec.entrypoint.last().unwrap())
}

fn copies(script: &str) -> Vec<(String, String)> {
    script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Copy-Item -Force -Path '"))
        .map(|rest| {
            let (from, rest) = rest.split_once("' -Destination '").unwrap();
            (from.to_string(), rest.trim_end_matches('\'').to_string())
        })
        .collect()
}

fn overlay_network() -> (String, HnsNetwork) {
    (
        "vxlan0".into(),
        HnsNetwork {
            id: "5d5f3f1c-0000-4000-8000-000000000001".into(),
            r#type: "Overlay".into(),
            subnets: vec![HnsNetworkSubnet {
                address_cidr: "10.42.3.0/24".into(),
                gateway_address: "10.42.3.1".into(),
            }],
            management_ip: "10.77.1.21".into(),
        },
    )
}

/// The source VIP the kube-proxy script derives: `.254` of the network's first subnet.
fn source_vip(network: &HnsNetwork) -> String {
    let cidr = &network.subnets[0].address_cidr;
    let (ip, _) = cidr.split_once('/').unwrap();
    let (net, _) = ip.rsplit_once('.').unwrap();
    format!("{net}.254")
}

struct Fixture {
    node: Node,
    plan: HostPlan,
    processes: Vec<WinsProcess>,
    state: Shared,
    client: WinsClient,
    _server: tokio::task::JoinHandle<()>,
}

/// Plans the mixed cluster, lays the Windows host out on disk (directories and every planned
/// file), loads the whitelist from the planned wins config and starts the fake server.
async fn fixture() -> Fixture {
    let (_, plan) = mixed_plan();
    let host_plan = plan
        .hosts
        .iter()
        .find(|h| h.address == WINDOWS_HOST)
        .unwrap()
        .clone();
    let setup = plan.windows[WINDOWS_HOST].clone();
    let node = Node::new();
    for dir in &setup.directories {
        std::fs::create_dir_all(host_file(&node.host, dir)).unwrap();
    }
    for file in &host_plan.files {
        std::fs::write(host_file(&node.host, &file.path), &file.contents).unwrap();
    }
    for spec in host_plan.containers.values() {
        node.install_image(spec);
    }
    let config =
        std::fs::read_to_string(host_file(&node.host, "c:/etc/rancher/wins/config")).unwrap();
    let whitelist = whitelist_from_config(&config);
    assert_eq!(
        whitelist,
        [
            r"c:\etc\kubernetes\bin\kube-proxy.exe",
            r"c:\etc\kubernetes\bin\kubelet.exe",
            r"c:\etc\nginx\nginx.exe",
            // the PowerShell privileged steps (orphan sweep, remove) have wins start
            r"c:\etc\rancher\wins\powershell.exe",
            r"c:\opt\bin\flanneld.exe",
        ],
        "wins must find the whitelist in the planned config"
    );
    let state = Arc::new(Mutex::new(State {
        root: node.host.clone(),
        whitelist,
        networks: vec![overlay_network()],
        ..Default::default()
    }));
    let socket = node._tmp.path().join("rancher_wins.sock");
    let server = server::serve(&socket, state.clone());
    let client = WinsClient::connect(&socket).await;
    Fixture {
        node,
        plan: host_plan,
        processes: setup.processes,
        state,
        client,
        _server: server,
    }
}

impl Fixture {
    fn spec(&self, container: &str) -> &ContainerSpec {
        &self.plan.containers[container]
    }

    async fn argv(&self, p: &WinsProcess) -> Vec<String> {
        let script = script_of(self.spec(&p.container));
        let vip = if script.contains("cli hns get-network --name 'vxlan0'") {
            let network = self.client.hns_network_by_name("vxlan0").await.unwrap();
            Some(source_vip(&network))
        } else {
            None
        };
        let argv = planned_invocation(&script, vip.as_deref());
        assert_eq!(
            argv,
            p.cli_args(vip.as_deref()),
            "{}: script and plan disagree",
            p.container
        );
        argv
    }

    async fn run(&self, p: &WinsProcess) -> Result<wins::client::RunOutcome, RunError> {
        let argv = self.argv(p).await;
        self.client
            .prc_run(&argv, &self.node.container_root(&p.container))
            .await
    }
}

#[tokio::test]
async fn every_planned_wins_command_runs_against_the_fake_server() {
    let f = fixture().await;
    let info = f.client.app_info().await.unwrap();
    assert_eq!(info.checksum, sha1_hex(b"fake wins"));

    let expected_names = [
        ("nginx-proxy", "rancher-wins-ngin"),
        ("kubelet", "rancher-wins-kubelet"),
        ("service-sidekick", "rancher-wins-flanneld"),
        ("kube-proxy", "rancher-wins-kube-proxy"),
    ];
    assert_eq!(f.processes.len(), expected_names.len());
    for (p, (container, name)) in f.processes.iter().zip(expected_names) {
        assert_eq!(p.container, container);
        f.node.run_copies(f.spec(&p.container));
        let outcome = f
            .run(p)
            .await
            .unwrap_or_else(|e| panic!("{container}: {e:?}"));

        assert_eq!(outcome.name, name);
        assert_eq!(outcome.name, p.host_process_name());
        assert_eq!(outcome.request.path, p.path);
        assert_eq!(
            outcome.request.checksum,
            sha1_hex(&image_bytes(&p.image_path))
        );
        let mut expected_args = p.args.clone();
        if p.source_vip_from_network.is_some() {
            expected_args.push("--source-vip=10.42.3.254".into());
        }
        assert_eq!(
            outcome.request.args, expected_args,
            "{container}: argv survives wins' splitting"
        );
        assert_eq!(outcome.request.envs, p.envs);
        let exposes: Vec<(i32, i32)> = p
            .exposes
            .iter()
            .map(|e| {
                let proto = match e.protocol {
                    ExposeProtocol::Tcp => RunExposeProtocol::Tcp,
                    ExposeProtocol::Udp => RunExposeProtocol::Udp,
                };
                (e.port as i32, proto as i32)
            })
            .collect();
        let sent: Vec<(i32, i32)> = outcome
            .request
            .exposes
            .iter()
            .map(|e| (e.port, e.protocol))
            .collect();
        assert_eq!(sent, exposes, "{container}");
        // The host process saw exactly the planned argv (the fake prints it).
        assert_eq!(outcome.stdout.lines().collect::<Vec<_>>(), expected_args);
        assert_eq!(outcome.stderr, format!("{name} exited\n"));

        // wins moved the host copy away: the next start needs a fresh copy.
        let host_exe = host_file(&f.node.host, &p.path);
        assert!(!host_exe.exists(), "{container}: wins renames the binary");
        let renamed = host_exe.with_file_name(format!("rancher-wins-{}", p.exe_name()));
        assert_eq!(std::fs::read(renamed).unwrap(), image_bytes(&p.image_path));
    }

    let st = f.state.lock().unwrap();
    for (_, name) in expected_names {
        let position = |e: &Event| st.events.iter().position(|x| x == e).unwrap();
        let keep_alive = position(&Event::KeepAliveOpened(name.into()));
        let wait = position(&Event::WaitOpened(name.into()));
        let killed = position(&Event::Killed(name.into()));
        assert!(
            keep_alive < killed && wait < killed,
            "{name}: {:?}",
            st.events
        );
    }
    let started: Vec<&server::HostProcess> = st
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Started(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 4);
    assert_eq!(
        started[0].dir, r"c:\etc\nginx",
        "nginx runs in its own directory (conf\\nginx.conf)"
    );
    let rules: Vec<&str> = st
        .events
        .iter()
        .filter_map(|e| match e {
            Event::FirewallRuleAdded(rule) => Some(rule.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        rules,
        [
            "rancher-wins-kubelet-TCP-10250",
            "rancher-wins-flanneld-UDP-4789",
            "rancher-wins-kube-proxy-TCP-10256",
        ]
    );
    assert!(st.pool.is_empty(), "every KeepAlive end killed its process");
    assert!(st.firewall_rules.is_empty(), "rules go with their process");
}

#[tokio::test]
async fn a_restart_needs_the_copy_and_an_orphan_blocks_the_rename() {
    let f = fixture().await;
    let kubelet = f
        .processes
        .iter()
        .find(|p| p.container == "kubelet")
        .unwrap();
    f.node.run_copies(f.spec("kubelet"));
    f.run(kubelet).await.expect("first start");

    // Without the script's copy the host has no kubelet.exe any more.
    match f.run(kubelet).await {
        Err(RunError::Rpc(status)) => {
            assert_eq!(status.code(), tonic::Code::NotFound);
            assert!(
                status.message().starts_with("could not found binary"),
                "{status:?}"
            );
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    // The container's script copies first, so a restart works.
    f.node.run_copies(f.spec("kubelet"));
    f.run(kubelet).await.expect("restart after the copy");

    // A rancher-wins-kubelet.exe that outlived its wins server blocks the rename.
    f.state
        .lock()
        .unwrap()
        .orphans
        .insert("rancher-wins-kubelet".into());
    f.node.run_copies(f.spec("kubelet"));
    match f.run(kubelet).await {
        Err(RunError::Rpc(status)) => {
            assert_eq!(status.code(), tonic::Code::Internal);
            assert!(
                status.message().contains("could not rename binary")
                    && status.message().ends_with("Access is denied."),
                "{status:?}"
            );
        }
        other => panic!("expected the Access-is-denied rename failure, got {other:?}"),
    }
    // What the orphan sweep does on the host: stop the process, delete the stale file.
    f.state.lock().unwrap().orphans.clear();
    let stale = host_file(
        &f.node.host,
        r"c:\etc\kubernetes\bin\rancher-wins-kubelet.exe",
    );
    std::fs::remove_file(stale).unwrap();
    f.run(kubelet).await.expect("start after the orphan sweep");
}

#[tokio::test]
async fn the_whitelist_refuses_other_executables() {
    let f = fixture().await;
    let path = r"c:\etc\rancher\powershell.exe";
    for root in [f.node.host.clone(), f.node.container_root("kubelet")] {
        let file = host_file(&root, path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, b"powershell").unwrap();
    }
    let argv: Vec<String> = ["cli", "prc", "run", "--path", path]
        .iter()
        .map(|s| s.to_string())
        .collect();
    match f
        .client
        .prc_run(&argv, &f.node.container_root("kubelet"))
        .await
    {
        Err(RunError::Rpc(status)) => {
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert_eq!(status.message(), "invalid path");
        }
        other => panic!("expected invalid path, got {other:?}"),
    }
}

#[test]
fn rancher_style_whitelist_key_is_ignored_by_wins() {
    // What Rancher's bootstrap wrote; wins ≥ v0.1.2 does not read `whiteList`, so the list is
    // empty and every executable would be allowed. The plan writes `white_list`.
    let rancher =
        r#"{"whiteList":{"processPaths":["c:\\etc\\nginx\\nginx.exe"],"proxyPorts":["9796"]}}"#;
    assert!(whitelist_from_config(rancher).is_empty());
    let ours = "white_list:\n  processPaths:\n  - c:\\etc\\nginx\\nginx.exe\n  proxyPorts: []\n";
    assert_eq!(whitelist_from_config(ours), [r"c:\etc\nginx\nginx.exe"]);
}

#[test]
fn wins_splitting_is_why_spaces_are_refused() {
    assert_eq!(split_wins_list("--a=1 --b=2"), ["--a=1", "--b=2"]);
    assert_eq!(split_wins_list("--labels=a b"), ["--labels=a", "b"]);
    assert_eq!(split_wins_list(r#"--x="a b""#), [r#"--x="a b""#]);
}

/// A privileged step (orphan sweep, remove) as wins sees it: the host's PowerShell staged next
/// to wins.exe passes the whitelist and the checksum handshake, and the host script arrives
/// intact through wins' list splitting.
#[tokio::test]
async fn a_privileged_step_runs_host_powershell_through_wins() {
    let f = fixture().await;
    let script = rkers::plan::orphan_cleanup_command();
    let spec = rkers::plan::windows_privileged_step(
        "rkers-wins-orphan-sweep",
        "rancher/rke-tools:v0.1.89",
        &script,
    );
    let launcher = script_of(&spec);
    // Host PowerShell, as the read-only bind shows it to the container.
    let host_ps = r"c:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe";
    let host_ps_file = host_file(&f.node.host, host_ps);
    std::fs::create_dir_all(host_ps_file.parent().unwrap()).unwrap();
    std::fs::write(&host_ps_file, b"host powershell build").unwrap();
    // Carry out the staging copy: both ends are binds, so it is a host-to-host copy; the
    // container sees the result at the same path (its bind of c:/etc/rancher/wins).
    let staged = copies(&launcher);
    assert_eq!(
        staged,
        [(
            r"c:\host\powershell\powershell.exe".to_string(),
            rkers::plan::STEP_POWERSHELL.to_string()
        )]
    );
    for (from, to) in &staged {
        let from = through_binds(&spec.binds, from).expect("source on a bind");
        let to_host = through_binds(&spec.binds, to).expect("target on a bind");
        assert_eq!(to_host.to_lowercase(), to.replace('\\', "/").to_lowercase());
        let target = host_file(&f.node.host, &to_host);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(host_file(&f.node.host, &from), &target).unwrap();
        let in_container = host_file(&f.node.container_root(&spec.name), to);
        std::fs::create_dir_all(in_container.parent().unwrap()).unwrap();
        std::fs::copy(&target, in_container).unwrap();
    }
    let argv = planned_invocation(&launcher, None);
    let outcome = f
        .client
        .prc_run(&argv, &f.node.container_root(&spec.name))
        .await
        .unwrap_or_else(|e| panic!("wins refused the step: {e:?}"));
    assert_eq!(outcome.name, "rancher-wins-powershell");
    assert_eq!(outcome.request.path, rkers::plan::STEP_POWERSHELL);
    assert_eq!(outcome.request.checksum, sha1_hex(b"host powershell build"));
    let args = &outcome.request.args;
    assert_eq!(
        args[..6],
        [
            "-NoLogo",
            "-NonInteractive",
            "-NoProfile",
            "-ExecutionPolicy",
            "Bypass",
            "-EncodedCommand"
        ]
    );
    assert_eq!(args.len(), 7, "{args:?}");
    assert_eq!(
        decode_powershell(&args[6]),
        format!("{script}Write-Output '{}'\n", rkers::plan::STEP_DONE_MARKER)
    );
    assert!(outcome.request.exposes.is_empty());
}
