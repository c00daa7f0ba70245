//! What `rkers encrypt rotate-key` fails with; the host is named where one is involved.

use crate::cluster::ClusterError;
use crate::hosts::{HostError, HostProblems};
use crate::kubeapi::KubeApiError;
use crate::phases::driver::StageFailed;
use crate::plan::encryption::EncryptionError;
use crate::state::StateError;
use rkers_core::changeset::list_failures;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RotateKeyError {
    #[error(
        "can't rotate encryption keys: Encryption Configuration is disabled: there is no key \
         to rotate. Enable it first (services.kube-api.secrets_encryption_config.enabled: true \
         in cluster.yml) and run `rkers up`"
    )]
    Disabled,
    #[error(
        "can't rotate encryption keys: Key Rotation is not supported with custom configuration"
    )]
    CustomConfig,
    #[error("no state file at {}: run `rkers up` first", .0.display())]
    NoState(PathBuf),
    #[error(
        "can't rotate encryption keys: the cluster has no encryption key yet; \
         run `rkers up` with secrets encryption enabled first"
    )]
    NoKey,
    /// The state or config could not be read.
    #[error(transparent)]
    Load(#[from] ClusterError),
    /// The applied provider file's keys could not be read.
    #[error(transparent)]
    Keys(#[from] EncryptionError),
    #[error("cannot reach every controlplane host:\n{0}")]
    Connect(HostProblems),
    /// A connected host could not be read (its helper image).
    #[error(transparent)]
    Host(Box<HostError>),
    #[error("{}: {source} (run `rkers util get-kubeconfig`)", .path.display())]
    Kubeconfig {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Api(#[from] KubeApiError),
    /// The state file could not be saved.
    #[error(transparent)]
    Save(#[from] StateError),
    #[error(transparent)]
    Stage(#[from] StageFailed),
    /// Rewriting the Secrets failed: both keys stay in the provider file.
    #[error(
        "{}\nthe cluster keeps both keys; run `rkers encrypt rotate-key` again to finish",
        list_failures(.0)
    )]
    Rewrite(Vec<(String, String)>),
}

impl From<HostError> for RotateKeyError {
    fn from(e: HostError) -> Self {
        RotateKeyError::Host(Box::new(e))
    }
}

impl crate::error::HostContext for RotateKeyError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RotateKeyError::Connect(problems) => problems.hosts(),
            RotateKeyError::Host(e) => e.hosts(),
            RotateKeyError::Stage(failed) => failed.hosts(),
            RotateKeyError::Disabled
            | RotateKeyError::CustomConfig
            | RotateKeyError::NoState(_)
            | RotateKeyError::NoKey
            | RotateKeyError::Load(_)
            | RotateKeyError::Keys(_)
            | RotateKeyError::Kubeconfig { .. }
            | RotateKeyError::Api(_)
            | RotateKeyError::Save(_)
            | RotateKeyError::Rewrite(_) => Vec::new(),
        }
    }
}
