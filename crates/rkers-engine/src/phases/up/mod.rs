//! `rkers up`: RKE1's workflow (§9) as a list of steps over one SSH connection per host, run by
//! the driver ([`crate::phases::driver`]) like every command; each step lives in its own file:
//!
//! 1. `state`: certificates generated or reconciled; the desired state is written before any
//!    host is touched (§9.1).
//! 2. `connect`: every host at once; any host that cannot be reached stops the run before
//!    anything changes, with every host's problem listed (RKE1 silently dropped them, §33.18).
//! 3. `plan` and `observe`: the desired containers and files of each host (pure), compared
//!    with what each host runs and holds (`host_actions`), and what the cluster holds through
//!    its API (`cluster_actions`); the result is the list of actions `--dry-run` prints
//!    (`dry_run`), after the checks that may still refuse the run (`plan::confirm`). Which
//!    apply steps run, and in which order, is the core's decision
//!    ([`rkers_core::diff::up::up_steps`]); `steps` applies each through its file.
//! 4. apply: first what comes before any change (`snapshot`: the etcd snapshot a change to
//!    etcd or the control plane takes, stale `old-…` containers), then `files` and certificates, images, Windows hosts' wins (`windows`), the etcd
//!    plane (`etcd_members`, `etcd`), the control plane (`planes`, `rolling`), RBAC and
//!    the current state (`cluster`; on an existing cluster after the worker plane, so a failed
//!    worker leaves the last healthy state), the worker plane, node labels and taints and log links
//!    (`nodes`), hosts that left (`removed_hosts`), in RKE1's order, hosts in parallel where
//!    safe; last, once all went well, the state this run replaced kept for `rkers rollback`
//!    (`cluster`). `containers` brings one container to its planned state.

mod cluster;
mod cluster_actions;
mod connect;
mod containers;
mod dry_run;
mod error;
mod etcd;
mod etcd_members;
mod files;
mod free_ports;
mod host_actions;
mod host_files;
mod nodes;
mod observe;
mod plan;
mod planes;
mod removed_apis;
mod removed_hosts;
mod rolling;
mod run;
mod snapshot;
mod state;
mod steps;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_etcd;
mod windows;

pub use error::UpError;
pub(crate) use host_files::{etc_kubernetes, host_files, kubernetes_view_map};

use crate::cluster::Cluster;
use crate::hosts::SshOptions;
use crate::output::Reporter;
use crate::phases::PhaseError;
use crate::phases::driver::{Command, Driver, Links};
use rkers_core::changeset::Changeset;
use rkers_core::diff::up::{UpStep, up_steps};
use std::path::PathBuf;

pub struct UpOptions {
    pub dry_run: bool,
    pub force: bool,
    pub disable_port_check: bool,
    pub custom_certs: Option<PathBuf>,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    /// `--ignore-docker-version` given on the command line; otherwise the config's value counts.
    pub ignore_docker_version_flag: bool,
    pub ssh: SshOptions,
    /// `--yes`: adopt a cluster whose state rkers did not write without asking.
    pub yes: bool,
    /// Asks the operator to confirm the adoption summary it is shown; `None` when nobody can be
    /// asked (no terminal), and then only `yes` adopts.
    pub confirm: Option<crate::phases::adoption::ConfirmAdoption>,
    /// `--ignore-blocking-webhooks`: go on although a webhook blocks system pods.
    pub ignore_blocking_webhooks: bool,
    /// `--ignore-removed-apis`: go on with a minor change although the target minor stops
    /// serving API versions the cluster uses.
    pub ignore_removed_apis: bool,
    /// `--dind`: the plan takes RKE1's docker-in-docker flags.
    pub dind: bool,
    /// `--no-snapshot`: no etcd snapshot before a change to etcd or the control plane.
    pub no_snapshot: bool,
    /// `--node-ready-timeout`: how long an upgraded worker's node may take to be Ready again
    /// before its previous containers are put back; `None`: 180 s.
    pub node_ready_timeout: Option<std::time::Duration>,
    /// `rkers rollback --restore-snapshot`: etcd was just restored from the snapshot taken
    /// while the older minor ran, so going back a minor is what is asked, not a mistake.
    pub minor_back_from_snapshot: bool,
}

/// `rkers up`: its steps, through the driver.
pub async fn up(cluster: &Cluster, opts: &UpOptions, reporter: &Reporter) -> Result<(), UpError> {
    Up::new(cluster, opts, reporter)
        .run(opts.dry_run)
        .await
        .map(|_| ())
}

/// `up --dry-run` that also hands back the changeset it showed, for the library API's plan.
pub async fn plan_actions(
    cluster: &Cluster,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Result<Vec<crate::diff::HostActions>, UpError> {
    Up::new(cluster, opts, reporter).run(true).await
}

/// The command, as the driver runs it.
struct Up<'c> {
    cluster: &'c Cluster,
    opts: &'c UpOptions,
    reporter: Reporter,
    /// The states the run starts from and its connections, from connect to observe.
    loaded: Option<state::Loaded>,
    connected: Option<connect::Connected>,
    /// What the dry run showed.
    shown: Vec<crate::diff::HostActions>,
}

