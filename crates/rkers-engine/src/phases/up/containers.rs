//! Apply: one container brought to its planned state (created, recreated beside the old one,
//! started or restarted), then its health checked; once per run.

use super::UpError;
use super::run::Run;
use crate::diff::Action;
use crate::hosts::Host;
use crate::phases::executor::{ExecError, ExecFailure, HostExecutor};
use crate::phases::health;
use crate::plan::{self, HostPlan};

/// Brings one container to its planned state, then checks its health; once per run (a
/// concurrent caller waits for the first one, and tries again when that one failed).
pub(super) async fn apply_container(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    name: &str,
) -> Result<(), UpError> {
    once_per_run(run, &h.address, name, "healthy")
        .get_or_try_init(|| async {
            start_container(run, h, name).await?;
            wait_healthy(run, host, h, name).await
        })
        .await
        .map(|_| ())
}

/// Brings one container to its planned state without waiting for its health; once per run.
/// A new cluster's etcd and control plane hosts start their early kubelet this way, so it
/// comes before their etcd (the order the dry run lists) while its health is waited for
/// alongside etcd ([`apply_container`] then only waits).
pub(super) async fn start_container(run: &Run, h: &HostPlan, name: &str) -> Result<(), UpError> {
    once_per_run(run, &h.address, name, "started")
        .get_or_try_init(|| async {
            let actions = container_actions(run, h, name);
            run.executor(&h.address).apply(&actions).await?;
            if name == plan::KUBE_APISERVER && actions.iter().any(|a| stops_a_running_one(a)) {
                run.api_server_restarted
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(h.address.clone(), tokio::time::Instant::now());
            }
            Ok::<_, UpError>(())
        })
        .await
        .map(|_| ())
}

/// Whether an action stops the container it applies to while it runs (and so whatever was
/// talking to it).
fn stops_a_running_one(action: &Action) -> bool {
    matches!(
        action,
        Action::RecreateContainer { .. } | Action::RestartContainer { .. }
    )
}

/// Whether the run does anything to `name` on `h` (else it only asks for its health).
pub(super) fn changes_container(run: &Run, h: &HostPlan, name: &str) -> bool {
    !container_actions(run, h, name).is_empty()
}

/// The actions that bring one container to its planned state, with what must precede them
/// (etcd's data directory), in the planned order.
fn container_actions<'r>(run: &'r Run, h: &HostPlan, name: &str) -> Vec<&'r Action> {
    run.actions[&h.address]
        .iter()
        .filter(|a| match a {
            Action::CreateContainer { name: n, .. }
            | Action::RecreateContainer { name: n, .. }
            | Action::StartContainer { name: n }
            | Action::RestartContainer { name: n, .. } => n == name,
            Action::FixEtcdPermissions { .. } => name == plan::ETCD,
            _ => false,
        })
        .collect()
}

/// [`start_container`] for several containers of one host at once: each of `chains` is
/// applied in its order (a chain stops at its first failure), the chains side by side, and
/// every action is then reported in the order the dry run lists the host's actions. A new
/// cluster starts its etcd and its control plane this way: kube-apiserver, which retries etcd
/// by itself, starts while etcd's data directory is still being made.
pub(super) async fn start_containers_side_by_side(
    run: &Run,
    h: &HostPlan,
    chains: &[Vec<&str>],
) -> Result<(), UpError> {
    let exec = run.executor(&h.address);
    let finished = FinishedInPlannedOrder {
        exec: &exec,
        planned: &run.actions[&h.address],
        done: Default::default(),
    };
    let finished = &finished;
    futures::future::join_all(chains.iter().map(|chain| async move {
        for name in chain {
            let cell = once_per_run(run, &h.address, name, "started");
            if cell.initialized() {
                continue;
            }
            for action in container_actions(run, h, name) {
                let result = finished.exec.run(action).await;
                let failed = result.is_err();
                finished.record(action, result);
                if failed {
                    return;
                }
            }
            let _ = cell.set(());
        }
    }))
    .await;
    finished.report().map_err(UpError::from)
}

/// The actions [`start_containers_side_by_side`] finished, reported in the planned order once
/// every chain has ended, or when the run is dropped midway (an interrupt): a container it
/// created is then still reported as applied, as one started alone would have been.
struct FinishedInPlannedOrder<'e, 'r> {
    exec: &'e HostExecutor<'r, 'static>,
    planned: &'r [Action],
    done: std::sync::Mutex<Vec<(&'r Action, Result<(), ExecFailure>)>>,
}

impl<'r> FinishedInPlannedOrder<'_, 'r> {
    fn record(&self, action: &'r Action, result: Result<(), ExecFailure>) {
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((action, result));
    }

