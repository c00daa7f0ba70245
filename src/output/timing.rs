//! The timing summary a run ends with: per phase, in the order the phases started, its wall
//! time and the host whose work in it took longest. Fed by every phase and host action the
//! reporter sees, so it needs nothing from the phases themselves.

use serde::Serialize;
use std::time::Duration;

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
}
