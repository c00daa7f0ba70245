//! The one place a host's actions are applied: [`HostExecutor::apply`] takes the actions the
//! diff decided for one host, in the order a phase hands them over, and applies each from the
//! fields it carries and the plan that was diffed, emitting one `applied` event per action
//! ([`Reporter::applied`]) so a run can be compared with its dry run action for action.
//!
//! The phases keep the ordering, the rolling budgets, the concurrency and the health gates:
//! they choose which of a host's actions run when, and nothing else.

use crate::diff::Action;
use crate::hosts::{self, Host, HostError};
use crate::output::Reporter;
use crate::phases::files::{self, DesiredFile};
use crate::phases::reconcile;
use crate::plan;
use std::time::Duration;

/// How often a learner's promotion is tried (once a second) before the join counts as failed.
const PROMOTE_ATTEMPTS: u32 = 45;

/// An action that could not be applied, naming the host and the action.
#[derive(Debug, thiserror::Error)]
#[error("host {host}: {action}: {source}")]
pub struct ExecError {
    pub host: String,
    pub action: String,
    #[source]
    pub source: Box<ExecFailure>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecFailure {
    #[error(transparent)]
    Host(#[from] HostError),
    /// An etcd member operation (etcdctl through a member's etcd container).
    #[error("{0}")]
    Etcd(String),
    /// A call to the Kubernetes API (the cluster actions).
    #[error("{0}")]
    Api(String),
    /// A one-shot helper container on the host failed (its output is in the message).
    #[error("{0}")]
    Helper(String),
    /// The action needs something its step did not give the executor (a planned container, a
    /// file's contents, an etcd member to go through): a bug in the step, never in the input.
    #[error("{0}")]
    Missing(String),
    /// The action is taken by a step of its own, with its own ordering and rollback (wins,
    /// calico runtime directories, a Windows host's teardown, the API's node deletion).
    #[error("applied by the {0} step, not per action")]
    OwnStep(&'static str),
}

/// What the executor needs of one host to apply its actions; everything else comes with the
/// actions themselves (the container specs, the files' contents, the etcd member URLs).
pub struct HostExecutor<'a> {
    pub host: &'a Host,
    /// The host as events and errors name it (its address).
    pub name: &'a str,
    pub reporter: &'a Reporter,
    /// The one-shot helper image (files, directory clean-up, etcd permissions).
    pub helper_image: &'a str,
    pub registries: &'a [hosts::target::RegistryCredential],
    /// The directory the host's file actions' paths are under ([`crate::phases::up`]'s
    /// `files_root`): `/etc/kubernetes`, or the Windows prefix.
    pub files_root: String,
    /// An etcd member that stays, for membership changes.
    pub etcd_via: Option<&'a Host>,
}

impl<'a> HostExecutor<'a> {
    /// The same host, its etcd membership changes made through `via`.
    pub fn through(self, via: &'a Host) -> Self {
        HostExecutor {
            etcd_via: Some(via),
            ..self
        }
    }

    fn windows(&self) -> bool {
        self.host.facts().is_windows()
    }

    fn via(&self) -> Result<&Host, ExecFailure> {
        self.etcd_via
            .ok_or_else(|| ExecFailure::Missing("no remaining etcd member is reachable".into()))
    }

    fn fail(&self, action: &Action, source: impl Into<ExecFailure>) -> ExecError {
        ExecError {
            host: self.name.to_string(),
            action: action.to_string(),
            source: Box::new(source.into()),
        }
    }

    /// Applies `actions` in order; the file actions among them go to the host in one write
    /// (one helper container, or one host-agent call on Windows), applied where the first of
    /// them stands. Stops at the first failure, which is reported as that action's event.
    pub async fn apply<'x>(&self, actions: &[&'x Action]) -> Result<(), ExecError> {
        let mut files: FileBatch<'x> = FileBatch::default();
        let mut calico: Vec<&'x Action> = Vec::new();
        for &action in actions {
            let is_file = matches!(
                action,
                Action::UploadFile { .. }
                    | Action::RemoveFile { .. }
                    | Action::SetFileMode { .. }
                    | Action::CreateDirectories { .. }
            );
            let is_calico = matches!(
                action,
                Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. }
            );
            if !is_file {
                // Files written so far go first: what follows may read them.
                self.flush(&mut files).await?;
            }
            if !is_calico {
                self.flush_calico(&mut calico).await?;
            }
            let result = match action {
                Action::UploadFile { file, .. } => {
                    files.add(action, |b| b.upload.push((**file).clone()));
                    continue;
                }
                Action::RemoveFile { path, .. } => {
                    files.add(action, |b| b.remove.push(path.clone()));
                    continue;
                }
                Action::SetFileMode {
                    path,
                    mode,
                    uid,
                    gid,
                    ..
                } => {
                    let change = files::ModeChange {
                        relative_path: path.clone(),
                        mode: *mode,
                        uid: *uid,
                        gid: *gid,
                    };
                    files.add(action, |b| b.modes.push(change));
                    continue;
                }
                Action::CreateDirectories { paths } => {
                    files.add(action, |b| b.directories.extend(paths.iter().cloned()));
                    continue;
                }
                Action::PullImage { image } => self
                    .host
                    .docker()
                    .ensure_image(image, self.registries, &mut |_| {})
                    .await
                    .map(drop)
                    .map_err(ExecFailure::from),
                Action::CreateContainer {
                    name, start, spec, ..
                } => self.create(name, spec, *start).await,
                Action::RecreateContainer {
                    name, start, spec, ..
                } => self.recreate(name, spec, *start).await,
                Action::StartContainer { name } => self
                    .host
                    .docker()
                    .start_container(name)
                    .await
                    .map_err(ExecFailure::from),
                Action::RestartContainer { name } => {
                    let docker = self.host.docker();
                    match docker.stop_container(name).await {
                        Ok(()) => docker
                            .start_container(name)
                            .await
                            .map_err(ExecFailure::from),
                        Err(e) => Err(e.into()),
                    }
                }
                Action::RemoveContainer { name, .. } => self
                    .host
                    .docker()
                    .remove_container(name)
                    .await
                    .map_err(ExecFailure::from),
                Action::CleanDirectories { paths } => {
                    reconcile::clean_directories(self.host, self.helper_image, paths)
                        .await
                        .map_err(ExecFailure::Etcd)
                }
                Action::RemoveEtcdMember { member } => match self.via() {
                    Ok(via) => reconcile::remove_member(via, member)
                        .await
                        .map_err(ExecFailure::Etcd),
                    Err(e) => Err(e),
                },
                Action::AddEtcdMember { member, peer_url } => match self.via() {
                    Ok(via) => reconcile::add_member(via, member, peer_url, false)
                        .await
                        .map_err(ExecFailure::Etcd),
                    Err(e) => Err(e),
                },
                Action::AddEtcdLearner {
                    member, peer_url, ..
                } => match self.via() {
                    Ok(via) => reconcile::add_member(via, member, peer_url, true)
                        .await
                        .map_err(ExecFailure::Etcd),
                    Err(e) => Err(e),
                },
                // Once the learner's etcd runs and has caught up: retried for that long.
                Action::PromoteEtcdMember { peer_url, .. } => match self.via() {
                    Ok(via) => reconcile::promote_member(via, peer_url, PROMOTE_ATTEMPTS)
                        .await
                        .map_err(ExecFailure::Etcd),
                    Err(e) => Err(e),
                },
                Action::DeleteNode { .. } => Err(ExecFailure::OwnStep("removed hosts")),
                Action::InstallWins { .. } | Action::StartWins { .. } => {
                    Err(ExecFailure::OwnStep("wins"))
                }
                Action::CleanWindowsHost { .. } => Err(ExecFailure::OwnStep("removed hosts")),
                // One helper writes every directory and the entry: applied with the last.
                Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. } => {
                    calico.push(action);
                    continue;
                }
                // The day-2 commands' actions: their changesets apply them (phases::changeset
                // with each command's `apply`); `up` never plans them.
                Action::WriteFileSet { .. }
                | Action::RestartAndCheck { .. }
                | Action::DeletePods { .. }
                | Action::SaveStateSecret { .. }
                | Action::RewriteSecrets { .. }
                | Action::WriteKubeconfig { .. }
                | Action::DeleteLocalFile { .. }
                | Action::CleanLogLinks { .. }
                | Action::RunOneShot { .. }
                | Action::CopySnapshotFrom { .. }
                | Action::RunUp { .. } => Err(ExecFailure::OwnStep("a day-2 command's changeset")),
                Action::FixEtcdPermissions { path, empty_first } => {
                    self.fix_etcd_permissions(path, *empty_first).await
                }
                Action::LinkLogs {
                    containers,
                    docker_root,
                } => crate::phases::log_links::link_logs(
                    self.host,
                    self.helper_image,
                    docker_root,
                    containers,
                )
                .await
                .map_err(ExecFailure::Helper),
                // `up`'s cluster actions: the cluster executor applies them.
                Action::DisableEncryption { .. }
                | Action::ApplyRbac { .. }
                | Action::SyncNode { .. }
                | Action::ApplyAddon { .. }
                | Action::RemoveAddon { .. } => Err(ExecFailure::OwnStep("cluster")),
            };
            self.report(action, result)?;
        }
        self.flush(&mut files).await?;
        self.flush_calico(&mut calico).await
    }

    /// calico's runtime directories and their tmpfiles.d entry, in one helper container
    /// (incidents.md §1), each action reported as applied.
    async fn flush_calico(&self, batch: &mut Vec<&Action>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.first().copied() else {
            return Ok(());
        };
        let image = match first {
            Action::EnsureCniDirectory { image, .. } | Action::WriteTmpfilesEntry { image, .. } => {
                image.as_str()
            }
            _ => "",
        };
        let result =
            crate::doctor::probe::apply_calico_fix(self.host.docker(), image, self.registries)
                .await
                .map_err(|e| self.fail(first, ExecFailure::Helper(e)));
        let error = result.as_ref().err().map(|e| e.to_string());
        for a in &batch {
            self.reporter.applied(self.name, a, error.as_deref());
        }
        result
    }

    /// Reports one applied action, and turns its failure into the executor's error.
    fn report(&self, action: &Action, result: Result<(), ExecFailure>) -> Result<(), ExecError> {
        let result = result.map_err(|e| self.fail(action, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        self.reporter.applied(self.name, action, error.as_deref());
        result
    }

    /// Writes the file actions gathered so far in one go, each reported as applied.
    async fn flush(&self, batch: &mut FileBatch<'_>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.actions.first().copied() else {
            return Ok(());
        };
        let result = self.write_files(&batch).await;
        let error = result.as_ref().err().map(|e| {
            self.fail(first, ExecFailure::Helper(e.to_string()))
                .to_string()
        });
        for a in &batch.actions {
            self.reporter.applied(self.name, a, error.as_deref());
        }
        result.map_err(|e| self.fail(first, e))
    }

    async fn create(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let spec = docker_spec(spec);
        let docker = self.host.docker();
        docker.remove_container(name).await?;
        docker.create_container(name, &spec).await?;
        if start {
            docker.start_container(name).await?;
        }
        Ok(())
    }

    /// RKE1's rolling replace (§22.1): the old container is kept aside until the new one
    /// exists, so a failed create leaves something to fall back to.
    async fn recreate(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let spec = docker_spec(spec);
        let docker = self.host.docker();
        let old = format!("old-{name}");
        docker.remove_container(&old).await?;
        docker.stop_container(name).await?;
        docker.rename_container(name, &old).await?;
        docker.create_container(name, &spec).await?;
        if start {
            docker.start_container(name).await?;
        }
        docker.remove_container(&old).await?;
        Ok(())
    }

    /// RKE1's etcd-fix-perm: the data directory exists and only its owner reads it; for a
    /// joining member, emptied first with no etcd container left to write into it.
    async fn fix_etcd_permissions(&self, path: &str, empty_first: bool) -> Result<(), ExecFailure> {
        if empty_first {
            self.host.docker().remove_container(plan::ETCD).await?;
            reconcile::clean_directories(self.host, self.helper_image, &[path.to_string()])
                .await
                .map_err(ExecFailure::Etcd)?;
        }
        let spec = hosts::ContainerSpec {
            image: self.helper_image.to_string(),
            entrypoint: vec!["/bin/sh".into(), "-c".into()],
            cmd: vec!["mkdir -p /var/lib/rancher/etcd && chmod 700 /var/lib/rancher/etcd".into()],
            binds: vec![format!("{path}:/var/lib/rancher/etcd:z")],
            ..Default::default()
        };
        self.host
            .docker()
            .run_to_success("etcd-fix-perm", &spec, Duration::from_secs(120))
            .await
            .map(drop)
            .map_err(ExecFailure::from)
    }

    /// The host's file actions in one write: uploads, deletions, then modes.
    async fn write_files(&self, batch: &FileBatch<'_>) -> Result<(), ExecFailure> {
        let base = self.files_root.as_str();
        let rel = |path: &str| {
            path.strip_prefix(base)
                .map(|r| r.trim_start_matches('/').to_string())
        };
        let upload = &batch.upload;
        let stale: Vec<String> = batch.remove.iter().filter_map(|p| rel(p)).collect();
        let modes: Vec<files::ModeChange> = batch
            .modes
            .iter()
            .filter_map(|m| {
                Some(files::ModeChange {
                    relative_path: rel(&m.relative_path)?,
                    ..m.clone()
                })
            })
            .collect();
        if self.windows() {
            crate::phases::windows::write_host_files(
                self.host,
                base,
                &batch.directories,
                upload,
                &stale,
            )
            .await
            .map_err(|e| ExecFailure::Helper(e.to_string()))?;
            return Ok(());
        }
        let docker = self.host.docker();
        files::write_files(docker, base, self.helper_image, upload).await?;
        files::remove_files(docker, base, self.helper_image, &stale).await?;
        files::set_modes(docker, base, self.helper_image, &modes).await?;
        Ok(())
    }
}

