//! The cluster-wide steps between the planes, through the Kubernetes API: encryption turned
//! off, RBAC, Secrets rewritten for a new encryption provider, the state recorded, and the wait
//! for the early kubelets' nodes.

use super::run::Run;
use super::{UpError, finish};
use crate::cluster::Cluster;
use crate::diff::Action;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::PhaseError;
use crate::phases::executor::ExecError;
use crate::state::StateFile;
use std::time::Duration;

/// Encryption on before and off now (§23), while the cluster still runs as it was: the
/// controlplane hosts' planned identity-first provider file, written on each of them first,
/// then their kube-apiservers restarted one at a time (the API stays up with more than one),
/// then every Secret rewritten in plain text (the planned `DisableEncryption`).
pub(super) async fn disable_encryption(run: &Run, reporter: &Reporter) -> Result<(), UpError> {
    let pick: fn(&Action) -> bool = |a| matches!(a, Action::DisableEncryption { .. });
    if run.cluster_actions_where(pick).is_empty() {
        return Ok(());
    }
    let phase = reporter.phase("disable encryption");
    let r = async {
        let steps: [fn(&Action) -> bool; 2] = [
            |a| matches!(a, Action::WriteFileSet { .. }),
            |a| matches!(a, Action::RestartAndCheck { .. }),
        ];
        for step in steps {
            for (address, actions) in &run.actions {
                let picked: Vec<&Action> = actions.iter().filter(|a| step(a)).collect();
                run.executor(address).apply(&picked).await?;
            }
        }
        apply_picked(run, pick).await
    }
    .await;
    finish(phase, r.map_err(phase_error("disable encryption")))
}

/// Objects of rkers' own addons whose API the target minor stops serving, deleted while it is
/// still served (the planned `DeleteObject`s), before anything else changes.
pub(super) async fn delete_addon_leftovers(run: &Run, reporter: &Reporter) -> Result<(), UpError> {
    let pick: fn(&Action) -> bool = |a| matches!(a, Action::DeleteObject { .. });
    if run.cluster_actions_where(pick).is_empty() {
        return Ok(());
    }
    let phase = reporter.phase("removed APIs");
    let r = apply_picked(run, pick).await;
    finish(phase, r.map_err(phase_error("removed APIs")))
}

/// The API server of an existing cluster, for the rolling upgrade's cordons and drains; `None`
/// when it does not answer (the upgrade then goes on without them).
pub(super) async fn existing_api(cluster: &Cluster) -> Result<Option<KubeApi>, UpError> {
    let kubeconfig = read_kubeconfig(cluster)?;
    Ok(KubeApi::from_kubeconfig(&kubeconfig).await.ok())
}

fn read_kubeconfig(cluster: &Cluster) -> Result<String, UpError> {
    let path = &cluster.files.kubeconfig_path;
    (cluster.files.storage)
        .read_to_string(path, rkers_core::bounded::KUBECONFIG)
        .map_err(|source| UpError::ReadKubeconfig {
            path: path.clone(),
            source,
        })
}

/// The planned cluster actions `pick` selects, applied in order; stops at the first failure.
async fn apply_picked(run: &Run, pick: fn(&Action) -> bool) -> Result<(), ExecError> {
    let picked = run.cluster_actions_where(pick);
    run.cluster_executor().apply(&picked).await
}

fn phase_error(phase: &str) -> impl FnOnce(ExecError) -> PhaseError {
    move |e| PhaseError::Phase {
        phase: phase.into(),
        message: e.to_string(),
    }
}

/// The client of the admin kubeconfig this run wrote (no request is made yet).
pub(super) async fn admin_api(cluster: &Cluster) -> Result<KubeApi, UpError> {
    let kubeconfig = read_kubeconfig(cluster)?;
    Ok(KubeApi::from_kubeconfig(&kubeconfig).await?)
}

