//! Container lifecycle: create, start, stop, remove, rename, inspect, wait, logs, and the
//! one-shot helper containers built on them.

use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::query_parameters::{
    CreateContainerOptions, LogsOptions, RemoveContainerOptions, RenameContainerOptions,
    StopContainerOptions,
};
use futures::StreamExt;

use super::DockerClient;
use super::errors::is_not_found;
use crate::hosts::RegistryCredential;
use crate::hosts::container::{ContainerSpec, ObservedContainer, ToCreateBody};
use crate::hosts::error::HostError;

/// The label dockershim and cri-dockerd put on every container they make for a pod.
const POD_CONTAINER_LABEL: &str = "io.kubernetes.docker.type";

/// Result of a one-shot helper container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OneShotResult {
    pub exit_code: i64,
    /// The last lines of its stdout and stderr, interleaved as Docker returns them.
    pub logs: String,
}

impl DockerClient {
    pub async fn create_container(
        &self,
        name: &str,
        spec: &ContainerSpec,
    ) -> Result<String, HostError> {
        let opts = CreateContainerOptions {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        let r = self
            .docker
            .create_container(Some(opts), spec.to_create_body())
            .await
            .map_err(|e| self.cerr(name, "create", e))?;
        Ok(r.id)
    }

    /// [`Self::create_container`], pulling the image again when Docker no longer has it.
    ///
    /// The images step pulled it, but it can be gone by the time its container is made: a
    /// kubelet whose disk is above its image garbage collection threshold deletes every image
    /// no container uses yet, and an operator may prune. Docker answers such a create with 404;
    /// the image is pulled (the same registries, the same retries) and the create tried once more.
    pub async fn create_container_pulling(
        &self,
        name: &str,
        spec: &ContainerSpec,
        registries: &[RegistryCredential],
    ) -> Result<String, HostError> {
        let opts = || CreateContainerOptions {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        match self
            .docker
            .create_container(Some(opts()), spec.to_create_body())
            .await
        {
            Ok(r) => Ok(r.id),
            Err(e) if is_not_found(&e) => {
                self.ensure_image(&spec.image, registries, &mut |_| {})
                    .await?;
                self.create_container(name, spec).await
            }
            Err(e) => Err(self.cerr(name, "create", e)),
        }
    }

    pub async fn start_container(&self, name: &str) -> Result<(), HostError> {
        self.docker
            .start_container(
                name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .map_err(|e| self.cerr(name, "start", e))
    }

    /// Stops with a 5 s grace period (RKE1's value). Stopping a stopped container is fine.
    pub async fn stop_container(&self, name: &str) -> Result<(), HostError> {
        let opts = StopContainerOptions {
            t: Some(5),
            ..Default::default()
        };
        match self.docker.stop_container(name, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(BollardError::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()),
            Err(e) => Err(self.cerr(name, "stop", e)),
        }
    }

    /// Removes forcefully with its anonymous volumes; absent is fine.
    pub async fn remove_container(&self, name: &str) -> Result<(), HostError> {
        let opts = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        match self.docker.remove_container(name, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(self.cerr(name, "remove", e)),
        }
    }

    pub async fn rename_container(&self, name: &str, new_name: &str) -> Result<(), HostError> {
        let opts = RenameContainerOptions {
            name: new_name.to_owned(),
        };
        self.docker
            .rename_container(name, opts)
            .await
            .map_err(|e| self.cerr(name, &format!("rename to {new_name}"), e))
    }

    pub async fn inspect_container(
        &self,
        name: &str,
    ) -> Result<Option<ObservedContainer>, HostError> {
        match self
            .docker
            .inspect_container(
                name,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
        {
            Ok(r) => Ok(Some(ObservedContainer::from_inspect(r))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(self.cerr(name, "inspect", e)),
        }
    }

    /// The names of the containers kubelet's runtime (dockershim or cri-dockerd) made for pods,
    /// running or not: they carry the `io.kubernetes.docker.type` label.
    pub async fn pod_container_names(&self) -> Result<Vec<String>, HostError> {
        let opts = bollard::query_parameters::ListContainersOptions {
            all: true,
            filters: Some([("label".to_string(), vec![POD_CONTAINER_LABEL.to_string()])].into()),
            ..Default::default()
        };
        let list = self
            .docker
            .list_containers(Some(opts))
            .await
            .map_err(|e| self.cerr("pod containers", "list", e))?;
        let mut names: Vec<String> = list
            .into_iter()
            .filter_map(|c| c.names?.into_iter().next())
            .map(|n| n.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Waits until the container is no longer running and returns its exit code.
    pub async fn wait_container(&self, name: &str, timeout: Duration) -> Result<i64, HostError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let c = self
                .inspect_container(name)
                .await?
                .ok_or_else(|| HostError::Container {
                    host: self.host.clone(),
                    container: name.to_owned(),
                    detail: "disappeared while waiting for it to exit".into(),
                })?;
            if !c.running && c.status != "created" {
                return Ok(c.exit_code.unwrap_or(-1));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(HostError::Container {
                    host: self.host.clone(),
                    container: name.to_owned(),
                    detail: format!("still running after {}s", timeout.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The last `tail` lines of stdout and stderr.
    pub async fn logs(&self, name: &str, tail: usize) -> Result<String, HostError> {
        let opts = LogsOptions {
            stdout: true,
            stderr: true,
            tail: tail.to_string(),
            ..Default::default()
        };
        let mut stream = self.docker.logs(name, Some(opts));
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.cerr(name, "logs", e))?;
            out.extend_from_slice(&chunk.into_bytes());
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The last `tail` lines of stderr only.
    pub async fn logs_stderr(&self, name: &str, tail: usize) -> Result<String, HostError> {
        let opts = LogsOptions {
            stdout: false,
            stderr: true,
            tail: tail.to_string(),
            ..Default::default()
        };
        let mut stream = self.docker.logs(name, Some(opts));
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.cerr(name, "logs", e))?;
            out.extend_from_slice(&chunk.into_bytes());
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs a helper container to completion: removes a stale one of the same name first
    /// (left by an interrupted run, spec §32 pain point 19), creates, starts, waits, collects
    /// the last log lines and removes it. A non-zero exit code is returned, not an error.
    pub async fn run_one_shot(
        &self,
        name: &str,
        spec: &ContainerSpec,
        timeout: Duration,
    ) -> Result<OneShotResult, HostError> {
        self.remove_container(name).await?;
        self.create_container(name, spec).await?;
        let result = async {
            self.start_container(name).await?;
            let exit_code = self.wait_container(name, timeout).await?;
            let logs = self.logs(name, 50).await?;
            Ok(OneShotResult { exit_code, logs })
        }
        .await;
        let removed = self.remove_container(name).await;
        let result = result?;
        removed?;
        Ok(result)
    }

    /// Runs a helper container to completion like [`run_one_shot`](Self::run_one_shot), and
    /// fails when it exits non-zero, naming the host, the container, the exit code and its
    /// last log lines. Returns its logs.
    pub async fn run_to_success(
        &self,
        name: &str,
        spec: &ContainerSpec,
        timeout: Duration,
    ) -> Result<String, HostError> {
        let r = self.run_one_shot(name, spec, timeout).await?;
        if r.exit_code != 0 {
            return Err(HostError::Container {
                host: self.host().to_string(),
                container: name.to_string(),
                detail: format!(
                    "exited with {}: {}",
                    r.exit_code,
                    crate::output::last_lines(&r.logs, 5).join("\n    ")
                ),
            });
        }
        Ok(r.logs)
    }
}
