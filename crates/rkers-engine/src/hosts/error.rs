//! Errors of node access. Every variant names the host and says what happened in words a
//! user can act on; the SSH-level cause always comes first (RKE1 buried it inside a Docker
//! URL error, spec §32 pain point 1).

use std::path::PathBuf;

#[derive(Clone, Debug, thiserror::Error)]
pub enum HostError {
    #[error("host {host}: cannot reach {addr}: {detail}")]
    Unreachable {
        host: String,
        addr: String,
        detail: String,
    },
    #[error(
        "host {host}: connection refused by {addr}: nothing listens there (is sshd running on that port?)"
    )]
    ConnectionRefused { host: String, addr: String },
    #[error(
        "host {host}: no SSH answer from {addr} within {secs}s: check that the node is up and that firewalls let port {port} through"
    )]
    ConnectTimeout {
        host: String,
        addr: String,
        port: u16,
        secs: u64,
    },
    #[error(
        "host {host}: {addr} accepted the TCP connection but sent no SSH banner within {secs}s: something other than sshd listens on that port, or sshd is hung (check the port in cluster.yml and `systemctl status ssh` on the node)"
    )]
    NoBanner {
        host: String,
        addr: String,
        secs: u64,
    },
    #[error(
        "host {host}: {addr} answered as {banner:?} but the SSH key exchange and login did not finish within {secs}s: sshd is overloaded or hung, or the network drops large packets (check the MTU on the path)"
    )]
    Stalled {
        host: String,
        addr: String,
        banner: String,
        secs: u64,
    },
    #[error("host {host}: SSH handshake with {addr} failed: {detail}")]
    Handshake {
        host: String,
        addr: String,
        detail: String,
    },
    #[error(
        "host {host}: SSH authentication as user {user:?} failed; tried: {}. Check the user name and that the key is in that user's authorized_keys",
        tried.join("; ")
    )]
    AuthFailed {
        host: String,
        user: String,
        tried: Vec<String>,
    },
    #[error("host {host}: no way to authenticate: {detail}")]
    NoAuthMethod { host: String, detail: String },
    #[error("host {host}: cannot use SSH key {source_name}: {detail}")]
    KeyUnusable {
        host: String,
        source_name: String,
        detail: String,
    },
    #[error(
        "host {host}: SSH key {source_name} is protected by a passphrase and no terminal is available to ask for it: add the key to ssh-agent (ssh-add {source_name}) and set ssh_agent_auth: true, or run rkers on a terminal"
    )]
    KeyEncrypted { host: String, source_name: String },
    #[error(
        "host {host}: HOST KEY CHANGED for {lookup_name}: {known_hosts}:{line} records {old_fingerprint}, the server now offers {new_fingerprint}. This may be an attack, or the host was reinstalled; if you trust the new key, remove line {line} of {known_hosts}"
    )]
    HostKeyChanged {
        host: String,
        lookup_name: String,
        known_hosts: PathBuf,
        line: usize,
        old_fingerprint: String,
        new_fingerprint: String,
    },
    #[error(
        "host {host}: host key {new_fingerprint} of {lookup_name} is not in {known_hosts} and the host key policy is strict: add it (ssh-keyscan) or use --ssh-host-key-policy accept-new"
    )]
    HostKeyUnknown {
        host: String,
        lookup_name: String,
        known_hosts: PathBuf,
        new_fingerprint: String,
    },
    #[error(
        "host {host}: host key {fingerprint} of {lookup_name} is marked @revoked in {known_hosts}:{line}"
    )]
    HostKeyRevoked {
        host: String,
        lookup_name: String,
        known_hosts: PathBuf,
        line: usize,
        fingerprint: String,
    },
    #[error("host {host}: {detail}")]
    KnownHosts { host: String, detail: String },
    #[error("host {host}: through bastion {bastion}: {source}")]
    Bastion {
        host: String,
        bastion: String,
        source: Box<HostError>,
    },
    #[error(
        "host {host}: sshd refused to forward {what} ({reason}): it is disabled on the node; allow it in /etc/ssh/sshd_config (AllowStreamLocalForwarding yes / AllowTcpForwarding yes, and no DisableForwarding yes), then reload sshd"
    )]
    ForwardingRefused {
        host: String,
        what: String,
        reason: String,
    },
    #[error("host {host}: cannot connect to {target} from the node: {detail}")]
    TcpConnectFailed {
        host: String,
        target: String,
        detail: String,
    },
    #[error(
        "host {host}: Docker socket {socket} does not exist: is Docker installed and running (systemctl status docker)?"
    )]
    DockerSocketMissing { host: String, socket: String },
    #[error(
        "host {host}: permission denied on Docker socket {socket} for user {user:?}: add the user to the docker group (usermod -aG docker {user}) and reconnect. On RHEL/CentOS the distribution's Docker does not let root use the socket over SSH"
    )]
    DockerPermissionDenied {
        host: String,
        socket: String,
        user: String,
    },
    #[error("host {host}: Docker is not answering on {socket}: {detail}")]
    DockerNotAnswering {
        host: String,
        socket: String,
        detail: String,
    },
    #[error(
        "host {host}: Docker socket {socket} is not reachable: sshd refused stream-local forwarding ({forward_detail}; check AllowStreamLocalForwarding, AllowTcpForwarding and DisableForwarding in /etc/ssh/sshd_config) and the fallback `docker system dial-stdio` failed too: {fallback_detail}"
    )]
    DockerNoTransport {
        host: String,
        socket: String,
        forward_detail: String,
        fallback_detail: String,
    },
    #[error("host {host}: Docker: {op}: {detail}")]
    Docker {
        host: String,
        op: String,
        detail: String,
    },
    /// kubelet v1.35 and later refuse a cgroup v1 host (KEP-5573).
    #[error(
        "host {host}: its Docker runs on cgroup v1, on which kubelet {version} refuses to start (Kubernetes v1.35 and later, KEP-5573): boot the host with cgroup v2 (systemd.unified_cgroup_hierarchy=1 on the kernel command line), or keep cgroup v1 a while longer with services.kubelet.extra_args.fail-cgroupv1: \"false\" (deprecated; upstream removes cgroup v1 no earlier than v1.38)"
    )]
    CgroupV1 { host: String, version: String },
    /// The cluster's container runtime and this host's Docker share no Engine API version.
    #[error(
        "host {host}: {reason}: {remedy} (ignore_docker_version: true or --ignore-docker-version goes ahead anyway)"
    )]
    UnsupportedDockerVersion {
        host: String,
        reason: String,
        remedy: String,
    },
    #[error("host {host}: command `{command}` failed: {detail}")]
    Exec {
        host: String,
        command: String,
        detail: String,
    },
    #[error("host {host}: SSH connection lost: {detail}")]
    Ssh { host: String, detail: String },
    #[error("host {host}: container {container}: {detail}")]
    Container {
        host: String,
        container: String,
        detail: String,
    },
}

