//! What `up` fails with: one variant per kind of failure, each naming the file, the host or
//! the etcd member it is about and keeping the error it came from as its source.

use crate::cluster::ClusterError;
use crate::hosts::{HostError, HostProblems};
use crate::phases::PhaseError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum UpError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Phase(#[from] PhaseError),
    #[error("{0}")]
    Adoption(#[from] crate::phases::adoption::AdoptionRefused),
    /// Writing the state file, or serializing the state for the cluster's copy.
    #[error("{0}")]
    State(#[from] crate::state::StateError),
    /// The state file's recorded config is not one rkers can read.
    #[error("{path}: currentState.rkeConfig: {source}")]
    StateConfig {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "cannot read the admin kubeconfig {path}: {source} (`rkers util get-kubeconfig` writes it again)"
    )]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    KubeApi(#[from] crate::kubeapi::KubeApiError),
    /// Hosts that cannot be reached stop the run before anything changes.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] HostProblems),
    /// Boxed: a host's error is the largest by far, and every `Result` of `up` carries this type.
    #[error("{0}")]
    Host(#[source] Box<HostError>),
    /// A planned host without a connection: a bug in the step that asked, not in the input.
    #[error("host {host} not connected")]
    NotConnected { host: String },
    #[error("{}", .problems.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("\n"))]
    DockerVersions { problems: Vec<(String, String)> },
    #[error("{0}")]
    EtcdPlaneReplaced(#[from] crate::phases::reconcile::EtcdPlaneReplaced),
    /// The ports between roles that the port checks found closed.
    #[error(
        "{}\n(skip with --disable-port-check)",
        .0.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n")
    )]
    PortChecks(Vec<crate::hosts::ports::PortCheckFailure>),
    /// Ports a component about to start needs, taken by something else.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    PortsInUse(Vec<HostError>),
    #[error("Windows hosts cannot be used as configured:\n  - {}", .problems.join("\n  - "))]
    Windows { problems: Vec<String> },
    #[error("{0}")]
    Plan(#[from] crate::plan::PlanError),
    #[error("{0}")]
    Addon(#[from] crate::addons::AddonError),
    #[error("{0}")]
    Guard(#[from] crate::checks::guard::GuardError),
    #[error("upgrade_strategy: {0}")]
    UpgradeStrategy(#[source] crate::phases::upgrade::BudgetError),
    /// RKE1 would issue a new CA over a running cluster whose state is lost (§32 pain point 5).
    #[error(
        "hosts already run Kubernetes containers but there is no cluster state at {}: {}. \
         Running `up` now would issue new certificates and break that cluster; nothing was \
         written. Recover the state (`rkers util get-state-file`, or a backup \
         <state>.<time>.bak next to it), or pass --force to build a new cluster over it.",
        .state_path.display(),
        .busy.iter().map(|(h, names)| format!("{h} ({})", names.join(", "))).collect::<Vec<_>>().join("; ")
    )]
    ExistingCluster {
        state_path: PathBuf,
        /// Each host with the Kubernetes containers it runs.
        busy: Vec<(String, Vec<String>)>,
    },
    /// cluster.yml's `kubernetes_version` skips a minor or goes back one.
    #[error("{0}")]
    MinorStep(#[from] crate::diff::minor::MinorStepError),
    /// The target minor stops serving API versions the cluster uses.
    #[error("{}", super::removed_apis::refusal(.0))]
    RemovedApis(crate::diff::removed_apis::Verdict),
    #[error("no remaining etcd member to remove members through")]
    NoEtcdMember,
    /// Removing a member that left; `detail` is etcdctl's or the helper's own message.
    #[error("{detail}")]
    EtcdRemove {
        host: String,
        member: String,
        detail: String,
    },
    #[error("[etcd] Failed to add etcd member {member}: {detail}")]
    EtcdJoin {
        host: String,
        member: String,
        detail: String,
    },
    /// Deleting a data directory on a host through the helper container.
    #[error("{detail}")]
    CleanDirectories { host: String, detail: String },
    /// Encryption turned off with a provider file rkers cannot keep reading Secrets with.
    #[error("{0}")]
    EncryptionOff(String),
    #[error("{0}")]
    AddonsDeploy(#[from] crate::phases::addons::DeployError),
    /// A background step (the early worker plane) panicked or was cancelled.
    #[error("a background step of up stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<HostError> for UpError {
    fn from(e: HostError) -> Self {
        UpError::Host(Box::new(e))
    }
}

use crate::error::HostContext;

impl HostContext for UpError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            UpError::Host(e) => vec![e.host()],
            UpError::NotConnected { host }
            | UpError::EtcdRemove { host, .. }
            | UpError::EtcdJoin { host, .. }
            | UpError::CleanDirectories { host, .. } => vec![host],
            UpError::DockerVersions { problems } => {
                problems.iter().map(|(h, _)| h.as_str()).collect()
            }
            UpError::PortChecks(failures) => failures.iter().map(|f| f.host.as_str()).collect(),
            UpError::PortsInUse(errors) => errors.iter().map(HostError::host).collect(),
            UpError::ExistingCluster { busy, .. } => busy.iter().map(|(h, _)| h.as_str()).collect(),
            UpError::Phase(e) => e.hosts(),
            UpError::Unreachable(e) => e.hosts(),
            UpError::Guard(e) => e.hosts(),
            UpError::AddonsDeploy(e) => e.hosts(),
            UpError::Cluster(_)
            | UpError::Adoption(_)
            | UpError::State(_)
            | UpError::StateConfig { .. }
            | UpError::ReadKubeconfig { .. }
            | UpError::KubeApi(_)
            | UpError::Windows { .. }
            | UpError::EtcdPlaneReplaced(_)
            | UpError::Plan(_)
            | UpError::Addon(_)
            | UpError::UpgradeStrategy(_)
            | UpError::MinorStep(_)
            | UpError::RemovedApis(_)
            | UpError::NoEtcdMember
            | UpError::EncryptionOff(_)
            | UpError::Task(_) => Vec::new(),
        }
    }
}
