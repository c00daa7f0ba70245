//! The timing summary a run ends with: per phase, in the order the phases started, its wall
//! time and the host whose work in it took longest; then the critical path, the chain of
//! steps that decided the total, and what each host waited on while it had nothing to do
//! (issue 31). Fed by every phase and host action the reporter sees, so it needs nothing from
//! the phases themselves.

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One phase's line of the summary, in the shape the JSON event carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseTiming {
    pub phase: String,
    /// Wall time of the phase (added up when a phase of that name ran more than once).
    pub duration_ms: u64,
    /// Hosts that had work in the phase.
    pub hosts: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_host: Option<String>,
    /// The slowest host's time in the phase: its actions there, added up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_host_ms: Option<u64>,
}

/// What the reporter has seen so far.
#[derive(Debug, Default)]
pub struct Timings {
    phases: Vec<Entry>,
    /// Every phase and host action that ended, with when it ran.
    steps: Vec<(Step, Instant, Instant)>,
}

/// What ran: a whole phase (`host` is `None`) or one host's action in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

impl Step {
    fn label(&self) -> String {
        match (&self.action, &self.host) {
            (Some(a), Some(h)) => format!("{}: {a} on {h}", self.phase),
            (Some(a), None) => format!("{}: {a}", self.phase),
            (None, Some(h)) => format!("{} on {h}", self.phase),
            (None, None) => self.phase.clone(),
        }
    }
}

/// A step and when it ran, in milliseconds from the first step's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    #[serde(flatten)]
    pub step: Step,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// One link of the critical path; `idle_before_ms` is time before it that no recorded step
/// explains (work between phases, e.g. reading the config).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathStep {
    #[serde(flatten)]
    pub step: Step,
    pub start_ms: u64,
    pub duration_ms: u64,
    pub idle_before_ms: u64,
}

/// One host's time: busy in its own actions, and the rest waiting, put down to the steps of the
/// critical path that ran meanwhile (largest first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostWaits {
    pub host: String,
    pub busy_ms: u64,
    pub waited_ms: u64,
    pub waited_on: Vec<WaitedOn>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WaitedOn {
    pub step: String,
    pub ms: u64,
}

/// The critical path and each host's waits, as the timing summary's JSON event carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CriticalPath {
    pub total_ms: u64,
    pub path: Vec<PathStep>,
    pub hosts: Vec<HostWaits>,
}

/// Steps ending this close together count as ending together (the phase a host action belongs
/// to ends a moment after the action).
const SAME_MOMENT_MS: u64 = 25;

/// The chain of steps that decided the total, from recorded intervals: from the step that ended
/// last, each link is the step that ended last before the link after it started (or, when none
/// had ended, one still running then); of steps ending together, a host's action is preferred
/// over the phase around it, as it says more.
pub fn critical_path(intervals: &[Interval]) -> CriticalPath {
    let total_ms = intervals.iter().map(|i| i.end_ms).max().unwrap_or(0);
    let mut path: Vec<PathStep> = Vec::new();
    let mut at = total_ms;
    loop {
        let mut candidates: Vec<&Interval> = intervals
            .iter()
            .filter(|i| i.start_ms < at && i.end_ms <= at + SAME_MOMENT_MS)
            .collect();
        if candidates.is_empty() {
            // Nothing ended by then: what was still running explains the time up to `at`.
            candidates = intervals.iter().filter(|i| i.start_ms < at).collect();
        }
        let latest = candidates
            .iter()
            .map(|i| i.end_ms.min(at))
            .max()
            .unwrap_or(0);
        let best = candidates
            .into_iter()
            .filter(|i| i.end_ms.min(at) + SAME_MOMENT_MS >= latest)
            // A host's action before a whole phase; of two alike, the one that started first
            // explains more of the wait.
            .min_by_key(|i| (i.step.host.is_none(), i.start_ms));
        let Some(i) = best else {
            if let Some(first) = path.last_mut() {
                first.idle_before_ms = at;
            }
            break;
        };
        if let Some(next) = path.last_mut() {
            next.idle_before_ms = at.saturating_sub(i.end_ms.min(at));
        }
        path.push(PathStep {
            step: i.step.clone(),
            start_ms: i.start_ms,
            duration_ms: i.end_ms.min(at) - i.start_ms,
            idle_before_ms: 0,
        });
        at = i.start_ms;
    }
    path.reverse();
    let hosts = host_waits(intervals, &path, total_ms);
    CriticalPath {
        total_ms,
        path,
        hosts,
    }
}

