//! Apply: the files and certificates each host gets (calico's runtime directories with
//! them), then the images it lacks.

use super::run::Run;
use super::{UpError, finish};
use crate::diff::Action;
use crate::phases::Runner;
use std::sync::Arc;

pub(super) async fn apply_files(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let phase = runner.reporter.phase("certificates and files");
    let hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| run.actions[&h.address].iter().any(is_file))
        .map(|h| h.address.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host(
            "certificates and files",
            "write files",
            hosts,
            move |address| {
                let run = r.clone();
                async move {
                    let actions: Vec<&Action> = run.actions[&address]
                        .iter()
                        .filter(|a| is_file(a))
                        .collect();
                    run.executor(&address).apply(&actions).await
                }
            },
        )
        .await;
    finish(phase, result)
}

fn is_file(a: &Action) -> bool {
    matches!(
        a,
        Action::UploadFile { .. }
            | Action::RemoveFile { .. }
            | Action::SetFileMode { .. }
            | Action::CreateDirectories { .. }
            | Action::EnsureCniDirectory { .. }
            | Action::WriteTmpfilesEntry { .. }
    )
}

/// The images of every host but `elsewhere` (pulled by the early worker plane), all at once.
pub(super) async fn pull_images(
    run: &Arc<Run>,
    runner: &Runner,
    elsewhere: &[String],
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("images");
    let hosts: Vec<String> = run
        .actions
        .iter()
        .filter(|(h, _)| !elsewhere.contains(h))
        .filter(|(_, a)| a.iter().any(|a| matches!(a, Action::PullImage { .. })))
        .map(|(h, _)| h.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host("images", "pull images", hosts, move |address| {
            let run = r.clone();
            async move { pull_host_images(&run, &address).await }
        })
        .await;
    finish(phase, result)
}

/// Every image one host lacks, all asked for at once: `ensure_image` waits for a turn at the
/// image's registry (hosts::pulls), which is the only cap.
pub(super) async fn pull_host_images(run: &Run, address: &str) -> Result<(), UpError> {
    let executor = run.executor(address);
    let singles: Vec<[&Action; 1]> = run.actions[address]
        .iter()
        .filter(|a| matches!(a, Action::PullImage { .. }))
        .map(|a| [a])
        .collect();
    let pulls = singles.iter().map(|one| executor.apply(one));
    let failed: Vec<_> = futures::future::join_all(pulls)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(UpError::Pulls(failed))
    }
}
