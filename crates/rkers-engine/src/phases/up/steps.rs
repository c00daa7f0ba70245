//! What applies `up`'s steps ([`UpStep`], decided in the core): each step is a function of its
//! own file, called here in the order the driver hands the steps over. What one step hands a
//! later one (the API client RBAC opens, the state the save step wrote, the early kubelets'
//! background task) is kept here, not in the shared [`Run`].

use super::run::{CONTROL_PLANE, Run, WORKER_PLANE};
use super::{UpError, cluster, etcd, etcd_members, files, nodes, planes, removed_hosts, rolling};
use super::{snapshot, windows};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::kubeapi::KubeApi;
use crate::phases::Runner;
use crate::phases::driver::{ApplyStep, StepFailure};
use crate::state::StateFile;
use futures::future::BoxFuture;
use rkers_core::changeset::Stage;
use rkers_core::diff::up::UpStep;
use std::sync::Arc;
use tokio::task::JoinSet;

/// `up`'s applier: the run, and what its steps hand each other.
pub(super) struct Apply<'c> {
    pub(super) cluster: &'c Cluster,
    pub(super) run: Arc<Run>,
    /// The cluster.yml the previous run applied; `None` for a new cluster.
    pub(super) old_current: Option<Box<RkeConfig>>,
    /// The desired state, until the save step records it.
    pub(super) state: Option<StateFile>,
    /// The state the save step recorded, which the last step keeps for `rkers rollback`.
    pub(super) saved: Option<StateFile>,
    /// The API client the RBAC step opened, for the steps after it.
    pub(super) api: Option<KubeApi>,
    /// A new cluster's hosts whose kubelets start early, the worker-only ones among them (they
    /// pull their images in the background task) and the others (they start theirs first).
    pub(super) early: Vec<String>,
    pub(super) worker_only: Vec<String>,
    pub(super) with_planes: Vec<String>,
    /// The early kubelets' task; aborted when `up` ends early.
    pub(super) early_task: JoinSet<Result<(), UpError>>,
    /// The early kubelets' own budget: hosts waiting for kubelet must not hold back etcd.
    pub(super) concurrency: usize,
}

impl<'c> Apply<'c> {
    pub(super) fn new(
        cluster: &'c Cluster,
        run: Run,
        old_current: Option<Box<RkeConfig>>,
        state: StateFile,
        concurrency: usize,
    ) -> Self {
        let (early, worker_only) = match old_current {
            None => planes::early_worker_hosts(&run),
            Some(_) => (Vec::new(), Vec::new()),
        };
        let with_planes = early
            .iter()
            .filter(|h| !worker_only.contains(h))
            .cloned()
            .collect();
        Apply {
            cluster,
            run: Arc::new(run),
            old_current,
            state: Some(state),
            saved: None,
            api: None,
            early,
            worker_only,
            with_planes,
            early_task: JoinSet::new(),
            concurrency,
        }
    }

    fn old(&self, step: UpStep) -> Result<&RkeConfig, UpError> {
        self.old_current.as_deref().ok_or(UpError::StepOutOfOrder {
            step,
            needs: "an existing cluster's config",
        })
    }

    fn api(&self, step: UpStep) -> Result<&KubeApi, UpError> {
        self.api.as_ref().ok_or(UpError::StepOutOfOrder {
            step,
            needs: "authz",
        })
    }

