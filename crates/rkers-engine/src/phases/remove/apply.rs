//! Step 4: what applies the removal's stages. Every host's teardown runs at once, each host's
//! actions wave by wave ([`waves`]); the local files go through the executor one at a time.

use super::Remove;
use super::observe::Found;
use crate::diff::Action;
use crate::phases::Runner;
use crate::phases::changeset;
use crate::phases::driver::ApplyStage;
use crate::phases::executor::{ExecError, Executor};
use rkers_core::changeset::Stage;
use rkers_core::diff::removal::RemovalStage;

/// The executor, with the reachable hosts, the cleaner image and the registries' credentials.
pub(super) struct Teardown {
    exec: Executor<'static>,
}

pub(super) fn teardown(command: &Remove<'_>, found: &Found) -> Teardown {
    let cluster = command.cluster;
    let exec = Executor::new(
        &command.reporter,
        &cluster.config.system_images.alpine,
        cluster.registry_credentials(),
    )
    .with_hosts(found.pool.hosts())
    .with_local_storage(cluster.files.storage.clone());
    Teardown { exec }
}

impl ApplyStage<RemovalStage> for Teardown {
    async fn apply_stage(
        &self,
        stage: &Stage<RemovalStage>,
        runner: &Runner,
    ) -> Vec<(String, String)> {
        match stage.phase {
            RemovalStage::Hosts => {
                changeset::apply_stage(stage, runner, |host: String, actions: Vec<Action>| {
                    let exec = &self.exec;
                    async move { apply_in_waves(exec, &host, &actions).await }
                })
                .await
            }
            RemovalStage::LocalFiles => self.exec.apply_stage(stage, runner).await,
        }
    }
}

/// Which actions of a host's teardown run together: its containers go (and the cleaner image
/// comes) at once, then the pods' containers at once, then its directories and log links are
/// cleaned at once (different directories, helper containers of different names); anything
/// else runs alone.
fn wave_of(action: &Action) -> Option<u8> {
    match action {
        // Pods' containers go after the RKE containers (kubelet and its cri-dockerd first).
        a if rkers_core::diff::removal::is_pod_container_removal(a) => Some(2),
        Action::RemoveContainer { .. } | Action::PullImage { .. } => Some(0),
        Action::CleanDirectories { .. }
        | Action::CleanLogLinks { .. }
        | Action::CleanAsRoot { .. } => Some(1),
        _ => None,
    }
}

/// Consecutive actions of the same wave, in the planned order.
pub(super) fn waves(actions: &[Action]) -> Vec<&[Action]> {
    actions
        .chunk_by(|a, b| wave_of(a).is_some() && wave_of(a) == wave_of(b))
        .collect()
}

/// Applies one host's teardown wave by wave ([`waves`]), each wave's actions at once. Every
/// action is reported in the planned order, as the dry run lists it; a wave with a failure
/// stops the host after the whole wave is reported.
async fn apply_in_waves(
    exec: &Executor<'_>,
    host: &str,
    actions: &[Action],
) -> Result<(), ExecError> {
    let on = exec.on(host);
    for wave in waves(actions) {
        let results = futures::future::join_all(wave.iter().map(|a| on.run(a))).await;
        let mut first_error = None;
        for (action, result) in wave.iter().zip(results) {
            if let Err(e) = on.report(action, result) {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    Ok(())
}
