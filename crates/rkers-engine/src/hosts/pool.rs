//! All hosts of a run: one link per host (an SSH session by default, or what the run's
//! [`LinkOpener`](super::link::LinkOpener) opens) and one Docker client over it, opened in
//! parallel under a concurrency limit, plus one shared session per bastion.
//!
//! A host that cannot be reached is never dropped silently (RKE1 did, spec §32 pain point 1):
//! [`HostPool::connect`] fails with every host's problem listed, before anything changes.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use indexmap::IndexMap;
use tokio::sync::{Mutex, OnceCell};

use super::docker::DockerClient;
use super::error::HostError;
use super::facts::HostFacts;
use super::keys::{self, KeyLoadOptions};
use super::link::HostLink;
use super::ssh::{ConnectParams, SshSession};
use super::ssh_config::{self, SshConfigHost};
use super::target::{BastionTarget, SshAuth, SshOptions, SshTarget};
use crate::plan::Platform;

/// One reachable host: its link, Docker client and facts.
#[derive(Debug)]
pub struct Host {
    pub target: SshTarget,
    link: Arc<dyn HostLink>,
    ssh: Option<Arc<SshSession>>,
    docker: DockerClient,
    facts: HostFacts,
    /// Chosen once from the facts when the host connects: what steps ask instead of the OS.
    platform: Platform,
}

impl Host {
    pub fn name(&self) -> &str {
        &self.target.name
    }
    /// Commands and connections from the host, whatever the transport.
    pub fn link(&self) -> &Arc<dyn HostLink> {
        &self.link
    }
    /// The SSH session, when the host is reached over SSH.
    pub fn ssh(&self) -> Option<&Arc<SshSession>> {
        self.ssh.as_ref()
    }
    pub fn docker(&self) -> &DockerClient {
        &self.docker
    }
    pub fn facts(&self) -> &HostFacts {
        &self.facts
    }
    /// How the host is driven (Linux or a Windows worker), from its facts.
    pub fn platform(&self) -> Platform {
        self.platform
    }
}

/// What happened when connecting to one host; the parts that worked are kept so a report
/// can show them next to the part that failed.
#[derive(Debug)]
pub struct HostAttempt {
    pub target: SshTarget,
    /// The link, once open (the SSH session as a link, or a plugged one).
    pub link: Option<Arc<dyn HostLink>>,
    /// The SSH session, when the link is SSH.
    pub ssh: Option<Arc<SshSession>>,
    pub docker: Option<DockerClient>,
    pub facts: Option<HostFacts>,
    pub error: Option<HostError>,
}

/// Every host's problem, for a run that must stop before changing anything.
#[derive(Debug, Clone)]
pub struct HostProblems(pub Vec<HostError>);

impl std::fmt::Display for HostProblems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The first line is what a log or a one-line report keeps: it names the hosts, and a
        // single host's whole error.
        if let [only] = self.0.as_slice() {
            return writeln!(f, "{only}; nothing was changed");
        }
        let hosts: Vec<&str> = self.0.iter().map(|e| e.host()).collect();
        writeln!(
            f,
            "{} hosts cannot be used ({}); nothing was changed:",
            self.0.len(),
            hosts.join(", ")
        )?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for HostProblems {
    /// A single host's problem is the cause; several have none in particular.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.0.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }
}

impl HostProblems {
    /// One line naming the hosts, for a phase's failure line: the full list is the command's
    /// error, printed once.
    pub fn summary(&self) -> String {
        let hosts: Vec<&str> = self.0.iter().map(|e| e.host()).collect();
        format!(
            "{} host(s) cannot be used: {}",
            self.0.len(),
            hosts.join(", ")
        )
    }
}

type BastionCell = Arc<OnceCell<Result<Arc<SshSession>, HostError>>>;

/// Opens sessions to bastions once and shares them between nodes.
#[derive(Default)]
struct Bastions {
    cells: Mutex<HashMap<String, BastionCell>>,
}

impl Bastions {
    async fn get(
        &self,
        bastion: &BastionTarget,
        opts: &SshOptions,
    ) -> Result<Arc<SshSession>, HostError> {
        let port = bastion.port.unwrap_or(22);
        let key = format!("{}@{}:{port}", bastion.user, bastion.address);
        let cell = self.cells.lock().await.entry(key).or_default().clone();
        cell.get_or_init(|| async {
            let name = format!("bastion {}", bastion.address);
            let target = SshTarget {
                name,
                address: bastion.address.clone(),
                port: bastion.port,
                user: bastion.user.clone(),
                auth: bastion.auth.clone(),
                docker_socket: String::new(),
                bastion: None,
            };
            let (params, _) = prepare(&target, opts).await?;
            SshSession::connect(&params, None).await.map(Arc::new)
        })
        .await
        .clone()
    }
}

