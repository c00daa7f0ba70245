//! What the user sees: progress on a TTY, timestamped lines otherwise, JSON events on request;
//! and the redaction every line passes through so no secret reaches a terminal or a log.
//!
//! Every phase and every host action becomes an [`Event`]. The three renderers show the same
//! events: `Progress` draws a live line per host under a phase header (indicatif), `Plain`
//! prints one timestamped line per event, `Json` prints one JSON object per event.

pub mod timing;

pub use rkers_core::redact::{
    Redactor, is_secret_name, mask_credentials, mask_secret_assignment, redact,
};
pub use timing::PhaseTiming;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The last `n` lines of `text`, trimmed, for evidence: the end of a log or of
/// a command's stderr, quoted in an error or a finding.
pub fn last_lines(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// How events are rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Live progress on a terminal, timestamped lines otherwise.
    Text,
    /// One JSON object per event on stdout.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Started,
    Ok,
    Failed,
    Skipped,
    Warning,
    Info,
    /// Stopped by SIGINT, SIGTERM or SIGHUP (or a cancelled operation) before it finished.
    Interrupted,
}

/// One thing that happened, in the shape `--output json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// RFC 3339 UTC time of the event.
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// On a failed `result` event naming several hosts: all of them (`host` holds one alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// On a failed `result` event: the error's sources, outermost first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Vec<String>>,
    /// Structured details of the event (e.g. the adoption summary); never holds secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// `"result"` on the one event that ends every run, which also carries the exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// The timing summary's event: every phase with its time and slowest host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<Vec<PhaseTiming>>,
}

impl Event {
    pub fn new(status: Status) -> Self {
        Event {
            time: now_rfc3339(),
            phase: None,
            host: None,
            action: None,
            status,
            duration_ms: None,
            message: None,
            error: None,
            hosts: None,
            cause: None,
            data: None,
            event: None,
            exit_code: None,
            timings: None,
        }
    }

    fn redacted(mut self, redactor: &Redactor) -> Self {
        for field in [&mut self.message, &mut self.error, &mut self.action] {
            if let Some(text) = field.as_mut() {
                *text = redactor.redact(text);
            }
        }
        for text in self.cause.iter_mut().flatten() {
            *text = redactor.redact(text);
        }
        self
    }
}

fn action_event(
    kind: &'static str,
    host: &str,
    action: &crate::diff::Action,
    status: Status,
    error: Option<&str>,
) -> Event {
    let mut e = Event::new(status);
    e.event = Some(kind);
    e.host = Some(host.to_owned());
    e.action = Some(action.to_string());
    e.data = serde_json::to_value(action).ok();
    e.error = error.map(str::to_string);
    e
}

/// One line on stderr. A stderr that cannot be written (a full disk, a closed pipe) must not
/// stop a command halfway through its changes: `eprintln!` panics there (exit 101, and its own
/// message is lost the same way), so the line is dropped instead.
pub fn stderr_line(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A question on stderr, without a newline, flushed so it shows before the answer is read;
/// dropped when stderr cannot be written (see [`stderr_line`]).
pub fn stderr_prompt(question: impl std::fmt::Display) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
}

/// Text on stdout, dropped when stdout cannot be written (see [`stderr_line`]).
pub fn stdout_text(text: impl std::fmt::Display) {
    let _ = write_stdout(text);
}

