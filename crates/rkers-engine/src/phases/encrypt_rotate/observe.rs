//! Step 2: the controlplane hosts, connected (one unreachable host stops the command), and
//! what the decision needs from each: its `/etc/kubernetes` and whether the helper image that
//! writes the provider file is there.

use super::{RotateKey, RotateKeyError};
use crate::cluster::Cluster;
use crate::hosts::{Host, HostPool};
use crate::phases::driver::Links;
use rkers_core::diff::key_rotation::ControlplaneHost;
use std::sync::Arc;

/// The controlplane hosts as connected and as found.
pub(super) struct Controlplane {
    pub hosts: Vec<Arc<Host>>,
    pub found: Vec<ControlplaneHost>,
}

pub(super) async fn controlplane(
    command: &RotateKey<'_>,
    links: &mut Links,
) -> Result<Controlplane, RotateKeyError> {
    let cluster = command.cluster;
    let hosts = connect(cluster, command.opts.agent_override, &command.opts.ssh).await?;
    links.keep(&hosts);
    let image = &cluster.config.system_images.cert_downloader;
    let mut found = Vec::new();
    for host in &hosts {
        found.push(ControlplaneHost {
            address: host.name().to_string(),
            dir: etc_kubernetes(cluster, host),
            has_helper_image: host.docker().image_exists(image).await?,
        });
    }
    Ok(Controlplane { hosts, found })
}

async fn connect(
    cluster: &Cluster,
    agent_override: bool,
    ssh: &crate::hosts::SshOptions,
) -> Result<Vec<Arc<Host>>, RotateKeyError> {
    let mut addresses: Vec<&str> = Vec::new();
    for n in &cluster.config.nodes {
        if n.role.iter().any(|r| r == "controlplane") && !addresses.contains(&n.address.as_str()) {
            addresses.push(&n.address);
        }
    }
    let targets: Vec<_> = cluster
        .ssh_targets(agent_override)
        .into_iter()
        .filter(|t| addresses.contains(&t.address.as_str()))
        .collect();
    let pool = HostPool::connect(&targets, ssh)
        .await
        .map_err(RotateKeyError::Connect)?;
    Ok(addresses
        .iter()
        .filter_map(|a| pool.get(a).cloned())
        .collect())
}

fn etc_kubernetes(cluster: &Cluster, host: &Host) -> String {
    let prefix =
        crate::plan::host_prefix_path(&cluster.config.prefix_path, &host.facts().operating_system);
    crate::plan::join_path(&[&prefix, "/etc/kubernetes"])
}
