//! Apply: one container brought to its planned state (created, recreated beside the old one,
//! started or restarted), then its health checked; once per run.

use super::run::Run;
use crate::diff::Action;
use crate::hosts::Host;
use crate::phases::health;
use crate::plan::{self, HostPlan};

/// Brings one container to its planned state, then checks its health; once per run (a
/// concurrent caller waits for the first one, and tries again when that one failed).
pub(super) async fn apply_container(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    name: &str,
) -> Result<(), String> {
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
pub(super) async fn start_container(run: &Run, h: &HostPlan, name: &str) -> Result<(), String> {
    once_per_run(run, &h.address, name, "started")
        .get_or_try_init(|| async {
            // The container's own actions, with what must precede them (etcd's data
            // directory).
            let actions: Vec<&Action> = run.actions[&h.address]
                .iter()
                .filter(|a| match a {
                    Action::CreateContainer { name: n, .. }
                    | Action::RecreateContainer { name: n, .. }
                    | Action::StartContainer { name: n }
                    | Action::RestartContainer { name: n } => n == name,
                    Action::FixEtcdPermissions { .. } => name == plan::ETCD,
                    _ => false,
                })
                .collect();
            run.executor(&h.address)
                .apply(&actions)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map(|_| ())
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

async fn wait_healthy(run: &Run, host: &Host, h: &HostPlan, name: &str) -> Result<(), String> {
    let spec = &h.containers[name];
    // A wait correctness needs: what comes after a component depends on it answering
    // (kube-apiserver exits while etcd does not, RBAC and the state Secret need the API server,
    // kube-proxy its node), and an unhealthy one must fail `up` with its log line, as RKE1's
    // check after every component does (§9). Unchanged components are asked too: one request
    // each, answered at once by a healthy one.
    if spec.start
        && let Some(check) = &spec.health_check
    {
        let tls = run.exec.health_tls(check);
        health::wait_component(host, name, &check.url, tls.as_ref()).await?;
    }
    Ok(())
}

pub(super) async fn remove_unplanned(
    run: &Run,
    h: &HostPlan,
    names: &[&str],
) -> Result<(), String> {
    let actions: Vec<&Action> = run.actions[&h.address]
        .iter()
        .filter(
            |a| matches!(a, Action::RemoveContainer { name, .. } if names.contains(&name.as_str())),
        )
        .collect();
    run.executor(&h.address)
        .apply(&actions)
        .await
        .map_err(|e| e.to_string())
}
