//! One SSH connection to one host ([`SshSession`]), wrapping russh so its API churn stays
//! here: connecting (directly or through a bastion's direct-tcpip channel), host key checks
//! against known_hosts, authentication, and the channels everything else runs on
//! (stream-local to the Docker socket, direct-tcpip from the node, exec).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use russh::{ChannelMsg, ChannelOpenFailure};
use tokio::io::{AsyncRead, AsyncWrite};

use super::banner;
use super::error::HostError;
use super::keys::{AuthMethod, describe_key};
use super::known_hosts::{self, HostKeyStatus, KnownHosts};
use super::target::HostKeyPolicy;

/// A byte stream over an SSH channel (Docker socket, TCP port on the node, exec stdio).
pub trait SshStream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> SshStream for T {}
pub type BoxedStream = Box<dyn SshStream>;

/// What happened to the server's host key during connect.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyVerdict {
    /// Found in known_hosts.
    Known,
    /// Not known before; recorded in known_hosts (accept-new).
    Recorded,
    /// Not known before; accepted for this read-only run (preflight, --dry-run) and not
    /// recorded, so the run leaves known_hosts as it was.
    AcceptedNotRecorded,
    /// Not checked (insecure policy).
    NotChecked,
}

/// Output of a command run over an exec channel.
#[derive(Clone, Debug, Default)]
pub struct ExecOutput {
    pub exit_status: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn success(&self) -> bool {
        self.exit_status == Some(0)
    }
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Everything needed for one connection attempt.
#[derive(Clone, Debug)]
pub(crate) struct ConnectParams {
    pub host: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    pub methods: Vec<AuthMethod>,
    pub known_hosts_path: PathBuf,
    pub policy: HostKeyPolicy,
    /// Whether accept-new writes a new key to known_hosts (not in read-only runs).
    pub record_new_keys: bool,
    pub notices: super::target::NoticeSink,
    pub timeout: Duration,
    pub retries: u32,
}

/// An authenticated SSH connection to one host. Cheap to share (`Arc`); every operation of a
/// run opens channels on it instead of new connections (spec §32 pain points 16, 19).
pub struct SshSession {
    host: String,
    user: String,
    addr: String,
    handle: Handle<Client>,
    auth_method: String,
    host_key: HostKeyVerdict,
    host_key_fingerprint: String,
    /// The identification string the server sent (`SSH-2.0-OpenSSH_for_Windows_8.1`).
    server_id: String,
    /// Kept alive: our transport runs inside one of its channels.
    via: Option<Arc<SshSession>>,
}

impl std::fmt::Debug for SshSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshSession")
            .field("host", &self.host)
            .field("user", &self.user)
            .field("addr", &self.addr)
            .field("auth_method", &self.auth_method)
            .field("via", &self.via.as_ref().map(|v| v.addr.clone()))
            .finish()
    }
}

struct Client {
    host: String,
    lookup_names: Vec<String>,
    known_hosts_path: PathBuf,
    policy: HostKeyPolicy,
    record_new_keys: bool,
    notices: super::target::NoticeSink,
    outcome: Arc<Mutex<Option<KeyOutcome>>>,
    server_id: Arc<Mutex<String>>,
}

/// The host key verdict and fingerprint, or why the key was refused.
type KeyOutcome = Result<(HostKeyVerdict, String), HostError>;

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key: PublicKey = match server_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key.clone(),
            PublicKeyOrCertificate::Certificate(cert) => {
                PublicKey::new(cert.public_key().clone(), "")
            }
        };
        let verdict = self.verdict(&key);
        let accepted = verdict.is_ok();
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(verdict);
        Ok(accepted)
    }

    async fn kex_done(
        &mut self,
        _shared_secret: Option<&[u8]>,
        _names: &russh::Names,
        session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        *self.server_id.lock().unwrap_or_else(|p| p.into_inner()) =
            String::from_utf8_lossy(session.remote_sshid()).into_owned();
        Ok(())
    }
}

