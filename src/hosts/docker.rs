//! Docker over SSH: a bollard client whose transport opens one SSH channel per request to the
//! node's Docker socket (`direct-streamlocal`), or runs `docker system dial-stdio` on an exec
//! channel when that cannot work: up front on Windows (Win32-OpenSSH cannot forward to Docker's
//! named pipe), after a refusal when sshd disables stream-local forwarding. The choice and its
//! reason are kept per host ([`DockerClient::transport`], [`DockerClient::transport_reason`]).
//! On top of it, the small typed layer the rest of rkers uses: images, containers, one-shot
//! helpers, file upload.

use std::sync::Arc;
use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::models::{SystemInfo, SystemVersion};
use bollard::query_parameters::{
    CreateContainerOptions, CreateImageOptions, DownloadFromContainerOptions, LogsOptions,
    RemoveContainerOptions, RenameContainerOptions, StopContainerOptions, UploadToContainerOptions,
};
use bollard::{BollardRequest, Docker};
use futures::StreamExt;
use hyper_util::rt::TokioIo;
use serde::Serialize;

use super::container::{ContainerSpec, ObservedContainer, ToCreateBody};
use super::error::HostError;
use super::link::HostLink;
use super::ssh::{BoxedStream, SshSession, UnixOpenError};
use super::target::RegistryCredential;

/// How Docker requests reach the node's daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DockerTransport {
    /// `direct-streamlocal@openssh.com` channel to the socket (the normal case).
    StreamLocal,
    /// `docker system dial-stdio` on an exec channel (sshd refuses stream-local forwarding).
    DialStdio,
    /// The stream a plugged host link opens (not SSH: `up --local`, `--dind`, a library
    /// user's transport).
    Link,
}

/// Why a host's Docker transport was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportReason {
    /// sshd forwards to the Docker socket.
    SocketForwarded,
    /// The SSH server is Win32-OpenSSH, which cannot forward to a named pipe
    /// (`\\.\pipe\docker_engine`), so dial-stdio is used without trying.
    WindowsSshServer,
    /// sshd refused stream-local forwarding to the socket.
    ForwardingRefused,
    /// The host is not reached over SSH; its link opens the Docker streams.
    PluggedLink,
}

impl std::fmt::Display for TransportReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TransportReason::SocketForwarded => "sshd forwards to the socket",
            TransportReason::WindowsSshServer => {
                "Windows SSH server: named pipes cannot be forwarded"
            }
            TransportReason::ForwardingRefused => "sshd refused stream-local forwarding",
            TransportReason::PluggedLink => "the host's link is not SSH",
        })
    }
}

/// A Windows host's `docker_socket` that cannot be passed to docker.exe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("docker_socket {socket:?} is not a plain named pipe path (npipe:////./pipe/<name>)")]
pub struct NotAPipe {
    pub socket: String,
}

/// The dial-stdio command for a Windows host. The default socket of cluster.yml is a Unix
/// path that means nothing there, so only an explicit named pipe (`npipe:////./pipe/x` or
/// `//./pipe/x`) is passed on; otherwise docker.exe uses its own default pipe. The pipe name
/// goes through cmd.exe unquoted, so only plain characters are accepted.
pub fn windows_dial_stdio_command(socket: &str) -> Result<String, NotAPipe> {
    let pipe = if let Some(rest) = socket.strip_prefix("npipe://") {
        Some(rest.replace('\\', "/"))
    } else {
        let s = socket.replace('\\', "/");
        s.starts_with("//./pipe/").then_some(s)
    };
    match pipe {
        None => Ok("docker system dial-stdio".into()),
        Some(p) => {
            if p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
            {
                return Err(NotAPipe {
                    socket: socket.to_string(),
                });
            }
            Ok(format!("docker -H npipe://{p} system dial-stdio"))
        }
    }
}

impl std::fmt::Display for DockerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DockerTransport::StreamLocal => "stream-local",
            DockerTransport::DialStdio => "dial-stdio",
            DockerTransport::Link => "link",
        })
    }
}

