//! The Windows phases (orphan sweep, removal of a Windows worker) against a Docker API double
//! that answers like dockerd on Windows (tests/windows_docker), reached through a real local
//! sshd, so the whole path Host → SSH → Docker API is the production one. Checks the exact
//! containers created and the exact host scripts handed to wins. Needs root (for sshd); skips
//! with a printed reason otherwise.

mod support;
mod windows_docker;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rkers::diff::Action;
use rkers::output::{Event, Reporter};
use rkers::phases::executor::Executor;

use rkers::hosts::{DockerTransport, HostPool, SshAuth, SshOptions, SshTarget, TransportReason};
use rkers::phases::windows::{
    REMOVE_CONTAINER, SWEEP_CONTAINER, remove_windows_host, sweep_orphans,
};
use rkers::plan::{
    self, CONTAINER_USER, STEP_DONE_MARKER, STEP_POWERSHELL, WINS_PIPE_BIND,
    orphan_cleanup_command, remove_plan_windows,
};
use support::{LocalSshd, SshdOptions};
use windows_docker::{FakeWindowsDocker, StepOutcome, decode_encoded_command};

const IMAGE: &str = "rancher/rke-tools:v0.1.89";

struct Env {
    _dir: tempfile::TempDir,
    _sshd: LocalSshd,
    docker: FakeWindowsDocker,
    pool: HostPool,
}

async fn env() -> Option<Env> {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen"]) {
        support::skip(&r);
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = support::keygen(dir.path(), "id_ed25519", "ed25519", "");
    let sshd = LocalSshd::start(SshdOptions::default());
    sshd.authorize(&key);
    let docker = FakeWindowsDocker::start().await;
    let pool = connect(&sshd, &key, dir.path(), &docker.socket_str()).await;
    Some(Env {
        _dir: dir,
        _sshd: sshd,
        docker,
        pool,
    })
}

async fn connect(sshd: &LocalSshd, key: &Path, dir: &Path, socket: &str) -> HostPool {
    let target = SshTarget {
        name: "win1".into(),
        address: "127.0.0.1".into(),
        port: Some(sshd.port),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(key.to_owned()),
            ..Default::default()
        },
        docker_socket: socket.into(),
        bastion: None,
    };
    let opts = SshOptions {
        known_hosts_path: Some(dir.join("known_hosts")),
        connect_timeout: Duration::from_secs(10),
        retries: 0,
        ssh_config_enabled: false,
        ..Default::default()
    };
    HostPool::connect(&[target], &opts).await.expect("connects")
}

