//! Step 4: every member one after the other, each to its end whatever the others did. The
//! stage's phase ends with its verdict: failed when no member saved the snapshot, else done
//! after naming the members without it.

use super::Save;
use super::observe::Found;
use super::record::{missing, not_saved};
use crate::diff::Action;
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::driver::ApplyStage;
use crate::phases::etcd_snapshot::executor;
use crate::phases::executor::Executor;
use rkers_core::changeset::Stage;
use rkers_core::diff::snapshot::SaveStage;

/// The executor, with what the stage's verdict names: the snapshot, how many members there
/// are and those observe left out.
pub(super) struct Saver {
    exec: Executor<'static>,
    reporter: Reporter,
    name: String,
    members: usize,
    left_out: Vec<(String, String)>,
}

pub(super) fn saver(command: &Save<'_>, found: &Found) -> Saver {
    Saver {
        exec: executor(command.cluster, &found.pool, &command.reporter),
        reporter: command.reporter.clone(),
        name: command.opts.name.clone(),
        members: command.members.len(),
        left_out: command.failures.clone(),
    }
}

impl ApplyStage<SaveStage> for Saver {
    async fn apply_stage(&self, stage: &Stage<SaveStage>, _: &Runner) -> Vec<(String, String)> {
        let phase_name = stage.phase.to_string();
        let phase = self.reporter.phase(&phase_name);
        let name = &self.name;
        self.reporter
            .info(format!("Starting saving snapshot [{name}] on etcd hosts"));
        let mut failed = Vec::new();
        for h in &stage.hosts {
            let step = self
                .reporter
                .host_action(&phase_name, &h.host, "save snapshot");
            let actions: Vec<&Action> = h.actions.iter().collect();
            match self.exec.on(&h.host).apply(&actions).await {
                Ok(()) => step.ok(),
                Err(e) => {
                    let e = e.to_string();
                    step.fail(&e);
                    failed.push((h.host.clone(), e));
                }
            }
        }
        let mut all = self.left_out.clone();
        all.extend(failed.iter().cloned());
        if failed.len() == stage.hosts.len() {
            phase.fail(&not_saved(name, all).to_string());
        } else {
            if !all.is_empty() {
                self.reporter.warn(missing(name, "is", &all, self.members));
            }
            phase.done();
        }
        failed
    }
}
