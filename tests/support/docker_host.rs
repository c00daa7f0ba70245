//! A sandbox instance whose host1 stands in for "the local machine" of `up --local` and
//! `up --dind`: rkers runs in that host's network namespace, with `DOCKER_HOST` naming the
//! host's dockerd through its launcher's `/proc/PID/root` (no SSH, no kubelet on the machine).
//! The instance is given as an environment variable holding the environment scripts/sandbox
//! reads for it, as `KEY=VALUE` words (as `tests/e2e_api.rs` takes `RKERS_API_E2E_A`).

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Instance {
    envs: Vec<(String, String)>,
    script: PathBuf,
    pub dir: PathBuf,
}

impl Instance {
    /// The instance `var` names, started fresh with one host; `None` (with the reason printed)
    /// when the variable is unset or the test is not root.
    pub fn fresh(var: &str) -> Option<Instance> {
        Instance::fresh_with(var, &["--hosts", "1", "--roles", "default"])
    }

    /// The instance `var` names, purged and started with `scripts/sandbox up <up_args>`.
    pub fn fresh_with(var: &str, up_args: &[&str]) -> Option<Instance> {
        if !super::is_root() {
            super::skip("needs root (network namespaces, the sandbox)");
            return None;
        }
        let Ok(words) = std::env::var(var) else {
            super::skip(&format!(
                "{var} is not set (a sandbox instance's environment)"
            ));
            return None;
        };
        let sb = Instance::from_words(&words).expect("a sandbox instance's environment");
        sb.sandbox(&["down", "--purge"]);
        let mut up = vec!["up"];
        up.extend(up_args);
        sb.sandbox(&up);
        Some(sb)
    }

    /// The instance a sandbox environment names, as `KEY=VALUE` words; nothing is started.
    pub fn from_words(words: &str) -> Result<Instance, String> {
        let envs: Vec<(String, String)> = words
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = |k: &str| envs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        Ok(Instance {
            dir: PathBuf::from(get("RKERS_SANDBOX_DIR").ok_or("no RKERS_SANDBOX_DIR")?),
            script: get("RKERS_SANDBOX_SCRIPT")
                .map(PathBuf::from)
                .unwrap_or_else(super::Sandbox::script),
            envs,
        })
    }

    /// The environment scripts/sandbox reads for this instance, for scripts that run it themselves.
    pub fn envs(&self) -> &[(String, String)] {
        &self.envs
    }

