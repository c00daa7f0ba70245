//! `etcd snapshot-save` and `snapshot-restore` as library calls.

use super::run::{cluster_error, operate};
use super::up::up_options;
use super::{ApiError, Operation, Outcome, UpRequest};
use crate::output::Reporter;
use crate::phases;

/// Takes a local etcd snapshot named `name` on every etcd host, like
/// `rkers etcd snapshot-save --name NAME`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::snapshot_save(&op, "before-upgrade").await?;
/// # Ok(()) }
/// ```
pub async fn snapshot_save(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    let name = name.to_string();
    operate(op, "etcd snapshot-save", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::etcd_snapshot::SaveOptions {
                name: snapshot_name(&name, reporter)?,
                s3: None,
                ssh: run.ssh.clone(),
                agent_override: false,
                dry_run: false,
            };
            phases::etcd_snapshot::save(&run.cluster, &opts, reporter)
                .await
                .map_err(snapshot_error)
        })
    })
    .await
}

/// Restores the etcd snapshot `name` and brings the cluster up on it, like
/// `rkers etcd snapshot-restore --name NAME`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::snapshot_restore(&op, "before-upgrade").await?;
/// # Ok(()) }
/// ```
pub async fn snapshot_restore(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    let name = name.to_string();
    operate(op, "etcd snapshot-restore", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::etcd_snapshot::RestoreOptions {
                name: snapshot_name(&name, reporter)?,
                s3: None,
                // A restore rebuilds etcd and the control plane by the caller's explicit
                // request: nothing is left to confirm about adopting the cluster (as in the CLI).
                up: up_options(
                    run,
                    &UpRequest {
                        disable_port_check: true,
                        yes: true,
                        ..Default::default()
                    },
                    false,
                ),
                dry_run: false,
            };
            phases::etcd_snapshot::restore(&run.cluster, &opts, reporter)
                .await
                .map_err(snapshot_error)
        })
    })
    .await
}

pub(super) fn snapshot_error(e: phases::etcd_snapshot::SnapshotError) -> ApiError {
    use phases::etcd_snapshot::SnapshotError;
    match e {
        SnapshotError::Invalid(m) => ApiError::InvalidConfig(m),
        SnapshotError::Cluster(c) => cluster_error(c),
        SnapshotError::Up {
            cause: phases::up::UpError::Cluster(c),
            ..
        } if c.is_invalid_config() => ApiError::InvalidConfig(c.to_string()),
        other => ApiError::Operation(crate::error::Failure::new(other)),
    }
}

fn snapshot_name(name: &str, reporter: &Reporter) -> Result<String, ApiError> {
    let (name, warning) =
        phases::etcd_snapshot::check_snapshot_name(name).map_err(snapshot_error)?;
    if let Some(w) = warning {
        reporter.warn(w);
    }
    Ok(name)
}
