//! Runs work on hosts in parallel under one concurrency limit shared by the whole run, so
//! `--concurrency` bounds every phase alike, and reports each host's outcome.

use crate::hosts::Host;
use crate::output::Reporter;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use tokio::sync::Semaphore;

/// What a phase failed with; the host is named when the failure belongs to one.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error("[{phase}] {message}")]
    Phase { phase: String, message: String },
    #[error("[{phase}] host {host}: {message}")]
    Host {
        phase: String,
        host: String,
        message: String,
    },
    #[error("{}", hosts_failed(phase, failures))]
    Hosts {
        phase: String,
        failures: Vec<(String, String)>,
    },
    #[error("interrupted")]
    Interrupted,
}

/// The first line names every failed host (a one-line report or a log keeps only it), and a
/// single host's whole error; more hosts get one line each below.
fn hosts_failed(phase: &str, failures: &[(String, String)]) -> String {
    if let [(host, message)] = failures {
        return format!("[{phase}] {host}: {message}");
    }
    let hosts: Vec<&str> = failures.iter().map(|(h, _)| h.as_str()).collect();
    let first = failures
        .first()
        .map(|(h, m)| format!("; {h}: {}", m.lines().next().unwrap_or_default()))
        .unwrap_or_default();
    let mut text = format!(
        "[{phase}] {} hosts failed ({}){first}",
        failures.len(),
        hosts.join(", ")
    );
    for (h, m) in failures {
        text.push_str(&format!("\n  - {h}: {m}"));
    }
    text
}

/// Shared by all phases of a run: the reporter and the concurrency limit.
#[derive(Clone)]
pub struct Runner {
    pub reporter: Reporter,
    limit: Arc<Semaphore>,
    /// The run's hosts, once connected: a host whose step broke off with a dropped
    /// connection is probed to say which daemon failed ([`crate::hosts::lost`]).
    hosts: Arc<OnceLock<BTreeMap<String, Arc<Host>>>>,
}

impl Runner {
    pub fn new(reporter: Reporter, concurrency: usize) -> Self {
        Runner {
            reporter,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            hosts: Arc::default(),
        }
    }

    /// Lets failures on these hosts be explained by probing them (the first call counts).
    pub fn probe_failed_hosts<'a>(&self, hosts: impl IntoIterator<Item = &'a Arc<Host>>) {
        let _ = self.hosts.set(
            hosts
                .into_iter()
                .map(|h| (h.name().to_string(), h.clone()))
                .collect(),
        );
    }

    /// Runs `work` for every host in parallel, at most `concurrency` at once across the run, and
    /// reports each host's outcome. Every host is attempted; all failures are returned together.
    /// A step fails with its own error type; its text is made here, where the failure is
    /// reported (the progress line and [`PhaseError::Hosts`]).
    pub async fn for_each_host<H, F, Fut, E>(
        &self,
        phase: &str,
        action: &str,
        hosts: impl IntoIterator<Item = H>,
        work: F,
    ) -> Result<(), PhaseError>
    where
        H: HostName + Send + 'static,
        F: Fn(H) -> Fut + Send + Sync,
        Fut: Future<Output = Result<(), E>> + Send,
        E: std::fmt::Display + Send,
    {
        self.for_each_host_gated(phase, action, hosts, None, work)
            .await
    }

    /// [`for_each_host`](Self::for_each_host), with each host first taking a permit of `gate`
    /// (a rolling upgrade's budget of hosts out of service), before it counts as started.
    pub async fn for_each_host_gated<H, F, Fut, E>(
        &self,
        phase: &str,
        action: &str,
        hosts: impl IntoIterator<Item = H>,
        gate: Option<Arc<Semaphore>>,
        work: F,
    ) -> Result<(), PhaseError>
    where
        H: HostName + Send + 'static,
        F: Fn(H) -> Fut + Send + Sync,
        Fut: Future<Output = Result<(), E>> + Send,
        E: std::fmt::Display + Send,
    {
        let tasks = hosts.into_iter().map(|host| {
            let name = host.host_name().to_string();
            let limit = self.limit.clone();
            let reporter = self.reporter.clone();
            let gate = gate.clone();
            let probe = self.hosts.get().and_then(|m| m.get(&name)).cloned();
            let fut = work(host);
            async move {
                let _gate = match &gate {
                    Some(g) => Some(g.acquire().await.expect("semaphore never closed")),
                    None => None,
                };
                let _permit = limit.acquire().await.expect("semaphore never closed");
                let progress = reporter.host_action(phase, &name, action);
                match fut.await {
                    Ok(()) => {
                        progress.ok();
                        None
                    }
                    Err(e) => {
                        let message = e.to_string();
                        let message = match probe {
                            Some(h) => crate::hosts::lost::explain(&h, message).await,
                            None => message,
                        };
                        progress.fail(&message);
                        Some((name, message))
                    }
                }
            }
        });
        let failures: Vec<(String, String)> = futures::future::join_all(tasks)
            .await
            .into_iter()
            .flatten()
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(PhaseError::Hosts {
                phase: phase.to_string(),
                failures,
            })
        }
    }
}

