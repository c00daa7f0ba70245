//! What `rkers cert rotate` fails with; the hosts are named where some are involved.

use crate::checks::guard::GuardError;
use crate::cluster::ClusterError;
use crate::hosts::{HostError, HostProblems};
use crate::phases::PhaseError;
use crate::phases::driver::StageFailed;
use crate::pki::PkiError;
use crate::plan::PlanError;
use crate::state::StateError;
use rkers_core::changeset::{is_pseudo_host, list_failures};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    /// A Windows worker's files could not be read.
    #[error("{0}")]
    Phase(#[from] PhaseError),
    #[error("{0}")]
    State(#[from] StateError),
    #[error("{0}")]
    Guard(#[from] GuardError),
    #[error("Failed to rotate certificates: can't find old certificates in {}", .0.display())]
    NoCertificates(PathBuf),
    #[error("Failed to rotate certificates: {0}")]
    Pki(#[source] PkiError),
    /// `names`: the nodes as cluster.yml names them.
    #[error("cannot reach every host ({names}); no certificate was rotated:\n{problems}")]
    Unreachable {
        names: String,
        #[source]
        problems: HostProblems,
    },
    /// A planned host without a connection: a bug in the step that asked, not in the input.
    #[error("host {host} not connected")]
    NotConnected { host: String },
    #[error("{0}")]
    Host(#[source] Box<HostError>),
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error(
        "Failed to restart system pods after the CA rotation: {}",
        .0.iter().map(|(_, e)| e.as_str()).collect::<Vec<_>>().join("; ")
    )]
    Pods(Vec<(String, String)>),
    #[error("[{stage}] {} hosts failed:\n{}", .failures.len(), list_failures(.failures))]
    Stage {
        stage: String,
        failures: Vec<(String, String)>,
    },
}

/// The texts and hosts of the errors reading a host's files always had.
impl From<crate::phases::read_files::ReadFilesError> for RotateError {
    fn from(e: crate::phases::read_files::ReadFilesError) -> Self {
        match e {
            crate::phases::read_files::ReadFilesError::Host(e) => RotateError::Host(e),
            crate::phases::read_files::ReadFilesError::Agent(e) => RotateError::Phase(e),
        }
    }
}

impl From<HostError> for RotateError {
    fn from(e: HostError) -> Self {
        RotateError::Host(Box::new(e))
    }
}

/// A stage that failed on some hosts keeps this command's wording.
impl From<StageFailed> for RotateError {
    fn from(failed: StageFailed) -> Self {
        RotateError::Stage {
            stage: failed.stage,
            failures: failed.failures,
        }
    }
}

impl crate::error::HostContext for RotateError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RotateError::Host(e) => e.hosts(),
            RotateError::NotConnected { host } => vec![host],
            RotateError::Stage { failures, .. } => failures
                .iter()
                .map(|(h, _)| h.as_str())
                .filter(|h| !is_pseudo_host(h))
                .collect(),
            RotateError::Phase(e) => e.hosts(),
            RotateError::Guard(e) => e.hosts(),
            RotateError::Unreachable { problems, .. } => problems.hosts(),
            // Pods are named by pod, not host.
            RotateError::Cluster(_)
            | RotateError::State(_)
            | RotateError::NoCertificates(_)
            | RotateError::Pki(_)
            | RotateError::Plan(_)
            | RotateError::Pods(_) => Vec::new(),
        }
    }
}