/// A host's file actions, written together (one helper container or one host-agent call).
#[derive(Default)]
struct FileBatch<'a> {
    actions: Vec<&'a Action>,
    upload: Vec<DesiredFile>,
    /// Absolute paths, as the actions carry them.
    remove: Vec<String>,
    modes: Vec<files::ModeChange>,
    directories: Vec<String>,
}

impl<'a> FileBatch<'a> {
    fn add(&mut self, action: &'a Action, f: impl FnOnce(&mut Self)) {
        self.actions.push(action);
        f(self);
    }
}

/// Converts the plan's container (RKE1's process model) into what Docker is asked to create.
pub fn docker_spec(spec: &plan::ContainerSpec) -> hosts::ContainerSpec {
    hosts::ContainerSpec {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        network_mode: spec.network_mode.clone(),
        pid_mode: spec.pid_mode.clone(),
        privileged: spec.privileged,
        restart_policy: match spec.restart_policy.as_deref() {
            Some("always") => Some(hosts::RestartPolicy::Always),
            Some("on-failure") => Some(hosts::RestartPolicy::OnFailure),
            Some("unless-stopped") => Some(hosts::RestartPolicy::UnlessStopped),
            _ => None,
        },
        volumes_from: spec.volumes_from.clone(),
        labels: spec.labels.clone(),
        security_opt: spec.security_opt.clone(),
        user: spec.user.clone(),
        ports: spec
            .port_bindings
            .iter()
            .map(|p| hosts::PortBinding {
                host_ip: p.host_ip.clone(),
                host_port: p.host_port,
                container_port: p.container_port,
                protocol: p.protocol.clone(),
            })
            .collect(),
        ..Default::default()
    }
}
