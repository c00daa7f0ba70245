//! Step 2, under its own phase: every host connected; one unreachable host stops the run
//! before anything changes, naming the nodes as cluster.yml does.

use super::{CertRotate, RotateError};
use crate::cluster::Cluster;
use crate::hosts::{HostPool, HostProblems};
use crate::phases::driver::Links;

pub(super) async fn every_host(
    command: &CertRotate<'_>,
    links: &mut Links,
) -> Result<HostPool, RotateError> {
    let phase = command.reporter.phase("connect");
    let targets = command.cluster.ssh_targets(command.opts.agent_override);
    match HostPool::connect(&targets, &command.opts.ssh).await {
        Ok(pool) => {
            links.keep(pool.hosts());
            phase.done();
            Ok(pool)
        }
        Err(problems) => {
            phase.fail(&problems.summary());
            Err(RotateError::Unreachable {
                names: unreachable_names(command.cluster, &problems),
                problems,
            })
        }
    }
}

/// `host3 (10.77.0.13)` for each node whose address the connection problems name.
fn unreachable_names(cluster: &Cluster, problems: &HostProblems) -> String {
    let text = problems.to_string();
    let names: Vec<String> = cluster
        .config
        .nodes
        .iter()
        .filter(|n| text.contains(&n.address))
        .map(|n| {
            if n.hostname_override.is_empty() || n.hostname_override == n.address {
                n.address.clone()
            } else {
                format!("{} ({})", n.hostname_override, n.address)
            }
        })
        .collect();
    if names.is_empty() {
        "see below".to_string()
    } else {
        names.join(", ")
    }
}
