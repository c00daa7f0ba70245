//! The cluster-wide steps between the planes, through the Kubernetes API: encryption turned
//! off, RBAC, Secrets rewritten for a new encryption provider, the state recorded, and the wait
//! for the early kubelets' nodes.

use super::run::Run;
use super::{UpError, finish, other};
use crate::cluster::Cluster;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::PhaseError;
use crate::state::StateFile;
use std::time::Duration;

/// Encryption on before and off now: Secrets are written back in plain text first (§23).
pub(super) async fn disable_encryption(
    cluster: &Cluster,
    old: Option<&StateFile>,
    state: &StateFile,
    run: &Run,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let Some(old) = old.filter(|o| {
        !o.current_state.encryption_config.is_empty()
            && state.desired_state.encryption_config.is_empty()
    }) else {
        return Ok(());
    };
    let phase = reporter.phase("disable encryption");
    let r = crate::phases::encryption::disable(cluster, old, &run.pool, reporter).await;
    finish(
        phase,
        r.map_err(|e| PhaseError::Phase {
            phase: "disable encryption".into(),
            message: e,
        }),
    )
}

/// The API server of an existing cluster, for the rolling upgrade's cordons and drains; `None`
/// when it does not answer (the upgrade then goes on without them).
pub(super) async fn existing_api(cluster: &Cluster) -> Result<Option<KubeApi>, UpError> {
    let kubeconfig = std::fs::read_to_string(&cluster.files.kubeconfig_path).map_err(other)?;
    Ok(KubeApi::from_kubeconfig(&kubeconfig).await.ok())
}

/// RKE1's RBAC objects (or their removal when authorization is not RBAC); returns the API the
/// later steps use.
pub(super) async fn authz(cluster: &Cluster, reporter: &Reporter) -> Result<KubeApi, UpError> {
    let phase = reporter.phase("authz");
    let kubeconfig = std::fs::read_to_string(&cluster.files.kubeconfig_path).map_err(other)?;
    let api = KubeApi::from_kubeconfig(&kubeconfig).await.map_err(other)?;
    let rbac =
        cluster.config.authorization.mode.is_empty() || cluster.config.authorization.mode == "rbac";
    api.apply_authz(rbac).await.map_err(other)?;
    phase.done();
    Ok(api)
}

/// Encryption newly on, or a different provider: Secrets stored before are rewritten with the
/// provider now first (§23).
pub(super) async fn rewrite_secrets(
    old: Option<&StateFile>,
    state: &StateFile,
    api: &KubeApi,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let applied = old.map(|o| o.current_state.encryption_config.as_str());
    if state.desired_state.encryption_config.is_empty()
        || applied == Some(state.desired_state.encryption_config.as_str())
    {
        return Ok(());
    }
    let phase = reporter.phase("rewrite secrets");
    let r = crate::phases::encryption::rewrite_secrets(api, reporter).await;
    finish(
        phase,
        r.map(|_| ()).map_err(|e| PhaseError::Phase {
            phase: "rewrite secrets".into(),
            message: e,
        }),
    )
}

/// The desired state becomes the current one, in the state file and the cluster's state Secret.
pub(super) async fn save_state(
    cluster: &Cluster,
    mut state: StateFile,
    api: &KubeApi,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let phase = reporter.phase("save state");
    state.promote_desired_to_current();
    state.save(&cluster.files.state_path).map_err(other)?;
    api.save_state_secret(&state.to_json().map_err(other)?)
        .await
        .map_err(other)?;
    phase.done();
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
