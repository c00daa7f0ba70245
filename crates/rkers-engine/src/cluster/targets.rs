//! The config's nodes, bastion and registries as the hosts module takes them.

use super::Cluster;
use crate::hosts::target::{BastionTarget, RegistryCredential, Secret, SshAuth, SshTarget};
use std::path::PathBuf;

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// `~/` expanded with `$HOME`, as RKE1 expands key paths.
pub fn expand_home(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().unwrap_or_default().join(rest),
        None => PathBuf::from(path),
    }
}

impl Cluster {
    /// One target per node, named by its address as RKE1 names hosts. `agent_override` is
    /// `--ssh-agent-auth`, which forces agent authentication everywhere.
    pub fn ssh_targets(&self, agent_override: bool) -> Vec<SshTarget> {
        ssh_targets_for(&self.config, agent_override)
    }
}

/// The targets of any config (the previous one too, to reach hosts that left the cluster).
pub fn ssh_targets_for(c: &crate::config::RkeConfig, agent_override: bool) -> Vec<SshTarget> {
    let agent = agent_override || c.ssh_agent_auth;
    let bastion = (!c.bastion_host.address.is_empty()).then(|| {
        let b = &c.bastion_host;
        BastionTarget {
            address: b.address.clone(),
            port: b.port.parse().ok(),
            user: b.user.clone(),
            auth: SshAuth {
                ssh_key: non_empty(&b.ssh_key).map(Secret::new),
                ssh_key_path: non_empty(&b.ssh_key_path)
                    .or_else(|| non_empty(&c.ssh_key_path))
                    .map(|p| expand_home(&p)),
                ssh_cert: non_empty(&b.ssh_cert),
                ssh_cert_path: non_empty(&b.ssh_cert_path)
                    .or_else(|| non_empty(&c.ssh_cert_path))
                    .map(|p| expand_home(&p)),
                agent_auth: agent,
            },
        }
    });
    c.nodes
        .iter()
        .map(|n| SshTarget {
            name: n.address.clone(),
            address: n.address.clone(),
            port: n.port.parse().ok(),
            user: n.user.clone(),
            auth: SshAuth {
                ssh_key: non_empty(&n.ssh_key).map(Secret::new),
                ssh_key_path: non_empty(&n.ssh_key_path)
                    .or_else(|| non_empty(&c.ssh_key_path))
                    .map(|p| expand_home(&p)),
                ssh_cert: non_empty(&n.ssh_cert),
                ssh_cert_path: non_empty(&n.ssh_cert_path)
                    .or_else(|| non_empty(&c.ssh_cert_path))
                    .map(|p| expand_home(&p)),
                agent_auth: agent,
            },
            docker_socket: non_empty(&n.docker_socket)
                .unwrap_or_else(|| crate::hosts::target::DEFAULT_DOCKER_SOCKET.to_string()),
            bastion: bastion.clone(),
        })
        .collect()
}

impl Cluster {
    /// RKE1's port checks between roles (§10), with the tools image as listener and checker.
    pub fn port_check_plan(&self) -> crate::hosts::ports::PortCheckPlan {
        use crate::hosts::ports::{PortCheckPlan, PortHost};
        let c = &self.config;
        let role_hosts = |role: &str| -> Vec<PortHost> {
            c.nodes
                .iter()
                .filter(|n| n.role.iter().any(|r| r == role))
                .map(|n| PortHost {
                    name: n.address.clone(),
                    internal_address: n.internal_address.clone(),
                })
                .collect()
        };
        let mut plan = PortCheckPlan::new(c.system_images.alpine.clone());
        plan.registries = self.registry_credentials();
        plan.etcd = role_hosts("etcd");
        plan.controlplane = role_hosts("controlplane");
        plan.worker = role_hosts("worker");
        plan
    }

    pub fn registry_credentials(&self) -> Vec<RegistryCredential> {
        self.config
            .private_registries
            .iter()
            .filter(|r| !r.user.is_empty())
            .map(|r| RegistryCredential {
                url: if r.url.is_empty() {
                    "docker.io".into()
                } else {
                    r.url.clone()
                },
                user: r.user.clone(),
                password: Secret::new(r.password.clone()),
            })
            .collect()
    }
}
