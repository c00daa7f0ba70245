//! The Docker transport choice per host on the sandbox, with real sshd and dockerd: a normal
//! host (stream-local forwarding), a host whose sshd announces itself as Win32-OpenSSH
//! (dial-stdio chosen up front, without trying to forward), and a host whose sshd refuses
//! stream-local forwarding (dial-stdio after the refusal); then `rkers preflight` shows the
//! transport per host in its table and JSON. Needs no cluster: it uses extra sshd instances
//! on other ports inside the sandbox hosts and leaves the hosts as they were.

mod support;

use std::time::Duration;

use rkers::hosts::{
    DockerTransport, HostKeyPolicy, HostPool, SshAuth, SshOptions, SshTarget, TransportReason,
};
use support::{Sandbox, SandboxSshd};

/// What Win32-OpenSSH puts in its identification string; sshd's `VersionAddendum` lets a Linux
/// sshd announce the same.
const WINDOWS_BANNER: &str = "OpenSSH_for_Windows_8.1";

fn target(sb: &Sandbox, name: &str, address: &str, port: u16) -> SshTarget {
    SshTarget {
        name: name.into(),
        address: address.into(),
        port: Some(port),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(sb.dir.join("ssh/id_ed25519")),
            ..Default::default()
        },
        docker_socket: "/var/run/docker.sock".into(),
        bastion: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_per_host_and_in_preflight() {
    let sb = match Sandbox::find() {
        Ok(s) if s.node_addresses().len() >= 2 => s,
        Ok(_) => return support::skip("needs 2 sandbox hosts"),
        Err(r) => return support::skip(&r),
    };
    let addrs = sb.node_addresses();
    let _windows_like = match SandboxSshd::start_with(
        &sb,
        "host2",
        &addrs[1],
        2223,
        true,
        &format!("VersionAddendum {WINDOWS_BANNER}\\n"),
    ) {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    let _refusing = SandboxSshd::start(&sb, "host1", &addrs[0], 2222, false).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let kh = tempfile::tempdir().unwrap();
    let opts = SshOptions {
        known_hosts_path: Some(kh.path().join("known_hosts")),
        host_key_policy: HostKeyPolicy::AcceptNew,
        connect_timeout: Duration::from_secs(10),
        retries: 1,
        ssh_config_enabled: false,
        ..Default::default()
    };
    let targets = [
        target(&sb, "normal", &addrs[0], 22),
        target(&sb, "windows-like", &addrs[1], 2223),
        target(&sb, "refusing", &addrs[0], 2222),
    ];
    let pool = HostPool::connect(&targets, &opts)
        .await
        .expect("all connect");
    let choice = |name: &str| {
        let f = pool.get(name).unwrap().facts();
        (f.transport, f.transport_reason)
    };
    assert_eq!(
        choice("normal"),
        (
            DockerTransport::StreamLocal,
            TransportReason::SocketForwarded
        )
    );
    assert_eq!(
        choice("windows-like"),
        (
            DockerTransport::DialStdio,
            TransportReason::WindowsSshServer
        )
    );
    assert_eq!(
        choice("refusing"),
        (
            DockerTransport::DialStdio,
            TransportReason::ForwardingRefused
        )
    );
    let win = pool.get("windows-like").unwrap();
    assert!(
        win.ssh()
            .expect("an SSH host")
            .server_id()
            .contains(WINDOWS_BANNER),
        "{}",
        win.ssh().expect("an SSH host").server_id()
    );
    assert!(win.ssh().expect("an SSH host").is_windows_openssh());
    assert!(
        !pool
            .get("normal")
            .unwrap()
            .ssh()
            .expect("an SSH host")
            .is_windows_openssh()
    );
    // Chosen up front, not after a refusal: nothing to warn about.
    assert!(win.docker().transport_note().is_none());
    assert!(
        pool.get("refusing")
            .unwrap()
            .docker()
            .transport_note()
            .is_some()
    );

    // The dial-stdio transport carries every request on its own exec channel, in parallel too.
    let docker = win.docker();
    let versions = futures::future::join_all((0..8).map(|_| docker.version())).await;
    for v in versions {
        assert!(v.unwrap().version.is_some());
    }
    assert!(
        docker
            .inspect_container("rkers-no-such-container")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(win.facts().os_type, "linux");
    pool.close().await;

    // `rkers preflight`: TRANSPORT column and per-host JSON fields.
    let dir = tempfile::tempdir().unwrap();
    let yml = dir.path().join("cluster.yml");
    let key = sb.dir.join("ssh/id_ed25519");
    let k8s = sb
        .scalar("kubernetes_version")
        .unwrap_or_else(|| "v1.20.15-rancher2-2".into());
    std::fs::write(
        &yml,
        format!(
            "nodes:\n\
             - address: {a1}\n  port: \"22\"\n  user: root\n  role: [controlplane, etcd, worker]\n\
             - address: {a2}\n  port: \"2223\"\n  user: root\n  role: [worker]\n\
             ssh_key_path: {key}\nkubernetes_version: {k8s}\nignore_docker_version: true\n",
            a1 = addrs[0],
            a2 = addrs[1],
            key = key.display()
        ),
    )
    .unwrap();
    let known_hosts = dir.path().join("known_hosts");
    let preflight = |output: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["--output", output, "preflight", "--disable-port-check"])
            .arg("--config")
            .arg(&yml)
            .arg("--known-hosts")
            .arg(&known_hosts)
            .env("HOME", dir.path())
            .output()
            .unwrap()
    };
    let out = preflight("json");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json_line = stdout
        .lines()
        .find(|l| l.contains("\"hosts\""))
        .unwrap_or_else(|| panic!("no report in: {stdout}\n{stderr}"));
    let report: serde_json::Value = serde_json::from_str(json_line).unwrap();
    let host = |address: &str| {
        report["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == address)
            .unwrap_or_else(|| panic!("{address} not in {report}"))
            .clone()
    };
    let normal = host(&addrs[0]);
    assert_eq!(normal["docker"]["transport"], "stream-local", "{normal}");
    // The Docker API check: the sandbox's Docker 20.10 (API 1.12-1.41) and the v1.20 kubelet's
    // dockershim (1.40) meet at 1.40, read from the daemon's own `docker version`.
    let check = &normal["docker"]["api_check"];
    assert_eq!(check["verdict"], "works", "{normal}");
    assert_eq!(check["runtime"], "kubelet v1.20's dockershim", "{normal}");
    assert_eq!(check["engine_api"], "1.41", "{normal}");
    assert_eq!(check["engine_min_api"], "1.12", "{normal}");
    assert_eq!(check["spoken_api"], "1.40", "{normal}");
    assert_eq!(normal["docker"]["engine_api_version"], "1.41", "{normal}");
    assert_eq!(normal["docker"]["transport_reason"], "socket-forwarded");
    let windows = host(&addrs[1]);
    assert_eq!(windows["docker"]["transport"], "dial-stdio", "{windows}");
    assert_eq!(windows["docker"]["transport_reason"], "windows-ssh-server");
    assert!(
        windows["ssh"]["server_id"]
            .as_str()
            .unwrap()
            .contains(WINDOWS_BANNER)
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");

    let out = preflight("text");
    let table = String::from_utf8_lossy(&out.stdout);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("TRANSPORT"), "{table}");
    let column = header.find("TRANSPORT").unwrap();
    let cell = |address: &str| {
        let row = table
            .lines()
            .find(|l| l.starts_with(address))
            .unwrap_or_else(|| panic!("{address} not in {table}"));
        row[column..].split_whitespace().next().unwrap().to_owned()
    };
    assert_eq!(cell(&addrs[0]), "stream-local", "{table}");
    assert_eq!(cell(&addrs[1]), "dial-stdio", "{table}");
    assert!(
        table.contains(&format!(
            "Docker API {}: kubelet v1.20's dockershim speaks ≤ 1.40: works at 1.40",
            addrs[0]
        )),
        "{table}"
    );
}
