//! How Docker requests reach a node's daemon: the transport kinds and why one was chosen, the
//! Windows dial-stdio command, and the per-request stream opener with its HTTP/1.1 exchange.

use std::sync::Arc;

use bollard::BollardRequest;
use bollard::errors::Error as BollardError;
use hyper_util::rt::TokioIo;
use serde::Serialize;

use crate::hosts::link::HostLink;
use crate::hosts::ssh::{BoxedStream, SshSession};

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
pub(super) enum Opener {
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
pub(super) async fn send_over_channel(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
