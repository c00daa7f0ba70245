//! RKE1's port checks between roles (spec §10): listener containers publish the role's ports
//! on each host, then each source host tries every target: through its own sshd
//! (`direct-tcpip` from the host's network namespace, no container), or, where sshd does not
//! forward TCP, RKE1's checker container with `nc`. Container names, commands and the port
//! matrix are RKE1's.

use std::time::Duration;

use futures::StreamExt;
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

/// One check of RKE1's matrix: from `source`, try `targets` on `ports`.
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

/// A listener container to start: on `host`, RKE1's container `name` publishing `ports`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Listener {
    host: String,
    name: &'static str,
    ports: &'static [u16],
}

/// Everything one source host probes: the `address:port` pairs of every check of the matrix
/// that starts there, in the matrix's order, each pair once. One checker container per source
/// host tries them all at once; RKE1 ran one container per check, one after the other, all
/// under the same name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Probe {
    source: String,
    pairs: Vec<String>,
}

/// The whole check as one round: every listener, then every probe.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Round {
    listeners: Vec<Listener>,
    probes: Vec<Probe>,
}

fn round(plan: &PortCheckPlan) -> Round {
    let role = |hosts: &[PortHost], name: &'static str, ports: &'static [u16]| {
        hosts
            .iter()
            .map(|h| Listener {
                host: h.name.clone(),
                name,
                ports,
            })
            .collect::<Vec<_>>()
    };
    let listeners = [
        role(&plan.etcd, ETCD_LISTENER, ETCD_PORTS),
        role(&plan.controlplane, CP_LISTENER, CONTROLPLANE_PORTS),
        role(&plan.worker, WORKER_LISTENER, WORKER_PORTS),
    ]
    .concat();
    let mut probes: Vec<Probe> = Vec::new();
    for check in matrix(plan) {
        let pairs = check
            .targets
            .iter()
            .flat_map(|t| check.ports.iter().map(move |p| join_host_port(t, *p)));
        let at = match probes.iter().position(|p| p.source == check.source) {
            Some(i) => i,
            None => {
                probes.push(Probe {
                    source: check.source.clone(),
                    pairs: Vec::new(),
                });
                probes.len() - 1
            }
        };
        for pair in pairs {
            if !probes[at].pairs.contains(&pair) {
                probes[at].pairs.push(pair);
            }
        }
    }
    Round { listeners, probes }
}

