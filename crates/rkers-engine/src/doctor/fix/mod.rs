//! `rkers doctor --fix CHECK` and `--restore-webhooks`: the safe repairs, each printed before
//! it runs, as lists of steps the driver runs ([`crate::phases::driver`]). Configurations
//! Kubernetes or rkers' addons install are never touched.
//!
//! `--fix calico-runtime`:
//! 1. [`load`]: the chosen hosts (every host, or those of `--host`);
//! 2. [`observe`]: each connected and probed: its calico directories and tmpfiles.d entry
//!    (a host that cannot be reached or read is named at the end); the nodes whose check passed
//!    are said to need nothing ([`record::calico_planned`]);
//! 3. decide: the core's [`rkers_core::diff::doctor_fix::calico_fix`], pure, in [`decide`];
//! 4. [`apply`]: the broken nodes one after the other: owner, mode and entry written by a
//!    helper container binding exactly those paths, the node probed again; then each fixed
//!    node's calico-node pod deleted if it is not ready, so it starts now rather than after
//!    its back-off;
//! 5. [`record`]: the command fails naming every host not fixed.
//!
//! `--fix flannel-nat`:
//! 1. [`load`]: the chosen hosts (every host, or those of `--host`);
//! 2. [`observe`]: the API server and the flannel (or canal) DaemonSet (the fix deletes pods
//!    through the API, so it refuses without them); each host connected and its nat table read
//!    as `rkers doctor` reads it, with the node's flannel pod;
//! 3. decide: [`rkers_core::diff::doctor_fix::flannel_fix`], pure; a broken node with no
//!    flannel pod is named and not fixed;
//! 4. [`apply`]: the broken nodes one after the other: the node's flannel pod deleted, then its
//!    successor Ready and the node's `FLANNEL-POSTRTG` chain back waited for before the next;
//! 5. [`record`]: the command fails naming every host not fixed.
//!
//! `--fix webhooks`:
//! 1. [`observe`]: the API server, the CNI, the webhooks that block its pods, the removable
//!    configurations read, and the backup an earlier fix left;
//! 2. decide: [`rkers_core::diff::doctor_fix::fix_webhooks`]; the protected configurations are
//!    warned about ([`record::webhooks_planned`]);
//! 3. [`apply`]: the backup written next to the state, then the configurations deleted, the
//!    CNI DaemonSets woken and their pods waited for, and how to restore said;
//! 4. [`record`]: the command fails when only protected configurations block.
//!
//! `--restore-webhooks`:
//! 1. [`observe`]: the backup read (the API server is reached only to apply);
//! 2. decide: [`rkers_core::diff::doctor_fix::restore_webhooks`];
//! 3. [`apply`]: each configuration created again, one that exists kept as it is;
//! 4. [`record`]: the backup renamed `*.restored`.

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

pub use error::FixError;

use super::run::DoctorOptions;
use crate::cluster::Cluster;
use crate::hosts::SshTarget;
use crate::output::Reporter;
use crate::phases::driver::{Command, Driver, Links, OnFailure};
use rkers_core::changeset::Changeset;
use rkers_core::diff::doctor_fix::{
    CalicoStage, FlannelStage, Protected, RestoreStage, WebhookStage,
};
use std::path::PathBuf;
use std::time::Duration;

/// How long `--fix webhooks` waits for the CNI pods.
pub const CNI_WAIT: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FixCheck {
    /// Incident 1: calico's runtime directories and their tmpfiles.d entry.
    #[value(name = "calico-runtime")]
    CalicoRuntime,
    /// Incident 2: a node's lost `FLANNEL-POSTRTG` chain, written again by a new flannel pod.
    #[value(name = "flannel-nat")]
    FlannelNat,
    /// Incident 3: webhooks that block pod creation in kube-system or the CNI's namespace.
    #[value(name = "webhooks")]
    Webhooks,
}

/// Where `--fix webhooks` keeps the removed configurations: next to the state file.
pub fn backup_path(cluster: &Cluster) -> PathBuf {
    let state = &cluster.files.state_path;
    let stem = state
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("cluster");
    state.with_file_name(format!("{stem}.webhooks-backup.json"))
}

/// `--fix CHECK`; with `dry_run`, what it would change, per host, and nothing changed.
pub async fn fix(
    cluster: &Cluster,
    check: FixCheck,
    opts: &DoctorOptions,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), FixError> {
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run,
        concurrency: opts.ssh.concurrency,
    };
    match check {
        FixCheck::CalicoRuntime => {
            let mut command = load::calico(cluster, opts, dry_run, reporter)?;
            driver.run(&mut command).await
        }
        FixCheck::FlannelNat => {
            let mut command = load::flannel(cluster, opts, dry_run, reporter)?;
            driver.run(&mut command).await
        }
        FixCheck::Webhooks => driver.run(&mut load::webhooks(cluster, reporter)).await,
    }
}

/// `--restore-webhooks`: creates every configuration of the backup that does not exist, then
/// renames the backup to `*.restored`.
pub async fn restore_webhooks(
    cluster: &Cluster,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), FixError> {
    let driver = Driver {
        reporter: reporter.clone(),
        dry_run,
        concurrency: 1,
    };
    driver.run(&mut load::restore(cluster, reporter)).await
}

/// `--fix calico-runtime`, once loaded.
struct CalicoFix<'c> {
    cluster: &'c Cluster,
    opts: &'c DoctorOptions,
    reporter: Reporter,
    dry_run: bool,
    targets: Vec<SshTarget>,
    /// The nodes whose check passed: node name and the check's verdict.
    healthy: Vec<(String, String)>,
    /// The hosts not fixed, each with its line: those observe could not read, then those the
    /// repair failed on.
    failures: Vec<(String, String)>,
}

