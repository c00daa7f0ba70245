//! Step 6: what the rotation records after its stages. The admin kubeconfig written, the new
//! bundle becomes the current state (saved, and handed to the state Secret's stage); a failed
//! state Secret only warns, as in RKE1; failed system pods end the run with their own error.

use super::{CertRotate, RotateError};
use crate::phases::driver::OnFailure;
use crate::phases::executor::Executor;
use rkers_core::diff::cert_rotation::CertStage;

pub(super) fn stage_done(
    command: &mut CertRotate<'_>,
    stage: &CertStage,
    exec: &Executor,
) -> Result<(), RotateError> {
    if *stage != CertStage::AdminKubeconfig {
        return Ok(());
    }
    let phase = command.reporter.phase("current state");
    let state = &mut command.state;
    state.promote_desired_to_current();
    let files = &command.cluster.files;
    state.save_to(&files.storage, &files.state_path)?;
    exec.set_state_json(state.to_json()?);
    phase.done();
    Ok(())
}

pub(super) fn stage_failed(
    command: &mut CertRotate<'_>,
    stage: &CertStage,
    failures: &[(String, String)],
) -> OnFailure<RotateError> {
    match stage {
        // As in RKE1, the copy in the cluster is a convenience: failing to write it only warns.
        CertStage::StateSecret => {
            for (_, e) in failures {
                command
                    .reporter
                    .warn(format!("Failed to save full state to Kubernetes: {e}"));
            }
            OnFailure::Continue
        }
        CertStage::SystemPods => OnFailure::StopWith(RotateError::Pods(failures.to_vec())),
        CertStage::Certificates | CertStage::Restart(_) | CertStage::AdminKubeconfig => {
            OnFailure::Stop
        }
    }
}
