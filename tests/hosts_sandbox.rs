//! Node access against the sandbox (scripts/sandbox): real hosts in network namespaces, each
//! with its own sshd and dockerd, and the sandbox registry with basic auth. Skips with a
//! printed reason when not root or the sandbox is not up.

// Tests hold a serialising std mutex across awaits on purpose (each runs on its own runtime).
#![allow(clippy::await_holding_lock)]

mod support;

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use rkers::hosts::docker::DockerTransport;
use rkers::hosts::ports::{PortCheckPlan, PortHost, check_cluster_ports};
use rkers::hosts::preflight::{self, PreflightOptions};
use rkers::hosts::{
    BastionTarget, ContainerSpec, HostKeyPolicy, HostPool, RegistryCredential, Secret, SshAuth,
    SshOptions, SshTarget,
};
use support::Sandbox;

const REGISTRY: &str = "10.77.0.1:5000";
const TOOLS_IMAGE: &str = "10.77.0.1:5000/rkers/rke-tools:v0.1.100-rkers1";

/// Connection counting looks at this process's sockets, so sandbox tests run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn sandbox() -> Option<Sandbox> {
    match Sandbox::find() {
        Ok(s) if !s.node_addresses().is_empty() => Some(s),
        Ok(_) => {
            support::skip("sandbox cluster.yml lists no nodes");
            None
        }
        Err(r) => {
            support::skip(&r);
            None
        }
    }
}

fn key(sb: &Sandbox) -> PathBuf {
    sb.dir.join("ssh/id_ed25519")
}

fn target(sb: &Sandbox, i: usize, addr: &str) -> SshTarget {
    SshTarget {
        name: format!("host{}", i + 1),
        address: addr.into(),
        port: Some(22),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(key(sb)),
            ..Default::default()
        },
        docker_socket: "/var/run/docker.sock".into(),
        bastion: None,
    }
}

fn options(sb: &Sandbox) -> SshOptions {
    SshOptions {
        // The sandbox records its hosts' keys: check strictly against them.
        known_hosts_path: Some(sb.dir.join("ssh/known_hosts")),
        host_key_policy: HostKeyPolicy::Strict,
        connect_timeout: Duration::from_secs(10),
        retries: 1,
        ssh_config_enabled: false,
        ..Default::default()
    }
}

fn registry_credential(sb: &Sandbox) -> RegistryCredential {
    RegistryCredential {
        url: REGISTRY.into(),
        user: "rkers".into(),
        password: Secret::new(
            std::fs::read_to_string(sb.dir.join("registry-password"))
                .unwrap()
                .trim()
                .to_owned(),
        ),
    }
}

/// Local TCP ports of this process's connections to `addr:22`, seen from our side.
fn our_ports_to(addr: &str) -> HashSet<String> {
    let out = support::run(Command::new("ss").args(["-tnpH", "state", "established"]));
    let me = format!("pid={},", std::process::id());
    out.lines()
        .filter(|l| l.contains(&me) && l.contains(&format!("{addr}:22")))
        .filter_map(|l| {
            l.split_whitespace()
                .nth(2)
                .and_then(|a| a.rsplit(':').next())
                .map(str::to_owned)
        })
        .collect()
}

