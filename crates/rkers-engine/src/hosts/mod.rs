//! Node access: one SSH connection per host, Docker over it, and the facts gathered from each host.
//!
//! Callers describe hosts with [`SshTarget`] / [`SshOptions`] (no dependency on the cluster.yml
//! model), open them all with [`HostPool::connect`], and then use each host's [`Host`]:
//! [`Host::link`] for commands and connections from the host (SSH by default, another
//! [`HostLink`] when the run plugs one in), [`Host::docker`] for the typed Docker layer.

// HostError carries the host and full context in owned strings by design; errors are the
// cold path, so their size does not matter.
#![allow(clippy::result_large_err)]

pub mod banner;
pub mod container;
pub mod dind;
pub mod docker;
pub mod error;
pub mod facts;
mod key_repair;
pub mod keys;
pub mod known_hosts;
pub mod link;
pub mod local;
pub mod lost;
pub mod pool;
pub mod ports;
pub mod preflight;
pub mod pulls;
pub mod ssh;
pub mod ssh_config;
pub mod target;

pub use error::HostError;

pub use container::{ContainerSpec, ObservedContainer, PortBinding, RestartPolicy, ToCreateBody};
pub use docker::{
    DockerClient, DockerTransport, OneShotResult, PullProgress, TransportReason, UploadOptions,
};
pub use facts::{HostFacts, cgroup_v1_check, docker_api_check};
pub use link::{HostLink, LinkOpener};
pub use pool::{Host, HostAttempt, HostPool, HostProblems};
pub use ports::{PortCheckFailure, PortCheckPlan, PortHost, check_cluster_ports};
pub use preflight::{PreflightOptions, PreflightReport};
pub use ssh::{ExecOutput, HostKeyVerdict, SshSession};
pub use target::{
    BastionTarget, HostKeyPolicy, Links, RegistryCredential, Secret, SshAuth, SshOptions, SshTarget,
};
