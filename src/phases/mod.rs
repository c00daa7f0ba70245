//! Ordered steps that apply actions to hosts, in parallel under a concurrency limit.

pub mod manager;

pub use manager::{HostName, PhaseError, Runner};
pub mod addons;
pub mod adoption;
pub mod cert_list;
pub mod cert_rotate;
pub mod certs;
pub mod changeset;
pub mod encryption;
pub mod etcd_snapshot;
pub mod executor;
pub mod files;
pub mod health;
pub mod log_links;
pub mod reconcile;
pub mod recover_state;
pub mod remove;
pub mod up;
pub mod upgrade;
pub mod windows;
