//! What `rkers remove` fails with; the hosts are named where some are involved.

use crate::hosts::{HostError, HostProblems};
use crate::phases::driver::StageFailed;

#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("{0}")]
    Cluster(#[from] crate::cluster::ClusterError),
    /// Some hosts could not be reached or cleaned; the others were cleaned.
    #[error(
        "the cluster was not removed from {}; the state file, its backups and the kubeconfig \
         were kept:\n{}",
        .0.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>().join(", "),
        .0.iter().map(|(h, m)| format!("  - {h}: {m}")).collect::<Vec<_>>().join("\n")
    )]
    Hosts(Vec<(String, String)>),
    /// Hosts that answered the first attempt but not the pool's.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] HostProblems),
    #[error("{0}")]
    Host(#[from] HostError),
    #[error("list directories to clean: {0}")]
    ListDirectories(#[source] HostError),
}

/// A stage that failed on some hosts: those hosts were not cleaned.
impl From<StageFailed> for RemoveError {
    fn from(failed: StageFailed) -> Self {
        RemoveError::Hosts(failed.failures)
    }
}

impl crate::error::HostContext for RemoveError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RemoveError::Hosts(failures) => failures.iter().map(|(h, _)| h.as_str()).collect(),
            RemoveError::Unreachable(e) => crate::error::HostContext::hosts(e),
            RemoveError::Host(e) | RemoveError::ListDirectories(e) => vec![e.host()],
            RemoveError::Cluster(_) => Vec::new(),
        }
    }
}
