//! Adopting a cluster the real RKE v1.8 built (issue 48, items 1 and 2), nothing stood in for:
//! RKE v1.8.14 itself, built from its Go module by `scripts/build-modules rke v1.8.14` (a test
//! tool, never shipped), lays down a three-host v1.32.9 cluster (cri-dockerd, flannel, CoreDNS,
//! metrics-server) from the images `scripts/sandbox images` builds from their modules, under the
//! names RKE v1.8.14's own metadata asks for (the same list rkers' metadata gives, checked).
//!
//! 1. `rke up` succeeds and the nodes are Ready; every addon manifest RKE's own code rendered
//!    (its variables from cluster.yml, its Go text/template and function map), as it stored it
//!    in the addon's ConfigMap, holds the objects rkers renders for the same cluster.yml.
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

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use support::rke1_real::{
    RKE, RkeCluster, VERSION, actions, assert_plans_nothing, assert_same, run,
};

/// Each system addon manifest RKE stored (ConfigMap `kube-system/<resource>`, written by its
/// own code from cluster.yml) against rkers' rendering of the same cluster.yml, object by
/// object: a variable rkers computes differently from RKE changes an object.
fn same_addons_as_rke(c: &RkeCluster) {
    use rkers::output::{OutputFormat, Reporter};
    let reporter = Reporter::new(OutputFormat::Text, true);
    let cluster = rkers::cluster::Cluster::load(&c.config, &reporter)
        .unwrap_or_else(|e| panic!("rkers cannot load {}: {e}", c.config.display()));
    let plans = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(rkers::phases::addons::addon_plans(&cluster))
        .expect("rkers renders the addons");
    let parse = |resource: &str, text: &str| {
        rkers::addons::apply::parse_manifest(resource, text)
            .unwrap_or_else(|e| panic!("{resource}: {e}"))
    };
    let (mut compared, mut same_bytes) = (Vec::new(), 0);
    for plan in plans.iter().filter(|p| p.template.is_some()) {
        let Some(ours) = &plan.manifest else { continue };
        let resource = plan.resource;
        let (ok, json) = c.kubectl(&[
            "-n",
            "kube-system",
            "get",
            "configmap",
            resource,
            "-o",
            "json",
        ]);
        assert!(ok, "RKE {RKE} stored no manifest for {resource}: {json}");
        let cm: serde_json::Value = serde_json::from_str(&json).unwrap();
        let theirs = cm["data"][resource]
            .as_str()
            .unwrap_or_else(|| panic!("ConfigMap {resource} has no data.{resource}: {json}"));
        same_bytes += usize::from(theirs == ours);
        let (want, got) = (parse(resource, theirs), parse(resource, ours));
        let id = |o: &serde_json::Value| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("?")
            )
        };
        let ids = |v: &[serde_json::Value]| v.iter().map(id).collect::<Vec<_>>();
        assert_eq!(
            ids(&got),
            ids(&want),
            "{resource}: the objects RKE {RKE} rendered"
        );
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(g, w, "{resource}: {} as RKE {RKE} rendered it", id(w));
        }
        compared.push(format!(
            "{resource} ({})",
            plan.template.as_deref().unwrap_or("")
        ));
    }
    assert!(
        compared.len() >= 3,
        "the network plugin, CoreDNS and metrics-server at least: {compared:?}"
    );
    eprintln!(
        "addons: {} manifests RKE {RKE} rendered are rkers' objects, {same_bytes} byte for byte: {}",
        compared.len(),
        compared.join(", ")
    );
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

#[test]
fn a_cluster_the_real_rke_v1_8_built_is_adopted_without_a_restart_and_rke_still_runs_on_it() {
    let Some(sb) = support::rke1_real::fresh_instance() else {
        return;
    };
    let started = Instant::now();
    let c = RkeCluster::prepare(&sb, PathBuf::from(env!("CARGO_BIN_EXE_rkers")));

    // RKE's metadata and rkers' name the same images, so the sandbox's serve both.
    let images = |bin: &PathBuf| {
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
        images(&c.rke),
        images(&c.rkers),
        "RKE {RKE} and rkers ask for other images"
    );

    // 1. RKE builds the cluster.
    c.rke_up();
    c.wait_settled("rke up");
    let rke_state = std::fs::read_to_string(c.work.join("cluster.rkestate")).unwrap();
    let before = c.containers();
    same_addons_as_rke(&c);

    // 2. The dry run: an adoption with nothing to do to a container or an addon.
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "rkers up --dry-run failed:\n{dry}");
    assert!(dry.contains("Adopting"), "{dry}");
    assert!(
        !dry.contains("recreate container") && !dry.contains("restart container"),
        "the adoption restarts containers RKE {RKE} built:\n{dry}"
    );
    assert_plans_nothing(&dry, &format!("the adoption of RKE {RKE}'s cluster"));
    assert_eq!(c.containers(), before, "the dry run changed a container");

    // 3. The run keeps every container, IDs and start times.
    let t = Instant::now();
    let (ok, out) = c.rkers(&["up", "--yes"]);
    assert!(ok, "rkers up --yes failed:\n{out}");
    eprintln!("rkers up (adoption): {:.1}s", t.elapsed().as_secs_f64());
    assert_same(
        &before,
        &c.containers(),
        "rkers up restarted or replaced a container",
    );
    let written = std::fs::read_to_string(c.work.join("cluster.rkestate")).unwrap();
    assert_ne!(written, rke_state, "rkers wrote no state");

    // 4. Nothing left to do.
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "{dry}");
    assert!(!dry.contains("Adopting"), "{dry}");
    assert!(
        actions(&dry).is_empty(),
        "the second dry run plans actions:\n{dry}"
    );

    // 5. RKE runs on the state rkers wrote, and restarts nothing either.
    c.rke_up();
    let after_rke: Vec<String> = c
        .containers()
        .into_iter()
        .filter(|l| rke_keeps(l))
        .collect();
    let before_rke: Vec<String> = before.iter().filter(|l| rke_keeps(l)).cloned().collect();
    assert_same(
        &before_rke,
        &after_rke,
        "rke up after rkers restarted a container",
    );

    // 6. The hosts' Docker upgraded in place to 29.7.1; rkers then finds nothing to do on
    //    Docker 29 either, and restarts nothing.
    c.docker_29_everywhere();
    let rke_containers = |all: Vec<String>| -> Vec<String> {
        all.into_iter().filter(|l| !l.contains(" /k8s_")).collect()
    };
    let on_29 = c.containers();
    let pods_on_29 = c.pods();
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "rkers up --dry-run on Docker 29 failed:\n{dry}");
    assert_plans_nothing(&dry, "on Docker 29 rkers");
    let (ok, out) = c.rkers(&["up", "--yes"]);
    assert!(ok, "rkers up --yes on Docker 29 failed:\n{out}");
    let after_29 = c.containers();
    assert_same(
        &rke_containers(on_29.clone()),
        &rke_containers(after_29.clone()),
        "rkers up on Docker 29 restarted or replaced a container of RKE's",
    );
    assert_same(
        &pods_on_29,
        &c.pods(),
        "rkers up on Docker 29 replaced a pod",
    );
    for line in after_29.iter().filter(|l| !on_29.contains(l)) {
        eprintln!("a pod's container kubelet started again during rkers up: {line}");
    }

    eprintln!("the whole test: {:.1}s", started.elapsed().as_secs_f64());
    let _ = sb.sandbox(&["down", "--purge"]);
}
