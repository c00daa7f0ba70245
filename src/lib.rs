//! rkers: an SSH-driven Kubernetes cluster orchestrator that reads RKE1's `cluster.yml` and
//! `cluster.rkestate` as they are.
//!
//! The crate is split by job, each module owning one concern; `config`, `metadata`, `state`,
//! `pki`, `plan` and `diff` are the pure core's (the `rkers-core` crate, re-exported here):
//! - [`cluster`]: a cluster as a command sees it: config, metadata, files, state; and the
//!   mapping of the config into the inputs of the other modules.
//! - [`config`]: the cluster.yml model, defaults and validation (errors carry file:line:column).
//! - [`metadata`]: Kubernetes version metadata (system images, default component flags).
//! - [`state`]: the `.rkestate` file and the files named after the config (§6, §7).
//! - [`pki`]: certificates and kubeconfigs (§11).
//! - [`hosts`]: one SSH connection per host and the Docker client over it; host facts.
//! - [`plan`]: pure functions from config + state + metadata to the desired state of each host.
//! - [`diff`]: desired vs observed, giving the list of actions `--dry-run` prints.
//! - [`kubeapi`]: the Kubernetes API: RBAC objects, the in-cluster state, node labels and taints.
//! - [`checks`]: the cluster checks `doctor` reports and `up` and `cert rotate` run before
//!   changing anything (CNI incidents, blocking webhooks, CNI readiness).
//! - [`phases`]: ordered steps that apply actions, hosts in parallel under a concurrency limit.
//! - [`output`]: progress on a TTY, plain lines otherwise, JSON events; secret redaction.
//! - [`cli`]: the command line surface and exit codes.
//! - [`build_info`]: what this binary is: version, git commit, build date, metadata source.
//! - [`error`]: a failure as every command's final event shows it (hosts, causes).

pub mod addons;
pub mod api;
pub mod build_info;
pub mod checks;
pub mod cli;
pub mod cluster;
/// [`rkers_core::diff`], plus [`diff::cluster`]: the cluster actions of `up`, decided from the
/// Node objects read through the Kubernetes API (k8s-openapi's types, which the core does not
/// depend on).
pub mod diff {
    pub use rkers_core::diff::*;
    pub mod cluster;
}
pub mod doctor;
pub mod error;
pub mod hosts;
pub mod image_build;
pub mod kubeapi;
pub mod output;
pub mod phases;
pub mod serve;

// The pure core, at the paths it had before it became its own crate.
pub use rkers_core::{config, metadata, pki, plan, state};
