//! Docker over SSH: a bollard client whose transport opens one SSH channel per request to the
//! node's Docker socket (`direct-streamlocal`), or runs `docker system dial-stdio` on an exec
//! channel when that cannot work: up front on Windows (Win32-OpenSSH cannot forward to Docker's
//! named pipe), after a refusal when sshd disables stream-local forwarding. The choice and its
//! reason are kept per host ([`DockerClient::transport`], [`DockerClient::transport_reason`]).
//! On top of it, the small typed layer the rest of rkers uses: images, containers, one-shot
//! helpers, file upload.
//!
//! The client itself and its plain daemon queries live here; the transport, the connection,
//! images, containers, exec, files and the error mapping each have their own file.

use bollard::Docker;
use bollard::models::{SystemInfo, SystemVersion};

use super::error::HostError;

mod connect;
mod containers;
mod errors;
mod exec;
mod files;
mod images;
mod transport;

pub use containers::OneShotResult;
pub use files::UploadOptions;
pub use images::{PullProgress, registry_for_image, registry_key};
pub use transport::{
    DockerTransport, NotAPipe, StreamOpener, TransportReason, windows_dial_stdio_command,
};

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
}
