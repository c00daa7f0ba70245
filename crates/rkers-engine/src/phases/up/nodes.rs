//! Apply: node labels, annotations and taints (§21), and RKE1's log links (§8.5).

use super::run::Run;
use super::{UpError, finish};
use crate::diff::Action;
use crate::phases::{PhaseError, Runner};
use std::sync::Arc;

/// RKE1's log links for the containers created in this run (§8.5): each host's planned
/// `LinkLogs` action, Linux hosts only.
pub(super) async fn link_logs(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let hosts: Vec<String> = run
        .actions
        .iter()
        .filter(|(_, list)| list.iter().any(|a| matches!(a, Action::LinkLogs { .. })))
        .map(|(address, _)| address.clone())
        .collect();
    if hosts.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("log links");
    let r = run.clone();
    let result = runner
        .for_each_host("log links", "link logs", hosts, move |address| {
            let run = r.clone();
            async move {
                let links: Vec<&Action> = run.actions[&address]
                    .iter()
                    .filter(|a| matches!(a, Action::LinkLogs { .. }))
                    .collect();
                run.executor(&address).apply(&links).await
            }
        })
        .await;
    finish(phase, result)
}

/// Node labels, annotations and taints (§21), once every kubelet has registered its node: the
/// planned `SyncNode` actions, at once, reported in their planned order.
pub(super) async fn sync_nodes(run: &Arc<Run>) -> Result<(), UpError> {
    let syncs: Vec<&Action> = run
        .cluster_actions
        .iter()
        .filter(|a| matches!(a, Action::SyncNode { .. }))
        .collect();
    if syncs.is_empty() {
        return Ok(());
    }
    let phase = run.reporter.phase("nodes");
    let exec = run.cluster_executor();
    // At once (a few API calls each); the events follow the plan's order.
    let mut runs = Vec::new();
    for a in &syncs {
        runs.push(exec.run(a));
    }
    let results = futures::future::join_all(runs).await;
    let failures: Vec<(String, String)> = syncs
        .iter()
        .zip(results)
        .filter_map(|(a, r)| {
            let Action::SyncNode { node, .. } = a else {
                return None;
            };
            exec.report(a, r)
                .err()
                .map(|e| (node.clone(), e.to_string()))
        })
        .collect();
    let result = if failures.is_empty() {
        Ok(())
    } else {
        Err(PhaseError::Hosts {
            phase: "nodes".into(),
            failures,
        })
    };
    finish(phase, result)
}
