//! rkers' pure core: everything rkers decides, with no async runtime and no network. The root
//! package (`rkers`) observes hosts and the cluster, hands what it saw to the functions here,
//! and applies the actions they return.
//!
//! - [`config`]: the cluster.yml model, defaults and validation (errors carry file:line:column).
//! - [`metadata`]: Kubernetes version metadata (system images, default component flags).
//! - [`state`]: the `.rkestate` file and the files named after the config (§6, §7).
//! - [`pki`]: certificates and kubeconfigs (§11).
//! - [`plan`]: pure functions from config + state + metadata to the desired state of each host.
//! - [`diff`]: desired vs observed, giving the list of actions `--dry-run` prints.
//! - [`container`], [`files`], [`health`], [`node`], [`addon`]: what those actions carry (a
//!   container's spec, files to write, a health check's TLS material, a node's labels and
//!   taints, an addon's manifest), which the root package's engine applies.
//! - [`changeset`]: the ordered, typed stages of actions a day-2 command decided.
//! - [`redact`]: masking secrets in text before it is shown.
//! - [`bounded`]: reading a file an operator named, a regular file of bounded size.

pub mod addon;
pub mod bounded;
pub mod changeset;
pub mod config;
pub mod container;
pub mod diff;
pub mod files;
pub mod health;
pub mod image_build;
pub mod metadata;
pub mod node;
pub mod pki;
pub mod plan;
pub mod redact;
pub mod state;
