//! The one driver of every command that changes a cluster (`up`, `encrypt rotate-key`, `cert
//! rotate`, `remove`, `etcd snapshot-save`, `etcd snapshot-restore`, `doctor --fix` and
//! `--restore-webhooks`), each declared as a list of steps. A command declares
//! its steps through [`Command`]: what it observes (I/O: the hosts it connects, what it reads),
//! what it decides from that (a pure function to its typed changeset, in `rkers_core`), what
//! applies its stages (the executor, with the hosts and API its actions need), and what it
//! records after a stage. The driver owns the rest, the same for every command:
//!
//! - connecting first, for a command that does it under a phase of its own
//!   ([`Command::connect`]), then the `plan` phase around observe and decide, failed with the
//!   error that ended it (in the phase's line as [`Command::plan_failure`] words it), then what
//!   the command says about its plan ([`Command::planned`]) and the checks and questions that
//!   may still refuse it ([`Command::confirm`]), in the dry run as in the run;
//! - the dry run: what the command shows of its changeset ([`Command::show`]; by default
//!   [`crate::output::Reporter::planned`] of it), and nothing applied; it ends as the run
//!   would, with the failure the plan already holds ([`Command::verdict`]: a host that cannot
//!   be reached fails `remove` and the dry run alike), so a dry run's exit code is the run's;
//! - the stages applied in order, each at its pace; the first failing stage ends the run: with
//!   [`StageFailed`] when hosts failed, unless the command says otherwise ([`OnFailure`]), or
//!   with the command's own error when its step failed ([`StepFailure::Command`]); no later
//!   stage runs nor is recorded;
//! - explaining a host's dropped connection by probing it, for every host a command connected;
//! - closing every host link the command handed it ([`Links`]), on every path.

use crate::error::HostContext;
use crate::hosts::{Host, HostLink};
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::executor::Executor;
use rkers_core::changeset::{Changeset, Stage, is_pseudo_host, list_failures};
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

/// The phase observe and decide run under.
const PLAN_PHASE: &str = "plan";

/// A command as the driver runs it: its steps, in the order the driver takes them.
pub trait Command {
    /// Its stages (an enum); `Display` is the phase name shown while one runs.
    type Stage: Clone + PartialEq + Display + Send + Sync;
    /// What observe read, for decide and for building the applier.
    type Observed: Send + Sync;
    /// What applies its stages: the executor, given what the actions need, or the command's
    /// own steps.
    type Applier: ApplyStep<Self::Stage, Self::Error> + Send + Sync;
    /// Its error; a failed stage becomes one.
    type Error: From<StageFailed> + Display;

    /// Before the plan phase, for a command that connects its hosts under a phase of its own
    /// (`cert rotate`'s `connect`): connects them, handing their links to `links`. By default
    /// observe connects, within the plan phase.
    fn connect(
        &mut self,
        _links: &mut Links,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Connects the hosts it needs (handing their links to `links` as soon as they are open),
    /// unless [`Command::connect`] did, and reads what the decision needs.
    fn observe(
        &mut self,
        links: &mut Links,
    ) -> impl Future<Output = Result<Self::Observed, Self::Error>> + Send;

    /// Pure: every change the command makes, from what was observed.
    fn decide(&self, observed: &Self::Observed) -> Result<Changeset<Self::Stage>, Self::Error>;

    /// The plan phase's failure line for `error`, which the command returns in full: by
    /// default its text; a command may shorten it (`snapshot-restore` names the hosts that
    /// cannot be used, its error lists why).
    fn plan_failure(&self, error: &Self::Error) -> String {
        error.to_string()
    }

    /// After the plan phase, before the dry run prints the changeset or anything applies: what
    /// the command says about its plan (`remove`'s warnings that local files are kept), the
    /// same for the dry run and the run.
    fn planned(&mut self, _changes: &Changeset<Self::Stage>) {}

    /// After [`Command::planned`], in the dry run as in the run: the checks that may still
    /// refuse the command and the operator's confirmation (`up`'s webhook guard, removed APIs
    /// and adoption question).
    fn confirm(
        &mut self,
        _observed: &Self::Observed,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// The dry run: what the command shows of what it would do. By default every planned
    /// action of the changeset; `up`, whose actions are per host across its steps, shows those.
    fn show(
        &mut self,
        _observed: &Self::Observed,
        changes: &Changeset<Self::Stage>,
        reporter: &Reporter,
    ) {
        reporter.planned(&changes.planned());
    }

    /// What applies the stages, from what was observed; called only when the command is not a
    /// dry run.
    fn applier(
        &mut self,
        observed: Self::Observed,
    ) -> impl Future<Output = Result<Self::Applier, Self::Error>> + Send;

    /// After `stage` was applied on every host: what the command records (a state save).
    fn stage_done(
        &mut self,
        _stage: &Self::Stage,
        _applier: &Self::Applier,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// After `stage` failed on the hosts in `failures`: stop with [`StageFailed`] (the
    /// default), stop with the command's own error, or warn and go on.
    fn stage_failed(
        &mut self,
        _stage: &Self::Stage,
        _failures: &[(String, String)],
    ) -> OnFailure<Self::Error> {
        OnFailure::Stop
    }

    /// The failure the command ends with whatever applies (the hosts it could not reach and
    /// must, no member left to save a snapshot), from what it recorded: at the end of the dry
    /// run, and in the run after every stage, before [`Command::finish`]. One function for
    /// both, so a dry run never exits 0 where the run fails.
    fn verdict(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// After every stage ran and [`Command::verdict`] passed: what the command records and
    /// says at the end.
    fn finish(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What a failed stage means to its command.
pub enum OnFailure<E> {
    /// The run ends with [`StageFailed`].
    Stop,
    /// The run ends with this error.
    StopWith(E),
    /// The failure is not fatal (the command warned): the next stage runs.
    Continue,
}

/// A stage failed on some hosts: the stage's phase name and each host's failure.
#[derive(Debug, thiserror::Error)]
#[error("[{stage}]\n{}", list_failures(.failures))]
pub struct StageFailed {
    pub stage: String,
    pub failures: Vec<(String, String)>,
}

impl HostContext for StageFailed {
    fn hosts(&self) -> Vec<&str> {
        self.failures
            .iter()
            .map(|(h, _)| h.as_str())
            .filter(|h| !is_pseudo_host(h))
            .collect()
    }
}

/// How a stage failed.
pub enum StepFailure<E> {
    /// These hosts failed (host, why); the command decides what that means
    /// ([`Command::stage_failed`]).
    Hosts(Vec<(String, String)>),
    /// The command's own step failed with its error, which ends the run as it is (the step
    /// reported its phase).
    Command(E),
}

/// Applies one stage of a command whose error is `E`: the executor and the appliers of the
/// changeset commands (through [`ApplyStage`]), or a command's own steps (`up`).
pub trait ApplyStep<S, E> {
    fn apply_step<'s>(
        &'s mut self,
        stage: &'s Stage<S>,
        runner: &'s Runner,
    ) -> impl Future<Output = Result<(), StepFailure<E>>> + Send + 's;
}

impl<S: Sync, E: 'static, A: ApplyStage<S> + Send + Sync> ApplyStep<S, E> for A {
    async fn apply_step<'s>(
        &'s mut self,
        stage: &'s Stage<S>,
        runner: &'s Runner,
    ) -> Result<(), StepFailure<E>> {
        let failures = self.apply_stage(stage, runner).await;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(StepFailure::Hosts(failures))
        }
    }
}

/// Applies one stage and returns the hosts that failed, with why: the executor, or a test's
/// stand-in.
pub trait ApplyStage<S> {
    fn apply_stage<'s>(
        &'s self,
        stage: &'s Stage<S>,
        runner: &'s Runner,
    ) -> impl Future<Output = Vec<(String, String)>> + Send + 's;
}

impl<S: Display + Sync> ApplyStage<S> for Executor<'_> {
    fn apply_stage<'s>(
        &'s self,
        stage: &'s Stage<S>,
        runner: &'s Runner,
    ) -> impl Future<Output = Vec<(String, String)>> + Send + 's {
        Executor::apply_stage(self, stage, runner)
    }
}