impl Client {
    fn verdict(&self, key: &PublicKey) -> Result<(HostKeyVerdict, String), HostError> {
        let fp = known_hosts::fingerprint(key);
        let lookup_name = self.lookup_names[0].clone();
        if self.policy == HostKeyPolicy::Insecure {
            return Ok((HostKeyVerdict::NotChecked, fp));
        }
        let kh = KnownHosts::load(&self.known_hosts_path).map_err(|e| HostError::KnownHosts {
            host: self.host.clone(),
            detail: e.to_string(),
        })?;
        match kh.check(&self.lookup_names, key) {
            HostKeyStatus::Known { .. } => Ok((HostKeyVerdict::Known, fp)),
            HostKeyStatus::Changed {
                path,
                line,
                old_fingerprint,
            } => Err(HostError::HostKeyChanged {
                host: self.host.clone(),
                lookup_name,
                known_hosts: path,
                line,
                old_fingerprint,
                new_fingerprint: fp,
            }),
            HostKeyStatus::Revoked { path, line } => Err(HostError::HostKeyRevoked {
                host: self.host.clone(),
                lookup_name,
                known_hosts: path,
                line,
                fingerprint: fp,
            }),
            HostKeyStatus::Unknown if self.policy == HostKeyPolicy::Strict => {
                Err(HostError::HostKeyUnknown {
                    host: self.host.clone(),
                    lookup_name,
                    known_hosts: self.known_hosts_path.clone(),
                    new_fingerprint: fp,
                })
            }
            // Like OpenSSH's "Permanently added", the user sees which key was trusted, so a
            // wrong one can be caught by comparing fingerprints.
            HostKeyStatus::Unknown if !self.record_new_keys => {
                self.notices.notify(format!(
                    "host {}: new {} host key {fp} for {lookup_name} accepted for this read-only \
                     run, not recorded in {}",
                    self.host,
                    key.algorithm(),
                    self.known_hosts_path.display()
                ));
                Ok((HostKeyVerdict::AcceptedNotRecorded, fp))
            }
            HostKeyStatus::Unknown => {
                known_hosts::append(&self.known_hosts_path, &lookup_name, key).map_err(|e| {
                    HostError::KnownHosts {
                        host: self.host.clone(),
                        detail: e.to_string(),
                    }
                })?;
                self.notices.notify(format!(
                    "host {}: recorded new {} host key {fp} for {lookup_name} in {}",
                    self.host,
                    key.algorithm(),
                    self.known_hosts_path.display()
                ));
                Ok((HostKeyVerdict::Recorded, fp))
            }
        }
    }
}

fn client_config() -> Arc<client::Config> {
    Arc::new(client::Config {
        // A dead peer is noticed within a minute instead of hanging a run.
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        nodelay: true,
        ..Default::default()
    })
}

