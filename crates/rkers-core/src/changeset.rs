//! The changeset of a command (`remove`, `cert rotate`, `encrypt rotate-key`,
//! `etcd snapshot-save`/`snapshot-restore`, `doctor --fix`): every change it makes, as [`Action`]s grouped in
//! ordered stages, decided once from what was observed. `--dry-run` prints
//! [`Changeset::planned`]; the real run applies exactly the same stages, so the dry run and the
//! run cannot disagree about what happens, only about whether it worked. Pure data: applying a
//! stage is the engine's (`rkers::phases::changeset::apply_stage`).
//!
//! A stage's identity is a value of the command's own type `S` (an enum of its stages), whose
//! `Display` is the phase name shown while the stage runs: a command matches on its stages, never
//! on a phase name. A stage's hosts run in parallel (under the run's concurrency limit) or one
//! at a time, each host's actions in order, and a stage starts only after the previous one
//! ended. Actions that belong to no host are keyed by the pseudo-hosts [`CLUSTER`] (Kubernetes
//! API calls) and [`LOCAL`] (files on the machine rkers runs on).

use crate::diff::{Action, HostActions};

/// Pseudo-host of the actions that call the Kubernetes API.
pub const CLUSTER: &str = "cluster";
/// Pseudo-host of the actions on the machine rkers runs on.
pub const LOCAL: &str = "local";

/// Whether `host` is one of the pseudo-hosts, not a machine of the cluster.
pub fn is_pseudo_host(host: &str) -> bool {
    host == CLUSTER || host == LOCAL
}

/// Hosts of a stage that run their actions together or one after the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    Parallel,
    OneAtATime,
}

#[derive(Clone, Debug)]
pub struct Stage<S> {
    /// Which of its command's stages this is; its `Display` is the phase name shown while the
    /// stage runs.
    pub phase: S,
    pub pace: Pace,
    pub hosts: Vec<HostActions>,
}

/// A command's ordered stages.
#[derive(Clone, Debug)]
pub struct Changeset<S> {
    pub stages: Vec<Stage<S>>,
}

impl<S> Default for Changeset<S> {
    fn default() -> Self {
        Changeset { stages: Vec::new() }
    }
}

impl<S: PartialEq> Changeset<S> {
    /// Declares the stage `phase` (last) so stages keep the command's order whichever host
    /// first has an action in them; a stage left without actions is skipped.
    pub fn stage(&mut self, phase: impl Into<S>, pace: Pace) {
        let phase = phase.into();
        if !self.stages.iter().any(|s| s.phase == phase) {
            self.stages.push(Stage {
                phase,
                pace,
                hosts: Vec::new(),
            });
        }
    }

    /// Adds `action` for `host` to the stage `phase`, creating that stage (last) when it does
    /// not exist yet.
    pub fn push(&mut self, phase: impl Into<S>, pace: Pace, host: &str, action: Action) {
        let phase = phase.into();
        let index = match self.stages.iter().position(|s| s.phase == phase) {
            Some(i) => i,
            None => {
                self.stages.push(Stage {
                    phase,
                    pace,
                    hosts: Vec::new(),
                });
                self.stages.len() - 1
            }
        };
        let stage = &mut self.stages[index];
        match stage.hosts.iter_mut().find(|h| h.host == host) {
            Some(h) => h.actions.push(action),
            None => stage.hosts.push(HostActions {
                host: host.to_string(),
                actions: vec![action],
            }),
        }
    }
}

impl<S> Changeset<S> {
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

/// The failures of a stage (host, why) as the lines of an error message.
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

    fn restart(name: &str) -> Action {
        Action::RestartContainer {
            name: name.into(),
            reason: "a file it reads changed".into(),
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Step {
        Write,
        Restart,
    }

    #[test]
    fn planned_merges_stages_per_host_in_apply_order() {
        let mut c: Changeset<Step> = Changeset::default();
        c.push(Step::Write, Pace::Parallel, "h1", restart("a"));
        c.push(Step::Write, Pace::Parallel, "h2", restart("b"));
        c.push(Step::Restart, Pace::OneAtATime, "h2", restart("c"));
        c.push(Step::Restart, Pace::OneAtATime, "h1", restart("d"));
        c.push(Step::Write, Pace::Parallel, "h1", restart("e"));
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
                        "restart container a (a file it reads changed)".to_string(),
                        "restart container e (a file it reads changed)".into(),
                        "restart container d (a file it reads changed)".into()
                    ]
                ),
                (
                    "h2",
                    vec![
                        "restart container b (a file it reads changed)".to_string(),
                        "restart container c (a file it reads changed)".into()
                    ]
                ),
            ]
        );
        let order: Vec<Step> = c.stages.iter().map(|s| s.phase).collect();
        assert_eq!(order, [Step::Write, Step::Restart]);
        assert!(!c.is_empty());
        assert!(Changeset::<Step>::default().is_empty());
    }

    #[test]
    fn a_declared_stage_keeps_its_place_and_an_empty_one_plans_nothing() {
        let mut c: Changeset<String> = Changeset::default();
        c.stage("first", Pace::OneAtATime);
        c.push("second", Pace::Parallel, "h1", restart("a"));
        c.push("first", Pace::Parallel, "h2", restart("b"));
        let order: Vec<&str> = c.stages.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(order, ["first", "second"]);
        assert_eq!(c.stages[0].pace, Pace::OneAtATime);
        let mut empty: Changeset<String> = Changeset::default();
        empty.stage("nothing", Pace::Parallel);
        assert!(empty.is_empty());
        assert!(empty.planned().is_empty());
    }

    #[test]
    fn failures_list_one_line_per_host() {
        let failures = vec![
            ("h1".to_string(), "a".to_string()),
            ("cluster".into(), "b".into()),
        ];
        assert_eq!(list_failures(&failures), "  - h1: a\n  - cluster: b");
        assert!(is_pseudo_host("cluster") && is_pseudo_host("local") && !is_pseudo_host("h1"));
    }
}
