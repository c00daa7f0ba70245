//! The driver's order and failure handling, with a command whose steps record what ran, a
//! stand-in for the executor and links that count their closes.

use super::*;
use crate::diff::Action;
use crate::hosts::HostError;
use crate::hosts::ssh::{BoxedStream, ExecOutput};
use futures::future::BoxFuture;
use rkers_core::changeset::Pace;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Prepare,
    Switch,
    Record,
}

impl Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {self:?}")
    }
}

#[derive(Debug, thiserror::Error)]
enum FakeError {
    #[error(transparent)]
    Stage(#[from] StageFailed),
    #[error("{0}")]
    Own(String),
}

/// A link that only counts how often it was closed.
#[derive(Debug, Default)]
struct CountingLink {
    closed: AtomicUsize,
}

fn refused<T>() -> BoxFuture<'static, Result<T, HostError>> {
    Box::pin(async {
        Err(HostError::Ssh {
            host: "fake".into(),
            detail: "a link that only closes".into(),
        })
    })
}

impl HostLink for CountingLink {
    fn host(&self) -> &str {
        "fake"
    }
    fn addr(&self) -> &str {
        "fake:22"
    }
    fn user(&self) -> &str {
        "root"
    }
    fn exec<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        refused()
    }
    fn exec_with_input<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a [u8],
    ) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        refused()
    }
    fn exec_stream<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        refused()
    }
    fn open_tcp<'a>(&'a self, _: &'a str, _: u16) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        refused()
    }
    fn open_docker<'a>(&'a self, _: &'a str) -> BoxFuture<'a, std::io::Result<BoxedStream>> {
        Box::pin(async { Err(std::io::Error::other("no Docker here")) })
    }
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) > 0
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        self.closed.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {})
    }
}

/// What ran, in order, shared by the command and its applier.
type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

/// Applies a stage by noting it; fails on `failing`'s hosts.
struct FakeHosts {
    log: Log,
    failing: Option<Step>,
}

/// The applier: [`FakeHosts`] (through the driver's [`ApplyStage`] adapter, the executor's
/// way), unless the stage's own step fails with the command's error (`up`'s way).
struct FakeApplier {
    hosts: FakeHosts,
    own_failure: Option<Step>,
}

impl ApplyStage<Step> for FakeHosts {
    async fn apply_stage(&self, stage: &Stage<Step>, _runner: &Runner) -> Vec<(String, String)> {
        note(&self.log, format!("apply {}", stage.phase));
        if self.failing == Some(stage.phase) {
            let host = &stage.hosts[0].host;
            vec![(host.clone(), "boom".to_string())]
        } else {
            Vec::new()
        }
    }
}

impl ApplyStep<Step, FakeError> for FakeApplier {
    async fn apply_step<'s>(
        &'s mut self,
        stage: &'s Stage<Step>,
        runner: &'s Runner,
    ) -> Result<(), StepFailure<FakeError>> {
        if self.own_failure == Some(stage.phase) {
            note(&self.hosts.log, format!("apply {} (fails)", stage.phase));
            return Err(StepFailure::Command(FakeError::Own(
                "etcd never answered".into(),
            )));
        }
        self.hosts.apply_step(stage, runner).await
    }
}

struct FakeCommand {
    log: Log,
    link: Arc<CountingLink>,
    /// Observe fails, after it handed over its link.
    observe_fails: bool,
    /// Building the applier fails (the API cannot be reached).
    applier_fails: bool,
    /// The stage whose hosts fail, and what the command makes of it.
    failing: Option<Step>,
    on_failure: fn() -> OnFailure<FakeError>,
    /// Connects under a phase of its own (handing its link then, not in observe) and says
    /// something about its plan; `Some(true)`: connecting fails.
    connects: Option<bool>,
    /// The plan phase's failure line, when not the error's text.
    plan_failure: Option<&'static str>,
    /// The stage whose own step fails with the command's error.
    own_failure: Option<Step>,
    /// The checks after the plan refuse the command.
    confirm_refuses: bool,
    /// The command's record already fails it (a host it could not reach).
    verdict_fails: bool,
}

