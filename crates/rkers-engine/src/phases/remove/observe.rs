//! Step 2: every reachable host at once, what its teardown depends on (the RKE containers it
//! has, which directories to clean exist, whether its SSH user is root, whether it has the
//! cleaner image), read without changing it; and the local files that exist.

use super::{Remove, RemoveError};
use crate::cluster::Cluster;
use crate::hosts::{Host, HostPool};
use crate::plan;
use futures::future::{try_join_all, try_join3};
use rkers_core::diff::removal::{self, FoundHost, HostKind};
use std::path::PathBuf;

/// The reachable hosts, what was found on each and the local files to delete that exist.
pub(super) struct Found {
    pub pool: HostPool,
    pub hosts: Vec<FoundHost>,
    pub local_files: Vec<String>,
}

pub(super) async fn hosts(command: &mut Remove<'_>) -> Result<Found, RemoveError> {
    let pool = command
        .pool
        .take()
        .ok_or_else(|| RemoveError::Hosts(vec![("every host".into(), "not connected".into())]))?;
    let cluster = command.cluster;
    let config = &cluster.config;
    let external_etcd = !config.services.etcd.external_urls.is_empty();
    let image = &config.system_images.alpine;
    let reachable: Vec<(String, &std::sync::Arc<Host>, HostKind)> = removal::hosts_to_clean(config)
        .into_iter()
        .filter_map(|(address, roles)| {
            let host = pool.get(&address)?;
            let kind = match host.platform() {
                plan::Platform::Windows => HostKind::Windows,
                plan::Platform::Linux => {
                    let os = &host.facts().operating_system;
                    let prefix = plan::host_prefix_path(&config.prefix_path, os);
                    HostKind::Linux { roles, prefix }
                }
            };
            Some((address, host, kind))
        })
        .collect();
    let hosts = try_join_all(
        reachable
            .into_iter()
            .map(|(address, host, kind)| find(address, host, kind, external_etcd, image)),
    )
    .await?;
    let local_files = local_files_to_delete(cluster, command.opts.keep_backups)
        .into_iter()
        .filter(|p| cluster.files.storage.exists(p))
        .map(|p| p.display().to_string())
        .collect();
    Ok(Found {
        pool,
        hosts,
        local_files,
    })
}

/// One host, each thing asked at once; a Windows worker is asked only for its containers.
async fn find(
    address: String,
    host: &Host,
    kind: HostKind,
    external_etcd: bool,
    image: &str,
) -> Result<FoundHost, RemoveError> {
    let names = removal::containers_to_find(&kind, external_etcd);
    let dirs = removal::directories_to_find(&kind, external_etcd);
    let present = async {
        let seen = try_join_all(names.iter().map(|n| host.docker().inspect_container(n))).await?;
        Ok::<_, RemoveError>(
            names
                .iter()
                .zip(seen)
                .filter_map(|(n, c)| c.map(|_| n.clone()))
                .collect(),
        )
    };
    let has_image = async {
        // The cleaner is a Linux image.
        if !host.platform().runs_linux_helpers() {
            return Ok(false);
        }
        host.docker()
            .image_exists(image)
            .await
            .map_err(RemoveError::from)
    };
    let pods = async {
        if matches!(kind, HostKind::Windows) {
            return Ok(Vec::new());
        }
        host.docker()
            .pod_container_names()
            .await
            .map_err(RemoveError::from)
    };
    let ((containers, pod_containers), (directories, shell_is_root), has_cleaner_image) =
        try_join3(
            futures::future::try_join(present, pods),
            existing_directories_and_root(host, &dirs),
            has_image,
        )
        .await?;
    Ok(FoundHost {
        address,
        kind,
        containers,
        pod_containers,
        directories,
        has_cleaner_image,
        shell_is_root,
    })
}

/// The subset of `dirs` that exists on the host, asked over SSH so nothing is created, and
/// whether the user the commands run as is root (then the host's shell cleans them).
async fn existing_directories_and_root(
    host: &Host,
    dirs: &[String],
) -> Result<(Vec<String>, bool), RemoveError> {
    if dirs.is_empty() {
        return Ok((Vec::new(), false));
    }
    let script = format!(
        "echo \"{UID_LINE}$(id -u)\"; for d in {}; do [ -d \"$d\" ] && echo \"$d\"; done; true",
        shell_words::join(dirs)
    );
    let out = host
        .link()
        .exec(&script)
        .await
        .map_err(RemoveError::ListDirectories)?;
    let stdout = out.stdout_str();
    let shell_is_root = stdout.lines().any(|l| l == format!("{UID_LINE}0"));
    Ok((
        dirs.iter()
            .filter(|d| stdout.lines().any(|p| p == *d))
            .cloned()
            .collect(),
        shell_is_root,
    ))
}

/// Starts the line that gives the user's id (no directory path starts with it).
const UID_LINE: &str = "uid=";

/// The local files `remove` deletes: the kubeconfig, the state and, unless kept, the state's
/// backups, each of which holds every private key of the removed cluster.
pub fn local_files_to_delete(cluster: &Cluster, keep_backups: bool) -> Vec<PathBuf> {
    let mut paths = vec![
        cluster.files.kubeconfig_path.clone(),
        cluster.files.state_path.clone(),
    ];
    if !keep_backups {
        paths.extend(crate::state::list_backups(&cluster.files.state_path).unwrap_or_default());
    }
    paths
}
