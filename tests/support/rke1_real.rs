//! What the tests on a cluster the real RKE v1.8.14 built share (`e2e_rke1_real_adopt`,
//! `e2e_upgrade_chain`): the module-built tools, RKE's `up`, the hosts' containers and the pods
//! as comparable lines, waiting until the cluster has settled, and reading a dry run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::docker_host::Instance;

/// The RKE release that builds the clusters, and the Kubernetes version it builds.
pub const RKE: &str = "v1.8.14";
pub const VERSION: &str = "v1.32.9-rancher1-1";
pub const HOSTS: [&str; 3] = ["host1", "host2", "host3"];

/// The `RKERS_REAL_E2E` instance, fresh: three hosts with the default roles, no stand-in CNI,
/// Debian's Docker 20.10 (RKE v1.8's own Docker client speaks API 1.41 at most).
pub fn fresh_instance() -> Option<Instance> {
    Instance::fresh_with(
        "RKERS_REAL_E2E",
        &[
            "--hosts", "3", "--roles", "default", "--cni", "none", "--docker", "system",
        ],
    )
}

pub fn run(cmd: &mut Command) -> (bool, String) {
    super::outcome(cmd.output().expect("run a command"))
}

/// The bin directory scripts/build-modules prints last (a cache hit once built).
pub fn build_module(component: &str, version: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-modules");
    let out = Command::new("bash")
        .arg(script)
        .args([component, version])
        .output()
        .expect("run scripts/build-modules");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/build-modules {component} {version} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Progress goes to stderr; the last line on stdout is the bin directory.
    PathBuf::from(stdout.lines().last().expect("a bin directory"))
}

/// A cluster RKE built in `work` (cluster.yml, cluster.rkestate, kube_config_cluster.yml), with
/// the tools that drive it.
pub struct RkeCluster<'a> {
    pub sb: &'a Instance,
    pub work: PathBuf,
    pub config: PathBuf,
    pub kubeconfig: PathBuf,
    pub rke: PathBuf,
    pub rkers: PathBuf,
    pub kubectl: PathBuf,
}

impl<'a> RkeCluster<'a> {
    /// Builds the tools and writes cluster.yml for `VERSION` from `scripts/sandbox images`, with
    /// `addon_job_timeout: 300`: RKE waits for each addon's deploy job that long (30 s by
    /// default, which a loaded two-core machine outlasts); rkers reads the same key.
    pub fn prepare(sb: &'a Instance, rkers: PathBuf) -> RkeCluster<'a> {
        let yml = sb.sandbox(&["images", VERSION]);
        let yml = PathBuf::from(yml.lines().last().expect("a cluster.yml path"));
        let rke = build_module("rke", RKE).join("rke");
        let kubectl = build_module("kubernetes", "v1.32.9").join("kubectl");
        let work = sb.dir.join("e2e-rke1");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let config = work.join("cluster.yml");
        let text = std::fs::read_to_string(&yml).unwrap();
        assert!(!text.contains("addon_job_timeout"), "{text}");
        std::fs::write(&config, format!("{text}addon_job_timeout: 300\n")).unwrap();
        let kubeconfig = work.join("kube_config_cluster.yml");
        RkeCluster {
            sb,
            work,
            config,
            kubeconfig,
            rke,
            rkers,
            kubectl,
        }
    }

    /// `rke up` in the work directory; fails the test when it fails.
    pub fn rke_up(&self) {
        let t = Instant::now();
        let (ok, out) = run(Command::new(&self.rke).current_dir(&self.work).args([
            "up",
            "--config",
            "cluster.yml",
        ]));
        if !ok {
            panic!("rke up failed:\n{out}\n{}", self.diagnosis());
        }
        eprintln!("rke {RKE} up: {:.1}s", t.elapsed().as_secs_f64());
    }

    /// What the cluster shows when a step fails: its nodes' conditions and taints, its pods
    /// and its latest events (RKE's own errors name only the job that timed out).
    pub fn diagnosis(&self) -> String {
        let mut out = String::from("the cluster at this failure:");
        for args in [
            &[
                "get",
                "nodes",
                "-o",
                "custom-columns=NODE:.metadata.name,CONDITIONS:.status.conditions[?(@.status==\"True\")].type,TAINTS:.spec.taints[*].key",
            ][..],
            &["get", "pods", "-A", "-o", "wide"][..],
            &["get", "events", "-A", "--sort-by=.lastTimestamp"][..],
        ] {
            let (_, text) = self.kubectl(args);
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("\n$ kubectl {}", args.join(" ")));
            for line in &lines[lines.len().saturating_sub(25)..] {
                out.push_str(&format!("\n  {line}"));
            }
        }
        out
    }

    pub fn rkers(&self, args: &[&str]) -> (bool, String) {
        run(Command::new(&self.rkers)
            .current_dir(&self.work)
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--known-hosts")
            .arg(self.sb.dir.join("ssh/known_hosts")))
    }

