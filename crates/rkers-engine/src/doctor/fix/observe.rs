//! Step 2, reading only. `--fix calico-runtime`: each chosen host connected (one that cannot
//! be reached is named at the end) and probed for its calico directories and tmpfiles.d entry.
//! `--fix flannel-nat`: the API server and the flannel DaemonSet, then each chosen host
//! connected, its nat table read and its flannel pod found.
//! `--fix webhooks`: the API server, the CNI, the webhooks blocking its pods, the removable
//! configurations as the server has them, and the backup an earlier fix left.
//! `--restore-webhooks`: the backup.

use super::{CalicoFix, FixError, FlannelFix, WebhookFix, backup_path};
use crate::checks::probe::{self, ProbeWants};
use crate::checks::{Status, calico, cni, flannel, webhooks};
use crate::doctor::basics::node_name;
use crate::doctor::run;
use crate::hosts::Host;
use crate::kubeapi::KubeApi;
use crate::phases::driver::Links;
use rkers_core::diff::doctor_fix::{CalicoNode, ConfigRef, FlannelNode, removable};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// What the calico probe found on one node, and the check's one-line verdict.
pub(super) struct Probed {
    pub node: CalicoNode,
    pub summary: String,
}

pub(super) struct CalicoFound {
    pub hosts: Vec<Arc<Host>>,
    pub probed: Vec<Probed>,
}

const CALICO_ONLY: ProbeWants = ProbeWants {
    calico: true,
    nat: false,
};

pub(super) async fn calico(
    command: &mut CalicoFix<'_>,
    links: &mut Links,
) -> Result<CalicoFound, FixError> {
    let cluster = command.cluster;
    let pool = connect(&command.targets, command.opts, links, &mut command.failures).await;
    let mut probed = Vec::new();
    for host in pool.hosts() {
        match probe_host(cluster, host).await {
            Ok(p) => {
                if p.node.healthy {
                    command
                        .healthy
                        .push((p.node.node.clone(), p.summary.clone()));
                }
                probed.push(p)
            }
            Err(e) => command
                .failures
                .push((host.name().to_string(), e.to_string())),
        }
    }
    Ok(CalicoFound {
        hosts: pool.hosts().cloned().collect(),
        probed,
    })
}

/// Connects the chosen hosts, kept for the run's later stages; one that cannot be reached goes to
/// `failures`, named with why.
async fn connect(
    targets: &[crate::hosts::SshTarget],
    opts: &run::DoctorOptions,
    links: &mut Links,
    failures: &mut Vec<(String, String)>,
) -> crate::hosts::HostPool {
    let (failed, pool) = run::connect(targets, &opts.ssh).await;
    links.keep(pool.hosts());
    for a in &failed {
        let why = a.error.as_ref().map(|e| e.to_string()).unwrap_or_default();
        failures.push((
            a.target.name.clone(),
            format!("host {}: {why}", a.target.name),
        ));
    }
    pool
}

/// A host whose calico directories could not be read (the probe container did not run or
/// answer).
#[derive(Debug, thiserror::Error)]
#[error("host {host}: cannot read its calico directories: {source}")]
pub(super) struct ProbeFailed {
    pub host: String,
    #[source]
    pub source: crate::hosts::HostError,
}

/// Probes `host`: what is wrong with its directories and entry, and the check's verdict; why
/// not, naming the host, when they cannot be read.
pub(super) async fn probe_host(
    cluster: &crate::cluster::Cluster,
    host: &Host,
) -> Result<Probed, ProbeFailed> {
    let node = node_name(&cluster.config, host.name());
    let sections = probe::probe(
        host.docker(),
        &cluster.config.system_images.kubernetes,
        &cluster.registry_credentials(),
        CALICO_ONLY,
    )
    .await
    .map_err(|source| ProbeFailed {
        host: host.name().to_string(),
        source,
    })?;
    let finding = calico::evaluate(&node, host.name(), &sections);
    Ok(Probed {
        node: CalicoNode {
            host: host.name().to_string(),
            node,
            healthy: finding.status == Status::Ok,
            directories: calico::wrong_directories(&sections)
                .into_iter()
                .map(|(d, found)| (d.to_string(), found))
                .collect(),
            entry_problem: entry_problem(&sections),
        },
        summary: finding.summary,
    })
}

/// What is wrong with the tmpfiles.d entry of the runtime directory, as the check says it.
fn entry_problem(sections: &BTreeMap<String, Vec<String>>) -> Option<String> {
    calico::entry_problem(&calico::tmpfiles_lines(sections), calico::DIRECTORIES[0])
}

pub(super) struct FlannelFound {
    pub api: KubeApi,
    pub hosts: Vec<Arc<Host>>,
    pub nodes: Vec<FlannelNode>,
}

const NAT_ONLY: ProbeWants = ProbeWants {
    calico: false,
    nat: true,
};

