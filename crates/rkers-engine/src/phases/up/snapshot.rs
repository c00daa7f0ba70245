//! Before any change: the etcd snapshot `up` takes when it is about to change etcd or the
//! control plane (issue 30), and the `old-…` containers an interrupted run left behind.
//!
//! Whether a snapshot is taken is decided with the plan ([`decide`], pure): when a planned
//! action recreates etcd, kube-apiserver, kube-controller-manager or kube-scheduler, or
//! `kubernetes_version` changes, and some etcd member runs (a cold first `up` has nothing to
//! save). Each running member then gets one [`Action::SaveEtcdSnapshot`] first in its list,
//! holding what `etcd snapshot-save` does for a member; the dry run shows it as the run takes
//! it, and a failed snapshot stops the run before anything changed. `--no-snapshot` skips it
//! and says what that risks.

use super::run::{KNOWN_CONTAINERS, Observed, Run};
use super::{UpError, finish};
use crate::cluster::Cluster;
use crate::diff::{Action, HostActions};
use crate::hosts::HostPool;
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::etcd_snapshot;
use crate::plan;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The names of `up`'s snapshots: `rkers-pre-<UTC time>`.
pub(crate) const PRE_CHANGE_PREFIX: &str = "rkers-pre-";

/// What a change to these costs when it fails half-way is etcd's data or the API: a snapshot
/// is taken before they are recreated.
const GUARDED: &[&str] = &[
    plan::ETCD,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
];

/// Whether `up` takes an etcd snapshot before it changes anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum PreChange {
    /// Nothing guarded changes, or no etcd member runs to take one from.
    NotNeeded,
    /// Taken, for this reason (what changes).
    Take(String),
    /// Needed for this reason, but `--no-snapshot` was given.
    Skipped(String),
}

/// The pure decision: `old_version` is the Kubernetes version the cluster ran (its state's),
/// `actions` every planned host's actions, `etcd_runs` whether some etcd member runs now.
pub(super) fn decide(
    old_version: Option<&str>,
    new_version: &str,
    actions: &BTreeMap<String, Vec<Action>>,
    etcd_runs: bool,
    no_snapshot: bool,
) -> PreChange {
    if !etcd_runs {
        return PreChange::NotNeeded;
    }
    let mut reasons = Vec::new();
    if let Some(old) = old_version.filter(|v| !v.is_empty() && *v != new_version) {
        reasons.push(format!(
            "kubernetes_version changes from {old} to {new_version}"
        ));
    }
    for (host, list) in actions {
        let recreated: Vec<&str> = list
            .iter()
            .filter_map(|a| match a {
                Action::RecreateContainer { name, .. } if GUARDED.contains(&name.as_str()) => {
                    Some(name.as_str())
                }
                _ => None,
            })
            .collect();
        if !recreated.is_empty() {
            reasons.push(format!("{} recreated on {host}", recreated.join(", ")));
        }
    }
    if reasons.is_empty() {
        PreChange::NotNeeded
    } else if no_snapshot {
        PreChange::Skipped(reasons.join("; "))
    } else {
        PreChange::Take(reasons.join("; "))
    }
}

/// `rkers-pre-20261127T163600Z`: sortable, and a plain file name on every host and in S3.
pub(super) fn snapshot_name(now: time::OffsetDateTime) -> String {
    let stamp = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let now = now.to_offset(time::UtcOffset::UTC);
    // The description has no part a date cannot fill.
    format!(
        "{PRE_CHANGE_PREFIX}{}",
        now.format(&stamp).unwrap_or_default()
    )
}

