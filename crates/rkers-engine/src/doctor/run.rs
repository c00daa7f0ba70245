//! One `doctor` run: connect to the chosen hosts, read the cluster through its API server, and
//! collect every check's findings. Reads only (the helper containers it starts are removed).

use super::cni::{self, Cni};
use super::probe::{self, ProbeWants};
use super::{Finding, Report, Status, basics, calico, flannel, webhooks};
use crate::cluster::Cluster;
use crate::hosts::{Host, HostAttempt, HostPool, SshOptions, SshTarget};
use crate::kubeapi::KubeApi;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use std::sync::Arc;

pub struct DoctorOptions {
    /// `--host`: only these hosts (address or node name); all when empty.
    pub hosts: Vec<String>,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
}

/// A `--host` that is not a node of the config, with the hosts that are (`address (node)`).
#[derive(Debug, thiserror::Error)]
#[error("--host {wanted}: not a node of {config}; known: {}", .known.join(", "))]
pub struct UnknownHost {
    pub wanted: String,
    pub config: String,
    pub known: Vec<String>,
}

/// The hosts a run looks at; an unknown `--host` is a usage error naming the known ones.
pub fn select_targets(
    cluster: &Cluster,
    wanted: &[String],
    agent: bool,
) -> Result<Vec<SshTarget>, UnknownHost> {
    let all = cluster.ssh_targets(agent);
    if wanted.is_empty() {
        return Ok(all);
    }
    let mut out = Vec::new();
    for w in wanted {
        let found = all.iter().find(|t| {
            &t.name == w || basics::node_name(&cluster.config, &t.name) == w.to_lowercase()
        });
        match found {
            Some(t) if !out.iter().any(|o: &SshTarget| o.name == t.name) => out.push(t.clone()),
            Some(_) => {}
            None => {
                let known: Vec<String> = all
                    .iter()
                    .map(|t| {
                        format!(
                            "{} ({})",
                            t.name,
                            basics::node_name(&cluster.config, &t.name)
                        )
                    })
                    .collect();
                return Err(UnknownHost {
                    wanted: w.clone(),
                    config: cluster.files.config_path.display().to_string(),
                    known,
                });
            }
        }
    }
    Ok(out)
}

/// Connection attempts that failed, and a pool of the hosts that answered.
pub async fn connect(targets: &[SshTarget], ssh: &SshOptions) -> (Vec<HostAttempt>, HostPool) {
    let (failed, good): (Vec<HostAttempt>, Vec<HostAttempt>) = HostPool::connect_each(targets, ssh)
        .await
        .into_iter()
        .partition(|a| a.error.is_some());
    let pool = HostPool::from_attempts(good, ssh.concurrency)
        .await
        .expect("only attempts without error");
    (failed, pool)
}

/// The admin kubeconfig's API server, or a finding saying why it cannot be reached.
pub async fn api(cluster: &Cluster) -> Result<KubeApi, Finding> {
    let path = &cluster.files.kubeconfig_path;
    let text = (cluster.files.storage)
        .read_to_string(path, rkers_core::bounded::KUBECONFIG)
        .map_err(|e| {
            Finding::new(
                "kubernetes-api",
                Status::Fail,
                None,
                format!("cannot read {}: {e}", path.display()),
            )
            .fix(["rkers util get-kubeconfig --config <cluster.yml>"])
        })?;
    let api = KubeApi::from_kubeconfig(&text).await.map_err(|e| {
        Finding::new("kubernetes-api", Status::Fail, None, e.to_string())
            .fix(["rkers util get-kubeconfig --config <cluster.yml>"])
    })?;
    match api.server_version().await {
        Ok(_) => Ok(api),
        Err(e) => Err(
            Finding::new("kubernetes-api", Status::Fail, None, e.to_string())
                .evidence([format!("kubeconfig {}", path.display())])
                .fix([
                    "see the container findings of the control plane hosts (kube-apiserver, etcd)",
                ]),
        ),
    }
}

/// The flannel image cluster.yml configures, and its key, on flannel and canal clusters.
pub fn configured_flannel(cluster: &Cluster) -> Option<(String, &'static str)> {
    let i = &cluster.config.system_images;
    match cluster.config.network.plugin.as_str() {
        "flannel" => Some((i.flannel.clone(), "flannel")),
        "canal" => Some((i.canal_flannel.clone(), "canal_flannel")),
        _ => None,
    }
}

