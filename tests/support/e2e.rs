//! The end-to-end harness: one sandbox instance (scripts/sandbox, chosen by the same environment
//! variables the script reads) and one rkers cluster directory on it that every `e2e_*` test
//! binary shares.
//!
//! Bringing a Kubernetes cluster up costs over a minute; tearing it down and up again in every
//! test would double CI's time. So the cluster directory lives beside the sandbox
//! (`$RKERS_SANDBOX_DIR/e2e`), and [`E2e::standard`] puts the cluster back into the standard
//! 3-host shape with one `rkers up`, which is a no-op when the previous test left it that way.
//! Tests that need fresh hosts call [`E2e::fresh`]. nextest runs all of them one at a time (the
//! `sandbox` test group).

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use rkers::kubeapi::KubeApi;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The three hosts of the standard cluster.
pub const HOSTS: [&str; 3] = ["host1", "host2", "host3"];

/// The sandbox instance the tests use, from the environment scripts/sandbox reads.
#[derive(Clone, Debug)]
pub struct SandboxEnv {
    pub script: PathBuf,
    pub dir: PathBuf,
    /// First three octets of the hosts' subnet, e.g. `10.77.0`.
    pub subnet_prefix: String,
    /// The registry the hosts pull from (basic auth), e.g. `10.77.0.1:5000`.
    pub registry: String,
    /// The same registry without auth, for the machine, e.g. `127.0.0.1:5000`.
    pub registry_local: String,
}

impl SandboxEnv {
    pub fn from_env() -> SandboxEnv {
        let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
        let subnet_prefix = var("SANDBOX_SUBNET_PREFIX", "10.77.0");
        SandboxEnv {
            script: super::Sandbox::script(),
            dir: PathBuf::from(var("RKERS_SANDBOX_DIR", "/var/lib/rkers-sandbox")),
            registry: format!("{subnet_prefix}.1:5000"),
            registry_local: var("SANDBOX_REGISTRY_LOCAL", "127.0.0.1:5000"),
            subnet_prefix,
        }
    }

    /// Address of sandbox host `n` (host1 is `.11`).
    pub fn ip(&self, n: u8) -> String {
        format!("{}.{}", self.subnet_prefix, 10 + n)
    }