/// `address:port` as the checker prints an unreachable pair (RKE1's form, IPv6 unbracketed).
fn join_host_port(address: &str, port: u16) -> String {
    format!("{address}:{port}")
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

/// RKE1's checker (`nc -w 5 -z`, every pair at once, each unreachable pair on stderr), over a
/// list of `address:port` pairs instead of the product of one host list and one port list, so
/// that one container covers all of a host's checks. Each pair that answers is also confirmed
/// on stdout: a pair counts as reachable only when confirmed, so a checker that breaks (no
/// `nc`, a shell error) fails the check instead of passing it.
fn checker_spec(image: &str, pairs: &[String]) -> ContainerSpec {
    ContainerSpec {
        image: image.to_owned(),
        env: vec![format!("TARGETS={}", pairs.join(" "))],
        cmd: vec![
            "sh".into(),
            "-c".into(),
            "for target in $TARGETS; do (nc -w 5 -z ${target%:*} ${target##*:} > /dev/null && echo \"reachable ${target}\" || echo \"${target}\" >&2) & done; wait".into(),
        ],
        network_mode: Some("host".into()),
        log_driver: Some("json-file".into()),
        ..Default::default()
    }
}

/// The pairs a checker's output confirms as reachable.
fn reachable(logs: &str) -> impl Iterator<Item = &str> {
    logs.lines()
        .filter_map(|l| l.trim().strip_prefix("reachable "))
}

/// Runs `work` on every item, at most `limit` at once; every item is attempted and the
/// results come back in the items' order.
async fn bounded<'a, T, R, Fut>(items: &'a [T], limit: usize, work: impl Fn(&'a T) -> Fut) -> Vec<R>
where
    Fut: std::future::Future<Output = R>,
{
    // The futures are made up front: a lazy `map` over the slice would keep the closure in this
    // future's state, and rustc then cannot prove the future `Send` for every lifetime, which
    // the library API's callers need to spawn an operation.
    let futures: Vec<Fut> = items.iter().map(work).collect();
    futures::stream::iter(futures)
        .buffered(limit.max(1))
        .collect()
        .await
}

/// The listener image on every host that starts a listener, at most `--concurrency` at a time.
pub async fn ensure_tools_image(pool: &HostPool, plan: &PortCheckPlan) -> Result<(), HostError> {
    let mut hosts: Vec<String> = round(plan)
        .listeners
        .iter()
        .map(|l| l.host.clone())
        .collect();
    hosts.sort();
    hosts.dedup();
    for (_, r) in pool
        .for_each(&hosts, |h| {
            let image = plan.tools_image.clone();
            let regs = plan.registries.clone();
            async move { h.docker().ensure_image(&image, &regs, &mut |_| {}).await }
        })
        .await
    {
        r?;
    }
    Ok(())
}

/// Runs the checks in one round and removes the listeners again: the tools image on every host,
/// then every listener at once, then every host's probe at once, each step at most
/// `--concurrency` at a time. `Ok` carries the failures found, one per source host that could
/// not reach something (empty when every port answered); `Err` is a host that could not run
/// the check at all.
pub async fn check_cluster_ports(
    pool: &HostPool,
    plan: &PortCheckPlan,
) -> Result<Vec<PortCheckFailure>, HostError> {
    let round = round(plan);
    let limit = pool.concurrency();
    let result = async {
        ensure_tools_image(pool, plan).await?;
        // Every listener must answer before any probe starts: a probe that runs early would
        // find the port closed and spend RKE1's retry pause waiting for it.
        let started = bounded(&round.listeners, limit, |l| {
            start_listener(pool, &l.host, l.name, &plan.tools_image, l.ports)
        })
        .await;
        started.into_iter().collect::<Result<Vec<()>, _>>()?;
        let probed = bounded(&round.probes, limit, |p| run_probe(pool, plan, p)).await;
        let mut failures = Vec::new();
        for (probe, r) in round.probes.iter().zip(probed) {
            let unreachable = r?;
            if !unreachable.is_empty() {
                failures.push(PortCheckFailure {
                    host: probe.source.clone(),
                    unreachable,
                });
            }
        }
        Ok(failures)
    }
    .await;
    bounded(&round.listeners, limit, |l| async move {
        if let Some(h) = pool.get(&l.host) {
            let _ = h.docker().remove_container(l.name).await;
        }
    })
    .await;
    result
}

fn connected<'a>(
    pool: &'a HostPool,
    host: &str,
) -> Result<&'a std::sync::Arc<super::Host>, HostError> {
    pool.get(host).ok_or_else(|| HostError::Ssh {
        host: host.to_owned(),
        detail: "not connected".into(),
    })
}

