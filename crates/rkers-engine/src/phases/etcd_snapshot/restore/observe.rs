//! Step 2: every host connected (one that cannot be reached stops the restore before anything
//! changes); when the snapshot is shared, the first member that has it (asked over SSH); which
//! images each member lacks; which of the containers the restore replaces each host has. Read
//! without changing anything.

use super::Restore;
use crate::hosts::{Host, HostPool};
use crate::phases::driver::Links;
use crate::phases::etcd_snapshot::{RestorePlanProblem, SnapshotError, prefix_of};
use rkers_core::diff::snapshot::{self, RestoreFound, RestoreMember};
use std::sync::Arc;

/// Every connected host, and what the decision needs.
pub(super) struct Found {
    pub pool: HostPool,
    pub restore: RestoreFound,
}

pub(super) async fn hosts(
    command: &mut Restore<'_>,
    links: &mut Links,
) -> Result<Found, SnapshotError> {
    let targets = command.cluster.ssh_targets(command.opts.up.agent_override);
    let pool = HostPool::connect(&targets, &command.opts.up.ssh).await?;
    links.keep(pool.hosts());
    let restore = find(command, &pool)
        .await
        .map_err(|problem| SnapshotError::RestorePlan {
            name: command.opts.name.clone(),
            problem: Box::new(problem),
        })?;
    Ok(Found { pool, restore })
}

async fn find(command: &Restore<'_>, pool: &HostPool) -> Result<RestoreFound, RestorePlanProblem> {
    let cluster = command.cluster;
    let hosts: Vec<&Arc<Host>> = command
        .members
        .iter()
        .map(|m| {
            pool.get(&m.address)
                .ok_or_else(|| RestorePlanProblem::NotConnected(m.address.clone()))
        })
        .collect::<Result<_, _>>()?;
    let mut found = RestoreFound::default();
    let shares = snapshot::shares_local_copy(command.s3, hosts.len());
    if shares {
        found.local_copy = first_copy(&hosts, &command.opts.name).await?;
    }
    let file_image = &cluster.config.system_images.cert_downloader;
    for (member, host) in command.members.iter().zip(&hosts) {
        let source = found.local_copy.as_ref().map(|(s, _)| s.as_str());
        // Only the members the copy goes to are asked for the copying image.
        let has_file_image = if shares && source.is_some_and(|s| s != host.name()) {
            host.docker().image_exists(file_image).await?
        } else {
            true
        };
        found.members.push(RestoreMember {
            member: member.clone(),
            prefix: String::new(),
            has_image: false,
            has_file_image,
        });
    }
    for (m, host) in found.members.iter_mut().zip(&hosts) {
        m.has_image = host.docker().image_exists(&command.image).await?;
        m.prefix = prefix_of(cluster, host);
    }
    for host in pool.hosts() {
        let mut present = Vec::new();
        for c in snapshot::REPLACED {
            if host.docker().inspect_container(c).await?.is_some() {
                present.push(c.to_string());
            }
        }
        found.replaced.push((host.name().to_string(), present));
    }
    Ok(found)
}

/// The first member with the snapshot, and its path there ([`snapshot::snapshot_paths`]).
async fn first_copy(
    hosts: &[&Arc<Host>],
    name: &str,
) -> Result<Option<(String, String)>, RestorePlanProblem> {
    for host in hosts {
        for path in snapshot::snapshot_paths(name) {
            let out = host
                .link()
                .exec(&format!(
                    "test -f {} && echo yes; true",
                    shell_words::quote(&path)
                ))
                .await
                .map_err(|cause| RestorePlanProblem::Search {
                    host: host.name().to_string(),
                    cause: Box::new(cause),
                })?;
            if out.stdout_str().trim() == "yes" {
                return Ok(Some((host.name().to_string(), path)));
            }
        }
    }
    Ok(None)
}