    /// Reports what finished and was not reported yet; the first failure is returned.
    fn report(&self) -> Result<(), ExecError> {
        let mut done = std::mem::take(&mut *self.done.lock().unwrap_or_else(|p| p.into_inner()));
        done.sort_by_key(|(a, _)| self.planned.iter().position(|p| std::ptr::eq(p, *a)));
        let mut first_error = None;
        for (action, result) in done {
            if let Err(e) = self.exec.report(action, result) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for FinishedInPlannedOrder<'_, '_> {
    fn drop(&mut self) {
        let _ = self.report();
    }
}

/// The cell that makes one step of one container happen once per run.
fn once_per_run(
    run: &Run,
    address: &str,
    name: &str,
    step: &str,
) -> std::sync::Arc<tokio::sync::OnceCell<()>> {
    run.applied
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(format!("{address}/{name}/{step}"))
        .or_default()
        .clone()
}

async fn wait_healthy(run: &Run, host: &Host, h: &HostPlan, name: &str) -> Result<(), UpError> {
    let spec = &h.containers[name];
    // A wait correctness needs: what comes after a component depends on it answering
    // (kube-apiserver exits while etcd does not, RBAC and the state Secret need the API server,
    // kube-proxy its node), and an unhealthy one must fail `up` with its log line, as RKE1's
    // check after every component does (§9). Unchanged components are asked too: one request
    // each, answered at once by a healthy one.
    if spec.start
        && let Some(check) = &spec.health_check
    {
        wait_out_lost_leases(run, h, name).await;
        let tls = run.exec.health_tls(check);
        let Err(failed) = health::wait_component(host, name, &check.url, tls.as_ref()).await else {
            return Ok(());
        };
        let now = host.docker().inspect_container(name).await.ok().flatten();
        if !stopped_since_observed(&run.actions[&h.address], name, now.as_ref()) {
            return Err(failed.into());
        }
        run.reporter.warn(format!(
            "{name} on {} ran when this run looked, and has stopped since (an earlier run, \
             killed while it stopped {name}, leaves that stop to finish on the host): started \
             again, as planned",
            h.address
        ));
        let start = Action::StartContainer {
            name: name.to_string(),
        };
        run.executor(&h.address).apply(&[&start]).await?;
        health::wait_component(host, name, &check.url, tls.as_ref()).await?;
    }
    Ok(())
}

/// A leader-elected component this run left as it was, on a host whose kube-apiserver it
/// recreated or restarted, may exit seconds after that API server answers: its health is asked
/// only once the lease it held can no longer be lost (`plan::lease_loss_window`), so that a
/// restart by Docker's policy is waited for and not reported as success before it happens.
async fn wait_out_lost_leases(run: &Run, h: &HostPlan, name: &str) {
    let restarted = run
        .api_server_restarted
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&h.address)
        .copied();
    let touched = !container_actions(run, h, name).is_empty();
    if let Some(at) = lease_settled_at(&h.containers[name], touched, restarted) {
        tokio::time::sleep_until(at).await;
    }
}

/// When a component's health may be asked without its lease still being lost: `None` when it
/// need not wait (no leader election; its API server not stopped by this run; or the run
/// started it itself, after its API server, so it holds a new lease).
fn lease_settled_at(
    spec: &plan::ContainerSpec,
    touched_by_run: bool,
    api_server_restarted: Option<tokio::time::Instant>,
) -> Option<tokio::time::Instant> {
    let window = plan::lease_loss_window(spec)?;
    if touched_by_run {
        return None;
    }
    // Docker starts an exited container again after 0.1 s at first; the margin lets the
    // health check find it restarted rather than about to be.
    Some(api_server_restarted? + window + std::time::Duration::from_secs(1))
}

/// Whether a container this run left as it was (the plan saw it running: no action of the
/// run's for it) is found stopped for good at its health check. The plan's intent is that it
/// runs, so it is started again rather than failing the run; a container the run created,
/// recreated, started or restarted itself failed on its own and fails the run.
fn stopped_since_observed(
    planned: &[Action],
    name: &str,
    now: Option<&crate::hosts::ObservedContainer>,
) -> bool {
    let touched = planned.iter().any(|a| match a {
        Action::CreateContainer { name: n, .. }
        | Action::RecreateContainer { name: n, .. }
        | Action::StartContainer { name: n }
        | Action::RestartContainer { name: n, .. } => n == name,
        _ => false,
    });
    !touched
        && now.is_some_and(|c| {
            !c.running && !c.restarting && matches!(c.status.as_str(), "exited" | "dead")
        })
}

pub(super) async fn remove_unplanned(
    run: &Run,
    h: &HostPlan,
    names: &[&str],
) -> Result<(), UpError> {
    let actions: Vec<&Action> = run.actions[&h.address]
        .iter()
        .filter(
            |a| matches!(a, Action::RemoveContainer { name, .. } if names.contains(&name.as_str())),
        )
        .collect();
    Ok(run.executor(&h.address).apply(&actions).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::ObservedContainer;

    fn container(status: &str) -> ObservedContainer {
        ObservedContainer {
            running: status == "running",
            restarting: status == "restarting",
            status: status.into(),
            exit_code: Some(137),
            ..Default::default()
        }
    }

    #[test]
    fn a_leader_elected_component_left_alone_waits_out_its_api_servers_restart() {
        let at = tokio::time::Instant::now();
        let spec = |name: &str| plan::ContainerSpec {
            name: name.into(),
            ..Default::default()
        };
        let scheduler = spec(plan::KUBE_SCHEDULER);
        assert_eq!(
            lease_settled_at(&scheduler, false, Some(at)),
            Some(at + std::time::Duration::from_secs(13)),
            "upstream's 10 s renew deadline and 2 s retry period, and a second for Docker"
        );
        assert_eq!(
            lease_settled_at(&spec(plan::KUBE_CONTROLLER_MANAGER), false, Some(at)),
            Some(at + std::time::Duration::from_secs(13))
        );
        assert_eq!(
            lease_settled_at(&scheduler, false, None),
            None,
            "API server untouched"
        );
        assert_eq!(
            lease_settled_at(&scheduler, true, Some(at)),
            None,
            "started after it"
        );
        assert_eq!(
            lease_settled_at(&spec(plan::KUBELET), false, Some(at)),
            None
        );
    }

    #[test]
    fn an_untouched_container_found_stopped_is_started_again() {
        let planned = [Action::StartContainer {
            name: "kubelet".into(),
        }];
        for status in ["exited", "dead"] {
            assert!(stopped_since_observed(
                &planned,
                "kube-apiserver",
                Some(&container(status))
            ));
        }
    }

    #[test]
    fn a_container_the_run_changed_or_one_still_running_fails_as_it_is() {
        let started = [Action::StartContainer {
            name: "kube-apiserver".into(),
        }];
        let restarted = [Action::RestartContainer {
            name: "kube-apiserver".into(),
            reason: "a file it reads changed".into(),
        }];
        let exited = container("exited");
        assert!(!stopped_since_observed(
            &started,
            "kube-apiserver",
            Some(&exited)
        ));
        assert!(!stopped_since_observed(
            &restarted,
            "kube-apiserver",
            Some(&exited)
        ));
        for status in ["running", "restarting", "created"] {
            assert!(!stopped_since_observed(
                &[],
                "kube-apiserver",
                Some(&container(status))
            ));
        }
        assert!(!stopped_since_observed(&[], "kube-apiserver", None));
    }

    #[test]
    fn what_finished_side_by_side_is_reported_in_planned_order_also_when_dropped() {
        use crate::output::{Event, Reporter};
        use std::sync::{Arc, Mutex};
        let events: Arc<Mutex<Vec<Event>>> = Default::default();
        let sink = events.clone();
        let reporter = Reporter::with_sink(Arc::new(move |e| sink.lock().unwrap().push(e)));
        let exec = crate::phases::executor::Executor::new(&reporter, "alpine", Vec::new());
        let on = exec.on("host1");
        let start = |name: &str| Action::StartContainer { name: name.into() };
        let planned = vec![
            start("etcd"),
            start("kube-apiserver"),
            start("etcd-rolling-snapshots"),
        ];
        let applied = || -> Vec<String> {
            let events = events.lock().unwrap();
            events
                .iter()
                .filter(|e| e.event == Some("applied"))
                .map(|e| e.action.clone().unwrap())
                .collect()
        };

        // Dropped with two actions finished out of the planned order (an interrupted run).
        {
            let finished = FinishedInPlannedOrder {
                exec: &on,
                planned: &planned,
                done: Default::default(),
            };
            finished.record(&planned[2], Ok(()));
            finished.record(&planned[0], Ok(()));
        }
        assert_eq!(applied(), [planned[0].to_string(), planned[2].to_string()]);

        // Reported at the end: each action once, not again when dropped.
        {
            let finished = FinishedInPlannedOrder {
                exec: &on,
                planned: &planned,
                done: Default::default(),
            };
            finished.record(&planned[1], Ok(()));
            assert!(finished.report().is_ok());
        }
        assert_eq!(applied().len(), 3);
        assert_eq!(applied()[2], planned[1].to_string());
    }
}