/// Puts the snapshot (when [`decide`] says so) first in each running etcd member's actions,
/// in `actions` and in what the dry run shows; warns when `--no-snapshot` skips a needed one.
#[allow(clippy::too_many_arguments)]
pub(super) async fn plan_snapshot(
    cluster: &Cluster,
    no_snapshot: bool,
    old_version: Option<&str>,
    pool: &HostPool,
    observed: &BTreeMap<String, Observed>,
    actions: &mut BTreeMap<String, Vec<Action>>,
    shown: &mut [HostActions],
    reporter: &Reporter,
) -> Result<(), UpError> {
    let running: Vec<etcd_snapshot::EtcdMember> = etcd_snapshot::etcd_members(&cluster.config)
        .into_iter()
        .filter(|m| {
            observed
                .get(&m.address)
                .and_then(|o| o.containers.get(plan::ETCD))
                .is_some_and(|c| c.running)
        })
        .collect();
    let reason = match decide(
        old_version,
        &cluster.config.kubernetes_version,
        actions,
        !running.is_empty(),
        no_snapshot,
    ) {
        PreChange::NotNeeded => return Ok(()),
        PreChange::Skipped(reason) => {
            reporter.warn(format!(
                "--no-snapshot: no etcd snapshot is taken before the change ({reason}); if it \
                 fails half-way, etcd can only be brought back from an older snapshot, if there \
                 is one"
            ));
            return Ok(());
        }
        PreChange::Take(reason) => reason,
    };
    let name = snapshot_name(time::OffsetDateTime::now_utc());
    let s3 = etcd_snapshot::effective_s3(&cluster.config.services.etcd, None);
    if let Some(s3) = s3 {
        etcd_snapshot::register_s3_secrets(s3, &cluster.redactor);
    }
    // The state as the cluster ran it: this run has not written its own yet.
    let state = (cluster.files.storage)
        .read(&cluster.files.state_path, rkers_core::bounded::STATE)
        .ok();
    for member in &running {
        let Some(host) = pool.get(&member.address) else {
            continue;
        };
        let steps = etcd_snapshot::member_snapshot_steps(
            cluster,
            host,
            member,
            &name,
            state.as_deref(),
            s3,
        )
        .await?;
        let snapshot = Action::SaveEtcdSnapshot {
            name: name.clone(),
            reason: reason.clone(),
            steps,
        };
        if let Some(list) = actions.get_mut(&member.address) {
            list.insert(0, snapshot);
            if let Some(h) = shown.iter_mut().find(|h| h.host == member.address) {
                h.actions = list.clone();
            }
        }
    }
    Ok(())
}

/// The `old-<name>` containers a killed run left (its rename before a recreate happened, the
/// removal after it did not): removed before anything else, or a later recreate, or the
/// operator, would take them for something that runs.
pub(super) fn stale_old_containers(obs: &Observed) -> Vec<Action> {
    obs.stale_old
        .iter()
        .map(|name| Action::RemoveContainer {
            name: name.clone(),
            reason: "left aside by an interrupted run".into(),
        })
        .collect()
}

/// The names of the `old-…` containers `up` looks for on a host.
pub(super) fn old_names() -> impl Iterator<Item = String> {
    KNOWN_CONTAINERS
        .iter()
        .map(|n| format!("{}{n}", plan::OLD_PREFIX))
}

/// What runs before any change: a stale `old-…` container removed, the snapshot taken.
pub(super) fn before_changes(action: &Action) -> bool {
    match action {
        Action::SaveEtcdSnapshot { .. } => true,
        Action::RemoveContainer { name, .. } => name.starts_with(plan::OLD_PREFIX),
        _ => false,
    }
}