/// Waits until a new cluster's API server lets RBAC in ([`KubeApi::lets_rbac_in`], asked
/// through `api` every 0.2 s), or every control plane host's kube-apiserver answers its health
/// check, whichever comes first; fails when a health check does. The health check answers only
/// once every post-start hook of the API server is done, seconds after it serves, while the
/// kubelets started early keep backing off (up to 7 s) between their attempts to register,
/// which RBAC lets through.
pub(super) async fn api_lets_rbac_in(api: &KubeApi, run: &Run) -> Result<(), UpError> {
    let serving = async {
        while !api.lets_rbac_in().await {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::select! {
        answered = super::planes::api_servers_answer(run) => answered,
        () = serving => Ok(()),
    }
}

/// RKE1's RBAC objects when planned (§20), through `api`, which the later steps use too.
pub(super) async fn authz(api: KubeApi, run: &Run) -> Result<KubeApi, UpError> {
    let phase = run.reporter.phase("authz");
    // The executor's cluster actions go through this client from now on.
    run.exec.set_api(api.clone());
    let r = apply_picked(run, |a| matches!(a, Action::ApplyRbac { .. })).await;
    finish(phase, r.map_err(phase_error("authz")))?;
    Ok(api)
}

/// Encryption newly on, or a different provider (the planned `RewriteSecrets`): Secrets stored
/// before are rewritten with the provider now first (§23).
pub(super) async fn rewrite_secrets(run: &Run) -> Result<(), UpError> {
    let pick: fn(&Action) -> bool = |a| matches!(a, Action::RewriteSecrets { .. });
    if run.cluster_actions_where(pick).is_empty() {
        return Ok(());
    }
    let phase = run.reporter.phase("rewrite secrets");
    let r = apply_picked(run, pick).await;
    finish(phase, r.map_err(phase_error("rewrite secrets")))
}

/// The desired state becomes the current one, in the state file and, when planned (it
/// differs from what the cluster holds), in the cluster's state Secret. Returns the state
/// saved, for [`finish_state`].
pub(super) async fn save_state(
    cluster: &Cluster,
    mut state: StateFile,
    run: &Run,
) -> Result<StateFile, UpError> {
    let phase = run.reporter.phase("save state");
    state.promote_desired_to_current();
    state.save_to(&cluster.files.storage, &cluster.files.state_path)?;
    run.exec
        .set_state_json(state.without_run_history().to_json()?);
    let r = apply_picked(run, |a| matches!(a, Action::SaveStateSecret { .. })).await;
    finish(phase, r.map_err(phase_error("save state")))?;
    Ok(state)
}

/// Once the whole run succeeded: the state it replaced becomes the previous one, which
/// `rkers rollback` goes back to, with the etcd snapshot this run took first (a failed run
/// never gets here, so it moves nothing).
pub(super) fn finish_state(
    cluster: &Cluster,
    mut state: StateFile,
    run: &Run,
) -> Result<(), UpError> {
    let snapshot = run.actions.values().flatten().find_map(|a| match a {
        Action::SaveEtcdSnapshot { name, .. } => Some(name.as_str()),
        _ => None,
    });
    // Saved again whenever the run kept a candidate, so the file never keeps one after a
    // successful run (it would pass for a failed run's on the next one).
    if state.finish_run(snapshot) {
        state.save_to(&cluster.files.storage, &cluster.files.state_path)?;
    }
    Ok(())
}

/// kube-proxy v1.20 looks its Node up once it starts and backs off 1, 2, 4, 8 s while it is
/// missing: the kubelets started early register theirs any moment now, and waiting for that
/// here, 4 times a second, saves kube-proxy's coarse retries. Bounded: kube-proxy still
/// retries by itself after.
pub(super) async fn wait_registered(
    run: &Run,
    early_hosts: &[String],
    api: &KubeApi,
    reporter: &Reporter,
) {
    let hostnames: Vec<String> = early_hosts
        .iter()
        .map(|a| run.host_plan(a).hostname.clone())
        .collect();
    let phase = reporter.phase("node registration");
    let missing =
        crate::kubeapi::nodes::wait_registered(api, &hostnames, Duration::from_secs(30)).await;
    if !missing.is_empty() {
        tracing::debug!(?missing, "nodes not registered yet; kube-proxy will retry");
    }
    phase.done();
}
