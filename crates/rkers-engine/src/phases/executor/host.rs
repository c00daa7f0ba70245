//! One host's executor: how it is pointed at a host, and the one exhaustive `match` that applies
//! every action.

use super::*;
use futures::future::BoxFuture;

impl<'e, 'a> HostExecutor<'e, 'a> {
    /// The same host, its etcd membership changes made through `via`.
    pub fn through(self, via: &'e Host) -> Self {
        HostExecutor {
            etcd_via: Some(via),
            ..self
        }
    }

    /// The same host, its file actions' paths under `root`.
    pub fn files_under(self, root: String) -> Self {
        HostExecutor {
            files_root: root,
            ..self
        }
    }

    /// The same actions applied as `host`'s, when the host is not among the executor's
    /// (a host that left the cluster).
    pub fn as_host(self, host: &'e Host) -> Self {
        HostExecutor {
            host: Some(host),
            ..self
        }
    }

    pub(super) fn host(&self) -> Result<&'e Host, ExecFailure> {
        self.host.ok_or_else(|| {
            ExecFailure::Missing(match self.name {
                CLUSTER | LOCAL => format!("the pseudo-host {} runs no containers", self.name),
                name => format!("host {name} is not connected"),
            })
        })
    }

    /// `path` relative to the host's files root.
    pub(super) fn relative(&self, path: &str) -> Result<String, ExecFailure> {
        path.strip_prefix(self.files_root.as_str())
            .map(|r| r.trim_start_matches('/').to_string())
            .ok_or_else(|| ExecFailure::Missing(format!("{path} is not under {}", self.files_root)))
    }

    /// The platform of the host the actions go to (Linux for the pseudo-hosts).
    pub(super) fn platform(&self) -> crate::plan::Platform {
        self.host.map(|h| h.platform()).unwrap_or_default()
    }

    pub(super) fn via(&self) -> Result<&Host, ExecFailure> {
        self.etcd_via
            .ok_or_else(|| ExecFailure::Missing("no remaining etcd member is reachable".into()))
    }

    pub(super) fn fail(&self, action: &Action, source: impl Into<ExecFailure>) -> ExecError {
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
            if files.take(action) {
                continue;
            }
            if matches!(
                action,
                Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. }
            ) {
                // One helper writes every directory and the entry.
                calico.push(action);
                continue;
            }
            // Files written so far go first: what follows may read them.
            self.flush(&mut files).await?;
            self.flush_calico(&mut calico).await?;
            let result = self.run(action).await;
            self.report(action, result)?;
        }
        self.flush(&mut files).await?;
        self.flush_calico(&mut calico).await
    }

    /// Applies one action without reporting it, for a phase that runs several at once and
    /// reports them in their planned order ([`HostExecutor::report`]). The one `match` over
    /// every action there is. Each action's future is boxed on its own: in a debug build one
    /// `async fn` over every arm keeps a stack slot for each arm's future in one frame, and
    /// this frame sits below every container, etcd and API call `up` makes (282 KiB of the
    /// 2 MiB test thread `e2e_api` overflowed).
    pub fn run<'s>(&'s self, action: &'s Action) -> BoxFuture<'s, Result<(), ExecFailure>> {
        let exec = self.exec;
        let api_failed = |e: &dyn std::fmt::Display| ExecFailure::Api(e.to_string());
        match action {
            // `apply` gathers these and writes them together; one alone is written the same way.
            Action::UploadFile { .. }
            | Action::RemoveFile { .. }
            | Action::SetFileMode { .. }
            | Action::CreateDirectories { .. } => Box::pin(async move {
                let mut batch = FileBatch::default();
                batch.take(action);
                self.write_batch(&batch).await
            }),
            Action::EnsureCniDirectory { image, .. } | Action::WriteTmpfilesEntry { image, .. } => {
                Box::pin(async move {
                    crate::checks::probe::apply_calico_fix(
                        self.host()?.docker(),
                        image,
                        &exec.registries,
                    )
                    .await
                    .map_err(|e| ExecFailure::CalicoFix(Box::new(e)))
                })
            }
            Action::PullImage { image } => Box::pin(async move {
                self.host()?
                    .docker()
                    .ensure_image(image, &exec.registries, &mut |_| {})
                    .await
                    .map(drop)
                    .map_err(ExecFailure::from)
            }),
            Action::CreateContainer {
                name, start, spec, ..
            } => Box::pin(async move { self.create(name, spec, *start).await }),
            Action::RecreateContainer {
                name,
                start,
                spec,
                until_node_ready,
                ..
            } => Box::pin(async move {
                self.recreate(name, spec, *start, until_node_ready.as_deref())
                    .await
            }),
            Action::RestoreContainer { name, start } => {
                Box::pin(async move { self.restore(name, *start).await })
            }
            Action::StartContainer { name } => Box::pin(async move {
                self.host()?
                    .docker()
                    .start_container(name)
                    .await
                    .map_err(ExecFailure::from)
            }),
            Action::RestartContainer { name, .. } => Box::pin(async move {
                let docker = self.host()?.docker();
                docker.stop_container(name).await?;
                docker.start_container(name).await?;
                Ok(())
            }),
            Action::RestartAndCheck { name, check, .. } => Box::pin(async move {
                let host = self.host()?;
                host.docker().stop_container(name).await?;
                host.docker().start_container(name).await?;
                match check {
                    Some(check) => crate::phases::health::wait_component(
                        host,
                        name,
                        &check.url,
                        check.tls.as_ref(),
                    )
                    .await
                    .map_err(|e| ExecFailure::Health(Box::new(e))),
                    None => Ok(()),
                }
            }),
            Action::RemoveContainer { name, .. } => Box::pin(async move {
                self.host()?
                    .docker()
                    .remove_container(name)
                    .await
                    .map_err(ExecFailure::from)
            }),
            Action::CleanDirectories { paths } => Box::pin(async move {
                reconcile::clean_directories(self.host()?, &exec.helper_image, paths)
                    .await
                    .map_err(ExecFailure::from)
            }),
            Action::RemoveEtcdMember { member } => Box::pin(async move {
                etcd_membership::remove_member(self.via()?, member)
                    .await
                    .map_err(ExecFailure::Etcd)
            }),
            Action::AddEtcdMember { member, peer_url } => Box::pin(async move {
                etcd_membership::add_member(self.via()?, member, peer_url, false)
                    .await
                    .map_err(ExecFailure::Etcd)
            }),
            Action::AddEtcdLearner {
                member, peer_url, ..
            } => Box::pin(async move {
                etcd_membership::add_member(self.via()?, member, peer_url, true)
                    .await
                    .map_err(ExecFailure::Etcd)
            }),
            // Once the learner's etcd runs and has caught up: retried for that long.
            Action::PromoteEtcdMember { peer_url, .. } => Box::pin(async move {
                etcd_membership::promote_member(self.via()?, peer_url, PROMOTE_ATTEMPTS)
                    .await
                    .map_err(ExecFailure::Etcd)
            }),
            Action::FixEtcdPermissions {
                path,
                empty_first,
                in_host_shell,
            } => Box::pin(async move {
                self.fix_etcd_permissions(path, *empty_first, *in_host_shell)
                    .await
            }),
            Action::DeleteNode { node } => Box::pin(async move {
                exec.api()
                    .await?
                    .delete_node(node)
                    .await
                    .map_err(|e| api_failed(&e))
            }),
            Action::InstallWins { image, .. } => Box::pin(async move {
                crate::phases::windows::install_wins(self.host()?, image)
                    .await
                    .map(drop)
                    .map_err(|e| ExecFailure::Helper(e.to_string()))
            }),
            Action::StartWins {
                restart,
                containers,
                replaced,
                sweep_image,
                ..
            } => Box::pin(async move {
                let step = crate::phases::windows::WinsStep {
                    install_from: None,
                    start: Some(*restart),
                    containers: containers.clone(),
                    replaced: replaced.clone(),
                    sweep_image: sweep_image.clone(),
                    settle: crate::phases::windows::WINS_SETTLE,
                };
                let done = crate::phases::windows::start_wins_safely(self.host()?, *restart, &step)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))?;
                tracing::info!(
                    host = self.name,
                    service = ?done.service_changes,
                    restarted = ?done.restarted_containers,
                    swept = ?done.sweep.stopped,
                    "wins is ready"
                );
                Ok(())
            }),
            Action::SweepWindowsOrphans { image } => Box::pin(async move {
                let host = self.host()?;
                let swept = crate::phases::windows::sweep_orphans(host, image)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))?;
                if !swept.stopped.is_empty() {
                    tracing::warn!(host = host.name(), stopped = ?swept.stopped, "stopped wins-managed processes that outlived their wins server");
                }
                Ok(())
            }),
            Action::CleanWindowsHost {
                unregister_wins,
                image,
                ..
            } => Box::pin(async move {
                // The plan refuses every Windows prefix but c:/ (the Linux prefix rule would
                // give `/`).
                let steps = plan::remove_plan_windows(plan::WINDOWS_PREFIX_PATH, *unregister_wins);
                crate::phases::windows::remove_windows_host(self.host()?, &steps, image)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))
            }),
            Action::WriteFileSet { dir, files } => Box::pin(async move {
                let files = changeset::desired_files(files);
                self.write_files(dir, &files, &[], &[], &[]).await
            }),
            Action::DeletePods { labels } => Box::pin(async move {
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                let deleted = crate::kubeapi::delete_pods_by_labels(exec.api().await?, &labels)
                    .await
                    .map_err(|e| api_failed(&e))?;
                exec.reporter.info(format!(
                    "Deleted {deleted} system pods so they restart with the new CA"
                ));
                Ok(())
            }),
            Action::DeletePod {
                namespace, name, ..
            } => Box::pin(async move {
                crate::kubeapi::delete_pod(exec.api().await?, namespace, name)
                    .await
                    .map_err(|e| api_failed(&e))
            }),
            Action::DeleteObject {
                api_version,
                kind,
                namespace,
                name,
                ..
            } => Box::pin(async move {
                let id = crate::addons::apply::ObjectId {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                };
                crate::addons::apply::delete_object(exec.api().await?, &id)
                    .await
                    .map(drop)
                    .map_err(|e| api_failed(&e))
            }),
            Action::SaveStateSecret { .. } => Box::pin(async move {
                let json = exec
                    .state_json
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .ok_or_else(|| ExecFailure::Missing("the state to save is not ready".into()))?;
                exec.api()
                    .await?
                    .save_state_secret(&json)
                    .await
                    .map_err(|e| api_failed(&e))
            }),
            // Turning encryption off rewrites them once the controlplane hosts applied their
            // part (an identity-first provider file, kube-apiserver restarted).
            Action::RewriteSecrets { .. } | Action::DisableEncryption { .. } => {
                Box::pin(async move {
                    crate::phases::encryption::rewrite_secrets(exec.api().await?, &exec.reporter)
                        .await
                        .map(drop)
                        .map_err(|e| api_failed(&e))
                })
            }
            Action::WriteKubeconfig { path, contents } => Box::pin(async move {
                (exec.local)
                    .write_private(std::path::Path::new(path), contents.bytes())
                    .map_err(|source| ExecFailure::Local {
                        path: path.clone(),
                        source,
                    })?;
                exec.reporter.info(format!(
                    "Successfully Deployed local admin kubeconfig at [{path}]"
                ));
                Ok(())
            }),
            Action::DeleteLocalFile { path } => Box::pin(async move {
                match exec.local.remove(std::path::Path::new(path)) {
                    Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                        Err(ExecFailure::Local {
                            path: path.clone(),
                            source,
                        })
                    }
                    _ => Ok(()),
                }
            }),
            Action::CleanAsRoot { paths, log_dir } => Box::pin(async move {
                reconcile::clean_as_root(self.host()?, paths, log_dir.as_deref())
                    .await
                    .map_err(ExecFailure::from)
            }),
            Action::CleanLogLinks { dir, image } => Box::pin(async move {
                crate::phases::log_links::clean_log_links(self.host()?, image, dir)
                    .await
                    .map_err(ExecFailure::from)
            }),
            Action::RunOneShot {
                container, spec, ..
            } => Box::pin(async move {
                let logs = self
                    .host()?
                    .docker()
                    .run_to_success(container, spec, exec.one_shot_timeout)
                    .await?;
                exec.one_shot_logs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(format!("{}/{container}", self.name), logs);
                Ok(())
            }),
            // The steps `etcd snapshot-save` takes for one member, as one action of `up`.
            Action::SaveEtcdSnapshot { steps, .. } => Box::pin(async move {
                for step in steps {
                    self.run(step).await?;
                }
                Ok(())
            }),
            Action::CopySnapshotFrom { from, path, image } => Box::pin(async move {
                let source = exec
                    .hosts
                    .get(from)
                    .ok_or_else(|| ExecFailure::Missing(format!("host {from} is not connected")))?;
                let (dir, _) = path.rsplit_once('/').unwrap_or(("/", ""));
                let copied = source
                    .docker()
                    .copy_file_to(path, self.host()?.docker(), dir, image)
                    .await?;
                if copied {
                    Ok(())
                } else {
                    Err(ExecFailure::Missing(format!(
                        "{path} is gone from host {from}"
                    )))
                }
            }),
            Action::RunUp { .. } => Box::pin(async move {
                let up = exec.up.as_ref().ok_or_else(|| {
                    ExecFailure::Missing("this command does not run `rkers up`".into())
                })?;
                up().await.map_err(ExecFailure::Up)
            }),
            Action::LinkLogs {
                containers,
                docker_root,
            } => Box::pin(async move {
                crate::phases::log_links::link_logs(
                    self.host()?,
                    &exec.helper_image,
                    docker_root,
                    containers,
                )
                .await
                .map_err(ExecFailure::from)
            }),
            Action::ApplyRbac { .. } => Box::pin(async move {
                exec.api()
                    .await?
                    .apply_authz(exec.rbac)
                    .await
                    .map_err(|e| api_failed(&e))
            }),
            Action::SyncNode { sync, .. } => Box::pin(async move {
                let api = exec.api().await?;
                // A node planned before its kubelet registered: wait for it.
                crate::kubeapi::find_node(api, &sync.hostname, 60)
                    .await
                    .map_err(|e| api_failed(&e))?;
                crate::kubeapi::sync_node(api, sync)
                    .await
                    .map(drop)
                    .map_err(|e| api_failed(&e))
            }),
            Action::ApplyAddon { plan, .. } | Action::RemoveAddon { plan, .. } => {
                Box::pin(async move {
                    crate::phases::addons::apply_one(exec.api().await?, plan, &exec.reporter)
                        .await
                        .map_err(|e| api_failed(&e))
                })
            }
            Action::DeleteWebhookConfiguration { kind, name } => Box::pin(async move {
                crate::checks::webhooks::delete_config(exec.api().await?, *kind, name)
                    .await
                    .map_err(|e| api_failed(&e))
            }),
            Action::CreateWebhookConfiguration {
                kind, name, object, ..
            } => Box::pin(async move {
                crate::checks::webhooks::create_config(exec.api().await?, *kind, name, object)
                    .await
                    .map(drop)
                    .map_err(|e| api_failed(&e))
            }),
        }
    }

    /// Reports one applied action, and turns its failure into the executor's error.
    pub fn report(
        &self,
        action: &Action,
        result: Result<(), ExecFailure>,
    ) -> Result<(), ExecError> {
        let result = result.map_err(|e| self.fail(action, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        self.exec
            .reporter
            .applied(self.name, action, error.as_deref());
        result
    }
}
