//! RKE1's port checks between roles (spec §10): listener containers publish the role's ports
//! on each host, then a checker container on each source host tries every target with `nc`.
//! Container names, commands and the port matrix are RKE1's.

use std::time::Duration;

use serde::Serialize;

use super::container::{ContainerSpec, PortBinding};
use super::error::HostError;
use super::pool::HostPool;
use super::target::RegistryCredential;

pub const PORT_CHECK_CONTAINER: &str = "rke-port-checker";
pub const ETCD_LISTENER: &str = "rke-etcd-port-listener";
pub const CP_LISTENER: &str = "rke-cp-port-listener";
pub const WORKER_LISTENER: &str = "rke-worker-port-listener";

pub const ETCD_PORTS: &[u16] = &[2379, 2380];
pub const ETCD_CLIENT_PORTS: &[u16] = &[2379];
pub const CONTROLPLANE_PORTS: &[u16] = &[6443];
pub const WORKER_PORTS: &[u16] = &[10250];

/// A host taking part in the checks: its pool name and the address others reach it at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortHost {
    pub name: String,
    pub internal_address: String,
}

/// What to check. Built by the caller from the cluster's roles.
#[derive(Clone, Debug)]
pub struct PortCheckPlan {
    /// The tools image (RKE1's `alpine` system image): needs `nc` with `-kl -p -e` and `-z -w`.
    pub tools_image: String,
    pub registries: Vec<RegistryCredential>,
    pub etcd: Vec<PortHost>,
    pub controlplane: Vec<PortHost>,
    pub worker: Vec<PortHost>,
    /// Attempts per source host (RKE1: 3) and the pause between them (RKE1: 5 s).
    pub attempts: u32,
    pub retry_delay: Duration,
}

impl PortCheckPlan {
    /// Leaves `names` out of every role: they neither listen nor probe (Windows workers, whose
    /// Docker cannot run the Linux listener and probe containers).
    pub fn without_hosts(&mut self, names: &[String]) {
        for list in [&mut self.etcd, &mut self.controlplane, &mut self.worker] {
            list.retain(|h| !names.contains(&h.name));
        }
    }

    pub fn new(tools_image: impl Into<String>) -> Self {
        PortCheckPlan {
            tools_image: tools_image.into(),
            registries: Vec::new(),
            etcd: Vec::new(),
            controlplane: Vec::new(),
            worker: Vec::new(),
            attempts: 3,
            retry_delay: Duration::from_secs(5),
        }
    }
}

/// Ports a host could not reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortCheckFailure {
    pub host: String,
    /// `address:port` entries.
    pub unreachable: Vec<String>,
}

impl std::fmt::Display for PortCheckFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[network] Host [{}] is not able to connect to the following ports: [{}]. Please check network policies and firewall rules",
            self.host,
            self.unreachable.join(", ")
        )
    }
}

/// One check: from `source`, try `targets` on `ports`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Check {
    source: String,
    targets: Vec<String>,
    ports: Vec<u16>,
}

/// RKE1's matrix: etcd↔etcd on 2379/2380 (only with more than one etcd host),
/// controlplane→etcd on 2379, controlplane→worker on 10250, worker→controlplane on 6443.
fn matrix(plan: &PortCheckPlan) -> Vec<Check> {
    let addrs = |hs: &[PortHost]| {
        hs.iter()
            .map(|h| h.internal_address.clone())
            .collect::<Vec<_>>()
    };
    let mut checks = Vec::new();
    let mut add = |sources: &[PortHost], targets: &[PortHost], ports: &[u16]| {
        if targets.is_empty() {
            return;
        }
        for s in sources {
            checks.push(Check {
                source: s.name.clone(),
                targets: addrs(targets),
                ports: ports.to_vec(),
            });
        }
    };
    if plan.etcd.len() > 1 {
        add(&plan.etcd, &plan.etcd, ETCD_PORTS);
    }
    add(&plan.controlplane, &plan.etcd, ETCD_CLIENT_PORTS);
    add(&plan.controlplane, &plan.worker, WORKER_PORTS);
    add(&plan.worker, &plan.controlplane, CONTROLPLANE_PORTS);
    checks
}