#[derive(Clone)]
enum Opener {
    StreamLocal {
        ssh: Arc<SshSession>,
        socket: String,
    },
    DialStdio {
        ssh: Arc<SshSession>,
        command: String,
    },
    Link {
        link: Arc<dyn HostLink>,
        socket: String,
    },
    Custom(StreamOpener),
}

/// Opens a fresh stream to a Docker API, one per HTTP exchange.
pub type StreamOpener = Arc<
    dyn Fn() -> futures::future::BoxFuture<'static, std::io::Result<BoxedStream>> + Send + Sync,
>;

impl Opener {
    async fn open(&self) -> std::io::Result<BoxedStream> {
        match self {
            Opener::StreamLocal { ssh, socket } => HostLink::open_docker(&**ssh, socket).await,
            Opener::DialStdio { ssh, command } => ssh
                .exec_stream(command)
                .await
                .map_err(|e| std::io::Error::other(e.to_string())),
            Opener::Link { link, socket } => link.open_docker(socket).await,
            Opener::Custom(open) => open().await,
        }
    }
}

/// One HTTP/1.1 exchange over a fresh channel. `with_upgrades` keeps attach/exec hijacking
/// working; the Host header is required by dockerd.
async fn send_over_channel(
    opener: Opener,
    req: BollardRequest,
) -> Result<http::Response<hyper::body::Incoming>, BollardError> {
    let stream = opener.open().await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let (mut parts, body) = req.into_parts();
    if let Some(pq) = parts.uri.path_and_query() {
        parts.uri = pq
            .as_str()
            .parse()
            .map_err(|e: http::uri::InvalidUri| std::io::Error::other(e.to_string()))?;
    }
    parts
        .headers
        .insert(http::header::HOST, http::HeaderValue::from_static("docker"));
    Ok(sender
        .send_request(BollardRequest::from_parts(parts, body))
        .await?)
}

/// Progress of an image pull, one event per status line Docker sends.
#[derive(Clone, Debug, Default)]
pub struct PullProgress {
    pub image: String,
    pub layer: Option<String>,
    pub status: String,
    pub current: Option<i64>,
    pub total: Option<i64>,
}

/// Result of a one-shot helper container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OneShotResult {
    pub exit_code: i64,
    /// The last lines of its stdout and stderr, interleaved as Docker returns them.
    pub logs: String,
}

/// How to write a file onto the host.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    /// Image of the helper container (any image; it is created but never started).
    pub helper_image: String,
    /// Unix permission bits of the file.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    /// Extra security options for the helper (e.g. an SELinux label, spec §13).
    pub security_opt: Vec<String>,
}

impl UploadOptions {
    pub fn new(helper_image: impl Into<String>) -> Self {
        UploadOptions {
            helper_image: helper_image.into(),
            mode: 0o600,
            uid: 0,
            gid: 0,
            security_opt: Vec::new(),
        }
    }
}

/// The Docker daemon of one host.
#[derive(Clone)]
pub struct DockerClient {
    host: String,
    socket: String,
    docker: Docker,
    transport: DockerTransport,
    transport_reason: TransportReason,
    api_version: String,
    transport_note: Option<String>,
}

impl std::fmt::Debug for DockerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerClient")
            .field("host", &self.host)
            .field("socket", &self.socket)
            .field("transport", &self.transport)
            .field("transport_reason", &self.transport_reason)
            .field("api_version", &self.api_version)
            .finish()
    }
}

