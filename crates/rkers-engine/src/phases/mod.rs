//! Ordered steps that apply actions to hosts, in parallel under a concurrency limit.

pub mod manager;

pub use interrupt::finish_interrupted;
pub use manager::{HostName, PhaseError, Runner};
pub mod addons;
pub mod adoption;
pub mod cert_list;
pub mod cert_rotate;
pub mod certs;
pub mod changeset;
pub mod driver;
pub mod encrypt_rotate;
pub mod encryption;
pub mod etcd_membership;
pub mod etcd_snapshot;
pub mod executor;
pub mod files;
pub mod health;
pub mod interrupt;
pub mod log_links;
pub mod read_files;
pub mod reconcile;
pub mod recover_state;
pub mod remove;
pub mod rollback;
pub mod up;
pub mod upgrade;
pub mod windows;

/// What the plan needs to know of each connected host (`up`, `cert rotate`).
pub(crate) fn host_facts(
    pool: &crate::hosts::HostPool,
) -> std::collections::BTreeMap<String, crate::plan::HostFacts> {
    pool.hosts()
        .map(|h| {
            let f = h.facts();
            (
                h.name().to_string(),
                crate::plan::HostFacts {
                    os_type: f.os_type.clone(),
                    operating_system: f.operating_system.clone(),
                    docker_root_dir: f.docker_root_dir.clone(),
                    selinux_enabled: f.selinux,
                    arch: f.arch.clone(),
                    cgroup_driver: f.cgroup_driver.clone(),
                },
            )
        })
        .collect()
}