/// Anything that names a host in progress lines.
pub trait HostName {
    fn host_name(&self) -> &str;
}

impl HostName for String {
    fn host_name(&self) -> &str {
        self
    }
}

impl HostName for &str {
    fn host_name(&self) -> &str {
        self
    }
}

impl crate::error::HostContext for PhaseError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            PhaseError::Host { host, .. } => vec![host],
            PhaseError::Hosts { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            PhaseError::Phase { .. } | PhaseError::Interrupted => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Fault matrix (scripts/faults): a report that keeps one line still names the hosts.
    #[test]
    fn the_first_line_of_a_hosts_failure_names_the_hosts() {
        let one = PhaseError::Hosts {
            phase: "worker plane".into(),
            failures: vec![("10.0.0.3".into(), "SSH connection lost".into())],
        };
        assert_eq!(
            one.to_string(),
            "[worker plane] 10.0.0.3: SSH connection lost"
        );
        let two = PhaseError::Hosts {
            phase: "worker plane".into(),
            failures: vec![
                ("10.0.0.2".into(), "a".into()),
                ("10.0.0.3".into(), "b".into()),
            ],
        };
        assert_eq!(
            two.to_string(),
            "[worker plane] 2 hosts failed (10.0.0.2, 10.0.0.3); 10.0.0.2: a\n  - 10.0.0.2: a\n  - 10.0.0.3: b"
        );
    }

    #[tokio::test]
    async fn concurrency_limit_holds_and_every_host_is_attempted() {
        let runner = Runner::new(Reporter::plain(), 2);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let attempted = Arc::new(AtomicUsize::new(0));
        let hosts: Vec<String> = (1..=7).map(|i| format!("host{i}")).collect();
        let result = runner
            .for_each_host("test", "work", hosts, |h| {
                let (running, peak, attempted) = (running.clone(), peak.clone(), attempted.clone());
                async move {
                    attempted.fetch_add(1, Ordering::SeqCst);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    if h == "host3" || h == "host6" {
                        Err(format!("{h} broke"))
                    } else {
                        Ok(())
                    }
                }
            })
            .await;
        assert_eq!(attempted.load(Ordering::SeqCst), 7);
        assert!(
            peak.load(Ordering::SeqCst) <= 2,
            "peak {}",
            peak.load(Ordering::SeqCst)
        );
        match result {
            Err(PhaseError::Hosts { failures, .. }) => {
                let names: Vec<_> = failures.iter().map(|(h, _)| h.as_str()).collect();
                assert_eq!(names, ["host3", "host6"]);
            }
            other => panic!("expected host failures, got {other:?}"),
        }
    }
}
