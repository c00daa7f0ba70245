//! The run before (issue 30, `rkers rollback`): what the previous successful run applied, kept
//! in the state file beside RKE1's keys so a rollback needs no old cluster.yml; and the pure
//! decision of whether and how a rollback may go back to it.
//!
//! Two top-level keys, which RKE1 (Go's encoding/json) reads past and drops when it writes:
//! - [`PREVIOUS_KEY`]: the state the last successful run replaced, with the snapshot that run
//!   took before changing anything. Only a run that finishes moves it.
//! - [`CANDIDATE_KEY`]: the state a run in progress replaces, written before it changes a host.
//!   A run that finishes makes it the previous state; a run that fails leaves it, so the next
//!   successful run still records the state the cluster last ran healthy, not the failed one's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClusterState, StateFile};
use crate::metadata::K8sVersion;

/// The previous successful run's state.
pub const PREVIOUS_KEY: &str = "rkersPrevious";
/// The state a run in progress replaces.
pub const CANDIDATE_KEY: &str = "rkersRunningFrom";

/// A run recorded in the state file that does not parse. The reason is serde's text, kept as
/// text so the outcome compares equal in tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct RecordUnreadable {
    pub key: &'static str,
    pub reason: String,
}

/// One earlier state of the cluster, as a rollback needs it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct PreviousRun {
    /// The fully defaulted config in RKE1's JSON field names, as `currentState` held it.
    #[serde(rename = "rkeConfig")]
    pub rke_config: Value,
    /// The encryption provider file it ran with, when encryption was on.
    #[serde(
        rename = "encryptionConfig",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub encryption_config: String,
    /// The etcd snapshot (`rkers-pre-<UTC time>`) the run that replaced it took before changing
    /// anything: etcd's data as this state ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

// The config holds SSH keys and passwords: none of it may reach Debug output.
impl std::fmt::Debug for PreviousRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreviousRun")
            .field("kubernetes_version", &self.kubernetes_version())
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl PreviousRun {
    fn of(state: &ClusterState) -> Option<PreviousRun> {
        Some(PreviousRun {
            rke_config: state.rke_config.clone()?,
            encryption_config: state.encryption_config.clone(),
            snapshot: None,
        })
    }

    /// The `kubernetesVersion` it ran, empty when it records none.
    pub fn kubernetes_version(&self) -> &str {
        self.rke_config
            .get("kubernetesVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

impl StateFile {
    /// The previous successful run's state, if one is recorded.
    pub fn previous(&self) -> Result<Option<PreviousRun>, RecordUnreadable> {
        self.recorded(PREVIOUS_KEY)
    }

    fn recorded(&self, key: &'static str) -> Result<Option<PreviousRun>, RecordUnreadable> {
        self.extra
            .get(key)
            .map(|v| {
                serde_json::from_value(v.clone()).map_err(|e| RecordUnreadable {
                    key,
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// On the state a run writes before it changes any host (its `desiredState` is what it
    /// applies, its `currentState` what the cluster ran): keeps what the cluster ran as the
    /// candidate for the previous state, unless a failed run already kept one (the cluster last
    /// ran healthy with that one) or nothing changes.
    pub fn keep_rollback_candidate(&mut self) {
        if self.extra.contains_key(CANDIDATE_KEY)
            || self.current_state.rke_config == self.desired_state.rke_config
        {
            return;
        }
        if let Some(value) = PreviousRun::of(&self.current_state)
            .and_then(|candidate| serde_json::to_value(candidate).ok())
        {
            self.extra.insert(CANDIDATE_KEY.into(), value);
        }
    }

    /// On the state a run writes once it finished successfully: the candidate becomes the
    /// previous state, with the snapshot this run took first, when it differs from what now
    /// runs. A run that applied what ran before leaves the previous state as it was. Returns
    /// whether the state changed (a candidate was kept), i.e. whether it must be saved again.
    pub fn finish_run(&mut self, snapshot: Option<&str>) -> bool {
        let Some(kept) = self.extra.remove(CANDIDATE_KEY) else {
            return false;
        };
        let Ok(mut candidate) = serde_json::from_value::<PreviousRun>(kept) else {
            return true;
        };
        if Some(&candidate.rke_config) != self.current_state.rke_config.as_ref() {
            candidate.snapshot = snapshot.map(str::to_string);
            if let Ok(value) = serde_json::to_value(candidate) {
                self.extra.insert(PREVIOUS_KEY.into(), value);
            }
        }
        true
    }

    /// The state as the cluster's state Secret keeps it: without the run bookkeeping, which
    /// only the state file holds (a state recovered from the Secret has no rollback to offer
    /// rather than a stale one).
    pub fn without_run_history(&self) -> StateFile {
        let mut state = self.clone();
        state.extra.remove(PREVIOUS_KEY);
        state.extra.remove(CANDIDATE_KEY);
        state
    }
}

/// Why `rkers rollback` will not go back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RollbackRefused {
    #[error(
        "no state: the cluster was never brought up (`rkers up`), so there is nothing to roll \
         back"
    )]
    NoState,
    #[error(
        "the state file records no previous run to roll back to: one is recorded when an `up` \
         that changed the cluster finishes (RKE1 and older rkers did not record it). \
         To go back without it, run `rkers up` with the old cluster.yml"
    )]
    NoPrevious,
    #[error(
        "the recorded previous run cannot be read ({0}); run `rkers up` with the old cluster.yml"
    )]
    Unreadable(RecordUnreadable),
    #[error(
        "rolling back from {from} to {to} crosses back over a Kubernetes minor: the newer \
         control plane may have rewritten objects in etcd that {to} cannot read. Run \
         `rkers rollback --restore-snapshot` to restore etcd from {snapshot}, taken before the \
         upgrade, and then the containers (what was written to the cluster since is lost)"
    )]
    CrossesMinor {
        from: String,
        to: String,
        snapshot: String,
    },
    #[error(
        "rolling back from {from} to {to} crosses back over a Kubernetes minor, and the run \
         that upgraded took no etcd snapshot first (it ran with --no-snapshot or before rkers \
         took them). Restore an etcd snapshot from before the upgrade with `rkers etcd \
         snapshot-restore --name <snapshot>` using the old cluster.yml"
    )]
    CrossesMinorWithoutSnapshot { from: String, to: String },
    #[error(
        "rolling back from {from} to {to} moves forward more than one Kubernetes minor, which \
         `rkers up` never does: run `rkers up` with a cluster.yml one minor ahead at a time"
    )]
    SkipsMinors { from: String, to: String },
    #[error(
        "the state's {run} records kubernetesVersion {value:?}, which is not a version: whether \
         the rollback crosses a Kubernetes minor cannot be told. Fix it in the state file, or \
         run `rkers up` with the old cluster.yml"
    )]
    NotAVersion { run: &'static str, value: String },
    #[error(
        "--restore-snapshot: the run that replaced the previous state took no etcd snapshot \
         (nothing guarded changed, or it ran with --no-snapshot); roll back without \
         --restore-snapshot, or restore an older snapshot with `rkers etcd snapshot-restore`"
    )]
    NoSnapshotToRestore,
}

