//! The desired shape of a container ([`ContainerSpec`]), as the plan produces it and the
//! engine creates it (the root package maps it to Docker's API).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A container as rkers wants it. Field meanings follow `docker run`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContainerSpec {
    pub image: String,
    /// Overrides the image's entrypoint when non-empty.
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `KEY=value` entries.
    pub env: Vec<String>,
    /// `host:container[:options]` entries.
    pub binds: Vec<String>,
    /// `host`, `bridge`, `none`, `container:<name>`; `None` means Docker's default.
    pub network_mode: Option<String>,
    pub pid_mode: Option<String>,
    pub privileged: bool,
    pub restart_policy: Option<RestartPolicy>,
    pub volumes_from: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub security_opt: Vec<String>,
    pub user: Option<String>,
    pub ports: Vec<PortBinding>,
    pub tty: bool,
    /// Logging driver and its options; `None` means the daemon's default.
    pub log_driver: Option<String>,
    pub log_opts: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    No,
    Always,
    UnlessStopped,
    OnFailure,
}

/// A published port: `host_ip:host_port -> container_port/protocol`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBinding {
    #[serde(default)]
    pub host_ip: String,
    pub host_port: u16,
    pub container_port: u16,
    #[serde(default = "tcp")]
    pub protocol: String,
}

fn tcp() -> String {
    "tcp".into()
}

impl PortBinding {
    pub fn tcp(host_port: u16, container_port: u16) -> Self {
        PortBinding {
            host_ip: "0.0.0.0".into(),
            host_port,
            container_port,
            protocol: tcp(),
        }
    }
}