impl<'c> Command for CalicoFix<'c> {
    type Stage = CalicoStage;
    type Observed = observe::CalicoFound;
    type Applier = apply::CalicoRepairer<'c>;
    type Error = FixError;

    async fn observe(&mut self, links: &mut Links) -> Result<observe::CalicoFound, FixError> {
        observe::calico(self, links).await
    }

    fn decide(&self, found: &observe::CalicoFound) -> Result<Changeset<CalicoStage>, FixError> {
        Ok(decide::calico(self, found))
    }

    fn planned(&mut self, changes: &Changeset<CalicoStage>) {
        record::calico_planned(self, changes)
    }

    async fn applier(
        &mut self,
        found: observe::CalicoFound,
    ) -> Result<apply::CalicoRepairer<'c>, FixError> {
        Ok(apply::calico(self, &found).await)
    }

    fn stage_failed(
        &mut self,
        _stage: &CalicoStage,
        failures: &[(String, String)],
    ) -> OnFailure<FixError> {
        self.failures.extend_from_slice(failures);
        OnFailure::Continue
    }

    fn verdict(&mut self) -> Result<(), FixError> {
        record::calico_verdict(self)
    }
}

/// `--fix flannel-nat`, once loaded.
struct FlannelFix<'c> {
    cluster: &'c Cluster,
    opts: &'c DoctorOptions,
    reporter: Reporter,
    dry_run: bool,
    targets: Vec<SshTarget>,
    /// The nodes whose check passed: node name and the check's verdict.
    healthy: Vec<(String, String)>,
    /// What observe found on each node it read.
    nodes: Vec<rkers_core::diff::doctor_fix::FlannelNode>,
    /// The hosts not fixed, each with its line: those observe could not read, the broken ones
    /// with no flannel pod, then those whose chain did not come back.
    failures: Vec<(String, String)>,
}

impl<'c> Command for FlannelFix<'c> {
    type Stage = FlannelStage;
    type Observed = observe::FlannelFound;
    type Applier = apply::FlannelRestarter<'c>;
    type Error = FixError;

    async fn observe(&mut self, links: &mut Links) -> Result<observe::FlannelFound, FixError> {
        observe::flannel(self, links).await
    }

    fn decide(&self, found: &observe::FlannelFound) -> Result<Changeset<FlannelStage>, FixError> {
        Ok(decide::flannel(found))
    }

    fn planned(&mut self, changes: &Changeset<FlannelStage>) {
        record::flannel_planned(self, changes)
    }

    async fn applier(
        &mut self,
        found: observe::FlannelFound,
    ) -> Result<apply::FlannelRestarter<'c>, FixError> {
        Ok(apply::flannel(self, found))
    }

    fn stage_failed(
        &mut self,
        _stage: &FlannelStage,
        failures: &[(String, String)],
    ) -> OnFailure<FixError> {
        self.failures.extend_from_slice(failures);
        OnFailure::Continue
    }

    fn verdict(&mut self) -> Result<(), FixError> {
        record::flannel_verdict(self)
    }
}

/// `--fix webhooks`, once loaded.
struct WebhookFix<'c> {
    cluster: &'c Cluster,
    reporter: Reporter,
    /// The blocking configurations left alone, with who installed them.
    kept: Vec<Protected>,
    /// Whether the plan removes nothing.
    nothing: bool,
}

impl Command for WebhookFix<'_> {
    type Stage = WebhookStage;
    type Observed = observe::WebhooksFound;
    type Applier = apply::WebhookRemover;
    type Error = FixError;

    async fn observe(&mut self, _links: &mut Links) -> Result<observe::WebhooksFound, FixError> {
        observe::webhooks(self).await
    }

    fn decide(&self, found: &observe::WebhooksFound) -> Result<Changeset<WebhookStage>, FixError> {
        decide::webhooks(self, found)
    }

    fn planned(&mut self, changes: &Changeset<WebhookStage>) {
        record::webhooks_planned(self, changes)
    }

    async fn applier(
        &mut self,
        found: observe::WebhooksFound,
    ) -> Result<apply::WebhookRemover, FixError> {
        Ok(apply::webhooks(self, &found))
    }

    fn stage_failed(
        &mut self,
        _stage: &WebhookStage,
        failures: &[(String, String)],
    ) -> OnFailure<FixError> {
        OnFailure::StopWith(record::cluster_failed(failures))
    }

    fn verdict(&mut self) -> Result<(), FixError> {
        record::webhooks_verdict(self)
    }
}

/// `--restore-webhooks`, once loaded.
struct Restore<'c> {
    cluster: &'c Cluster,
    reporter: Reporter,
    path: PathBuf,
}

impl Command for Restore<'_> {
    type Stage = RestoreStage;
    type Observed = Vec<serde_json::Value>;
    type Applier = apply::Restorer;
    type Error = FixError;

    async fn observe(&mut self, _links: &mut Links) -> Result<Vec<serde_json::Value>, FixError> {
        observe::backup(&self.path)
    }

    fn decide(&self, items: &Vec<serde_json::Value>) -> Result<Changeset<RestoreStage>, FixError> {
        decide::restore(self, items)
    }

    async fn applier(
        &mut self,
        _items: Vec<serde_json::Value>,
    ) -> Result<apply::Restorer, FixError> {
        apply::restorer(self).await
    }

    fn stage_failed(
        &mut self,
        _stage: &RestoreStage,
        failures: &[(String, String)],
    ) -> OnFailure<FixError> {
        OnFailure::StopWith(record::cluster_failed(failures))
    }

    fn finish(&mut self) -> Result<(), FixError> {
        record::restore_finish(self)
    }
}