impl DockerClient {
    /// Reaches the daemon on `socket` through `ssh`, picks the transport and negotiates the
    /// API version. Errors say which of socket missing / permission denied / not answering /
    /// forwarding refused applies.
    pub async fn connect(
        ssh: Arc<SshSession>,
        socket: &str,
        timeout: Duration,
    ) -> Result<DockerClient, HostError> {
        let host = ssh.host().to_owned();
        if ssh.is_windows_openssh() {
            return Self::connect_windows(ssh, socket, timeout).await;
        }
        let refusal = match ssh.open_unix(socket).await {
            Ok(probe) => {
                drop(probe);
                let opener = Opener::StreamLocal {
                    ssh: ssh.clone(),
                    socket: socket.to_owned(),
                };
                return match Self::build(
                    &host,
                    socket,
                    opener,
                    (
                        DockerTransport::StreamLocal,
                        TransportReason::SocketForwarded,
                    ),
                    timeout,
                )
                .await
                {
                    Ok(c) => Ok(c),
                    Err(e) => match diagnose_socket(&ssh, socket).await {
                        state @ (SocketState::Missing
                        | SocketState::Denied
                        | SocketState::NotSocket) => Err(socket_error(&ssh, socket, state)),
                        _ => Err(e),
                    },
                };
            }
            Err(UnixOpenError::Session(e)) => return Err(e),
            Err(UnixOpenError::Prohibited(reason)) => reason,
            // OpenSSH answers "connect failed" both when the socket cannot be opened and when
            // stream-local forwarding is disabled, so look at the socket from a shell first.
            Err(UnixOpenError::ConnectFailed(reason)) => {
                match diagnose_socket(&ssh, socket).await {
                    state @ (SocketState::Missing
                    | SocketState::Denied
                    | SocketState::NotSocket) => {
                        return Err(socket_error(&ssh, socket, state));
                    }
                    _ => reason,
                }
            }
        };
        // The socket looks fine but sshd would not forward to it: either sshd refuses
        // stream-local forwarding or nothing listens. `docker system dial-stdio` on an exec
        // channel works in the first case.
        let command = format!(
            "docker -H {} system dial-stdio",
            shell_words::quote(&format!("unix://{socket}"))
        );
        let opener = Opener::DialStdio {
            ssh: ssh.clone(),
            command,
        };
        let choice = (
            DockerTransport::DialStdio,
            TransportReason::ForwardingRefused,
        );
        match Self::build(&host, socket, opener, choice, timeout).await {
            Ok(mut c) => {
                let note = format!(
                    "sshd refused stream-local forwarding to {socket} ({refusal}); using `docker system dial-stdio` over SSH instead. Allow it with AllowStreamLocalForwarding yes / AllowTcpForwarding yes (and no DisableForwarding yes) in sshd_config for faster Docker calls"
                );
                tracing::warn!(host, "{note}");
                c.transport_note = Some(note);
                Ok(c)
            }
            Err(fallback) => {
                // Ask the docker CLI on the node whether the daemon itself answers.
                let probe = ssh
                    .exec(&format!(
                        "docker -H {} version --format '{{{{.Server.Version}}}}'",
                        shell_words::quote(&format!("unix://{socket}"))
                    ))
                    .await;
                match probe {
                    Ok(out) if out.success() => Err(HostError::DockerNoTransport {
                        host,
                        socket: socket.to_owned(),
                        forward_detail: refusal,
                        fallback_detail: fallback.to_string(),
                    }),
                    Ok(out) if out.exit_status == Some(127) => Err(HostError::DockerNotAnswering {
                        host,
                        socket: socket.to_owned(),
                        detail: format!(
                            "the socket exists but sshd could not connect to it ({refusal}): either dockerd is not running, or sshd refuses stream-local forwarding (AllowStreamLocalForwarding, AllowTcpForwarding, DisableForwarding in sshd_config) and the docker CLI is not installed for the dial-stdio fallback"
                        ),
                    }),
                    _ => Err(HostError::DockerNotAnswering {
                        host,
                        socket: socket.to_owned(),
                        detail: "the socket exists but nothing answers on it: is dockerd running (systemctl status docker)?".into(),
                    }),
                }
            }
        }
    }

    /// Reaches the daemon through a plugged link's Docker streams and negotiates the API
    /// version.
    pub async fn connect_link(
        link: Arc<dyn HostLink>,
        socket: &str,
        timeout: Duration,
    ) -> Result<DockerClient, HostError> {
        let host = link.host().to_owned();
        let opener = Opener::Link {
            link,
            socket: socket.to_owned(),
        };
        let choice = (DockerTransport::Link, TransportReason::PluggedLink);
        Self::build(&host, socket, opener, choice, timeout).await
    }

    /// A client of the daemon `open` reaches (a link's own Docker, before any host link
    /// exists); `endpoint` names it in messages.
    pub async fn connect_with(
        host: &str,
        endpoint: &str,
        open: StreamOpener,
        timeout: Duration,
    ) -> Result<DockerClient, HostError> {
        let choice = (DockerTransport::Link, TransportReason::PluggedLink);
        Self::build(host, endpoint, Opener::Custom(open), choice, timeout).await
    }

