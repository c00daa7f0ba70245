//! `rkers cert rotate` (§25) as a list of steps the driver runs ([`crate::phases::driver`]),
//! in this order:
//!
//! 1. [`load`]: before any host, the webhook guard, then (phase `state`) the bundle rotated
//!    (`pki::rotate_bundle`, §25.1) from the desired state;
//! 2. [`connect`]: every host (phase `connect`); one unreachable host stops the run before
//!    anything changes;
//! 3. [`observe`]: the plan `up` would make for these hosts, each host's files as found and
//!    which of the containers that read a changed file exist;
//! 4. decide: the core's [`rkers_core::diff::cert_rotation::rotate_certs`], pure, in
//!    [`decide`]; `--dry-run` prints it and stops;
//! 5. [`apply`]: the state saved with the new bundle as desired (the current state still names
//!    what the containers run with), and the executor the stages run through;
//! 6. [`record`]: once the admin kubeconfig is rewritten, the new bundle becomes the current
//!    state, before the state Secret stores it. A run stopped anywhere before that leaves the
//!    old bundle as current, so the next `cert rotate` (or `up`) still restarts every container
//!    whose files changed. A failed state Secret only warns, as in RKE1.

#![allow(
    rustdoc::private_intra_doc_links,
    reason = "the list of steps above links to the private step modules it names"
)]

mod apply;
mod connect;
mod decide;
mod error;
mod load;
mod observe;
mod record;

pub use error::RotateError;
pub use rkers_core::diff::cert_rotation::CA_CACHING_POD_LABELS;

use crate::cluster::Cluster;
use crate::hosts::{HostPool, SshOptions};
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use crate::phases::executor::Executor;
use crate::pki::{Bundle, PkiSpec, RotateService};
use crate::state::StateFile;
use rkers_core::changeset::Changeset;
use rkers_core::diff::cert_rotation::CertStage;

pub struct RotateOptions {
    pub dry_run: bool,
    /// `--service`; empty means every service.
    pub services: Vec<RotateService>,
    pub rotate_ca: bool,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
    /// `--ignore-blocking-webhooks`: restart system pods although a webhook blocks them.
    pub ignore_blocking_webhooks: bool,
}

/// `rkers cert rotate`: new certificates into the state, onto the hosts, and the containers
/// that read them restarted.
pub async fn cert_rotate(
    cluster: &Cluster,
    opts: &RotateOptions,
    reporter: &Reporter,
) -> Result<(), RotateError> {
    let mut command = load::rotation(cluster, opts, reporter).await?;
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run: opts.dry_run,
        concurrency: opts.ssh.concurrency,
    };
    driver.run(&mut command).await
}

/// The command, once loaded: what its steps share.
struct CertRotate<'c> {
    cluster: &'c Cluster,
    opts: &'c RotateOptions,
    reporter: Reporter,
    /// The state with the rotated bundle as desired, then as each step recorded it.
    state: StateFile,
    /// The bundle the containers were last started with (the current state's).
    loaded_bundle: Bundle,
    spec: PkiSpec,
    /// The hosts, once connected; observe takes them over.
    pool: Option<HostPool>,
}

impl Command for CertRotate<'_> {
    type Stage = CertStage;
    type Observed = observe::Found;
    type Applier = Executor<'static>;
    type Error = RotateError;

    async fn connect(&mut self, links: &mut Links) -> Result<(), RotateError> {
        self.pool = Some(connect::every_host(self, links).await?);
        Ok(())
    }

    async fn observe(&mut self, _links: &mut Links) -> Result<observe::Found, RotateError> {
        observe::hosts(self).await
    }

    fn decide(&self, found: &observe::Found) -> Result<Changeset<CertStage>, RotateError> {
        decide::changeset(self, found)
    }

    async fn applier(&mut self, found: observe::Found) -> Result<Executor<'static>, RotateError> {
        apply::executor(self, &found)
    }

    fn stage_done(&mut self, stage: &CertStage, exec: &Executor) -> Result<(), RotateError> {
        record::stage_done(self, stage, exec)
    }

    fn stage_failed(
        &mut self,
        stage: &CertStage,
        failures: &[(String, String)],
    ) -> OnFailure<RotateError> {
        record::stage_failed(self, stage, failures)
    }

    fn finish(&mut self) -> Result<(), RotateError> {
        self.reporter
            .info("Finished rotating certificates successfully");
        Ok(())
    }
}
