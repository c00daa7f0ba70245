//! Step 5: what the rotation records after each stage and at the end. A provider file
//! written on every controlplane host is recorded as current before any kube-apiserver
//! restarts with it, so an interrupted rotation resumes with the same keys; the round's
//! `state secret` stage then stores that state.

use super::{RotateKey, RotateKeyError};
use crate::phases::driver::OnFailure;
use crate::phases::executor::Executor;
use rkers_core::changeset::list_failures;
use rkers_core::diff::key_rotation::{RotationStage, Round};

pub(super) fn stage_done(
    command: &mut RotateKey<'_>,
    stage: &RotationStage,
    exec: &Executor,
) -> Result<(), RotateKeyError> {
    let RotationStage::Write(round) = *stage else {
        return Ok(());
    };
    let state = &mut command.state;
    state.current_state.encryption_config = command.rotation.provider(round);
    state.save_to(
        &command.cluster.files.storage,
        &command.cluster.files.state_path,
    )?;
    exec.set_state_json(state.to_json()?);
    Ok(())
}

pub(super) fn stage_failed(
    command: &mut RotateKey<'_>,
    stage: &RotationStage,
    failures: &[(String, String)],
) -> OnFailure<RotateKeyError> {
    match stage {
        RotationStage::StateSecret(_) => {
            command.reporter.warn(format!(
                "the in-cluster copy of the state was not updated:\n{}",
                list_failures(failures)
            ));
            OnFailure::Continue
        }
        // RKE1 goes back to the old key alone here; keeping both keys is safer: every Secret
        // stays readable whichever key wrote it, and running the command again finishes.
        RotationStage::Rewrite => OnFailure::StopWith(RotateKeyError::Rewrite(failures.to_vec())),
        RotationStage::Write(_) | RotationStage::Restart(_) => OnFailure::Stop,
    }
}

pub(super) fn finish(command: &mut RotateKey<'_>) -> Result<(), RotateKeyError> {
    let state = &mut command.state;
    state.desired_state.encryption_config = command.rotation.provider(Round::RemoveKey);
    state.save_to(
        &command.cluster.files.storage,
        &command.cluster.files.state_path,
    )?;
    command
        .reporter
        .info("Cluster secrets encryption key rotated successfully");
    Ok(())
}