/// What `up` observed: the states it starts from, and its plan against what the hosts and the
/// cluster hold.
struct Found {
    loaded: state::Loaded,
    planned: plan::Planned,
}

impl<'c> Up<'c> {
    fn new(cluster: &'c Cluster, opts: &'c UpOptions, reporter: &Reporter) -> Self {
        Up {
            cluster,
            opts,
            reporter: reporter.clone(),
            loaded: None,
            connected: None,
            shown: Vec::new(),
        }
    }

    async fn run(mut self, dry_run: bool) -> Result<Vec<crate::diff::HostActions>, UpError> {
        let driver = Driver {
            reporter: self.reporter.clone(),
            dry_run,
            concurrency: self.opts.ssh.concurrency,
        };
        // Boxed: the driver's future for `up` is one of the program's largest (in a
        // debug build), and a library caller may hold several at once in its own future.
        Box::pin(driver.run(&mut self)).await?;
        Ok(self.shown)
    }
}

impl<'c> Command for Up<'c> {
    type Stage = UpStep;
    type Observed = Found;
    type Applier = steps::Apply<'c>;
    type Error = UpError;

    /// Steps 1 and 2, state and connect. A new cluster's certificates (every RSA key: the
    /// longest part of its state) are made on a thread of their own while the hosts connect;
    /// any other run's (reconciled with the state's, or read from the cert dir) first, so a
    /// problem with them stops the run before any host is touched.
    async fn connect(&mut self, links: &mut Links) -> Result<(), UpError> {
        let phase = self.reporter.phase("state");
        let (started, job) = state::start(self.cluster, self.opts)?;
        let ready = if job.generates_everything() {
            Err(job)
        } else {
            Ok(job.make()?)
        };
        let certificates = async move {
            let made = match ready {
                Ok(made) => made,
                Err(job) => tokio::task::spawn_blocking(move || job.make()).await??,
            };
            phase.done();
            Ok::<_, UpError>(made)
        };
        let connecting = connect::connect(
            self.cluster,
            self.opts,
            started.old_current(),
            &started.encryption_config,
            &self.reporter,
        );
        let (made, connected) = futures::join!(certificates, connecting);
        // A problem with the certificates comes first, as it did when they were made before
        // connecting: it is the run's own input.
        let loaded = state::loaded(self.cluster, started, made?);
        let connected = connected?;
        links.keep(connected.pool.hosts());
        if let Some(removed) = &connected.removed_pool {
            links.keep(removed.hosts());
        }
        self.loaded = Some(loaded);
        self.connected = Some(connected);
        Ok(())
    }

    /// 3. plan and observe.
    async fn observe(&mut self, _links: &mut Links) -> Result<Found, UpError> {
        let (Some(loaded), Some(connected)) = (self.loaded.take(), self.connected.take()) else {
            return Err(UpError::StepOutOfOrder {
                step: UpStep::BeforeChanges,
                needs: "connect",
            });
        };
        let planned =
            plan::plan(self.cluster, self.opts, &loaded, connected, &self.reporter).await?;
        Ok(Found { loaded, planned })
    }

    fn decide(&self, observed: &Found) -> Result<Changeset<UpStep>, UpError> {
        Ok(up_steps(observed.loaded.old_current.is_some()))
    }

    async fn confirm(&mut self, observed: &Found) -> Result<(), UpError> {
        plan::confirm(
            self.cluster,
            self.opts,
            &observed.loaded,
            &observed.planned,
            &self.reporter,
        )
        .await
    }

    fn show(&mut self, observed: &Found, _steps: &Changeset<UpStep>, reporter: &Reporter) {
        dry_run::show(self.cluster, &observed.loaded, &observed.planned, reporter);
        self.shown = observed.planned.shown.clone();
    }

    /// Written only now, once no check refused the run and the adoption (if any) is confirmed,
    /// and still before any host changes (§9.1): a run that refuses leaves the state file as
    /// it was.
    async fn applier(&mut self, observed: Found) -> Result<steps::Apply<'c>, UpError> {
        let Found {
            mut loaded,
            planned,
        } = observed;
        // What the cluster ran until now, which `rkers rollback` goes back to once this run
        // finishes.
        loaded.state.keep_rollback_candidate();
        state::save_desired_state(self.cluster, &loaded.state, &self.reporter)?;
        let mut run = run::Run::new(planned, &self.cluster.files, &self.reporter);
        if let Some(timeout) = self.opts.node_ready_timeout {
            run.node_ready_timeout = timeout;
        }
        Ok(steps::Apply::new(
            self.cluster,
            run,
            loaded.old_current,
            loaded.state,
            self.opts.ssh.concurrency,
        ))
    }

    fn finish(&mut self) -> Result<(), UpError> {
        self.reporter
            .info("Finished building Kubernetes cluster successfully");
        Ok(())
    }
}

/// Ends a phase with the outcome of its hosts.
fn finish(phase: crate::output::PhaseGuard, result: Result<(), PhaseError>) -> Result<(), UpError> {
    match result {
        Ok(()) => {
            phase.done();
            Ok(())
        }
        Err(e) => {
            phase.fail(&e.to_string());
            Err(e.into())
        }
    }
}
