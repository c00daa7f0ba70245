//! Step 2: the local state file (zipped with the snapshot; without it the snapshot is saved
//! alone, with a warning), every member connected (one that cannot be reached is left out and
//! named), and on each reachable one whether its etcd runs and it has the helper image.

use super::Save;
use crate::hosts::HostPool;
use crate::phases::driver::Links;
use crate::phases::etcd_snapshot::{SnapshotError, prefix_of};
use crate::plan;
use rkers_core::diff::snapshot::{self, EtcdMember, MemberFound};

/// The reachable members, what was found of every member, and the state file's bytes.
pub(super) struct Found {
    pub pool: HostPool,
    pub members: Vec<(EtcdMember, MemberFound)>,
    pub state: Option<Vec<u8>>,
}

pub(super) async fn members(
    command: &mut Save<'_>,
    links: &mut Links,
) -> Result<Found, SnapshotError> {
    let cluster = command.cluster;
    let state = (cluster.files.storage)
        .read(&cluster.files.state_path, rkers_core::bounded::STATE)
        .ok();
    if state.is_none() {
        command.reporter.warn(format!(
            "{} not found: the snapshot is saved without the cluster state file",
            cluster.files.state_path.display()
        ));
    }
    let targets: Vec<_> = cluster
        .ssh_targets(command.opts.agent_override)
        .into_iter()
        .filter(|t| command.members.iter().any(|m| m.address == t.address))
        .collect();
    let mut unreachable = Vec::new();
    let mut reachable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &command.opts.ssh).await {
        match &attempt.error {
            Some(e) => unreachable.push((attempt.target.address.clone(), e.to_string())),
            None => reachable.push(attempt),
        }
    }
    let pool = HostPool::from_attempts(reachable, command.opts.ssh.concurrency).await?;
    links.keep(pool.hosts());
    let mut found = Vec::new();
    for member in &command.members {
        let seen = match pool.get(&member.address) {
            None => match unreachable.iter().find(|(a, _)| *a == member.address) {
                Some((_, cause)) => MemberFound::Unreachable(cause.clone()),
                None => continue,
            },
            Some(host) => {
                let running = host
                    .docker()
                    .inspect_container(plan::ETCD)
                    .await?
                    .is_some_and(|c| c.running);
                if running {
                    MemberFound::Running {
                        prefix: prefix_of(cluster, host),
                        has_image: host.docker().image_exists(&command.image).await?,
                    }
                } else {
                    MemberFound::EtcdStopped
                }
            }
        };
        found.push((member.clone(), seen));
    }
    command.failures = snapshot::left_out(&found);
    Ok(Found {
        pool,
        members: found,
        state,
    })
}
