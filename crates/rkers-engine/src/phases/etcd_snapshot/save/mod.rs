//! `rkers etcd snapshot-save` (§26.1) as a list of steps the driver runs
//! ([`crate::phases::driver`]), in this order:
//!
//! 1. [`load`]: before any host, the etcd members of the config and the S3 target (its secret
//!    registered with the redactor);
//! 2. [`observe`]: the local state file, the members connected (one that cannot be reached is
//!    left out and named), whether each one's etcd runs and it has the helper image;
//! 3. decide: the core's [`rkers_core::diff::snapshot::save_snapshot`], pure, in [`decide`];
//!    the members left out are said ([`record::planned`]); `--dry-run` prints it and stops;
//! 4. [`apply`]: every member one after the other, each to its end whatever the others did;
//! 5. [`record`]: the command fails only when no member saved the snapshot, as RKE1's did.
//!
//! It also holds the per-member steps `up` reuses for its pre-run snapshot
//! ([`member_snapshot_steps`]).

mod apply;
mod decide;
mod load;
mod observe;
mod record;

use super::{SnapshotError, backup_image, prefix_of, request};
use crate::cluster::Cluster;
use crate::config::S3BackupConfig;
use crate::diff::Action;
use crate::hosts::{Host, SshOptions};
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::{self, EtcdMember, SaveStage};

pub struct SaveOptions {
    pub name: String,
    pub s3: Option<S3BackupConfig>,
    pub ssh: SshOptions,
    pub agent_override: bool,
    pub dry_run: bool,
}

/// `rkers etcd snapshot-save` (§26.1): on every etcd host, one after the other, the local state
/// file is put beside the snapshot and `etcd-snapshot-once` takes, zips and (with S3) uploads it.
/// Hosts that cannot be reached, whose etcd is not running, or that fail are named; the command
/// fails only when no host saved the snapshot, as RKE1's did.
pub async fn save(
    cluster: &Cluster,
    opts: &SaveOptions,
    reporter: &Reporter,
) -> Result<(), SnapshotError> {
    let mut command = load::save(cluster, opts, reporter)?;
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run: opts.dry_run,
        concurrency: opts.ssh.concurrency,
    };
    driver.run(&mut command).await
}

/// What saving snapshot `name` takes on one member whose etcd runs
/// ([`snapshot::member_snapshot`]), asking the host whether it has the helper image.
pub async fn member_snapshot_steps(
    cluster: &Cluster,
    host: &Host,
    member: &EtcdMember,
    name: &str,
    state: Option<&[u8]>,
    s3: Option<&S3BackupConfig>,
) -> Result<Vec<Action>, crate::hosts::HostError> {
    let image = backup_image(cluster);
    let has_image = host.docker().image_exists(&image).await?;
    let request = request(cluster, name, &image, s3);
    Ok(snapshot::member_snapshot(
        &request,
        member,
        &prefix_of(cluster, host),
        has_image,
        state,
    ))
}

/// The command, once loaded: what its steps share.
struct Save<'c> {
    cluster: &'c Cluster,
    opts: &'c SaveOptions,
    reporter: Reporter,
    members: Vec<EtcdMember>,
    s3: Option<&'c S3BackupConfig>,
    image: String,
    /// The members without the snapshot, with why: those observe left out, then those that
    /// failed.
    failures: Vec<(String, String)>,
    /// How many members the plan has save it.
    planned: usize,
}

impl Command for Save<'_> {
    type Stage = SaveStage;
    type Observed = observe::Found;
    type Applier = apply::Saver;
    type Error = SnapshotError;

    async fn observe(&mut self, links: &mut Links) -> Result<observe::Found, SnapshotError> {
        observe::members(self, links).await
    }

    fn decide(&self, found: &observe::Found) -> Result<Changeset<SaveStage>, SnapshotError> {
        Ok(decide::changeset(self, found))
    }

    fn planned(&mut self, changes: &Changeset<SaveStage>) {
        record::planned(self, changes)
    }

    async fn applier(&mut self, found: observe::Found) -> Result<apply::Saver, SnapshotError> {
        Ok(apply::saver(self, &found))
    }

    fn stage_failed(
        &mut self,
        _stage: &SaveStage,
        failures: &[(String, String)],
    ) -> OnFailure<SnapshotError> {
        record::stage_failed(self, failures)
    }

    fn verdict(&mut self) -> Result<(), SnapshotError> {
        record::verdict(self)
    }

    fn finish(&mut self) -> Result<(), SnapshotError> {
        record::finish(self)
    }
}
