//! Apply: node labels, annotations and taints (§21), and RKE1's log links (§8.5).

use super::run::Run;
use super::{UpError, finish};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::Action;
use crate::kubeapi::{KubeApi, NodeSync, TaintSpec};
use crate::phases::Runner;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// RKE1's log links for the containers created in this run (§8.5), Linux hosts only.
pub(super) async fn link_logs(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let created: Vec<(String, Vec<String>)> = run
        .plan
        .hosts
        .iter()
        // RKE1 links container logs on Linux hosts only (§8.5).
        .filter(|h| !run.plan.windows.contains_key(&h.address))
        .map(|h| {
            let names = run.actions[&h.address]
                .iter()
                .filter_map(|a| match a {
                    Action::CreateContainer { name, .. }
                    | Action::RecreateContainer { name, .. } => Some(name.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>();
            (h.address.clone(), names)
        })
        .filter(|(_, names)| !names.is_empty())
        .collect();
    if created.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("log links");
    let r = run.clone();
    let result = runner
        .for_each_host(
            "log links",
            "link logs",
            created.into_iter().map(|(a, names)| NamedLinks(a, names)),
            move |NamedLinks(address, names)| {
                let run = r.clone();
                async move {
                    let root = run
                        .facts
                        .get(&address)
                        .map(|f| f.docker_root_dir.clone())
                        .unwrap_or_default();
                    crate::phases::log_links::link_logs(
                        run.host(&address),
                        &run.helper_image,
                        &root,
                        &names,
                    )
                    .await
                }
            },
        )
        .await;
    finish(phase, result)
}

pub(super) struct NamedLinks(String, Vec<String>);

impl crate::phases::HostName for NamedLinks {
    fn host_name(&self) -> &str {
        &self.0
    }
}

pub(super) fn taints_of(cfg: Option<&RkeConfig>, address: &str) -> Vec<TaintSpec> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| {
            n.taints
                .iter()
                .map(|t| TaintSpec::new(&t.key, &t.value, &t.effect))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn labels_of(cfg: Option<&RkeConfig>, address: &str) -> BTreeMap<String, String> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| n.labels.clone())
        .unwrap_or_default()
}

/// Node labels, annotations and taints (§21), once every kubelet has registered its node.
pub(super) async fn sync_nodes(
    cluster: &Cluster,
    old: Option<&RkeConfig>,
    run: &Arc<Run>,
    api: &KubeApi,
    runner: &Runner,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("nodes");
    let syncs: Vec<NodeSync> = run
        .plan
        .hosts
        .iter()
        .map(|h| {
            let roles: BTreeSet<String> = [
                ("etcd", h.roles.etcd),
                ("controlplane", h.roles.controlplane),
                ("worker", h.roles.worker),
            ]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(r, _)| r.to_string())
            .collect();
            NodeSync::for_host(
                &h.hostname,
                &h.address,
                &h.internal_address,
                &roles,
                &labels_of(Some(&cluster.config), &h.address),
                &labels_of(old, &h.address),
                &taints_of(Some(&cluster.config), &h.address),
                &taints_of(old, &h.address),
            )
        })
        .collect();
    let api = api.clone();
    let result = runner
        .for_each_host(
            "nodes",
            "labels and taints",
            syncs.into_iter().map(NamedSync),
            move |s| {
                let api = api.clone();
                async move {
                    crate::kubeapi::find_node(&api, &s.0.hostname, 60)
                        .await
                        .map_err(|e| e.to_string())?;
                    crate::kubeapi::sync_node(&api, &s.0)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            },
        )
        .await;
    finish(phase, result)
}

pub(super) struct NamedSync(NodeSync);

impl crate::phases::HostName for NamedSync {
    fn host_name(&self) -> &str {
        &self.0.address
    }
}
