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
    /// The action needs something its step did not give the executor (a planned container, a
    /// file's contents, an etcd member to go through): a bug in the step, never in the input.
    #[error("{0}")]
    Missing(String),
    /// The action's own work failed (a step through wins, a file set, a health check); the
    /// message names it.
    #[error("{0}")]
    Failed(String),
    /// The action is taken by a step of its own, with its own ordering and rollback (wins,
    /// calico runtime directories, a Windows host's teardown, the API's node deletion).
    #[error("applied by the {0} step, not per action")]
    OwnStep(&'static str),
}

/// What the executor needs of one host to apply its actions.
pub struct HostExecutor<'a> {
    pub host: &'a Host,
    pub reporter: &'a Reporter,
    /// The one-shot helper image (files, directory clean-up, etcd permissions).
    pub helper_image: &'a str,
    pub registries: &'a [hosts::target::RegistryCredential],
    /// The directory the host's file actions' paths are under ([`crate::phases::up`]'s
    /// `files_root`), and the planned files by path relative to it.
    pub files_root: String,
    pub files: &'a [DesiredFile],
    /// Windows workers: files are written through the host agent, with the directories the
    /// plan needs.
    pub windows: bool,
    /// The containers planned for the host, exactly as diffed.
    pub containers: &'a indexmap::IndexMap<String, plan::ContainerSpec>,
    /// An etcd member that stays, for member removals.
    pub etcd_via: Option<&'a Host>,
    /// What a `RestartAndCheck`'s health check presents and trusts (kube-apiserver's client
    /// certificate and the CA the running cluster has).
    pub health_tls: Option<&'a crate::phases::health::TlsMaterial>,
}