/// Where a rollback goes.
#[derive(Debug, Clone, PartialEq)]
pub struct RollbackTarget {
    pub previous: PreviousRun,
    /// The snapshot to restore first (`--restore-snapshot`).
    pub restore_snapshot: Option<String>,
}

/// The decision of `rkers rollback`: the previous run's state, refused when it crosses back
/// over a Kubernetes minor without `restore_snapshot`.
pub fn rollback_target(
    state: Option<&StateFile>,
    restore_snapshot: bool,
) -> Result<RollbackTarget, RollbackRefused> {
    let state = state.ok_or(RollbackRefused::NoState)?;
    let previous = state
        .previous()
        .map_err(RollbackRefused::Unreadable)?
        .ok_or(RollbackRefused::NoPrevious)?;
    if restore_snapshot {
        let snapshot = previous
            .snapshot
            .clone()
            .ok_or(RollbackRefused::NoSnapshotToRestore)?;
        return Ok(RollbackTarget {
            previous,
            restore_snapshot: Some(snapshot),
        });
    }
    let now = state
        .current_state
        .rke_config
        .as_ref()
        .and_then(|c| c.get("kubernetesVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let to = previous.kubernetes_version();
    let parse = |run: &'static str, value: &str| {
        K8sVersion::parse(value).map_err(|_| RollbackRefused::NotAVersion {
            run,
            value: value.to_string(),
        })
    };
    let (from_v, to_v) = (parse("current run", now)?, parse("previous run", to)?);
    let (from_minor, to_minor) = (
        (from_v.major(), from_v.minor()),
        (to_v.major(), to_v.minor()),
    );
    // Back to a newer minor (what a rollback with --restore-snapshot across a minor leaves
    // as the previous run) is an upgrade, which `up` makes one minor at a time.
    if to_minor > from_minor {
        if to_minor.0 != from_minor.0 || to_minor.1 > from_minor.1 + 1 {
            return Err(RollbackRefused::SkipsMinors {
                from: now.to_string(),
                to: to.to_string(),
            });
        }
    } else if to_minor < from_minor {
        let (from, to) = (now.to_string(), to.to_string());
        return Err(match &previous.snapshot {
            Some(snapshot) => RollbackRefused::CrossesMinor {
                from,
                to,
                snapshot: snapshot.clone(),
            },
            None => RollbackRefused::CrossesMinorWithoutSnapshot { from, to },
        });
    }
    Ok(RollbackTarget {
        previous,
        restore_snapshot: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn side(version: &str, max_pods: &str) -> ClusterState {
        ClusterState {
            rke_config: Some(json!({
                "kubernetesVersion": version,
                "services": {"kubelet": {"extraArgs": {"max-pods": max_pods}}}
            })),
            ..Default::default()
        }
    }

    /// The state `up` writes first: `current` what ran, `desired` what it applies.
    fn starting(current: ClusterState, desired: ClusterState) -> StateFile {
        let mut state = StateFile {
            desired_state: desired,
            current_state: current,
            extra: Default::default(),
        };
        state.keep_rollback_candidate();
        state
    }

    fn finished(mut state: StateFile, snapshot: Option<&str>) -> StateFile {
        state.promote_desired_to_current();
        state.finish_run(snapshot);
        state
    }

    #[test]
    fn a_successful_change_records_what_ran_before() {
        let state = finished(
            starting(side("v1.20.2", "110"), side("v1.20.2", "120")),
            Some("rkers-pre-1"),
        );
        let previous = state.previous().unwrap().unwrap();
        assert_eq!(
            previous.rke_config,
            side("v1.20.2", "110").rke_config.unwrap()
        );
        assert_eq!(previous.snapshot.as_deref(), Some("rkers-pre-1"));
        assert!(!state.extra.contains_key(CANDIDATE_KEY));
    }

    #[test]
    fn a_run_back_to_what_ran_before_drops_its_candidate_and_asks_to_be_saved() {
        let first = finished(
            starting(side("v1.20.2", "100"), side("v1.20.2", "110")),
            None,
        );
        // A run to 120 fails, keeping 110 as its candidate; then `up` goes back to 110.
        let mut failed = starting_from(&first, side("v1.20.2", "120"));
        failed.promote_desired_to_current();
        let mut back = starting_from(&failed, side("v1.20.2", "110"));
        back.promote_desired_to_current();
        assert!(back.finish_run(None));
        assert!(!back.extra.contains_key(CANDIDATE_KEY));
        assert_eq!(back.previous(), first.previous());
        // A run that kept no candidate (nothing changed) has nothing to save again.
        assert!(!back.finish_run(None));
    }

    #[test]
    fn a_failed_run_does_not_move_the_previous_state() {
        let first = finished(
            starting(side("v1.20.2", "100"), side("v1.20.2", "110")),
            None,
        );
        // The next run fails after promoting its config to currentState (no finish_run).
        let mut failed = starting_from(&first, side("v1.20.2", "120"));
        failed.promote_desired_to_current();
        assert_eq!(failed.previous(), first.previous());
        // The run after it succeeds: the previous state is what last ran healthy (110), not
        // the failed run's 120.
        let retry = finished(starting_from(&failed, side("v1.20.2", "130")), None);
        let previous = retry.previous().unwrap().unwrap();
        assert_eq!(
            previous.rke_config,
            side("v1.20.2", "110").rke_config.unwrap()
        );
    }

    fn starting_from(old: &StateFile, desired: ClusterState) -> StateFile {
        let mut state = StateFile {
            desired_state: desired,
            current_state: old.current_state.clone(),
            extra: old.extra.clone(),
        };
        state.keep_rollback_candidate();
        state
    }

    #[test]
    fn a_run_that_changes_nothing_keeps_the_previous_state() {
        let changed = finished(
            starting(side("v1.20.2", "110"), side("v1.20.2", "120")),
            Some("rkers-pre-1"),
        );
        let again = finished(starting_from(&changed, side("v1.20.2", "120")), None);
        assert_eq!(again.previous(), changed.previous());
    }

    #[test]
    fn a_new_cluster_has_no_previous_state() {
        let state = finished(
            starting(ClusterState::default(), side("v1.20.2", "110")),
            None,
        );
        assert_eq!(state.previous(), Ok(None));
        assert_eq!(
            rollback_target(Some(&state), false),
            Err(RollbackRefused::NoPrevious)
        );
        assert_eq!(rollback_target(None, false), Err(RollbackRefused::NoState));
    }

    #[test]
    fn the_bookkeeping_round_trips_and_leaves_rke1_keys_alone() {
        let state = finished(
            starting(side("v1.20.2", "110"), side("v1.20.2", "120")),
            Some("rkers-pre-1"),
        );
        let text = state.to_json().unwrap();
        let back = StateFile::from_json(&text, std::path::Path::new("t")).unwrap();
        assert_eq!(back, state);
        let raw: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = raw
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["desiredState", "currentState", PREVIOUS_KEY]);
        // What RKE1 reads is what it would be without the bookkeeping.
        let plain = state.without_run_history().to_json().unwrap();
        let plain: Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(raw["desiredState"], plain["desiredState"]);
        assert_eq!(raw["currentState"], plain["currentState"]);
        assert!(plain.get(PREVIOUS_KEY).is_none());
    }

    #[test]
    fn a_rollback_within_a_minor_goes_back() {
        let state = finished(
            starting(side("v1.20.2", "110"), side("v1.20.4", "110")),
            None,
        );
        let target = rollback_target(Some(&state), false).unwrap();
        assert_eq!(target.previous.kubernetes_version(), "v1.20.2");
        assert_eq!(target.restore_snapshot, None);
    }

    #[test]
    fn crossing_back_over_a_minor_needs_the_snapshot() {
        let state = finished(
            starting(side("v1.19.7", "110"), side("v1.20.2", "110")),
            Some("rkers-pre-20261127T153605Z"),
        );
        let refused = rollback_target(Some(&state), false).unwrap_err();
        assert_eq!(
            refused,
            RollbackRefused::CrossesMinor {
                from: "v1.20.2".into(),
                to: "v1.19.7".into(),
                snapshot: "rkers-pre-20261127T153605Z".into(),
            }
        );
        assert!(refused.to_string().contains("--restore-snapshot"));
        let target = rollback_target(Some(&state), true).unwrap();
        assert_eq!(
            target.restore_snapshot.as_deref(),
            Some("rkers-pre-20261127T153605Z")
        );
    }

    /// Issue 50: after a rollback with --restore-snapshot across a minor, the previous run is
    /// one minor newer: going there is an upgrade, not a crossing back; two minors is not.
    #[test]
    fn a_previous_run_one_minor_newer_is_no_crossing_back() {
        let state = finished(
            starting(side("v1.20.2", "110"), side("v1.19.7", "110")),
            None,
        );
        let target = rollback_target(Some(&state), false).unwrap();
        assert_eq!(target.previous.kubernetes_version(), "v1.20.2");
        let state = finished(
            starting(side("v1.21.2", "110"), side("v1.19.7", "110")),
            None,
        );
        let refused = rollback_target(Some(&state), false).unwrap_err();
        assert!(
            matches!(refused, RollbackRefused::SkipsMinors { .. }),
            "{refused}"
        );
        assert!(!refused.to_string().contains("crosses back"), "{refused}");
    }

    /// Issue 50: a kubernetesVersion that is no version skipped the minor check silently.
    #[test]
    fn a_version_that_is_no_version_is_refused_by_name() {
        for (previous, current, run, value) in [
            ("v1.20.2", "latest", "current run", "latest"),
            ("1.20", "v1.20.4", "previous run", "1.20"),
        ] {
            let state = finished(starting(side(previous, "110"), side(current, "110")), None);
            let refused = rollback_target(Some(&state), false).unwrap_err();
            assert_eq!(
                refused,
                RollbackRefused::NotAVersion {
                    run,
                    value: value.into()
                }
            );
            assert!(
                refused.to_string().contains(&format!("{value:?}")),
                "{refused}"
            );
        }
    }

    #[test]
    fn crossing_a_minor_without_a_snapshot_says_how_to_restore_one() {
        let state = finished(
            starting(side("v1.19.7", "110"), side("v1.20.2", "110")),
            None,
        );
        let refused = rollback_target(Some(&state), false).unwrap_err();
        assert!(matches!(
            refused,
            RollbackRefused::CrossesMinorWithoutSnapshot { .. }
        ));
        assert!(refused.to_string().contains("etcd snapshot-restore"));
        assert_eq!(
            rollback_target(Some(&state), true),
            Err(RollbackRefused::NoSnapshotToRestore)
        );
    }

    #[test]
    fn debug_output_shows_no_config() {
        let previous = PreviousRun::of(&side("v1.20.2", "secret-ish")).unwrap();
        let text = format!("{previous:?}");
        assert!(!text.contains("secret-ish"), "{text}");
    }
}
