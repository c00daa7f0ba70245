//! Step 5: what the save says around its stage. The members left out are named before
//! anything runs (the dry run says they would miss the snapshot); the command, and its dry run,
//! fail only when no member saved it (would save it), and otherwise say on how many it did.

use super::Save;
use crate::phases::driver::OnFailure;
use crate::phases::etcd_snapshot::SnapshotError;
use crate::phases::etcd_snapshot::error::listed;
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::SaveStage;

/// After the plan: how many members save it, and in a dry run which would miss it.
pub(super) fn planned(command: &mut Save<'_>, changes: &Changeset<SaveStage>) {
    command.planned = changes.stages.iter().map(|s| s.hosts.len()).sum();
    if command.opts.dry_run && !command.failures.is_empty() {
        command.reporter.warn(missing(
            &command.opts.name,
            "would be",
            &command.failures,
            command.members.len(),
        ));
    }
}

/// Some members failed (apply named them); the others saved it, or [`finish`] fails.
pub(super) fn stage_failed(
    command: &mut Save<'_>,
    failures: &[(String, String)],
) -> OnFailure<SnapshotError> {
    command.planned -= failures.len().min(command.planned);
    command.failures.extend_from_slice(failures);
    OnFailure::Continue
}

/// The save fails when no member has it (or would, in the dry run): none reachable with etcd
/// running, or every one that tried failed.
pub(super) fn verdict(command: &mut Save<'_>) -> Result<(), SnapshotError> {
    if command.planned == 0 {
        return Err(not_saved(
            &command.opts.name,
            std::mem::take(&mut command.failures),
        ));
    }
    Ok(())
}

pub(super) fn finish(command: &mut Save<'_>) -> Result<(), SnapshotError> {
    let name = &command.opts.name;
    let saved = command.planned;
    let verb = if command.s3.is_some() {
        "saving/uploading"
    } else {
        "saving"
    };
    command.reporter.info(format!(
        "Finished {verb} snapshot [{name}] on {saved} of {} etcd hosts",
        command.members.len()
    ));
    Ok(())
}

pub(super) fn not_saved(name: &str, failures: Vec<(String, String)>) -> SnapshotError {
    SnapshotError::NotSaved {
        name: name.to_string(),
        failures,
    }
}

/// The warning naming the members without the snapshot.
pub(super) fn missing(
    name: &str,
    verb: &str,
    failures: &[(String, String)],
    members: usize,
) -> String {
    format!(
        "[etcd] snapshot {name} {verb} missing on {} of {members} etcd hosts:\n{}",
        failures.len(),
        listed(failures)
    )
}
