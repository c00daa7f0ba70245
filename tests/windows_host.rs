//! The host-level work on a Windows worker (directories, files, installing and starting wins)
//! through the production path: a real local sshd runs the host agent's command, and a test
//! double stands in for the Windows shell behind it (tests/windows_host/fake_windows_shell.py:
//! it checks the command line and the decoded script, and carries out the agent's documented
//! protocol on a directory that stands in for the C: drive). `wins.exe` comes out of an image of
//! the Windows Docker double (tests/windows_docker). The PowerShell itself cannot run here; the
//! rest of the path is real. Needs root (for sshd); skips with a printed reason otherwise.

mod support;
mod windows_docker;

use std::time::Duration;

use rkers::hosts::{HostPool, SshAuth, SshOptions, SshTarget};
use rkers::phases::files::DesiredFile;
use rkers::phases::windows::{
    SWEEP_CONTAINER, WINS_SOURCE_CONTAINER, WinsStep, install_wins, observe_host, prepare_host,
    start_wins, write_host_files,
};
use rkers::plan::{self, IMAGE_WINS_PATHS};
use windows_docker::{StepOutcome, WindowsHostDouble};

const IMAGE: &str = "rancher/rke-tools:v0.1.89-windows";

struct Env {
    win: WindowsHostDouble,
    pool: HostPool,
}

async fn env() -> Option<Env> {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen", "/usr/bin/python3"])
    {
        support::skip(&r);
        return None;
    }
    let win = WindowsHostDouble::start().await;
    let target = SshTarget {
        name: "win1".into(),
        address: "127.0.0.1".into(),
        port: Some(win.sshd.port),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(win.key.clone()),
            ..Default::default()
        },
        docker_socket: win.docker.socket_str(),
        bastion: None,
    };
    let opts = SshOptions {
        known_hosts_path: Some(win.dir.path().join("known_hosts")),
        connect_timeout: Duration::from_secs(10),
        retries: 0,
        ssh_config_enabled: false,
        ..Default::default()
    };
    let pool = HostPool::connect(&[target], &opts).await.expect("connects");
    Some(Env { win, pool })
}

