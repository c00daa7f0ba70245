//! What `up` fails with: one variant per kind of failure, each naming the file, the host or
//! the etcd member it is about and keeping the error it came from as its source.

use crate::cluster::ClusterError;
use crate::hosts::{HostError, HostProblems};
use crate::phases::PhaseError;
use crate::phases::executor::{ExecError, ExecFailure};
use crate::phases::health::HealthError;
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
    EncryptionOff(#[source] crate::phases::encryption::SecretsError),
    #[error("{0}")]
    AddonsDeploy(#[from] crate::phases::addons::DeployError),
    /// An action of a host's step, through the executor (the error names the host).
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// The etcd snapshot `up` takes before it changes anything failed on a host.
    #[error("{0}\nno component was changed on any host")]
    BeforeChanges(#[source] ExecError),
    /// A component a host's step started failed its health check.
    #[error("{0}")]
    Health(#[from] HealthError),
    /// The images a host lacks, each pull that failed (every pull is tried).
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Pulls(Vec<ExecError>),
    /// Putting back the containers kept until the node is Ready, after the host's worker
    /// plane failed (`failed`), failed too.
    #[error(
        "{failed}; putting back the containers kept until node {node} is Ready failed too: {source}"
    )]
    KeptNotPutBack {
        host: String,
        node: String,
        failed: Box<UpError>,
        #[source]
        source: Box<ExecFailure>,
    },
    /// The previous containers kept until the node was Ready, dropped once it was.
    #[error("{source}")]
    KeptNotDropped {
        host: String,
        #[source]
        source: Box<ExecFailure>,
    },
    /// The node of an upgraded worker host was not Ready in time (`cause`: the wait's error,
    /// `None` without an API to ask); `restored` is what putting back the previous containers
    /// gave.
    #[error("{}", not_ready(.node, *.secs, .cause.as_deref(), .restored))]
    NodeNotReady {
        host: String,
        node: String,
        secs: u64,
        cause: Option<Box<crate::kubeapi::KubeApiError>>,
        restored: Result<Vec<String>, Box<ExecFailure>>,
    },
    /// A background step (the early worker plane) panicked or was cancelled.
    #[error("a background step of up stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// A step ran before the one whose result it needs: a bug in the list of steps, not in
    /// the input.
    #[error("up's step {step} ran before {needs}")]
    StepOutOfOrder {
        step: rkers_core::diff::up::UpStep,
        needs: &'static str,
    },
    /// Hosts of a stage failed (the driver's form; `up`'s own steps fail with their errors).
    #[error("{0}")]
    Stage(#[from] crate::phases::driver::StageFailed),
}

fn not_ready(
    node: &str,
    secs: u64,
    cause: Option<&crate::kubeapi::KubeApiError>,
    restored: &Result<Vec<String>, Box<ExecFailure>>,
) -> String {
    let cause = cause.map_or_else(
        || "the Kubernetes API cannot be reached to see it".to_string(),
        |e| e.to_string(),
    );
    let wait = format!(
        "node {node} did not report Ready within {secs}s after its upgrade (--node-ready-timeout): {cause}"
    );
    match restored {
        Ok(restored) => format!(
            "{wait}; put back the {} it ran before: the host was restored",
            restored.join(" and ")
        ),
        Err(e) => format!(
            "{wait}; putting back the previous containers failed: {e}; the host was NOT restored"
        ),
    }
}

/// The texts and hosts of the errors reading a host's files always had.
impl From<crate::phases::read_files::ReadFilesError> for UpError {
    fn from(e: crate::phases::read_files::ReadFilesError) -> Self {
        match e {
            crate::phases::read_files::ReadFilesError::Host(e) => UpError::Host(e),
            crate::phases::read_files::ReadFilesError::Agent(e) => UpError::Phase(e),
        }
    }
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
            UpError::Exec(e) | UpError::BeforeChanges(e) => e.hosts(),
            UpError::Health(e) => e.hosts(),
            // One host's pulls.
            UpError::Pulls(errors) => errors.iter().take(1).map(|e| e.host.as_str()).collect(),
            UpError::KeptNotPutBack { host, .. }
            | UpError::KeptNotDropped { host, .. }
            | UpError::NodeNotReady { host, .. } => vec![host],
            UpError::AddonsDeploy(e) => e.hosts(),
            UpError::Stage(e) => e.hosts(),
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
            | UpError::Task(_)
            | UpError::StepOutOfOrder { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker host whose node stayed NotReady names the node, the wait and what was put back,
    /// and the final event names the host.
    #[test]
    fn a_node_not_ready_says_whether_the_host_was_restored() {
        let restored = UpError::NodeNotReady {
            host: "10.0.0.3".into(),
            node: "w1".into(),
            secs: 180,
            cause: None,
            restored: Ok(vec!["kubelet".into(), "kube-proxy".into()]),
        };
        assert_eq!(
            restored.to_string(),
            "node w1 did not report Ready within 180s after its upgrade (--node-ready-timeout): \
             the Kubernetes API cannot be reached to see it; put back the kubelet and kube-proxy \
             it ran before: the host was restored"
        );
        assert_eq!(restored.hosts(), ["10.0.0.3"]);
        let not = UpError::NodeNotReady {
            host: "10.0.0.3".into(),
            node: "w1".into(),
            secs: 180,
            cause: Some(Box::new(crate::kubeapi::KubeApiError::NodeNotFound(
                "w1".into(),
            ))),
            restored: Err(Box::new(ExecFailure::Missing("gone".into()))),
        };
        assert!(
            not.to_string().ends_with(
                "node w1 not found in the cluster; putting back the previous containers \
                 failed: gone; the host was NOT restored"
            ),
            "{not}"
        );
    }
}
