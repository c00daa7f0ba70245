//! Step 5: what the removal says and records around its stages. A host not reached or not
//! cleaned keeps the state file, its backups and the kubeconfig (the cluster's CA and keys,
//! which a retried `remove` or an `up` adopting the host needs) and fails the command; a local
//! file that cannot be deleted only warns.

use super::{Remove, RemoveError};
use crate::phases::driver::OnFailure;
use rkers_core::changeset::Changeset;
use rkers_core::diff::removal::RemovalStage;

/// After the plan, for the dry run and the run alike: why local files are kept, and the
/// backups `--keep-backups` keeps.
pub(super) fn planned(command: &mut Remove<'_>, changes: &Changeset<RemovalStage>) {
    command.deletes_local_files = changes
        .stages
        .iter()
        .any(|s| s.phase == RemovalStage::LocalFiles);
    if !command.failures.is_empty() {
        command.reporter.warn(
            "the state file, its backups and the kubeconfig are kept: not every host can be \
             cleaned",
        );
    }
    if command.opts.keep_backups {
        warn_kept_backups(command);
    }
}

pub(super) fn stage_failed(
    command: &mut Remove<'_>,
    stage: &RemovalStage,
    failures: &[(String, String)],
) -> OnFailure<RemoveError> {
    match stage {
        RemovalStage::Hosts => {
            command.failures.extend_from_slice(failures);
            if command.deletes_local_files {
                // The local files stage, the last, does not run.
                command.reporter.warn(
                    "the state file, its backups and the kubeconfig are kept: not every host \
                     was cleaned",
                );
            }
            OnFailure::StopWith(RemoveError::Hosts(std::mem::take(&mut command.failures)))
        }
        RemovalStage::LocalFiles => {
            for (_, e) in failures {
                command.reporter.warn(e.clone());
            }
            OnFailure::Continue
        }
    }
}

/// The hosts connect could not reach fail the command, after every stage ran, and its dry run.
#[expect(
    clippy::result_large_err,
    reason = "the command's own error, returned once at its end"
)]
pub(super) fn verdict(command: &mut Remove<'_>) -> Result<(), RemoveError> {
    if !command.failures.is_empty() {
        return Err(RemoveError::Hosts(std::mem::take(&mut command.failures)));
    }
    Ok(())
}

#[expect(
    clippy::result_large_err,
    reason = "the command's own error, returned once at its end"
)]
pub(super) fn finish(command: &mut Remove<'_>) -> Result<(), RemoveError> {
    command.reporter.info("Cluster removed successfully");
    Ok(())
}

/// The backups `--keep-backups` keeps: they hold every private key of the removed cluster.
fn warn_kept_backups(command: &Remove<'_>) {
    let state_path = &command.cluster.files.state_path;
    let kept = crate::state::list_backups(state_path).unwrap_or_default();
    if !kept.is_empty() {
        let list: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
        command.reporter.warn(format!(
            "keeping {} backup(s) of the state, which hold every private key of the removed \
             cluster: {}",
            kept.len(),
            list.join(", ")
        ));
    }
}
