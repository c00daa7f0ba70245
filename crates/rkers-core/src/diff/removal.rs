//! `rkers remove` decided (§24.1): from what was found on each reachable host, the teardown
//! of every host at once, then the local files. Each host loses the RKE containers of its roles
//! (and the `old-<name>` one a failed replacement left), the contents of exactly the
//! directories RKE1 cleans that exist on it (Docker would create a missing bind source) and
//! the dangling log links (by the host's shell when its SSH user is root, else by RKE1's helper
//! containers, whose image is pulled only when the host lacks it). A Windows
//! worker is torn down through wins instead. The state file, its backups and the kubeconfig are
//! deleted only when every host was reached: a host left uncleaned still needs the cluster's
//! CA and keys for a retried `remove` or an `up` that adopts it.

use super::Action;
use crate::changeset::{Changeset, LOCAL, Pace};
use crate::config::RkeConfig;
use crate::plan;
use std::fmt;

/// Where the rke-tools entrypoints keep log links; RKE1's `rke-log-cleaner` drops the dangling
/// ones after a cleanup.
pub const RKE_LOG_DIR: &str = "/var/lib/rancher/rke/log";
/// The container that drops them.
pub const LOG_CLEANER: &str = "rke-log-cleaner";

/// Why every container of the teardown goes, as the dry run shows it.
const REASON: &str = "remove the cluster";
const POD_REASON: &str = "remove the cluster: a pod's container, left by the removed kubelet";

/// Whether a teardown's container removal is of a pod's container (after the RKE containers).
pub fn is_pod_container_removal(action: &Action) -> bool {
    matches!(action, Action::RemoveContainer { reason, .. } if reason == POD_REASON)
}

/// The stages of a removal, in the order they run; `Display` is the phase name shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovalStage {
    /// Every reachable host torn down, the hosts in parallel.
    Hosts,
    /// The state file, its backups and the admin kubeconfig deleted, one at a time.
    LocalFiles,
}

impl fmt::Display for RemovalStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RemovalStage::Hosts => "remove",
            RemovalStage::LocalFiles => "remove local files",
        })
    }
}

/// The roles of one host, from the config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    pub etcd: bool,
    pub controlplane: bool,
    pub worker: bool,
}

impl Roles {
    pub fn of(roles: &[String]) -> Roles {
        let has = |r: &str| roles.iter().any(|x| x == r);
        Roles {
            etcd: has("etcd"),
            controlplane: has("controlplane"),
            worker: has("worker"),
        }
    }

    fn union(self, other: Roles) -> Roles {
        Roles {
            etcd: self.etcd || other.etcd,
            controlplane: self.controlplane || other.controlplane,
            worker: self.worker || other.worker,
        }
    }
}

/// The hosts of the config, in config order, each once with the union of its roles.
pub fn hosts_to_clean(config: &RkeConfig) -> Vec<(String, Roles)> {
    let mut hosts: Vec<(String, Roles)> = Vec::new();
    for n in &config.nodes {
        let roles = Roles::of(&n.role);
        match hosts.iter_mut().find(|(a, _)| *a == n.address) {
            Some((_, r)) => *r = r.union(roles),
            None => hosts.push((n.address.clone(), roles)),
        }
    }
    hosts
}