/// Whether descriptor 1 was closed when the process started (see [`stdout_was_closed`]).
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that stdout was closed when the process started: Rust's runtime then opens
/// `/dev/null` in its place before `main`, so a product written there would be lost with exit
/// 0. The binary learns it before the runtime does (`src/main.rs`); [`write_stdout`] then fails.
pub fn stdout_was_closed() {
    STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Text on stdout, flushed; the caller decides what a failed write means (a one-shot command's
/// product fails the command, a progress line is dropped).
pub fn write_stdout(text: impl std::fmt::Display) -> std::io::Result<()> {
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(std::io::Error::other(
            "standard output was closed when rkers started",
        ));
    }
    let mut out = std::io::stdout().lock();
    write!(out, "{text}")?;
    out.flush()
}

/// The reporter of the running command, for notices from code that has none at hand (a host
/// key recorded while connecting).
static CURRENT: Mutex<Option<Reporter>> = Mutex::new(None);

/// A warning shown through the command's reporter (plain stderr when there is none).
pub fn notice(message: impl Into<String>) {
    let current = CURRENT.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match current {
        Some(r) => r.warn(message),
        None => stderr_line(format_args!("warning: {}", redact(&message.into()))),
    }
}

/// Set once SIGINT arrived: what is dropped unfinished from then on was interrupted.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the run is being interrupted (before its work is dropped).
pub fn mark_interrupted() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// How a phase or host action that is dropped unfinished ended: an early return on an error,
/// or the run being interrupted (the process by SIGINT, or this reporter's operation by its
/// caller). Never success.
fn unfinished(reporter: &Reporter) -> (Status, &'static str) {
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
        || reporter
            .interrupted
            .load(std::sync::atomic::Ordering::SeqCst)
    {
        (Status::Interrupted, "interrupted")
    } else {
        (Status::Failed, "stopped before it finished")
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

enum Renderer {
    Progress {
        multi: MultiProgress,
        bars: Mutex<HashMap<(String, String), ProgressBar>>,
    },
    Plain,
    Json,
    Quiet,
    /// Every event handed to the embedding caller (the library API), nothing printed.
    Sink(EventSink),
}

/// A callback that receives every event of one operation, already redacted.
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

/// The sink for all user-facing output of one command. Cheap to clone; shared across tasks.
#[derive(Clone)]
pub struct Reporter {
    renderer: Arc<Renderer>,
    timings: Arc<Mutex<timing::Timings>>,
    interrupted: Arc<std::sync::atomic::AtomicBool>,
    /// The secrets this reporter's command or operation registered, masked in every event.
    redactor: Arc<Redactor>,
}

impl Reporter {
    /// Picks the renderer: JSON when asked, live progress when stderr is a terminal, plain lines
    /// otherwise. `quiet` keeps only warnings and errors (and all JSON events).
    pub fn new(format: OutputFormat, quiet: bool) -> Self {
        let renderer = match format {
            OutputFormat::Json => Renderer::Json,
            OutputFormat::Text if quiet => Renderer::Quiet,
            OutputFormat::Text if std::io::stderr().is_terminal() => Renderer::Progress {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                bars: Mutex::new(HashMap::new()),
            },
            OutputFormat::Text => Renderer::Plain,
        };
        let reporter = Reporter {
            renderer: Arc::new(renderer),
            timings: Default::default(),
            interrupted: Default::default(),
            redactor: Redactor::global().clone(),
        };
        *CURRENT.lock().unwrap_or_else(|p| p.into_inner()) = Some(reporter.clone());
        reporter
    }

    /// A reporter that prints plain lines regardless of the terminal (tests, pipes).
    pub fn plain() -> Self {
        Reporter {
            renderer: Arc::new(Renderer::Plain),
            timings: Default::default(),
            interrupted: Default::default(),
            redactor: Redactor::global().clone(),
        }
    }

    /// A reporter for one operation run inside another program: every event goes to `sink`
    /// and nothing is printed or registered process-wide, so operations on several clusters
    /// can run at once in one process, each with its own reporter.
    pub fn with_sink(sink: EventSink) -> Self {
        Reporter {
            renderer: Arc::new(Renderer::Sink(sink)),
            timings: Default::default(),
            interrupted: Default::default(),
            redactor: Default::default(),
        }
    }

    /// Where the secrets of this reporter's run are registered: the process's for the command
    /// line, the operation's own for [`Reporter::with_sink`].
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Records that this reporter's operation is being cancelled: what is dropped unfinished
    /// from then on reports "interrupted", never success.
    pub fn mark_interrupted(&self) {
        self.interrupted
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_json(&self) -> bool {
        matches!(*self.renderer, Renderer::Json)
    }

    /// Whether text beside the events (tables, summaries) may be printed: not in JSON, and
    /// never for an operation run inside another program, whose output is its events only.
    pub fn prints_text(&self) -> bool {
        !matches!(*self.renderer, Renderer::Json | Renderer::Sink(_))
    }

    pub fn emit(&self, event: Event) {
        let event = event.redacted(&self.redactor);
        match &*self.renderer {
            Renderer::Json => {
                let line = serde_json::to_string(&event).unwrap_or_default();
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            Renderer::Plain => stderr_line(plain_line(&event)),
            Renderer::Quiet => {
                if matches!(
                    event.status,
                    Status::Failed | Status::Warning | Status::Interrupted
                ) {
                    stderr_line(plain_line(&event));
                }
            }
            Renderer::Progress { multi, bars } => render_progress(multi, bars, &event),
            Renderer::Sink(sink) => sink(event),
        }
    }

    pub fn info(&self, message: impl Into<String>) {
        let mut e = Event::new(Status::Info);
        e.message = Some(message.into());
        self.emit(e);
    }

    pub fn warn(&self, message: impl Into<String>) {
        let mut e = Event::new(Status::Warning);
        e.message = Some(message.into());
        self.emit(e);
    }

    /// The one event that ends every run: its outcome, exit code and error. In JSON it is the
    /// last line; as text, a failure is the `error:` line the caller prints.
    pub fn finish_run(&self, exit_code: u8, error: Option<&str>) {
        let report = error.map(crate::error::ErrorReport::message);
        self.finish_run_with(exit_code, report.as_ref());
    }

    /// [`Reporter::finish_run`] for a typed failure: the same event, whatever the command, with
    /// the host (`host` when the error names one, `hosts` when it names several) and the causes.
    pub fn finish_run_with(&self, exit_code: u8, error: Option<&crate::error::ErrorReport>) {
        let status = match exit_code {
            0 => Status::Ok,
            // 128 + SIGINT, SIGTERM or SIGHUP.
            130 | 143 | 129 => Status::Interrupted,
            _ => Status::Failed,
        };
        let mut e = Event::new(status);
        e.event = Some("result");
        e.exit_code = Some(exit_code);
        if let Some(report) = error {
            e.error = Some(report.message.clone());
            match report.hosts.as_slice() {
                [] => {}
                [one] => e.host = Some(one.clone()),
                several => e.hosts = Some(several.to_vec()),
            }
            e.cause = (!report.causes.is_empty()).then(|| report.causes.clone());
        }
        let e = e.redacted(&self.redactor);
        if let Renderer::Sink(sink) = &*self.renderer {
            sink(e);
            return;
        }
        if let Renderer::Json = &*self.renderer {
            let line = serde_json::to_string(&e).unwrap_or_default();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    /// A dry run's changeset, the same for every command: as text, `render_dry_run`'s lines;
    /// in JSON, one `{"event":"planned","host":H,"action":TEXT,"data":ACTION}` per action, in
    /// the order it will be applied, so a consumer can compare it with the `applied` events.
    pub fn planned(&self, hosts: &[crate::diff::HostActions]) {
        if let Renderer::Json | Renderer::Sink(_) = &*self.renderer {
            for h in hosts {
                for a in &h.actions {
                    self.emit(action_event("planned", &h.host, a, Status::Info, None));
                }
            }
        } else {
            stdout_text(crate::diff::render_dry_run(hosts));
        }
    }

    /// One action of the changeset, applied (or failed) on `host`: the event a dry run's
    /// `planned` event for the same action predicted.
    pub fn applied(&self, host: &str, action: &crate::diff::Action, error: Option<&str>) {
        let status = if error.is_some() {
            Status::Failed
        } else {
            Status::Ok
        };
        self.emit(action_event("applied", host, action, status, error));
    }

    fn timings(&self) -> std::sync::MutexGuard<'_, timing::Timings> {
        self.timings.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The timing summary of the phases seen so far: one line per phase with its time and
    /// slowest host, and the same data as one JSON event (`action: "timing summary"`).
    /// Then the critical path and each host's waits (`data` of that event).
    pub fn timing_summary(&self, total: Duration) {
        let (summary, path) = {
            let t = self.timings();
            (t.summary(), timing::critical_path(&t.intervals()))
        };
        if self.is_json() {
            let mut e = Event::new(Status::Info);
            e.action = Some("timing summary".into());
            e.duration_ms = Some(total.as_millis() as u64);
            e.timings = Some(summary);
            e.data = serde_json::to_value(&path).ok();
            self.emit(e);
            return;
        }
        self.info(format!(
            "timing summary ({:.1}s in all):",
            total.as_secs_f64()
        ));
        for line in timing::render(&summary) {
            self.info(format!("  {line}"));
        }
        for line in timing::render_critical_path(&path) {
            self.info(format!("  {line}"));
        }
    }

    /// Starts a phase; the returned guard reports its end.
    pub fn phase(&self, name: &str) -> PhaseGuard {
        self.timings().phase_started(name);
        let mut e = Event::new(Status::Started);
        e.phase = Some(name.to_string());
        self.emit(e);
        PhaseGuard {
            reporter: self.clone(),
            name: name.to_string(),
            started: Instant::now(),
            finished: false,
        }
    }

    /// Starts an action on one host within a phase.
    pub fn host_action(&self, phase: &str, host: &str, action: &str) -> HostAction {
        let mut e = Event::new(Status::Started);
        e.phase = Some(phase.to_string());
        e.host = Some(host.to_string());
        e.action = Some(action.to_string());
        self.emit(e);
        HostAction {
            reporter: self.clone(),
            phase: phase.to_string(),
            host: host.to_string(),
            action: action.to_string(),
            started: Instant::now(),
            finished: false,
        }
    }
}

fn plain_line(e: &Event) -> String {
    let mut line = format!("{} ", e.time);
    line.push_str(match e.status {
        Status::Started => "START",
        Status::Ok => "OK   ",
        Status::Failed => "FAIL ",
        Status::Skipped => "SKIP ",
        Status::Warning => "WARN ",
        Status::Info => "INFO ",
        Status::Interrupted => "INTR ",
    });
    if let Some(p) = &e.phase {
        line.push_str(&format!(" [{p}]"));
    }
    if let Some(h) = &e.host {
        line.push_str(&format!(" [{h}]"));
    }
    if let Some(a) = &e.action {
        line.push(' ');
        line.push_str(a);
    }
    if let Some(m) = &e.message {
        line.push(' ');
        line.push_str(m);
    }
    if let Some(d) = e.duration_ms {
        line.push_str(&format!(" ({})", format_duration(Duration::from_millis(d))));
    }
    if let Some(err) = &e.error {
        line.push_str(": ");
        line.push_str(err);
    }
    line
}

fn format_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn render_progress(
    multi: &MultiProgress,
    bars: &Mutex<HashMap<(String, String), ProgressBar>>,
    e: &Event,
) {
    if e.event == Some("applied") {
        // The phase's live host line already shows the step; only a failed action gets a line
        // of its own (the phase's failure follows it).
        if let (Status::Failed | Status::Interrupted, Some(host)) = (e.status, &e.host) {
            let _ = multi.println(format!(
                "  ✗ {host}: {}: {}",
                e.action.as_deref().unwrap_or_default(),
                e.error.as_deref().unwrap_or_default()
            ));
        }
        return;
    }
    let (Some(phase), Some(host)) = (&e.phase, &e.host) else {
        // Phase headers and free-standing messages print above the live lines.
        let text = match (e.status, &e.phase) {
            (Status::Started, Some(p)) => format!("==> {p}"),
            (_, Some(p)) => {
                let d = e
                    .duration_ms
                    .map(|d| format!(" ({})", format_duration(Duration::from_millis(d))))
                    .unwrap_or_default();
                match &e.error {
                    Some(err) => format!("<== {p} failed{d}: {err}"),
                    None => format!("<== {p} done{d}"),
                }
            }
            (Status::Warning, None) => format!("warning: {}", e.message.as_deref().unwrap_or("")),
            (_, None) => e.message.clone().unwrap_or_default(),
        };
        let _ = multi.println(text);
        return;
    };
    let key = (phase.clone(), host.clone());
    let mut bars = bars.lock().unwrap_or_else(|p| p.into_inner());
    let bar = bars
        .entry(key)
        .or_insert_with(|| {
            let bar = multi.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("  {spinner} {prefix:<24} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(host.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        })
        .clone();
    let action = e.action.clone().unwrap_or_default();
    match e.status {
        Status::Started | Status::Info => bar.set_message(action),
        Status::Ok | Status::Skipped => bar.set_message(format!("✓ {action}")),
        Status::Warning => bar.set_message(format!(
            "! {action} {}",
            e.message.as_deref().unwrap_or_default()
        )),
        Status::Failed | Status::Interrupted => bar.set_message(format!(
            "✗ {action}: {}",
            e.error.as_deref().unwrap_or_default()
        )),
    }
}

/// Turns a finished phase's live host lines into printed lines. Finished bars left in the
/// live area pile up past the terminal's height, and indicatif then redraws over lines printed
/// above them (phase headers vanished); only the running phase's hosts stay live.
fn settle_phase_bars(
    multi: &MultiProgress,
    bars: &Mutex<HashMap<(String, String), ProgressBar>>,
    phase: &str,
) {
    let mut bars = bars.lock().unwrap_or_else(|p| p.into_inner());
    let mut done: Vec<(String, ProgressBar)> = Vec::new();
    bars.retain(|(p, host), bar| {
        if p == phase {
            done.push((host.clone(), bar.clone()));
            false
        } else {
            true
        }
    });
    done.sort_by(|a, b| a.0.cmp(&b.0));
    for (host, bar) in done {
        let line = format!("  {host:<24} {}", bar.message());
        bar.finish_and_clear();
        multi.remove(&bar);
        let _ = multi.println(line);
    }
}

/// Ends a phase: [`PhaseGuard::done`] or [`PhaseGuard::fail`]; dropped unfinished (an early
/// return on an error, an interrupt) it reports failure or `interrupted`, never success.
pub struct PhaseGuard {
    reporter: Reporter,
    name: String,
    started: Instant,
    finished: bool,
}

impl PhaseGuard {
    pub fn fail(mut self, error: &str) {
        self.finish(Status::Failed, Some(error));
    }

    pub fn done(mut self) {
        self.finish(Status::Ok, None);
    }

    fn finish(&mut self, status: Status, error: Option<&str>) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Renderer::Progress { multi, bars } = &*self.reporter.renderer {
            settle_phase_bars(multi, bars, &self.name);
        }
        let took = self.started.elapsed();
        let mut timings = self.reporter.timings();
        timings.phase_finished(&self.name, took);
        let step = timing::Step {
            phase: self.name.clone(),
            host: None,
            action: None,
        };
        timings.ran(step, self.started, took);
        drop(timings);
        let mut e = Event::new(status);
        e.phase = Some(self.name.clone());
        e.duration_ms = Some(took.as_millis() as u64);
        e.error = error.map(str::to_string);
        self.reporter.emit(e);
    }
}

impl Drop for PhaseGuard {
    fn drop(&mut self) {
        let (status, why) = unfinished(&self.reporter);
        self.finish(status, Some(why));
    }
}

/// One action on one host; reports failure (or `interrupted`) when dropped unfinished: only
/// [`HostAction::ok`] reports success.
pub struct HostAction {
    reporter: Reporter,
    phase: String,
    host: String,
    action: String,
    started: Instant,
    finished: bool,
}

impl HostAction {
    pub fn ok(mut self) {
        self.finish(Status::Ok, None, None);
    }

    pub fn fail(mut self, error: &str) {
        self.finish(Status::Failed, None, Some(error));
    }

    pub fn skip(mut self, why: &str) {
        self.finish(Status::Skipped, Some(why), None);
    }

    /// Updates the live line (e.g. "pulling 40%") without ending the action.
    pub fn progress(&self, message: &str) {
        let mut e = Event::new(Status::Info);
        e.phase = Some(self.phase.clone());
        e.host = Some(self.host.clone());
        e.action = Some(format!("{} {message}", self.action));
        if !self.reporter.is_json() {
            self.reporter.emit(e);
        }
    }

    fn finish(&mut self, status: Status, message: Option<&str>, error: Option<&str>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let took = self.started.elapsed();
        let mut timings = self.reporter.timings();
        timings.host_finished(&self.phase, &self.host, took);
        let step = timing::Step {
            phase: self.phase.clone(),
            host: Some(self.host.clone()),
            action: Some(self.action.clone()),
        };
        timings.ran(step, self.started, took);
        drop(timings);
        let mut e = Event::new(status);
        e.phase = Some(self.phase.clone());
        e.host = Some(self.host.clone());
        e.action = Some(self.action.clone());
        e.duration_ms = Some(took.as_millis() as u64);
        e.message = message.map(str::to_string);
        e.error = error.map(str::to_string);
        self.reporter.emit(e);
    }
}

impl Drop for HostAction {
    fn drop(&mut self) {
        let (status, why) = unfinished(&self.reporter);
        self.finish(status, None, Some(why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collecting() -> (Reporter, Arc<Mutex<Vec<Event>>>) {
        let seen: Arc<Mutex<Vec<Event>>> = Default::default();
        let into = seen.clone();
        let r = Reporter::with_sink(Arc::new(move |e| into.lock().unwrap().push(e)));
        (r, seen)
    }

    #[test]
    fn a_sink_gets_every_event_and_cancelling_one_operation_leaves_the_other_alone() {
        let (a, seen_a) = collecting();
        let (b, seen_b) = collecting();
        a.info("starting");
        let pa = a.phase("etcd plane");
        let pb = b.phase("etcd plane");
        a.mark_interrupted();
        drop(pa);
        drop(pb);
        a.finish_run(130, Some("interrupted"));

        let a_events = seen_a.lock().unwrap();
        let statuses: Vec<Status> = a_events.iter().map(|e| e.status).collect();
        assert_eq!(
            statuses,
            [
                Status::Info,
                Status::Started,
                Status::Interrupted,
                Status::Interrupted
            ]
        );
        assert_eq!(a_events.last().unwrap().event, Some("result"));
        // b was not cancelled: its unfinished phase is a failure, never "interrupted" or ok.
        let b_events = seen_b.lock().unwrap();
        assert_eq!(b_events.last().unwrap().status, Status::Failed);
    }

    #[test]
    fn plain_line_names_phase_host_and_error() {
        let mut e = Event::new(Status::Failed);
        e.phase = Some("etcd".into());
        e.host = Some("10.0.0.1".into());
        e.action = Some("start etcd".into());
        e.error = Some("health check failed".into());
        let line = plain_line(&e);
        assert!(
            line.contains("FAIL  [etcd] [10.0.0.1] start etcd: health check failed"),
            "{line}"
        );
    }

    #[test]
    fn events_are_redacted_before_rendering() {
        Redactor::global().register("s3cr3t-value");
        let mut e = Event::new(Status::Failed);
        e.error = Some("login with s3cr3t-value refused".into());
        let e = e.redacted(Redactor::global());
        assert_eq!(e.error.as_deref(), Some("login with [REDACTED] refused"));
    }

    #[test]
    fn json_event_omits_empty_fields() {
        let mut e = Event::new(Status::Ok);
        e.phase = Some("certificates".into());
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["status"], "ok");
        assert_eq!(v["phase"], "certificates");
        assert!(v.get("host").is_none());
        assert!(v.get("error").is_none());
    }
}
