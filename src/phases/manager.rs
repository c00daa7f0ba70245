//! Runs phases in order. Each phase first says whether it has anything to do, then either
//! describes it (dry run) or does it; work on hosts runs in parallel under one concurrency limit
//! shared by the whole run, so `--concurrency` bounds every phase alike.

use crate::output::Reporter;
use std::future::Future;
use std::sync::Arc;
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
    #[error("[{phase}] {} hosts failed:\n{}", failures.len(), failures.iter().map(|(h, m)| format!("  - {h}: {m}")).collect::<Vec<_>>().join("\n"))]
    Hosts {
        phase: String,
        failures: Vec<(String, String)>,
    },
    #[error("interrupted")]
    Interrupted,
}

/// One step of a command (connect, certificates, etcd plane...).
#[async_trait::async_trait]
pub trait Phase<Ctx: Send + Sync>: Send + Sync {
    fn title(&self) -> &str;

    /// False when there is nothing to do; the phase is then reported as skipped.
    fn should_run(&self, _ctx: &Ctx) -> bool {
        true
    }

    /// Lines describing what `run` would do, for `--dry-run`.
    fn describe(&self, _ctx: &Ctx) -> Vec<String> {
        Vec::new()
    }

    async fn run(&self, ctx: &Ctx, runner: &Runner) -> Result<(), PhaseError>;
}

/// Shared by all phases of a run: the reporter and the concurrency limit.
#[derive(Clone)]
pub struct Runner {
    pub reporter: Reporter,
    limit: Arc<Semaphore>,
}

impl Runner {
    pub fn new(reporter: Reporter, concurrency: usize) -> Self {
        Runner {
            reporter,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    /// Runs `work` for every host in parallel, at most `concurrency` at once across the run, and
    /// reports each host's outcome. Every host is attempted; all failures are returned together.
    pub async fn for_each_host<H, F, Fut>(
        &self,
        phase: &str,
        action: &str,
        hosts: impl IntoIterator<Item = H>,
        work: F,
    ) -> Result<(), PhaseError>
    where
        H: HostName + Send + 'static,
        F: Fn(H) -> Fut + Send + Sync,
        Fut: Future<Output = Result<(), String>> + Send,
    {
        let tasks = hosts.into_iter().map(|host| {
            let name = host.host_name().to_string();
            let limit = self.limit.clone();
            let reporter = self.reporter.clone();
            let fut = work(host);
            async move {
                let _permit = limit.acquire().await.expect("semaphore never closed");
                let progress = reporter.host_action(phase, &name, action);
                match fut.await {
                    Ok(()) => {
                        progress.ok();
                        None
                    }
                    Err(message) => {
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

/// Runs phases in order, stopping at the first failure.
pub struct Manager<Ctx: Send + Sync> {
    phases: Vec<Box<dyn Phase<Ctx>>>,
    dry_run: bool,
}

impl<Ctx: Send + Sync> Manager<Ctx> {
    pub fn new(dry_run: bool) -> Self {
        Manager {
            phases: Vec::new(),
            dry_run,
        }
    }

    pub fn add(&mut self, phase: impl Phase<Ctx> + 'static) -> &mut Self {
        self.phases.push(Box::new(phase));
        self
    }

    pub async fn run(&self, ctx: &Ctx, runner: &Runner) -> Result<(), PhaseError> {
        for phase in &self.phases {
            let title = phase.title();
            if !phase.should_run(ctx) {
                let mut e = crate::output::Event::new(crate::output::Status::Skipped);
                e.phase = Some(title.to_string());
                e.message = Some("nothing to do".to_string());
                runner.reporter.emit(e);
                continue;
            }
            if self.dry_run {
                for line in phase.describe(ctx) {
                    runner.reporter.info(format!("[{title}] would {line}"));
                }
                continue;
            }
            let guard = runner.reporter.phase(title);
            match phase.run(ctx, runner).await {
                Ok(()) => guard.done(),
                Err(e) => {
                    guard.fail(&e.to_string());
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

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

    struct Recording {
        name: &'static str,
        log: Arc<std::sync::Mutex<Vec<String>>>,
        fail: bool,
    }

    #[async_trait::async_trait]
    impl Phase<()> for Recording {
        fn title(&self) -> &str {
            self.name
        }
        fn describe(&self, _: &()) -> Vec<String> {
            vec![format!("do {}", self.name)]
        }
        async fn run(&self, _: &(), _: &Runner) -> Result<(), PhaseError> {
            self.log.lock().unwrap().push(self.name.to_string());
            if self.fail {
                Err(PhaseError::Phase {
                    phase: self.name.into(),
                    message: "boom".into(),
                })
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test]
    async fn phases_run_in_order_and_stop_at_first_failure() {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut m = Manager::new(false);
        for (name, fail) in [("a", false), ("b", true), ("c", false)] {
            m.add(Recording {
                name,
                log: log.clone(),
                fail,
            });
        }
        let err = m
            .run(&(), &Runner::new(Reporter::plain(), 4))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "[b] boom");
        assert_eq!(*log.lock().unwrap(), ["a", "b"]);
    }

    #[tokio::test]
    async fn dry_run_runs_nothing() {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut m = Manager::new(true);
        m.add(Recording {
            name: "a",
            log: log.clone(),
            fail: true,
        });
        m.run(&(), &Runner::new(Reporter::plain(), 4))
            .await
            .unwrap();
        assert!(log.lock().unwrap().is_empty());
    }
}
