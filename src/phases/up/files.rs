//! Apply: the files and certificates each host gets, then the images it lacks.

use super::run::Run;
use super::{UpError, files_root, finish};
use crate::diff::Action;
use crate::phases::Runner;
use crate::phases::files::{self, DesiredFile};
use crate::plan;
use std::collections::BTreeSet;
use std::sync::Arc;

pub(super) async fn apply_files(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let phase = runner.reporter.phase("certificates and files");
    let hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| {
            run.actions[&h.address].iter().any(|a| {
                matches!(
                    a,
                    Action::UploadFile { .. }
                        | Action::RemoveFile { .. }
                        | Action::SetFileMode { .. }
                        | Action::CreateDirectories { .. }
                )
            })
        })
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
                    let h = run.host_plan(&address);
                    let host = run.host(&address);
                    let wanted: BTreeSet<String> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::UploadFile { path, .. } => Some(path.clone()),
                            _ => None,
                        })
                        .collect();
                    let windows = run.plan.windows.contains_key(&address);
                    let base = files_root(h, windows);
                    let files: Vec<DesiredFile> = run.files[&address]
                        .iter()
                        .filter(|f| wanted.contains(&plan::join_path(&[&base, &f.relative_path])))
                        .cloned()
                        .collect();
                    let stale: Vec<String> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::RemoveFile { path, .. } => path
                                .strip_prefix(base.as_str())
                                .map(|r| r.trim_start_matches('/').to_string()),
                            _ => None,
                        })
                        .collect();
                    if windows {
                        let directories: Vec<String> = run.actions[&address]
                            .iter()
                            .filter_map(|a| match a {
                                Action::CreateDirectories { paths } => Some(paths.clone()),
                                _ => None,
                            })
                            .flatten()
                            .collect();
                        return crate::phases::windows::write_host_files(
                            host,
                            &base,
                            &directories,
                            &files,
                            &stale,
                        )
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string());
                    }
                    let modes: Vec<files::ModeChange> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::SetFileMode {
                                path,
                                mode,
                                uid,
                                gid,
                                ..
                            } => Some(files::ModeChange {
                                relative_path: path
                                    .strip_prefix(base.as_str())?
                                    .trim_start_matches('/')
                                    .to_string(),
                                mode: *mode,
                                uid: *uid,
                                gid: *gid,
                            }),
                            _ => None,
                        })
                        .collect();
                    files::write_files(host.docker(), &base, &run.helper_image, &files)
                        .await
                        .map_err(|e| e.to_string())?;
                    files::remove_files(host.docker(), &base, &run.helper_image, &stale)
                        .await
                        .map_err(|e| e.to_string())?;
                    files::set_modes(host.docker(), &base, &run.helper_image, &modes)
                        .await
                        .map_err(|e| e.to_string())
                }
            },
        )
        .await;
    finish(phase, result)
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
pub(super) async fn pull_host_images(run: &Run, address: &str) -> Result<(), String> {
    let host = run.host(address);
    let pulls = run.actions[address].iter().filter_map(|a| match a {
        Action::PullImage { image } => Some(async move {
            host.docker()
                .ensure_image(image, &run.registries, &mut |_| {})
                .await
                .map_err(|e| e.to_string())
        }),
        _ => None,
    });
    let failed: Vec<String> = futures::future::join_all(pulls)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}
