//! Hosts that left the cluster: what each still runs (observed in the plan step, shown by
//! `--dry-run`), and their clean-up after the worker plane: components stopped, RKE1's
//! directories emptied (Windows workers torn down through wins), node objects deleted.

use super::UpError;
use super::finish;
use super::run::{KNOWN_CONTAINERS, RemovedHost, Run};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::{Action, HostActions};
use crate::hosts::{Host, HostPool};
use crate::kubeapi::KubeApi;
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
            let cleanup = reconcile::HostCleanup::for_host(
                h.facts().is_windows(),
                &prefix,
                gone.etcd,
                &old_sidekick,
            );
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
pub(super) async fn remove_hosts(
    run: &Arc<Run>,
    api: &KubeApi,
    runner: &Runner,
) -> Result<(), UpError> {
    if run.removed.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("removed hosts");
    let addresses: Vec<String> = run.removed.iter().map(|r| r.gone.address.clone()).collect();
    let r = run.clone();
    let api = api.clone();
    let result = runner
        .for_each_host("removed hosts", "clean up", addresses, move |address| {
            let run = r.clone();
            let api = api.clone();
            async move {
                let removed = run
                    .removed
                    .iter()
                    .find(|r| r.gone.address == address)
                    .expect("removed host");
                apply_removed_host(&run, &api, removed).await
            }
        })
        .await;
    finish(phase, result)
}

/// Applies the actions `--dry-run` showed for a host that left (its etcd member already went
/// in the etcd step), reporting each as applied: containers removed, the host cleaned, its node
/// object deleted.
async fn apply_removed_host(run: &Run, api: &KubeApi, removed: &RemovedHost) -> Result<(), String> {
    let address = &removed.gone.address;
    let cleanup = removed.reachable.as_ref().map(|(_, c)| c);
    let actions = reconcile::removed_host_actions(&removed.gone, &removed.present, cleanup);
    let mut cleaned = None;
    for action in &actions {
        let result = match (action, &removed.reachable) {
            (Action::RemoveEtcdMember { .. }, _) => continue,
            (Action::DeleteNode { node }, _) => {
                api.delete_node(node).await.map_err(|e| e.to_string())
            }
            // A Windows worker's teardown removes its containers itself, through wins: the
            // first of its actions runs it and the others report its outcome.
            (_, Some((host, cleanup @ reconcile::HostCleanup::Windows { .. }))) => cleaned
                .get_or_insert(clean_removed_host(run, host, cleanup).await)
                .clone(),
            (Action::RemoveContainer { name, .. }, Some((host, _))) => host
                .docker()
                .remove_container(name)
                .await
                .map_err(|e| e.to_string()),
            (_, Some((host, cleanup))) => clean_removed_host(run, host, cleanup).await,
            (_, None) => Err("the host cannot be reached".to_string()),
        };
        run.reporter
            .applied(address, action, result.as_ref().err().map(String::as_str));
        result?;
    }
    Ok(())
}

/// Cleans a host that left the cluster: RKE1's directory cleaner on Linux (its containers are
/// already gone); on a Windows worker the teardown of `rkers remove`, through wins, which
/// removes the worker's containers itself.
async fn clean_removed_host(
    run: &Run,
    host: &Host,
    cleanup: &reconcile::HostCleanup,
) -> Result<(), String> {
    match cleanup {
        reconcile::HostCleanup::Windows { plan, image } => {
            crate::phases::windows::remove_windows_host(host, plan, image)
                .await
                .map_err(|e| e.to_string())
        }
        reconcile::HostCleanup::Linux { directories } => {
            reconcile::clean_directories(host, &run.helper_image, directories).await
        }
    }
}
