//! etcd snapshots (§26): `rkers etcd snapshot-save` ([`save`]) and `snapshot-restore`
//! ([`restore`]), each a list of steps the driver runs ([`crate::phases::driver`]); what they
//! decide is the core's [`rkers_core::diff::snapshot`].
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

mod error;
mod restore;
mod save;
#[cfg(test)]
mod tests;

pub use error::{RestorePlanProblem, SnapshotError};
pub use restore::{RestoreOptions, restore};
pub use rkers_core::diff::snapshot::{
    EtcdMember, RESTORE_DIR, SNAPSHOT_DIR, default_snapshot_name, effective_s3, etcd_members,
    initial_cluster, s3_location,
};
pub use save::{SaveOptions, member_snapshot_steps, save};

use crate::cluster::Cluster;
use crate::config::S3BackupConfig;
use crate::hosts::{Host, HostPool};
use crate::output::{Redactor, Reporter};
use crate::phases::executor::Executor;
use crate::plan;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rkers_core::diff::snapshot;
use std::time::Duration;

/// A snapshot name as given on the command line ([`snapshot::check_snapshot_name`]): the name
/// and an optional warning.
pub fn check_snapshot_name(name: &str) -> Result<(String, Option<String>), SnapshotError> {
    Ok(snapshot::check_snapshot_name(name)?)
}

/// The etcd members a command works on (at least one, else `none` is the error) and its S3
/// target (the command line's, else the config's), whose secret is masked from now on.
fn members_and_s3<'c>(
    cluster: &'c Cluster,
    from_cli: Option<&'c S3BackupConfig>,
    none: &str,
) -> Result<(Vec<EtcdMember>, Option<&'c S3BackupConfig>), SnapshotError> {
    let members = etcd_members(&cluster.config);
    if members.is_empty() {
        return Err(SnapshotError::Invalid(none.to_string()));
    }
    let s3 = effective_s3(&cluster.config.services.etcd, from_cli);
    if let Some(s3) = s3 {
        register_s3_secrets(s3, &cluster.redactor);
    }
    Ok((members, s3))
}

/// Masks the S3 secret (and its base64 form, which the helper's environment carries) in every
/// message rkers prints from now on.
pub fn register_s3_secrets(s3: &S3BackupConfig, redactor: &Redactor) {
    for secret in [&s3.secret_key, &STANDARD.encode(&s3.secret_key)] {
        redactor.register(secret);
    }
}

/// The image RKE1 runs its backup helpers with: the alpine (rke-tools) image, with the default
/// Kubernetes version's tag when it is `rancher/rke-tools` (§14.2, §33.9).
pub fn backup_image(cluster: &Cluster) -> String {
    plan::default_rke_tools(
        &cluster.config.system_images.alpine,
        cluster.default_rke_tools_tag().as_deref(),
    )
}

/// What both commands ask of the core: the snapshot, its helper image, etcd's settings and S3.
fn request<'a>(
    cluster: &'a Cluster,
    name: &'a str,
    image: &'a str,
    s3: Option<&'a S3BackupConfig>,
) -> snapshot::SnapshotRequest<'a> {
    snapshot::SnapshotRequest {
        name,
        image,
        etcd: &cluster.config.services.etcd,
        s3,
    }
}

fn prefix_of(cluster: &Cluster, host: &Host) -> String {
    plan::host_prefix_path(&cluster.config.prefix_path, &host.facts().operating_system)
}

fn helper_timeout(cluster: &Cluster) -> Duration {
    Duration::from_secs(snapshot::helper_timeout_secs(&cluster.config.services.etcd))
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
    .with_one_shot_timeout(helper_timeout(cluster))
}
