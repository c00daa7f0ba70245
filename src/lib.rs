//! rkers: an SSH-driven Kubernetes cluster orchestrator that reads RKE1's `cluster.yml` and
//! `cluster.rkestate` as they are.
//!
//! Three crates, one per layer: the pure core that decides (`rkers-core`: `config`, `metadata`,
//! `state`, `pki`, `plan`, `diff`), the engine that applies (`rkers-engine`: `cluster`, `hosts`,
//! `kubeapi`, `checks`, `phases`, `addons`, `doctor`, `output`, `error`, `image_build`), both
//! re-exported here at their old paths, and this crate on top: the command line, the library
//! API and `rkers serve`. Each module owns one concern:
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
//! - [`api`]: the library API: one operation per command, its state store and events.
//! - [`serve`]: `rkers serve`, the management server on the library API.
//! - [`build_info`]: what this binary is: version, git commit, build date, metadata source.
//! - [`error`]: a failure as every command's final event shows it (hosts, causes).

pub mod api;
pub mod build_info;
pub mod cli;
pub mod serve;

// The engine and the pure core, at the paths they had before they became crates of their own.
pub use rkers_engine::{
    addons, checks, cluster, config, diff, doctor, error, hosts, image_build, kubeapi, metadata,
    output, phases, pki, plan, state,
};
