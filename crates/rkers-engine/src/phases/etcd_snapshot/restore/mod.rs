//! `rkers etcd snapshot-restore` (§26.3, in the safer order of [`super`]'s doc) as a list of
//! steps the driver runs ([`crate::phases::driver`]), in this order:
//!
//! 1. [`load`]: before any host, the etcd members, the local state file (its certificates;
//!    the state stored in the archive is not read), the S3 target with its secret masked;
//! 2. [`observe`]: every host connected (one that cannot be reached stops the restore before
//!    anything changes), the first member with the snapshot when it is shared, which images
//!    each member lacks and which of the replaced containers each host has;
//! 3. decide: the core's [`rkers_core::diff::snapshot::restore_snapshot`], pure, in
//!    [`decide`]; the member whose copy is shared is said ([`record::planned`]); `--dry-run`
//!    prints it and stops;
//! 4. [`apply`]: the snapshot shared, then restored into the scratch directory everywhere
//!    (the checksums must agree; on a failure the scratch directories go again), then the data
//!    replaced, then `up`;
//! 5. [`record`]: each failure worded by what it cost: nothing yet, etcd stopped, or only the
//!    final `up`.

mod apply;
mod decide;
mod load;
mod observe;
mod record;

use super::SnapshotError;
use crate::cluster::Cluster;
use crate::config::S3BackupConfig;
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use crate::phases::up::{UpError, UpOptions};
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::{EtcdMember, RestoreStage};
use std::sync::{Arc, Mutex};

pub struct RestoreOptions {
    pub name: String,
    pub s3: Option<S3BackupConfig>,
    pub up: UpOptions,
    pub dry_run: bool,
}

/// `rkers etcd snapshot-restore --name N` (§26.3, in the safer order of this module's doc).
/// The local state file provides the certificates: the state stored in the archive is not read.
pub async fn restore(
    cluster: &Cluster,
    opts: &RestoreOptions,
    reporter: &Reporter,
) -> Result<(), SnapshotError> {
    let mut command = load::restore(cluster, opts, reporter)?;
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run: opts.dry_run,
        concurrency: opts.up.ssh.concurrency,
    };
    driver.run(&mut command).await
}

/// The command, once loaded: what its steps share.
struct Restore<'c> {
    cluster: &'c Cluster,
    opts: &'c RestoreOptions,
    reporter: Reporter,
    members: Vec<EtcdMember>,
    s3: Option<&'c S3BackupConfig>,
    image: String,
    /// `up`'s error as it is, for the command's own (the executor reports its text).
    up_failure: Arc<Mutex<Option<Arc<UpError>>>>,
}

impl<'c> Command for Restore<'c> {
    type Stage = RestoreStage;
    type Observed = observe::Found;
    type Applier = apply::Restorer<'c>;
    type Error = SnapshotError;

    async fn observe(&mut self, links: &mut Links) -> Result<observe::Found, SnapshotError> {
        observe::hosts(self, links).await
    }

    fn decide(&self, found: &observe::Found) -> Result<Changeset<RestoreStage>, SnapshotError> {
        decide::changeset(self, found)
    }

    fn plan_failure(&self, error: &SnapshotError) -> String {
        record::plan_failure(error)
    }

    fn planned(&mut self, changes: &Changeset<RestoreStage>) {
        record::planned(self, changes)
    }

    async fn applier(
        &mut self,
        found: observe::Found,
    ) -> Result<apply::Restorer<'c>, SnapshotError> {
        Ok(apply::restorer(self, &found))
    }

    fn stage_failed(
        &mut self,
        stage: &RestoreStage,
        failures: &[(String, String)],
    ) -> OnFailure<SnapshotError> {
        record::stage_failed(self, stage, failures)
    }

    fn finish(&mut self) -> Result<(), SnapshotError> {
        record::finish(self)
    }
}
