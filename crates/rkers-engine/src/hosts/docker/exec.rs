//! Commands run inside a container that is already running (`docker exec`), detached.

use std::time::Duration;

use super::DockerClient;
use crate::hosts::error::HostError;

impl DockerClient {
    /// Runs `cmd` inside the running container `container`, detached, and returns its exit
    /// code once it ends. Far cheaper than a helper container (no create, start and removal;
    /// at 30 hosts on two cores those cost minutes), for work whose container already has the
    /// mounts it needs. The output is not kept: a caller that needs it runs a helper container.
    pub async fn exec_detached(
        &self,
        container: &str,
        cmd: &[&str],
        timeout: Duration,
    ) -> Result<i64, HostError> {
        let config = bollard::models::ExecConfig {
            cmd: Some(cmd.iter().map(|c| c.to_string()).collect()),
            attach_stdout: Some(false),
            attach_stderr: Some(false),
            ..Default::default()
        };
        let exec = self
            .docker
            .create_exec(container, config)
            .await
            .map_err(|e| self.cerr(container, "exec", e))?;
        self.docker
            .start_exec(
                &exec.id,
                Some(bollard::exec::StartExecOptions {
                    detach: true,
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| self.cerr(container, "exec start", e))?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let state = self
                .docker
                .inspect_exec(&exec.id)
                .await
                .map_err(|e| self.cerr(container, "exec inspect", e))?;
            if state.running != Some(true) {
                return Ok(state.exit_code.unwrap_or(-1));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(HostError::Container {
                    host: self.host.clone(),
                    container: container.to_owned(),
                    detail: format!(
                        "a command run in it still runs after {}s",
                        timeout.as_secs()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