    /// Runs scripts/sandbox for this instance; panics with its output on failure.
    pub fn sandbox(&self, args: &[&str]) -> String {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run scripts/sandbox");
        assert!(
            out.status.success(),
            "scripts/sandbox {args:?} ({}) failed: {}{}",
            self.dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `sh -c cmd` inside a sandbox host (`scripts/sandbox exec`), with its success and output.
    pub fn on_host(&self, host: &str, cmd: &str) -> (bool, String) {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(["exec", host, "sh", "-c", cmd])
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run scripts/sandbox exec");
        super::outcome(out)
    }

    /// `rkers ARGS --config CONFIG` trusting the host keys the sandbox writes on every `up`.
    pub fn rkers(&self, rkers: &Path, config: &Path, args: &[&str]) -> (bool, String) {
        super::rkers_with(rkers, config, &self.dir.join("ssh/known_hosts"), args)
    }

    /// The cluster.yml scripts/sandbox wrote.
    pub fn cluster_yml(&self) -> String {
        std::fs::read_to_string(self.dir.join("cluster.yml")).expect("the sandbox's cluster.yml")
    }

    /// The host's network namespace (scripts/lib/sandbox-net.sh names it).
    fn netns(&self) -> PathBuf {
        let instance = self
            .envs
            .iter()
            .find(|(k, _)| k == "SANDBOX_INSTANCE")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        PathBuf::from(format!("/var/run/netns/rkers{instance}-host1"))
    }

    /// The host's dockerd socket, seen from the machine through its launcher's root.
    pub fn docker_host(&self) -> String {
        let pid = std::fs::read_to_string(self.dir.join("hosts/host1/launcher.pid"))
            .expect("the host's launcher.pid");
        format!("unix:///proc/{}/root/run/docker.sock", pid.trim())
    }

    /// `program args` inside the host's network namespace, talking to its dockerd.
    pub fn in_host(&self, program: &Path, args: &[&str]) -> (bool, String) {
        let out = Command::new("nsenter")
            .arg(format!("--net={}", self.netns().display()))
            .arg("--")
            .arg(program)
            .args(args)
            .env("DOCKER_HOST", self.docker_host())
            .output()
            .expect("run nsenter");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// The docker CLI on the host's daemon; fails the test when it fails.
    pub fn docker(&self, args: &[&str]) -> String {
        let out = Command::new("docker")
            .args(args)
            .env("DOCKER_HOST", self.docker_host())
            .output()
            .expect("run docker");
        assert!(
            out.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every container on the host's daemon, as sorted `name id` lines.
    pub fn containers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .docker(&["ps", "-a", "--format", "{{.Names}} {{.ID}}"])
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    }

    /// `rollback` in a link mode (`mode`: `--local`, or `--dind` with its options) after `up`
    /// in that mode added a kubelet flag: its dry run recreates each of the `nodes` kubelets,
    /// the run gives every kubelet its old arguments back (`kubelet_args` reads them, one per
    /// node), and `up` with the old cluster.yml then plans nothing. cluster.yml is the old one
    /// again afterwards.
    pub fn rollback_of_a_kubelet_flag(
        &self,
        rkers: &Path,
        config: &Path,
        mode: &[&str],
        nodes: usize,
        kubelet_args: &dyn Fn() -> Vec<String>,
    ) {
        const ANCHOR: &str = "      housekeeping-interval: \"30s\"\n";
        let old = std::fs::read_to_string(config).unwrap();
        assert!(old.contains(ANCHOR), "{old}");
        let changed = old.replacen(ANCHOR, &format!("{ANCHOR}      max-pods: \"120\"\n"), 1);
        std::fs::write(config, changed).unwrap();
        let run = |command: &str, extra: &[&str]| {
            let mut args = vec![command];
            args.extend(mode);
            args.extend(extra);
            args.extend(["--config", config.to_str().unwrap()]);
            let (ok, text) = self.in_host(rkers, &args);
            assert!(ok, "rkers {args:?} failed:\n{text}");
            text
        };
        let started = std::time::Instant::now();
        run("up", &[]);
        let before = kubelet_args();
        assert_eq!(before.len(), nodes);
        assert!(
            before.iter().all(|a| a.contains("--max-pods=120")),
            "{before:?}"
        );
        let plan = run("rollback", &["--dry-run"]);
        assert_eq!(
            plan.matches("recreate container kubelet").count(),
            nodes,
            "{plan}"
        );
        run("rollback", &[]);
        let after = kubelet_args();
        assert!(after.iter().all(|a| !a.contains("--max-pods")), "{after:?}");
        std::fs::write(config, &old).unwrap();
        let plan = run("up", &["--dry-run"]);
        assert!(
            plan.contains(&format!("0 actions on {nodes} host")),
            "{plan}"
        );
        eprintln!(
            "up, rollback --dry-run, rollback and up --dry-run with {mode:?} took {:.1}s",
            started.elapsed().as_secs_f64()
        );
    }

    /// Waits until kubectl through `kubeconfig` (run in the host's namespace) lists exactly
    /// `names`, all Ready; returns the listing.
    pub fn wait_ready(
        &self,
        kubeconfig: &Path,
        names: &[&str],
        timeout: std::time::Duration,
    ) -> String {
        let want: Vec<String> = names.iter().map(|n| format!("{n}=True")).collect();
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let (ok, nodes) = self.in_host(
                &super::e2e::kubectl(),
                &[
                    "--kubeconfig",
                    kubeconfig.to_str().unwrap(),
                    "get",
                    "nodes",
                    "-o",
                    "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
                ],
            );
            let mut have: Vec<String> = nodes.lines().map(str::to_string).collect();
            have.sort();
            if ok && have == want {
                return nodes;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nodes not all Ready: want {want:?}, have {nodes}"
            );
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
    }
}
