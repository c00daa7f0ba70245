//! `up --local` / `remove --local` (RKE1's local mode): the cluster is one node, the machine
//! whose Docker daemon `DOCKER_HOST` names (default `unix:///var/run/docker.sock`), reached
//! without SSH through [`crate::hosts::local`]. And `up --dind` / `remove --dind`: each node a
//! Docker-in-Docker container on that daemon ([`crate::hosts::dind`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::CliError;
use crate::cli::args::{Command, LinkArgs};
use crate::cluster::Cluster;
use crate::config::Node;
use crate::hosts::dind::{self, DindLinks, DindOptions};
use crate::hosts::local::{DockerEndpoint, LocalLinks};
use crate::hosts::{Links, SshOptions};
use crate::output::Reporter;

/// RKE1's local node: it replaces the nodes of cluster.yml.
pub const LOCAL_ADDRESS: &str = "127.0.0.1";
pub const LOCAL_HOSTNAME: &str = "localhost";

/// How a command reaches its nodes: over SSH, or one of RKE1's modes.
pub enum LinkMode<'a> {
    Ssh,
    Local,
    Dind { args: &'a LinkArgs, dry_run: bool },
}

impl<'a> LinkMode<'a> {
    /// The mode `--local` / `--dind` ask for (`up`, `rollback`).
    pub fn of(args: &'a LinkArgs, dry_run: bool) -> Result<LinkMode<'a>, CliError> {
        match (args.local, args.dind) {
            (true, true) => Err(CliError::Usage(
                "--local and --dind cannot be used together".into(),
            )),
            (true, false) => Ok(LinkMode::Local),
            (false, true) => Ok(LinkMode::Dind { args, dry_run }),
            (false, false) => Ok(LinkMode::Ssh),
        }
    }

    fn of_command(command: &'a Command) -> Result<LinkMode<'a>, CliError> {
        match command {
            Command::Up(a) => LinkMode::of(&a.links, a.dry_run),
            Command::Remove(a) if a.local => Ok(LinkMode::Local),
            _ => Ok(LinkMode::Ssh),
        }
    }
}

/// Makes the cluster RKE1's local one: the nodes of the file are replaced by one node
/// `127.0.0.1` (hostname `localhost`, user `root`, every role), and kubelet is told not to
/// fail on swap, as RKE1 does for a developer's machine.
pub fn localize(cluster: &mut Cluster) {
    let node = Node {
        address: LOCAL_ADDRESS.into(),
        hostname_override: LOCAL_HOSTNAME.into(),
        user: "root".into(),
        role: ["controlplane", "etcd", "worker"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    };
    cluster.config.nodes = vec![node];
    cluster
        .config
        .services
        .kubelet
        .extra_args
        .entry("fail-swap-on".into())
        .or_insert_with(|| "false".into());
    crate::config::apply_defaults(&mut cluster.config, &cluster.catalog);
}

/// The links of a local-mode run: the daemon of `docker_host` (the `DOCKER_HOST` value).
pub fn links(
    cluster: &Cluster,
    ssh: &SshOptions,
    docker_host: Option<&str>,
) -> Result<Links, CliError> {
    let endpoint =
        DockerEndpoint::parse(docker_host).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(Links(Some(Arc::new(LocalLinks {
        endpoint,
        helper_image: cluster.config.system_images.alpine.clone(),
        registries: cluster.registry_credentials(),
        docker_timeout: ssh.docker_timeout,
    }))))
}

/// Readies the cluster of a local-mode or `--dind` command before it runs, and returns the
/// links its hosts are reached through (`None`: SSH).
pub async fn prepare(
    command: &Command,
    cluster: &mut Cluster,
    reporter: &Reporter,
) -> Result<Option<Links>, CliError> {
    match LinkMode::of_command(command)? {
        LinkMode::Ssh => Ok(None),
        LinkMode::Local => {
            localize(cluster);
            local_links(cluster).map(Some)
        }
        LinkMode::Dind { args, dry_run } => {
            let registries = cluster.registry_credentials();
            start_dind(
                &mut cluster.config.nodes,
                args,
                registries,
                dry_run,
                reporter,
            )
            .await
            .map(Some)
        }
    }
}

/// The links of a rollback in `mode`: its config is the one a run in that mode recorded, its
/// nodes made local or given their dind containers' IPs already, so they are checked rather
/// than made so again. The dind containers are those of `cluster_yml_nodes` (the nodes of
/// cluster.yml), started as `up --dind` starts them.
pub async fn prepare_recorded(
    mode: LinkMode<'_>,
    cluster: &Cluster,
    cluster_yml_nodes: Option<&[Node]>,
    reporter: &Reporter,
) -> Result<Option<Links>, CliError> {
    let recorded: Vec<&str> = cluster
        .config
        .nodes
        .iter()
        .map(|n| n.address.as_str())
        .collect();
    match mode {
        LinkMode::Ssh => Ok(None),
        LinkMode::Local if recorded == [LOCAL_ADDRESS] => local_links(cluster).map(Some),
        LinkMode::Local => Err(CliError::Failed(format!(
            "the run to roll back to was not an `up --local` (its nodes: {}): roll back \
             without --local",
            recorded.join(", ")
        ))),
        LinkMode::Dind { args, dry_run } => {
            let mut nodes = cluster_yml_nodes
                .ok_or_else(|| {
                    CliError::Failed(
                        "rollback --dind finds the node containers by the addresses of \
                         cluster.yml, which cannot be read"
                            .into(),
                    )
                })?
                .to_vec();
            let registries = cluster.registry_credentials();
            let links = start_dind(&mut nodes, args, registries, dry_run, reporter).await?;
            let running: Vec<&str> = nodes.iter().map(|n| n.address.as_str()).collect();
            match recorded.iter().find(|a| !running.contains(a)) {
                None => Ok(Some(links)),
                Some(missing) => Err(CliError::Failed(format!(
                    "node {missing} of the run to roll back to is none of the dind containers \
                     of cluster.yml's nodes (at {}): roll back with the cluster.yml of that \
                     run's nodes",
                    running.join(", ")
                ))),
            }
        }
    }
}

/// The links of a local-mode run: the daemon `DOCKER_HOST` names.
fn local_links(cluster: &Cluster) -> Result<Links, CliError> {
    let docker_host = std::env::var("DOCKER_HOST").ok();
    links(cluster, &SshOptions::default(), docker_host.as_deref())
}

/// Starts (or finds) each node's `rke-dind-<address>` container and makes its IP the node's
/// address, as RKE1 does (the hostname stays the address of cluster.yml).
async fn start_dind(
    nodes: &mut [Node],
    args: &LinkArgs,
    registries: Vec<crate::hosts::target::RegistryCredential>,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<Links, CliError> {
    let opts = DindOptions {
        image: args.dind_image.clone(),
        storage_driver: args.dind_storage_driver.clone(),
        dns_server: args.dind_dns_server.clone(),
        registries,
    };
    let docker_host = std::env::var("DOCKER_HOST").ok();
    let outer = Arc::new(
        DockerEndpoint::parse(docker_host.as_deref())
            .map_err(|e| CliError::Usage(e.to_string()))?,
    );
    let timeout = SshOptions::default().docker_timeout;
    let docker = dind::outer_client(&outer, timeout)
        .await
        .map_err(CliError::failed)?;
    let mut containers = HashMap::new();
    for node in nodes {
        let name = dind::container_name(&node.address);
        let ip = if dry_run {
            dind::node_ip(&docker, &node.address).await
        } else {
            dind::start_node(&docker, &node.address, &opts, Duration::from_secs(60)).await
        }
        .map_err(CliError::failed)?;
        reporter.info(format!("[dind] {name} runs on {outer} at {ip}"));
        if node.internal_address == node.address {
            node.internal_address = ip.clone();
        }
        node.address = ip.clone();
        containers.insert(ip, name);
    }
    Ok(Links(Some(Arc::new(DindLinks {
        outer,
        containers,
        docker_timeout: timeout,
    }))))
}

/// `remove --dind`, as RKE1: the node containers go (with their volumes), then the admin
/// kubeconfig, the state and (unless kept) its backups; nothing runs inside the nodes. Each
/// node's `/var/lib/kubelet-rke-dind-<address>` stays on the daemon's host, as with RKE1.
pub async fn remove_dind(
    cluster: &Cluster,
    keep_backups: bool,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), CliError> {
    // The dry run goes as far as the run without changing anything: the outer daemon is
    // reached and each container looked at, so it fails (and exits) where the run would.
    let docker_host = std::env::var("DOCKER_HOST").ok();
    let outer = Arc::new(
        DockerEndpoint::parse(docker_host.as_deref())
            .map_err(|e| CliError::Usage(e.to_string()))?,
    );
    let docker = dind::outer_client(&outer, SshOptions::default().docker_timeout)
        .await
        .map_err(CliError::failed)?;
    for node in &cluster.config.nodes {
        let name = dind::container_name(&node.address);
        if dry_run {
            let found = docker
                .inspect_container(&name)
                .await
                .map_err(CliError::failed)?;
            if found.is_some() {
                reporter.info(format!("[dind] would remove {name} on {outer}"));
            }
            continue;
        }
        dind::remove_node(&docker, &node.address)
            .await
            .map_err(CliError::failed)?;
        reporter.info(format!("[dind] removed {name} on {outer}"));
    }
    for path in crate::phases::remove::local_files_to_delete(cluster, keep_backups) {
        if dry_run {
            if path.exists() {
                reporter.info(format!("[local] would delete {}", path.display()));
            }
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => reporter.info(format!("[local] deleted {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(CliError::Failed(format!(
                    "cannot delete {}: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}