/// Applies `~/.ssh/config`, loads keys and builds the connection parameters of a target.
/// Returns the bastion to go through (explicit, or `ProxyJump` from the ssh config).
async fn prepare(
    target: &SshTarget,
    opts: &SshOptions,
) -> Result<(ConnectParams, Option<BastionTarget>), HostError> {
    let alias = target.address.clone();
    let cfg_path = opts.ssh_config_path.clone();
    let cfg: SshConfigHost = if opts.ssh_config_enabled {
        tokio::task::spawn_blocking(move || ssh_config::resolve(&alias, cfg_path.as_deref()))
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    } else {
        SshConfigHost::default()
    };
    let address = cfg
        .hostname
        .clone()
        .unwrap_or_else(|| target.address.clone());
    let port = target.port.or(cfg.port).unwrap_or(22);
    let user = if !target.user.is_empty() {
        target.user.clone()
    } else {
        cfg.user
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "root".into())
    };
    let host = target.name.clone();
    let auth = target.auth.clone();
    let identity_files = cfg.identity_files.clone();
    let load_opts = KeyLoadOptions {
        prompt: opts.passphrase_prompt,
        passphrase: opts.key_passphrase.clone(),
        cache: opts.key_cache.clone(),
    };
    let methods = tokio::task::spawn_blocking(move || {
        keys::auth_methods(&host, &auth, &identity_files, &load_opts)
    })
    .await
    .map_err(|e| HostError::NoAuthMethod {
        host: target.name.clone(),
        detail: format!("key loading failed: {e}"),
    })??;
    let bastion = match (&target.bastion, &cfg.proxy_jump) {
        (Some(b), _) => Some(b.clone()),
        (None, Some(jump)) => {
            let hops = ssh_config::parse_proxy_jump(jump);
            if hops.len() != 1 {
                return Err(HostError::NoAuthMethod {
                    host: target.name.clone(),
                    detail: format!(
                        "ProxyJump {jump:?} from ssh config has {} hops; only one jump host is supported (use bastion_host)",
                        hops.len()
                    ),
                });
            }
            let hop = &hops[0];
            Some(BastionTarget {
                address: hop.host.clone(),
                port: hop.port,
                user: hop.user.clone().unwrap_or_default(),
                auth: SshAuth {
                    agent_auth: target.auth.agent_auth,
                    ..Default::default()
                },
            })
        }
        (None, None) => None,
    };
    Ok((
        ConnectParams {
            host: target.name.clone(),
            address,
            port,
            user,
            methods,
            known_hosts_path: known_hosts_path(opts),
            policy: opts.host_key_policy,
            record_new_keys: opts.record_new_host_keys,
            notices: opts.notices.clone(),
            timeout: opts.connect_timeout,
            retries: opts.retries,
        },
        bastion,
    ))
}

fn known_hosts_path(opts: &SshOptions) -> PathBuf {
    opts.known_hosts_path.clone().unwrap_or_else(|| {
        dirs::home_dir()
            .unwrap_or_else(|| PathBuf::from("/"))
            .join(".ssh/known_hosts")
    })
}

impl HostAttempt {
    fn new(target: &SshTarget) -> HostAttempt {
        HostAttempt {
            target: target.clone(),
            link: None,
            ssh: None,
            docker: None,
            facts: None,
            error: None,
        }
    }
}

async fn attempt(target: SshTarget, opts: &SshOptions, bastions: &Bastions) -> HostAttempt {
    if let Some(opening) = opts.links.0.as_ref().and_then(|l| l.open_link(&target)) {
        return attempt_link(&target, opening.await, opts).await;
    }
    let mut out = HostAttempt::new(&target);
    let session = async {
        let (params, bastion) = prepare(&target, opts).await?;
        let via = match &bastion {
            Some(b) => Some(
                bastions
                    .get(b, opts)
                    .await
                    .map_err(|e| HostError::Bastion {
                        host: target.name.clone(),
                        bastion: super::target::host_port(&b.address, b.port.unwrap_or(22)),
                        source: Box::new(e),
                    })?,
            ),
            None => None,
        };
        SshSession::connect(&params, via).await.map(Arc::new)
    }
    .await;
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.ssh = Some(session.clone());
    out.link = Some(session.clone());
    let docker = DockerClient::connect(session, &target.docker_socket, opts.docker_timeout).await;
    with_docker(out, docker).await
}

