//! The changeset of a command other than `up` (`remove`, `cert rotate`, `encrypt rotate-key`,
//! `etcd snapshot-save`/`snapshot-restore`): every change it makes, as [`Action`]s grouped in
//! ordered stages, built once from what was observed. `--dry-run` prints it through
//! [`crate::output::Reporter::planned`]; the real run applies exactly it, action by action,
//! through the one executor ([`crate::phases::executor::Executor::apply_stage`]), which reports
//! each one through [`crate::output::Reporter::applied`]. So the dry run and the run cannot
//! disagree about what happens, only about whether it worked.
//!
//! A stage is what the command's ordering needs: its hosts run in parallel (under the run's
//! concurrency limit) or one at a time, each host's actions in order, and a stage starts only
//! after the previous one ended. Actions that belong to no host are keyed by the pseudo-hosts
//! [`CLUSTER`] (Kubernetes API calls) and [`LOCAL`] (files on the machine rkers runs on).

use crate::diff::{Action, HostActions};
use crate::phases::{HostName, Runner};
use std::future::Future;

/// Pseudo-host of the actions that call the Kubernetes API.
pub const CLUSTER: &str = "cluster";
/// Pseudo-host of the actions on the machine rkers runs on.
pub const LOCAL: &str = "local";

pub use rkers_core::files::{FileWrite, desired_files};

/// Hosts of a stage that run their actions together or one after the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    Parallel,
    OneAtATime,
}

#[derive(Clone, Debug)]
pub struct Stage {
    /// The phase name shown while the stage runs.
    pub phase: String,
    pub pace: Pace,
    pub hosts: Vec<HostActions>,
}

/// A command's ordered stages.
#[derive(Clone, Debug, Default)]
pub struct Changeset {
    pub stages: Vec<Stage>,
}

impl Changeset {
    /// Declares the stage `phase` (last) so stages keep the command's order whichever host
    /// first has an action in them; a stage left without actions is skipped.
    pub fn stage(&mut self, phase: &str, pace: Pace) {
        if !self.stages.iter().any(|s| s.phase == phase) {
            self.stages.push(Stage {
                phase: phase.to_string(),
                pace,
                hosts: Vec::new(),
            });
        }
    }

    /// Adds `action` for `host` to the stage named `phase`, creating that stage (last) when
    /// it does not exist yet.
    pub fn push(&mut self, phase: &str, pace: Pace, host: &str, action: Action) {
        let stage = match self.stages.iter().position(|s| s.phase == phase) {
            Some(i) => &mut self.stages[i],
            None => {
                self.stages.push(Stage {
                    phase: phase.to_string(),
                    pace,
                    hosts: Vec::new(),
                });
                self.stages.last_mut().expect("just pushed")
            }
        };
        match stage.hosts.iter_mut().find(|h| h.host == host) {
            Some(h) => h.actions.push(action),
            None => stage.hosts.push(HostActions {
                host: host.to_string(),
                actions: vec![action],
            }),
        }
    }

