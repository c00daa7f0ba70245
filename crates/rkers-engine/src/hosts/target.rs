//! Inputs of the hosts layer: what to connect to ([`SshTarget`]) and how ([`SshOptions`]).
//!
//! These types deliberately do not depend on the cluster.yml model; the caller maps its
//! configuration onto them, so node access can be used (and tested) on its own.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A secret string (inline private key, passphrase, registry password) whose `Debug` and
/// `Display` never show the value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The secret itself; call only where the value is consumed (key parsing, auth headers).
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// How to authenticate: the union of a node's (or bastion's) key settings, already merged
/// with the cluster-level defaults by the caller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshAuth {
    /// Inline private key (`ssh_key`); takes precedence over `ssh_key_path` as in RKE1.
    pub ssh_key: Option<Secret>,
    /// Private key file (`ssh_key_path`), `~/` already expanded or expanded here.
    pub ssh_key_path: Option<PathBuf>,
    /// Inline OpenSSH user certificate (`ssh_cert`).
    pub ssh_cert: Option<String>,
    /// OpenSSH user certificate file (`ssh_cert_path`).
    pub ssh_cert_path: Option<PathBuf>,
    /// `ssh_agent_auth`: use the agent at `SSH_AUTH_SOCK`. The agent is also tried when
    /// `SSH_AUTH_SOCK` is set and no key is configured or the key cannot be used.
    pub agent_auth: bool,
}

/// One node to connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshTarget {
    /// Name used in every message about this host (usually the node address or hostname).
    pub name: String,
    /// Address to dial (`address`); may be an alias resolved through `~/.ssh/config`.
    pub address: String,
    /// `port`; `None` means "from ~/.ssh/config, else 22".
    pub port: Option<u16>,
    /// `user`; an empty string means "from ~/.ssh/config, else the local user".
    pub user: String,
    pub auth: SshAuth,
    /// Remote Docker socket (`docker_socket`, default `/var/run/docker.sock`).
    pub docker_socket: String,
    /// `bastion_host`, when set.
    pub bastion: Option<BastionTarget>,
}

impl SshTarget {
    /// A target with RKE1's defaults for everything but address and user.
    pub fn new(address: impl Into<String>, user: impl Into<String>) -> Self {
        let address = address.into();
        SshTarget {
            name: address.clone(),
            address,
            port: None,
            user: user.into(),
            auth: SshAuth::default(),
            docker_socket: DEFAULT_DOCKER_SOCKET.to_owned(),
            bastion: None,
        }
    }
}

pub const DEFAULT_DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// `bastion_host`: the jump host all node connections go through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BastionTarget {
    pub address: String,
    pub port: Option<u16>,
    pub user: String,
    pub auth: SshAuth,
}

/// What to do with host keys (`--ssh-host-key-policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyPolicy {
    /// Only keys already in known_hosts are accepted.
    Strict,
    /// Unknown hosts are recorded in known_hosts; changed keys are refused (OpenSSH's
    /// `StrictHostKeyChecking accept-new`).
    #[default]
    AcceptNew,
    /// Any key is accepted and nothing is recorded (RKE1's behaviour).
    Insecure,
}

impl std::str::FromStr for HostKeyPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(HostKeyPolicy::Strict),
            "accept-new" => Ok(HostKeyPolicy::AcceptNew),
            "insecure" => Ok(HostKeyPolicy::Insecure),
            other => Err(format!(
                "unknown host key policy {other:?}: expected strict, accept-new or insecure"
            )),
        }
    }
}

