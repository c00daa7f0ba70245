//! What the snapshot commands fail with; the hosts are named where some are involved.

use crate::cluster::ClusterError;
use crate::hosts::{HostError, HostProblems};
use crate::phases::driver::StageFailed;
use crate::phases::up::UpError;
use rkers_core::changeset::list_failures;
use rkers_core::diff::snapshot::{InvalidSnapshotName, SnapshotNotFound};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Invalid(String),
    /// Hosts that cannot be reached stop a restore before anything changes.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] HostProblems),
    #[error("{0}")]
    Host(#[source] Box<HostError>),
    #[error("[etcd] snapshot {name} was not saved on any etcd host:\n{}", listed(.failures))]
    NotSaved {
        name: String,
        failures: Vec<(String, String)>,
    },
    /// The restore could not be planned; `problem` names the host.
    #[error("[etcd] cannot restore snapshot {name}; the cluster was left as it was: {problem}")]
    RestorePlan {
        name: String,
        problem: Box<RestorePlanProblem>,
    },
    #[error(
        "[etcd] cannot restore snapshot {name}; the cluster was left as it was:\n{}",
        list_failures(.failures)
    )]
    RestoreAborted {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] restoring snapshot {name} failed after etcd was stopped:\n{}\nrun `rkers etcd snapshot-restore` again or `rkers up`",
        list_failures(.failures)
    )]
    RestoreFailed {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] snapshot {name} was restored into etcd, but bringing the cluster back failed: {cause}\nrun `rkers up` to finish"
    )]
    Up {
        name: String,
        #[source]
        cause: UpError,
    },
    /// A stage failed in a way its command does not word itself.
    #[error(transparent)]
    Stage(#[from] StageFailed),
}

/// Why a restore could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum RestorePlanProblem {
    #[error("host {0} is not connected")]
    NotConnected(String),
    #[error("{0}")]
    Host(#[source] Box<HostError>),
    /// Looking for the snapshot on a host failed.
    #[error("host {host}: {cause}")]
    Search {
        host: String,
        #[source]
        cause: Box<HostError>,
    },
    #[error("{0}")]
    NotFound(#[from] SnapshotNotFound),
}

impl From<HostError> for SnapshotError {
    fn from(e: HostError) -> Self {
        SnapshotError::Host(Box::new(e))
    }
}

impl From<HostError> for RestorePlanProblem {
    fn from(e: HostError) -> Self {
        RestorePlanProblem::Host(Box::new(e))
    }
}

impl From<InvalidSnapshotName> for SnapshotError {
    fn from(e: InvalidSnapshotName) -> Self {
        SnapshotError::Invalid(e.to_string())
    }
}

impl crate::error::HostContext for SnapshotError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            SnapshotError::Host(e) => vec![e.host()],
            SnapshotError::NotSaved { failures, .. }
            | SnapshotError::RestoreAborted { failures, .. }
            | SnapshotError::RestoreFailed { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            SnapshotError::Unreachable(e) => crate::error::HostContext::hosts(e),
            SnapshotError::Up { cause, .. } => crate::error::HostContext::hosts(cause),
            SnapshotError::Stage(e) => crate::error::HostContext::hosts(e),
            SnapshotError::Cluster(_)
            | SnapshotError::Invalid(_)
            | SnapshotError::RestorePlan { .. } => Vec::new(),
        }
    }
}

/// One line per host that failed.
pub(super) fn listed(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(h, e)| format!("  - host {h}: {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}
