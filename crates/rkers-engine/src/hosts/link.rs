//! What a phase needs from a host besides its Docker API: running a command (optionally with
//! stdin), a TCP connection made from the host itself, and the byte stream Docker requests go
//! over. [`HostLink`] is that contract; [`SshSession`] is its default implementation (one SSH
//! connection per host), and a [`LinkOpener`] plugs in another one (the local Docker daemon of
//! `up --local`, a Docker-in-Docker node, a library user's own dialer).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::error::HostError;
use super::ssh::{BoxedStream, ExecOutput, SshSession, UnixOpenError};
use super::target::SshTarget;

/// The connection to one host that every phase drives it through.
///
/// Commands are POSIX shell command lines (or a Windows host's shell, over SSH only). SSH-only
/// facts (host key verdict, bastion, Win32-OpenSSH) are read from [`HostLink::ssh`], which is
/// `None` for links that are not SSH.
pub trait HostLink: Send + Sync + std::fmt::Debug {
    /// The host's name in messages (cluster.yml's address).
    fn host(&self) -> &str;
    /// Where the link goes, for messages (`address:port` for SSH, the Docker endpoint else).
    fn addr(&self) -> &str;
    /// The user commands run as.
    fn user(&self) -> &str;
    /// Runs `command` and collects its output.
    fn exec<'a>(&'a self, command: &'a str) -> BoxFuture<'a, Result<ExecOutput, HostError>>;
    /// Runs `command` with `input` on stdin (then end of file). Errors name the command as
    /// `shown`: the input may hold keys.
    fn exec_with_input<'a>(
        &'a self,
        command: &'a str,
        shown: &'a str,
        input: &'a [u8],
    ) -> BoxFuture<'a, Result<ExecOutput, HostError>>;
    /// Starts `command` and returns its stdin/stdout as one stream (stderr is dropped).
    fn exec_stream<'a>(&'a self, command: &'a str)
    -> BoxFuture<'a, Result<BoxedStream, HostError>>;
    /// A TCP connection made from the host to `host:port` (health checks, etcd clients).
    fn open_tcp<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<BoxedStream, HostError>>;
    /// A fresh stream to the host's Docker API, one per HTTP exchange. `socket` is cluster.yml's
    /// `docker_socket`; a link that knows its daemon otherwise may ignore it.
    fn open_docker<'a>(&'a self, socket: &'a str) -> BoxFuture<'a, std::io::Result<BoxedStream>>;
    /// Whether the link is known to be gone.
    fn is_closed(&self) -> bool;
    /// Ends the link (and whatever it started on the host for itself).
    fn close(&self) -> BoxFuture<'_, ()>;
    /// The SSH session when the link is one, for the facts only SSH has.
    fn ssh(&self) -> Option<&SshSession> {
        None
    }
}

/// Opens links to hosts in place of SSH. `None` means: reach this host over SSH as usual.
pub trait LinkOpener: Send + Sync {
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>>;
}

impl HostLink for SshSession {
    fn host(&self) -> &str {
        SshSession::host(self)
    }
    fn addr(&self) -> &str {
        SshSession::addr(self)
    }
    fn user(&self) -> &str {
        SshSession::user(self)
    }
    fn exec<'a>(&'a self, command: &'a str) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        Box::pin(SshSession::exec(self, command))
    }
    fn exec_with_input<'a>(
        &'a self,
        command: &'a str,
        shown: &'a str,
        input: &'a [u8],
    ) -> BoxFuture<'a, Result<ExecOutput, HostError>> {
        Box::pin(SshSession::exec_with_input(self, command, shown, input))
    }
    fn exec_stream<'a>(
        &'a self,
        command: &'a str,
    ) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        Box::pin(SshSession::exec_stream(self, command))
    }
    fn open_tcp<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<BoxedStream, HostError>> {
        Box::pin(SshSession::open_tcp(self, host, port))
    }
    fn open_docker<'a>(&'a self, socket: &'a str) -> BoxFuture<'a, std::io::Result<BoxedStream>> {
        Box::pin(async move {
            self.open_unix(socket).await.map_err(|e| {
                std::io::Error::other(match e {
                    UnixOpenError::Prohibited(r) => format!("stream-local forwarding refused: {r}"),
                    UnixOpenError::ConnectFailed(r) => format!("cannot connect to {socket}: {r}"),
                    UnixOpenError::Session(e) => e.to_string(),
                })
            })
        })
    }
    fn is_closed(&self) -> bool {
        SshSession::is_closed(self)
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(SshSession::close(self))
    }
    fn ssh(&self) -> Option<&SshSession> {
        Some(self)
    }
}