fn file(rel: &str, contents: &[u8]) -> DesiredFile {
    DesiredFile {
        relative_path: rel.into(),
        contents: contents.to_vec(),
        mode: 0o600,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_directories_round_trip_byte_for_byte() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    let dirs: Vec<String> = ["c:/etc/kubernetes/ssl", "c:/etc/rancher/wins", "c:/run"]
        .map(String::from)
        .to_vec();
    // Every byte value, CRLF and backslashes, and a file over the 2 MB that Windows
    // PowerShell's JSON reader would refuse.
    let every_byte: Vec<u8> = (0..=255u8).collect();
    let config = b"white_list:\r\n  processPaths:\r\n  - c:\\etc\\nginx\\nginx.exe\r\n".to_vec();
    let big: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let files = vec![
        file("etc/kubernetes/ssl/kube-ca.pem", &every_byte),
        file("etc/rancher/wins/config", &config),
        file("etc/kubernetes/bin/large.bin", &big),
        file("etc/kubernetes/ssl/kube-node-key.pem", b"a private key"),
    ];
    let paths: Vec<String> = files.iter().map(|f| f.relative_path.clone()).collect();

    let before = observe_host(host, "c:/", &dirs, &paths).await.unwrap();
    assert_eq!(before.missing_directories, dirs);
    assert!(before.files.is_empty());
    assert_eq!(before.wins.service, "missing");
    assert!(!before.wins.exe_present && !before.wins.pipe);
    // Observing changed nothing.
    assert!(!env.win.state.join("drive").exists());

    let report = write_host_files(host, "c:/", &dirs, &files, &[])
        .await
        .unwrap();
    assert_eq!(report.created_directories.len(), 3, "{report:?}");
    assert_eq!(report.written.len(), 4, "{report:?}");
    for d in &dirs {
        assert!(env.win.on_drive(d).is_dir(), "{d}");
    }
    for f in &files {
        let on_drive = std::fs::read(env.win.on_drive(&format!("c:/{}", f.relative_path))).unwrap();
        assert!(on_drive == f.contents, "{} differs", f.relative_path);
    }

    // The key is readable by SYSTEM and Administrators only (the double's 0600), the rest as
    // Windows lets files under c:\ be.
    let mode = |rel: &str| support::file_mode(&env.win.on_drive(&format!("c:/{rel}")));
    assert_eq!(mode("etc/kubernetes/ssl/kube-node-key.pem"), 0o600);
    assert_eq!(mode("etc/kubernetes/ssl/kube-ca.pem"), 0o644);
    assert_eq!(mode("etc/rancher/wins/config"), 0o644);

    let after = observe_host(host, "c:/", &dirs, &paths).await.unwrap();
    assert!(after.missing_directories.is_empty());
    assert_eq!(after.files.len(), 4);
    for f in &files {
        assert!(
            after.files[&f.relative_path] == f.contents,
            "{}",
            f.relative_path
        );
    }

    let report = write_host_files(
        host,
        "c:/",
        &[],
        &[],
        &["etc/kubernetes/ssl/kube-ca.pem".to_string()],
    )
    .await
    .unwrap();
    assert_eq!(report.removed, vec![r"c:\etc\kubernetes\ssl\kube-ca.pem"]);
    assert!(
        !env.win
            .on_drive("c:/etc/kubernetes/ssl/kube-ca.pem")
            .exists()
    );
    assert!(env.win.on_drive("c:/etc/rancher/wins/config").exists());

    // The host ran exactly the agent rkers ships, and saw paths, never contents, on its
    // command line.
    assert_eq!(
        std::fs::read_to_string(env.win.state.join("last-script.ps1")).unwrap(),
        plan::host_agent_script()
    );
    let log = std::fs::read_to_string(env.win.state.join("invocations.jsonl")).unwrap();
    let modes: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["mode"].to_string())
        .collect();
    assert_eq!(
        modes,
        ["\"observe\"", "\"apply\"", "\"observe\"", "\"apply\""]
    );
    // Nothing else touched the Windows daemon.
    assert!(env.win.docker.container_calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wins_comes_out_of_the_image_then_registers_starts_and_restarts() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    // Only the second candidate path exists: the first miss must not stop the search.
    let wins = b"MZ\x90\x00 not really wins.exe".to_vec();
    env.win
        .docker
        .add_image_file(IMAGE, IMAGE_WINS_PATHS[1], &wins);

    let found = install_wins(host, IMAGE).await.unwrap();
    assert_eq!(found, IMAGE_WINS_PATHS[1]);
    assert_eq!(
        std::fs::read(env.win.on_drive("c:/etc/rancher/wins/wins.exe")).unwrap(),
        wins
    );
    let calls = env.win.docker.container_calls();
    let archive_reads = calls
        .iter()
        .filter(|c| c.as_str() == format!("GET /containers/{WINS_SOURCE_CONTAINER}/archive"))
        .count();
    assert_eq!(archive_reads, 2, "{calls:?}");
    assert!(
        !calls.iter().any(|c| c.ends_with("/start")),
        "the source container is never started: {calls:?}"
    );
    assert!(
        env.win.docker.container_names().is_empty(),
        "and removed again"
    );

    let (status, changes) = start_wins(host, false).await.unwrap();
    assert_eq!(changes, ["registered", "started"]);
    assert!(status.running() && status.pipe && status.exe_present);
    let (_, changes) = start_wins(host, false).await.unwrap();
    assert!(changes.is_empty(), "already running: {changes:?}");
    let (_, changes) = start_wins(host, true).await.unwrap();
    assert_eq!(changes, ["restarted"]);
    let service = env.win.service();
    assert_eq!(service["registrations"], 1);
    assert_eq!(service["starts"], 1);
    assert_eq!(service["restarts"], 1);

    let seen = observe_host(host, "c:/", &[], &[]).await.unwrap();
    assert!(seen.wins.exe_present && seen.wins.running() && seen.wins.pipe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_without_wins_and_a_missing_wins_exe_are_named() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    let err = install_wins(host, IMAGE).await.unwrap_err().to_string();
    assert!(err.contains("win1"), "{err}");
    assert!(err.contains(IMAGE), "{err}");
    for path in IMAGE_WINS_PATHS {
        assert!(err.contains(path), "{err}");
    }
    assert!(!env.win.on_drive("c:/etc/rancher/wins/wins.exe").exists());
    assert!(env.win.docker.container_names().is_empty());

    let err = start_wins(host, false).await.unwrap_err().to_string();
    assert!(
        err.contains(r"wins.exe is not at c:\etc\rancher\wins\wins.exe"),
        "{err}"
    );
    assert_eq!(
        env.win.service(),
        serde_json::Value::Null,
        "nothing registered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_failure_names_host_and_cause_and_never_the_contents() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    std::fs::write(env.win.state.join("fail-on"), "write").unwrap();
    let secret = b"-----BEGIN RSA PRIVATE KEY-----\nSECRET-KEY-MATERIAL\n";
    let err = write_host_files(
        host,
        "c:/",
        &[],
        &[file("etc/kubernetes/ssl/kube-node-key.pem", secret)],
        &[],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("win1"), "{err}");
    assert!(err.contains("Access to the path is denied."), "{err}");
    assert!(!err.contains("SECRET"), "{err}");
    assert!(!err.contains("EncodedCommand"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wins_restart_stops_its_containers_first_and_starts_them_after_the_sweep() {
    let Some(env) = env().await else { return };
    let host = env.pool.get("win1").unwrap();
    env.win
        .docker
        .add_image_file(IMAGE, IMAGE_WINS_PATHS[0], b"MZ wins");
    let containers: Vec<String> = [
        plan::SERVICE_SIDEKICK,
        plan::NGINX_PROXY,
        plan::KUBELET,
        plan::KUBE_PROXY,
    ]
    .map(String::from)
    .to_vec();

    // A fresh host: installed and started, no container touched.
    let fresh = WinsStep {
        install_from: Some(IMAGE.into()),
        start: Some(false),
        containers: containers.clone(),
        sweep_image: IMAGE.into(),
        ..Default::default()
    };
    let done = prepare_host(host, &fresh).await.unwrap();
    assert_eq!(done.installed_from.as_deref(), Some(IMAGE_WINS_PATHS[0]));
    assert_eq!(done.service_changes, ["registered", "started"]);
    assert!(done.restarted_containers.is_empty());

    // Its config changed while everything runs.
    for name in &containers {
        env.win.docker.add_running(name);
    }
    env.win.docker.on_step(
        SWEEP_CONTAINER,
        StepOutcome::Runs {
            output: r#"{"stopped":["rancher-wins-kubelet"]}"#.into(),
        },
    );
    let calls_before = env.win.docker.container_calls().len();
    let restart = WinsStep {
        install_from: None,
        start: Some(true),
        containers: containers.clone(),
        replaced: vec![plan::KUBE_PROXY.into()],
        sweep_image: IMAGE.into(),
        settle: Duration::ZERO,
    };
    let done = prepare_host(host, &restart).await.unwrap();
    assert_eq!(done.service_changes, ["restarted"]);
    assert_eq!(done.sweep.stopped, ["rancher-wins-kubelet"]);
    // kube-proxy is left stopped: the worker plane recreates it.
    assert_eq!(
        done.restarted_containers,
        [plan::SERVICE_SIDEKICK, plan::NGINX_PROXY, plan::KUBELET]
    );
    assert_eq!(env.win.service()["restarts"], 1);

    let calls: Vec<String> = env.win.docker.container_calls()[calls_before..].to_vec();
    let position = |wanted: &str| {
        calls
            .iter()
            .position(|c| c == wanted)
            .unwrap_or_else(|| panic!("{wanted} missing: {calls:#?}"))
    };
    let last_stop = containers
        .iter()
        .map(|n| position(&format!("POST /containers/{n}/stop")))
        .max()
        .unwrap();
    let sweep = position(&format!("POST /containers/{SWEEP_CONTAINER}/start"));
    let first_start = position(&format!(
        "POST /containers/{}/start",
        plan::SERVICE_SIDEKICK
    ));
    assert!(last_stop < sweep && sweep < first_start, "{calls:#?}");
    assert!(!calls.contains(&format!("POST /containers/{}/start", plan::KUBE_PROXY)));
    let kube_proxy = host
        .docker()
        .inspect_container(plan::KUBE_PROXY)
        .await
        .unwrap()
        .unwrap();
    assert!(!kube_proxy.running);
}
