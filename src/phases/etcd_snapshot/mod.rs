//! etcd snapshots (§26): `rkers etcd snapshot-save` and `snapshot-restore`.
//!
//! Both drive the rke-tools helper `rke-etcd-backup` in one-shot containers on the etcd hosts,
//! as RKE1 does, so the archives are RKE1's: `/opt/rke/etcd-snapshots/<name>.zip` holding
//! `/backup/<name>` (the etcd snapshot) and `/etc/kubernetes/<name>.rkestate` (the cluster state).
//! S3 transfers happen inside that helper too: the rolling-snapshot container must upload by
//! itself while rkers is not running, so the one S3 implementation lives there and the one-shot
//! commands reuse it. The S3 keys reach the helper only through its environment (base64, as
//! RKE1); they are registered with the output redactor and never appear in rkers' messages.
//!
//! Restore differs from RKE1 in its order, to keep a bad snapshot from costing the cluster: every
//! etcd host first fetches and unpacks the snapshot and runs `etcdctl snapshot restore` into the
//! scratch directory while the cluster keeps running; only when that worked everywhere (and the
//! snapshot is the same on every host) are etcd and the control plane removed, the restored data
//! moved into place and the cluster brought back by `up`'s own flow. RKE1 cleaned every node
//! (kubelets included) before finding out whether the snapshot restores; the worker plane is
//! kept here, its kubelets reconnect to the restored API.

use crate::cluster::{Cluster, ClusterError};
use crate::config::{EtcdService, RkeConfig, S3BackupConfig};
use crate::diff::Action;
use crate::hosts::{self, ContainerSpec, Host, HostPool, SshOptions};
use crate::output::{Redactor, Reporter};
use crate::phases::changeset::{self, Changeset, FileWrite, Pace};
use crate::phases::executor::Executor;
use crate::phases::up::{UpError, UpOptions};
use crate::plan;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where snapshots live on the hosts (not prefix-aware, as in RKE1), and the restore scratch.
pub const SNAPSHOT_DIR: &str = "/opt/rke/etcd-snapshots";
pub const RESTORE_DIR: &str = "/opt/rke/etcd-snapshots-restore";
const HELPER: &str = "/opt/rke-tools/rke-etcd-backup";
const SNAPSHOT_ONCE: &str = "etcd-snapshot-once";
const DOWNLOAD: &str = "etcd-download-backup";
const RESTORE: &str = "etcd-restore";
const RESTORE_MOVE: &str = "etcd-restore-move";
const RESTORE_CLEAN: &str = "etcd-restore-clean";
/// RKE1's `backup_config.timeout` default for one-shot helpers.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Containers removed before the restored data goes in; `up` recreates them.
const REPLACED: &[&str] = &[
    plan::ETCD_ROLLING_SNAPSHOTS,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
    plan::ETCD,
];

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Invalid(String),
    /// Hosts that cannot be reached stop a restore before anything changes.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] crate::hosts::HostProblems),
    #[error("{0}")]
    Host(#[source] Box<crate::hosts::HostError>),
    #[error("[etcd] snapshot {name} was not saved on any etcd host:\n{}", listed(.failures))]
    NotSaved {
        name: String,
        failures: Vec<(String, String)>,
    },
    /// The restore could not be planned; `detail` names the host.
    #[error("[etcd] cannot restore snapshot {name}; the cluster was left as it was: {detail}")]
    RestorePlan { name: String, detail: String },
    #[error(
        "[etcd] cannot restore snapshot {name}; the cluster was left as it was:\n{}",
        changeset::list_failures(.failures)
    )]
    RestoreAborted {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] restoring snapshot {name} failed after etcd was stopped:\n{}\nrun `rkers etcd snapshot-restore` again or `rkers up`",
        changeset::list_failures(.failures)
    )]
    RestoreFailed {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] snapshot {name} was restored into etcd, but bringing the cluster back failed: {cause}\nrun `rkers up` to finish"
    )]
    Up {
        name: String,
        #[source]
        cause: UpError,
    },
}

