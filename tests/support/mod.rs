//! Shared helpers for tests that need real components: root check, the sandbox (when it is
//! up), and private local instances of sshd, dockerd and the registry on 127.0.0.1.
//!
//! Tests call these helpers and return early with a printed reason when a prerequisite is
//! missing (not root, binary not installed, sandbox down), so a plain `cargo test` passes on
//! any machine and the README's root command runs everything. Under `scripts/test` (and so CI)
//! `RKERS_NO_SKIP=1` is set and a skip fails the test instead: a broken sandbox is never green.

#![allow(dead_code)]

pub mod docker_host;
pub mod e2e;
pub mod rke1_real;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Prints why a test is skipped; use as `let Some(x) = ... else { return skip(..) };`.
/// With `RKERS_NO_SKIP=1` (scripts/test, CI) it fails the test, naming it and the reason.
pub fn skip(reason: &str) {
    if skips_fail() {
        let thread = std::thread::current();
        panic!(
            "{} cannot run here, and RKERS_NO_SKIP=1 makes a skip a failure: {reason}",
            thread.name().unwrap_or("this test")
        );
    }
    eprintln!("SKIPPED: {reason}");
}

/// A finished command's success and its stdout followed by its stderr, as text.
pub fn outcome(out: std::process::Output) -> (bool, String) {
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Runs `cmd` with `stdin` written to its standard input (closed at once when `None`); its
/// success and output as [`outcome`] gives them.
pub fn outcome_with_stdin(mut cmd: Command, stdin: Option<&str>) -> (bool, String) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).unwrap();
        }
    }
    outcome(child.wait_with_output().unwrap())
}

/// `rkers ARGS --config CONFIG --known-hosts KNOWN_HOSTS`: its success and output.
pub fn rkers_with(
    rkers: &Path,
    config: &Path,
    known_hosts: &Path,
    args: &[&str],
) -> (bool, String) {
    let out = Command::new(rkers)
        .args(args)
        .arg("--config")
        .arg(config)
        .arg("--known-hosts")
        .arg(known_hosts)
        .output()
        .expect("run rkers");
    outcome(out)
}

/// Whether a skip fails the test (`RKERS_NO_SKIP=1`, set by scripts/test).
pub fn skips_fail() -> bool {
    std::env::var("RKERS_NO_SKIP").is_ok_and(|v| v == "1")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe extern "C" {
        fn geteuid() -> u32;
    }
    unsafe { geteuid() == 0 }
}

pub fn have(bin: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).exists()))
        .unwrap_or(false)
        || Path::new(bin).exists()
}

