//! Hosts that left the cluster: what each still runs (observed in the plan step, shown by
//! `--dry-run`), and their clean-up after the worker plane: components stopped, RKE1's
//! directories emptied (Windows workers torn down through wins), node objects deleted.

use super::UpError;
use super::finish;
use super::run::{KNOWN_CONTAINERS, RemovedHost, Run};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::{Action, HostActions};
use crate::hosts::HostPool;
use crate::phases::executor::ExecError;
use crate::phases::{Runner, reconcile};
use crate::plan;
use std::sync::Arc;

/// Each host that left the cluster, with the containers it still runs and how it is cleaned;
/// its actions are appended to `shown`.
pub(super) async fn observe_removed(
    cluster: &Cluster,
    old_current: Option<&RkeConfig>,
    recon: &reconcile::Changes,
    removed_pool: Option<&HostPool>,
    shown: &mut Vec<HostActions>,
) -> Result<Vec<RemovedHost>, UpError> {
    let mut removed = Vec::new();
    let old_sidekick = old_current
        .map(|c| c.system_images.kubernetes_services_sidecar.clone())
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| {
            cluster
                .config
                .system_images
                .kubernetes_services_sidecar
                .clone()
        });
    for gone in &recon.removed_hosts {
        let host = removed_pool.and_then(|p| p.get(&gone.address)).cloned();
        let reachable = host.map(|h| {
            let prefix = old_current
                .map(|c| c.prefix_path.as_str())
                .unwrap_or_default();
            let prefix = plan::host_prefix_path(prefix, &h.facts().operating_system);
            let cleanup =
                reconcile::HostCleanup::for_host(h.platform(), &prefix, gone.etcd, &old_sidekick);
            (h, cleanup)
        });
        let mut present = Vec::new();
        if let Some((host, cleanup)) = &reachable {
            for name in cleanup.containers(KNOWN_CONTAINERS) {
                if host.docker().inspect_container(name).await?.is_some() {
                    present.push(name.to_string());
                }
            }
        }
        shown.push(HostActions {
            host: gone.address.clone(),
            actions: reconcile::removed_host_actions(
                gone,
                &present,
                reachable.as_ref().map(|(_, c)| c),
            ),
        });
        removed.push(RemovedHost {
            gone: gone.clone(),
            reachable,
            present,
        });
    }
    Ok(removed)
}

/// Hosts that left: their components stop first (so no kubelet re-registers the node), then the
/// directories RKE1 cleans are emptied, then the node object is deleted.
pub(super) async fn remove_hosts(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    if run.removed.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("removed hosts");
    let addresses: Vec<String> = run.removed.iter().map(|r| r.gone.address.clone()).collect();
    let r = run.clone();
    let result = runner
        .for_each_host("removed hosts", "clean up", addresses, move |address| {
            let run = r.clone();
            async move {
                let removed = run
                    .removed
                    .iter()
                    .find(|r| r.gone.address == address)
                    .expect("removed host");
                apply_removed_host(&run, removed).await
            }
        })
        .await;
    finish(phase, result)
}

/// Applies the actions `--dry-run` showed for a host that left, through the executor: its
/// containers removed, the host cleaned (a Windows worker torn down through wins, as `rkers
/// remove` does), its node object deleted. Its etcd member and etcd containers already went
/// in the etcd step.
async fn apply_removed_host(run: &Run, removed: &RemovedHost) -> Result<(), ExecError> {
    let cleanup = removed.reachable.as_ref().map(|(_, c)| c);
    let actions = reconcile::removed_host_actions(&removed.gone, &removed.present, cleanup);
    let applied = super::etcd_members::leaving_member_actions(run, &removed.gone.address);
    let rest: Vec<&Action> = actions.iter().filter(|a| !applied.contains(a)).collect();
    run.exec.on(&removed.gone.address).apply(&rest).await
}
