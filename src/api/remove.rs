//! `remove` as a library call.

use super::run::{cluster_error, operate};
use super::{ApiError, Operation, Outcome};
use crate::phases;

/// `rkers remove`.
#[derive(Clone, Debug, Default)]
pub struct RemoveRequest {
    pub keep_backups: bool,
}

/// Tears the cluster down, like `rkers remove --force`; the store is left without a state.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::remove(&op, rkers::api::RemoveRequest::default()).await?;
/// # Ok(()) }
/// ```
pub async fn remove(op: &Operation, req: RemoveRequest) -> Result<Outcome, ApiError> {
    operate(op, "remove", move |run, reporter| {
        let opts = phases::remove::RemoveOptions {
            dry_run: false,
            keep_backups: req.keep_backups,
            agent_override: false,
            ssh: run.ssh.clone(),
        };
        Box::pin(async move {
            phases::remove::remove(&run.cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    phases::remove::RemoveError::Cluster(c) => cluster_error(c),
                    other => ApiError::Operation(crate::error::Failure::new(other)),
                })
        })
    })
    .await
}