impl FakeCommand {
    fn new(log: &Log) -> Self {
        FakeCommand {
            log: log.clone(),
            link: Arc::default(),
            observe_fails: false,
            applier_fails: false,
            failing: None,
            on_failure: || OnFailure::Stop,
            connects: None,
            plan_failure: None,
            own_failure: None,
            confirm_refuses: false,
            verdict_fails: false,
        }
    }
}

fn restart(name: &str) -> Action {
    Action::RestartContainer {
        name: name.into(),
        reason: "a file it reads changed".into(),
    }
}

impl Command for FakeCommand {
    type Stage = Step;
    type Observed = Vec<String>;
    type Applier = FakeApplier;
    type Error = FakeError;

    async fn connect(&mut self, links: &mut Links) -> Result<(), FakeError> {
        let Some(fails) = self.connects else {
            return Ok(());
        };
        links.keep_link(self.link.clone());
        note(&self.log, "connect".into());
        if fails {
            return Err(FakeError::Own("h2 refused".into()));
        }
        Ok(())
    }

    async fn observe(&mut self, links: &mut Links) -> Result<Vec<String>, FakeError> {
        if self.connects.is_none() {
            links.keep_link(self.link.clone());
        }
        note(&self.log, "observe".into());
        if self.observe_fails {
            return Err(FakeError::Own("h2 unreachable".into()));
        }
        Ok(vec!["h1".into(), "h2".into()])
    }

    fn decide(&self, hosts: &Vec<String>) -> Result<Changeset<Step>, FakeError> {
        note(&self.log, "decide".into());
        let mut changes = Changeset::default();
        for step in [Step::Prepare, Step::Switch, Step::Record] {
            for h in hosts {
                changes.push(step, Pace::OneAtATime, h, restart(&format!("{step}")));
            }
        }
        Ok(changes)
    }

    fn plan_failure(&self, error: &FakeError) -> String {
        self.plan_failure
            .map_or_else(|| error.to_string(), str::to_string)
    }

    fn planned(&mut self, changes: &Changeset<Step>) {
        if self.connects.is_some() {
            note(
                &self.log,
                format!("planned {} stages", changes.stages.len()),
            );
        }
    }

    async fn confirm(&mut self, _: &Vec<String>) -> Result<(), FakeError> {
        if self.confirm_refuses {
            note(&self.log, "confirm refused".into());
            return Err(FakeError::Own("a webhook blocks system pods".into()));
        }
        Ok(())
    }

    async fn applier(&mut self, _: Vec<String>) -> Result<FakeApplier, FakeError> {
        note(&self.log, "applier".into());
        if self.applier_fails {
            return Err(FakeError::Own("no API".into()));
        }
        Ok(FakeApplier {
            hosts: FakeHosts {
                log: self.log.clone(),
                failing: self.failing,
            },
            own_failure: self.own_failure,
        })
    }

    fn stage_done(&mut self, stage: &Step, _: &FakeApplier) -> Result<(), FakeError> {
        note(&self.log, format!("done {stage}"));
        Ok(())
    }

    fn stage_failed(&mut self, stage: &Step, _: &[(String, String)]) -> OnFailure<FakeError> {
        note(&self.log, format!("failed {stage}"));
        (self.on_failure)()
    }

