//! Containers made, replaced and put back: RKE1's rolling replace with its `old-<name>` undo, and
//! the conversion of the plan's container into Docker's.

use super::*;

impl<'e, 'a> HostExecutor<'e, 'a> {
    pub(super) async fn create(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        docker.remove_container(name).await?;
        create_and_start(docker, &self.exec.registries, name, spec, start).await
    }

    /// RKE1's rolling replace (§22.1): the old container is kept aside as `old-<name>` until
    /// the new one runs and, when it has a health check, passes it. When the new one cannot be
    /// created or started, or fails its check, the old one is put back under its name and
    /// started again (reported as a [`Action::RestoreContainer`] of its own), so the host
    /// keeps the component it had, and the failure names the cause (with the failed
    /// container's last log lines). A container kept until its node is Ready
    /// ([`crate::diff::UndoCheck::NodeReady`]) stays aside after its health check: the rolling
    /// upgrade that waits for the node settles it ([`Self::settle_kept`]).
    pub(super) async fn recreate(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
        until_node_ready: Option<&str>,
    ) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        let old = format!("{}{name}", plan::OLD_PREFIX);
        docker.remove_container(&old).await?;
        let was_running = docker
            .inspect_container(name)
            .await?
            .is_some_and(|c| c.running || c.restarting);
        docker.stop_container(name).await?;
        docker.rename_container(name, &old).await?;
        if let Err(failed) =
            create_and_start(docker, &self.exec.registries, name, spec, start).await
        {
            let undone = self.restore_reported(name, was_running).await;
            return Err(ExecFailure::Replace {
                cause: Box::new(failed),
                restored: undone.err().map(Box::new),
            });
        }
        let check = crate::diff::undo_check(start, spec, until_node_ready);
        if let Some(check) = check.and_then(|c| c.health()) {
            let tls = self.exec.health_tls(check);
            let host = self.host()?;
            if let Err(cause) =
                crate::phases::health::wait_component(host, name, &check.url, tls.as_ref()).await
            {
                let logs = docker
                    .logs(name, UNHEALTHY_LOG_LINES)
                    .await
                    .unwrap_or_default();
                let undone = self.restore_reported(name, was_running).await;
                return Err(ExecFailure::Unhealthy {
                    container: name.to_string(),
                    cause: Box::new(cause),
                    logs,
                    restored: undone.err().map(Box::new),
                });
            }
        }
        if check.is_some_and(|c| c.waits_for_node()) {
            self.exec.keep(self.name, name, was_running);
            return Ok(());
        }
        docker.remove_container(&old).await?;
        Ok(())
    }

    /// The containers of this host kept aside until its node is Ready, once the wait is over:
    /// dropped when the node is Ready (`ready`), put back otherwise (each an applied
    /// [`Action::RestoreContainer`], the last replaced first). Every one is settled even when
    /// another fails, so none stays aside; returns the names put back, or the first failure.
    pub async fn settle_kept(&self, ready: bool) -> Result<Vec<String>, ExecFailure> {
        let kept = self.exec.take_kept(self.name);
        let docker = self.host()?.docker();
        let mut restored = Vec::new();
        let mut first_failure = None;
        for (name, was_running) in kept.into_iter().rev() {
            let settled = if ready {
                docker
                    .remove_container(&format!("{}{name}", plan::OLD_PREFIX))
                    .await
                    .map_err(ExecFailure::from)
            } else {
                self.restore_reported(&name, was_running).await
            };
            match settled {
                Ok(()) if !ready => restored.push(name),
                Ok(()) => {}
                Err(e) => {
                    first_failure.get_or_insert(e);
                }
            }
        }
        first_failure.map_or(Ok(restored), Err)
    }

    /// [`Self::restore`], reported as the applied [`Action::RestoreContainer`] it is.
    pub(super) async fn restore_reported(
        &self,
        name: &str,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let restore = Action::RestoreContainer {
            name: name.to_string(),
            start,
        };
        let undone = self.restore(name, start).await;
        self.exec.reporter.applied(
            self.name,
            &restore,
            undone.as_ref().err().map(|e| e.to_string()).as_deref(),
        );
        undone
    }

    /// Puts `old-<name>` back as `<name>` (a half-made replacement removed first), started
    /// again when it ran before.
    pub(super) async fn restore(&self, name: &str, start: bool) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        let old = format!("{}{name}", plan::OLD_PREFIX);
        if docker.inspect_container(&old).await?.is_none() {
            return Err(ExecFailure::Missing(format!(
                "no {old} container to put back"
            )));
        }
        docker.remove_container(name).await?;
        docker.rename_container(&old, name).await?;
        if start {
            docker.start_container(name).await?;
        }
        Ok(())
    }

    /// RKE1's etcd-fix-perm: the data directory exists and only its owner reads it; for a
    /// joining member, emptied first with no etcd container left to write into it.
    pub(super) async fn fix_etcd_permissions(
        &self,
        path: &str,
        empty_first: bool,
        in_host_shell: bool,
    ) -> Result<(), ExecFailure> {
        let host = self.host()?;
        if empty_first {
            host.docker().remove_container(plan::ETCD).await?;
        }
        if in_host_shell {
            return reconcile::make_private_directory_as_root(host, path, empty_first)
                .await
                .map_err(ExecFailure::from);
        }
        if empty_first {
            reconcile::clean_directories(host, &self.exec.helper_image, &[path.to_string()])
                .await
                .map_err(ExecFailure::from)?;
        }
        let spec = hosts::ContainerSpec {
            image: self.exec.helper_image.clone(),
            entrypoint: vec!["/bin/sh".into(), "-c".into()],
            cmd: vec!["mkdir -p /var/lib/rancher/etcd && chmod 700 /var/lib/rancher/etcd".into()],
            binds: vec![format!("{path}:/var/lib/rancher/etcd:z")],
            ..Default::default()
        };
        host.docker()
            .run_to_success("etcd-fix-perm", &spec, Duration::from_secs(120))
            .await
            .map(drop)
            .map_err(ExecFailure::from)
    }
}

/// Creates the planned container `name` (its image pulled again if it went missing since the
/// images step), and starts it when it is one that runs.
async fn create_and_start(
    docker: &hosts::DockerClient,
    registries: &[hosts::target::RegistryCredential],
    name: &str,
    spec: &plan::ContainerSpec,
    start: bool,
) -> Result<(), ExecFailure> {
    docker
        .create_container_pulling(name, &docker_spec(spec), registries)
        .await?;
    if start {
        docker.start_container(name).await?;
    }
    Ok(())
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
