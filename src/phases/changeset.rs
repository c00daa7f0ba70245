//! The changeset of a command other than `up` (`remove`, `cert rotate`, `encrypt rotate-key`,
//! `etcd snapshot-save`/`snapshot-restore`): every change it makes, as [`Action`]s grouped in
//! ordered stages, built once from what was observed. `--dry-run` prints it through
//! [`Reporter::planned`]; the real run applies exactly it, action by action, through the
//! command's own `apply` function, and reports each one through [`Reporter::applied`]. So the
//! dry run and the run cannot disagree about what happens, only about whether it worked.
//!
//! A stage is what the command's ordering needs: its hosts run in parallel (under the run's
//! concurrency limit) or one at a time, each host's actions in order, and a stage starts only
//! after the previous one ended. Actions that belong to no host are keyed by the pseudo-hosts
//! [`CLUSTER`] (Kubernetes API calls) and [`LOCAL`] (files on the machine rkers runs on).

use crate::diff::{Action, HostActions};
use crate::output::Reporter;
use crate::phases::{HostName, Runner};
use serde::Serialize;
use std::future::Future;

/// Pseudo-host of the actions that call the Kubernetes API.
pub const CLUSTER: &str = "cluster";
/// Pseudo-host of the actions on the machine rkers runs on.
pub const LOCAL: &str = "local";

/// One file of an [`Action::WriteFileSet`]. Its contents (keys, certificates) are never
/// serialized nor shown; freshly generated contents differ between a dry run and the run, so
/// the action names the file, its mode and why, not a hash.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct FileWrite {
    /// Relative to the action's `dir`.
    pub path: String,
    #[serde(serialize_with = "octal")]
    pub mode: u32,
    pub reason: String,
    #[serde(skip)]
    pub contents: Vec<u8>,
}

/// The files of a `WriteFileSet`, as the file writers take them.
pub fn desired_files(files: &[FileWrite]) -> Vec<crate::phases::files::DesiredFile> {
    files
        .iter()
        .map(|f| crate::phases::files::DesiredFile {
            relative_path: f.path.clone(),
            contents: f.contents.clone(),
            mode: f.mode,
        })
        .collect()
}

/// An `Action::WriteFileSet`: its files written under `dir`, through the host agent on a
/// Windows host, with the one-shot helper `image` elsewhere (`up`'s executor, `encrypt
/// rotate-key`).
pub async fn write_file_set(
    host: &crate::hosts::Host,
    dir: &str,
    image: &str,
    files: &[FileWrite],
) -> Result<(), String> {
    let files = desired_files(files);
    if host.facts().is_windows() {
        return crate::phases::windows::write_host_files(host, dir, &[], &files, &[])
            .await
            .map(drop)
            .map_err(|e| e.to_string());
    }
    crate::phases::files::write_files(host.docker(), dir, image, &files)
        .await
        .map_err(|e| e.to_string())
}

fn octal<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

impl std::fmt::Debug for FileWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Contents are keys and certificates: never in debug output.
        f.debug_struct("FileWrite")
            .field("path", &self.path)
            .field("mode", &format_args!("{:04o}", self.mode))
            .field("reason", &self.reason)
            .field("contents", &format_args!("<{} bytes>", self.contents.len()))
            .finish()
    }
}

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

/// Applies one stage: each host's actions in order through `apply`, one `applied` event per
/// action; a host stops at its first failed action. Returns the hosts that failed, with why.
pub async fn apply_stage<F, Fut>(stage: &Stage, runner: &Runner, apply: F) -> Vec<(String, String)>
where
    F: Fn(String, Action) -> Fut + Clone + Send + Sync,
    Fut: Future<Output = Result<(), String>> + Send,
{
    if stage.hosts.is_empty() {
        return Vec::new();
    }
    let phase = runner.reporter.phase(&stage.phase);
    let failures = match stage.pace {
        Pace::Parallel => {
            let reporter = runner.reporter.clone();
            let result = runner
                .for_each_host(&stage.phase, &stage.phase, stage.hosts.clone(), move |h| {
                    apply_host(h, reporter.clone(), apply.clone())
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
                let name = h.host.clone();
                if let Err(e) = apply_host(h.clone(), runner.reporter.clone(), apply.clone()).await
                {
                    failures.push((name, e));
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

/// Applies the stages in order and stops after the first stage in which a host failed.
pub async fn apply_all<F, Fut>(
    changeset: &Changeset,
    runner: &Runner,
    apply: F,
) -> Result<(), Vec<(String, String)>>
where
    F: Fn(String, Action) -> Fut + Clone + Send + Sync,
    Fut: Future<Output = Result<(), String>> + Send,
{
    for stage in &changeset.stages {
        let failures = apply_stage(stage, runner, apply.clone()).await;
        if !failures.is_empty() {
            return Err(failures);
        }
    }
    Ok(())
}

async fn apply_host<F, Fut>(h: HostActions, reporter: Reporter, apply: F) -> Result<(), String>
where
    F: Fn(String, Action) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    for action in h.actions {
        let result = apply(h.host.clone(), action.clone()).await;
        reporter.applied(&h.host, &action, result.as_ref().err().map(String::as_str));
        result?;
    }
    Ok(())
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
    async fn a_host_stops_at_its_first_failed_action() {
        let mut c = Changeset::default();
        for name in ["ok1", "bad", "never"] {
            c.push("s", Pace::Parallel, "h1", restart(name));
        }
        c.push("s", Pace::Parallel, "h2", restart("ok2"));
        c.push("later", Pace::Parallel, "h2", restart("skipped"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let runner = Runner::new(Reporter::plain(), 4);
        let result = apply_all(&c, &runner, move |host, action| {
            let s = s.clone();
            async move {
                let text = action.to_string();
                s.lock().unwrap().push(format!("{host} {text}"));
                if text.ends_with("bad") {
                    Err("boom".to_string())
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert_eq!(result, Err(vec![("h1".into(), "boom".into())]));
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(
            seen,
            [
                "h1 restart container bad",
                "h1 restart container ok1",
                "h2 restart container ok2"
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