/// A host reached through a plugged link instead of SSH.
async fn attempt_link(
    target: &SshTarget,
    link: Result<Arc<dyn HostLink>, HostError>,
    opts: &SshOptions,
) -> HostAttempt {
    let mut out = HostAttempt::new(target);
    let link = match link {
        Ok(l) => l,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.link = Some(link.clone());
    let docker = DockerClient::connect_link(link, &target.docker_socket, opts.docker_timeout).await;
    with_docker(out, docker).await
}

async fn with_docker(mut out: HostAttempt, docker: Result<DockerClient, HostError>) -> HostAttempt {
    match docker {
        Ok(d) => {
            match HostFacts::gather(&d).await {
                Ok(f) => out.facts = Some(f),
                Err(e) => out.error = Some(e),
            }
            out.docker = Some(d);
        }
        Err(e) => out.error = Some(e),
    }
    out
}

/// The hosts of a run, keyed by [`SshTarget::name`] in the order given.
pub struct HostPool {
    hosts: IndexMap<String, Arc<Host>>,
    concurrency: usize,
}

impl std::fmt::Debug for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPool")
            .field("hosts", &self.hosts.keys().collect::<Vec<_>>())
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

impl HostPool {
    /// Connects to every target (SSH, Docker, facts), `opts.concurrency` at a time, and
    /// reports each host's outcome. Never fails as a whole.
    pub async fn connect_each(targets: &[SshTarget], opts: &SshOptions) -> Vec<HostAttempt> {
        let bastions = Bastions::default();
        futures::stream::iter(targets.iter().cloned())
            .map(|t| attempt(t, opts, &bastions))
            .buffered(opts.concurrency.max(1))
            .collect()
            .await
    }

    /// Connects to every target; fails listing every host's problem when any host is not
    /// usable (sessions already opened are closed).
    pub async fn connect(
        targets: &[SshTarget],
        opts: &SshOptions,
    ) -> Result<HostPool, HostProblems> {
        let attempts = Self::connect_each(targets, opts).await;
        Self::from_attempts(attempts, opts.concurrency).await
    }

    /// Builds a pool from attempts, or lists the problems.
    pub async fn from_attempts(
        attempts: Vec<HostAttempt>,
        concurrency: usize,
    ) -> Result<HostPool, HostProblems> {
        let problems: Vec<HostError> = attempts.iter().filter_map(|a| a.error.clone()).collect();
        if !problems.is_empty() {
            for a in &attempts {
                if let Some(l) = &a.link {
                    l.close().await;
                }
            }
            return Err(HostProblems(problems));
        }
        let mut hosts = IndexMap::new();
        for a in attempts {
            let (Some(link), Some(docker), Some(facts)) = (a.link, a.docker, a.facts) else {
                continue;
            };
            hosts.insert(
                a.target.name.clone(),
                Arc::new(Host {
                    target: a.target,
                    link,
                    ssh: a.ssh,
                    docker,
                    platform: Platform::of_os_type(&facts.os_type),
                    facts,
                }),
            );
        }
        Ok(HostPool {
            hosts,
            concurrency: concurrency.max(1),
        })
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Host>> {
        self.hosts.get(name)
    }

    pub fn hosts(&self) -> impl Iterator<Item = &Arc<Host>> {
        self.hosts.values()
    }

    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// How many hosts are worked on at once (`--concurrency`).
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Runs `f` on the given hosts, at most `concurrency` at once, results in input order.
    pub async fn for_each<'a, T, F, Fut>(
        &'a self,
        names: &[String],
        f: F,
    ) -> Vec<(String, Result<T, HostError>)>
    where
        F: Fn(Arc<Host>) -> Fut,
        Fut: Future<Output = Result<T, HostError>> + 'a,
    {
        futures::stream::iter(names.iter().cloned())
            .map(|n| {
                let host = self.hosts.get(&n).cloned();
                let fut = host.map(&f);
                async move {
                    let r = match fut {
                        Some(fut) => fut.await,
                        None => Err(HostError::Ssh {
                            host: n.clone(),
                            detail: "not connected (unknown host name)".into(),
                        }),
                    };
                    (n, r)
                }
            })
            .buffered(self.concurrency)
            .collect()
            .await
    }

    /// Ends every host's link.
    pub async fn close(&self) {
        for h in self.hosts.values() {
            h.link.close().await;
        }
    }
}

impl crate::error::HostContext for HostProblems {
    fn hosts(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.host()).collect()
    }
}
