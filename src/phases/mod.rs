//! Ordered steps that apply actions to hosts, in parallel under a concurrency limit.

pub mod manager;

pub use manager::{HostName, PhaseError, Runner};
pub mod etcd_snapshot;
pub mod files;
pub mod health;
pub mod reconcile;
pub mod up;