/// The create body of a step container: what a Windows daemon is asked to run.
fn assert_step_container(body: &serde_json::Value) {
    assert_eq!(body["Image"], IMAGE);
    assert_eq!(body["User"], CONTAINER_USER);
    let hc = &body["HostConfig"];
    assert_eq!(
        hc["Binds"],
        serde_json::json!([
            WINS_PIPE_BIND,
            "c:/etc/rancher/wins:c:/etc/rancher/wins",
            "c:/Windows/System32/WindowsPowerShell/v1.0:c:/host/powershell:ro"
        ])
    );
    assert_ne!(hc["Privileged"], true);
    assert!(hc["NetworkMode"].is_null() || hc["NetworkMode"] == "");
    assert!(hc["RestartPolicy"].is_null() || hc["RestartPolicy"]["Name"] != "always");
    let entry: Vec<&str> = body["Entrypoint"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        &entry[..5],
        [
            "pwsh",
            "-NoLogo",
            "-NonInteractive",
            "-NoProfile",
            "-EncodedCommand"
        ]
    );
    let launcher = decode_encoded_command(entry[5]).unwrap();
    // The host's PowerShell is staged next to wins.exe (same path in container and host)
    // before wins is asked to start it.
    let stage = launcher.find("Copy-Item").expect("stages powershell.exe");
    let run = launcher.find(" cli prc run ").expect("runs wins");
    assert!(stage < run, "{launcher}");
    assert!(
        launcher.contains(&format!(
            "& 'c:\\etc\\rancher\\wins\\wins.exe' cli prc run --path '{STEP_POWERSHELL}' --args '-NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand "
        )),
        "{launcher}"
    );
    assert!(launcher.ends_with("exit $LASTEXITCODE\n"), "{launcher}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_of_a_windows_daemon_and_its_transport() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    let f = host.facts();
    assert_eq!(f.os_type, "windows");
    assert!(plan::is_windows(&plan::HostFacts {
        os_type: f.os_type.clone(),
        ..Default::default()
    }));
    // A Linux sshd in front: the socket is forwarded, and the facts say so and why.
    assert_eq!(f.transport, DockerTransport::StreamLocal);
    assert_eq!(f.transport_reason, TransportReason::SocketForwarded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_runs_the_orphan_script_through_wins_and_reports_what_it_stopped() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    env.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::Runs {
            output: r#"{"stopped":["rancher-wins-kubelet","rancher-wins-ngin"]}"#.into(),
        },
    );
    let report = sweep_orphans(host, IMAGE).await.expect("sweep succeeds");
    assert_eq!(
        report.stopped,
        vec!["rancher-wins-kubelet", "rancher-wins-ngin"]
    );

    // Exactly one step container: stale one removed, created, started, waited for, logs read,
    // removed.
    let sweep = format!("/containers/{SWEEP_CONTAINER}");
    assert_eq!(
        env.docker.container_calls(),
        vec![
            format!("DELETE {sweep}"),
            "POST /containers/create".to_string(),
            format!("POST {sweep}/start"),
            format!("GET {sweep}/json"),
            format!("GET {sweep}/logs"),
            format!("DELETE {sweep}"),
        ]
    );
    let removed = env.docker.removed();
    assert_eq!(removed.len(), 1);
    let (name, step) = &removed[0];
    assert_eq!(name, SWEEP_CONTAINER);
    assert_step_container(&step.create_body);
    // The host script wins runs is the plan's orphan sweep, byte for byte, plus the marker.
    assert_eq!(
        step.host_script.as_deref().unwrap(),
        format!(
            "{}Write-Output '{STEP_DONE_MARKER}'\n",
            orphan_cleanup_command()
        )
    );
    assert!(env.docker.container_names().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_fails_with_the_host_and_a_hint_when_wins_refuses() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    env.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::WinsFails {
            error: "rpc error: code = InvalidArgument desc = invalid path".into(),
        },
    );
    let err = sweep_orphans(host, IMAGE).await.unwrap_err().to_string();
    assert!(err.contains("host win1"), "{err}");
    assert!(err.contains(SWEEP_CONTAINER), "{err}");
    assert!(err.contains("invalid path"), "{err}");
    assert!(err.contains("processPaths"), "{err}");
    // The failed step is not left behind.
    assert!(env.docker.container_names().is_empty());

    // A script that never reached its end (no marker, exit 0: wins exits 0 whatever the host
    // process did) is a failure too.
    env.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::WinsFails {
            error: String::new(),
        },
    );
    assert!(sweep_orphans(host, IMAGE).await.is_err());
}