impl HostExecutor<'_> {
    fn fail(&self, action: &Action, source: impl Into<ExecFailure>) -> ExecError {
        ExecError {
            host: self.host.name().to_string(),
            action: action.to_string(),
            source: Box::new(source.into()),
        }
    }

    /// Applies `actions` in order; the file actions among them go to the host in one write
    /// (one helper container, or one host-agent call on Windows), applied where the first of
    /// them stands. Stops at the first failure, which is reported as that action's event.
    pub async fn apply<'x>(&self, actions: &[&'x Action]) -> Result<(), ExecError> {
        let mut files: FileBatch<'x> = FileBatch::default();
        for &action in actions {
            let is_file = matches!(
                action,
                Action::UploadFile { .. }
                    | Action::RemoveFile { .. }
                    | Action::SetFileMode { .. }
                    | Action::CreateDirectories { .. }
            );
            if !is_file {
                // Files written so far go first: what follows may read them.
                self.flush(&mut files).await?;
            }
            let result = match action {
                Action::UploadFile { path, .. } => {
                    files.add(action, |b| b.upload.push(path.clone()));
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
                Action::CreateContainer { name, start, .. } => self.create(name, *start).await,
                Action::RecreateContainer { name, start, .. } => self.recreate(name, *start).await,
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
                Action::RemoveEtcdMember { member } => match self.etcd_via {
                    Some(via) => reconcile::remove_member(via, member)
                        .await
                        .map_err(ExecFailure::Etcd),
                    None => Err(ExecFailure::Missing(
                        "no remaining etcd member is reachable".into(),
                    )),
                },
                // With the join's ordering, rollback and health gate.
                Action::AddEtcdMember { .. }
                | Action::AddEtcdLearner { .. }
                | Action::PromoteEtcdMember { .. } => Err(ExecFailure::OwnStep("etcd join")),
                Action::DeleteNode { .. } => Err(ExecFailure::OwnStep("removed hosts")),
                Action::InstallWins { .. } | Action::StartWins { .. } => {
                    Err(ExecFailure::OwnStep("wins"))
                }
                Action::SweepWindowsOrphans { image } => {
                    match crate::phases::windows::sweep_orphans(self.host, image).await {
                        Ok(swept) => {
                            if !swept.stopped.is_empty() {
                                tracing::warn!(host = self.host.name(), stopped = ?swept.stopped, "stopped wins-managed processes that outlived their wins server");
                            }
                            Ok(())
                        }
                        Err(e) => Err(ExecFailure::Failed(e.to_string())),
                    }
                }
                Action::CleanWindowsHost { .. } => Err(ExecFailure::OwnStep("removed hosts")),
                Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. } => {
                    Err(ExecFailure::OwnStep("calico runtime"))
                }
                Action::WriteFileSet { dir, files } => crate::phases::changeset::write_file_set(
                    self.host,
                    dir,
                    self.helper_image,
                    files,
                )
                .await
                .map_err(ExecFailure::Failed),
                Action::RestartAndCheck { name, health_url } => {
                    crate::phases::health::restart_and_check(
                        self.host,
                        name,
                        health_url.as_deref(),
                        self.health_tls,
                    )
                    .await
                    .map_err(ExecFailure::Failed)
                }
                // The day-2 commands' actions: their changesets apply them (phases::changeset
                // with each command's `apply`); `up` never plans them.
                Action::DeletePods { .. }
                | Action::SaveStateSecret { .. }
                | Action::RewriteSecrets { .. }
                | Action::WriteKubeconfig { .. }
                | Action::DeleteLocalFile { .. }
                | Action::CleanLogLinks { .. }
                | Action::RunOneShot { .. }
                | Action::CopySnapshotFrom { .. }
                | Action::RunUp { .. } => Err(ExecFailure::OwnStep("a day-2 command's changeset")),
                Action::FixEtcdPermissions { path } => self.fix_etcd_permissions(path).await,
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
                .map_err(ExecFailure::Missing),
                // `up`'s cluster actions: the cluster executor applies them.
                Action::DisableEncryption { .. }
                | Action::ApplyRbac { .. }
                | Action::SyncNode { .. }
                | Action::ApplyAddon { .. }
                | Action::RemoveAddon { .. } => Err(ExecFailure::OwnStep("cluster")),
            };
            self.report(action, result)?;
        }
        self.flush(&mut files).await
    }

    /// Reports one applied action, and turns its failure into the executor's error.
    fn report(&self, action: &Action, result: Result<(), ExecFailure>) -> Result<(), ExecError> {
        let result = result.map_err(|e| self.fail(action, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        self.reporter
            .applied(self.host.name(), action, error.as_deref());
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
            self.fail(first, ExecFailure::Missing(e.to_string()))
                .to_string()
        });
        for a in &batch.actions {
            self.reporter.applied(self.host.name(), a, error.as_deref());
        }
        result.map_err(|e| self.fail(first, e))
    }

    // An ExecFailure lives for one call before ExecError boxes it.
    #[allow(clippy::result_large_err)]
    fn spec(&self, name: &str) -> Result<hosts::ContainerSpec, ExecFailure> {
        self.containers
            .get(name)
            .map(docker_spec)
            .ok_or_else(|| ExecFailure::Missing(format!("no planned container {name}")))
    }

    async fn create(&self, name: &str, start: bool) -> Result<(), ExecFailure> {
        let spec = self.spec(name)?;
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
    async fn recreate(&self, name: &str, start: bool) -> Result<(), ExecFailure> {
        let spec = self.spec(name)?;
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

    /// RKE1's etcd-fix-perm: the data directory exists and only its owner reads it.
    async fn fix_etcd_permissions(&self, path: &str) -> Result<(), ExecFailure> {
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
        let mut upload = Vec::new();
        for path in &batch.upload {
            let file = rel(path)
                .and_then(|r| self.files.iter().find(|f| f.relative_path == r))
                .ok_or_else(|| ExecFailure::Missing(format!("no planned file {path}")))?;
            upload.push(file.clone());
        }
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
        if self.windows {
            crate::phases::windows::write_host_files(
                self.host,
                base,
                &batch.directories,
                &upload,
                &stale,
            )
            .await
            .map_err(|e| ExecFailure::Missing(e.to_string()))?;
            return Ok(());
        }
        let docker = self.host.docker();
        files::write_files(docker, base, self.helper_image, &upload).await?;
        files::remove_files(docker, base, self.helper_image, &stale).await?;
        files::set_modes(docker, base, self.helper_image, &modes).await?;
        Ok(())
    }
}

/// A host's file actions, written together (one helper container or one host-agent call).
#[derive(Default)]
struct FileBatch<'a> {
    actions: Vec<&'a Action>,
    /// Absolute paths, as the actions carry them.
    upload: Vec<String>,
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