/// Applies [`before_changes`] host after host (one snapshot at a time, as `etcd snapshot-save`
/// takes them); the first failure stops the run, with nothing else changed yet.
pub(super) async fn apply_before_changes(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let hosts: Vec<String> = run
        .actions
        .iter()
        .filter(|(_, list)| list.iter().any(before_changes))
        .map(|(h, _)| h.clone())
        .collect();
    if hosts.is_empty() {
        return Ok(());
    }
    const PHASE: &str = "before changes";
    let phase = runner.reporter.phase(PHASE);
    let work = |address: String| {
        let run = run.clone();
        async move {
            let picked: Vec<&Action> = run.actions[&address]
                .iter()
                .filter(|a| before_changes(a))
                .collect();
            run.executor(&address)
                .apply(&picked)
                .await
                .map_err(UpError::BeforeChanges)
        }
    };
    let mut result = Ok(());
    for address in hosts {
        result = runner
            .for_each_host(PHASE, "etcd snapshot", [address], &work)
            .await;
        if result.is_err() {
            break;
        }
    }
    finish(phase, result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::FieldChange;

    fn recreate(name: &str) -> Action {
        Action::RecreateContainer {
            name: name.into(),
            changes: vec![FieldChange {
                field: "entrypoint",
                added: vec!["--v=4".into()],
                removed: vec![],
                why: None,
            }],
            start: true,
            spec: Box::default(),
            until_node_ready: None,
        }
    }

    fn on(host: &str, list: Vec<Action>) -> BTreeMap<String, Vec<Action>> {
        BTreeMap::from([(host.to_string(), list)])
    }

    #[test]
    fn a_recreated_control_plane_component_takes_a_snapshot() {
        let actions = on(
            "10.0.0.1",
            vec![recreate("kube-apiserver"), recreate("etcd")],
        );
        assert_eq!(
            decide(Some("v1.20.2"), "v1.20.2", &actions, true, false),
            PreChange::Take("kube-apiserver, etcd recreated on 10.0.0.1".into())
        );
    }

    #[test]
    fn a_version_change_takes_a_snapshot() {
        let actions = on("10.0.0.1", vec![]);
        assert_eq!(
            decide(Some("v1.19.7"), "v1.20.2", &actions, true, false),
            PreChange::Take("kubernetes_version changes from v1.19.7 to v1.20.2".into())
        );
    }

    #[test]
    fn worker_changes_and_no_ops_take_none() {
        let kubelet = on(
            "10.0.0.2",
            vec![recreate("kubelet"), recreate("kube-proxy")],
        );
        assert_eq!(
            decide(Some("v1.20.2"), "v1.20.2", &kubelet, true, false),
            PreChange::NotNeeded
        );
        let nothing = on("10.0.0.1", vec![]);
        assert_eq!(
            decide(Some("v1.20.2"), "v1.20.2", &nothing, true, false),
            PreChange::NotNeeded
        );
    }

    #[test]
    fn a_cold_first_up_takes_none() {
        let actions = on(
            "10.0.0.1",
            vec![Action::CreateContainer {
                name: "etcd".into(),
                image: "etcd".into(),
                start: true,
                spec: Box::default(),
            }],
        );
        assert_eq!(
            decide(None, "v1.20.2", &actions, false, false),
            PreChange::NotNeeded
        );
        // No etcd runs: nothing to save, whatever changes.
        let recreated = on("10.0.0.1", vec![recreate("kube-apiserver")]);
        assert_eq!(
            decide(Some("v1.20.2"), "v1.20.2", &recreated, false, false),
            PreChange::NotNeeded
        );
    }

    #[test]
    fn no_snapshot_skips_it_and_keeps_the_reason() {
        let actions = on("10.0.0.1", vec![recreate("kube-scheduler")]);
        assert_eq!(
            decide(Some("v1.20.2"), "v1.20.2", &actions, true, true),
            PreChange::Skipped("kube-scheduler recreated on 10.0.0.1".into())
        );
    }

    #[test]
    fn snapshot_names_carry_the_utc_time() {
        let t = time::macros::datetime!(2026-11-27 16:36:05 +01:00);
        assert_eq!(snapshot_name(t), "rkers-pre-20261127T153605Z");
    }

    #[test]
    fn stale_old_containers_go_before_changes() {
        let obs = Observed {
            stale_old: vec!["old-kube-apiserver".into()],
            ..Default::default()
        };
        let removals = stale_old_containers(&obs);
        assert_eq!(removals.len(), 1);
        assert!(before_changes(&removals[0]));
        assert!(!before_changes(&Action::RemoveContainer {
            name: "kube-proxy".into(),
            reason: "not planned".into()
        }));
    }
}
