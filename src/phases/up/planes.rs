//! Apply: a plane of non-etcd components on a new cluster, all hosts in parallel, and the
//! early worker plane that starts a new cluster's kubelets while etcd comes up.

use super::containers::{apply_container, remove_unplanned, start_container};
use super::files::pull_host_images;
use super::run::{EARLY_WORKER_PLANE, Run, WORKER_PLANE};
use super::windows::sweep_windows_orphans;
use super::{UpError, finish};
use crate::phases::Runner;
use crate::plan::{self, HostPlan};
use std::sync::Arc;

/// A plane of non-etcd components on the hosts `select` picks, all hosts in parallel.
pub(super) async fn plane(
    run: &Arc<Run>,
    runner: &Runner,
    title: &'static str,
    names: &'static [&'static str],
    select: fn(&HostPlan) -> bool,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase(title);
    let hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| select(h))
        .map(|h| h.address.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host(title, title, hosts, move |address| {
            let run = r.clone();
            async move { apply_plane_on(&run, &address, names).await }
        })
        .await;
    finish(phase, result)
}

/// A new cluster's Linux hosts start nginx-proxy, service-sidekick and kubelet while etcd and
/// the control plane come up: these need only the host's own files (written by now) and images
/// (worker-only hosts pull theirs here, the others have them already). nginx-proxy forwards to
/// the control plane whenever it listens, and kubelet retries the API server by itself and
/// registers its node as soon as it answers, so none of them waits for the control plane's
/// health checks. On a control plane host service-sidekick is shared with the control plane,
/// whichever comes first makes it ([`apply_container`]).
/// kube-proxy still waits for the worker plane proper: v1.20 reads its node IP from its Node
/// object at start, retrying for about a minute and then keeping 127.0.0.1 for good, so it
/// needs the API server answering and the node registered. Windows workers keep the usual
/// order: their orphan sweep must run before anything of theirs starts.
/// Returns the hosts, and those of them with no etcd or control plane role.
pub(super) fn early_worker_hosts(run: &Run) -> (Vec<String>, Vec<String>) {
    let linux: Vec<&HostPlan> = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.containers.contains_key(plan::KUBELET))
        .filter(|h| !run.plan.windows.contains_key(&h.address))
        .collect();
    let worker_only = linux
        .iter()
        .filter(|h| !h.roles.controlplane && !h.roles.etcd)
        .map(|h| h.address.clone())
        .collect();
    (
        linux.iter().map(|h| h.address.clone()).collect(),
        worker_only,
    )
}

/// The early worker plane of a new cluster's etcd and control plane hosts, started without
/// waiting for health: each host starts it before its etcd, as the dry run lists, and
/// [`early_worker_plane`] waits for its health while etcd comes up (kubelet takes seconds to
/// answer, and nothing before the worker plane needs it).
pub(super) async fn start_early_worker_plane(
    run: &Arc<Run>,
    runner: &Runner,
    title: &'static str,
    hosts: Vec<String>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase(title);
    let r = run.clone();
    let result = runner
        .for_each_host(title, "kubelet before etcd", hosts, move |address| {
            let run = r.clone();
            async move {
                let h = run.host_plan(&address);
                remove_unplanned(&run, h, EARLY_WORKER_PLANE).await?;
                for name in EARLY_WORKER_PLANE {
                    if h.containers.contains_key(*name) {
                        start_container(&run, h, name).await?;
                    }
                }
                Ok(())
            }
        })
        .await;
    finish(phase, result)
}

/// [`early_worker_hosts`]: images where asked, then nginx-proxy, service-sidekick and kubelet,
/// each waited for until healthy. `started` hosts ran [`start_early_worker_plane`]: only the
/// health waits remain there.
pub(super) async fn early_worker_plane(
    run: Arc<Run>,
    runner: Runner,
    title: &'static str,
    hosts: Vec<String>,
    pull: Vec<String>,
    started: Vec<String>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase(title);
    let r = run.clone();
    let (pull, started) = (Arc::new(pull), Arc::new(started));
    let result = runner
        .for_each_host(
            title,
            "kubelet before the control plane",
            hosts,
            move |address| {
                let (run, pull, started) = (r.clone(), pull.clone(), started.clone());
                async move {
                    if pull.contains(&address) {
                        pull_host_images(&run, &address).await?;
                    }
                    if started.contains(&address) {
                        let (h, host) = (run.host_plan(&address), run.host(&address));
                        for name in EARLY_WORKER_PLANE {
                            if h.containers.contains_key(*name) {
                                apply_container(&run, host, h, name).await?;
                            }
                        }
                        return Ok(());
                    }
                    apply_plane_on(&run, &address, EARLY_WORKER_PLANE).await
                }
            },
        )
        .await;
    finish(phase, result)
}

/// Brings `names` on one host to their planned state, unplanned ones removed first.
pub(super) async fn apply_plane_on(run: &Run, address: &str, names: &[&str]) -> Result<(), String> {
    let h = run.host_plan(address);
    let host = run.host(address);
    remove_unplanned(run, h, names).await?;
    if names == WORKER_PLANE {
        sweep_windows_orphans(run, address).await?;
    }
    for name in names {
        if h.containers.contains_key(*name) {
            apply_container(run, host, h, name).await?;
        }
    }
    Ok(())
}
