//! The host link of `up --local` / `remove --local` (RKE1's local mode): the one node is the
//! machine whose Docker daemon `DOCKER_HOST` names, reached without SSH.
//!
//! Docker requests go straight to that daemon (a Unix socket or `tcp://`, no TLS). Host
//! commands, which SSH would run in the node's shell, run in one long-lived helper container
//! ([`HELPER_NAME`], the cluster's `alpine` system image: rke-tools, which has `nsenter` and
//! `socat`), privileged and in the host's PID and network namespaces: each command is a
//! `docker exec` of `nsenter -t 1 -m -u -i -n -p -- sh -c COMMAND`, i.e. the host's own shell
//! in all of the host's namespaces. TCP connections "from the node" (health checks) are a
//! `socat` exec in that helper. The helper runs as long as the link holds its stdin open:
//! closing the link, dropping it or killing rkers ends and removes it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::StartExecResults;
use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::io::AsyncWriteExt;

use super::container::{ContainerSpec, ToCreateBody};
use super::docker::{DockerClient, StreamOpener};
use super::error::HostError;
use super::link::{HostLink, LinkOpener};
use super::ssh::{BoxedStream, ExecOutput};
use super::target::{RegistryCredential, SshTarget};

/// The helper container host commands run in. Not an RKE1 name: RKE1 ran them in the
/// process itself, on the machine it ran on.
pub const HELPER_NAME: &str = "rkers-local-shell";

/// RKE1's default when `DOCKER_HOST` is unset.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// Where the local Docker daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockerEndpoint {
    Unix(PathBuf),
    /// `host:port`, plain HTTP (Docker's unencrypted TCP listener).
    Tcp(String),
}

/// A `DOCKER_HOST` value rkers cannot reach Docker through.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DockerHostError {
    #[error("DOCKER_HOST={value:?} names no socket path")]
    NoPath { value: String },
    #[error("DOCKER_HOST={value:?} names no address")]
    NoAddress { value: String },
    #[error(
        "DOCKER_HOST={value:?} is not supported: use unix:///path/to/docker.sock or \
         tcp://host:port (TLS is not supported)"
    )]
    Unsupported { value: String },
}

impl DockerEndpoint {
    /// Reads a `DOCKER_HOST` value (`None` or empty: the default socket).
    pub fn parse(docker_host: Option<&str>) -> Result<DockerEndpoint, DockerHostError> {
        let value = docker_host
            .filter(|v| !v.is_empty())
            .unwrap_or(DEFAULT_DOCKER_HOST);
        if let Some(path) = value.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(DockerHostError::NoPath {
                    value: value.to_string(),
                });
            }
            return Ok(DockerEndpoint::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = value.strip_prefix("tcp://") {
            let addr = addr.trim_end_matches('/');
            if addr.is_empty() {
                return Err(DockerHostError::NoAddress {
                    value: value.to_string(),
                });
            }
            let addr = if addr
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            {
                addr.to_string()
            } else {
                format!("{addr}:2375")
            };
            return Ok(DockerEndpoint::Tcp(addr));
        }
        Err(DockerHostError::Unsupported {
            value: value.to_string(),
        })
    }

    pub async fn connect(&self) -> std::io::Result<BoxedStream> {
        match self {
            DockerEndpoint::Unix(path) => {
                Ok(Box::new(tokio::net::UnixStream::connect(path).await?))
            }
            DockerEndpoint::Tcp(addr) => Ok(Box::new(tokio::net::TcpStream::connect(addr).await?)),
        }
    }

    pub fn opener(self: &Arc<Self>) -> StreamOpener {
        let endpoint = self.clone();
        Arc::new(move || {
            let endpoint = endpoint.clone();
            Box::pin(async move { endpoint.connect().await })
        })
    }
}

impl std::fmt::Display for DockerEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DockerEndpoint::Unix(p) => write!(f, "unix://{}", p.display()),
            DockerEndpoint::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

