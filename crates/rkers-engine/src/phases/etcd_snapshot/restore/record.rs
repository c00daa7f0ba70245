//! Step 5: what the restore says around its stages, and each failure worded by what it cost:
//! nothing yet (sharing or preparing failed: the cluster was left as it was), etcd stopped
//! (replacing the data failed), or only the final `up`.

use super::Restore;
use crate::phases::driver::OnFailure;
use crate::phases::etcd_snapshot::SnapshotError;
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::{self, RestoreStage};
use std::sync::Arc;

/// The plan phase's line: hosts that cannot be used are named, the error says why.
pub(super) fn plan_failure(error: &SnapshotError) -> String {
    match error {
        SnapshotError::Unreachable(problems) => problems.summary(),
        other => other.to_string(),
    }
}

/// After the plan: whose copy of the snapshot every member restores.
pub(super) fn planned(command: &mut Restore<'_>, changes: &Changeset<RestoreStage>) {
    if let Some(source) = snapshot::shared_from(changes) {
        command.reporter.info(format!(
            "using the snapshot [{}] of host {source} on every etcd host",
            command.opts.name
        ));
    }
}

pub(super) fn stage_failed(
    command: &mut Restore<'_>,
    stage: &RestoreStage,
    failures: &[(String, String)],
) -> OnFailure<SnapshotError> {
    let name = command.opts.name.clone();
    let failures = failures.to_vec();
    OnFailure::StopWith(match stage {
        RestoreStage::Share | RestoreStage::Prepare => {
            SnapshotError::RestoreAborted { name, failures }
        }
        RestoreStage::Replace => SnapshotError::RestoreFailed { name, failures },
        RestoreStage::Up => {
            let taken = command
                .up_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            // The executor's copy went with its report: this one is the last. None: the
            // executor found no `up` to run (etcd was stopped already).
            match taken.map(Arc::try_unwrap) {
                Some(Ok(cause)) => SnapshotError::Up { name, cause },
                Some(Err(_)) | None => SnapshotError::RestoreFailed { name, failures },
            }
        }
    })
}

pub(super) fn finish(command: &mut Restore<'_>) -> Result<(), SnapshotError> {
    command.reporter.info(format!(
        "Finished restoring snapshot [{}] on all etcd hosts",
        command.opts.name
    ));
    Ok(())
}
