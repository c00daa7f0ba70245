//! Applying a changeset's stages (the stages themselves are the core's
//! [`rkers_core::changeset`], re-exported here): [`apply_stage`] runs one stage's hosts at its
//! pace through the one executor ([`crate::phases::executor::Executor::apply_stage`]), which
//! reports each action through [`crate::output::Reporter::applied`], as `--dry-run` printed
//! them through [`crate::output::Reporter::planned`].

use crate::diff::{Action, HostActions};
use crate::phases::{HostName, Runner};
use std::fmt::Display;
use std::future::Future;

pub use rkers_core::changeset::{CLUSTER, LOCAL, Pace, is_pseudo_host, list_failures};
pub use rkers_core::files::{FileWrite, desired_files};

/// The changeset of a command whose stages are still named by strings (those not yet on
/// [`crate::phases::driver`]); a command on the driver uses
/// `rkers_core::changeset::Changeset<S>` with its own stage type.
pub type Changeset = rkers_core::changeset::Changeset<String>;
/// A stage of a [`Changeset`].
pub type Stage = rkers_core::changeset::Stage<String>;

impl HostName for HostActions {
    fn host_name(&self) -> &str {
        &self.host
    }
}

/// Applies one stage: each host's actions, in order, through `apply` (the executor, which
/// reports each action and stops a host at its first failure), the hosts at the stage's pace.
/// Returns the hosts that failed, with why.
pub async fn apply_stage<S, F, Fut, E>(
    stage: &rkers_core::changeset::Stage<S>,
    runner: &Runner,
    apply: F,
) -> Vec<(String, String)>
where
    S: Display,
    F: Fn(String, Vec<Action>) -> Fut + Clone + Send + Sync,
    Fut: Future<Output = Result<(), E>> + Send,
    E: Display + Send,
{
    if stage.hosts.is_empty() {
        return Vec::new();
    }
    let name = stage.phase.to_string();
    let phase = runner.reporter.phase(&name);
    let failures = match stage.pace {
        Pace::Parallel => {
            let result = runner
                .for_each_host(&name, &name, stage.hosts.clone(), move |h| {
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
                    failures.push((h.host.clone(), e.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Reporter;

    fn restart(name: &str) -> Action {
        Action::RestartContainer {
            name: name.into(),
            reason: "a file it reads changed".into(),
        }
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
                        if text.starts_with("restart container bad ") {
                            return Err("boom".to_string());
                        }
                    }
                    Ok(())
                }
            }
        };
        let failures = apply_stage(&c.stages[0], &runner, apply(seen.clone())).await;
        assert_eq!(failures, vec![("h1".to_string(), "boom".to_string())]);
        assert_eq!(
            *seen.lock().unwrap(),
            ["h1 restart container bad (a file it reads changed)"]
        );
        let failures = apply_stage(&c.stages[1], &runner, apply(seen.clone())).await;
        assert!(failures.is_empty());
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(
            seen,
            [
                "h1 restart container a (a file it reads changed)",
                "h1 restart container bad (a file it reads changed)",
                "h2 restart container b (a file it reads changed)"
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
