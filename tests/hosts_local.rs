//! Node access against real local components: our own sshd instances on 127.0.0.1 and our
//! own dockerd (tests/support). Needs root; skips with a printed reason otherwise.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rkers::hosts::docker::DockerTransport;
use rkers::hosts::{
    BastionTarget, ContainerSpec, HostKeyVerdict, HostPool, SshAuth, SshOptions, SshTarget,
    UploadOptions,
};
use support::{LocalSshd, SshdOptions, TEST_IMAGE};

struct Env {
    dir: tempfile::TempDir,
    key: PathBuf,
    socket: &'static str,
}

fn env() -> Option<Env> {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen"]) {
        support::skip(&r);
        return None;
    }
    let socket = match support::local_dockerd() {
        Ok(s) => s,
        Err(r) => {
            support::skip(&r);
            return None;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let key = support::keygen(dir.path(), "id_ed25519", "ed25519", "");
    Some(Env { dir, key, socket })
}

fn options(dir: &Path) -> SshOptions {
    SshOptions {
        known_hosts_path: Some(dir.join("known_hosts")),
        connect_timeout: Duration::from_secs(10),
        retries: 0,
        ssh_config_enabled: false,
        ..Default::default()
    }
}

fn target(name: &str, sshd: &LocalSshd, key: &Path, socket: &str) -> SshTarget {
    SshTarget {
        name: name.into(),
        address: "127.0.0.1".into(),
        port: Some(sshd.port),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(key.to_owned()),
            ..Default::default()
        },
        docker_socket: socket.into(),
        bastion: None,
    }
}

fn sshd_with(key: &Path, opts: SshdOptions) -> LocalSshd {
    let s = LocalSshd::start(opts);
    s.authorize(key);
    s
}