/// Opens the [`LocalLink`] for every host of the run (local mode has one).
pub struct LocalLinks {
    pub endpoint: DockerEndpoint,
    /// The helper's image (the cluster's `alpine` system image).
    pub helper_image: String,
    pub registries: Vec<RegistryCredential>,
    pub docker_timeout: Duration,
}

impl LinkOpener for LocalLinks {
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        Some(Box::pin(async move {
            let link = LocalLink::open(
                &target.name,
                Arc::new(self.endpoint.clone()),
                &self.helper_image,
                &self.registries,
                self.docker_timeout,
            )
            .await?;
            Ok(Arc::new(link) as Arc<dyn HostLink>)
        }))
    }
}

/// One host reached through a container on a Docker daemon: commands are `docker exec`s in
/// it, the node's Docker API is `node_docker`. Local mode: the helper container, in every
/// namespace of the daemon's host. `--dind`: the node's own `rke-dind-<address>` container.
pub struct LocalLink {
    host: String,
    addr: String,
    /// The node's Docker API.
    node_docker: Arc<DockerEndpoint>,
    /// The daemon `container` runs on.
    docker: DockerClient,
    container: String,
    /// Whether commands enter the namespaces of PID 1 (the helper) or run in the container
    /// itself (a dind node).
    enter_host: bool,
    /// The helper's stdin, which keeps it alive (`None` for a dind node, which stays).
    lifeline: std::sync::Mutex<Option<ExecInput>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for LocalLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLink")
            .field("host", &self.host)
            .field("addr", &self.addr)
            .field("container", &self.container)
            .finish()
    }
}

impl LocalLink {
    /// Reaches the daemon and starts the helper (replacing one a killed run left behind).
    pub async fn open(
        host: &str,
        endpoint: Arc<DockerEndpoint>,
        helper_image: &str,
        registries: &[RegistryCredential],
        timeout: Duration,
    ) -> Result<LocalLink, HostError> {
        let addr = endpoint.to_string();
        let docker = DockerClient::connect_with(host, &addr, endpoint.opener(), timeout).await?;
        docker.remove_container(HELPER_NAME).await?;
        docker
            .ensure_image(helper_image, registries, &mut |_| {})
            .await?;
        let spec = ContainerSpec {
            image: helper_image.to_owned(),
            entrypoint: vec!["cat".into()],
            network_mode: Some("host".into()),
            pid_mode: Some("host".into()),
            privileged: true,
            ..Default::default()
        };
        // Its main process reads the stdin this link holds open: when the link goes (closed,
        // dropped, or rkers killed), it ends and Docker removes the container.
        let mut body = spec.to_create_body();
        body.open_stdin = Some(true);
        body.stdin_once = Some(true);
        body.attach_stdin = Some(true);
        if let Some(host_config) = body.host_config.as_mut() {
            host_config.auto_remove = Some(true);
        }
        let helper_err = |what: &str, e: bollard::errors::Error| HostError::Container {
            host: host.to_owned(),
            container: HELPER_NAME.to_owned(),
            detail: format!("{what}: {e}"),
        };
        let options = bollard::query_parameters::CreateContainerOptions {
            name: Some(HELPER_NAME.to_owned()),
            ..Default::default()
        };
        docker
            .raw()
            .create_container(Some(options), body)
            .await
            .map_err(|e| helper_err("create", e))?;
        let attach = bollard::query_parameters::AttachContainerOptions {
            stdin: true,
            stream: true,
            ..Default::default()
        };
        let lifeline = docker
            .raw()
            .attach_container(HELPER_NAME, Some(attach))
            .await
            .map_err(|e| helper_err("attach", e))?
            .input;
        docker.start_container(HELPER_NAME).await?;
        Ok(LocalLink {
            host: host.to_owned(),
            addr,
            node_docker: endpoint,
            docker,
            container: HELPER_NAME.to_owned(),
            enter_host: true,
            lifeline: std::sync::Mutex::new(Some(lifeline)),
            closed: AtomicBool::new(false),
        })
    }

