//! Apply on an existing cluster: control plane and worker hosts upgraded host by host within
//! the upgrade strategy's budgets (§17); and the summary of that rolling `--dry-run` prints.

use super::planes::apply_plane_on;
use super::run::{CONTROL_PLANE, Run, WORKER_PLANE};
use super::{UpError, finish};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::Action;
use crate::kubeapi::KubeApi;
use crate::kubeapi::drain::DrainOptions;
use crate::phases::{Runner, upgrade};
use crate::plan::{self, ClusterPlan, HostPlan};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Whether any of `names` changes on the host in this run.
pub(super) fn plane_changes(run: &Run, address: &str, names: &[&str]) -> bool {
    run.actions[address]
        .iter()
        .any(|a| changes_container(a, names))
}

/// Whether the action creates, changes or removes one of the containers `names`.
pub(super) fn changes_container(action: &Action, names: &[&str]) -> bool {
    match action {
        Action::CreateContainer { name, .. }
        | Action::RecreateContainer { name, .. }
        | Action::StartContainer { name }
        | Action::RestartContainer { name, .. }
        | Action::RemoveContainer { name, .. } => names.contains(&name.as_str()),
        _ => false,
    }
}

pub(super) fn upgrade_hosts(
    run: &Run,
    old: &RkeConfig,
    names: &[&str],
    select: impl Fn(&HostPlan) -> bool,
) -> Vec<upgrade::UpgradeHost> {
    run.plan
        .hosts
        .iter()
        .filter(|h| select(h))
        .map(|h| upgrade::UpgradeHost {
            address: h.address.clone(),
            hostname: h.hostname.clone(),
            changed: plane_changes(run, &h.address, names),
            new: !old.nodes.iter().any(|n| n.address == h.address),
            serving: kubelet_runs(run, &h.address),
        })
        .collect()
}

/// Whether the host's kubelet runs now: one that is missing or stopped serves no pods, so
/// the host is already out of service and its upgrade costs nothing of the budget, whatever the
/// node's (possibly stale) Ready condition says.
pub(super) fn kubelet_runs(run: &Run, address: &str) -> bool {
    crate::diff::kubelet_runs(&run.actions[address])
}

pub(super) fn upgrade_strategy(
    cluster: &Cluster,
    run: &Run,
    budget_of: fn(&crate::config::NodeUpgradeStrategy) -> &str,
    hosts: usize,
) -> Result<upgrade::Strategy, UpError> {
    let configured = cluster.config.upgrade_strategy.clone().unwrap_or_default();
    let value = budget_of(&configured);
    let budget = upgrade::max_unavailable(if value.is_empty() { "1" } else { value }, hosts)
        .map_err(UpError::UpgradeStrategy)?;
    let drain = configured.drain.unwrap_or(false).then(|| {
        let input = configured.node_drain_input.clone().unwrap_or_default();
        let defaults = DrainOptions::default();
        DrainOptions {
            force: input.force,
            ignore_daemonsets: input
                .ignore_daemonsets
                .unwrap_or(defaults.ignore_daemonsets),
            delete_emptydir_data: input.delete_local_data,
            grace_period: (input.grace_period >= 0).then_some(input.grace_period),
            timeout: if input.timeout > 0 {
                Duration::from_secs(input.timeout as u64)
            } else {
                defaults.timeout
            },
        }
    });
    Ok(upgrade::Strategy {
        budget,
        drain,
        ready_timeout: run.node_ready_timeout,
        cni_wait: None,
    })
}

/// How `up` would roll the changes out over an existing cluster, for `--dry-run`.
pub(super) fn rolling_summary(
    cluster: &Cluster,
    old: &RkeConfig,
    cluster_plan: &ClusterPlan,
    actions: &BTreeMap<String, Vec<Action>>,
) -> Vec<String> {
    let strategy = cluster.config.upgrade_strategy.clone().unwrap_or_default();
    let changed = |h: &HostPlan, names: &[&str]| {
        old.nodes.iter().any(|n| n.address == h.address)
            && actions[&h.address]
                .iter()
                .any(|a| changes_container(a, names))
    };
    let both: Vec<&str> = CONTROL_PLANE.iter().chain(WORKER_PLANE).copied().collect();
    let how = if strategy.drain == Some(true) {
        "cordoned and drained"
    } else {
        "cordoned"
    };
    let mut lines = Vec::new();
    let cp: Vec<&str> = cluster_plan
        .hosts
        .iter()
        .filter(|h| h.roles.controlplane && changed(h, &both))
        .map(|h| h.hostname.as_str())
        .collect();
    if !cp.is_empty() {
        lines.push(format!(
            "rolling upgrade of control plane hosts, {} at a time (max_unavailable_controlplane), each {how} first: {}",
            strategy.max_unavailable_controlplane,
            cp.join(", ")
        ));
    }
    let workers: Vec<&str> = cluster_plan
        .hosts
        .iter()
        .filter(|h| !h.roles.controlplane && changed(h, WORKER_PLANE))
        .map(|h| h.hostname.as_str())
        .collect();
    if !workers.is_empty() {
        lines.push(format!(
            "rolling upgrade of workers, {} at a time (max_unavailable_worker; hosts with etcd one at a time), each {how} first: {}",
            strategy.max_unavailable_worker,
            workers.join(", ")
        ));
    }
    lines
}

/// How long an upgraded host's node may take to report Ready again (`--node-ready-timeout`
/// changes it). The wait itself is what
/// keeps `upgrade_strategy`'s budget true: the next hosts may only go out of service once this
/// one serves again (§17).
pub(super) const NODE_READY_AFTER_UPGRADE: Duration = Duration::from_secs(180);

