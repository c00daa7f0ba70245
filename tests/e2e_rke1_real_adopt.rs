//! Adopting a cluster the real RKE v1.8 built (issue 48, items 1 and 2), nothing stood in for:
//! RKE v1.8.14 itself, built from its Go module by `scripts/build-modules rke v1.8.14` (a test
//! tool, never shipped), lays down a three-host v1.32.9 cluster (cri-dockerd, flannel, CoreDNS,
//! metrics-server) from the images `scripts/sandbox images` builds from their modules, under the
//! names RKE v1.8.14's own metadata asks for (the same list rkers' metadata gives, checked).
//!
//! 1. `rke up` succeeds and the nodes are Ready.
//! 2. `rkers up --dry-run` on RKE's cluster.yml and cluster.rkestate is an adoption that restarts,
//!    recreates and re-applies nothing.
//! 3. `rkers up --yes`: every container on every host (RKE's and the pods') keeps its ID and its
//!    start time.
//! 4. The next `rkers up --dry-run` plans nothing and no longer speaks of adopting.
//! 5. RKE v1.8.14's `up` runs on the state rkers wrote and restarts nothing either.
//! 6. Each host's Docker is upgraded in place to 29.7.1 (built from its modules); rkers then
//!    plans nothing and restarts nothing on Docker 29 (issue 48, item 5's adoption): RKE's
//!    containers keep their IDs and start times, and every pod its UID. A pod's container that
//!    kubelet itself starts again after a Docker restart keeps its pod: that is printed, not
//!    failed (in CI once, some did, while `rkers up` had planned and done nothing).
//!
//! The sandbox instance is `RKERS_REAL_E2E` (the one `tests/e2e_real_cluster.rs` uses; the two
//! run one at a time), with the hosts' packaged Docker 20.10: RKE v1.8's own Docker client
//! speaks API 1.41 at most.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::docker_host::Instance;

const VERSION: &str = "v1.32.9-rancher1-1";
const RKE: &str = "v1.8.14";
const HOSTS: [&str; 3] = ["host1", "host2", "host3"];

fn run(cmd: &mut Command) -> (bool, String) {
    support::outcome(cmd.output().expect("run a command"))
}