fn listener_spec(image: &str, ports: &[u16]) -> ContainerSpec {
    ContainerSpec {
        image: image.to_owned(),
        cmd: ["nc", "-kl", "-p", "1337", "-e", "echo"]
            .map(String::from)
            .to_vec(),
        ports: ports.iter().map(|p| PortBinding::tcp(*p, 1337)).collect(),
        ..Default::default()
    }
}

fn checker_spec(image: &str, targets: &[String], ports: &[u16]) -> ContainerSpec {
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    ContainerSpec {
        image: image.to_owned(),
        env: vec![
            format!("HOSTS={}", targets.join(" ")),
            format!("PORTS={}", ports.join(" ")),
        ],
        cmd: vec![
            "sh".into(),
            "-c".into(),
            "for host in $HOSTS; do for port in $PORTS ; do echo \"Checking host ${host} on port ${port}\" >&1 & nc -w 5 -z $host $port > /dev/null || echo \"${host}:${port}\" >&2 & done; wait; done".into(),
        ],
        network_mode: Some("host".into()),
        log_driver: Some("json-file".into()),
        ..Default::default()
    }
}

/// Runs the checks and removes the listeners again. `Ok` carries the failures found (empty
/// when every port answered); `Err` is a host that could not run the check at all.
pub async fn check_cluster_ports(
    pool: &HostPool,
    plan: &PortCheckPlan,
) -> Result<Vec<PortCheckFailure>, HostError> {
    let listeners: Vec<(String, &'static str, &'static [u16])> = plan
        .etcd
        .iter()
        .map(|h| (h.name.clone(), ETCD_LISTENER, ETCD_PORTS))
        .chain(
            plan.controlplane
                .iter()
                .map(|h| (h.name.clone(), CP_LISTENER, CONTROLPLANE_PORTS)),
        )
        .chain(
            plan.worker
                .iter()
                .map(|h| (h.name.clone(), WORKER_LISTENER, WORKER_PORTS)),
        )
        .collect();
    let result = async {
        // Images first, once per host.
        let mut hosts: Vec<String> = listeners.iter().map(|l| l.0.clone()).collect();
        hosts.sort();
        hosts.dedup();
        for (name, r) in pool
            .for_each(&hosts, |h| {
                let image = plan.tools_image.clone();
                let regs = plan.registries.clone();
                async move { h.docker().ensure_image(&image, &regs, &mut |_| {}).await }
            })
            .await
        {
            let _ = name;
            r?;
        }
        for (host, name, ports) in &listeners {
            start_listener(pool, host, name, &plan.tools_image, ports).await?;
        }
        let checks = matrix(plan);
        let mut failures: Vec<PortCheckFailure> = Vec::new();
        for check in &checks {
            let unreachable = run_checker(pool, plan, check).await?;
            if unreachable.is_empty() {
                continue;
            }
            match failures.iter_mut().find(|f| f.host == check.source) {
                Some(f) => f.unreachable.extend(unreachable),
                None => failures.push(PortCheckFailure {
                    host: check.source.clone(),
                    unreachable,
                }),
            }
        }
        Ok(failures)
    }
    .await;
    for (host, name, _) in &listeners {
        if let Some(h) = pool.get(host) {
            let _ = h.docker().remove_container(name).await;
        }
    }
    result
}

async fn start_listener(
    pool: &HostPool,
    host: &str,
    name: &str,
    image: &str,
    ports: &[u16],
) -> Result<(), HostError> {
    let h = pool.get(host).ok_or_else(|| HostError::Ssh {
        host: host.to_owned(),
        detail: "not connected".into(),
    })?;
    let d = h.docker();
    d.remove_container(name).await?;
    d.create_container(name, &listener_spec(image, ports))
        .await?;
    match d.start_container(name).await {
        Ok(()) => Ok(()),
        // The real component already serves the port: that is what the check wants.
        Err(e) if e.to_string().contains("address already in use") => {
            tracing::debug!(host, "{name}: port already served, listener not needed");
            d.remove_container(name).await
        }
        Err(e) => Err(e),
    }
}