/// The containers RKE1 removes from a host with these roles, in its order: worker plane, then
/// control plane, then etcd plane (the etcd plane only without external etcd).
pub fn containers_to_remove(roles: Roles, external_etcd: bool) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let mut add = |list: &[&'static str]| {
        for n in list {
            if !names.contains(n) {
                names.push(n);
            }
        }
    };
    if roles.worker {
        add(&[
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::NGINX_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    if roles.controlplane {
        add(&[
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    if roles.etcd && !external_etcd {
        add(&[
            plan::ETCD,
            plan::ETCD_ROLLING_SNAPSHOTS,
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::NGINX_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    names
}

/// The directories whose contents RKE1's `kube-cleaner` deletes on every host, whatever its
/// roles (`CleanUpAll`, §24.1), and cri-dockerd's: nothing else is touched. RKE1 left
/// `/var/lib/cri-dockerd` (its pods' sandbox checkpoints) behind, so a cluster built later on
/// the host found the removed cluster's sandboxes there; only `remove` reads this list, so no
/// container of an adopted cluster changes for it.
pub fn directories_to_clean(prefix: &str, external_etcd: bool) -> Vec<String> {
    let p = |path: &str| plan::join_path(&[prefix, path]);
    let mut dirs = vec![
        p("/etc/kubernetes"),
        "/etc/cni".to_string(),
        "/opt/cni".to_string(),
        "/var/run/calico".to_string(),
        p("/etc/kubernetes/.tmp"),
        p("/var/lib/cni"),
        p("/var/lib/cri-dockerd"),
    ];
    if !external_etcd {
        dirs.push(p("/var/lib/etcd"));
    }
    dirs
}

/// What a host's teardown depends on, known before looking at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// A Linux host with these roles; `prefix` is its prefix path.
    Linux { roles: Roles, prefix: String },
    /// A Windows worker, torn down through wins.
    Windows,
}

/// A Windows worker's teardown, as `up` does it for a host that left (wins unregistered too).
fn windows_teardown() -> plan::WindowsRemovePlan {
    plan::remove_plan_windows(plan::WINDOWS_PREFIX_PATH, true)
}

/// The containers to look for on a host, in the order they are removed.
pub fn containers_to_find(kind: &HostKind, external_etcd: bool) -> Vec<String> {
    match kind {
        HostKind::Linux { roles, .. } => containers_to_remove(*roles, external_etcd)
            .into_iter()
            .flat_map(|n| [n.to_string(), format!("{}{n}", plan::OLD_PREFIX)])
            .collect(),
        HostKind::Windows => windows_teardown().containers,
    }
}

/// The directories to look for on a host (those to clean, then the log links' one); none on a
/// Windows worker, whose teardown does not depend on them.
pub fn directories_to_find(kind: &HostKind, external_etcd: bool) -> Vec<String> {
    match kind {
        HostKind::Linux { prefix, .. } => {
            let mut dirs = directories_to_clean(prefix, external_etcd);
            dirs.push(RKE_LOG_DIR.to_string());
            dirs
        }
        HostKind::Windows => Vec::new(),
    }
}

/// A reachable host as observe found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundHost {
    pub address: String,
    pub kind: HostKind,
    /// Those of [`containers_to_find`] it has, in that order.
    pub containers: Vec<String>,
    /// The containers kubelet's runtime made for pods, running or not (Linux hosts).
    pub pod_containers: Vec<String>,
    /// Those of [`directories_to_find`] that exist on it, in that order.
    pub directories: Vec<String>,
    /// Whether it has the cleaner image already (not asked of a Windows worker).
    pub has_cleaner_image: bool,
    /// Its SSH user is root: its own shell cleans it, with no helper container.
    pub shell_is_root: bool,
}

/// The images the teardown runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanerImages {
    /// RKE1's cleaner (the alpine image), on Linux hosts.
    pub linux: String,
    /// Runs a Windows worker's privileged step (the sidekick image, as RKE1 uses on Windows).
    pub windows: String,
}

/// One host's teardown, in RKE1's order: its containers, then its directories and its dangling
/// log links: by its own shell when its SSH user is root, else by helper containers (pulling
/// the cleaner image first when the host lacks it).
pub fn host_teardown(host: &FoundHost, images: &CleanerImages) -> Vec<Action> {
    let mut actions: Vec<Action> = host
        .containers
        .iter()
        .map(|name| Action::RemoveContainer {
            name: name.clone(),
            reason: REASON.into(),
        })
        .collect();
    // After kubelet (with cri-dockerd inside it) is gone, so nothing starts them again. RKE1
    // left them running (§24.1): workloads, flannel and CoreDNS kept serving on a host that
    // was no longer a node, holding its ports and mounts.
    actions.extend(
        host.pod_containers
            .iter()
            .map(|name| Action::RemoveContainer {
                name: name.clone(),
                reason: POD_REASON.into(),
            }),
    );
    if host.kind == HostKind::Windows {
        let teardown = windows_teardown();
        actions.push(Action::CleanWindowsHost {
            directories: teardown.directories,
            unregister_wins: teardown.unregister_wins,
            image: images.windows.clone(),
        });
        return actions;
    }
    let log_dir = host.directories.iter().any(|d| d == RKE_LOG_DIR);
    let dirs: Vec<String> = host
        .directories
        .iter()
        .filter(|d| *d != RKE_LOG_DIR)
        .cloned()
        .collect();
    if host.shell_is_root {
        if !dirs.is_empty() || log_dir {
            actions.push(Action::CleanAsRoot {
                paths: dirs,
                log_dir: log_dir.then(|| RKE_LOG_DIR.to_string()),
            });
        }
        return actions;
    }
    if (!dirs.is_empty() || log_dir) && !host.has_cleaner_image {
        actions.push(Action::PullImage {
            image: images.linux.clone(),
        });
    }
    if !dirs.is_empty() {
        actions.push(Action::CleanDirectories { paths: dirs });
    }
    if log_dir {
        actions.push(Action::CleanLogLinks {
            dir: RKE_LOG_DIR.to_string(),
            image: images.linux.clone(),
        });
    }
    actions
}

/// The removal: every found host's teardown, all hosts at once; then, only when every host of
/// the config was reached, the local files that exist (`local_files`, in the order given).
pub fn remove_cluster(
    hosts: &[FoundHost],
    images: &CleanerImages,
    every_host_reached: bool,
    local_files: &[String],
) -> Changeset<RemovalStage> {
    let mut changes = Changeset::default();
    for host in hosts {
        for action in host_teardown(host, images) {
            changes.push(RemovalStage::Hosts, Pace::Parallel, &host.address, action);
        }
    }
    if every_host_reached {
        for path in local_files {
            changes.push(
                RemovalStage::LocalFiles,
                Pace::OneAtATime,
                LOCAL,
                Action::DeleteLocalFile { path: path.clone() },
            );
        }
    }
    changes
}

#[cfg(test)]
#[path = "removal_tests.rs"]
mod tests;
