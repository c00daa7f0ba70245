//! Why a `doctor --fix` or `--restore-webhooks` did not succeed: the hosts not fixed (each
//! with its line), or the object, file or API server that failed.

use crate::error::HostContext;
use crate::kubeapi::KubeApiError;
use crate::phases::driver::StageFailed;
use rkers_core::diff::doctor_fix::RestoreRefused;

#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// A `--host` that is not in the config (with the hosts that are).
    #[error(transparent)]
    UnknownHost(#[from] crate::doctor::run::UnknownHost),
    /// Hosts that could not be read or fixed: each line names its host and why.
    #[error("{}", .failures.iter().map(|(_, line)| line.as_str()).collect::<Vec<_>>().join("\n"))]
    NotFixed { failures: Vec<(String, String)> },
    /// The admin kubeconfig's API server cannot be reached (why, as `rkers doctor` says it).
    #[error("{0}")]
    NoApi(String),
    /// A call to the API server failed (reading the CNI or the webhooks that block it too); it
    /// names the server and the object.
    #[error(transparent)]
    Api(#[from] KubeApiError),
    /// `--fix flannel-nat` on a cluster with no flannel or canal DaemonSet.
    #[error(
        "no flannel or canal DaemonSet runs in this cluster (network.plugin: {plugin}): \
         `--fix flannel-nat` restarts flannel's pods, and there are none"
    )]
    NoFlannel { plugin: String },
    /// Only configurations Kubernetes or rkers' addons installed block (each was warned about
    /// with its remedy: bring its backend back).
    #[error("only protected webhook configurations block pod creation")]
    OnlyProtected,
    /// The backup file could not be read, written or renamed.
    #[error("{path}: {cause}")]
    Backup { path: String, cause: String },
    /// The backup holds nothing to restore, or something that is not a webhook configuration.
    #[error(transparent)]
    Refused(#[from] RestoreRefused),
    /// A step on the Kubernetes API or the local backup failed: its lines name the object.
    #[error("{0}")]
    Cluster(String),
    #[error(transparent)]
    Stage(#[from] StageFailed),
}

impl HostContext for FixError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            FixError::NotFixed { failures } => failures.iter().map(|(h, _)| h.as_str()).collect(),
            FixError::Stage(e) => e.hosts(),
            _ => Vec::new(),
        }
    }
}
