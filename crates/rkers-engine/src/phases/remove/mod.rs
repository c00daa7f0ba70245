//! `rkers remove`: RKE1's full teardown (§24.1) as a list of steps the driver runs
//! ([`crate::phases::driver`]), in this order:
//!
//! 1. [`connect`]: every host at once (phase `connect`); a host that cannot be reached is
//!    warned about and left out, the others are cleaned;
//! 2. [`observe`]: every reachable host at once, what its teardown depends on (its RKE
//!    containers, the directories to clean that exist, whether it has the cleaner image), and
//!    the local files that exist;
//! 3. decide: the core's [`rkers_core::diff::removal::remove_cluster`], pure, in [`decide`];
//!    the warnings about kept files follow it ([`record::planned`]); `--dry-run` prints it and
//!    stops;
//! 4. [`apply`]: every host's teardown at once, each host's containers (and the cleaner
//!    image) at once, then its directories and log links; then the local files;
//! 5. [`record`]: a host that failed keeps every local file and fails the command; a local
//!    file that cannot be deleted only warns.
//!
//! Differences from RKE1, on purpose:
//! - a host that cannot be reached is named in the error and the command fails, while every
//!   other host is still cleaned (RKE1 skipped such hosts with a warning and reported success);
//! - when any host was not reached or any host step failed, the state file, its backups and
//!   the kubeconfig are all kept, so the cluster's certificates stay available for a retried
//!   `remove` or a later `up` that adopts the leftover host (RKE1 deleted them whatever
//!   happened);
//! - an `old-<name>` container a failed replacement left (RKE1's rename before a recreate) goes
//!   with `<name>`;
//! - only directories that exist are mounted into the cleaner, so cleaning never creates empty
//!   directories on a host (Docker creates a missing bind source).

#![allow(
    rustdoc::private_intra_doc_links,
    reason = "the list of steps above links to the private step modules it names"
)]

mod apply;
mod connect;
mod decide;
mod error;
mod observe;
mod record;

pub use error::RemoveError;
pub use observe::local_files_to_delete;
pub use rkers_core::diff::removal::LOG_CLEANER;

use crate::cluster::Cluster;
use crate::hosts::{HostPool, SshOptions};
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use rkers_core::changeset::Changeset;
use rkers_core::diff::removal::RemovalStage;

pub struct RemoveOptions {
    pub dry_run: bool,
    /// Keep the state file's backups (they hold every private key of the removed cluster).
    pub keep_backups: bool,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
}

/// `rkers remove`: every host torn down, then the local files.
pub async fn remove(
    cluster: &Cluster,
    opts: &RemoveOptions,
    reporter: &Reporter,
) -> Result<(), RemoveError> {
    let mut command = Remove {
        cluster,
        opts,
        reporter: reporter.clone(),
        pool: None,
        failures: Vec::new(),
        deletes_local_files: false,
    };
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run: opts.dry_run,
        concurrency: opts.ssh.concurrency,
    };
    driver.run(&mut command).await
}

/// The command, as its steps share it.
struct Remove<'c> {
    cluster: &'c Cluster,
    opts: &'c RemoveOptions,
    reporter: Reporter,
    /// The reachable hosts, once connected; observe takes them over.
    pool: Option<HostPool>,
    /// The hosts not reached, then those whose teardown failed, with why.
    failures: Vec<(String, String)>,
    /// Whether the plan deletes local files (a failed host then keeps them, and says so).
    deletes_local_files: bool,
}

impl Command for Remove<'_> {
    type Stage = RemovalStage;
    type Observed = observe::Found;
    type Applier = apply::Teardown;
    type Error = RemoveError;

    async fn connect(&mut self, links: &mut Links) -> Result<(), RemoveError> {
        self.pool = Some(connect::reachable_hosts(self, links).await?);
        Ok(())
    }

    async fn observe(&mut self, _links: &mut Links) -> Result<observe::Found, RemoveError> {
        observe::hosts(self).await
    }

    fn decide(&self, found: &observe::Found) -> Result<Changeset<RemovalStage>, RemoveError> {
        Ok(decide::changeset(self, found))
    }

    fn planned(&mut self, changes: &Changeset<RemovalStage>) {
        record::planned(self, changes)
    }

    async fn applier(&mut self, found: observe::Found) -> Result<apply::Teardown, RemoveError> {
        Ok(apply::teardown(self, &found))
    }

    fn stage_failed(
        &mut self,
        stage: &RemovalStage,
        failures: &[(String, String)],
    ) -> OnFailure<RemoveError> {
        record::stage_failed(self, stage, failures)
    }

    fn verdict(&mut self) -> Result<(), RemoveError> {
        record::verdict(self)
    }

    fn finish(&mut self) -> Result<(), RemoveError> {
        record::finish(self)
    }
}

#[cfg(test)]
mod tests;