/// The host links a command opened, which the driver closes when the command ends, and its
/// hosts, which the driver probes when a step on one broke off with a dropped connection.
#[derive(Default)]
pub struct Links {
    links: Vec<Arc<dyn HostLink>>,
    hosts: Vec<Arc<Host>>,
}

impl Links {
    /// Hands over the links of `hosts`.
    pub fn keep<'h>(&mut self, hosts: impl IntoIterator<Item = &'h Arc<Host>>) {
        for host in hosts {
            self.links.push(host.link().clone());
            self.hosts.push(host.clone());
        }
    }

    /// Hands over one link.
    pub fn keep_link(&mut self, link: Arc<dyn HostLink>) {
        self.links.push(link);
    }

    async fn close(self) {
        for link in self.links {
            link.close().await;
        }
    }
}

/// How the driver runs a command: where it reports, whether it only prints, and how many
/// hosts work at once.
pub struct Driver {
    pub reporter: Reporter,
    pub dry_run: bool,
    pub concurrency: usize,
}

impl Driver {
    /// Runs `command`'s steps; its links are closed whatever happens.
    pub async fn run<C: Command>(&self, command: &mut C) -> Result<(), C::Error> {
        let mut links = Links::default();
        let outcome = self.steps(command, &mut links).await;
        links.close().await;
        outcome
    }

    async fn steps<C: Command>(&self, command: &mut C, links: &mut Links) -> Result<(), C::Error> {
        command.connect(links).await?;
        let phase = self.reporter.phase(PLAN_PHASE);
        let planned = match command.observe(links).await {
            Ok(observed) => command.decide(&observed).map(|c| (observed, c)),
            Err(e) => Err(e),
        };
        let (observed, changes) = match planned {
            Ok(planned) => {
                phase.done();
                command.planned(&planned.1);
                planned
            }
            Err(e) => {
                phase.fail(&command.plan_failure(&e));
                return Err(e);
            }
        };
        command.confirm(&observed).await?;
        if self.dry_run {
            command.show(&observed, &changes, &self.reporter);
            return command.verdict();
        }
        let mut applier = command.applier(observed).await?;
        let runner = Runner::new(self.reporter.clone(), self.concurrency);
        runner.probe_failed_hosts(&links.hosts);
        for stage in changes.stages {
            let failures = match applier.apply_step(&stage, &runner).await {
                Ok(()) => {
                    command.stage_done(&stage.phase, &applier)?;
                    continue;
                }
                Err(StepFailure::Command(e)) => return Err(e),
                Err(StepFailure::Hosts(failures)) => failures,
            };
            match command.stage_failed(&stage.phase, &failures) {
                OnFailure::Continue => {}
                OnFailure::StopWith(e) => return Err(e),
                OnFailure::Stop => {
                    return Err(StageFailed {
                        stage: stage.phase.to_string(),
                        failures,
                    }
                    .into());
                }
            }
        }
        command.verdict()?;
        command.finish()
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
