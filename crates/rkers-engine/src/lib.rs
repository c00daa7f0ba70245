//! rkers' engine: what applies a decision to a cluster. Hosts (one SSH connection each, the
//! Docker client over it, host facts), the Kubernetes API, the checks, the executor of the
//! core's actions, the command driver and the commands' steps (`phases`), addons, `doctor`, the
//! progress and event output, and the error every command's final event shows.
//!
//! It builds on the pure core (`rkers-core`, re-exported at its old paths) and knows nothing of
//! the command line, the library API's requests or `rkers serve`: the root package `rkers` sits
//! on top of it, and the compiler refuses an import the other way.
//! - [`cluster`]: a cluster as a command sees it: config, metadata, files, state; and the
//!   mapping of the config into the inputs of the other modules.
//! - [`hosts`]: one SSH connection per host and the Docker client over it; host facts.
//! - [`kubeapi`]: the Kubernetes API: RBAC objects, the in-cluster state, node labels and taints.
//! - [`checks`]: the cluster checks `doctor` reports and `up` and `cert rotate` run before
//!   changing anything (CNI incidents, blocking webhooks, CNI readiness).
//! - [`phases`]: the executor, the command driver and each command's steps.
//! - [`addons`]: addon templates, their rendering and their deployment.
//! - [`doctor`]: the CNI incidents operators hit, found and repaired.
//! - [`output`]: progress on a TTY, plain lines otherwise, JSON events; secret redaction.
//! - [`error`]: a failure as every command's final event shows it (hosts, causes).
//! - [`image_build`]: `rkers image build`'s Docker side.

pub mod addons;
pub mod checks;
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

// The pure core, at the paths it had before it became its own crate.
pub use rkers_core::{config, metadata, pki, plan, state};

/// Says why a unit test cannot run here and lets it return; with `RKERS_NO_SKIP=1`
/// (scripts/test, CI) it fails the test instead, so a machine missing a tool is never green.
#[cfg(test)]
pub(crate) fn test_skip(reason: &str) {
    if std::env::var("RKERS_NO_SKIP").is_ok_and(|v| v == "1") {
        panic!("this test cannot run here, and RKERS_NO_SKIP=1 makes a skip a failure: {reason}");
    }
    eprintln!("skipped: {reason}");
}