pub(super) async fn flannel(
    command: &mut FlannelFix<'_>,
    links: &mut Links,
) -> Result<FlannelFound, FixError> {
    let cluster = command.cluster;
    let api = run::api(cluster)
        .await
        .map_err(|f| FixError::NoApi(f.summary))?;
    let cni = cni::discover(&api, &cluster.config.network.plugin).await?;
    let daemonsets: Vec<_> = cni.daemonsets.iter().filter(|d| d.flannel).collect();
    if daemonsets.is_empty() {
        return Err(FixError::NoFlannel {
            plugin: cluster.config.network.plugin.clone(),
        });
    }
    let mut pods: BTreeMap<String, (String, String)> = BTreeMap::new();
    for ds in daemonsets {
        for (node, found) in cni::pods_by_node(&api, ds).await {
            // The one that is not already going away, if the node has two.
            let pod = found
                .iter()
                .find(|p| p.metadata.deletion_timestamp.is_none())
                .or(found.first());
            if let Some(name) = pod.and_then(|p| p.metadata.name.clone()) {
                pods.entry(node).or_insert((ds.namespace.clone(), name));
            }
        }
    }
    let pool = connect(&command.targets, command.opts, links, &mut command.failures).await;
    let mut nodes = Vec::new();
    for host in pool.hosts() {
        let node = node_name(&cluster.config, host.name());
        match nat_finding(cluster, host, &node).await {
            Ok(finding) => {
                let healthy = finding.status == Status::Ok;
                if healthy {
                    command
                        .healthy
                        .push((node.clone(), finding.summary.clone()));
                }
                nodes.push(FlannelNode {
                    host: host.name().to_string(),
                    pod: pods.get(&node).cloned(),
                    node,
                    healthy,
                    summary: finding.summary,
                })
            }
            Err(e) => command
                .failures
                .push((host.name().to_string(), e.to_string())),
        }
    }
    command.nodes = nodes.clone();
    Ok(FlannelFound {
        api,
        hosts: pool.hosts().cloned().collect(),
        nodes,
    })
}

/// Why a host's nat table gave no finding; each names the host.
#[derive(Debug, thiserror::Error)]
pub(super) enum NatUnread {
    #[error("host {host}: cannot read its nat table: {source}")]
    Probe {
        host: String,
        #[source]
        source: crate::hosts::HostError,
    },
    /// The probe ran but read nothing (no iptables-save in the Kubernetes image).
    #[error("host {host}: {summary}")]
    Nothing { host: String, summary: String },
}

/// doctor's `flannel-nat` finding for `host`, whose node is `node`.
pub(super) async fn nat_finding(
    cluster: &crate::cluster::Cluster,
    host: &Host,
    node: &str,
) -> Result<crate::checks::Finding, NatUnread> {
    let sections = probe::probe(
        host.docker(),
        &cluster.config.system_images.kubernetes,
        &cluster.registry_credentials(),
        NAT_ONLY,
    )
    .await
    .map_err(|source| NatUnread::Probe {
        host: host.name().to_string(),
        source,
    })?;
    let finding = flannel::evaluate(node, host.name(), &sections, None);
    if finding.status == Status::Warn {
        return Err(NatUnread::Nothing {
            host: host.name().to_string(),
            summary: finding.summary,
        });
    }
    Ok(finding)
}

pub(super) struct WebhooksFound {
    pub api: KubeApi,
    pub cni: cni::Cni,
    /// The removable configurations, as the server has them.
    pub objects: Vec<(ConfigRef, serde_json::Value)>,
    /// What the backup held before.
    pub existing: Vec<serde_json::Value>,
}

pub(super) async fn webhooks(command: &mut WebhookFix<'_>) -> Result<WebhooksFound, FixError> {
    let cluster = command.cluster;
    let api = run::api(cluster)
        .await
        .map_err(|f| FixError::NoApi(f.summary))?;
    let cni = cni::discover(&api, &cluster.config.network.plugin).await?;
    let check = webhooks::find(&api, &cni.namespaces(), &cni.pod_labels(), None).await?;
    let (remove, kept) = removable(&webhooks::blockers(&check.blocking));
    command.kept = kept;
    let mut objects = Vec::new();
    for (kind, name) in remove {
        let object = webhooks::get_config(&api, kind, &name).await?;
        objects.push(((kind, name), object));
    }
    // An earlier backup is read only when there is something to add to it.
    let existing = if objects.is_empty() {
        Vec::new()
    } else {
        backup(&backup_path(cluster))?
    };
    Ok(WebhooksFound {
        api,
        cni,
        objects,
        existing,
    })
}

/// The backup file's items (an empty list when it does not exist).
pub(super) fn backup(path: &Path) -> Result<Vec<serde_json::Value>, FixError> {
    let failed = |cause: String| FixError::Backup {
        path: path.display().to_string(),
        cause,
    };
    match rkers_core::bounded::read_to_string(path, rkers_core::bounded::TEXT) {
        Ok(text) => {
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| failed(e.to_string()))?;
            Ok(v["items"].as_array().cloned().unwrap_or_default())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(failed(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_that_fails_names_the_host_and_the_cause() {
        let e = ProbeFailed {
            host: "10.0.0.1".into(),
            source: crate::hosts::HostError::ConnectionRefused {
                host: "10.0.0.1".into(),
                addr: "10.0.0.1:22".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "host 10.0.0.1: cannot read its calico directories: host 10.0.0.1: connection \
             refused by 10.0.0.1:22: nothing listens there (is sshd running on that port?)"
        );
    }
}