    /// A dind node: commands run in `container` on the daemon `outer` names, the node's Docker
    /// API is `node_docker`.
    pub async fn in_container(
        host: &str,
        outer: Arc<DockerEndpoint>,
        container: &str,
        node_docker: DockerEndpoint,
        timeout: Duration,
    ) -> Result<LocalLink, HostError> {
        let docker =
            DockerClient::connect_with(host, &outer.to_string(), outer.opener(), timeout).await?;
        Ok(LocalLink {
            host: host.to_owned(),
            addr: format!("{container} on {outer}"),
            node_docker: Arc::new(node_docker),
            docker,
            container: container.to_owned(),
            enter_host: false,
            lifeline: std::sync::Mutex::new(None),
            closed: AtomicBool::new(false),
        })
    }

    fn shell(&self, command: &str) -> Vec<String> {
        if self.enter_host {
            host_shell(command)
        } else {
            ["sh", "-c", command]
                .iter()
                .map(|s| s.to_string())
                .collect()
        }
    }

    fn exec_err(&self, shown: &str, detail: String) -> HostError {
        HostError::Exec {
            host: self.host.clone(),
            command: shown.to_owned(),
            detail: format!(
                "{detail} (run in the {} container on {})",
                self.container, self.addr
            ),
        }
    }

    /// Starts `argv` in the container with its stdio attached: the exec's id, its output and
    /// its stdin.
    async fn start(
        &self,
        argv: Vec<String>,
        shown: &str,
        stdin: bool,
    ) -> Result<(String, ExecOutputStream, ExecInput), HostError> {
        let raw = self.docker.raw();
        let config = bollard::models::ExecConfig {
            cmd: Some(argv),
            attach_stdin: Some(stdin),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let exec = raw
            .create_exec(&self.container, config)
            .await
            .map_err(|e| self.exec_err(shown, format!("docker exec: {e}")))?;
        let started = raw
            .start_exec(&exec.id, None)
            .await
            .map_err(|e| self.exec_err(shown, format!("docker exec start: {e}")))?;
        match started {
            StartExecResults::Attached { output, input } => Ok((exec.id, output, input)),
            StartExecResults::Detached => {
                Err(self.exec_err(shown, "docker did not attach to it".into()))
            }
        }
    }

    async fn run(
        &self,
        command: &str,
        shown: &str,
        input: Option<&[u8]>,
    ) -> Result<ExecOutput, HostError> {
        let (id, mut output, mut stdin) = self
            .start(self.shell(command), shown, input.is_some())
            .await?;
        let feed = async {
            if let Some(data) = input {
                stdin.write_all(data).await?;
                stdin.shutdown().await?;
            }
            Ok::<(), std::io::Error>(())
        };
        let collect = async {
            let mut out = ExecOutput::default();
            while let Some(item) = output.next().await {
                match item.map_err(|e| self.exec_err(shown, e.to_string()))? {
                    LogOutput::StdErr { message } => out.stderr.extend_from_slice(&message),
                    LogOutput::StdOut { message } | LogOutput::Console { message } => {
                        out.stdout.extend_from_slice(&message)
                    }
                    LogOutput::StdIn { .. } => {}
                }
            }
            Ok::<ExecOutput, HostError>(out)
        };
        let (fed, out) = tokio::join!(feed, collect);
        let mut out = out?;
        // The output ends when the process does; its exit code shows up right after.
        for _ in 0..50 {
            let state = self
                .docker
                .raw()
                .inspect_exec(&id)
                .await
                .map_err(|e| self.exec_err(shown, format!("docker exec inspect: {e}")))?;
            if state.running != Some(true) {
                out.exit_status = state.exit_code.and_then(|c| u32::try_from(c).ok());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Err(e) = fed
            && out.success()
        {
            return Err(self.exec_err(shown, format!("writing its input failed: {e}")));
        }
        Ok(out)
    }

    /// `argv` in the container as one byte stream: its stdin, and its stdout (stderr dropped).
    async fn stream(&self, argv: Vec<String>, shown: &str) -> Result<BoxedStream, HostError> {
        let (_, mut output, mut stdin) = self.start(argv, shown, true).await?;
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (mut from_caller, mut to_caller) = tokio::io::split(theirs);
        tokio::spawn(async move {
            while let Some(Ok(item)) = output.next().await {
                if let LogOutput::StdOut { message } = item
                    && to_caller.write_all(&message).await.is_err()
                {
                    break;
                }
            }
            let _ = to_caller.shutdown().await;
        });
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut from_caller, &mut stdin).await;
            let _ = stdin.shutdown().await;
        });
        Ok(Box::new(ours))
    }
}