/// `Err(reason)` when the test cannot run here.
pub fn require_root_and(bins: &[&str]) -> Result<(), String> {
    if !is_root() {
        return Err("needs root (run the tests as root, see README)".into());
    }
    for b in bins {
        if !have(b) {
            return Err(format!("{b} is not installed"));
        }
    }
    Ok(())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn wait_for_port(port: u16, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ssh-keygen -t kind -N pass -f dir/name`; returns the private key path.
pub fn keygen(dir: &Path, name: &str, kind: &str, pass: &str) -> PathBuf {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("pub"));
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", pass, "-C", name, "-f"])
        .arg(&path));
    path
}

pub fn pubkey(private: &Path) -> String {
    std::fs::read_to_string(format!("{}.pub", private.display())).unwrap()
}

/// Options of a local sshd.
#[derive(Clone, Debug)]
pub struct SshdOptions {
    pub stream_local_forwarding: bool,
    pub tcp_forwarding: bool,
    pub disable_forwarding: bool,
    pub trusted_user_ca: Option<PathBuf>,
    /// sshd's `ForceCommand`: every exec runs this instead, the asked command in
    /// `SSH_ORIGINAL_COMMAND` (forwarded sockets are unaffected).
    pub force_command: Option<String>,
}

impl Default for SshdOptions {
    fn default() -> Self {
        SshdOptions {
            stream_local_forwarding: true,
            tcp_forwarding: true,
            disable_forwarding: false,
            trusted_user_ca: None,
            force_command: None,
        }
    }
}

/// An sshd of our own on 127.0.0.1:`port`, killed on drop. Its log (LogLevel VERBOSE) shows
/// every accepted connection, which is how tests count SSH connections from sshd's side.
pub struct LocalSshd {
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub host_key: PathBuf,
    pub authorized_keys: PathBuf,
    pub log: PathBuf,
    child: Child,
}

impl LocalSshd {
    pub fn start(opts: SshdOptions) -> LocalSshd {
        Self::start_with(opts, None, None)
    }

    /// With a given host key and/or port (to simulate a reinstalled host at the same address).
    pub fn start_with(
        opts: SshdOptions,
        host_key: Option<PathBuf>,
        port: Option<u16>,
    ) -> LocalSshd {
        std::fs::create_dir_all("/run/sshd").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let host_key =
            host_key.unwrap_or_else(|| keygen(dir.path(), "host_ed25519", "ed25519", ""));
        let authorized_keys = dir.path().join("authorized_keys");
        std::fs::write(&authorized_keys, "").unwrap();
        let log = dir.path().join("sshd.log");
        let port = port.unwrap_or_else(free_port);
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut cfg = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
             StrictModes no\nUsePAM no\nPermitRootLogin yes\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nLogLevel VERBOSE\nMaxStartups 100:30:200\nMaxSessions 100\n\
             AllowStreamLocalForwarding {}\nAllowTcpForwarding {}\nDisableForwarding {}\n",
            host_key.display(),
            dir.path().join("sshd.pid").display(),
            authorized_keys.display(),
            yn(opts.stream_local_forwarding),
            yn(opts.tcp_forwarding),
            yn(opts.disable_forwarding),
        );
        if let Some(ca) = &opts.trusted_user_ca {
            cfg.push_str(&format!("TrustedUserCAKeys {}\n", ca.display()));
        }
        if let Some(command) = &opts.force_command {
            cfg.push_str(&format!("ForceCommand {command}\n"));
        }
        let cfg_path = dir.path().join("sshd_config");
        std::fs::write(&cfg_path, cfg).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-f")
            .arg(&cfg_path)
            .arg("-E")
            .arg(&log)
            .stdin(Stdio::null())
            .spawn()
            .expect("sshd starts");
        assert!(
            wait_for_port(port, Duration::from_secs(10)),
            "sshd did not listen on {port}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        LocalSshd {
            port,
            dir,
            host_key,
            authorized_keys,
            log,
            child,
        }
    }

    pub fn authorize(&self, private_key: &Path) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.authorized_keys)
            .unwrap();
        f.write_all(pubkey(private_key).as_bytes()).unwrap();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Connections sshd accepted (authenticated sessions).
    pub fn accepted_connections(&self) -> usize {
        self.log_text().matches("Accepted publickey for").count()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalSshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An sshd whose every command goes to the Windows shell double
/// (tests/windows_host/fake_windows_shell.py), which keeps its state (the C: drive, the wins
/// service, its log of agent runs) in `state`; commands that are not the host agent's run
/// through /bin/sh, so a mixed test's Linux host can share it.
pub fn windows_shell_sshd(state: &Path) -> LocalSshd {
    std::fs::create_dir_all(state).unwrap();
    LocalSshd::start(SshdOptions {
        force_command: Some(format!(
            "/usr/bin/python3 {}/tests/windows_host/fake_windows_shell.py {}",
            env!("CARGO_MANIFEST_DIR"),
            state.display()
        )),
        ..Default::default()
    })
}

/// The permission bits of `path` (the Windows shell double writes a private file 0600, where
/// Windows would give it an ACL of SYSTEM and Administrators only).
pub fn file_mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

pub const TEST_DOCKER_DIR: &str = "/run/rkers-test-docker";
pub const TEST_DOCKER_SOCKET: &str = "/run/rkers-test-docker/docker.sock";
pub const TEST_IMAGE: &str = "rkers-test/busybox:1";

fn docker_cli(socket: &str) -> Command {
    let mut c = Command::new("docker");
    c.arg("-H").arg(format!("unix://{socket}"));
    c
}

fn docker_answers(socket: &str) -> bool {
    docker_cli(socket)
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A dockerd of our own (own data root, socket, containerd namespace) shared by all tests
/// and left running between test runs to save its start-up time; `scripts/bench-hosts stop`
/// or killing the pid in /run/rkers-test-docker/docker.pid stops it. The test image (a
/// busybox root file system) is imported into it.
pub fn local_dockerd() -> Result<&'static str, String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            require_root_and(&["dockerd", "docker", "busybox"])?;
            if !docker_answers(TEST_DOCKER_SOCKET) {
                std::fs::create_dir_all(TEST_DOCKER_DIR).map_err(|e| e.to_string())?;
                let log = std::fs::File::create(format!("{TEST_DOCKER_DIR}/dockerd.log"))
                    .map_err(|e| e.to_string())?;
                Command::new("dockerd")
                    .args([
                        "--data-root=/var/lib/rkers-test-docker",
                        "--exec-root=/run/rkers-test-docker/exec",
                        "--pidfile=/run/rkers-test-docker/docker.pid",
                        "--host=unix:///run/rkers-test-docker/docker.sock",
                        "--containerd-namespace=rkers-test",
                        "--containerd-plugins-namespace=rkers-test-plugins",
                        "--bridge=none",
                        "--iptables=false",
                        "--ip-masq=false",
                        "--group=docker",
                    ])
                    .stdin(Stdio::null())
                    .stdout(log.try_clone().map_err(|e| e.to_string())?)
                    .stderr(log)
                    .spawn()
                    .map_err(|e| format!("cannot start dockerd: {e}"))?;
                let deadline = Instant::now() + Duration::from_secs(60);
                while !docker_answers(TEST_DOCKER_SOCKET) {
                    if Instant::now() > deadline {
                        return Err(format!(
                            "dockerd did not answer: {}",
                            std::fs::read_to_string(format!("{TEST_DOCKER_DIR}/dockerd.log"))
                                .unwrap_or_default()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            import_test_image(TEST_DOCKER_SOCKET)
        })
        .clone()
        .map(|()| TEST_DOCKER_SOCKET)
}

/// Imports a minimal busybox image as [`TEST_IMAGE`] unless present.
pub fn import_test_image(socket: &str) -> Result<(), String> {
    let present = docker_cli(socket)
        .args(["image", "inspect", TEST_IMAGE])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.path().join("tmp")).map_err(|e| e.to_string())?;
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("busybox not found")?;
    std::fs::copy(busybox, bin.join("busybox")).map_err(|e| e.to_string())?;
    for applet in [
        "sh",
        "cat",
        "echo",
        "sleep",
        "true",
        "false",
        "ls",
        "nc",
        "sha256sum",
        "stat",
        "id",
        "mkdir",
        "printf",
    ] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).map_err(|e| e.to_string())?;
    }
    let tar = Command::new("tar")
        .arg("-C")
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let st = docker_cli(socket)
        .args(["import", "--change", "ENV PATH=/bin", "-", TEST_IMAGE])
        .stdin(tar.stdout.unwrap())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err("docker import of the test image failed".into());
    }
    Ok(())
}

/// Creates a local user (no docker group) for permission tests; returns its name.
pub fn unprivileged_user() -> &'static str {
    static USER: OnceLock<()> = OnceLock::new();
    USER.get_or_init(|| {
        let exists = Command::new("id")
            .arg("rkers-nodocker")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !exists {
            run(Command::new("useradd").args(["-m", "-s", "/bin/sh", "rkers-nodocker"]));
        }
        // A locked account ("!") cannot log in even with a key when PAM is off.
        run(Command::new("usermod").args(["-p", "*", "rkers-nodocker"]));
    });
    "rkers-nodocker"
}

/// The sandbox (scripts/sandbox) when it is up: its directory and cluster.yml.
#[derive(Clone, Debug)]
pub struct Sandbox {
    pub dir: PathBuf,
    pub cluster_yml: String,
}

impl Sandbox {
    /// `Err(reason)` when not root or the sandbox is not up.
    pub fn find() -> Result<Sandbox, String> {
        if !is_root() {
            return Err("needs root (the sandbox runs as root)".into());
        }
        let dir = PathBuf::from(
            std::env::var("RKERS_SANDBOX_DIR").unwrap_or_else(|_| "/var/lib/rkers-sandbox".into()),
        );
        let yml = dir.join("cluster.yml");
        let cluster_yml = std::fs::read_to_string(&yml).map_err(|e| {
            format!(
                "sandbox is not up ({}: {e}); run scripts/sandbox up",
                yml.display()
            )
        })?;
        Ok(Sandbox { dir, cluster_yml })
    }

    /// Node addresses in cluster.yml order (`address:` lines under `nodes:`).
    pub fn node_addresses(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut in_nodes = false;
        for line in self.cluster_yml.lines() {
            if !line.starts_with(' ') && !line.starts_with('-') {
                in_nodes = line.trim_end() == "nodes:";
                continue;
            }
            if in_nodes {
                let t = line.trim_start().trim_start_matches("- ").trim();
                if let Some(a) = t.strip_prefix("address:") {
                    out.push(a.trim().trim_matches('"').trim_matches('\'').to_owned());
                }
            }
        }
        out
    }

    /// A top-level or node-level scalar (first occurrence), e.g. `ssh_key_path`.
    pub fn scalar(&self, key: &str) -> Option<String> {
        self.cluster_yml.lines().find_map(|l| {
            let t = l.trim_start().trim_start_matches("- ").trim();
            t.strip_prefix(&format!("{key}:"))
                .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_owned())
        })
    }
}

impl Sandbox {
    /// The sandbox control script: `RKERS_SANDBOX_SCRIPT`, else the repository's.
    pub fn script() -> PathBuf {
        std::env::var_os("RKERS_SANDBOX_SCRIPT")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sandbox"))
    }

    /// Runs `cmd` inside sandbox host `host` (e.g. `host2`); returns stdout.
    pub fn exec(&self, host: &str, cmd: &str) -> Result<String, String> {
        let script = Self::script();
        if !script.exists() {
            return Err(format!(
                "sandbox script {} not found (set RKERS_SANDBOX_SCRIPT)",
                script.display()
            ));
        }
        let out = Command::new(&script)
            .args(["exec", host, "sh", "-c", cmd])
            .output()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "sandbox exec {host} {cmd:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// An extra sshd of our own inside a sandbox host (its namespaces, its dockerd), on a port
/// other than 22 so the sandbox's own sshd is untouched. Stopped on drop.
pub struct SandboxSshd<'a> {
    pub sandbox: &'a Sandbox,
    pub host: String,
    pub port: u16,
    stopped: bool,
}

impl<'a> SandboxSshd<'a> {
    pub fn start(
        sandbox: &'a Sandbox,
        host: &str,
        address: &str,
        port: u16,
        stream_local: bool,
    ) -> Result<Self, String> {
        Self::start_with(sandbox, host, address, port, stream_local, "")
    }

    /// Like [`SandboxSshd::start`], with extra sshd_config lines (e.g. `VersionAddendum ...`).
    pub fn start_with(
        sandbox: &'a Sandbox,
        host: &str,
        address: &str,
        port: u16,
        stream_local: bool,
        extra_config: &str,
    ) -> Result<Self, String> {
        let dir = format!("/run/rkers-hosts-test-{port}");
        let keys = std::fs::read_to_string(sandbox.dir.join("ssh/id_ed25519.pub"))
            .map_err(|e| e.to_string())?;
        let yn = if stream_local { "yes" } else { "no" };
        let cfg = format!(
            "ListenAddress {address}\nPort {port}\nHostKey {hk}\nPidFile {dir}/sshd.pid\nAuthorizedKeysFile {dir}/authorized_keys\n\
             StrictModes no\nUsePAM no\nPermitRootLogin yes\nPasswordAuthentication no\nLogLevel VERBOSE\n\
             AllowTcpForwarding yes\nAllowStreamLocalForwarding {yn}\nMaxStartups 100:30:200\n{extra_config}",
            hk = sandbox
                .dir
                .join(format!("hosts/{host}/ssh_host_ed25519_key"))
                .display(),
        );
        sandbox.exec(
            host,
            &format!(
                "set -e; mkdir -p {dir}; chmod 755 {dir}; printf '%s' '{keys}' > {dir}/authorized_keys; chmod 644 {dir}/authorized_keys; \
                 printf '{cfg}' > {dir}/sshd_config; mkdir -p /run/sshd; /usr/sbin/sshd -f {dir}/sshd_config -E {dir}/sshd.log",
                keys = keys.trim()
            ),
        )?;
        Ok(SandboxSshd {
            sandbox,
            host: host.to_owned(),
            port,
            stopped: false,
        })
    }

    pub fn stop(&mut self) {
        if !self.stopped {
            let dir = format!("/run/rkers-hosts-test-{}", self.port);
            let _ = self.sandbox.exec(
                &self.host,
                &format!("kill $(cat {dir}/sshd.pid) 2>/dev/null; sleep 0.2; rm -rf {dir}"),
            );
            self.stopped = true;
        }
    }
}

impl Drop for SandboxSshd<'_> {
    fn drop(&mut self) {
        self.stop();
    }
}