    /// Runs scripts/sandbox; panics with its output on failure; returns stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(args)
            .output()
            .expect("run scripts/sandbox");
        assert!(
            out.status.success(),
            "scripts/sandbox {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `sh -c cmd` inside sandbox host `host`; panics on failure; returns stdout.
    pub fn on_host(&self, host: &str, cmd: &str) -> String {
        self.run(&["exec", host, "sh", "-c", cmd])
    }

    /// Like [`on_host`](Self::on_host) but returns success and stdout+stderr instead of panicking.
    pub fn try_on_host(&self, host: &str, cmd: &str) -> (bool, String) {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(["exec", host, "sh", "-c", cmd])
            .output()
            .expect("run scripts/sandbox");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// `host/name -> id` of every container on each host, Kubernetes pods' containers excluded.
    pub fn container_ids(&self, hosts: &[&str]) -> BTreeMap<String, String> {
        let mut ids = BTreeMap::new();
        for h in hosts {
            for line in self
                .on_host(h, "docker ps -a --format '{{.Names}} {{.ID}}'")
                .lines()
            {
                if let Some((name, id)) = line.split_once(' ')
                    && !name.starts_with("k8s_")
                {
                    ids.insert(format!("{h}/{name}"), id.to_string());
                }
            }
        }
        ids
    }

    /// Names of every container on `host`, running or not.
    pub fn container_names(&self, host: &str) -> Vec<String> {
        self.on_host(host, "docker ps -a --format '{{.Names}}'")
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Why the end-to-end tests cannot run here, if they cannot.
pub fn unavailable(env: &SandboxEnv) -> Option<String> {
    if let Err(reason) = super::require_root_and(&["ip", "nsenter", "unshare", "curl"]) {
        return Some(reason);
    }
    if !env.script.exists() {
        return Some(format!("{} not found", env.script.display()));
    }
    // The registry is part of the sandbox; start it so the image check below can ask it.
    let _ = Command::new("bash")
        .arg(&env.script)
        .arg("registry")
        .output();
    let tags = Command::new("curl")
        .args([
            "-sf",
            &format!("http://{}/v2/rkers/hyperkube/tags/list", env.registry_local),
        ])
        .output();
    if !tags
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("v1.20.2"))
    {
        return Some(format!(
            "the sandbox registry {} has no rkers/hyperkube image: run scripts/build-images \
             (IMAGES_PUSH_REGISTRY={} for this instance)",
            env.registry_local, env.registry_local
        ));
    }
    None
}

/// The shared cluster directory: `cluster.yml`, its state and kubeconfig; the sandbox's known_hosts.
pub struct E2e {
    pub env: SandboxEnv,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub known_hosts: PathBuf,
}

impl E2e {
    /// The harness, or `None` after printing why the tests are skipped.
    pub fn new() -> Option<E2e> {
        let env = SandboxEnv::from_env();
        if let Some(reason) = unavailable(&env) {
            super::skip(&reason);
            return None;
        }
        let dir = env.dir.join("e2e");
        std::fs::create_dir_all(&dir).unwrap();
        Some(E2e {
            config: dir.join("cluster.yml"),
            // The sandbox writes its hosts' keys there on every `up`: a purged sandbox has new
            // host keys, which a known_hosts file of our own would rightly refuse.
            known_hosts: env.dir.join("ssh/known_hosts"),
            dir,
            env,
        })
    }

    /// Fresh hosts (the sandbox purged and started again) and no state: the next `up` is cold.
    pub fn fresh(&self) {
        self.env.run(&["down", "--purge"]);
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::create_dir_all(&self.dir).unwrap();
        self.reset_config(3);
    }

    /// Starts (or repairs) `n` sandbox hosts with the default roles and copies the sandbox's
    /// cluster.yml over ours; returns the sandbox's cluster.yml text.
    pub fn reset_config(&self, n: usize) -> String {
        let out = self
            .env
            .run(&["up", "--hosts", &n.to_string(), "--roles", "default"]);
        let sandbox_yml = PathBuf::from(out.lines().last().unwrap().trim());
        let text = std::fs::read_to_string(&sandbox_yml).unwrap();
        // The sandbox's hosts beyond the standard three stay up but out of the cluster.
        let text = if n > 3 {
            let mut t = text.clone();
            for i in 4..=n {
                t = t.replace(&node_entry(&text, &self.env.ip(i as u8)), "");
            }
            t
        } else {
            text
        };
        std::fs::write(&self.config, &text).unwrap();
        text
    }

    /// The standard cluster (host1 all roles, host2 and host3 workers, no addons), up and every
    /// node Ready. Cheap when the cluster is already so.
    pub async fn standard(&self) -> KubeApi {
        self.reset_config(3);
        let (mut ok, mut text) = self.rkers(&["up"]);
        if !ok && text.contains("rkers up --yes") {
            // A test stopped midway left the state as RKE1 writes it: adopt it again.
            (ok, text) = self.rkers(&["up", "--yes"]);
        }
        if !ok && text.contains("--force") {
            // Hosts carry containers of a cluster whose state is gone (e.g. a test binary
            // killed midway). Start over rather than adopt an unknown cluster.
            self.fresh();
            self.up();
        } else {
            assert!(ok, "rkers up failed:\n{text}");
        }
        let api = self.api().await;
        wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
        api
    }

    /// Runs rkers with `--config` and `--known-hosts` of this cluster appended.
    pub fn rkers(&self, args: &[&str]) -> (bool, String) {
        self.rkers_env(args, &[])
    }

    pub fn rkers_env(&self, args: &[&str], envs: &[(&str, &str)]) -> (bool, String) {
        let out = self
            .command(args)
            .envs(envs.iter().copied())
            .output()
            .expect("run rkers");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// The rkers command line, for tests that need to spawn and signal it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rkers"));
        cmd.args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--known-hosts")
            .arg(&self.known_hosts);
        cmd
    }

    pub fn up(&self) -> String {
        let started = Instant::now();
        let (ok, text) = self.rkers(&["up"]);
        assert!(ok, "rkers up failed:\n{text}");
        eprintln!("rkers up took {:.1}s", started.elapsed().as_secs_f64());
        text
    }

    pub fn dry_run(&self) -> String {
        let (ok, text) = self.rkers(&["up", "--dry-run"]);
        assert!(ok, "rkers up --dry-run failed:\n{text}");
        text
    }

    /// The dry run of `up` on a cluster rkers has not written: it succeeds and shows the
    /// adoption summary; returns its text and its actions by host.
    pub fn adoption_dry_run(&self) -> (String, Vec<(String, String)>) {
        let (ok, dry) = self.rkers(&["up", "--dry-run"]);
        assert!(ok, "{dry}");
        assert!(
            dry.contains("Adopting a cluster whose state rkers has not written"),
            "{dry}"
        );
        let actions = dry_run_actions(&dry);
        (dry, actions)
    }

    pub fn edit(&self, f: impl FnOnce(&str) -> String) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, f(&text)).unwrap();
    }

    /// kubelet's CNI config directory moved to `/etc/cni/net.d-host1`, a copy only host1 has,
    /// and workers upgraded one at a time: host1's new kubelet is Ready, a worker's answers its
    /// health check but its node stays NotReady. Undone by [`Self::reset_config`], an `up`,
    /// and removing `/etc/cni/net.d-host1`.
    pub fn only_host1_keeps_its_cni_config(&self) {
        self.env.on_host(
            "host1",
            "rm -rf /etc/cni/net.d-host1 && cp -a /etc/cni/net.d /etc/cni/net.d-host1",
        );
        self.edit(|t| {
            format!(
                "{}upgrade_strategy:\n  max_unavailable_worker: 1\n",
                t.replacen(
                    "  kubelet:\n    extra_args:\n",
                    "  kubelet:\n    extra_args:\n      cni-conf-dir: /etc/cni/net.d-host1\n",
                    1
                )
            )
        });
    }

    pub fn state_path(&self) -> PathBuf {
        self.dir.join("cluster.rkestate")
    }

    pub fn state(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    pub fn kubeconfig_path(&self) -> PathBuf {
        self.dir.join("kube_config_cluster.yml")
    }

    pub fn kubeconfig(&self) -> String {
        std::fs::read_to_string(self.kubeconfig_path()).unwrap()
    }

    pub async fn api(&self) -> KubeApi {
        KubeApi::from_kubeconfig(&self.kubeconfig()).await.unwrap()
    }

    /// kubectl (built by scripts/build-k8s) with this cluster's kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(kubectl())
            .arg("--kubeconfig")
            .arg(self.kubeconfig_path())
            .args(args)
            .output()
            .expect("run kubectl");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

/// The kubectl binary scripts/build-k8s caches.
pub fn kubectl() -> PathBuf {
    std::env::var_os("RKERS_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rkers/k8s/current/bin/kubectl"))
}

/// Waits until exactly `names` are the cluster's nodes and all are Ready.
pub async fn wait_nodes_ready(api: &KubeApi, names: &[&str], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let nodes: Api<Node> = Api::all(api.client.clone());
        let list = nodes.list(&ListParams::default()).await.unwrap();
        let ready: BTreeSet<String> = list
            .items
            .iter()
            .filter(|n| rkers::kubeapi::nodes::is_ready(n))
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let all: BTreeSet<String> = list
            .items
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let want: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        if want.is_subset(&ready) && all == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nodes not as expected: want {want:?} Ready, have {all:?}, ready {ready:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Why pods matching `selector` in `namespace` are not ready, for a failing test's message: each
/// one's phase, containers, events and last log lines (as `rkers up` reports an addon), then
/// every node's conditions other than Ready=True and its taints (a node under disk-pressure
/// takes no new pods).
pub async fn why_pods_wait(api: &KubeApi, namespace: &str, selector: &str) -> String {
    let labels = selector
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut out = rkers::addons::wait::describe_pods(api, namespace, &labels, None).await;
    let nodes: Api<Node> = Api::all(api.client.clone());
    match nodes.list(&ListParams::default()).await {
        Ok(list) => {
            for node in list.items {
                let name = node.metadata.name.clone().unwrap_or_default();
                let conditions: Vec<String> = node
                    .status
                    .iter()
                    .flat_map(|s| s.conditions.iter().flatten())
                    .filter(|c| (c.type_ == "Ready") != (c.status == "True"))
                    .map(|c| format!("{}={}", c.type_, c.status))
                    .collect();
                let taints: Vec<String> = node
                    .spec
                    .iter()
                    .flat_map(|s| s.taints.iter().flatten())
                    .map(|t| format!("{}:{}", t.key, t.effect))
                    .collect();
                out.push_str(&format!(
                    "\n    node {name}: conditions {conditions:?}, taints {taints:?}"
                ));
            }
        }
        Err(e) => out.push_str(&format!("\n    (cannot list nodes: {e})")),
    }
    out
}

/// The node entry of `address` in a sandbox cluster.yml, as text (with its trailing newline).
pub fn node_entry(yml: &str, address: &str) -> String {
    let start = yml
        .find(&format!("  - address: {address}\n"))
        .unwrap_or_else(|| panic!("node {address} not in sandbox cluster.yml"));
    let rest = &yml[start + 4..];
    // The entry ends where the next node or the next top-level key starts, whichever is first
    // (`private_registries` further down has list items too).
    let end = ["\n  - ", "\ncluster_name:"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .map(|i| i + 1)
        .unwrap();
    yml[start..start + 4 + end].to_string()
}

/// Members of the etcd cluster as `etcdctl member list` on `host` names them.
pub fn etcd_members(env: &SandboxEnv, host: &str) -> Vec<String> {
    env.on_host(host, "docker exec etcd etcdctl member list")
        .lines()
        .filter_map(|l| l.split(", ").nth(2).map(str::to_string))
        .collect()
}

/// The action lines of a dry run, by host.
pub fn dry_run_actions(text: &str) -> Vec<(String, String)> {
    let mut host = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        // The list ends with its totals ("N actions on M hosts"); what follows is other output.
        if line.contains(" on ") && (line.ends_with(" hosts") || line.ends_with(" host")) {
            break;
        }
        if let Some(action) = line.strip_prefix("  - ") {
            out.push((host.clone(), action.to_string()));
        } else if let Some(h) = line.strip_suffix(':')
            && !line.starts_with(' ')
        {
            host = h.to_string();
        } else if line.starts_with("      ")
            && let Some((_, last)) = out.last_mut().map(|(h, a)| (h.clone(), a))
        {
            // A recreated container's field changes.
            last.push('\n');
            last.push_str(line.trim());
        }
    }
    out
}
