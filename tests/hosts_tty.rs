//! Passphrase prompt on a terminal: the test runs its own child (an ignored test) under
//! `script`, which gives it a pseudo-terminal, and types the passphrase when asked. Two
//! hosts share the key, so the prompt must appear exactly once.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rkers::hosts::{HostPool, SshAuth, SshOptions, SshTarget};
use support::{LocalSshd, SshdOptions};

const PASSPHRASE: &str = "tty pass phrase";

#[test]
fn passphrase_is_asked_once_on_a_tty() {
    if let Err(r) = support::require_root_and(&["/usr/sbin/sshd", "ssh-keygen", "script"]) {
        return support::skip(&r);
    }
    let socket = match support::local_dockerd() {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    let dir = tempfile::tempdir().unwrap();
    let key = support::keygen(dir.path(), "enc", "ed25519", PASSPHRASE);
    let sshds: Vec<LocalSshd> = (0..2)
        .map(|_| {
            let s = LocalSshd::start(SshdOptions::default());
            s.authorize(&key);
            s
        })
        .collect();
    let exe = std::env::current_exe().unwrap();
    let inner = format!(
        "{} --ignored --exact tty_child --nocapture --test-threads 1",
        exe.display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &inner, "/dev/null"])
        .env_remove("SSH_AUTH_SOCK")
        .env("RKERS_TTY_KEY", &key)
        .env(
            "RKERS_TTY_PORTS",
            format!("{} {}", sshds[0].port, sshds[1].port),
        )
        .env("RKERS_TTY_SOCKET", socket)
        .env("RKERS_TTY_KNOWN_HOSTS", dir.path().join("known_hosts"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut typed = false;
    let mut finished = false;
    while Instant::now() < deadline {
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.extend(chunk);
        } else if child.try_wait().unwrap().is_some() {
            finished = true;
            while let Ok(chunk) = rx.try_recv() {
                seen.extend(chunk);
            }
            break;
        }
        let text = String::from_utf8_lossy(&seen);
        if !typed && text.contains("Passphrase for SSH key") {
            // Let the child switch echo off (which flushes pending input) before typing.
            std::thread::sleep(Duration::from_millis(500));
            let stdin = child.stdin.as_mut().unwrap();
            stdin
                .write_all(format!("{PASSPHRASE}\n").as_bytes())
                .unwrap();
            stdin.flush().unwrap();
            typed = true;
        }
    }
    if !finished {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(status.success(), "child failed:\n{text}");
    assert_eq!(text.matches("Passphrase for SSH key").count(), 1, "{text}");
    assert!(text.contains("TTY-CHILD-CONNECTED 2"), "{text}");
    assert!(
        !text.contains(PASSPHRASE),
        "the passphrase must not be echoed:\n{text}"
    );
}

/// Runs only under the parent test above.
#[test]
#[ignore = "child of passphrase_is_asked_once_on_a_tty"]
fn tty_child() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let key = std::env::var("RKERS_TTY_KEY").expect("run by the parent test");
        let socket = std::env::var("RKERS_TTY_SOCKET").unwrap();
        let targets: Vec<SshTarget> = std::env::var("RKERS_TTY_PORTS")
            .unwrap()
            .split(' ')
            .enumerate()
            .map(|(i, p)| SshTarget {
                name: format!("tty{i}"),
                address: "127.0.0.1".into(),
                port: Some(p.parse().unwrap()),
                user: "root".into(),
                auth: SshAuth {
                    ssh_key_path: Some(key.clone().into()),
                    ..Default::default()
                },
                docker_socket: socket.clone(),
                bastion: None,
            })
            .collect();
        let opts = SshOptions {
            known_hosts_path: Some(std::env::var("RKERS_TTY_KNOWN_HOSTS").unwrap().into()),
            passphrase_prompt: true,
            ssh_config_enabled: false,
            ..Default::default()
        };
        let pool = HostPool::connect(&targets, &opts)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        println!("TTY-CHILD-CONNECTED {}", pool.len());
    });
}
