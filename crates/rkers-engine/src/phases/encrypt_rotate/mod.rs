//! `rkers encrypt rotate-key` (§23) as a list of steps the driver runs
//! ([`crate::phases::driver`]), in this order:
//!
//! 1. [`load`]: before any host, the config allows a rotation, the state and the keys the
//!    cluster runs with, and the rotation to make (or the one to finish);
//! 2. [`observe`]: the controlplane hosts connected, and whether each has the helper image;
//! 3. decide: the core's [`rkers_core::diff::key_rotation::rotate_key`], pure, in
//!    [`decide`];
//! 4. [`apply`]: the executor the stages run through, with the admin kubeconfig's API;
//! 5. [`record`]: after each stage, the state saved once a provider file is written
//!    everywhere (so an interrupted rotation resumes with the same keys), the warnings and
//!    errors of failed stages, and the last save.

#![allow(
    rustdoc::private_intra_doc_links,
    reason = "the list of steps above links to the private step modules it names"
)]

mod apply;
mod decide;
mod error;
mod load;
mod observe;
mod record;

pub use error::RotateKeyError;

use crate::cluster::Cluster;
use crate::hosts::SshOptions;
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use crate::phases::executor::Executor;
use crate::state::StateFile;
use rkers_core::changeset::Changeset;
use rkers_core::diff::key_rotation::{Rotation, RotationStage};

pub struct RotateOptions {
    pub dry_run: bool,
    pub agent_override: bool,
    pub ssh: SshOptions,
}

/// `rkers encrypt rotate-key`: `[new, old]` first (new writes use the new key, both
/// decrypt), every Secret rewritten, then `[new]` alone; the state is saved after each step.
pub async fn rotate_key(
    cluster: &Cluster,
    opts: &RotateOptions,
    reporter: &Reporter,
) -> Result<(), RotateKeyError> {
    let mut command = load::rotation(cluster, opts, reporter)?;
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run: opts.dry_run,
        concurrency: opts.ssh.concurrency,
    };
    driver.run(&mut command).await
}

/// The command, once loaded: what its steps share.
struct RotateKey<'c> {
    cluster: &'c Cluster,
    opts: &'c RotateOptions,
    reporter: Reporter,
    /// The state as loaded, then as each step recorded it.
    state: StateFile,
    rotation: Rotation,
}

impl Command for RotateKey<'_> {
    type Stage = RotationStage;
    type Observed = observe::Controlplane;
    type Applier = Executor<'static>;
    type Error = RotateKeyError;

    async fn observe(
        &mut self,
        links: &mut Links,
    ) -> Result<observe::Controlplane, RotateKeyError> {
        observe::controlplane(self, links).await
    }

    fn decide(
        &self,
        observed: &observe::Controlplane,
    ) -> Result<Changeset<RotationStage>, RotateKeyError> {
        Ok(decide::changeset(self, observed))
    }

    async fn applier(
        &mut self,
        observed: observe::Controlplane,
    ) -> Result<Executor<'static>, RotateKeyError> {
        apply::executor(self, &observed).await
    }

    fn stage_done(&mut self, stage: &RotationStage, exec: &Executor) -> Result<(), RotateKeyError> {
        record::stage_done(self, stage, exec)
    }

    fn stage_failed(
        &mut self,
        stage: &RotationStage,
        failures: &[(String, String)],
    ) -> OnFailure<RotateKeyError> {
        record::stage_failed(self, stage, failures)
    }

    fn finish(&mut self) -> Result<(), RotateKeyError> {
        record::finish(self)
    }
}