type ExecOutputStream = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>,
>;
type ExecInput = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// `command` in the host's own shell, in every namespace of the host's PID 1.
fn host_shell(command: &str) -> Vec<String> {
    [
        "nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", command,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl HostLink for LocalLink {
    fn host(&self) -> &str {
        &self.host
    }
    fn addr(&self) -> &str {
        &self.addr
    }
    fn user(&self) -> &str {
        "root"
    }
    fn exec<'a>(&'a self, command: &'a str) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        Box::pin(self.run(command, command, None))
    }
    fn exec_with_input<'a>(
        &'a self,
        command: &'a str,
        shown: &'a str,
        input: &'a [u8],
    ) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        Box::pin(self.run(command, shown, Some(input)))
    }
    fn exec_stream<'a>(
        &'a self,
        command: &'a str,
    ) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        Box::pin(self.stream(self.shell(command), command))
    }
    fn open_tcp<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        Box::pin(async move {
            // The helper shares the host's network namespace; a dind node's image may lack
            // socat (docker:*-dind has busybox nc).
            let shown = format!("socat STDIO TCP:{host}:{port}");
            let argv = if self.enter_host {
                vec!["socat".into(), "STDIO".into(), format!("TCP:{host}:{port}")]
            } else {
                let h = shell_words::quote(host);
                self.shell(&format!(
                    "if command -v socat >/dev/null; then exec socat STDIO TCP:{h}:{port}; \
                     else exec nc {h} {port}; fi"
                ))
            };
            self.stream(argv, &shown).await
        })
    }
    fn open_docker<'a>(&'a self, _socket: &'a str) -> BoxFuture<'a, std::io::Result<BoxedStream>> {
        Box::pin(self.node_docker.connect())
    }
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let lifeline = self
                .lifeline
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if !self.closed.swap(true, Ordering::Relaxed)
                && lifeline.is_some()
                && let Err(e) = self.docker.remove_container(&self.container).await
            {
                tracing::warn!(host = self.host, "{e}");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_host_values() {
        assert_eq!(
            DockerEndpoint::parse(None).unwrap(),
            DockerEndpoint::Unix("/var/run/docker.sock".into())
        );
        assert_eq!(
            DockerEndpoint::parse(Some("unix:///proc/7/root/run/docker.sock")).unwrap(),
            DockerEndpoint::Unix("/proc/7/root/run/docker.sock".into())
        );
        assert_eq!(
            DockerEndpoint::parse(Some("tcp://10.0.0.2")).unwrap(),
            DockerEndpoint::Tcp("10.0.0.2:2375".into())
        );
        assert_eq!(
            DockerEndpoint::parse(Some("tcp://10.0.0.2:2376/")).unwrap(),
            DockerEndpoint::Tcp("10.0.0.2:2376".into())
        );
        let e = DockerEndpoint::parse(Some("ssh://me@box"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not supported"), "{e}");
    }
}