async fn host_checks(
    cluster: &Cluster,
    host: &Arc<Host>,
    cni: &Cni,
    flannel_pods: &[(String, String, String)],
) -> Vec<Finding> {
    let c = &cluster.config;
    let node = basics::node_name(c, host.name());
    let mut out = basics::containers(c, host).await;
    let now = time::OffsetDateTime::now_utc();
    match basics::host_certificates(c, host).await {
        Ok(certs) => out.push(basics::certificates(&node, &certs, now)),
        Err(e) => out.push(Finding::new(
            "certificate",
            Status::Warn,
            Some(&node),
            format!("cannot read /etc/kubernetes: {e}"),
        )),
    }
    if c.nodes
        .iter()
        .any(|n| n.address == host.name() && n.role.iter().any(|r| r == "etcd"))
    {
        out.push(basics::etcd(c, host).await);
        if c.services.etcd.snapshot == Some(true)
            && let Some(finding) = basics::etcd_snapshots(c, host).await
        {
            out.push(finding);
        }
    }
    let wants = ProbeWants {
        calico: cni.calico,
        nat: cni.flannel,
    };
    if wants.calico || wants.nat {
        match probe::probe(
            host.docker(),
            &c.system_images.kubernetes,
            &cluster.registry_credentials(),
            wants,
        )
        .await
        {
            Ok(sections) => {
                if wants.calico {
                    out.push(calico::evaluate(&node, host.name(), &sections));
                }
                if wants.nat {
                    let pod = flannel_pods
                        .iter()
                        .find(|(n, _, _)| n == &node)
                        .map(|(_, ns, p)| (ns.as_str(), p.as_str()));
                    out.push(flannel::evaluate(&node, host.name(), &sections, pod));
                }
            }
            Err(e) => out.push(Finding::new(
                "host-probe",
                Status::Warn,
                Some(&node),
                format!("cannot read the host's files and nat table: {e}"),
            )),
        }
    }
    out
}

pub async fn run_doctor(cluster: &Cluster, opts: &DoctorOptions) -> Result<Report, UnknownHost> {
    let targets = select_targets(cluster, &opts.hosts, opts.agent_override)?;
    let selected: Vec<String> = targets
        .iter()
        .map(|t| basics::node_name(&cluster.config, &t.name))
        .collect();
    let mut report = Report::default();
    let (failed, pool) = connect(&targets, &opts.ssh).await;
    for a in &failed {
        report.push(basics::connection(&cluster.config, a));
    }
    for h in pool.hosts() {
        report.push(Finding::ok(
            "ssh-docker",
            Some(&basics::node_name(&cluster.config, h.name())),
            format!(
                "SSH and Docker {} ({}) answer",
                h.facts().docker_version,
                h.docker().transport()
            ),
        ));
    }
    let api = match api(cluster).await {
        Ok(a) => Some(a),
        Err(f) => {
            report.push(f);
            None
        }
    };
    let (mut cni, nodes) = match &api {
        Some(api) => {
            let cni = cni::discover(api, &cluster.config.network.plugin)
                .await
                .unwrap_or_else(|e| {
                    report.push(Finding::new(
                        "cni",
                        Status::Warn,
                        None,
                        format!("cannot list the CNI DaemonSets: {e}"),
                    ));
                    Cni::default()
                });
            let nodes: Vec<Node> = Api::<Node>::all(api.client.clone())
                .list(&ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default();
            (cni, nodes)
        }
        None => (Cni::default(), Vec::new()),
    };
    if api.is_none() {
        // Without the API only cluster.yml says what the CNI is.
        let (c, f) = cni::families_of_plugin(&cluster.config.network.plugin);
        cni.calico = c;
        cni.flannel = f;
    }
    let nodes: Vec<Node> = nodes
        .into_iter()
        .filter(|n| opts.hosts.is_empty() || selected.contains(&cni::node_name(n)))
        .collect();
    let mut flannel_pods = Vec::new();
    if let Some(api) = &api {
        for ds in cni.daemonsets.iter().filter(|d| d.flannel) {
            for (node, pods) in cni::pods_by_node(api, ds).await {
                if let Some(p) = pods.first() {
                    flannel_pods.push((
                        node,
                        ds.namespace.clone(),
                        p.metadata.name.clone().unwrap_or_default(),
                    ));
                }
            }
        }
    }
    let per_host = futures::future::join_all(
        pool.hosts()
            .map(|h| host_checks(cluster, h, &cni, &flannel_pods)),
    )
    .await;
    for f in per_host {
        report.extend(f);
    }
    if let Some(api) = &api {
        report.extend(basics::nodes(&nodes));
        report.extend(cni::findings(api, &cni, &nodes).await);
        let via = pool.hosts().find(|h| {
            cluster
                .config
                .nodes
                .iter()
                .any(|n| n.address == h.name() && n.role.iter().any(|r| r == "controlplane"))
        });
        match webhooks::find(api, &cni.namespaces(), &cni.pod_labels(), via).await {
            Ok(w) => report.extend(w.findings),
            Err(e) => report.push(Finding::new(
                webhooks::CHECK,
                Status::Warn,
                None,
                format!("cannot list webhook configurations: {e}"),
            )),
        }
    }
    if let Some((image, key)) = configured_flannel(cluster)
        && let Some(f) = flannel::version_finding(&image, key)
    {
        report.push(f);
    }
    pool.close().await;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_host_names_the_known_ones() {
        let e = UnknownHost {
            wanted: "10.0.0.9".into(),
            config: "cluster.yml".into(),
            known: vec!["10.0.0.1 (a)".into(), "10.0.0.2 (b)".into()],
        };
        assert_eq!(
            e.to_string(),
            "--host 10.0.0.9: not a node of cluster.yml; known: 10.0.0.1 (a), 10.0.0.2 (b)"
        );
    }
}