async fn connect_one(
    t: SshTarget,
    o: &SshOptions,
) -> Result<Arc<rkers::hosts::Host>, rkers::hosts::HostError> {
    let mut attempts = HostPool::connect_each(&[t], o).await;
    let a = attempts.remove(0);
    if let Some(e) = a.error {
        return Err(e);
    }
    let pool = HostPool::from_attempts(vec![a], 1).await.unwrap();
    Ok(pool.hosts().next().unwrap().clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hosts_one_ssh_connection_each_for_everything() {
    let Some(env) = env() else { return };
    let sshds: Vec<LocalSshd> = (0..3)
        .map(|_| sshd_with(&env.key, SshdOptions::default()))
        .collect();
    let targets: Vec<SshTarget> = sshds
        .iter()
        .enumerate()
        .map(|(i, s)| target(&format!("node{i}"), s, &env.key, env.socket))
        .collect();
    let opts = options(env.dir.path());
    let pool = HostPool::connect(&targets, &opts)
        .await
        .expect("all hosts connect");
    assert_eq!(pool.len(), 3);
    for h in pool.hosts() {
        assert_eq!(
            h.ssh().expect("an SSH host").host_key_verdict(),
            &HostKeyVerdict::Recorded
        );
        assert!(
            h.ssh()
                .expect("an SSH host")
                .auth_method()
                .contains("ssh-ed25519"),
            "{}",
            h.ssh().expect("an SSH host").auth_method()
        );
        let f = h.facts();
        assert_eq!(f.os_type, "linux");
        assert!(!f.docker_version.is_empty() && !f.kernel.is_empty());
        assert!(
            f.cgroup_driver == "cgroupfs" || f.cgroup_driver == "systemd",
            "{f:?}"
        );
        assert!(f.api_version.starts_with("1."), "{f:?}");
        assert_eq!(f.transport, DockerTransport::StreamLocal);
        assert_eq!(f.docker_root_dir, "/var/lib/rkers-test-docker");
    }
    // 100 Docker calls per host, concurrently, plus exec and direct-tcpip channels.
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let other_port = sshds[0].port;
    let results = pool
        .for_each(&names, |h| async move {
            let calls = (0..100).map(|i| {
                let d = h.docker().clone();
                async move {
                    if i % 2 == 0 {
                        d.ping().await
                    } else {
                        d.info().await.map(|_| ())
                    }
                }
            });
            for r in futures::future::join_all(calls).await {
                r?;
            }
            let out = h
                .ssh()
                .expect("an SSH host")
                .exec("echo hello; echo err >&2; exit 3")
                .await?;
            assert_eq!(out.stdout_str(), "hello\n");
            assert_eq!(out.exit_status, Some(3));
            let mut s = h
                .ssh()
                .expect("an SSH host")
                .open_tcp("127.0.0.1", other_port)
                .await?;
            let mut banner = [0u8; 8];
            tokio::io::AsyncReadExt::read_exact(&mut s, &mut banner)
                .await
                .unwrap();
            assert_eq!(&banner, b"SSH-2.0-");
            Ok(())
        })
        .await;
    for (n, r) in results {
        r.unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    for (i, s) in sshds.iter().enumerate() {
        // The direct-tcpip probe to sshds[0] does not authenticate, so it is not counted.
        assert_eq!(
            s.accepted_connections(),
            1,
            "sshd {i} log:\n{}",
            s.log_text()
        );
    }
    pool.close().await;
    // Second run: keys are now known.
    let pool = HostPool::connect(&targets, &opts).await.unwrap();
    for h in pool.hosts() {
        assert_eq!(
            h.ssh().expect("an SSH host").host_key_verdict(),
            &HostKeyVerdict::Known
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_run_inspect_rename_and_remove() {
    let Some(env) = env() else { return };
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let host = connect_one(
        target("n", &sshd, &env.key, env.socket),
        &options(env.dir.path()),
    )
    .await
    .unwrap();
    let d = host.docker();
    let name = format!("rkers-test-c-{}", std::process::id());
    let spec = ContainerSpec {
        image: TEST_IMAGE.into(),
        cmd: vec!["sleep".into(), "60".into()],
        env: vec!["A=b".into()],
        labels: [("io.rancher.rke.container.name".to_owned(), name.clone())].into(),
        binds: vec!["/tmp:/hosttmp:ro".into()],
        ..Default::default()
    };
    d.remove_container(&name).await.unwrap();
    assert!(d.inspect_container(&name).await.unwrap().is_none());
    d.create_container(&name, &spec).await.unwrap();
    d.start_container(&name).await.unwrap();
    let c = d.inspect_container(&name).await.unwrap().unwrap();
    assert!(c.running);
    assert_eq!(c.name, name);
    assert_eq!(c.image, TEST_IMAGE);
    assert_eq!(c.cmd, vec!["sleep", "60"]);
    assert!(c.env.contains(&"A=b".to_owned()));
    assert_eq!(c.binds, vec!["/tmp:/hosttmp:ro"]);
    assert_eq!(c.labels["io.rancher.rke.container.name"], name);
    d.stop_container(&name).await.unwrap();
    let old = format!("old-{name}");
    d.remove_container(&old).await.unwrap();
    d.rename_container(&name, &old).await.unwrap();
    assert!(d.inspect_container(&name).await.unwrap().is_none());
    let c = d.inspect_container(&old).await.unwrap().unwrap();
    assert!(!c.running);
    d.remove_container(&old).await.unwrap();
    assert!(d.inspect_container(&old).await.unwrap().is_none());

    // One-shot: a stale container of the same name (as after a crash) is replaced.
    let shot = format!("rkers-test-shot-{}", std::process::id());
    d.create_container(&shot, &spec).await.unwrap();
    let spec = ContainerSpec {
        image: TEST_IMAGE.into(),
        cmd: vec![
            "sh".into(),
            "-c".into(),
            "echo line1; echo line2 >&2; exit 7".into(),
        ],
        ..Default::default()
    };
    let r = d
        .run_one_shot(&shot, &spec, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(r.exit_code, 7);
    assert!(
        r.logs.contains("line1") && r.logs.contains("line2"),
        "{:?}",
        r.logs
    );
    assert!(
        d.inspect_container(&shot).await.unwrap().is_none(),
        "one-shot container removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_is_byte_exact_with_mode() {
    let Some(env) = env() else { return };
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let host = connect_one(
        target("n", &sshd, &env.key, env.socket),
        &options(env.dir.path()),
    )
    .await
    .unwrap();
    // The local dockerd runs on this machine, so the "host path" is a local path.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/encryption.yaml");
    let mut content = b"secret: \"a\\nb\\tc\\\\d\"\n$HOME `x` %s \x00\x01\xfe\xff\n".to_vec();
    content.extend((0..=255u8).cycle().take(100_000));
    let mut opts = UploadOptions::new(TEST_IMAGE);
    opts.mode = 0o640;
    host.docker()
        .upload_file(path.to_str().unwrap(), &content, &opts)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), content);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640
    );
    // Overwrite with shorter content.
    host.docker()
        .upload_file(path.to_str().unwrap(), b"\\x41", &opts)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\\x41");
    let err = host
        .docker()
        .upload_file("relative/path", b"x", &opts)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not an absolute file path"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bastion_carries_every_node_over_one_connection() {
    let Some(env) = env() else { return };
    let bastion = sshd_with(&env.key, SshdOptions::default());
    let nodes: Vec<LocalSshd> = (0..3)
        .map(|_| sshd_with(&env.key, SshdOptions::default()))
        .collect();
    let b = BastionTarget {
        address: "127.0.0.1".into(),
        port: Some(bastion.port),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(env.key.clone()),
            ..Default::default()
        },
    };
    let targets: Vec<SshTarget> = nodes
        .iter()
        .enumerate()
        .map(|(i, s)| SshTarget {
            bastion: Some(b.clone()),
            ..target(&format!("n{i}"), s, &env.key, env.socket)
        })
        .collect();
    let pool = HostPool::connect(&targets, &options(env.dir.path()))
        .await
        .unwrap();
    for h in pool.hosts() {
        assert_eq!(
            h.ssh().expect("an SSH host").via_bastion(),
            Some(format!("127.0.0.1:{}", bastion.port).as_str())
        );
        h.docker().ping().await.unwrap();
    }
    assert_eq!(bastion.accepted_connections(), 1, "{}", bastion.log_text());
    for n in &nodes {
        assert_eq!(n.accepted_connections(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_certificate_authenticates() {
    let Some(env) = env() else { return };
    let ca = support::keygen(env.dir.path(), "ca", "ed25519", "");
    let user = support::keygen(env.dir.path(), "user", "ed25519", "");
    support::run(
        std::process::Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(&ca)
            .args(["-I", "rkers-test", "-n", "root", "-V", "+1h"])
            .arg(user.with_extension("pub")),
    );
    // sshd trusts the CA only; the user's plain key is not authorized.
    let sshd = LocalSshd::start(SshdOptions {
        trusted_user_ca: Some(ca.with_extension("pub")),
        ..Default::default()
    });
    let mut t = target("n", &sshd, &user, env.socket);
    t.auth.ssh_cert_path = Some(env.dir.path().join("user-cert.pub"));
    let host = connect_one(t.clone(), &options(env.dir.path()))
        .await
        .unwrap();
    assert!(
        host.ssh()
            .expect("an SSH host")
            .auth_method()
            .contains("with certificate"),
        "{}",
        host.ssh().expect("an SSH host").auth_method()
    );
    // Inline certificate works the same way.
    t.auth.ssh_cert_path = None;
    t.auth.ssh_cert = Some(std::fs::read_to_string(env.dir.path().join("user-cert.pub")).unwrap());
    connect_one(t.clone(), &options(env.dir.path()))
        .await
        .unwrap();
    // Without the certificate the key is refused.
    t.auth.ssh_cert = None;
    let err = connect_one(t, &options(env.dir.path())).await.unwrap_err();
    assert_eq!(err.kind(), "auth-failed", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_config_alias_supplies_hostname_port_user_and_key() {
    let Some(env) = env() else { return };
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let cfg = env.dir.path().join("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host rkers-alias-*\n  HostName 127.0.0.1\n  Port {}\n  User root\n  IdentityFile {}\n",
            sshd.port,
            env.key.display()
        ),
    )
    .unwrap();
    let mut opts = options(env.dir.path());
    opts.ssh_config_enabled = true;
    opts.ssh_config_path = Some(cfg);
    let t = SshTarget {
        name: "aliased".into(),
        address: "rkers-alias-one".into(),
        port: None,
        user: String::new(),
        auth: SshAuth::default(),
        docker_socket: env.socket.into(),
        bastion: None,
    };
    let host = connect_one(t, &opts).await.unwrap();
    assert_eq!(
        host.ssh().expect("an SSH host").addr(),
        format!("127.0.0.1:{}", sshd.port)
    );
    assert_eq!(host.ssh().expect("an SSH host").user(), "root");
}

// ---- every error of the issue, provoked for real -------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_sshd_stopped_is_connection_refused_and_all_hosts_are_listed() {
    let Some(env) = env() else { return };
    let good = sshd_with(&env.key, SshdOptions::default());
    let mut stopped = sshd_with(&env.key, SshdOptions::default());
    stopped.stop();
    let mut wrong_key_host = target("wrong-key", &good, &env.key, env.socket);
    wrong_key_host.auth.ssh_key_path =
        Some(support::keygen(env.dir.path(), "other", "ed25519", ""));
    let targets = vec![
        target("good", &good, &env.key, env.socket),
        target("stopped", &stopped, &env.key, env.socket),
        wrong_key_host,
    ];
    let problems = match HostPool::connect(&targets, &options(env.dir.path())).await {
        Ok(_) => panic!("must fail"),
        Err(p) => p,
    };
    assert_eq!(problems.0.len(), 2, "{problems}");
    let text = problems.to_string();
    assert!(text.contains("nothing was changed"), "{text}");
    let refused = &problems.0[0];
    assert_eq!(refused.kind(), "connection-refused");
    assert!(
        refused
            .to_string()
            .starts_with("host stopped: connection refused by 127.0.0.1:"),
        "{refused}"
    );
    let auth = &problems.0[1];
    assert_eq!(auth.kind(), "auth-failed");
    let msg = auth.to_string();
    assert!(
        msg.starts_with("host wrong-key: SSH authentication as user \"root\" failed"),
        "{msg}"
    );
    assert!(
        msg.contains("publickey ssh-ed25519 SHA256:") && msg.contains("rejected"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_silent_server_is_no_banner_and_not_retried() {
    let Some(env) = env() else { return };
    // A listener that never speaks SSH: TCP connects, no banner follows. Such a server will
    // not start speaking on a retry, so it is reported once, after the banner bound (here the
    // shorter connect timeout).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut opts = options(env.dir.path());
    opts.connect_timeout = Duration::from_millis(800);
    opts.retries = 1;
    let t = SshTarget {
        port: Some(port),
        ..SshTarget::new("127.0.0.1", "root")
    };
    let mut t = t;
    t.name = "silent".into();
    t.auth.ssh_key_path = Some(env.key.clone());
    let started = std::time::Instant::now();
    let err = connect_one(t, &opts).await.unwrap_err();
    assert_eq!(err.kind(), "no-banner", "{err}");
    assert!(
        err.to_string().contains(&format!(
            "host silent: 127.0.0.1:{port} accepted the TCP connection but sent no SSH banner"
        )),
        "{err}"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_host_key_changed_names_both_fingerprints() {
    let Some(env) = env() else { return };
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let opts = options(env.dir.path());
    let t = target("n", &sshd, &env.key, env.socket);
    connect_one(t.clone(), &opts).await.unwrap();
    let recorded = std::fs::read_to_string(env.dir.path().join("known_hosts")).unwrap();
    assert!(
        recorded.starts_with(&format!("[127.0.0.1]:{} ssh-ed25519 ", sshd.port)),
        "{recorded}"
    );
    // Same address and port, new host key: the host was "reinstalled".
    let old_fp = fingerprint(&sshd.host_key);
    let port = sshd.port;
    drop(sshd);
    let new_key = support::keygen(env.dir.path(), "new_host_key", "ed25519", "");
    let sshd2 = start_on_port(port, &new_key, &env.key);
    let err = connect_one(t.clone(), &opts).await.unwrap_err();
    assert_eq!(err.kind(), "host-key-changed");
    let msg = err.to_string();
    assert!(
        msg.contains("HOST KEY CHANGED")
            && msg.contains(&old_fp)
            && msg.contains(&fingerprint(&new_key)),
        "{msg}\nold {old_fp}"
    );
    assert!(msg.contains("known_hosts:1"), "{msg}");
    // strict refuses unknown keys; insecure accepts anything without recording.
    let mut strict = options(tempfile::tempdir().unwrap().path());
    strict.host_key_policy = rkers::hosts::HostKeyPolicy::Strict;
    let err = connect_one(t.clone(), &strict).await.unwrap_err();
    assert_eq!(err.kind(), "host-key-unknown", "{err}");
    let mut insecure = opts.clone();
    insecure.host_key_policy = rkers::hosts::HostKeyPolicy::Insecure;
    let h = connect_one(t, &insecure).await.unwrap();
    assert_eq!(
        h.ssh().expect("an SSH host").host_key_verdict(),
        &HostKeyVerdict::NotChecked
    );
    drop(sshd2);
}

fn fingerprint(private: &Path) -> String {
    let out = support::run(
        std::process::Command::new("ssh-keygen")
            .arg("-lf")
            .arg(private.with_extension("pub")),
    );
    out.split_whitespace().nth(1).unwrap().to_owned()
}

fn start_on_port(port: u16, host_key: &Path, user_key: &Path) -> LocalSshd {
    let s = LocalSshd::start_with(
        SshdOptions::default(),
        Some(host_key.to_owned()),
        Some(port),
    );
    s.authorize(user_key);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_stream_local_refused_falls_back_to_dial_stdio() {
    let Some(env) = env() else { return };
    for opts in [
        SshdOptions {
            stream_local_forwarding: false,
            ..Default::default()
        },
        SshdOptions {
            disable_forwarding: true,
            ..Default::default()
        },
    ] {
        let sshd = sshd_with(&env.key, opts.clone());
        let host = connect_one(
            target("nofwd", &sshd, &env.key, env.socket),
            &options(env.dir.path()),
        )
        .await
        .unwrap_or_else(|e| panic!("{opts:?}: {e}"));
        assert_eq!(host.facts().transport, DockerTransport::DialStdio);
        assert_eq!(host.docker().transport(), DockerTransport::DialStdio);
        let note = host.docker().transport_note().unwrap();
        assert!(
            note.contains("AllowStreamLocalForwarding") && note.contains("DisableForwarding"),
            "{note}"
        );
        // Real work over the fallback: a container round trip.
        let r = host
            .docker()
            .run_one_shot(
                "rkers-test-dialstdio",
                &ContainerSpec {
                    image: TEST_IMAGE.into(),
                    cmd: vec!["echo".into(), "via-dial-stdio".into()],
                    ..Default::default()
                },
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert_eq!(r.exit_code, 0);
        assert!(r.logs.contains("via-dial-stdio"));
        assert_eq!(sshd.accepted_connections(), 1);
    }
    // Forwarding refused and the daemon dead (stale socket): not answering, not a fallback.
    let sshd = sshd_with(
        &env.key,
        SshdOptions {
            stream_local_forwarding: false,
            ..Default::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("docker.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let err = connect_one(
        target("nofwd", &sshd, &env.key, stale.to_str().unwrap()),
        &options(env.dir.path()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "docker-not-answering", "{err}");
    assert!(err.to_string().contains("is dockerd running"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_docker_socket_missing_and_not_answering() {
    let Some(env) = env() else { return };
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let err = connect_one(
        target("n", &sshd, &env.key, "/run/rkers-no-such.sock"),
        &options(env.dir.path()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "docker-socket-missing", "{err}");
    assert!(
        err.to_string()
            .starts_with("host n: Docker socket /run/rkers-no-such.sock does not exist"),
        "{err}"
    );
    // A socket file nobody listens on: what a crashed dockerd leaves behind.
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("docker.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let err = connect_one(
        target("n", &sshd, &env.key, stale.to_str().unwrap()),
        &options(env.dir.path()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "docker-not-answering", "{err}");
    assert!(err.to_string().contains("is dockerd running"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_docker_permission_denied_names_the_docker_group() {
    let Some(env) = env() else { return };
    let user = support::unprivileged_user();
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let mut t = target("n", &sshd, &env.key, env.socket);
    t.user = user.into();
    let err = connect_one(t, &options(env.dir.path())).await.unwrap_err();
    assert_eq!(err.kind(), "docker-permission-denied", "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("docker group") && msg.contains(&format!("usermod -aG docker {user}")),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_dockerd_stopped_after_it_ran() {
    let Some(env) = env() else { return };
    // A dockerd of this test's own, so stopping it disturbs nobody.
    let root = "/run/rkers-test-docker-stop";
    let socket = format!("{root}/docker.sock");
    std::fs::create_dir_all(root).unwrap();
    let mut dockerd = std::process::Command::new("dockerd")
        .args([
            "--data-root=/var/lib/rkers-test-docker-stop".to_owned(),
            format!("--exec-root={root}/exec"),
            format!("--pidfile={root}/docker.pid"),
            format!("--host=unix://{socket}"),
            "--containerd-namespace=rkers-test-stop".into(),
            "--containerd-plugins-namespace=rkers-test-stop-plugins".into(),
            "--bridge=none".into(),
            "--iptables=false".into(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sshd = sshd_with(&env.key, SshdOptions::default());
    let t = target("n", &sshd, &env.key, &socket);
    let opts = options(env.dir.path());
    let mut up = None;
    for _ in 0..100 {
        if let Ok(h) = connect_one(t.clone(), &opts).await {
            up = Some(h);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let host = up.expect("connects while dockerd runs");
    host.docker().ping().await.unwrap();
    // Stop dockerd the way systemctl does.
    let pid = dockerd.id().to_string();
    support::run(std::process::Command::new("kill").args(["-TERM", &pid]));
    dockerd.wait().unwrap();
    let err = host.docker().ping().await.unwrap_err();
    assert!(err.to_string().starts_with("host n: Docker"), "{err}");
    let err = connect_one(t, &opts).await.unwrap_err();
    assert!(
        matches!(err.kind(), "docker-socket-missing" | "docker-not-answering"),
        "{}: {err}",
        err.kind()
    );
    assert!(err.to_string().contains(&socket), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_reports_each_host_and_the_docker_api_check() {
    let Some(env) = env() else { return };
    let good = sshd_with(&env.key, SshdOptions::default());
    let other = sshd_with(&env.key, SshdOptions::default());
    let targets = vec![
        target("good", &good, &env.key, env.socket),
        target("nosock", &other, &env.key, "/run/rkers-no-such.sock"),
    ];
    use rkers::hosts::preflight::{self, PreflightOptions};
    use rkers::metadata::docker_api::RuntimeClient;
    let popts = PreflightOptions {
        runtime: Some(RuntimeClient {
            kubernetes_version: "v1.20.15-rancher2-2".into(),
            cri_dockerd: false,
            tools_image: "rancher/rke-tools:v0.1.89".into(),
        }),
        ..Default::default()
    };
    let (report, pool) = preflight::run(&targets, &options(env.dir.path()), &popts).await;
    assert!(pool.is_none());
    assert!(!report.ok());
    let g = &report.hosts[0];
    assert!(g.ok(), "{g:?}");
    assert!(g.ssh.method.as_deref().unwrap().contains("ssh-ed25519"));
    let n = &report.hosts[1];
    assert!(n.ssh.ok);
    assert_eq!(n.problem_kind.as_deref(), Some("docker-socket-missing"));
    let table = report.render_table();
    assert!(table.lines().next().unwrap().starts_with("HOST"), "{table}");
    assert!(
        table.contains("PROBLEM host nosock: Docker socket"),
        "{table}"
    );
    assert!(
        table.contains("skipped (not every host is usable)"),
        "{table}"
    );
    // This machine's Docker serves the API kubelet v1.20's dockershim speaks.
    let json = report.to_json();
    assert_eq!(json["hosts"][1]["problem_kind"], "docker-socket-missing");
    let check = &json["hosts"][0]["docker"]["api_check"];
    assert_eq!(check["verdict"], "works", "{json}");
    assert_eq!(check["runtime"], "kubelet v1.20's dockershim");
    assert_eq!(check["runtime_api"], "1.40");
    assert!(
        table.contains("Docker API good: kubelet v1.20's dockershim speaks ≤ 1.40: works at "),
        "{table}"
    );
    // Without a runtime nothing is checked, and the host is usable.
    let (report, pool) = preflight::run(
        &targets[..1],
        &options(env.dir.path()),
        &PreflightOptions::default(),
    )
    .await;
    assert!(report.ok(), "{}", report.render_table());
    assert_eq!(pool.unwrap().len(), 1);
    assert!(report.to_json()["hosts"][0]["docker"]["api_check"].is_null());
}