/// Per host named by a host action: the union of its actions' intervals, and the critical
/// path's steps overlapping the rest of the run.
fn host_waits(intervals: &[Interval], path: &[PathStep], total_ms: u64) -> Vec<HostWaits> {
    let mut busy: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for i in intervals {
        if let Some(h) = &i.step.host {
            busy.entry(h).or_default().push((i.start_ms, i.end_ms));
        }
    }
    busy.into_iter()
        .map(|(host, mut spans)| {
            spans.sort();
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for (s, e) in spans {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            let busy_ms: u64 = merged.iter().map(|(s, e)| e - s).sum();
            let mut gaps = Vec::new();
            let mut from = 0;
            for (s, e) in &merged {
                if *s > from {
                    gaps.push((from, *s));
                }
                from = from.max(*e);
            }
            if total_ms > from {
                gaps.push((from, total_ms));
            }
            let mut on: Vec<WaitedOn> = Vec::new();
            for p in path {
                let (ps, pe) = (p.start_ms, p.start_ms + p.duration_ms);
                let ms: u64 = gaps
                    .iter()
                    .map(|(gs, ge)| ge.min(&pe).saturating_sub(*gs.max(&ps)))
                    .sum();
                if ms == 0 {
                    continue;
                }
                let step = p.step.label();
                match on.iter_mut().find(|w| w.step == step) {
                    Some(w) => w.ms += ms,
                    None => on.push(WaitedOn { step, ms }),
                }
            }
            on.sort_by(|a, b| b.ms.cmp(&a.ms).then(a.step.cmp(&b.step)));
            HostWaits {
                host: host.to_string(),
                busy_ms,
                waited_ms: total_ms - busy_ms,
                waited_on: on,
            }
        })
        .collect()
}

/// The critical path as text: the chain on one line, then one line per host with its three
/// longest waits.
pub fn render_critical_path(c: &CriticalPath) -> Vec<String> {
    let chain: Vec<String> = c
        .path
        .iter()
        .map(|p| format!("{} {}", p.step.label(), seconds(p.duration_ms)))
        .collect();
    let mut lines = vec![format!("critical path: {}", chain.join(" → "))];
    let width = c.hosts.iter().map(|h| h.host.len()).max().unwrap_or(0);
    for h in &c.hosts {
        let mut line = format!(
            "{:<width$} busy {:>6}, waited {:>6}",
            h.host,
            seconds(h.busy_ms),
            seconds(h.waited_ms),
            width = width
        );
        let top: Vec<String> = h
            .waited_on
            .iter()
            .take(3)
            .map(|w| format!("{} {}", w.step, seconds(w.ms)))
            .collect();
        if !top.is_empty() {
            line.push_str(&format!(" on: {}", top.join(", ")));
        }
        lines.push(line);
    }
    lines
}

#[derive(Debug)]
struct Entry {
    name: String,
    duration: Duration,
    /// Per host, its actions' time in the phase, in the order hosts first appeared.
    hosts: Vec<(String, Duration)>,
}

impl Timings {
    fn entry(&mut self, phase: &str) -> &mut Entry {
        let i = match self.phases.iter().position(|e| e.name == phase) {
            Some(i) => i,
            None => {
                self.phases.push(Entry {
                    name: phase.to_string(),
                    duration: Duration::ZERO,
                    hosts: Vec::new(),
                });
                self.phases.len() - 1
            }
        };
        &mut self.phases[i]
    }

    pub fn phase_started(&mut self, phase: &str) {
        self.entry(phase);
    }

    pub fn phase_finished(&mut self, phase: &str, took: Duration) {
        self.entry(phase).duration += took;
    }

    pub fn host_finished(&mut self, phase: &str, host: &str, took: Duration) {
        let e = self.entry(phase);
        match e.hosts.iter_mut().find(|(h, _)| h == host) {
            Some((_, d)) => *d += took,
            None => e.hosts.push((host.to_string(), took)),
        }
    }

    /// Records when a phase (`host` `None`) or a host's action ran, for the critical path.
    pub fn ran(&mut self, step: Step, started: Instant, took: Duration) {
        self.steps.push((step, started, started + took));
    }

    /// Every recorded step, in milliseconds from the first one's start.
    pub fn intervals(&self) -> Vec<Interval> {
        let Some(origin) = self.steps.iter().map(|(_, s, _)| *s).min() else {
            return Vec::new();
        };
        let ms = |t: Instant| t.duration_since(origin).as_millis() as u64;
        self.steps
            .iter()
            .map(|(step, s, e)| Interval {
                step: step.clone(),
                start_ms: ms(*s),
                end_ms: ms(*e),
            })
            .collect()
    }

    pub fn summary(&self) -> Vec<PhaseTiming> {
        self.phases
            .iter()
            .map(|e| {
                // The first of equally slow hosts, so the line is stable.
                let slowest =
                    e.hosts
                        .iter()
                        .fold(None::<&(String, Duration)>, |best, h| match best {
                            Some(b) if b.1 >= h.1 => Some(b),
                            _ => Some(h),
                        });
                PhaseTiming {
                    phase: e.name.clone(),
                    duration_ms: e.duration.as_millis() as u64,
                    hosts: e.hosts.len(),
                    slowest_host: slowest.map(|(h, _)| h.clone()),
                    slowest_host_ms: slowest.map(|(_, d)| d.as_millis() as u64),
                }
            })
            .collect()
    }
}

/// The summary as text, one line per phase, names and times aligned.
pub fn render(summary: &[PhaseTiming]) -> Vec<String> {
    let width = summary.iter().map(|t| t.phase.len()).max().unwrap_or(0);
    summary
        .iter()
        .map(|t| {
            let mut line = format!(
                "{:<width$} {:>7}",
                t.phase,
                seconds(t.duration_ms),
                width = width
            );
            if let (Some(h), Some(ms)) = (&t.slowest_host, t.slowest_host_ms) {
                line.push_str(&format!(
                    "  slowest of {} hosts: {h} ({})",
                    t.hosts,
                    seconds(ms)
                ));
            }
            line
        })
        .collect()
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_in_start_order_with_their_slowest_host() {
        let mut t = Timings::default();
        t.phase_started("state");
        t.phase_finished("state", Duration::from_millis(120));
        t.phase_started("etcd plane");
        t.host_finished("etcd plane", "10.0.0.1", Duration::from_millis(4000));
        t.phase_started("images");
        t.host_finished("images", "10.0.0.1", Duration::from_millis(900));
        t.host_finished("images", "10.0.0.2", Duration::from_millis(2500));
        t.host_finished("images", "10.0.0.1", Duration::from_millis(700));
        t.phase_finished("images", Duration::from_millis(2600));
        t.phase_finished("etcd plane", Duration::from_millis(4100));
        let s = t.summary();
        let names: Vec<&str> = s.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, ["state", "etcd plane", "images"]);
        assert_eq!(s[0].slowest_host, None);
        assert_eq!(s[0].hosts, 0);
        assert_eq!(s[1].duration_ms, 4100);
        assert_eq!(s[2].slowest_host.as_deref(), Some("10.0.0.2"));
        assert_eq!(s[2].slowest_host_ms, Some(2500));
        assert_eq!(s[2].hosts, 2);
        let lines = render(&s);
        assert_eq!(lines[0], "state         0.1s");
        assert_eq!(
            lines[2],
            "images        2.6s  slowest of 2 hosts: 10.0.0.2 (2.5s)"
        );
        let json = serde_json::to_value(&s[0]).unwrap();
        assert!(json.get("slowest_host").is_none());
        assert_eq!(json["duration_ms"], 120);
    }

    #[test]
    fn a_phase_run_twice_adds_up_and_a_host_s_actions_too() {
        let mut t = Timings::default();
        for _ in 0..2 {
            t.phase_started("worker plane");
            t.host_finished("worker plane", "w1", Duration::from_secs(1));
            t.host_finished("worker plane", "w2", Duration::from_millis(1500));
            t.phase_finished("worker plane", Duration::from_secs(2));
        }
        let s = t.summary();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].duration_ms, 4000);
        assert_eq!(s[0].slowest_host.as_deref(), Some("w2"));
        assert_eq!(s[0].slowest_host_ms, Some(3000));
    }

    fn ran(phase: &str, host: Option<&str>, start_ms: u64, end_ms: u64) -> Interval {
        Interval {
            step: Step {
                phase: phase.into(),
                host: host.map(str::to_string),
                action: host.map(|_| "work".to_string()),
            },
            start_ms,
            end_ms,
        }
    }

    /// A cold `up` made up: the pulls on h2 outlast the port checks, the etcd and control plane
    /// of h1 follow; the chain goes through the actions that ended last, a phase only where no
    /// host action explains it, and h2's wait is put down to what h1 did meanwhile.
    #[test]
    fn the_critical_path_follows_what_ended_last_and_hosts_wait_on_it() {
        let intervals = [
            ran("state", None, 0, 100),
            ran("connect", None, 100, 10100),
            ran("connect", Some("all hosts"), 200, 10000),
            ran("connect", Some("h1"), 300, 9000),
            ran("connect", Some("h2"), 300, 10090),
            ran("plan", None, 10100, 11000),
            ran("etcd plane", None, 11000, 20000),
            ran("etcd plane", Some("h1"), 11010, 19990),
            ran("control plane", None, 20000, 26000),
            ran("control plane", Some("h1"), 20010, 25995),
        ];
        let c = critical_path(&intervals);
        assert_eq!(c.total_ms, 26000);
        let chain: Vec<(String, u64, u64)> = c
            .path
            .iter()
            .map(|p| (p.step.label(), p.duration_ms, p.idle_before_ms))
            .collect();
        assert_eq!(
            chain,
            [
                ("state".to_string(), 100, 0),
                ("connect: work on h2".to_string(), 9790, 200),
                ("plan".to_string(), 900, 10),
                ("etcd plane: work on h1".to_string(), 8980, 10),
                ("control plane: work on h1".to_string(), 5985, 20),
            ]
        );
        let h2 = c.hosts.iter().find(|h| h.host == "h2").unwrap();
        assert_eq!((h2.busy_ms, h2.waited_ms), (9790, 16210));
        let on: Vec<(&str, u64)> = h2
            .waited_on
            .iter()
            .map(|w| (w.step.as_str(), w.ms))
            .collect();
        assert_eq!(
            on,
            [
                ("etcd plane: work on h1", 8980),
                ("control plane: work on h1", 5985),
                ("plan", 900),
                ("state", 100),
            ]
        );
        let h1 = c.hosts.iter().find(|h| h.host == "h1").unwrap();
        assert_eq!(h1.busy_ms, 8700 + 8980 + 5985);
        assert!(h1.waited_on.iter().all(|w| !w.step.ends_with("on h1")));
        let lines = render_critical_path(&c);
        assert!(
            lines[0].starts_with("critical path: state 0.1s → connect: work on h2 9.8s → plan")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("h2") && l.contains("on: etcd plane: work on h1 9.0s"))
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["path"][1]["host"], "h2");
        assert_eq!(json["path"][0].get("host"), None);
    }

    /// Two steps overlapping without end: the later one starts inside the earlier; the chain
    /// takes the earlier up to where the later started. Nothing recorded: an empty path.
    #[test]
    fn overlapping_steps_and_no_steps() {
        let c = critical_path(&[ran("a", Some("h"), 0, 600), ran("b", Some("g"), 400, 1000)]);
        let chain: Vec<(String, u64)> = c
            .path
            .iter()
            .map(|p| (p.step.label(), p.duration_ms))
            .collect();
        assert_eq!(
            chain,
            [
                ("a: work on h".to_string(), 400),
                ("b: work on g".to_string(), 600)
            ]
        );
        assert_eq!(critical_path(&[]), CriticalPath::default());
    }
}
