//! `rollback` as a library call: the shared decision of `phases::rollback`, run as an operation.

use super::run::{CONFIG_STATE_NAME, Run, input_config, operate_with};
use super::snapshots::snapshot_error;
use super::up::{up_error, up_options};
use super::{ApiError, KeyDifference, Operation, Outcome, Plan, UpRequest};
use crate::output::Reporter;
use crate::phases;

/// `rkers rollback`: back to what the previous successful `up` applied, as the state records
/// it (the operation's config is only compared with it afterwards).
#[derive(Clone, Debug, Default)]
pub struct RollbackRequest {
    /// Only show what the rollback would do (`--dry-run`): no host, and not the store, changes.
    pub dry_run: bool,
    /// First restore the etcd snapshot the rolled-back run took before it changed anything
    /// (`--restore-snapshot`): needed to go back over a Kubernetes minor.
    pub restore_snapshot: bool,
    pub disable_port_check: bool,
    /// Take no etcd snapshot before a change to etcd or the control plane (`--no-snapshot`).
    pub no_snapshot: bool,
}

/// What a rollback leaves.
#[derive(Debug)]
pub struct RollbackOutcome {
    /// A dry run saves nothing: its version is the one loaded, and it has no kubeconfig.
    pub outcome: Outcome,
    /// The `kubernetes_version` rolled back to.
    pub kubernetes_version: String,
    /// The etcd snapshot restored first (`restore_snapshot`).
    pub restored_snapshot: Option<String>,
    /// A dry run's per-host actions; `None` for a run, and for a dry run that restores a
    /// snapshot (its plan is in the events).
    pub plan: Option<Plan>,
    /// The keys where the operation's cluster.yml differs from the rolled-back config (change
    /// them back, or the next `up` undoes the rollback); `Err` says why it could not be
    /// compared. The events say the same.
    pub cluster_yml_differs: Result<Vec<KeyDifference>, crate::config::ConfigError>,
}

/// Brings the cluster back to what the previous successful `up` applied, like
/// `rkers rollback`: the config recorded in the stored state, applied exactly as recorded (or,
/// with `restore_snapshot`, the etcd snapshot taken before the change restored first). A state
/// without a previous run, or a minor crossed back without the snapshot, is refused with
/// [`ApiError::Refused`] before any host is reached. The operation's own config is only
/// compared with the rolled-back one.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// use rkers::api::{self, RollbackRequest};
/// let plan = api::rollback(&op, RollbackRequest { dry_run: true, ..Default::default() }).await?;
/// println!("back to {}: {:?}", plan.kubernetes_version, plan.cluster_yml_differs);
/// api::rollback(&op, RollbackRequest::default()).await?;
/// # Ok(()) }
/// ```
pub async fn rollback(op: &Operation, req: RollbackRequest) -> Result<RollbackOutcome, ApiError> {
    use phases::rollback::{self as back, RollbackError, RollbackRunError};
    let prepare = |reporter: &Reporter| {
        let mut restore_snapshot = None;
        // Set whenever the preparation succeeds; the value is never seen otherwise.
        let mut differences = Ok(Vec::new());
        let run = Run::prepare_with(op, reporter, |files, state| {
            let prepared = back::prepare(
                state,
                req.restore_snapshot,
                files,
                op.metadata.clone(),
                CONFIG_STATE_NAME,
                reporter,
            )
            .map_err(|e| match e {
                RollbackError::Refused(r) => ApiError::Refused(r),
                other => ApiError::Failed(other.to_string()),
            })?;
            let current = input_config(op).map(|l| l.config);
            differences = back::cluster_yml_differences(current, &prepared.cluster);
            restore_snapshot = prepared.restore_snapshot;
            Ok(prepared.cluster)
        })?;
        Ok((run, (restore_snapshot, differences)))
    };
    let dry_run = req.dry_run;
    let (outcome, (restored_snapshot, differences), (version, plan)) = operate_with(
        op,
        "rollback",
        dry_run,
        prepare,
        move |run, prepared, reporter| {
            let (restore_snapshot, differences) = prepared;
            let mut opts = up_options(
                run,
                &UpRequest {
                    disable_port_check: req.disable_port_check,
                    no_snapshot: req.no_snapshot,
                    ..Default::default()
                },
                dry_run,
            );
            // A dry run leaves every file as it was, known_hosts too.
            opts.ssh.record_new_host_keys = !dry_run;
            Box::pin(async move {
                let plan = back::run(&run.cluster, restore_snapshot.as_deref(), opts, reporter)
                    .await
                    .map_err(|e| match e {
                        RollbackRunError::Up(e) => up_error(e),
                        RollbackRunError::Restore(e) => snapshot_error(e),
                    })?;
                back::report_differences(differences, reporter);
                Ok((run.cluster.config.kubernetes_version.clone(), plan))
            })
        },
    )
    .await?;
    Ok(RollbackOutcome {
        outcome,
        kubernetes_version: version,
        restored_snapshot,
        plan: plan.map(|hosts| Plan { hosts }),
        cluster_yml_differs: differences,
    })
}