    /// A Windows host (Win32-OpenSSH): dial-stdio from the start, since the SSH server cannot
    /// forward to a named pipe and its shell is not POSIX (no socket diagnosis either).
    async fn connect_windows(
        ssh: Arc<SshSession>,
        socket: &str,
        timeout: Duration,
    ) -> Result<DockerClient, HostError> {
        let host = ssh.host().to_owned();
        let command =
            windows_dial_stdio_command(socket).map_err(|e| HostError::DockerNotAnswering {
                host: host.clone(),
                socket: socket.to_owned(),
                detail: e.to_string(),
            })?;
        let opener = Opener::DialStdio {
            ssh: ssh.clone(),
            command: command.clone(),
        };
        let choice = (
            DockerTransport::DialStdio,
            TransportReason::WindowsSshServer,
        );
        Self::build(&host, socket, opener, choice, timeout)
            .await
            .map_err(|e| HostError::DockerNotAnswering {
                host: host.clone(),
                socket: socket.to_owned(),
                detail: format!(
                    "the SSH server is Win32-OpenSSH ({}), so Docker is reached with `{command}` on an exec channel, and that failed: {e}. Is docker.exe on the SSH user's PATH, is the docker service running, and is the user an Administrator?",
                    ssh.server_id()
                ),
            })
    }

    async fn build(
        host: &str,
        socket: &str,
        opener: Opener,
        (transport, transport_reason): (DockerTransport, TransportReason),
        timeout: Duration,
    ) -> Result<DockerClient, HostError> {
        let docker = Docker::connect_with_custom_transport(
            move |req: BollardRequest| send_over_channel(opener.clone(), req),
            Some("http://docker"),
            timeout.as_secs().max(1),
            bollard::API_DEFAULT_VERSION,
        )
        .map_err(|e| HostError::Docker {
            host: host.to_owned(),
            op: "client setup".into(),
            detail: e.to_string(),
        })?;
        let not_answering = |detail: String| HostError::DockerNotAnswering {
            host: host.to_owned(),
            socket: socket.to_owned(),
            detail,
        };
        // Negotiation is the first request: it also proves the daemon answers.
        let docker = match tokio::time::timeout(timeout, docker.negotiate_version()).await {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => return Err(not_answering(e.to_string())),
            Err(_) => {
                return Err(not_answering(format!(
                    "no answer within {}s",
                    timeout.as_secs()
                )));
            }
        };
        let v = docker.client_version();
        Ok(DockerClient {
            host: host.to_owned(),
            socket: socket.to_owned(),
            api_version: format!("{}.{}", v.major_version, v.minor_version),
            docker,
            transport,
            transport_reason,
            transport_note: None,
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }
    pub fn transport(&self) -> DockerTransport {
        self.transport
    }
    pub fn transport_reason(&self) -> TransportReason {
        self.transport_reason
    }
    /// Why a fallback transport is used, as a warning for reports.
    pub fn transport_note(&self) -> Option<&str> {
        self.transport_note.as_deref()
    }
    /// The negotiated API version, e.g. `1.41`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }
    /// The underlying bollard client, for calls this layer does not wrap.
    pub fn raw(&self) -> &Docker {
        &self.docker
    }

    fn err(&self, op: impl Into<String>, e: BollardError) -> HostError {
        HostError::Docker {
            host: self.host.clone(),
            op: op.into(),
            detail: describe_bollard(e),
        }
    }

    fn cerr(&self, container: &str, what: &str, e: BollardError) -> HostError {
        HostError::Container {
            host: self.host.clone(),
            container: container.to_owned(),
            detail: format!("{what}: {}", describe_bollard(e)),
        }
    }

    pub async fn info(&self) -> Result<SystemInfo, HostError> {
        self.docker
            .info()
            .await
            .map_err(|e| self.err("docker info", e))
    }

    pub async fn version(&self) -> Result<SystemVersion, HostError> {
        self.docker
            .version()
            .await
            .map_err(|e| self.err("docker version", e))
    }

    pub async fn ping(&self) -> Result<(), HostError> {
        self.docker
            .ping()
            .await
            .map(|_| ())
            .map_err(|e| self.err("ping", e))
    }

    pub async fn image_exists(&self, image: &str) -> Result<bool, HostError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(self.err(format!("inspect image {image}"), e)),
        }
    }

