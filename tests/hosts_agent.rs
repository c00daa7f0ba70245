//! ssh-agent authentication against a local sshd, with a passphrase-protected key held by a
//! real ssh-agent. A separate test binary because SSH_AUTH_SOCK is process-wide.
// Tests hold a serialising std mutex across awaits on purpose (each runs on its own runtime).
#![allow(clippy::await_holding_lock)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rkers::hosts::{HostPool, SshAuth, SshOptions, SshTarget};
use support::{LocalSshd, SshdOptions};

struct Agent {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts ssh-agent on a private socket and points SSH_AUTH_SOCK at it.
fn start_agent() -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let child = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: this test binary runs its tests one at a time (SERIAL) and sets the variable
    // before any thread reads it.
    unsafe { std::env::set_var("SSH_AUTH_SOCK", &sock) };
    Agent { child, _dir: dir }
}

/// ssh-add with the passphrase supplied through SSH_ASKPASS (no terminal needed).
fn ssh_add(key: &Path, passphrase: &str, dir: &Path) {
    let askpass = dir.join("askpass.sh");
    std::fs::write(&askpass, format!("#!/bin/sh\necho '{passphrase}'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    support::run(
        Command::new("ssh-add")
            .arg(key)
            .env("SSH_ASKPASS", &askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", ":0")
            .stdin(Stdio::null()),
    );
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn setup() -> Option<(
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    &'static str,
)> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(r) =
        support::require_root_and(&["/usr/sbin/sshd", "ssh-agent", "ssh-add", "ssh-keygen"])
    {
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
    Some((guard, tempfile::tempdir().unwrap(), socket))
}

fn options(dir: &Path) -> SshOptions {
    SshOptions {
        known_hosts_path: Some(dir.join("known_hosts")),
        ssh_config_enabled: false,
        retries: 0,
        ..Default::default()
    }
}

fn target(sshd: &LocalSshd, socket: &str, auth: SshAuth) -> SshTarget {
    SshTarget {
        name: "agent-node".into(),
        address: "127.0.0.1".into(),
        port: Some(sshd.port),
        user: "root".into(),
        auth,
        docker_socket: socket.into(),
        bastion: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_holds_passphrase_protected_key() {
    let Some((_g, dir, socket)) = setup() else {
        return;
    };
    let _agent = start_agent();
    let key = support::keygen(dir.path(), "enc_ed25519", "ed25519", "correct horse");
    ssh_add(&key, "correct horse", dir.path());
    let sshd = LocalSshd::start(SshdOptions::default());
    sshd.authorize(&key);

    // ssh_agent_auth: true, no key configured at all.
    let t = target(
        &sshd,
        socket,
        SshAuth {
            agent_auth: true,
            ..Default::default()
        },
    );
    let pool = HostPool::connect(&[t], &options(dir.path())).await.unwrap();
    let h = pool.hosts().next().unwrap();
    assert!(
        h.ssh()
            .expect("an SSH host")
            .auth_method()
            .starts_with("ssh-agent key ssh-ed25519"),
        "{}",
        h.ssh().expect("an SSH host").auth_method()
    );
    h.docker().ping().await.unwrap();

    // The encrypted key file is configured and no passphrase is available, but SSH_AUTH_SOCK
    // is set: the agent is used without asking (spec §32 pain point 20).
    let t = target(
        &sshd,
        socket,
        SshAuth {
            ssh_key_path: Some(key.clone()),
            ..Default::default()
        },
    );
    let pool = HostPool::connect(&[t], &options(dir.path())).await.unwrap();
    assert!(
        pool.hosts()
            .next()
            .unwrap()
            .ssh()
            .expect("an SSH host")
            .auth_method()
            .starts_with("ssh-agent")
    );

    // A missing key file does not matter either when the agent has the key (RKE1 #734).
    let t = target(
        &sshd,
        socket,
        SshAuth {
            ssh_key_path: Some("/nonexistent/key".into()),
            agent_auth: true,
            ..Default::default()
        },
    );
    HostPool::connect(&[t], &options(dir.path())).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_agent_and_wrong_key_list_every_method_tried() {
    let Some((_g, dir, socket)) = setup() else {
        return;
    };
    let _agent = start_agent();
    let authorized = support::keygen(dir.path(), "authorized", "ed25519", "");
    let wrong = support::keygen(dir.path(), "wrong", "ecdsa", "");
    let sshd = LocalSshd::start(SshdOptions::default());
    sshd.authorize(&authorized);
    let t = target(
        &sshd,
        socket,
        SshAuth {
            ssh_key_path: Some(wrong),
            agent_auth: true,
            ..Default::default()
        },
    );
    let problems = match HostPool::connect(&[t], &options(dir.path())).await {
        Ok(_) => panic!("must fail"),
        Err(p) => p,
    };
    let msg = problems.0[0].to_string();
    assert_eq!(problems.0[0].kind(), "auth-failed");
    assert!(msg.contains("ssh-agent: holds no keys"), "{msg}");
    assert!(
        msg.contains("publickey ecdsa-sha2-nistp256 SHA256:"),
        "{msg}"
    );
    // An encrypted key left to an agent that does not hold it is named too.
    let enc = support::keygen(dir.path(), "enc", "ed25519", "pw");
    let t = target(
        &sshd,
        socket,
        SshAuth {
            ssh_key_path: Some(enc.clone()),
            ..Default::default()
        },
    );
    let problems = match HostPool::connect(&[t], &options(dir.path())).await {
        Ok(_) => panic!("must fail"),
        Err(p) => p,
    };
    let msg = problems.0[0].to_string();
    assert!(
        msg.contains(&format!(
            "key {}: passphrase-protected, left to the agent",
            enc.display()
        )),
        "{msg}"
    );
}