async fn run_checker(
    pool: &HostPool,
    plan: &PortCheckPlan,
    check: &Check,
) -> Result<Vec<String>, HostError> {
    let h = pool.get(&check.source).ok_or_else(|| HostError::Ssh {
        host: check.source.clone(),
        detail: "not connected".into(),
    })?;
    let d = h.docker();
    let spec = checker_spec(&plan.tools_image, &check.targets, &check.ports);
    let mut last = Vec::new();
    for attempt in 0..plan.attempts.max(1) {
        if attempt > 0 {
            tokio::time::sleep(plan.retry_delay).await;
        }
        d.remove_container(PORT_CHECK_CONTAINER).await?;
        d.create_container(PORT_CHECK_CONTAINER, &spec).await?;
        let run = async {
            d.start_container(PORT_CHECK_CONTAINER).await?;
            d.wait_container(PORT_CHECK_CONTAINER, Duration::from_secs(60))
                .await?;
            d.logs_stderr(PORT_CHECK_CONTAINER, 1000).await
        }
        .await;
        d.remove_container(PORT_CHECK_CONTAINER).await?;
        let stderr = run?;
        last = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        if last.is_empty() {
            return Ok(last);
        }
    }
    last.sort();
    Ok(last)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hosts_left_out_neither_listen_nor_probe() {
        let host = |n: &str| PortHost {
            name: n.into(),
            internal_address: String::new(),
        };
        let mut plan = PortCheckPlan::new("tools");
        plan.etcd = vec![host("l1")];
        plan.controlplane = vec![host("l1")];
        plan.worker = vec![host("l1"), host("w1"), host("w2")];
        plan.without_hosts(&["w1".to_string()]);
        let names = |v: &[PortHost]| v.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&plan.worker), ["l1", "w2"]);
        assert_eq!(names(&plan.etcd), ["l1"]);
        assert_eq!(names(&plan.controlplane), ["l1"]);
    }

    use super::*;

    fn ph(n: &str) -> PortHost {
        PortHost {
            name: n.into(),
            internal_address: format!("10.0.0.{}", &n[1..]),
        }
    }

    #[test]
    fn matrix_follows_rke1() {
        let mut plan = PortCheckPlan::new("tools");
        plan.etcd = vec![ph("e1")];
        plan.controlplane = vec![ph("c2")];
        plan.worker = vec![ph("w3"), ph("w4")];
        let m = matrix(&plan);
        // Single etcd host: no etcd↔etcd check.
        assert_eq!(
            m,
            vec![
                Check {
                    source: "c2".into(),
                    targets: vec!["10.0.0.1".into()],
                    ports: vec![2379]
                },
                Check {
                    source: "c2".into(),
                    targets: vec!["10.0.0.3".into(), "10.0.0.4".into()],
                    ports: vec![10250]
                },
                Check {
                    source: "w3".into(),
                    targets: vec!["10.0.0.2".into()],
                    ports: vec![6443]
                },
                Check {
                    source: "w4".into(),
                    targets: vec!["10.0.0.2".into()],
                    ports: vec![6443]
                },
            ]
        );
        plan.etcd.push(ph("e5"));
        let m = matrix(&plan);
        assert_eq!(m[0].ports, vec![2379, 2380]);
        assert_eq!(m[0].targets.len(), 2);
        let spec = listener_spec("tools", ETCD_PORTS);
        assert_eq!(spec.cmd.join(" "), "nc -kl -p 1337 -e echo");
        assert_eq!(spec.ports.len(), 2);
        let f = PortCheckFailure {
            host: "c2".into(),
            unreachable: vec!["10.0.0.1:2379".into()],
        };
        assert!(
            f.to_string().contains(
                "Host [c2] is not able to connect to the following ports: [10.0.0.1:2379]"
            )
        );
    }
}