impl SshSession {
    /// Connects with bounded retries and exponential backoff for transient failures
    /// (timeouts, refused or reset connections). Authentication and host key problems are
    /// returned at once.
    pub(crate) async fn connect(
        params: &ConnectParams,
        via: Option<Arc<SshSession>>,
    ) -> Result<SshSession, HostError> {
        let mut attempt = 0;
        loop {
            match Self::connect_once(params, via.clone()).await {
                Ok(s) => return Ok(s),
                Err(e) if e.is_transient() && attempt < params.retries => {
                    let wait = Duration::from_millis(500 * (1 << attempt.min(5)));
                    tracing::debug!(host = %params.host, "connect attempt {} failed, retrying in {wait:?}: {e}", attempt + 1);
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt, bounded stage by stage (see [`super::banner`]).
    async fn connect_once(
        params: &ConnectParams,
        via: Option<Arc<SshSession>>,
    ) -> Result<SshSession, HostError> {
        let addr = super::target::host_port(&params.address, params.port);
        let progress = banner::SharedProgress::default();
        let bounds = banner::Bounds {
            host: &params.host,
            addr: &addr,
            port: params.port,
            connect_timeout: params.timeout,
            banner_timeout: banner::BANNER_TIMEOUT.min(params.timeout),
        };
        tokio::select! {
            r = Self::connect_inner(params, &addr, via, progress.clone()) => r,
            e = banner::watch(progress.clone(), bounds) => Err(e),
        }
    }

    async fn connect_inner(
        params: &ConnectParams,
        addr: &str,
        via: Option<Arc<SshSession>>,
        progress: banner::SharedProgress,
    ) -> Result<SshSession, HostError> {
        let outcome = Arc::new(Mutex::new(None));
        let server_id = Arc::new(Mutex::new(String::new()));
        let handler = Client {
            host: params.host.clone(),
            lookup_names: vec![known_hosts::lookup_name(&params.address, params.port)],
            known_hosts_path: params.known_hosts_path.clone(),
            policy: params.policy,
            record_new_keys: params.record_new_keys,
            notices: params.notices.clone(),
            outcome: outcome.clone(),
            server_id: server_id.clone(),
        };
        let config = client_config();
        let connected = match &via {
            None => {
                let tcp = tokio::net::TcpStream::connect((params.address.as_str(), params.port))
                    .await
                    .map_err(|e| tcp_error(&params.host, addr, params.port, params.timeout, e))?;
                let _ = tcp.set_nodelay(true);
                banner::mark_connected(&progress);
                client::connect_stream(config, banner::Watched::new(tcp, progress), handler).await
            }
            Some(bastion) => {
                let ch = bastion
                    .handle
                    .channel_open_direct_tcpip(
                        params.address.clone(),
                        params.port as u32,
                        "127.0.0.1",
                        0,
                    )
                    .await
                    .map_err(|e| bastion_channel_error(&params.host, bastion, addr, e))?;
                banner::mark_connected(&progress);
                let stream = banner::Watched::new(ch.into_stream(), progress);
                client::connect_stream(config, stream, handler).await
            }
        };
        let mut handle = match connected {
            Ok(h) => h,
            Err(e) => {
                if let Some(Err(key_err)) = outcome.lock().unwrap_or_else(|p| p.into_inner()).take()
                {
                    return Err(key_err);
                }
                return Err(match e {
                    russh::Error::IO(io) => {
                        tcp_error(&params.host, addr, params.port, params.timeout, io)
                    }
                    other => HostError::Handshake {
                        host: params.host.clone(),
                        addr: addr.to_owned(),
                        detail: other.to_string(),
                    },
                });
            }
        };
        let (host_key, host_key_fingerprint) =
            match outcome.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some(Ok(v)) => v,
                Some(Err(e)) => return Err(e),
                None => (HostKeyVerdict::NotChecked, String::new()),
            };
        let auth_method = authenticate(&mut handle, params).await?;
        Ok(SshSession {
            host: params.host.clone(),
            user: params.user.clone(),
            addr: addr.to_owned(),
            handle,
            auth_method,
            host_key,
            host_key_fingerprint,
            server_id: server_id.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            via,
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }
    pub fn user(&self) -> &str {
        &self.user
    }
    /// `address:port` this session was dialled at.
    pub fn addr(&self) -> &str {
        &self.addr
    }
    /// How authentication succeeded, e.g. `publickey ssh-ed25519 SHA256:… (/root/.ssh/id)`.
    pub fn auth_method(&self) -> &str {
        &self.auth_method
    }
    pub fn host_key_verdict(&self) -> &HostKeyVerdict {
        &self.host_key
    }
    pub fn host_key_fingerprint(&self) -> &str {
        &self.host_key_fingerprint
    }
    /// The identification string the SSH server sent, e.g. `SSH-2.0-OpenSSH_9.2p1 Debian-2`.
    pub fn server_id(&self) -> &str {
        &self.server_id
    }
    /// Whether the server is Win32-OpenSSH (it announces itself as `OpenSSH_for_Windows_<v>`),
    /// known before any channel is opened.
    pub fn is_windows_openssh(&self) -> bool {
        self.server_id.contains("OpenSSH_for_Windows")
    }
    /// Whether the session goes through a bastion.
    pub fn via_bastion(&self) -> Option<&str> {
        self.via.as_ref().map(|b| b.addr())
    }
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// A stream to a Unix socket on the node (`direct-streamlocal@openssh.com`).
    pub async fn open_unix(&self, socket_path: &str) -> Result<BoxedStream, UnixOpenError> {
        match self
            .handle
            .channel_open_direct_streamlocal(socket_path)
            .await
        {
            Ok(ch) => Ok(Box::new(ch.into_stream())),
            Err(russh::Error::ChannelOpenFailure(
                ChannelOpenFailure::AdministrativelyProhibited,
            )) => Err(UnixOpenError::Prohibited(
                "administratively prohibited".into(),
            )),
            Err(russh::Error::ChannelOpenFailure(ChannelOpenFailure::UnknownChannelType)) => {
                Err(UnixOpenError::Prohibited("unknown channel type".into()))
            }
            Err(russh::Error::ChannelOpenFailure(f)) => {
                Err(UnixOpenError::ConnectFailed(format!("{f:?}")))
            }
            Err(e) => Err(UnixOpenError::Session(HostError::Ssh {
                host: self.host.clone(),
                detail: e.to_string(),
            })),
        }
    }

    /// A TCP connection made by the node itself to `host:port` (`direct-tcpip`), for health
    /// checks and etcd clients.
    pub async fn open_tcp(&self, host: &str, port: u16) -> Result<BoxedStream, HostError> {
        match self
            .handle
            .channel_open_direct_tcpip(host, port as u32, "127.0.0.1", 0)
            .await
        {
            Ok(ch) => Ok(Box::new(ch.into_stream())),
            Err(russh::Error::ChannelOpenFailure(
                ChannelOpenFailure::AdministrativelyProhibited,
            )) => Err(HostError::ForwardingRefused {
                host: self.host.clone(),
                what: format!("TCP connections to {host}:{port}"),
                reason: "administratively prohibited".into(),
            }),
            Err(russh::Error::ChannelOpenFailure(f)) => Err(HostError::TcpConnectFailed {
                host: self.host.clone(),
                target: format!("{host}:{port}"),
                detail: match f {
                    ChannelOpenFailure::ConnectFailed => {
                        "connection failed (nothing listening, or filtered)".into()
                    }
                    other => format!("{other:?}"),
                },
            }),
            Err(e) => Err(HostError::Ssh {
                host: self.host.clone(),
                detail: e.to_string(),
            }),
        }
    }

    /// Runs `command` through the user's shell and collects its output.
    pub async fn exec(&self, command: &str) -> Result<ExecOutput, HostError> {
        let exec_err = |detail: String| HostError::Exec {
            host: self.host.clone(),
            command: command.to_owned(),
            detail,
        };
        let mut ch = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| exec_err(format!("cannot open a session channel: {e}")))?;
        ch.exec(true, command)
            .await
            .map_err(|e| exec_err(e.to_string()))?;
        let mut out = ExecOutput::default();
        while let Some(msg) = ch.wait().await {
            match msg {
                ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, .. } => out.stderr.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => out.exit_status = Some(exit_status),
                ChannelMsg::Failure => return Err(exec_err("the server refused to run it".into())),
                _ => {}
            }
        }
        Ok(out)
    }

    /// Runs `command`, feeding it `input` on stdin (then end of file), and collects its output.
    /// Errors name the command as `shown`: the input may hold keys, and the command line may be
    /// a long encoded script nobody can read.
    pub async fn exec_with_input(
        &self,
        command: &str,
        shown: &str,
        input: &[u8],
    ) -> Result<ExecOutput, HostError> {
        use tokio::io::AsyncWriteExt;
        let exec_err = |detail: String| HostError::Exec {
            host: self.host.clone(),
            command: shown.to_owned(),
            detail,
        };
        let mut ch = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| exec_err(format!("cannot open a session channel: {e}")))?;
        ch.exec(true, command)
            .await
            .map_err(|e| exec_err(e.to_string()))?;
        // Written while the output is read, so a command that answers before it has read all
        // of its input cannot stall on a full window.
        let mut writer = ch.make_writer();
        let input = input.to_vec();
        let feed = tokio::spawn(async move {
            writer.write_all(&input).await?;
            writer.shutdown().await
        });
        let mut out = ExecOutput::default();
        while let Some(msg) = ch.wait().await {
            match msg {
                ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, .. } => out.stderr.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => out.exit_status = Some(exit_status),
                ChannelMsg::Failure => return Err(exec_err("the server refused to run it".into())),
                _ => {}
            }
        }
        match feed.await {
            Ok(Ok(())) => {}
            // A command that exits without reading everything closes its stdin; its exit
            // status and output say why, so only a command that also succeeded is an error.
            Ok(Err(e)) if out.success() => {
                return Err(exec_err(format!("writing its input failed: {e}")));
            }
            Ok(Err(_)) => {}
            Err(e) => return Err(exec_err(format!("writing its input failed: {e}"))),
        }
        Ok(out)
    }

    /// Starts `command` and returns its stdin/stdout as one stream (stderr is dropped).
    pub async fn exec_stream(&self, command: &str) -> Result<BoxedStream, HostError> {
        let exec_err = |detail: String| HostError::Exec {
            host: self.host.clone(),
            command: command.to_owned(),
            detail,
        };
        let ch = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| exec_err(format!("cannot open a session channel: {e}")))?;
        ch.exec(true, command)
            .await
            .map_err(|e| exec_err(e.to_string()))?;
        Ok(Box::new(ch.into_stream()))
    }