impl HostError {
    /// Whether a new connection attempt might succeed (network trouble, not configuration).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            HostError::Unreachable { .. }
                | HostError::ConnectionRefused { .. }
                | HostError::ConnectTimeout { .. }
                | HostError::Handshake { .. }
        ) || matches!(self, HostError::Bastion { source, .. } if source.is_transient())
    }

    /// The host this error is about.
    pub fn host(&self) -> &str {
        match self {
            HostError::Unreachable { host, .. }
            | HostError::ConnectionRefused { host, .. }
            | HostError::ConnectTimeout { host, .. }
            | HostError::NoBanner { host, .. }
            | HostError::Stalled { host, .. }
            | HostError::Handshake { host, .. }
            | HostError::AuthFailed { host, .. }
            | HostError::NoAuthMethod { host, .. }
            | HostError::KeyUnusable { host, .. }
            | HostError::KeyEncrypted { host, .. }
            | HostError::HostKeyChanged { host, .. }
            | HostError::HostKeyUnknown { host, .. }
            | HostError::HostKeyRevoked { host, .. }
            | HostError::KnownHosts { host, .. }
            | HostError::Bastion { host, .. }
            | HostError::ForwardingRefused { host, .. }
            | HostError::TcpConnectFailed { host, .. }
            | HostError::DockerSocketMissing { host, .. }
            | HostError::DockerPermissionDenied { host, .. }
            | HostError::DockerNotAnswering { host, .. }
            | HostError::DockerNoTransport { host, .. }
            | HostError::Docker { host, .. }
            | HostError::UnsupportedDockerVersion { host, .. }
            | HostError::CgroupV1 { host, .. }
            | HostError::Exec { host, .. }
            | HostError::Ssh { host, .. }
            | HostError::Container { host, .. } => host,
        }
    }

    /// A short machine-readable kind, used in JSON reports and by tests.
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::Unreachable { .. } => "unreachable",
            HostError::ConnectionRefused { .. } => "connection-refused",
            HostError::ConnectTimeout { .. } => "connect-timeout",
            HostError::NoBanner { .. } => "no-banner",
            HostError::Stalled { .. } => "stalled",
            HostError::Handshake { .. } => "handshake",
            HostError::AuthFailed { .. } => "auth-failed",
            HostError::NoAuthMethod { .. } => "no-auth-method",
            HostError::KeyUnusable { .. } => "key-unusable",
            HostError::KeyEncrypted { .. } => "key-encrypted",
            HostError::HostKeyChanged { .. } => "host-key-changed",
            HostError::HostKeyUnknown { .. } => "host-key-unknown",
            HostError::HostKeyRevoked { .. } => "host-key-revoked",
            HostError::KnownHosts { .. } => "known-hosts",
            HostError::Bastion { source, .. } => source.kind(),
            HostError::ForwardingRefused { .. } => "forwarding-refused",
            HostError::TcpConnectFailed { .. } => "tcp-connect-failed",
            HostError::DockerSocketMissing { .. } => "docker-socket-missing",
            HostError::DockerPermissionDenied { .. } => "docker-permission-denied",
            HostError::DockerNotAnswering { .. } => "docker-not-answering",
            HostError::DockerNoTransport { .. } => "docker-no-transport",
            HostError::Docker { .. } => "docker",
            HostError::UnsupportedDockerVersion { .. } => "unsupported-docker-version",
            HostError::CgroupV1 { .. } => "cgroup-v1",
            HostError::Exec { .. } => "exec",
            HostError::Ssh { .. } => "ssh",
            HostError::Container { .. } => "container",
        }
    }
}

impl crate::error::HostContext for HostError {
    fn hosts(&self) -> Vec<&str> {
        vec![self.host()]
    }
}