/// §17.2: control plane hosts, `max_unavailable_controlplane` at a time, each with its worker
/// components too.
pub(super) async fn upgrade_control_plane(
    cluster: &Cluster,
    old: &RkeConfig,
    run: &Arc<Run>,
    runner: &Runner,
    api: Option<&KubeApi>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("control plane");
    let both: Vec<&str> = CONTROL_PLANE.iter().chain(WORKER_PLANE).copied().collect();
    let hosts = upgrade_hosts(run, old, &both, |h| h.roles.controlplane);
    let mut strategy = upgrade_strategy(
        cluster,
        run,
        |s| &s.max_unavailable_controlplane,
        hosts.len(),
    )?;
    strategy.cni_wait = Some(crate::checks::guard::CniWait::for_cluster(
        cluster,
        run.pool.hosts(),
    ));
    let result = upgrade::rolling(runner, "control plane", api, hosts, &strategy, |address| {
        let run = run.clone();
        async move {
            apply_plane_on(&run, &address, CONTROL_PLANE).await?;
            apply_plane_on(&run, &address, WORKER_PLANE).await
        }
    })
    .await;
    finish(phase, result)
}

/// §17.3: the other hosts' worker components; hosts with etcd one at a time first, then the
/// worker-only hosts `max_unavailable_worker` at a time.
pub(super) async fn upgrade_worker_plane(
    cluster: &Cluster,
    old: &RkeConfig,
    run: &Arc<Run>,
    runner: &Runner,
    api: Option<&KubeApi>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("worker plane");
    let apply = |address: String| {
        let run = run.clone();
        async move { upgrade_worker_host(&run, api, &address).await }
    };
    let etcd_hosts = upgrade_hosts(run, old, WORKER_PLANE, |h| {
        !h.roles.controlplane && h.roles.etcd
    });
    let mut one_at_a_time = upgrade_strategy(cluster, run, |s| &s.max_unavailable_worker, 1)?;
    one_at_a_time.budget = 1;
    one_at_a_time.cni_wait = Some(crate::checks::guard::CniWait::for_cluster(
        cluster,
        run.pool.hosts(),
    ));
    let result = upgrade::rolling(
        runner,
        "worker plane",
        api,
        etcd_hosts,
        &one_at_a_time,
        apply,
    )
    .await;
    if result.is_err() {
        return finish(phase, result);
    }
    let workers = upgrade_hosts(run, old, WORKER_PLANE, |h| {
        !h.roles.controlplane && !h.roles.etcd
    });
    let mut strategy =
        upgrade_strategy(cluster, run, |s| &s.max_unavailable_worker, workers.len())?;
    strategy.cni_wait = one_at_a_time.cni_wait.clone();
    let result = upgrade::rolling(runner, "worker plane", api, workers, &strategy, apply).await;
    finish(phase, result)
}

/// A worker host's plane. What the plan keeps until the host's node is Ready
/// ([`crate::diff::UndoCheck::NodeReady`]) is settled here: the previous containers are dropped
/// once the node is Ready, and put back when it is not within the wait (or the plane failed),
/// so the host runs what it ran before and the error says so.
async fn upgrade_worker_host(
    run: &Run,
    api: Option<&KubeApi>,
    address: &str,
) -> Result<(), UpError> {
    let Some((node, kubelet)) = kept_until_ready(run, address) else {
        return apply_plane_on(run, address, WORKER_PLANE).await;
    };
    // A node keeps the old kubelet's Ready for a while: only a heartbeat of the new one counts.
    let stale = match api {
        Some(api) if kubelet => crate::kubeapi::find_node(api, node, 1)
            .await
            .ok()
            .and_then(|n| crate::kubeapi::nodes::ready_heartbeat(&n)),
        _ => None,
    };
    let exec = run.executor(address);
    if let Err(failed) = apply_plane_on(run, address, WORKER_PLANE).await {
        return match exec.settle_kept(false).await {
            Ok(_) => Err(failed),
            Err(e) => Err(UpError::KeptNotPutBack {
                host: address.to_string(),
                node: node.to_string(),
                failed: Box::new(failed),
                source: Box::new(e),
            }),
        };
    }
    let timeout = run.node_ready_timeout;
    let waited = match api {
        Some(api) => api
            .wait_node_ready_after(node, stale.as_deref(), timeout)
            .await
            .map_err(|e| Some(Box::new(e))),
        None => Err(None),
    };
    let Err(cause) = waited else {
        return exec
            .settle_kept(true)
            .await
            .map(drop)
            .map_err(|e| UpError::KeptNotDropped {
                host: address.to_string(),
                source: Box::new(e),
            });
    };
    Err(UpError::NodeNotReady {
        host: address.to_string(),
        node: node.to_string(),
        secs: timeout.as_secs(),
        cause,
        restored: exec.settle_kept(false).await.map_err(Box::new),
    })
}

/// The node whose Ready the host's recreated containers are kept for, and whether kubelet is
/// one of them; `None` when nothing is kept until then.
fn kept_until_ready<'r>(run: &'r Run, address: &str) -> Option<(&'r str, bool)> {
    let mut kept = run.actions[address].iter().filter_map(|a| match a {
        Action::RecreateContainer {
            name,
            start,
            spec,
            until_node_ready,
            ..
        } => match crate::diff::undo_check(*start, spec, until_node_ready.as_deref()) {
            Some(crate::diff::UndoCheck::NodeReady { node, .. }) => Some((node, name.as_str())),
            _ => None,
        },
        _ => None,
    });
    let (node, first) = kept.next()?;
    let kubelet = first == plan::KUBELET || kept.any(|(_, name)| name == plan::KUBELET);
    Some((node, kubelet))
}