/// Connections sshd on sandbox host `n` (1-based) holds open from those ports, seen from
/// inside the host's network namespace.
fn sshd_side_connections(n: usize, from_ports: &HashSet<String>) -> usize {
    let out = support::run(
        Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/rkers-host{n}"))
            .args(["ss", "-tnH", "state", "established", "( sport = :22 )"]),
    );
    out.lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .filter(|peer| {
            peer.rsplit(':')
                .next()
                .is_some_and(|p| from_ports.contains(p))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sandbox_three_hosts_one_connection_each() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let targets: Vec<SshTarget> = addrs
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, a)| target(&sb, i, a))
        .collect();
    let pool = HostPool::connect(&targets, &options(&sb))
        .await
        .expect("sandbox hosts connect");
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let results = pool
        .for_each(&names, |h| async move {
            let calls = (0..100).map(|_| {
                let d = h.docker().clone();
                async move { d.version().await.map(|_| ()) }
            });
            for r in futures::future::join_all(calls).await {
                r?;
            }
            Ok(h.facts().clone())
        })
        .await;
    for (n, r) in results {
        let f = r.unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(f.os_type, "linux");
        assert_eq!(f.transport, DockerTransport::StreamLocal);
        assert!(!f.docker_version.is_empty() && !f.cgroup_driver.is_empty());
    }
    for (i, t) in targets.iter().enumerate() {
        let ours = our_ports_to(&t.address);
        assert_eq!(ours.len(), 1, "{}: our connections {ours:?}", t.address);
        assert_eq!(
            sshd_side_connections(i + 1, &ours),
            1,
            "{}: sshd side",
            t.address
        );
    }
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_bastion_one_connection_to_it() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    if addrs.len() < 3 {
        return support::skip("needs 3 sandbox hosts");
    }
    let bastion = BastionTarget {
        address: addrs[0].clone(),
        port: Some(22),
        user: "root".into(),
        auth: SshAuth {
            ssh_key_path: Some(key(&sb)),
            ..Default::default()
        },
    };
    let targets: Vec<SshTarget> = addrs[1..3]
        .iter()
        .enumerate()
        .map(|(i, a)| SshTarget {
            bastion: Some(bastion.clone()),
            ..target(&sb, i + 1, a)
        })
        .collect();
    let pool = HostPool::connect(&targets, &options(&sb))
        .await
        .expect("through the bastion");
    for h in pool.hosts() {
        h.docker().ping().await.unwrap();
        assert_eq!(
            h.ssh().expect("an SSH host").via_bastion(),
            Some(format!("{}:22", addrs[0]).as_str())
        );
        // The node sees the connection coming from the bastion's address, not ours.
        let out = h
            .ssh()
            .expect("an SSH host")
            .exec("echo $SSH_CLIENT")
            .await
            .unwrap();
        assert!(
            out.stdout_str().starts_with(&addrs[0]),
            "{}",
            out.stdout_str()
        );
    }
    let to_bastion = our_ports_to(&addrs[0]);
    assert_eq!(to_bastion.len(), 1, "{to_bastion:?}");
    assert_eq!(sshd_side_connections(1, &to_bastion), 1);
    assert!(
        our_ports_to(&addrs[1]).is_empty(),
        "no direct connection to nodes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_pull_with_and_without_credentials() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let t = target(&sb, 0, &addrs[0]);
    let pool = HostPool::connect(std::slice::from_ref(&t), &options(&sb))
        .await
        .unwrap();
    let d = pool.hosts().next().unwrap().docker().clone();
    // A tag of our own so no other user of the sandbox is disturbed by removing it.
    let image = format!("{REGISTRY}/rkers-test/hosts-pull:{}", std::process::id());
    push_test_image(&image, &sb);
    let _ = d
        .raw()
        .remove_image(
            &image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
    assert!(!d.image_exists(&image).await.unwrap());
    let err = d.ensure_image(&image, &[], &mut |_| {}).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("host1") && (msg.contains("no basic auth") || msg.contains("unauthorized")),
        "{msg}"
    );
    let mut wrong = registry_credential(&sb);
    wrong.password = Secret::new("wrong-password");
    let err = d
        .ensure_image(&image, &[wrong], &mut |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unauthorized"), "{err}");
    let mut events = 0;
    let pulled = d
        .ensure_image(&image, &[registry_credential(&sb)], &mut |p| {
            assert_eq!(p.image, image);
            events += 1;
        })
        .await
        .unwrap();
    assert!(pulled && events > 0);
    assert!(d.image_exists(&image).await.unwrap());
    assert!(
        !d.ensure_image(&image, &[], &mut |_| {}).await.unwrap(),
        "present: no pull"
    );
    let _ = d
        .raw()
        .remove_image(
            &image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}

/// Pushes a small image to the sandbox registry through its unauthenticated local side,
/// using our private test dockerd.
fn push_test_image(image: &str, _sb: &Sandbox) {
    let socket = support::local_dockerd().expect("local test dockerd");
    let local = image.replace(REGISTRY, "127.0.0.1:5000");
    let docker = |args: &[&str]| {
        support::run(
            Command::new("docker")
                .arg("-H")
                .arg(format!("unix://{socket}"))
                .args(args),
        );
    };
    docker(&["tag", support::TEST_IMAGE, &local]);
    docker(&["push", &local]);
}

/// A pool of one host: the sandbox's second.
async fn host2(sb: &Sandbox) -> HostPool {
    let addrs = sb.node_addresses();
    HostPool::connect(&[target(sb, 1, &addrs[1])], &options(sb))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_containers_and_byte_exact_upload() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let pool = host2(&sb).await;
    let h = pool.hosts().next().unwrap();
    let d = h.docker();
    d.ensure_image(TOOLS_IMAGE, &[registry_credential(&sb)], &mut |_| {})
        .await
        .unwrap();
    let mut content = b"line with \\n and \\t and \\\\ and $VAR and `cmd`\n".to_vec();
    content.extend([0u8, 1, 2, 255, 254, b'\\', b'e']);
    let path = format!(
        "/etc/kubernetes/rkers-test-{}/upload.bin",
        std::process::id()
    );
    let mut opts = rkers::hosts::UploadOptions::new(TOOLS_IMAGE);
    opts.mode = 0o600;
    d.upload_file(&path, &content, &opts).await.unwrap();
    // Read it back on the host itself, over SSH.
    let out = h
        .ssh()
        .expect("an SSH host")
        .exec(&format!("cat {path}; stat -c %a {path} >&2"))
        .await
        .unwrap();
    assert_eq!(out.stdout, content);
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "600");
    // And through a container that mounts the directory, as components will.
    let r = d
        .run_one_shot(
            "rkers-test-reader",
            &ContainerSpec {
                image: TOOLS_IMAGE.into(),
                entrypoint: vec!["sha256sum".into()],
                cmd: vec![path.clone()],
                binds: vec!["/etc/kubernetes:/etc/kubernetes".into()],
                ..Default::default()
            },
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    use sha2::Digest;
    assert_eq!(r.exit_code, 0, "{}", r.logs);
    assert!(
        r.logs
            .contains(&hex::encode(sha2::Sha256::digest(&content))),
        "{}",
        r.logs
    );
    h.ssh()
        .expect("an SSH host")
        .exec(&format!(
            "rm -rf /etc/kubernetes/rkers-test-{}",
            std::process::id()
        ))
        .await
        .unwrap();
}

/// A container whose image went missing after the images step (a kubelet's image garbage
/// collection, a prune) is still created: the image is pulled again. Real dockerd and registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_a_container_whose_image_went_missing_is_created_after_a_pull() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let pool = host2(&sb).await;
    let h = pool.hosts().next().unwrap();
    let d = h.docker();
    let name = format!("rkers-test-repull-{}", std::process::id());
    let ssh = h.ssh().expect("an SSH host");
    // Untagged even while containers use it: only its name is gone, as after a prune.
    let out = ssh
        .exec(&format!(
            "docker rm -f {name} >/dev/null 2>&1; docker rmi -f {TOOLS_IMAGE}"
        ))
        .await
        .unwrap();
    assert!(out.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spec = ContainerSpec {
        image: TOOLS_IMAGE.into(),
        entrypoint: vec!["true".into()],
        ..Default::default()
    };
    let missing = d
        .create_container(&name, &spec)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("404"),
        "Docker no longer has the image: {missing}"
    );
    let id = d
        .create_container_pulling(&name, &spec, &[registry_credential(&sb)])
        .await
        .unwrap();
    let inspect = ssh
        .exec(&format!("docker inspect --format '{{{{.Id}}}} {{{{.Config.Image}}}}' {name}; docker rm -f {name} >/dev/null"))
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inspect.stdout).trim(),
        format!("{id} {TOOLS_IMAGE}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_unreachable_host_is_listed_not_dropped() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let mut opts = options(&sb);
    opts.connect_timeout = Duration::from_secs(2);
    opts.retries = 0;
    let mut down = target(&sb, 9, "10.77.0.99");
    down.name = "ghost".into();
    let targets = vec![target(&sb, 0, &addrs[0]), down];
    let (report, pool) = preflight::run(&targets, &opts, &PreflightOptions::default()).await;
    assert!(pool.is_none());
    assert!(!report.ok());
    assert!(report.hosts[0].ok(), "{:?}", report.hosts[0]);
    let ghost = &report.hosts[1];
    assert!(
        matches!(
            ghost.problem_kind.as_deref(),
            Some("unreachable" | "connect-timeout")
        ),
        "{ghost:?}"
    );
    assert!(
        ghost.problems[0].starts_with("host ghost: "),
        "{:?}",
        ghost.problems
    );
    let table = report.render_table();
    assert!(
        table.contains("ghost") && table.contains("PROBLEM host ghost"),
        "{table}"
    );
    let json = report.to_json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["hosts"][0]["docker"]["os_type"], "linux");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_port_checks_between_roles() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    if addrs.len() < 3 {
        return support::skip("needs 3 sandbox hosts");
    }
    let targets: Vec<SshTarget> = addrs
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, a)| target(&sb, i, a))
        .collect();
    let pool = HostPool::connect(&targets, &options(&sb)).await.unwrap();
    let ph = |i: usize, addr: &str| PortHost {
        name: format!("host{}", i + 1),
        internal_address: addr.into(),
    };
    // The instance's own registry and subnet (SANDBOX_SUBNET_PREFIX, as scripts/sandbox reads it).
    let prefix = std::env::var("SANDBOX_SUBNET_PREFIX").unwrap_or_else(|_| "10.77.0".into());
    let registry = format!("{prefix}.1:5000");
    let mut plan = PortCheckPlan::new(TOOLS_IMAGE.replace(REGISTRY, &registry));
    let mut credential = registry_credential(&sb);
    credential.url = registry;
    plan.registries = vec![credential];
    plan.etcd = vec![ph(0, &addrs[0])];
    plan.controlplane = vec![ph(0, &addrs[0])];
    plan.worker = vec![ph(1, &addrs[1]), ph(2, &addrs[2])];
    plan.attempts = 1;
    let failures = check_cluster_ports(&pool, &plan).await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    // A worker whose address nobody answers on: the controlplane cannot reach its 10250.
    let nobody = format!("{prefix}.99");
    plan.worker[1].internal_address = nobody.clone();
    plan.retry_delay = Duration::from_millis(100);
    let failures = check_cluster_ports(&pool, &plan).await.unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].host, "host1");
    assert_eq!(failures[0].unreachable, vec![format!("{nobody}:10250")]);
    assert!(
        failures[0]
            .to_string()
            .contains("Please check network policies and firewall rules")
    );
    for h in pool.hosts() {
        for name in [
            "rke-etcd-port-listener",
            "rke-cp-port-listener",
            "rke-worker-port-listener",
            "rke-port-checker",
        ] {
            assert!(
                h.docker().inspect_container(name).await.unwrap().is_none(),
                "{name} left on {}",
                h.name()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_passphrase_key_and_rsa_key() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let enc = sb.dir.join("ssh/id_ed25519_passphrase");
    let rsa = sb.dir.join("ssh/id_rsa");
    if !enc.exists() || !rsa.exists() {
        return support::skip("sandbox has no passphrase or RSA key");
    }
    let mut t = target(&sb, 0, &addrs[0]);
    t.auth.ssh_key_path = Some(rsa);
    let pool = HostPool::connect(std::slice::from_ref(&t), &options(&sb))
        .await
        .unwrap();
    assert!(
        pool.hosts()
            .next()
            .unwrap()
            .ssh()
            .expect("an SSH host")
            .auth_method()
            .contains("rsa")
    );
    t.auth.ssh_key_path = Some(enc);
    let mut opts = options(&sb);
    opts.key_passphrase = Some(Secret::new(
        std::fs::read_to_string(sb.dir.join("ssh/passphrase"))
            .unwrap()
            .trim(),
    ));
    HostPool::connect(std::slice::from_ref(&t), &opts)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_errors_wrong_key_and_changed_host_key() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let dir = tempfile::tempdir().unwrap();
    let mut t = target(&sb, 0, &addrs[0]);
    t.auth.ssh_key_path = Some(support::keygen(dir.path(), "stranger", "ed25519", ""));
    let err = HostPool::connect(std::slice::from_ref(&t), &options(&sb))
        .await
        .unwrap_err();
    assert_eq!(err.0[0].kind(), "auth-failed");
    assert!(
        err.0[0].to_string().starts_with(
            "host host1: SSH authentication as user \"root\" failed; tried: publickey ssh-ed25519"
        ),
        "{}",
        err.0[0]
    );
    // known_hosts that records another key for the host: the host "was reinstalled".
    let kh = dir.path().join("known_hosts");
    let other = support::keygen(dir.path(), "other_host_key", "ed25519", "");
    std::fs::write(&kh, format!("{} {}", addrs[0], support::pubkey(&other))).unwrap();
    let mut opts = options(&sb);
    opts.known_hosts_path = Some(kh);
    opts.host_key_policy = HostKeyPolicy::AcceptNew;
    let err = HostPool::connect(&[target(&sb, 0, &addrs[0])], &opts)
        .await
        .unwrap_err();
    let e = &err.0[0];
    assert_eq!(e.kind(), "host-key-changed");
    let real = support::run(
        Command::new("ssh-keygen")
            .arg("-lf")
            .arg(sb.dir.join("hosts/host1/ssh_host_ed25519_key.pub")),
    );
    let old = support::run(
        Command::new("ssh-keygen")
            .arg("-lf")
            .arg(other.with_extension("pub")),
    );
    let fp = |s: &str| s.split_whitespace().nth(1).unwrap().to_owned();
    assert!(
        e.to_string().contains(&fp(&old)) && e.to_string().contains(&fp(&real)),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_stream_local_disabled_falls_back_then_sshd_stopped() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    if addrs.len() < 2 {
        return support::skip("needs 2 sandbox hosts");
    }
    let mut sshd = match support::SandboxSshd::start(&sb, "host2", &addrs[1], 2222, false) {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut t = target(&sb, 1, &addrs[1]);
    t.port = Some(2222);
    let mut opts = options(&sb);
    opts.host_key_policy = HostKeyPolicy::AcceptNew;
    let kh = tempfile::tempdir().unwrap();
    opts.known_hosts_path = Some(kh.path().join("known_hosts"));
    let pool = HostPool::connect(std::slice::from_ref(&t), &opts)
        .await
        .expect("fallback works");
    let h = pool.hosts().next().unwrap();
    assert_eq!(h.facts().transport, DockerTransport::DialStdio);
    assert!(
        h.docker()
            .transport_note()
            .unwrap()
            .contains("AllowStreamLocalForwarding")
    );
    h.docker()
        .ensure_image(TOOLS_IMAGE, &[registry_credential(&sb)], &mut |_| {})
        .await
        .unwrap();
    let r = h
        .docker()
        .run_one_shot(
            "rkers-test-fallback",
            &ContainerSpec {
                image: TOOLS_IMAGE.into(),
                entrypoint: vec!["echo".into()],
                cmd: vec!["fallback-ok".into()],
                ..Default::default()
            },
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(r.logs.contains("fallback-ok"), "{}", r.logs);
    pool.close().await;
    sshd.stop();
    opts.retries = 0;
    let err = HostPool::connect(&[t], &opts).await.unwrap_err();
    assert_eq!(err.0[0].kind(), "connection-refused", "{}", err.0[0]);
    assert_eq!(
        err.0[0].to_string(),
        format!(
            "host host2: connection refused by {}:2222: nothing listens there (is sshd running on that port?)",
            addrs[1]
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_docker_permission_denied_for_user_outside_docker_group() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    if addrs.len() < 2 {
        return support::skip("needs 2 sandbox hosts");
    }
    let user = support::unprivileged_user();
    let _sshd = match support::SandboxSshd::start(&sb, "host2", &addrs[1], 2223, true) {
        Ok(s) => s,
        Err(r) => return support::skip(&r),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut t = target(&sb, 1, &addrs[1]);
    t.port = Some(2223);
    t.user = user.into();
    let mut opts = options(&sb);
    opts.host_key_policy = HostKeyPolicy::AcceptNew;
    let kh = tempfile::tempdir().unwrap();
    opts.known_hosts_path = Some(kh.path().join("known_hosts"));
    let err = HostPool::connect(&[t], &opts).await.unwrap_err();
    assert_eq!(err.0[0].kind(), "docker-permission-denied", "{}", err.0[0]);
    assert!(
        err.0[0]
            .to_string()
            .contains("add the user to the docker group"),
        "{}",
        err.0[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_dockerd_stopped_on_a_host() {
    let _serial = serial();
    let Some(sb) = sandbox() else { return };
    let addrs = sb.node_addresses();
    let last = addrs.len();
    let host = format!("host{last}");
    let script = Sandbox::script();
    if !script.exists() {
        return support::skip("sandbox script not found (set RKERS_SANDBOX_SCRIPT)");
    }
    struct Restart(PathBuf, String);
    impl Drop for Restart {
        fn drop(&mut self) {
            let _ = Command::new(&self.0)
                .args(["svc", &self.1, "start", "dockerd"])
                .status();
        }
    }
    support::run(Command::new(&script).args(["svc", &host, "stop", "dockerd"]));
    let _restart = Restart(script.clone(), host.clone());
    let t = target(&sb, last - 1, &addrs[last - 1]);
    let err = HostPool::connect(&[t], &options(&sb)).await.unwrap_err();
    let e = &err.0[0];
    assert!(
        matches!(e.kind(), "docker-socket-missing" | "docker-not-answering"),
        "{}: {e}",
        e.kind()
    );
    assert!(
        e.to_string().starts_with(&format!("host {host}: Docker")),
        "{e}"
    );
}