    /// Pulls `image` with the matching credentials from `registries` (spec §8.6), reporting
    /// each status line to `progress`.
    pub async fn pull_image(
        &self,
        image: &str,
        registries: &[RegistryCredential],
        progress: &mut (dyn FnMut(PullProgress) + Send),
    ) -> Result<(), HostError> {
        let (repo, tag) = split_image(image);
        let creds =
            registry_for_image(image, registries).map(|r| bollard::auth::DockerCredentials {
                username: Some(r.user.clone()),
                password: Some(r.password.expose().to_owned()),
                serveraddress: Some(r.url.clone()),
                ..Default::default()
            });
        let opts = CreateImageOptions {
            from_image: Some(repo.to_owned()),
            tag: Some(tag.to_owned()),
            ..Default::default()
        };
        let mut stream = self.docker.create_image(Some(opts), None, creds);
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| self.err(format!("pull {image}"), e))?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err(HostError::Docker {
                    host: self.host.clone(),
                    op: format!("pull {image}"),
                    detail: err,
                });
            }
            let detail = info.progress_detail.unwrap_or_default();
            progress(PullProgress {
                image: image.to_owned(),
                layer: info.id,
                status: info.status.unwrap_or_default(),
                current: detail.current,
                total: detail.total,
            });
        }
        Ok(())
    }

    /// Makes sure `image` is present: inspect, else pull (up to 3 attempts, as RKE1).
    /// Returns whether a pull happened.
    pub async fn ensure_image(
        &self,
        image: &str,
        registries: &[RegistryCredential],
        progress: &mut (dyn FnMut(PullProgress) + Send),
    ) -> Result<bool, HostError> {
        if self.image_exists(image).await? {
            return Ok(false);
        }
        // Held over the retries: a host that failed once keeps its turn at the registry.
        let _turn = super::pulls::PullGate::global().permit(image).await;
        let mut last = None;
        for attempt in 0..3u64 {
            match self.pull_image(image, registries, progress).await {
                Ok(()) => return Ok(true),
                Err(e) => {
                    let msg = e.to_string();
                    last = Some(e);
                    // Authentication and missing images do not heal with retries.
                    if msg.contains("unauthorized")
                        || msg.contains("not found")
                        || msg.contains("no basic auth")
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(500 * (attempt + 1))).await;
                }
            }
        }
        Err(last.expect("at least one attempt"))
    }

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
            let lines: Vec<&str> = r.logs.lines().filter(|l| !l.trim().is_empty()).collect();
            let last = &lines[lines.len().saturating_sub(5)..];
            return Err(HostError::Container {
                host: self.host().to_string(),
                container: name.to_string(),
                detail: format!("exited with {}: {}", r.exit_code, last.join("\n    ")),
            });
        }
        Ok(r.logs)
    }

    /// Reads one file out of `image` (already on the host): the first of `candidates` that
    /// exists, with the path it was found at, or `None` when none does. The container is
    /// created, never started (Windows serves the archive API only for stopped containers),
    /// and removed again.
    pub async fn read_image_file(
        &self,
        name: &str,
        image: &str,
        candidates: &[&str],
    ) -> Result<Option<(String, Vec<u8>)>, HostError> {
        self.remove_container(name).await?;
        let spec = ContainerSpec {
            image: image.to_string(),
            ..Default::default()
        };
        self.create_container(name, &spec).await?;
        let found = async {
            for path in candidates {
                let mut stream = self.docker.download_from_container(
                    name,
                    Some(DownloadFromContainerOptions {
                        path: (*path).to_string(),
                    }),
                );
                let mut tar_bytes = Vec::new();
                let mut missing = false;
                while let Some(chunk) = stream.next().await {
                    match chunk {
                        Ok(b) => tar_bytes.extend_from_slice(&b),
                        Err(BollardError::DockerResponseServerError {
                            status_code: 404, ..
                        }) => {
                            missing = true;
                            break;
                        }
                        Err(e) => return Err(self.cerr(name, &format!("read {path}"), e)),
                    }
                }
                if missing {
                    continue;
                }
                let bad = |e: std::io::Error| HostError::Container {
                    host: self.host.clone(),
                    container: name.to_owned(),
                    detail: format!("read {path}: bad archive: {e}"),
                };
                let mut archive = tar::Archive::new(tar_bytes.as_slice());
                for entry in archive.entries().map_err(bad)? {
                    let mut entry = entry.map_err(bad)?;
                    if entry.header().entry_type() == tar::EntryType::Regular {
                        let mut contents = Vec::new();
                        std::io::Read::read_to_end(&mut entry, &mut contents).map_err(bad)?;
                        return Ok(Some(((*path).to_string(), contents)));
                    }
                }
            }
            Ok(None)
        }
        .await;
        let removed = self.remove_container(name).await;
        let found = found?;
        removed?;
        Ok(found)
    }

    /// Writes `bytes` to `path_on_host` byte for byte: a helper container bind-mounts the
    /// parent directory and the file goes in through the archive API, so no shell ever sees
    /// the content (RKE1's `echo -e` file deployer altered backslashes, spec §13, §33.4).
    pub async fn upload_file(
        &self,
        path_on_host: &str,
        bytes: &[u8],
        opts: &UploadOptions,
    ) -> Result<(), HostError> {
        let (dir, file_name) = match path_on_host.rsplit_once('/') {
            Some((d, f)) if path_on_host.starts_with('/') && !f.is_empty() => {
                (if d.is_empty() { "/" } else { d }, f)
            }
            _ => {
                return Err(HostError::Container {
                    host: self.host.clone(),
                    container: "file upload".into(),
                    detail: format!("{path_on_host:?} is not an absolute file path"),
                });
            }
        };
        // One name per target path: parallel uploads of different files do not collide, and
        // a helper left by an interrupted run is found and replaced.
        use sha2::Digest;
        let path_hash = hex::encode(&sha2::Sha256::digest(path_on_host.as_bytes())[..4]);
        let name = format!("rkers-file-upload-{}-{path_hash}", sanitize(file_name));
        const MOUNT: &str = "/rkers-upload-target";
        let spec = ContainerSpec {
            image: opts.helper_image.clone(),
            cmd: vec!["true".into()],
            binds: vec![format!("{dir}:{MOUNT}")],
            network_mode: Some("none".into()),
            security_opt: opts.security_opt.clone(),
            ..Default::default()
        };
        let tar = tar_one_file(file_name, bytes, opts.mode, opts.uid, opts.gid).map_err(|e| {
            HostError::Container {
                host: self.host.clone(),
                container: name.clone(),
                detail: format!("cannot build the archive: {e}"),
            }
        })?;
        self.remove_container(&name).await?;
        self.create_container(&name, &spec).await?;
        let upload = self
            .docker
            .upload_to_container(
                &name,
                Some(UploadToContainerOptions {
                    path: MOUNT.into(),
                    ..Default::default()
                }),
                bollard::body_full(tar.into()),
            )
            .await
            .map_err(|e| self.cerr(&name, &format!("upload {path_on_host}"), e));
        let removed = self.remove_container(&name).await;
        upload?;
        removed
    }

    /// Copies the file `path_on_host` of this host into the directory `dir_on_target` of
    /// `target`, keeping its name and mode. The bytes stream from one host's archive API to the
    /// other's through rkers, with a created (never started) helper container on each side, so
    /// a large file (an etcd snapshot) is never held in memory. `Ok(false)`: no such file here.
    pub async fn copy_file_to(
        &self,
        path_on_host: &str,
        target: &DockerClient,
        dir_on_target: &str,
        helper_image: &str,
    ) -> Result<bool, HostError> {
        let Some((dir, file_name)) = path_on_host
            .rsplit_once('/')
            .filter(|(_, f)| path_on_host.starts_with('/') && !f.is_empty())
        else {
            return Err(HostError::Container {
                host: self.host.clone(),
                container: "file copy".into(),
                detail: format!("{path_on_host:?} is not an absolute file path"),
            });
        };
        const SOURCE: &str = "/rkers-copy-source";
        const TARGET: &str = "/rkers-copy-target";
        let helper = |bind: String| ContainerSpec {
            image: helper_image.to_string(),
            cmd: vec!["true".into()],
            binds: vec![bind],
            network_mode: Some("none".into()),
            ..Default::default()
        };
        let name = format!("rkers-file-copy-{}", sanitize(file_name));
        let dir = if dir.is_empty() { "/" } else { dir };
        self.remove_container(&name).await?;
        self.create_container(&name, &helper(format!("{dir}:{SOURCE}:ro")))
            .await?;
        target.remove_container(&name).await?;
        if let Err(e) = target
            .create_container(&name, &helper(format!("{dir_on_target}:{TARGET}")))
            .await
        {
            let _ = self.remove_container(&name).await;
            return Err(e);
        }
        let copied = async {
            let mut tar = self.docker.download_from_container(
                &name,
                Some(DownloadFromContainerOptions {
                    path: format!("{SOURCE}/{file_name}"),
                }),
            );
            let first = match tar.next().await {
                None => return Ok(false),
                Some(Err(BollardError::DockerResponseServerError {
                    status_code: 404, ..
                })) => return Ok(false),
                Some(Err(e)) => return Err(self.cerr(&name, &format!("read {path_on_host}"), e)),
                Some(Ok(chunk)) => chunk,
            };
            let rest = tar.map(|r| r.map_err(std::io::Error::other));
            let body = futures::stream::once(async move { Ok(first) }).chain(rest);
            target
                .docker
                .upload_to_container(
                    &name,
                    Some(UploadToContainerOptions {
                        path: TARGET.into(),
                        ..Default::default()
                    }),
                    bollard::body_try_stream(body),
                )
                .await
                .map_err(|e| {
                    target.cerr(
                        &name,
                        &format!("write {dir_on_target}/{file_name} from host {}", self.host),
                        e,
                    )
                })?;
            Ok(true)
        }
        .await;
        let removed_here = self.remove_container(&name).await;
        let removed_there = target.remove_container(&name).await;
        let copied = copied?;
        removed_here?;
        removed_there?;
        Ok(copied)
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn tar_one_file(
    name: &str,
    bytes: &[u8],
    mode: u32,
    uid: u64,
    gid: u64,
) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    header.set_uid(uid);
    header.set_gid(gid);
    header.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    );
    header.set_entry_type(tar::EntryType::Regular);
    builder.append_data(&mut header, name, bytes)?;
    builder.into_inner()
}