/// The bin directory scripts/build-modules prints last (a cache hit once built).
fn build_module(component: &str, version: &str) -> PathBuf {
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

/// Every container on every host as `host name id started-at`: RKE's, one-shot ones it leaves
/// exited included, and the pods' running ones (an exited pod container is kubelet's to
/// garbage-collect, whoever runs the cluster). None may change.
fn containers(sb: &Instance) -> Vec<String> {
    let mut all = Vec::new();
    for host in HOSTS {
        let (ok, text) = sb.on_host(
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

/// Fails naming the lines that differ (`-` before, `+` after) when `after` is not `before`.
fn assert_same(before: &[String], after: &[String], what: &str) {
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

/// Every pod as `namespace/name uid`: a pod replaced (an addon rolled out, a job run again) has
/// another UID; one whose container kubelet restarted keeps its UID.
fn pods(kubectl: &Path, kubeconfig: &Path) -> Vec<String> {
    let (ok, out) = run(Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "get",
            "pods",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.uid}{\"\\n\"}{end}",
        ]));
    assert!(ok, "kubectl get pods: {out}");
    let mut all: Vec<String> = out.lines().map(str::to_string).collect();
    all.sort();
    assert!(!all.is_empty(), "no pods");
    all
}

/// Whether RKE's own `up` keeps this container when nothing changed: its one-shot containers
/// (the state deployer, the addon jobs' pods) run again, and it removes and starts
/// etcd-rolling-snapshots on every run (rancher/rke v1.8.14 `services/etcd.go`,
/// `RunEtcdSnapshotSave`: `DoRemoveContainer`, then `DoRunContainer`), whoever ran before it.
fn rke_keeps(line: &str) -> bool {
    !line.contains("/cluster-state-deployer ")
        && !line.contains("deploy-job")
        && !line.contains("/etcd-rolling-snapshots ")
}

/// Waits until the three nodes are Ready and every pod is Running with all its containers ready
/// (or Completed, RKE's addon jobs), so that nothing is recorded mid-start.
fn wait_settled(kubectl: &Path, kubeconfig: &Path, after: &str) {
    let get = |args: &[&str]| {
        run(Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args))
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (nodes_ok, nodes) = get(&["get", "nodes", "--no-headers"]);
        let (pods_ok, pods) = get(&["get", "pods", "-A", "--no-headers"]);
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

/// Fails unless the dry run's only action is saving the state.
fn assert_plans_nothing(dry: &str, who: &str) {
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
fn actions(dry: &str) -> Vec<&str> {
    dry.lines()
        .filter(|l| l.trim_start().starts_with("- "))
        .collect()
}

#[test]
fn a_cluster_the_real_rke_v1_8_built_is_adopted_without_a_restart_and_rke_still_runs_on_it() {
    let Some(sb) = Instance::fresh_with(
        "RKERS_REAL_E2E",
        &[
            "--hosts", "3", "--roles", "default", "--cni", "none", "--docker", "system",
        ],
    ) else {
        return;
    };
    let started = Instant::now();
    let yml = sb.sandbox(&["images", VERSION]);
    let yml = PathBuf::from(yml.lines().last().expect("a cluster.yml path"));
    let rke = build_module("rke", RKE).join("rke");
    let kubectl = build_module("kubernetes", "v1.32.9").join("kubectl");
    let rkers = PathBuf::from(env!("CARGO_BIN_EXE_rkers"));

    // RKE's metadata and rkers' name the same images, so the sandbox's serve both.
    let images = |bin: &Path| {
        let (ok, out) =
            run(Command::new(bin).args(["config", "--system-images", "--version", VERSION]));
        assert!(ok, "{} config --system-images: {out}", bin.display());
        let mut list: Vec<String> = out
            .lines()
            .filter(|l| !l.contains("level=") && !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        list.sort();
        list
    };
    assert_eq!(
        images(&rke),
        images(&rkers),
        "RKE {RKE} and rkers ask for other images"
    );

    let work = sb.dir.join("e2e-rke1");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let config = work.join("cluster.yml");
    // RKE waits for each addon's deploy job for addon_job_timeout seconds (30 by default), which a
    // loaded two-core machine outlasts; rkers reads the same key.
    let text = std::fs::read_to_string(&yml).unwrap();
    assert!(!text.contains("addon_job_timeout"), "{text}");
    std::fs::write(&config, format!("{text}addon_job_timeout: 300\n")).unwrap();
    let kubeconfig = work.join("kube_config_cluster.yml");

    // 1. RKE builds the cluster.
    let t = Instant::now();
    let (ok, out) =
        run(Command::new(&rke)
            .current_dir(&work)
            .args(["up", "--config", "cluster.yml"]));
    assert!(ok, "rke up failed:\n{out}");
    eprintln!("rke {RKE} up {VERSION}: {:.1}s", t.elapsed().as_secs_f64());
    let settle = |after: &str| {
        wait_settled(&kubectl, &kubeconfig, after);
    };
    settle("rke up");
    let rke_state = std::fs::read_to_string(work.join("cluster.rkestate")).unwrap();
    let before = containers(&sb);

    let rkers_cmd = |args: &[&str]| {
        run(Command::new(&rkers)
            .current_dir(&work)
            .args(args)
            .arg("--config")
            .arg(&config)
            .arg("--known-hosts")
            .arg(sb.dir.join("ssh/known_hosts")))
    };

    // 2. The dry run: an adoption with nothing to do to a container or an addon.
    let (ok, dry) = rkers_cmd(&["up", "--dry-run"]);
    assert!(ok, "rkers up --dry-run failed:\n{dry}");
    assert!(dry.contains("Adopting"), "{dry}");
    assert!(
        !dry.contains("recreate container") && !dry.contains("restart container"),
        "the adoption restarts containers RKE {RKE} built:\n{dry}"
    );
    assert_plans_nothing(&dry, &format!("the adoption of RKE {RKE}'s cluster"));
    assert_eq!(containers(&sb), before, "the dry run changed a container");

    // 3. The run keeps every container, IDs and start times.
    let t = Instant::now();
    let (ok, out) = rkers_cmd(&["up", "--yes"]);
    assert!(ok, "rkers up --yes failed:\n{out}");
    eprintln!("rkers up (adoption): {:.1}s", t.elapsed().as_secs_f64());
    assert_same(
        &before,
        &containers(&sb),
        "rkers up restarted or replaced a container",
    );
    let written = std::fs::read_to_string(work.join("cluster.rkestate")).unwrap();
    assert_ne!(written, rke_state, "rkers wrote no state");

    // 4. Nothing left to do.
    let (ok, dry) = rkers_cmd(&["up", "--dry-run"]);
    assert!(ok, "{dry}");
    assert!(!dry.contains("Adopting"), "{dry}");
    assert!(
        actions(&dry).is_empty(),
        "the second dry run plans actions:\n{dry}"
    );

    // 5. RKE runs on the state rkers wrote, and restarts nothing either.
    let (ok, out) =
        run(Command::new(&rke)
            .current_dir(&work)
            .args(["up", "--config", "cluster.yml"]));
    assert!(ok, "rke up on the state rkers wrote failed:\n{out}");
    let after_rke: Vec<String> = containers(&sb)
        .into_iter()
        .filter(|l| rke_keeps(l))
        .collect();
    let before_rke: Vec<String> = before.iter().filter(|l| rke_keeps(l)).cloned().collect();
    assert_same(
        &before_rke,
        &after_rke,
        "rke up after rkers restarted a container",
    );

    // 6. The hosts' Docker upgraded in place to 29.7.1, one host after the other as an operator
    //    would (dockerd restarts: every container restarts with it, same IDs); rkers then finds
    //    nothing to do on Docker 29 either, and restarts nothing.
    for host in HOSTS {
        sb.sandbox(&["docker", host, "29"]);
        let (ok, server) = sb.on_host(host, "docker version --format '{{.Server.Version}}'");
        assert!(ok && server.trim() == "29.7.1", "{host}: Docker {server}");
        settle(&format!("{host}'s Docker 29.7.1"));
    }
    // Right after a Docker restart the API server can still hold the pods' statuses from before
    // it, so "settled" can come before kubelet has started the pods' containers again: wait
    // until the containers stay the same for 15 s as well (seen here: host3's pods started
    // again a few seconds after their nodes read Ready and their pods Running).
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let first = containers(&sb);
        std::thread::sleep(Duration::from_secs(15));
        settle("15 s more on Docker 29.7.1");
        if containers(&sb) == first {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the containers still change 300 s after the Docker upgrades"
        );
    }
    let rke_containers = |all: Vec<String>| -> Vec<String> {
        all.into_iter().filter(|l| !l.contains(" /k8s_")).collect()
    };
    let on_29 = containers(&sb);
    let pods_on_29 = pods(&kubectl, &kubeconfig);
    let (ok, dry) = rkers_cmd(&["up", "--dry-run"]);
    assert!(ok, "rkers up --dry-run on Docker 29 failed:\n{dry}");
    assert_plans_nothing(&dry, "on Docker 29 rkers");
    let (ok, out) = rkers_cmd(&["up", "--yes"]);
    assert!(ok, "rkers up --yes on Docker 29 failed:\n{out}");
    let after_29 = containers(&sb);
    assert_same(
        &rke_containers(on_29.clone()),
        &rke_containers(after_29.clone()),
        "rkers up on Docker 29 restarted or replaced a container of RKE's",
    );
    assert_same(
        &pods_on_29,
        &pods(&kubectl, &kubeconfig),
        "rkers up on Docker 29 replaced a pod",
    );
    for line in after_29.iter().filter(|l| !on_29.contains(l)) {
        eprintln!("a pod's container kubelet started again during rkers up: {line}");
    }

    eprintln!("the whole test: {:.1}s", started.elapsed().as_secs_f64());
    let _ = sb.sandbox(&["down", "--purge"]);
}