/// How to connect, shared by all hosts of a run.
#[derive(Clone, Debug)]
pub struct SshOptions {
    /// known_hosts file; `None` means `~/.ssh/known_hosts`.
    pub known_hosts_path: Option<PathBuf>,
    pub host_key_policy: HostKeyPolicy,
    /// Bound on TCP connect plus SSH handshake and authentication, per attempt.
    pub connect_timeout: Duration,
    /// Further attempts after a failed connect that may be transient (timeouts, resets).
    /// Authentication and host key failures are never retried.
    pub retries: u32,
    /// How many hosts are worked on at once.
    pub concurrency: usize,
    /// Ask for key passphrases on the terminal (only when stdin/stderr is a TTY).
    pub passphrase_prompt: bool,
    /// Passphrase for encrypted keys, tried before prompting (never printed).
    pub key_passphrase: Option<Secret>,
    /// ssh client config to honour; `None` means `~/.ssh/config`.
    pub ssh_config_path: Option<PathBuf>,
    /// Whether to read the ssh client config at all.
    pub ssh_config_enabled: bool,
    /// Timeout of a single Docker API call until response headers arrive.
    pub docker_timeout: Duration,
    /// Whether accept-new writes new host keys to known_hosts; off for read-only runs
    /// (preflight, --dry-run), which must leave every file as it was.
    pub record_new_host_keys: bool,
    /// Keys decoded so far, shared by the clones of these options (one run).
    pub key_cache: super::keys::KeyCache,
    /// Where notices of connecting (a host key recorded) go.
    pub notices: NoticeSink,
    /// Opens hosts' links in place of SSH (`up --local`, `--dind`, a library user's
    /// transport); `None`, and hosts it declines, are reached over SSH.
    pub links: Links,
}

/// The [`LinkOpener`](super::link::LinkOpener) of a run, if any.
#[derive(Clone, Default)]
pub struct Links(pub Option<std::sync::Arc<dyn super::link::LinkOpener>>);

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Links(plugged)"
        } else {
            "Links(ssh)"
        })
    }
}

/// Receives the notices of connecting: the run's reporter when set (the library API: each
/// operation its own), else the command line's reporter (`crate::output::notice`).
#[derive(Clone, Default)]
pub struct NoticeSink(Option<std::sync::Arc<dyn Fn(String) + Send + Sync>>);

impl NoticeSink {
    pub fn new(f: impl Fn(String) + Send + Sync + 'static) -> Self {
        NoticeSink(Some(std::sync::Arc::new(f)))
    }

    pub fn notify(&self, message: String) {
        match &self.0 {
            Some(f) => f(message),
            None => crate::output::notice(message),
        }
    }
}

impl std::fmt::Debug for NoticeSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "NoticeSink(run)"
        } else {
            "NoticeSink(command)"
        })
    }
}

impl Default for SshOptions {
    fn default() -> Self {
        SshOptions {
            known_hosts_path: None,
            host_key_policy: HostKeyPolicy::AcceptNew,
            connect_timeout: Duration::from_secs(15),
            retries: 2,
            concurrency: 30,
            passphrase_prompt: false,
            key_passphrase: None,
            ssh_config_path: None,
            ssh_config_enabled: true,
            docker_timeout: Duration::from_secs(120),
            record_new_host_keys: true,
            key_cache: Default::default(),
            notices: Default::default(),
            links: Default::default(),
        }
    }
}

/// Credentials for one private registry (`private_registries[]`), already resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryCredential {
    /// Registry key as in cluster.yml `url`, e.g. `10.77.0.1:5000` or `repo.com/foo/bar`.
    pub url: String,
    pub user: String,
    pub password: Secret,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::new("-----BEGIN OPENSSH PRIVATE KEY-----abc");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        let auth = SshAuth {
            ssh_key: Some(s),
            ..Default::default()
        };
        assert!(!format!("{auth:?}").contains("BEGIN"));
    }

    #[test]
    fn host_key_policy_parses() {
        assert_eq!(
            "strict".parse::<HostKeyPolicy>().unwrap(),
            HostKeyPolicy::Strict
        );
        assert_eq!(
            "accept-new".parse::<HostKeyPolicy>().unwrap(),
            HostKeyPolicy::AcceptNew
        );
        assert!(
            "yes"
                .parse::<HostKeyPolicy>()
                .unwrap_err()
                .contains("strict")
        );
    }
}

/// `host:port` as people and OpenSSH write it: an IPv6 address in brackets (`[::1]:2`), so the
/// port cannot be read as part of the address.
pub fn host_port(address: &str, port: u16) -> String {
    if address.contains(':') && !address.starts_with('[') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    }
}

#[cfg(test)]
mod host_port_tests {
    #[test]
    fn ipv6_addresses_are_bracketed() {
        assert_eq!(super::host_port("::1", 2), "[::1]:2");
        assert_eq!(super::host_port("fe80::1%eth0", 22), "[fe80::1%eth0]:22");
        assert_eq!(super::host_port("10.0.0.1", 22), "10.0.0.1:22");
        assert_eq!(super::host_port("node1", 2222), "node1:2222");
    }
}