    /// Closes the connection politely.
    pub async fn close(&self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

/// Why a stream-local channel could not be opened.
#[derive(Debug)]
pub enum UnixOpenError {
    /// sshd does not allow stream-local forwarding.
    Prohibited(String),
    /// sshd could not connect to the socket (missing, permission, nobody listening).
    ConnectFailed(String),
    Session(HostError),
}

fn tcp_error(host: &str, addr: &str, port: u16, timeout: Duration, e: std::io::Error) -> HostError {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => HostError::ConnectionRefused {
            host: host.to_owned(),
            addr: addr.to_owned(),
        },
        ErrorKind::TimedOut => HostError::ConnectTimeout {
            host: host.to_owned(),
            addr: addr.to_owned(),
            port,
            secs: timeout.as_secs().max(1),
        },
        _ => HostError::Unreachable {
            host: host.to_owned(),
            addr: addr.to_owned(),
            detail: e.to_string(),
        },
    }
}

fn bastion_channel_error(
    host: &str,
    bastion: &SshSession,
    addr: &str,
    e: russh::Error,
) -> HostError {
    let inner = match e {
        russh::Error::ChannelOpenFailure(ChannelOpenFailure::AdministrativelyProhibited) => {
            HostError::ForwardingRefused {
                host: bastion.host.clone(),
                what: format!("TCP connections to {addr}"),
                reason: "administratively prohibited".into(),
            }
        }
        russh::Error::ChannelOpenFailure(ChannelOpenFailure::ConnectFailed) => HostError::Unreachable {
            host: host.to_owned(),
            addr: addr.to_owned(),
            detail: "the bastion could not connect to it (host down, or nothing listening on that port)".into(),
        },
        other => HostError::Ssh {
            host: bastion.host.clone(),
            detail: other.to_string(),
        },
    };
    HostError::Bastion {
        host: host.to_owned(),
        bastion: bastion.addr.clone(),
        source: Box::new(inner),
    }
}

/// Tries each method in turn; returns a description of the one that worked.
async fn authenticate(
    handle: &mut Handle<Client>,
    params: &ConnectParams,
) -> Result<String, HostError> {
    let ssh_err = |e: russh::Error| HostError::Handshake {
        host: params.host.clone(),
        addr: super::target::host_port(&params.address, params.port),
        detail: format!("during authentication: {e}"),
    };
    let mut tried = Vec::new();
    for method in &params.methods {
        match method {
            AuthMethod::Key {
                source_name,
                key,
                cert,
            } => {
                let desc = format!("publickey {} ({source_name})", describe_key(key));
                let result = match cert {
                    Some(cert) => {
                        handle
                            .authenticate_openssh_cert(&params.user, key.clone(), cert.clone())
                            .await
                    }
                    None => {
                        let hash = rsa_hash(handle, key.algorithm().is_rsa())
                            .await
                            .map_err(ssh_err)?;
                        handle
                            .authenticate_publickey(
                                &params.user,
                                PrivateKeyWithHashAlg::new(key.clone(), hash),
                            )
                            .await
                    }
                }
                .map_err(ssh_err)?;
                let desc = if cert.is_some() {
                    format!("{desc} with certificate")
                } else {
                    desc
                };
                if result.success() {
                    return Ok(desc);
                }
                tried.push(format!("{desc}: rejected"));
            }
            AuthMethod::Skipped { reason } => tried.push(format!("{reason} (not tried)")),
            AuthMethod::Agent => match agent_auth(handle, &params.user, &mut tried).await {
                Ok(Some(desc)) => return Ok(desc),
                Ok(None) => {}
                Err(e) => return Err(ssh_err(e)),
            },
        }
    }
    if tried.is_empty() {
        tried.push("nothing".into());
    }
    Err(HostError::AuthFailed {
        host: params.host.clone(),
        user: params.user.clone(),
        tried,
    })
}

async fn rsa_hash(handle: &Handle<Client>, is_rsa: bool) -> Result<Option<HashAlg>, russh::Error> {
    if !is_rsa {
        return Ok(None);
    }
    // Servers that do not announce server-sig-algs get rsa-sha2-256: OpenSSH ≥ 8.8 refuses
    // SHA-1 signatures.
    Ok(handle
        .best_supported_rsa_hash()
        .await?
        .flatten()
        .or(Some(HashAlg::Sha256)))
}

async fn agent_auth(
    handle: &mut Handle<Client>,
    user: &str,
    tried: &mut Vec<String>,
) -> Result<Option<String>, russh::Error> {
    use russh::keys::agent::AgentIdentity;
    let mut agent = match russh::keys::agent::client::AgentClient::connect_env().await {
        Ok(a) => a,
        Err(e) => {
            tried.push(format!("ssh-agent: cannot connect ({e})"));
            return Ok(None);
        }
    };
    let ids = match agent.request_identities().await {
        Ok(ids) => ids,
        Err(e) => {
            tried.push(format!("ssh-agent: cannot list keys ({e})"));
            return Ok(None);
        }
    };
    if ids.is_empty() {
        tried.push("ssh-agent: holds no keys".into());
        return Ok(None);
    }
    for id in ids {
        let (desc, result) = match id {
            AgentIdentity::PublicKey { key, comment } => {
                let desc = format!(
                    "ssh-agent key {} {} ({comment})",
                    key.algorithm().as_str(),
                    key.fingerprint(HashAlg::Sha256)
                );
                let hash = rsa_hash(handle, key.algorithm().is_rsa()).await?;
                let r = handle
                    .authenticate_publickey_with(user, key, hash, &mut agent)
                    .await;
                (desc, r)
            }
            AgentIdentity::Certificate {
                certificate,
                comment,
            } => {
                let desc = format!("ssh-agent certificate {} ({comment})", certificate.key_id());
                let hash = rsa_hash(handle, certificate.algorithm().is_rsa()).await?;
                let r = handle
                    .authenticate_certificate_with(user, certificate, hash, &mut agent)
                    .await;
                (desc, r)
            }
        };
        match result {
            Ok(r) if r.success() => return Ok(Some(desc)),
            Ok(_) => tried.push(format!("{desc}: rejected")),
            Err(e) => tried.push(format!("{desc}: agent could not sign ({e})")),
        }
    }
    Ok(None)
}