    pub fn kubectl(&self, args: &[&str]) -> (bool, String) {
        run(Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args))
    }

    /// Every container on every host as `host name id started-at`: RKE's, one-shot ones it
    /// leaves exited included, and the pods' running ones (an exited pod container is kubelet's
    /// to garbage-collect, whoever runs the cluster).
    pub fn containers(&self) -> Vec<String> {
        let mut all = Vec::new();
        for host in HOSTS {
            let (ok, text) = self.sb.on_host(
                host,
                "docker ps -aq | xargs -r docker inspect --format '{{.Name}} {{.Id}} {{.State.StartedAt}} {{.State.Running}}'",
            );
            assert!(ok, "{host}: docker inspect: {text}");
            all.extend(text.lines().filter_map(|l| {
                let (container, running) = l.rsplit_once(' ')?;
                (!container.starts_with("/k8s_") || running == "true")
                    .then(|| format!("{host} {container}"))
            }));
        }
        all.sort();
        all
    }

    /// Every pod as `namespace/name uid`: a pod replaced (an addon rolled out, a job run again)
    /// has another UID; one whose container kubelet restarted keeps its UID.
    pub fn pods(&self) -> Vec<String> {
        let (ok, out) = self.kubectl(&[
            "get",
            "pods",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.uid}{\"\\n\"}{end}",
        ]);
        assert!(ok, "kubectl get pods: {out}");
        let mut all: Vec<String> = out.lines().map(str::to_string).collect();
        all.sort();
        assert!(!all.is_empty(), "no pods");
        all
    }

    /// Waits until the three nodes are Ready and every pod is Running with all its containers
    /// ready (or Completed, RKE's addon jobs), so that nothing is recorded mid-start.
    pub fn wait_settled(&self, after: &str) {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let (nodes_ok, nodes) = self.kubectl(&["get", "nodes", "--no-headers"]);
            let (pods_ok, pods) = self.kubectl(&["get", "pods", "-A", "--no-headers"]);
            let ready = nodes_ok
                && nodes
                    .lines()
                    .filter(|l| l.split_whitespace().nth(1) == Some("Ready"))
                    .count()
                    == 3;
            let settled = pods_ok
                && pods.lines().count() > 0
                && pods.lines().all(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.get(3) == Some(&"Completed")
                        || (f.get(3) == Some(&"Running")
                            && f.get(2)
                                .is_some_and(|r| r.split_once('/').is_some_and(|(a, b)| a == b)))
                });
            if ready && settled {
                eprintln!("after {after}:\n{nodes}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not settled 300 s after {after}:\n{nodes}\n{pods}"
            );
            std::thread::sleep(Duration::from_secs(3));
        }
    }

    /// Each host's Docker upgraded in place to 29.7.1, one host after the other as an operator
    /// would (dockerd restarts, and every container with it, same IDs), then settled.
    ///
    /// Right after a Docker restart the API server can still hold the pods' statuses from
    /// before it, so "settled" can come before kubelet has started the pods' containers again:
    /// this also waits until the containers stay the same for 15 s (seen here: host3's pods
    /// started again a few seconds after their nodes read Ready and their pods Running).
    pub fn docker_29_everywhere(&self) {
        for host in HOSTS {
            self.sb.sandbox(&["docker", host, "29"]);
            let (ok, server) = self
                .sb
                .on_host(host, "docker version --format '{{.Server.Version}}'");
            assert!(ok && server.trim() == "29.7.1", "{host}: Docker {server}");
            self.wait_settled(&format!("{host}'s Docker 29.7.1"));
        }
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let first = self.containers();
            std::thread::sleep(Duration::from_secs(15));
            self.wait_settled("15 s more on Docker 29.7.1");
            if self.containers() == first {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the containers still change 300 s after the Docker upgrades"
            );
        }
    }
}

/// Fails naming the lines that differ (`-` before, `+` after) when `after` is not `before`.
pub fn assert_same(before: &[String], after: &[String], what: &str) {
    let gone: Vec<String> = before
        .iter()
        .filter(|l| !after.contains(l))
        .map(|l| format!("- {l}"))
        .collect();
    let new: Vec<String> = after
        .iter()
        .filter(|l| !before.contains(l))
        .map(|l| format!("+ {l}"))
        .collect();
    assert!(
        gone.is_empty() && new.is_empty(),
        "{what}:\n{}\n{}",
        gone.join("\n"),
        new.join("\n")
    );
}

/// Fails unless the dry run's only action is saving the state.
pub fn assert_plans_nothing(dry: &str, who: &str) {
    let planned: Vec<&str> = actions(dry)
        .into_iter()
        .filter(|a| !a.contains("save the state"))
        .collect();
    assert!(
        planned.is_empty(),
        "{who} plans actions:\n{}\n\nwhole dry run:\n{dry}",
        planned.join("\n")
    );
}

/// The lines of a dry run that are actions (`  - ...`), outside the adoption summary.
pub fn actions(dry: &str) -> Vec<&str> {
    dry.lines()
        .filter(|l| l.trim_start().starts_with("- "))
        .collect()
}
