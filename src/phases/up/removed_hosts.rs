//! Hosts that left the cluster: what each still runs (observed in the plan step, shown by
//! `--dry-run`), and their clean-up after the worker plane: components stopped, RKE1's
//! directories emptied (Windows workers torn down through wins), node objects deleted.

use super::finish;
use super::run::{KNOWN_CONTAINERS, RemovedHost, Run};
use super::{UpError, other};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::HostActions;
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
                &h.facts().os_type,
                &prefix,
                gone.etcd,
                &old_sidekick,
            );
            (h, cleanup)
        });
        let mut present = Vec::new();
        if let Some((host, cleanup)) = &reachable {
            for name in cleanup.containers(KNOWN_CONTAINERS) {
                if host
                    .docker()
                    .inspect_container(name)
                    .await
                    .map_err(other)?
                    .is_some()
                {
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
                if let Some((host, cleanup)) = &removed.reachable {
                    clean_removed_host(&run, host, cleanup, &removed.present).await?;
                }
                let gone = &removed.gone;
                api.delete_node(&gone.hostname)
                    .await
                    .map_err(|e| e.to_string())
            }
        })
        .await;
    finish(phase, result)
}

/// Takes the containers off a host that left the cluster and cleans it: RKE1's directory
/// cleaner on Linux; on a Windows worker the teardown of `rkers remove`, through wins.
pub(super) async fn clean_removed_host(
    run: &Run,
    host: &Host,
    cleanup: &reconcile::HostCleanup,
    present: &[String],
) -> Result<(), String> {
    match cleanup {
        // Removes the Windows worker's containers itself, before the host script.
        reconcile::HostCleanup::Windows { plan, image } => {
            crate::phases::windows::remove_windows_host(host, plan, image)
                .await
                .map_err(|e| e.to_string())
        }
        reconcile::HostCleanup::Linux { directories } => {
            for name in present {
                host.docker()
                    .remove_container(name)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            reconcile::clean_directories(host, &run.helper_image, directories).await
        }
    }
}