/// `up`'s planned sweep (`Action::SweepWindowsOrphans`) goes through the host executor: the
/// same one-shot step, one `applied` event for it, and a failure reported as that action's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planned_sweep_is_applied_and_reported_by_the_executor() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    let events = Arc::new(Mutex::new(Vec::<Event>::new()));
    let seen = events.clone();
    let reporter = Reporter::with_sink(Arc::new(move |e: Event| seen.lock().unwrap().push(e)));
    let exec = Executor::new(&reporter, IMAGE, Vec::new()).with_hosts([host]);
    let exec = exec.on("win1");
    let sweep = Action::SweepWindowsOrphans {
        image: IMAGE.into(),
    };
    let applied = || -> Vec<(String, String, Option<String>)> {
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event == Some("applied"))
            .map(|e| {
                (
                    e.host.clone().unwrap_or_default(),
                    e.action.clone().unwrap_or_default(),
                    e.error.clone(),
                )
            })
            .collect()
    };

    env.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::Runs {
            output: r#"{"stopped":["rancher-wins-kubelet"]}"#.into(),
        },
    );
    exec.apply(&[&sweep]).await.expect("the sweep succeeds");
    assert!(
        env.docker
            .container_calls()
            .contains(&format!("POST /containers/{SWEEP_CONTAINER}/start")),
        "{:?}",
        env.docker.container_calls()
    );
    assert_eq!(
        applied(),
        [(
            "win1".to_string(),
            format!(
                "through wins: stop the rancher-wins-* processes that outlived their wins \
                 server ({IMAGE})"
            ),
            None
        )]
    );

    env.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::WinsFails {
            error: "rpc error: code = InvalidArgument desc = invalid path".into(),
        },
    );
    let err = exec.apply(&[&sweep]).await.unwrap_err().to_string();
    assert!(err.contains("processPaths"), "{err}");
    let events = applied();
    let (_, _, error) = events.last().unwrap();
    assert!(
        error.as_deref().is_some_and(|e| e.contains("invalid path")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_takes_containers_down_before_the_host_script() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    for c in [
        plan::KUBE_PROXY,
        plan::KUBELET,
        plan::NGINX_PROXY,
        plan::SERVICE_SIDEKICK,
    ] {
        env.docker.add_running(c);
    }
    env.docker.on_step(
        REMOVE_CONTAINER,
        StepOutcome::Runs {
            output: String::new(),
        },
    );
    let mut remove_plan = remove_plan_windows("c:/", true);
    remove_plan.settle_seconds = 0;
    remove_windows_host(host, &remove_plan, IMAGE)
        .await
        .expect("remove succeeds");

    let calls = env.docker.container_calls();
    let deletes: Vec<&String> = calls
        .iter()
        .take_while(|c| !c.starts_with("POST"))
        .collect();
    assert_eq!(
        deletes,
        [
            "DELETE /containers/kube-proxy",
            "DELETE /containers/kubelet",
            "DELETE /containers/nginx-proxy",
            "DELETE /containers/service-sidekick",
            "DELETE /containers/rkers-wins-orphan-sweep",
            "DELETE /containers/rkers-wins-remove",
            // run_one_shot's own stale-container removal
            "DELETE /containers/rkers-wins-remove",
        ]
    );
    // Forced removal with volumes, as a running container needs.
    let first = env
        .docker
        .calls()
        .into_iter()
        .find(|c| c.method == "DELETE")
        .unwrap();
    assert!(
        first.query.contains("force=true") && first.query.contains("v=true"),
        "{}",
        first.query
    );
    let removed = env.docker.removed();
    let (name, step) = removed.last().unwrap();
    assert_eq!(name, REMOVE_CONTAINER);
    assert_step_container(&step.create_body);
    let script = step.host_script.as_deref().unwrap();
    assert_eq!(
        script,
        format!(
            "{}Write-Output '{STEP_DONE_MARKER}'\n",
            remove_plan.host_script
        )
    );
    // The pieces the remove plan promises, in the script wins runs.
    for piece in [
        "Get-Process -Name 'rancher-wins-*'",
        "$_.Id -ne $PID",
        "Get-NetFirewallRule -PolicyStore ActiveStore -Name 'rancher-wins-*'",
        "Remove-HnsNetwork",
        r"'c:\etc\kubernetes'",
        r"'c:\var\lib\kubelet'",
        "Start-Process",
    ] {
        assert!(script.contains(piece), "{piece} missing from {script}");
    }
    assert!(env.docker.container_names().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linux_hosts_are_refused_and_untouched() {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen"]) {
        return support::skip(&r);
    }
    let socket = match support::local_dockerd() {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    let dir = tempfile::tempdir().unwrap();
    let key = support::keygen(dir.path(), "id_ed25519", "ed25519", "");
    let sshd = LocalSshd::start(SshdOptions::default());
    sshd.authorize(&key);
    let pool = connect(&sshd, &key, dir.path(), socket).await;
    let host = pool.get("win1").unwrap();
    assert_eq!(host.facts().os_type, "linux");
    let err = sweep_orphans(host, IMAGE).await.unwrap_err().to_string();
    assert!(err.contains("linux host"), "{err}");
    let err = remove_windows_host(host, &remove_plan_windows("c:/", false), IMAGE)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only for Windows hosts"), "{err}");
    assert!(
        host.docker()
            .inspect_container(SWEEP_CONTAINER)
            .await
            .unwrap()
            .is_none()
    );
    pool.close().await;
}

/// `rkers <command> --dry-run --config <yml>` in `dir`; its stdout and stderr, and whether it
/// succeeded.
async fn rkers_dry_run(command: &'static str, yml: &Path, dir: &Path) -> (String, bool) {
    let (yml, dir) = (yml.to_owned(), dir.to_owned());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args([command, "--dry-run", "--config"])
            .arg(&yml)
            .arg("--known-hosts")
            .arg(dir.join("known_hosts"))
            .env("HOME", &dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        out.status.success(),
    )
}

/// The indented lines under `header` in a dry run's output.
fn section_of(output: &str, header: &str) -> String {
    output
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `rkers up --dry-run` on a mixed cluster: a Linux host (our local dockerd) and a Windows worker
/// (the double), both through a real sshd. The Windows host shows its wins-launched containers
/// and `c:/` certificate files; the Linux host shows no Windows trace; nothing is created
/// anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_cluster_dry_run_lists_windows_and_linux_actions() {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen", "/usr/bin/python3"])
    {
        return support::skip(&r);
    }
    let linux_socket = match support::local_dockerd() {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    let dir = tempfile::tempdir().unwrap();
    let key = support::keygen(dir.path(), "id_ed25519", "ed25519", "");
    // The Windows worker's shell is a double (tests/windows_host) that answers the host agent;
    // the Linux host's commands pass through it unchanged.
    let windows_state = dir.path().join("windows");
    let sshd = support::windows_shell_sshd(&windows_state);
    sshd.authorize(&key);
    let windows = FakeWindowsDocker::start().await;
    let yml = dir.path().join("cluster.yml");
    std::fs::write(
        &yml,
        format!(
            "nodes:\n\
             - address: 127.0.0.1\n  port: \"{port}\"\n  user: root\n  role: [controlplane, etcd, worker]\n  docker_socket: {linux_socket}\n\
             - address: localhost\n  port: \"{port}\"\n  user: root\n  role: [worker]\n  hostname_override: win1\n  docker_socket: {win_socket}\n\
             ssh_key_path: {key}\n\
             kubernetes_version: v1.20.15-rancher2-2\n\
             ignore_docker_version: true\n\
             network:\n  plugin: flannel\n  options:\n    flannel_backend_type: vxlan\n    flannel_backend_vni: \"4096\"\n    flannel_backend_port: \"4789\"\n\
             system_images:\n  cert_downloader: {helper}\n",
            port = sshd.port,
            win_socket = windows.socket_str(),
            key = key.display(),
            helper = support::TEST_IMAGE,
        ),
    )
    .unwrap();
    let (stdout, ok) = rkers_dry_run("up", &yml, dir.path()).await;
    assert!(ok, "{stdout}");
    let section = |host: &str| section_of(&stdout, &format!("{host}:"));
    let win = section("localhost");
    for container in [
        plan::SERVICE_SIDEKICK,
        plan::NGINX_PROXY,
        plan::KUBELET,
        plan::KUBE_PROXY,
    ] {
        assert!(win.contains(container), "{container} missing:\n{win}");
    }
    // Certificates and kubeconfigs go under the Windows prefix.
    assert!(
        win.contains("upload c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml"),
        "{win}"
    );
    assert!(!win.contains("etcd"), "{win}");
    // The host-level steps: directories, the wins config, wins itself.
    for step in [
        "create directories c:/etc/kubernetes/bin, c:/etc/kubernetes/ssl,",
        "upload c:/etc/rancher/wins/config (new)",
        "upload c:/etc/cni/net.d/10-flannel.conflist (new)",
        "install wins at c:/etc/rancher/wins/wins.exe (copied from rancher/",
        "register and start the rancher-wins service (not registered yet)",
    ] {
        assert!(win.contains(step), "{step} missing:\n{win}");
    }
    // The orphan sweep: after wins started, before wins starts the first container.
    let at = |text: &str| {
        win.find(text)
            .unwrap_or_else(|| panic!("{text} missing:\n{win}"))
    };
    let sweep =
        at("through wins: stop the rancher-wins-* processes that outlived their wins server");
    assert!(
        at("register and start the rancher-wins service") < sweep,
        "{win}"
    );
    assert!(sweep < at("create and start container"), "{win}");
    assert_eq!(
        win.matches("outlived their wins server").count(),
        1,
        "{win}"
    );
    let linux = section("127.0.0.1");
    for container in ["etcd", "kube-apiserver", plan::KUBELET] {
        assert!(linux.contains(container), "{container} missing:\n{linux}");
    }
    assert!(!linux.contains("c:/"), "{linux}");
    // A dry run changes nothing: the Windows daemon was only asked read-only questions.
    let writes = windows.writes_since(0);
    assert!(writes.is_empty(), "{writes:?}");
    // ... and the Windows host was only observed.
    assert!(!windows_state.join("drive").exists());
    let agent_runs = std::fs::read_to_string(windows_state.join("invocations.jsonl")).unwrap();
    assert!(
        agent_runs
            .lines()
            .all(|l| l.contains("\"mode\": \"observe\"")),
        "{agent_runs}"
    );
    assert!(!dir.path().join("cluster.rkestate").exists());

    // `remove --dry-run` shows the Windows teardown for the Windows worker, RKE1's directory
    // cleaning for the Linux host, and changes nothing either.
    let (stdout, ok) = rkers_dry_run("remove", &yml, dir.path()).await;
    assert!(ok, "{stdout}");
    let section = |host: &str| section_of(&stdout, &format!("{host}:"));
    let win = section("localhost");
    assert!(
        win.contains("through wins: stop the rancher-wins-* processes")
            && win.contains(r"c:\etc\kubernetes")
            && win.contains("unregister the rancher-wins service"),
        "{stdout}"
    );
    assert!(!win.contains("/etc/cni"), "{stdout}");
    let linux = section("127.0.0.1");
    assert!(!linux.contains("wins"), "{stdout}");
    let writes = windows.writes_since(0);
    assert!(writes.is_empty(), "{writes:?}");
}