    fn verdict(&mut self) -> Result<(), FakeError> {
        if self.verdict_fails {
            note(&self.log, "verdict failed".into());
            return Err(FakeError::Own("h3 cannot be reached".into()));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), FakeError> {
        note(&self.log, "finish".into());
        Ok(())
    }
}

fn driver(dry_run: bool) -> Driver {
    Driver {
        reporter: Reporter::plain(),
        dry_run,
        concurrency: 2,
    }
}

/// A driver whose reporter notes the plan phase's start and end in `log`.
fn driver_noting_the_plan_phase(dry_run: bool, log: &Log) -> Driver {
    let log = log.clone();
    let reporter = Reporter::with_sink(Arc::new(move |e: crate::output::Event| {
        if e.phase.as_deref() == Some(PLAN_PHASE) {
            note(&log, format!("plan phase {:?}", e.status));
        }
    }));
    Driver {
        reporter,
        dry_run,
        concurrency: 2,
    }
}

fn lines(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn stages_apply_in_order_each_recorded_after_it_ran() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    driver(false).run(&mut command).await.unwrap();
    assert_eq!(
        lines(&log),
        [
            "observe",
            "decide",
            "applier",
            "apply step Prepare",
            "done step Prepare",
            "apply step Switch",
            "done step Switch",
            "apply step Record",
            "done step Record",
            "finish",
        ]
    );
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_stage_stops_the_run_and_nothing_after_it_runs_or_is_recorded() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.failing = Some(Step::Switch);
    let e = driver(false).run(&mut command).await.unwrap_err();
    assert_eq!(e.to_string(), "[step Switch]\n  - h1: boom");
    let FakeError::Stage(failed) = &e else {
        panic!("expected the driver's stage error, got {e:?}");
    };
    assert_eq!(failed.hosts(), ["h1"]);
    assert_eq!(
        lines(&log),
        [
            "observe",
            "decide",
            "applier",
            "apply step Prepare",
            "done step Prepare",
            "apply step Switch",
            "failed step Switch",
        ]
    );
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_command_may_stop_with_its_own_error_or_go_on() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.failing = Some(Step::Prepare);
    command.on_failure = || OnFailure::StopWith(FakeError::Own("keeps both".into()));
    let e = driver(false).run(&mut command).await.unwrap_err();
    assert_eq!(e.to_string(), "keeps both");
    assert_eq!(lines(&log).last().unwrap(), "failed step Prepare");
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);

    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.failing = Some(Step::Switch);
    command.on_failure = || OnFailure::Continue;
    driver(false).run(&mut command).await.unwrap();
    let seen = lines(&log);
    assert_eq!(
        seen[6..],
        [
            "failed step Switch",
            "apply step Record",
            "done step Record",
            "finish"
        ]
    );
    assert!(!seen.contains(&"done step Switch".to_string()));
}

#[tokio::test]
async fn a_dry_run_applies_nothing_and_closes_the_links() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    driver(true).run(&mut command).await.unwrap();
    assert_eq!(lines(&log), ["observe", "decide"]);
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