    /// One step's future, boxed on its own: in a debug build one `async fn` over every step
    /// keeps a stack slot for each step's future in one frame (157 KiB of the 2 MiB thread
    /// `e2e_api` overflowed), below everything the running step calls.
    fn step<'s>(
        &'s mut self,
        step: UpStep,
        runner: &'s Runner,
    ) -> BoxFuture<'s, Result<(), UpError>> {
        let (cluster, run) = (self.cluster, self.run.clone());
        match step {
            UpStep::BeforeChanges => Box::pin(async move {
                snapshot::apply_before_changes(&run, runner).await?;
                cluster::delete_addon_leftovers(&run, &run.reporter).await
            }),
            UpStep::DisableEncryption => {
                Box::pin(async move { cluster::disable_encryption(&run, &run.reporter).await })
            }
            UpStep::Files => Box::pin(async move {
                files::apply_files(&run, runner).await?;
                Ok(cluster.write_admin_kubeconfig(&run.bundle, &run.reporter)?)
            }),
            // etcd and control plane hosts pull first, so they never queue behind the workers
            // at a registry; the worker-only hosts of a new cluster pull in the early task.
            UpStep::Images => {
                Box::pin(async move { files::pull_images(&run, runner, &self.worker_only).await })
            }
            UpStep::EarlyKubelets => Box::pin(self.start_early_kubelets(runner)),
            UpStep::Wins => Box::pin(async move { windows::prepare_windows(&run, runner).await }),
            UpStep::EtcdMembersLeave => {
                Box::pin(async move { etcd_members::remove_etcd_members(&run, runner).await })
            }
            UpStep::EtcdMembersJoin => {
                Box::pin(async move { etcd_members::join_etcd_members(&run, runner).await })
            }
            // kube-apiserver retries etcd itself: a new cluster starts both at once and waits
            // for their health after.
            UpStep::StartEtcdAndControlPlane => {
                Box::pin(async move { planes::start_etcd_and_control_plane(&run, runner).await })
            }
            UpStep::EtcdPlane => Box::pin(async move { etcd::etcd_plane(&run, runner).await }),
            UpStep::ControlPlaneAndAuthz => Box::pin(async move {
                let plane = planes::plane(&run, runner, "control plane", CONTROL_PLANE, |h| {
                    h.roles.controlplane
                });
                let authz = async {
                    let api = cluster::admin_api(cluster).await?;
                    cluster::api_lets_rbac_in(&api, &run).await?;
                    cluster::authz(api, &run).await
                };
                let (plane, authz) = futures::join!(plane, authz);
                plane?;
                self.api = Some(authz?);
                Ok(())
            }),
            // Through the API server the cluster already has, within upgrade_strategy's budgets.
            UpStep::UpgradeControlPlane => Box::pin(async move {
                let old = self.old(step)?;
                let upgrade_api = cluster::existing_api(cluster).await?;
                rolling::upgrade_control_plane(cluster, old, &run, runner, upgrade_api.as_ref())
                    .await
            }),
            UpStep::Authz => Box::pin(async move {
                let api = cluster::admin_api(cluster).await?;
                self.api = Some(cluster::authz(api, &run).await?);
                Ok(())
            }),
            UpStep::RewriteSecrets => Box::pin(async move { cluster::rewrite_secrets(&run).await }),
            UpStep::UpgradeWorkerPlane => Box::pin(async move {
                let old = self.old(step)?;
                rolling::upgrade_worker_plane(cluster, old, &run, runner, self.api.as_ref()).await
            }),
            UpStep::SaveState => Box::pin(async move {
                let state = self.state.take().ok_or(UpError::StepOutOfOrder {
                    step,
                    needs: "the state load (it ran twice)",
                })?;
                self.saved = Some(cluster::save_state(cluster, state, &run).await?);
                Ok(())
            }),
            UpStep::NodeRegistration => Box::pin(async move {
                if let Some(early) = self.early_task.join_next().await {
                    early??;
                }
                if !self.early.is_empty() {
                    let api = self.api(step)?;
                    cluster::wait_registered(&run, &self.early, api, &run.reporter).await;
                }
                Ok(())
            }),
            // kube-proxy everywhere, and the worker components of etcd and control plane hosts.
            UpStep::WorkerPlane => Box::pin(async move {
                planes::plane(&run, runner, "worker plane", WORKER_PLANE, |_| true).await
            }),
            UpStep::Nodes => Box::pin(async move { nodes::sync_nodes(&run).await }),
            UpStep::RemovedHosts => {
                Box::pin(async move { removed_hosts::remove_hosts(&run, runner).await })
            }
            UpStep::LogLinks => Box::pin(async move { nodes::link_logs(&run, runner).await }),
            UpStep::Addons => Box::pin(async move {
                let api = self.api(step)?;
                crate::phases::addons::deploy_addons(
                    cluster,
                    &run.addons,
                    &run.cluster_actions,
                    &run.exec,
                    api,
                )
                .await?;
                Ok(())
            }),
            UpStep::FinishState => Box::pin(async move {
                let saved = self.saved.take().ok_or(UpError::StepOutOfOrder {
                    step,
                    needs: "save state",
                })?;
                cluster::finish_state(cluster, saved, &run)
            }),
        }
    }

    /// A new cluster's kubelets: etcd and control plane hosts start theirs now, before their
    /// etcd and control plane, so each host applies its actions in the order the dry run lists
    /// them; their health is waited for in the background, alongside etcd, where the
    /// worker-only hosts pull their images and start theirs meanwhile.
    async fn start_early_kubelets(&mut self, runner: &Runner) -> Result<(), UpError> {
        let run = &self.run;
        if !self.with_planes.is_empty() {
            planes::start_early_worker_plane(
                run,
                runner,
                "kubelets on etcd and control plane hosts",
                self.with_planes.clone(),
            )
            .await?;
        }
        if !self.early.is_empty() {
            let early_runner = Runner::new(run.reporter.clone(), self.concurrency);
            early_runner.probe_failed_hosts(run.pool.hosts());
            self.early_task.spawn(planes::early_worker_plane(
                run.clone(),
                early_runner,
                "kubelets",
                self.early.clone(),
                self.worker_only.clone(),
                self.with_planes.clone(),
            ));
        }
        Ok(())
    }
}

impl ApplyStep<UpStep, UpError> for Apply<'_> {
    async fn apply_step<'s>(
        &'s mut self,
        stage: &'s Stage<UpStep>,
        runner: &'s Runner,
    ) -> Result<(), StepFailure<UpError>> {
        self.step(stage.phase, runner)
            .await
            .map_err(StepFailure::Command)
    }
}
