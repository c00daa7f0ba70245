//! Step 4: the stages through the executor, with `up` as its last action. After the prepare
//! stage the members' checksums must agree; when sharing or preparing failed (nothing the
//! cluster runs on was touched yet) the scratch directories go again, a rollback outside the
//! changeset, only on failure. `up` connects to the hosts itself: the restore's links close
//! before it.

use super::Restore;
use super::observe::Found;
use crate::hosts::Host;
use crate::phases::Runner;
use crate::phases::driver::ApplyStage;
use crate::phases::etcd_snapshot::executor;
use crate::phases::executor::Executor;
use crate::phases::up::up;
use rkers_core::changeset::Stage;
use rkers_core::diff::snapshot::{self, RESTORE, RESTORE_CLEAN, RestoreStage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The executor (running `up` for the last stage), and the hosts the restore connected.
pub(super) struct Restorer<'c> {
    exec: Executor<'c>,
    hosts: Vec<Arc<Host>>,
    members: Vec<Arc<Host>>,
    image: String,
    registries: Vec<crate::hosts::target::RegistryCredential>,
}

pub(super) fn restorer<'c>(command: &Restore<'c>, found: &Found) -> Restorer<'c> {
    let cluster = command.cluster;
    let up_opts = &command.opts.up;
    let reporter = command.reporter.clone();
    let up_failure = command.up_failure.clone();
    let exec = executor(cluster, &found.pool, &command.reporter).with_up(Box::new(move || {
        let reporter = reporter.clone();
        let up_failure = up_failure.clone();
        Box::pin(async move {
            up(cluster, up_opts, &reporter).await.map_err(|e| {
                // The executor reports it; the stage's failure hands it back whole (record.rs).
                let e = Arc::new(e);
                *up_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
                Box::new(e) as crate::phases::executor::UpFailure
            })
        })
    }));
    Restorer {
        exec,
        hosts: found.pool.hosts().cloned().collect(),
        members: command
            .members
            .iter()
            .filter_map(|m| found.pool.get(&m.address).cloned())
            .collect(),
        image: command.image.clone(),
        registries: cluster.registry_credentials(),
    }
}

impl ApplyStage<RestoreStage> for Restorer<'_> {
    async fn apply_stage(
        &self,
        stage: &Stage<RestoreStage>,
        runner: &Runner,
    ) -> Vec<(String, String)> {
        if stage.phase == RestoreStage::Up {
            for host in &self.hosts {
                host.link().close().await;
            }
        }
        let mut failures = self.exec.apply_stage(stage, runner).await;
        if stage.phase == RestoreStage::Prepare && failures.is_empty() {
            failures.extend(self.checksums_disagree(stage));
        }
        if matches!(stage.phase, RestoreStage::Share | RestoreStage::Prepare)
            && !failures.is_empty()
        {
            self.clean_scratch().await;
        }
        failures
    }
}

impl Restorer<'_> {
    /// The failure when the members restored different snapshots.
    fn checksums_disagree(&self, stage: &Stage<RestoreStage>) -> Option<(String, String)> {
        let per_host: BTreeMap<String, String> = stage
            .hosts
            .iter()
            .map(|h| {
                let sum = self
                    .exec
                    .one_shot_log(&h.host, RESTORE)
                    .and_then(|log| snapshot::restore_checksum(&log))
                    .unwrap_or_else(|| format!("none ({RESTORE} printed no checksum)"));
                (h.host.clone(), sum)
            })
            .collect();
        snapshot::checksums_disagree(&per_host)
    }

    /// Removes every member's scratch directory; a member where that fails keeps it (the
    /// next restore empties it first).
    async fn clean_scratch(&self) {
        let spec = snapshot::restore_clean_spec(&self.image);
        let timeout = Duration::from_secs(snapshot::DEFAULT_TIMEOUT_SECS);
        for host in &self.members {
            let docker = host.docker();
            if docker
                .ensure_image(&spec.image, &self.registries, &mut |_| {})
                .await
                .is_ok()
            {
                let _ = docker.run_to_success(RESTORE_CLEAN, &spec, timeout).await;
            }
        }
    }
}