/// A dry run's exit code is the run's: the failure the command's record already holds ends
/// the dry run as it ends the run (after every stage, and before `finish` says it went well).
#[tokio::test]
async fn a_dry_run_fails_as_the_run_does_on_what_the_plan_already_holds() {
    for dry_run in [true, false] {
        let log = Log::default();
        let mut command = FakeCommand::new(&log);
        command.verdict_fails = true;
        let e = driver(dry_run).run(&mut command).await.unwrap_err();
        assert_eq!(e.to_string(), "h3 cannot be reached", "dry run: {dry_run}");
        let seen = lines(&log);
        assert_eq!(seen.last().unwrap(), "verdict failed", "{seen:?}");
        assert!(!seen.contains(&"finish".to_string()), "{seen:?}");
        assert_eq!(seen.contains(&"applier".to_string()), !dry_run, "{seen:?}");
        assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn links_are_closed_when_observe_or_the_applier_fails() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.observe_fails = true;
    let e = driver(false).run(&mut command).await.unwrap_err();
    assert_eq!(e.to_string(), "h2 unreachable");
    assert_eq!(lines(&log), ["observe"]);
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);

    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.applier_fails = true;
    let e = driver(false).run(&mut command).await.unwrap_err();
    assert_eq!(e.to_string(), "no API");
    assert_eq!(lines(&log), ["observe", "decide", "applier"]);
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn connect_runs_before_the_plan_phase_and_its_failure_ends_the_run_there() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.connects = Some(false);
    driver_noting_the_plan_phase(false, &log)
        .run(&mut command)
        .await
        .unwrap();
    assert_eq!(
        lines(&log)[..5],
        [
            "connect",
            "plan phase Started",
            "observe",
            "decide",
            "plan phase Ok"
        ]
    );
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);

    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.connects = Some(true);
    let e = driver_noting_the_plan_phase(false, &log)
        .run(&mut command)
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "h2 refused");
    // No plan phase, nothing observed; the link connect opened is closed all the same.
    assert_eq!(lines(&log), ["connect"]);
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn planned_follows_the_plan_phase_in_the_dry_run_and_the_run_alike() {
    for dry_run in [true, false] {
        let log = Log::default();
        let mut command = FakeCommand::new(&log);
        command.connects = Some(false);
        driver_noting_the_plan_phase(dry_run, &log)
            .run(&mut command)
            .await
            .unwrap();
        let seen = lines(&log);
        assert_eq!(seen[4..6], ["plan phase Ok", "planned 3 stages"]);
        if dry_run {
            assert_eq!(seen.len(), 6, "a dry run applies nothing: {seen:?}");
        } else {
            assert_eq!(seen[6], "applier");
        }
    }

    // A plan that fails is not said anything about.
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.connects = Some(false);
    command.observe_fails = true;
    driver_noting_the_plan_phase(false, &log)
        .run(&mut command)
        .await
        .unwrap_err();
    assert_eq!(
        lines(&log),
        [
            "connect",
            "plan phase Started",
            "observe",
            "plan phase Failed"
        ]
    );
}

#[tokio::test]
async fn the_plan_phase_fails_with_the_line_the_command_words_and_returns_its_whole_error() {
    for (own_line, shown) in [(None, "h2 unreachable"), (Some("1 host(s)"), "1 host(s)")] {
        let failed = Log::default();
        let sink_log = failed.clone();
        let reporter = Reporter::with_sink(Arc::new(move |e: crate::output::Event| {
            if e.phase.as_deref() == Some(PLAN_PHASE) && e.status == crate::output::Status::Failed {
                note(&sink_log, e.error.or(e.message).unwrap_or_default());
            }
        }));
        let driver = Driver {
            reporter,
            dry_run: false,
            concurrency: 2,
        };
        let log = Log::default();
        let mut command = FakeCommand::new(&log);
        command.observe_fails = true;
        command.plan_failure = own_line;
        let e = driver.run(&mut command).await.unwrap_err();
        assert_eq!(e.to_string(), "h2 unreachable");
        assert_eq!(lines(&failed), [shown]);
    }
}

#[tokio::test]
async fn a_step_failing_with_the_commands_own_error_ends_the_run_with_it() {
    let log = Log::default();
    let mut command = FakeCommand::new(&log);
    command.own_failure = Some(Step::Switch);
    let e = driver(false).run(&mut command).await.unwrap_err();
    assert!(
        matches!(&e, FakeError::Own(m) if m == "etcd never answered"),
        "{e:?}"
    );
    // Neither recorded nor handed to stage_failed, and nothing after it runs.
    assert_eq!(
        lines(&log),
        [
            "observe",
            "decide",
            "applier",
            "apply step Prepare",
            "done step Prepare",
            "apply step Switch (fails)",
        ]
    );
    assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refusal_after_the_plan_stops_the_dry_run_and_the_run_alike() {
    for dry_run in [true, false] {
        let log = Log::default();
        let mut command = FakeCommand::new(&log);
        command.confirm_refuses = true;
        let e = driver(dry_run).run(&mut command).await.unwrap_err();
        assert_eq!(e.to_string(), "a webhook blocks system pods");
        assert_eq!(lines(&log), ["observe", "decide", "confirm refused"]);
        assert_eq!(command.link.closed.load(Ordering::SeqCst), 1);
    }
}