    /// What `--dry-run` shows: per host (in the order hosts first appear), every action in the
    /// order it is applied.
    pub fn planned(&self) -> Vec<HostActions> {
        let mut out: Vec<HostActions> = Vec::new();
        for h in self.stages.iter().flat_map(|s| &s.hosts) {
            match out.iter_mut().find(|o| o.host == h.host) {
                Some(o) => o.actions.extend(h.actions.iter().cloned()),
                None => out.push(h.clone()),
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.stages
            .iter()
            .all(|s| s.hosts.iter().all(|h| h.actions.is_empty()))
    }
}

impl HostName for HostActions {
    fn host_name(&self) -> &str {
        &self.host
    }
}

/// Applies one stage: each host's actions, in order, through `apply` (the executor, which
/// reports each action and stops a host at its first failure), the hosts at the stage's pace.
/// Returns the hosts that failed, with why.
pub async fn apply_stage<F, Fut>(stage: &Stage, runner: &Runner, apply: F) -> Vec<(String, String)>
where
    F: Fn(String, Vec<Action>) -> Fut + Clone + Send + Sync,
    Fut: Future<Output = Result<(), String>> + Send,
{
    if stage.hosts.is_empty() {
        return Vec::new();
    }
    let phase = runner.reporter.phase(&stage.phase);
    let failures = match stage.pace {
        Pace::Parallel => {
            let result = runner
                .for_each_host(&stage.phase, &stage.phase, stage.hosts.clone(), move |h| {
                    apply(h.host, h.actions)
                })
                .await;
            match result {
                Ok(()) => Vec::new(),
                Err(crate::phases::PhaseError::Hosts { failures, .. }) => failures,
                Err(e) => vec![("(all hosts)".to_string(), e.to_string())],
            }
        }
        Pace::OneAtATime => {
            let mut failures = Vec::new();
            for h in &stage.hosts {
                if let Err(e) = apply(h.host.clone(), h.actions.clone()).await {
                    failures.push((h.host.clone(), e));
                    break;
                }
            }
            failures
        }
    };
    if failures.is_empty() {
        phase.done();
    } else {
        phase.fail(&format!("{} host(s) failed", failures.len()));
    }
    failures
}

/// The failures of a changeset as the lines of an error message.
pub fn list_failures(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(h, e)| format!("  - {h}: {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Reporter;

    fn restart(name: &str) -> Action {
        Action::RestartContainer { name: name.into() }
    }

    #[test]
    fn planned_merges_stages_per_host_in_apply_order() {
        let mut c = Changeset::default();
        c.push("write", Pace::Parallel, "h1", restart("a"));
        c.push("write", Pace::Parallel, "h2", restart("b"));
        c.push("restart", Pace::OneAtATime, "h2", restart("c"));
        c.push("restart", Pace::OneAtATime, "h1", restart("d"));
        c.push("write", Pace::Parallel, "h1", restart("e"));
        let planned = c.planned();
        let names: Vec<(&str, Vec<String>)> = planned
            .iter()
            .map(|h| {
                (
                    h.host.as_str(),
                    h.actions.iter().map(|a| a.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (
                    "h1",
                    vec![
                        "restart container a".to_string(),
                        "restart container e".into(),
                        "restart container d".into()
                    ]
                ),
                (
                    "h2",
                    vec![
                        "restart container b".to_string(),
                        "restart container c".into()
                    ]
                ),
            ]
        );
        assert_eq!(c.stages.len(), 2);
        assert!(!c.is_empty());
        assert!(Changeset::default().is_empty());
    }

    #[tokio::test]
    async fn stages_run_in_order_and_a_failed_host_ends_the_stage_one_at_a_time() {
        let mut c = Changeset::default();
        c.push("s", Pace::OneAtATime, "h1", restart("bad"));
        c.push("s", Pace::OneAtATime, "h2", restart("never"));
        c.push("p", Pace::Parallel, "h1", restart("a"));
        c.push("p", Pace::Parallel, "h2", restart("b"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let runner = Runner::new(Reporter::plain(), 4);
        let apply = |seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>| {
            move |host: String, actions: Vec<Action>| {
                let seen = seen.clone();
                async move {
                    for a in actions {
                        let text = a.to_string();
                        seen.lock().unwrap().push(format!("{host} {text}"));
                        if text.ends_with("bad") {
                            return Err("boom".to_string());
                        }
                    }
                    Ok(())
                }
            }
        };
        let failures = apply_stage(&c.stages[0], &runner, apply(seen.clone())).await;
        assert_eq!(failures, vec![("h1".to_string(), "boom".to_string())]);
        assert_eq!(*seen.lock().unwrap(), ["h1 restart container bad"]);
        let failures = apply_stage(&c.stages[1], &runner, apply(seen.clone())).await;
        assert!(failures.is_empty());
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(
            seen,
            [
                "h1 restart container a",
                "h1 restart container bad",
                "h2 restart container b"
            ]
        );
    }

    #[test]
    fn file_contents_never_reach_json_or_debug() {
        let f = FileWrite {
            path: "ssl/kube-node-key.pem".into(),
            mode: 0o600,
            reason: "rotated".into(),
            contents: b"PRIVATE KEY".to_vec(),
        };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"path":"ssl/kube-node-key.pem","mode":"0600","reason":"rotated"}"#
        );
        assert!(!format!("{f:?}").contains("PRIVATE"));
    }
}