impl From<crate::hosts::HostError> for SnapshotError {
    fn from(e: crate::hosts::HostError) -> Self {
        SnapshotError::Host(Box::new(e))
    }
}

impl crate::error::HostContext for SnapshotError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            SnapshotError::Host(e) => vec![e.host()],
            SnapshotError::NotSaved { failures, .. }
            | SnapshotError::RestoreAborted { failures, .. }
            | SnapshotError::RestoreFailed { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            SnapshotError::Unreachable(e) => crate::error::HostContext::hosts(e),
            SnapshotError::Up { cause, .. } => crate::error::HostContext::hosts(cause),
            SnapshotError::Cluster(_)
            | SnapshotError::Invalid(_)
            | SnapshotError::RestorePlan { .. } => Vec::new(),
        }
    }
}

/// One line per host that failed.
fn listed(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(h, e)| format!("  - host {h}: {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

mod restore;
mod save;
mod specs;
#[cfg(test)]
mod tests;

pub use restore::{RestoreOptions, restore};
pub use save::{SaveOptions, member_snapshot_steps, s3_location, save};
pub use specs::*;

/// The image RKE1 runs its backup helpers with: the alpine (rke-tools) image, with the default
/// Kubernetes version's tag when it is `rancher/rke-tools` (§14.2, §33.9).
pub fn backup_image(cluster: &Cluster) -> String {
    plan::default_rke_tools(
        &cluster.config.system_images.alpine,
        cluster.default_rke_tools_tag().as_deref(),
    )
}

fn timeout_of(etcd: &EtcdService) -> Duration {
    etcd.backup_config
        .as_ref()
        .filter(|b| b.timeout > 0)
        .map_or(DEFAULT_TIMEOUT, |b| Duration::from_secs(b.timeout as u64))
}

fn prefix_of(cluster: &Cluster, host: &Host) -> String {
    plan::host_prefix_path(&cluster.config.prefix_path, &host.facts().operating_system)
}

/// Runs a one-shot helper; a non-zero exit is an error carrying its last log lines.
async fn run_helper(
    host: &Host,
    container: &str,
    spec: &ContainerSpec,
    image_registries: &[hosts::target::RegistryCredential],
    timeout: Duration,
) -> Result<String, String> {
    host.docker()
        .ensure_image(&spec.image, image_registries, &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    host.docker()
        .run_to_success(container, spec, timeout)
        .await
        .map_err(|e| e.to_string())
}

/// The executor of a snapshot command's actions: uploads and copies with `cert_downloader`,
/// the one-shot containers with the etcd service's timeout.
fn executor<'a>(cluster: &Cluster, pool: &HostPool, reporter: &Reporter) -> Executor<'a> {
    Executor::new(
        reporter,
        &cluster.config.system_images.cert_downloader,
        cluster.registry_credentials(),
    )
    .with_hosts(pool.hosts())
    .with_one_shot_timeout(timeout_of(&cluster.config.services.etcd))
}

/// The checksum `etcd-restore` printed on `host`.
fn restore_digest(exec: &Executor<'_>, host: &str) -> Option<String> {
    exec.one_shot_log(host, RESTORE)?
        .lines()
        .find_map(|l| l.trim().strip_prefix("sha256 ").map(str::to_string))
}

/// Adds `PullImage` for `image` on `host` when the host does not have it.
async fn pull_if_missing(
    changes: &mut Changeset,
    stage: &str,
    host: &Host,
    image: &str,
) -> Result<(), crate::hosts::HostError> {
    if !host.docker().image_exists(image).await? {
        changes.push(
            stage,
            Pace::OneAtATime,
            host.name(),
            Action::PullImage {
                image: image.to_string(),
            },
        );
    }
    Ok(())
}