pub(crate) fn is_not_found(e: &BollardError) -> bool {
    matches!(
        e,
        BollardError::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

fn describe_bollard(e: BollardError) -> String {
    match e {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => format!("{message} (HTTP {status_code})"),
        other => other.to_string(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SocketState {
    Missing,
    NotSocket,
    Denied,
    /// Exists, is a socket, and the user may read and write it.
    Usable,
    /// No shell answer (restricted account, no exec channel).
    Unknown,
}

/// Looks at the socket from a shell on the node, as the SSH user.
async fn diagnose_socket(ssh: &SshSession, socket: &str) -> SocketState {
    let q = shell_words::quote(socket);
    let script = format!(
        "s={q}; if [ ! -e \"$s\" ]; then echo missing; elif [ ! -S \"$s\" ]; then echo notsocket; elif [ -r \"$s\" ] && [ -w \"$s\" ]; then echo ok; else echo denied; fi"
    );
    match ssh.exec(&script).await {
        Ok(out) => match out.stdout_str().trim() {
            "missing" => SocketState::Missing,
            "notsocket" => SocketState::NotSocket,
            "denied" => SocketState::Denied,
            "ok" => SocketState::Usable,
            _ => SocketState::Unknown,
        },
        Err(_) => SocketState::Unknown,
    }
}

fn socket_error(ssh: &SshSession, socket: &str, state: SocketState) -> HostError {
    let host = ssh.host().to_owned();
    let socket = socket.to_owned();
    match state {
        SocketState::Missing => HostError::DockerSocketMissing { host, socket },
        SocketState::Denied => HostError::DockerPermissionDenied {
            host,
            socket,
            user: ssh.user().to_owned(),
        },
        SocketState::NotSocket => HostError::DockerNotAnswering {
            host,
            socket,
            detail: "the path exists but is not a socket".into(),
        },
        SocketState::Usable | SocketState::Unknown => HostError::DockerNotAnswering {
            host,
            socket,
            detail: "nothing answers on the socket: is dockerd running?".into(),
        },
    }
}

/// `repo[:tag]` split as Docker does (a `:` after the last `/` starts the tag).
fn split_image(image: &str) -> (&str, &str) {
    let image = image.split('@').next().unwrap_or(image);
    let slash = image.rfind('/').map(|i| i + 1).unwrap_or(0);
    match image[slash..].rfind(':') {
        Some(i) => (&image[..slash + i], &image[slash + i + 1..]),
        None => (image, "latest"),
    }
}

/// The registry key of an image (spec §8.6): its domain, plus the leading path components
/// when the path has more than two.
pub fn registry_key(image: &str) -> String {
    let (repo, _) = split_image(image);
    let parts: Vec<&str> = repo.split('/').collect();
    let has_domain = parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost");
    if !has_domain {
        return "docker.io".into();
    }
    let path = &parts[1..];
    if path.len() > 2 {
        format!("{}/{}", parts[0], path[..path.len() - 2].join("/"))
    } else {
        parts[0].to_owned()
    }
}

/// The credentials that apply to `image`, if any.
pub fn registry_for_image<'a>(
    image: &str,
    registries: &'a [RegistryCredential],
) -> Option<&'a RegistryCredential> {
    let key = registry_key(image);
    registries
        .iter()
        .find(|r| r.url.trim_end_matches('/') == key && !r.user.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_split_and_map_to_registries() {
        assert_eq!(
            split_image("10.77.0.1:5000/rkers/rke-tools:v1"),
            ("10.77.0.1:5000/rkers/rke-tools", "v1")
        );
        assert_eq!(split_image("alpine"), ("alpine", "latest"));
        assert_eq!(split_image("host:5000/a"), ("host:5000/a", "latest"));
        assert_eq!(registry_key("rancher/rke-tools:v0.1.100"), "docker.io");
        assert_eq!(
            registry_key("10.77.0.1:5000/rkers/rke-tools:v1"),
            "10.77.0.1:5000"
        );
        assert_eq!(
            registry_key("repo.com/foo/bar/rancher/rke-tools:v1"),
            "repo.com/foo/bar"
        );
        let regs = vec![RegistryCredential {
            url: "10.77.0.1:5000".into(),
            user: "u".into(),
            password: "p".into(),
        }];
        assert!(registry_for_image("10.77.0.1:5000/x/y:1", &regs).is_some());
        assert!(registry_for_image("other.io/x/y:1", &regs).is_none());
    }

    #[test]
    fn windows_dial_stdio_uses_an_explicit_pipe_only() {
        assert_eq!(
            windows_dial_stdio_command("/var/run/docker.sock").unwrap(),
            "docker system dial-stdio"
        );
        assert_eq!(
            windows_dial_stdio_command("npipe:////./pipe/docker_engine").unwrap(),
            "docker -H npipe:////./pipe/docker_engine system dial-stdio"
        );
        assert_eq!(
            windows_dial_stdio_command(r"\\.\pipe\dockerDesktopEngine").unwrap(),
            "docker -H npipe:////./pipe/dockerDesktopEngine system dial-stdio"
        );
        assert!(windows_dial_stdio_command("npipe:////./pipe/a&calc").is_err());
    }

    #[test]
    fn tar_holds_exact_bytes_and_mode() {
        let data = b"a\\nb\\t\x00\xff end";
        let tar = tar_one_file("f.conf", data, 0o640, 0, 0).unwrap();
        let mut ar = tar::Archive::new(&tar[..]);
        let mut e = ar.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(e.header().mode().unwrap(), 0o640);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut got).unwrap();
        assert_eq!(got, data);
    }
}
