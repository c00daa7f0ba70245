//! Apply: a plane of non-etcd components on a new cluster, all hosts in parallel, and the
//! early worker plane that starts a new cluster's kubelets while etcd comes up.

use super::containers::{
    apply_container, changes_container, remove_unplanned, start_container,
    start_containers_side_by_side,
};
use super::files::pull_host_images;
use super::run::{CONTROL_PLANE, EARLY_WORKER_PLANE, ETCD_PLANE, Run, WORKER_PLANE};
use super::windows::sweep_windows_orphans;
use super::{UpError, finish};
use crate::diff::Action;
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

/// Waits until every control plane host's kube-apiserver answers its health check, whichever
/// of [`plane`] and this asks first (the wait happens once per run); the RBAC a new cluster's
/// kubelets need to register comes right after, while the other components are still asked.
pub(super) async fn api_servers_answer(run: &Run) -> Result<(), UpError> {
    let waits = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.roles.controlplane && h.containers.contains_key(plan::KUBE_APISERVER))
        .map(|h| apply_container(run, run.host(&h.address), h, plan::KUBE_APISERVER));
    futures::future::try_join_all(waits).await.map(|_| ())
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
        .filter(|h| !run.plan.platform(&h.address).runs_under_wins())
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
                Ok::<(), UpError>(())
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

/// Whether `actions` only bring `names` up: created, or started where they stand, and nothing
/// removed, recreated or restarted. Only such containers may start before what they talk to
/// is healthy: there is no running component to replace, so no `old-…` container, rolling
/// budget or undo is at stake.
pub(super) fn only_fresh_starts(actions: &[Action], names: &[&str]) -> bool {
    !actions.iter().any(|a| match a {
        Action::RemoveContainer { name, .. }
        | Action::RecreateContainer { name, .. }
        | Action::RestartContainer { name, .. } => names.contains(&name.as_str()),
        _ => false,
    })
}

/// A new cluster's etcd and control plane containers, created on every host at once without
/// waiting for health: each host starts its etcd plane and its control plane side by side, and
/// reports them in the order the dry run lists. kube-apiserver retries etcd by itself, and
/// kube-controller-manager and kube-scheduler retry kube-apiserver, so their start-up overlaps
/// etcd's from before etcd's data directory is made; the etcd plane and
/// the control plane after it then only wait for health, where RBAC and the state need it.
/// Nothing happens (the planes start as before) unless every container concerned is fresh
/// ([`only_fresh_starts`]) and no etcd member joins or leaves, which keep their own order.
pub(super) async fn start_etcd_and_control_plane(
    run: &Arc<Run>,
    runner: &Runner,
) -> Result<(), UpError> {
    let hosts: Vec<&HostPlan> = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.roles.etcd || h.roles.controlplane)
        .collect();
    let names = [ETCD_PLANE, CONTROL_PLANE].concat();
    let joined = !run
        .joined
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty();
    if joined
        || !run.recon.etcd_removed.is_empty()
        || hosts
            .iter()
            .any(|h| !only_fresh_starts(&run.actions[&h.address], &names))
    {
        return Ok(());
    }
    let title = "etcd and control plane started";
    let phase = runner.reporter.phase(title);
    let addresses: Vec<String> = hosts.iter().map(|h| h.address.clone()).collect();
    let r = run.clone();
    let result = runner
        .for_each_host(title, "etcd and control plane", addresses, move |address| {
            let run = r.clone();
            async move {
                let h = run.host_plan(&address);
                let planned = |plane: &[&'static str], role: bool| -> Vec<&'static str> {
                    plane
                        .iter()
                        .copied()
                        .filter(|name| role && h.containers.contains_key(*name))
                        .collect()
                };
                // The etcd plane in its order beside the control plane in its own: neither
                // waits for the other to be created.
                let chains = [
                    planned(ETCD_PLANE, h.roles.etcd),
                    planned(CONTROL_PLANE, h.roles.controlplane),
                ];
                start_containers_side_by_side(&run, h, &chains).await
            }
        })
        .await;
    finish(phase, result)
}

/// Brings `names` on one host to their planned state, unplanned ones removed first.
pub(super) async fn apply_plane_on(
    run: &Run,
    address: &str,
    names: &[&str],
) -> Result<(), UpError> {
    let h = run.host_plan(address);
    let host = run.host(address);
    remove_unplanned(run, h, names).await?;
    if names == WORKER_PLANE {
        sweep_windows_orphans(run, address).await?;
    }
    let planned: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| h.containers.contains_key(*name))
        .collect();
    // Left as they are, the plane's containers are only asked for their health: side by side,
    // a no-op `up` waits one answer per host instead of one per component. Once one of them
    // changes, each waits for the one before it, in RKE1's order.
    if planned.iter().all(|name| !changes_container(run, h, name)) {
        let checks = planned
            .iter()
            .map(|name| apply_container(run, host, h, name));
        futures::future::try_join_all(checks).await?;
        return Ok(());
    }
    for name in planned {
        apply_container(run, host, h, name).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(name: &str) -> Action {
        Action::StartContainer { name: name.into() }
    }

    #[test]
    fn only_containers_brought_up_where_they_stand_start_early() {
        let names = [plan::ETCD, plan::KUBE_APISERVER];
        assert!(only_fresh_starts(
            &[start(plan::ETCD), start(plan::KUBELET)],
            &names
        ));
        assert!(only_fresh_starts(&[], &names));
        let replacing = [
            Action::RestartContainer {
                name: plan::KUBE_APISERVER.into(),
                reason: "a file it reads changed".into(),
            },
            Action::RemoveContainer {
                name: plan::ETCD.into(),
                reason: "unplanned".into(),
            },
        ];
        for a in replacing {
            assert!(!only_fresh_starts(&[start(plan::ETCD), a], &names));
        }
        // What other planes replace does not hold these back.
        let kubelet = Action::RestartContainer {
            name: plan::KUBELET.into(),
            reason: "a file it reads changed".into(),
        };
        assert!(only_fresh_starts(&[kubelet], &names));
    }
}
