//! The executor of `up`'s cluster actions (pseudo-host `cluster`, decided by
//! [`crate::diff::cluster`]): each applied through the Kubernetes API from the fields it
//! carries, with one `applied` event per action, exactly as [`super::executor`] reports a
//! host's actions. The phases choose when each runs (RBAC once the control plane answers,
//! nodes once their kubelets registered, addons last) and keep the health gates.

use crate::diff::Action;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::changeset::CLUSTER;
use crate::phases::executor::{ExecError, ExecFailure};

pub struct ClusterExecutor<'a> {
    pub api: &'a KubeApi,
    pub reporter: &'a Reporter,
    /// The authorization mode is RBAC: the RBAC objects beyond the job deployer's are applied.
    pub rbac: bool,
    /// The state JSON the state Secret gets (it holds keys: no action carries it).
    pub state_json: Option<&'a str>,
}

impl ClusterExecutor<'_> {
    /// Applies one action and reports it.
    pub async fn apply(&self, action: &Action) -> Result<(), ExecError> {
        let result = self.run(action).await;
        self.report(action, result)
    }

    /// Applies one action without reporting it, for a phase that runs several at once and
    /// reports them in their planned order.
    pub async fn run(&self, action: &Action) -> Result<(), ExecFailure> {
        let api = self.api;
        let failed = |e: &dyn std::fmt::Display| ExecFailure::Api(e.to_string());
        match action {
            Action::ApplyRbac { .. } => api.apply_authz(self.rbac).await.map_err(|e| failed(&e)),
            Action::SaveStateSecret { .. } => match self.state_json {
                Some(json) => api.save_state_secret(json).await.map_err(|e| failed(&e)),
                None => Err(ExecFailure::Missing("no state to save".into())),
            },
            // Turning encryption off rewrites them once the controlplane hosts applied their
            // part (an identity-first provider file, kube-apiserver restarted).
            Action::RewriteSecrets { .. } | Action::DisableEncryption { .. } => {
                crate::phases::encryption::rewrite_secrets(api, self.reporter)
                    .await
                    .map(drop)
                    .map_err(|e| failed(&e))
            }
            Action::SyncNode { sync, .. } => {
                // A node planned before its kubelet registered: wait for it.
                crate::kubeapi::find_node(api, &sync.hostname, 60)
                    .await
                    .map_err(|e| failed(&e))?;
                crate::kubeapi::sync_node(api, sync)
                    .await
                    .map(drop)
                    .map_err(|e| failed(&e))
            }
            Action::ApplyAddon { plan, .. } | Action::RemoveAddon { plan, .. } => {
                crate::phases::addons::apply_one(api, plan, self.reporter)
                    .await
                    .map_err(|e| failed(&e))
            }
            // A host's actions, or a day-2 command's (applied by their changesets).
            Action::PullImage { .. }
            | Action::CreateContainer { .. }
            | Action::RecreateContainer { .. }
            | Action::StartContainer { .. }
            | Action::RestartContainer { .. }
            | Action::RemoveContainer { .. }
            | Action::UploadFile { .. }
            | Action::RemoveFile { .. }
            | Action::SetFileMode { .. }
            | Action::AddEtcdMember { .. }
            | Action::AddEtcdLearner { .. }
            | Action::PromoteEtcdMember { .. }
            | Action::RemoveEtcdMember { .. }
            | Action::CleanDirectories { .. }
            | Action::DeleteNode { .. }
            | Action::CreateDirectories { .. }
            | Action::InstallWins { .. }
            | Action::StartWins { .. }
            | Action::SweepWindowsOrphans { .. }
            | Action::CleanWindowsHost { .. }
            | Action::EnsureCniDirectory { .. }
            | Action::WriteTmpfilesEntry { .. }
            | Action::WriteFileSet { .. }
            | Action::RestartAndCheck { .. }
            | Action::DeletePods { .. }
            | Action::WriteKubeconfig { .. }
            | Action::DeleteLocalFile { .. }
            | Action::CleanLogLinks { .. }
            | Action::RunOneShot { .. }
            | Action::CopySnapshotFrom { .. }
            | Action::RunUp { .. }
            | Action::FixEtcdPermissions { .. }
            | Action::LinkLogs { .. } => Err(ExecFailure::OwnStep("a host's executor")),
        }
    }

    /// Reports one applied cluster action, and turns its failure into the executor's error.
    pub fn report(
        &self,
        action: &Action,
        result: Result<(), ExecFailure>,
    ) -> Result<(), ExecError> {
        let result = result.map_err(|e| ExecError {
            host: CLUSTER.to_string(),
            action: action.to_string(),
            source: Box::new(e),
        });
        let error = result.as_ref().err().map(|e| e.to_string());
        self.reporter.applied(CLUSTER, action, error.as_deref());
        result
    }
}
