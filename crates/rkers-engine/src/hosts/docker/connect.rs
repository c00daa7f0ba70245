//! Connecting to a host's daemon: picking the transport (stream-local, dial-stdio, a plugged
//! link), negotiating the API version, and saying why a socket cannot be used.

use std::sync::Arc;
use std::time::Duration;

use bollard::{BollardRequest, Docker};

use super::DockerClient;
use super::transport::{
    DockerTransport, Opener, StreamOpener, TransportReason, send_over_channel,
    windows_dial_stdio_command,
};
use crate::hosts::error::HostError;
use crate::hosts::link::HostLink;
use crate::hosts::ssh::{SshSession, UnixOpenError};

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