async fn start_listener(
    pool: &HostPool,
    host: &str,
    name: &str,
    image: &str,
    ports: &[u16],
) -> Result<(), HostError> {
    let h = connected(pool, host)?;
    let d = h.docker();
    d.remove_container(name).await?;
    d.create_container(name, &listener_spec(image, ports))
        .await?;
    match d.start_container(name).await {
        Ok(()) => Ok(()),
        // The real component already serves the port: that is what the check wants. Anything
        // else holding it would make the component fail to start later, with a less clear
        // message (fault matrix, scripts/faults: a port taken on one host).
        Err(e) if e.to_string().contains("address already in use") => {
            d.remove_container(name).await?;
            let component = port_owner(name);
            let served = d
                .inspect_container(component)
                .await?
                .is_some_and(|c| c.running);
            if served {
                tracing::debug!(host, "{name}: port already served by {component}");
                return Ok(());
            }
            let holders = port_holders(h.link().as_ref(), ports).await;
            Err(HostError::Container {
                host: host.to_owned(),
                container: name.to_owned(),
                detail: format!(
                    "port {} already in use on this host by {holders}, and not by {component} \
                     (not running here): stop that process, or skip the check with \
                     --disable-port-check",
                    ports
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
        Err(e) => Err(e),
    }
}

/// Checks on one host that the ports of `listener`'s role are free, or served by their own
/// component, by binding them with the role's listener and removing it again. RKE1 checks only
/// hosts and roles being added (§10): a component recreated on a node already in the cluster
/// (its container removed) would fail to bind a port something else took meanwhile, and the
/// run would still report success.
pub async fn check_host_ports_free(
    pool: &HostPool,
    host: &str,
    listener: &'static str,
    tools_image: &str,
    registries: &[RegistryCredential],
) -> Result<(), HostError> {
    let ports = match listener {
        ETCD_LISTENER => ETCD_PORTS,
        CP_LISTENER => CONTROLPLANE_PORTS,
        _ => WORKER_PORTS,
    };
    let d = connected(pool, host)?.docker();
    d.ensure_image(tools_image, registries, &mut |_| {}).await?;
    let started = start_listener(pool, host, listener, tools_image, ports).await;
    let removed = d.remove_container(listener).await;
    started?;
    removed
}

/// Which processes hold `ports` on the node, read with `ss -ltnp` (or `netstat -ltnp`) as the
/// SSH user; a user other than root may not see them, and that is said instead.
async fn port_holders(ssh: &dyn super::HostLink, ports: &[u16]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        ssh.exec("ss -Hltnp 2>/dev/null || netstat -ltnp 2>/dev/null"),
    )
    .await;
    let listing = match out {
        Ok(Ok(o)) => o.stdout_str(),
        _ => String::new(),
    };
    let found = listening_processes(&listing, ports);
    if found.is_empty() {
        format!(
            "a process user {:?} cannot see (`ss -ltnp` as root names it)",
            ssh.user()
        )
    } else {
        found.join(", ")
    }
}

/// The processes `ss -Hltnp` or `netstat -ltnp` output shows listening on one of `ports`, as
/// `name (pid N)`, each once.
fn listening_processes(listing: &str, ports: &[u16]) -> Vec<String> {
    let mut found = Vec::new();
    for line in listing.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // ss -H: state, recv-q, send-q, local, peer, process; netstat: proto, recv-q, send-q,
        // local, foreign, state, pid/program. The local address is the fourth either way.
        let Some(port) = fields
            .get(3)
            .and_then(|local| local.rsplit_once(':'))
            .and_then(|(_, p)| p.parse::<u16>().ok())
        else {
            continue;
        };
        if !ports.contains(&port) {
            continue;
        }
        let rest = fields[4..].join(" ");
        let mut names = Vec::new();
        if let Some(users) = rest.split_once("users:(").map(|(_, u)| u) {
            // ("python3",pid=1234,fd=3),("x",pid=5,fd=6)
            for entry in users.split("),(") {
                let name = entry.split('"').nth(1);
                let pid = entry
                    .split(',')
                    .find_map(|kv| kv.strip_prefix("pid="))
                    .map(|p| p.trim_end_matches(')'));
                if let (Some(name), Some(pid)) = (name, pid) {
                    names.push(format!("{name} (pid {pid})"));
                }
            }
        } else if let Some((pid, name)) = fields.last().and_then(|f| f.split_once('/'))
            && !pid.is_empty()
            && pid.chars().all(|c| c.is_ascii_digit())
        {
            names.push(format!("{name} (pid {pid})"));
        }
        for n in names {
            // The port is only worth naming when the listener binds several.
            let n = if ports.len() > 1 {
                format!("{n} on port {port}")
            } else {
                n
            };
            if !found.contains(&n) {
                found.push(n);
            }
        }
    }
    found
}

/// The container that serves a listener's ports once the cluster runs.
fn port_owner(listener: &str) -> &'static str {
    match listener {
        ETCD_LISTENER => "etcd",
        CP_LISTENER => "kube-apiserver",
        _ => "kubelet",
    }
}

/// One source host's probe, with RKE1's attempts and pause; a retry tries only the pairs that
/// did not answer yet. The unreachable pairs come back in the probe's order.
async fn run_probe(
    pool: &HostPool,
    plan: &PortCheckPlan,
    probe: &Probe,
) -> Result<Vec<String>, HostError> {
    let host = connected(pool, &probe.source)?;
    let d = host.docker();
    let mut left = probe.pairs.clone();
    let mut through_sshd = true;
    for attempt in 0..plan.attempts.max(1) {
        if left.is_empty() {
            break;
        }
        if attempt > 0 {
            tokio::time::sleep(plan.retry_delay).await;
        }
        if through_sshd {
            match probe_from_host(host.link().as_ref(), &left).await {
                Ok(unreachable) => {
                    left = unreachable;
                    continue;
                }
                // sshd may not forward TCP: RKE1's checker container does the same from the
                // host's network namespace.
                Err(HostError::ForwardingRefused { .. }) => through_sshd = false,
                Err(e) => return Err(e),
            }
        }
        d.remove_container(PORT_CHECK_CONTAINER).await?;
        d.create_container(
            PORT_CHECK_CONTAINER,
            &checker_spec(&plan.tools_image, &left),
        )
        .await?;
        let run = async {
            d.start_container(PORT_CHECK_CONTAINER).await?;
            d.wait_container(PORT_CHECK_CONTAINER, Duration::from_secs(60))
                .await?;
            d.logs(PORT_CHECK_CONTAINER, 2 * left.len() + 100).await
        }
        .await;
        d.remove_container(PORT_CHECK_CONTAINER).await?;
        let logs = run?;
        left.retain(|pair| !reachable(&logs).any(|r| r == pair));
    }
    Ok(left)
}

/// How long a probe waits for one `address:port` to answer, as RKE1's `nc -w 5`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
const PROBE_RETRY: Duration = Duration::from_millis(250);

/// The pairs of `pairs` the host cannot reach, tried from the host itself through its link
/// (over SSH: `direct-tcpip` channels its sshd opens, on the session rkers already has): the
/// same network namespace as RKE1's checker container (host network), without a container
/// per host. A pair counts as
/// reachable only when the connection was made.
async fn probe_from_host(
    link: &dyn super::link::HostLink,
    pairs: &[String],
) -> Result<Vec<String>, HostError> {
    let tried = bounded(pairs, 32, |pair| async move {
        let Some((address, port)) = pair
            .rsplit_once(':')
            .and_then(|(a, p)| Some((a, p.parse::<u16>().ok()?)))
        else {
            return Ok(Some(pair.clone()));
        };
        // A refused connection is tried again until the deadline: a listener just started
        // may not accept yet (its published port is DNATed to a process still starting).
        let deadline = tokio::time::Instant::now() + PROBE_TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, link.open_tcp(address, port)).await {
                Ok(Ok(_stream)) => return Ok(None),
                Ok(Err(HostError::TcpConnectFailed { .. }))
                    if tokio::time::Instant::now() + PROBE_RETRY < deadline =>
                {
                    tokio::time::sleep(PROBE_RETRY).await;
                }
                Ok(Err(HostError::TcpConnectFailed { .. })) | Err(_) => {
                    return Ok(Some(pair.clone()));
                }
                Ok(Err(e)) => return Err(e),
            }
        }
    })
    .await;
    let mut unreachable = Vec::new();
    for r in tried {
        unreachable.extend(r?);
    }
    Ok(unreachable)
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

    #[test]
    fn one_round_one_probe_per_source_host_with_every_pair_once() {
        // host1: etcd + controlplane + worker, h2: etcd, h3/h4 workers.
        let mut plan = PortCheckPlan::new("tools");
        plan.etcd = vec![ph("h1"), ph("h2")];
        plan.controlplane = vec![ph("h1")];
        plan.worker = vec![ph("h1"), ph("h3"), ph("h4")];
        let r = round(&plan);
        let listeners: Vec<(&str, &str)> = r
            .listeners
            .iter()
            .map(|l| (l.host.as_str(), l.name))
            .collect();
        assert_eq!(
            listeners,
            [
                ("h1", ETCD_LISTENER),
                ("h2", ETCD_LISTENER),
                ("h1", CP_LISTENER),
                ("h1", WORKER_LISTENER),
                ("h3", WORKER_LISTENER),
                ("h4", WORKER_LISTENER),
            ]
        );
        let probes: Vec<(&str, Vec<&str>)> = r
            .probes
            .iter()
            .map(|p| {
                (
                    p.source.as_str(),
                    p.pairs.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            probes,
            [
                // etcd↔etcd, then controlplane→etcd (2379 already there), controlplane→worker,
                // worker→controlplane: all of h1's checks in one probe.
                (
                    "h1",
                    vec![
                        "10.0.0.1:2379",
                        "10.0.0.1:2380",
                        "10.0.0.2:2379",
                        "10.0.0.2:2380",
                        "10.0.0.1:10250",
                        "10.0.0.3:10250",
                        "10.0.0.4:10250",
                        "10.0.0.1:6443",
                    ]
                ),
                (
                    "h2",
                    vec![
                        "10.0.0.1:2379",
                        "10.0.0.1:2380",
                        "10.0.0.2:2379",
                        "10.0.0.2:2380"
                    ]
                ),
                ("h3", vec!["10.0.0.1:6443"]),
                ("h4", vec!["10.0.0.1:6443"]),
            ]
        );
        // Every pair of the matrix is probed from its source, and nothing else.
        for check in matrix(&plan) {
            let probe = r.probes.iter().find(|p| p.source == check.source).unwrap();
            for t in &check.targets {
                for port in &check.ports {
                    assert!(probe.pairs.contains(&format!("{t}:{port}")));
                }
            }
        }
        let total: usize = r.probes.iter().map(|p| p.pairs.len()).sum();
        assert_eq!(total, 8 + 4 + 1 + 1);
    }

    #[test]
    fn thirty_hosts_make_one_listener_per_role_and_one_probe_per_host() {
        let mut plan = PortCheckPlan::new("tools");
        plan.etcd = vec![ph("h1")];
        plan.controlplane = vec![ph("h1")];
        plan.worker = (1..=30).map(|i| ph(&format!("h{i}"))).collect();
        let r = round(&plan);
        assert_eq!(r.listeners.len(), 32);
        assert_eq!(r.probes.len(), 30);
        // The controlplane host reaches etcd and every kubelet; each worker the API server.
        assert_eq!(r.probes[0].pairs.len(), 1 + 30 + 1);
        assert!(r.probes[1..].iter().all(|p| p.pairs == ["10.0.0.1:6443"]));
    }

    #[test]
    fn the_process_holding_a_port_is_named_from_ss_or_netstat() {
        let ss = "LISTEN 0      16           0.0.0.0:10250      0.0.0.0:*    users:((\"python3\",pid=4242,fd=3))\n\
                  LISTEN 0      4096         127.0.0.1:10248    0.0.0.0:*    users:((\"kubelet\",pid=7,fd=9))\n\
                  LISTEN 0      4096         [::]:10250         [::]:*       users:((\"python3\",pid=4242,fd=4),(\"sh\",pid=5,fd=4))\n";
        assert_eq!(
            listening_processes(ss, WORKER_PORTS),
            ["python3 (pid 4242)", "sh (pid 5)"]
        );
        let netstat = "Active Internet connections (only servers)\n\
                       Proto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name\n\
                       tcp        0      0 0.0.0.0:2379            0.0.0.0:*               LISTEN      99/nc\n\
                       tcp        0      0 0.0.0.0:22              0.0.0.0:*               LISTEN      1/sshd\n";
        assert_eq!(
            listening_processes(netstat, ETCD_PORTS),
            ["nc (pid 99) on port 2379"]
        );
        // Not root: ss shows the socket without its process.
        let hidden = "LISTEN 0 16 0.0.0.0:10250 0.0.0.0:*\n";
        assert!(listening_processes(hidden, WORKER_PORTS).is_empty());
    }

    #[test]
    fn only_confirmed_pairs_count_as_reachable() {
        let logs = "reachable 10.0.0.1:6443\n10.0.0.2:10250\nsh: nc: not found\n";
        let ok: Vec<&str> = reachable(logs).collect();
        assert_eq!(ok, ["10.0.0.1:6443"]);
        let spec = checker_spec("tools", &["10.0.0.1:6443".into(), "10.0.0.2:10250".into()]);
        assert_eq!(spec.env, ["TARGETS=10.0.0.1:6443 10.0.0.2:10250"]);
        assert_eq!(spec.network_mode.as_deref(), Some("host"));
    }

    #[tokio::test]
    async fn bounded_runs_every_item_within_the_limit_in_order() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let items: Vec<u32> = (0..20).collect();
        let out = bounded(&items, 4, |i| {
            let (running, peak) = (&running, &peak);
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5 * u64::from(20 - i))).await;
                running.fetch_sub(1, Ordering::SeqCst);
                i * 2
            }
        })
        .await;
        assert_eq!(out, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 4);
    }
}
