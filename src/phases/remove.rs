//! `rkers remove`: RKE1's full teardown (§24.1). Every host of the config loses the RKE
//! containers of its roles and the contents of exactly the directories RKE1 cleans; then the
//! local state file and admin kubeconfig go.
//!
//! Differences from RKE1, on purpose:
//! - a host that cannot be reached is named in the error and the command fails, while every
//!   other host is still cleaned (RKE1 skipped such hosts with a warning and reported success);
//! - when any host was not reached or any host step failed, the state file, its backups and
//!   the kubeconfig are all kept, so the cluster's certificates stay available for a retried
//!   `remove` or a later `up` that adopts the leftover host (RKE1 deleted them whatever
//!   happened);
//! - an `old-<name>` container a failed replacement left (RKE1's rename before a recreate) goes
//!   with `<name>`;
//! - only directories that exist are mounted into the cleaner, so cleaning never creates empty
//!   directories on a host (Docker creates a missing bind source).

use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::Action;
use crate::hosts::{Host, HostPool, SshOptions};
use crate::output::Reporter;
use crate::phases::changeset::{self, Changeset, Pace};
use crate::phases::executor::Executor;
use crate::phases::{Runner, reconcile};
use crate::plan;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct RemoveOptions {
    pub dry_run: bool,
    /// Keep the state file's backups (they hold every private key of the removed cluster).
    pub keep_backups: bool,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("{0}")]
    Cluster(#[from] crate::cluster::ClusterError),
    /// Some hosts could not be reached or cleaned; the others were cleaned.
    #[error(
        "the cluster was not removed from {}; the state file, its backups and the kubeconfig \
         were kept:\n{}",
        .0.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>().join(", "),
        .0.iter().map(|(h, m)| format!("  - {h}: {m}")).collect::<Vec<_>>().join("\n")
    )]
    Hosts(Vec<(String, String)>),
    /// Hosts that answered the first attempt but not the pool's.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] crate::hosts::HostProblems),
    #[error("{0}")]
    Host(#[from] crate::hosts::HostError),
    #[error("list directories to clean: {0}")]
    ListDirectories(#[source] crate::hosts::HostError),
}

impl crate::error::HostContext for RemoveError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RemoveError::Hosts(failures) => failures.iter().map(|(h, _)| h.as_str()).collect(),
            RemoveError::Unreachable(e) => crate::error::HostContext::hosts(e),
            RemoveError::Host(e) | RemoveError::ListDirectories(e) => vec![e.host()],
            RemoveError::Cluster(_) => Vec::new(),
        }
    }
}

/// The roles of one host, from the config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    pub etcd: bool,
    pub controlplane: bool,
    pub worker: bool,
}

impl Roles {
    pub fn of(roles: &[String]) -> Roles {
        let has = |r: &str| roles.iter().any(|x| x == r);
        Roles {
            etcd: has("etcd"),
            controlplane: has("controlplane"),
            worker: has("worker"),
        }
    }
}

/// The containers RKE1 removes from a host with these roles, in its order: worker plane, then
/// control plane, then etcd plane (the etcd plane only without external etcd).
pub fn containers_to_remove(roles: Roles, external_etcd: bool) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let mut add = |list: &[&'static str]| {
        for n in list {
            if !names.contains(n) {
                names.push(n);
            }
        }
    };
    if roles.worker {
        add(&[
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::NGINX_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    if roles.controlplane {
        add(&[
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    if roles.etcd && !external_etcd {
        add(&[
            plan::ETCD,
            plan::ETCD_ROLLING_SNAPSHOTS,
            plan::KUBELET,
            plan::KUBE_PROXY,
            plan::NGINX_PROXY,
            plan::SERVICE_SIDEKICK,
        ]);
    }
    names
}

/// The directories whose contents RKE1's `kube-cleaner` deletes on every host, whatever its
/// roles (`CleanUpAll`, §24.1): nothing else is touched.
pub fn directories_to_clean(prefix: &str, external_etcd: bool) -> Vec<String> {
    let p = |path: &str| plan::join_path(&[prefix, path]);
    let mut dirs = vec![
        p("/etc/kubernetes"),
        "/etc/cni".to_string(),
        "/opt/cni".to_string(),
        "/var/run/calico".to_string(),
        p("/etc/kubernetes/.tmp"),
        p("/var/lib/cni"),
    ];
    if !external_etcd {
        dirs.push(p("/var/lib/etcd"));
    }
    dirs
}

/// Where the rke-tools entrypoints keep log links; RKE1's `rke-log-cleaner` drops the dangling
/// ones after a cleanup.
const RKE_LOG_DIR: &str = "/var/lib/rancher/rke/log";
pub(crate) const LOG_CLEANER: &str = "rke-log-cleaner";

/// One host's share of the teardown.
struct HostWork {
    address: String,
    roles: Roles,
}

impl crate::phases::HostName for HostWork {
    fn host_name(&self) -> &str {
        &self.address
    }
}

pub async fn remove(
    cluster: &Cluster,
    opts: &RemoveOptions,
    reporter: &Reporter,
) -> Result<(), RemoveError> {
    let config = &cluster.config;
    let external_etcd = !config.services.etcd.external_urls.is_empty();
    let runner = Runner::new(reporter.clone(), opts.ssh.concurrency);

    let phase = reporter.phase("connect");
    let targets = cluster.ssh_targets(opts.agent_override);
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut usable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &opts.ssh).await {
        match &attempt.error {
            Some(e) => {
                let address = &attempt.target.address;
                let text = e.to_string();
                // The error names the host already; the list below names it once.
                let cause = text
                    .strip_prefix(&format!("host {address}: "))
                    .unwrap_or(&text)
                    .to_string();
                reporter.warn(format!(
                    "host {address} cannot be reached and is not cleaned: {cause}"
                ));
                failures.push((address.clone(), cause));
            }
            None => usable.push(attempt),
        }
    }
    let pool = HostPool::from_attempts(usable, opts.ssh.concurrency).await?;
    phase.done();

    let work = host_work(config, &pool);
    let context = Arc::new(CleanContext {
        image: config.system_images.alpine.clone(),
        windows_image: config.system_images.kubernetes_services_sidecar.clone(),
        registries: cluster.registry_credentials(),
        prefix: config.prefix_path.clone(),
        external_etcd,
    });
    let phase = reporter.phase("plan");
    let changes = plan_removal(
        cluster,
        &pool,
        &work,
        &context,
        &failures,
        opts.keep_backups,
    )
    .await;
    let changes = match changes {
        Ok(c) => {
            phase.done();
            c
        }
        Err(e) => {
            phase.fail(&e.to_string());
            pool.close().await;
            return Err(e);
        }
    };
    if !failures.is_empty() {
        reporter.warn(
            "the state file, its backups and the kubeconfig are kept: not every host can be \
             cleaned"
                .to_string(),
        );
    }
    if opts.keep_backups {
        warn_kept_backups(cluster, reporter);
    }
    if opts.dry_run {
        reporter.planned(&changes.planned());
        pool.close().await;
        return Ok(());
    }

    let exec = Executor::new(reporter, &context.image, context.registries.clone())
        .with_hosts(pool.hosts());
    for stage in &changes.stages {
        if stage.phase == LOCAL_STAGE && !failures.is_empty() {
            // A host that was not cleaned still needs the cluster's CA and keys: a retried
            // `remove` or an `up` reaches it with them. Every local file stays.
            reporter.warn(
                "the state file, its backups and the kubeconfig are kept: not every host was \
                 cleaned"
                    .to_string(),
            );
            continue;
        }
        let stage_failures = if stage.phase == HOST_STAGE {
            changeset::apply_stage(stage, &runner, |host: String, actions: Vec<Action>| {
                let exec = &exec;
                async move { apply_in_waves(exec, &host, &actions).await }
            })
            .await
        } else {
            exec.apply_stage(stage, &runner).await
        };
        if stage.phase == LOCAL_STAGE {
            // As before: a local file that cannot be deleted is only a warning.
            for (_, e) in stage_failures {
                reporter.warn(e);
            }
        } else {
            failures.extend(stage_failures);
        }
    }
    pool.close().await;

    if !failures.is_empty() {
        return Err(RemoveError::Hosts(failures));
    }
    reporter.info("Cluster removed successfully");
    Ok(())
}

const HOST_STAGE: &str = "remove";
const LOCAL_STAGE: &str = "remove local files";

/// The changeset of `remove`: per host the RKE containers it has, the directories that exist
/// and the dangling log links, all hosts in parallel; then, only when every host can be
/// cleaned, the local files. Reads the hosts only (container and image inspections, one
/// `test -d` over SSH).
async fn plan_removal(
    cluster: &Cluster,
    pool: &HostPool,
    work: &[HostWork],
    context: &CleanContext,
    unreachable: &[(String, String)],
    keep_backups: bool,
) -> Result<Changeset, RemoveError> {
    let mut changes = Changeset::default();
    let per_host = futures::future::try_join_all(work.iter().map(|w| {
        let host = pool.get(&w.address).expect("connected host");
        host_teardown(host, w.roles, context)
    }))
    .await?;
    for (w, actions) in work.iter().zip(per_host) {
        for a in actions {
            changes.push(HOST_STAGE, Pace::Parallel, &w.address, a);
        }
    }
    if unreachable.is_empty() {
        for path in local_files_to_delete(cluster, keep_backups) {
            if path.exists() {
                changes.push(
                    LOCAL_STAGE,
                    Pace::OneAtATime,
                    changeset::LOCAL,
                    Action::DeleteLocalFile {
                        path: path.display().to_string(),
                    },
                );
            }
        }
    }
    Ok(changes)
}

/// One host's teardown: the RKE containers it has, the directories that exist, the dangling
/// log links, in RKE1's order; the cleaner image is pulled only when the host lacks it.
async fn host_teardown(
    host: &Host,
    roles: Roles,
    context: &CleanContext,
) -> Result<Vec<Action>, RemoveError> {
    let mut actions = Vec::new();
    let remove = |name: String| Action::RemoveContainer {
        name,
        reason: "remove the cluster".into(),
    };
    // Every name is looked at once, all at once; the order stays RKE1's.
    let present = |names: Vec<String>| async move {
        let seen =
            futures::future::try_join_all(names.iter().map(|n| host.docker().inspect_container(n)))
                .await?;
        Ok::<_, RemoveError>(
            names
                .into_iter()
                .zip(seen)
                .filter_map(|(n, c)| c.map(|_| n))
                .collect::<Vec<_>>(),
        )
    };
    if host.facts().is_windows() {
        let cleanup = reconcile::HostCleanup::windows(&context.windows_image);
        let names = cleanup
            .containers(&[])
            .iter()
            .map(|c| c.to_string())
            .collect();
        actions.extend(present(names).await?.into_iter().map(remove));
        actions.push(cleanup.action());
        return Ok(actions);
    }
    let names = containers_to_remove(roles, context.external_etcd)
        .into_iter()
        .flat_map(|n| [n.to_string(), format!("{}{n}", plan::OLD_PREFIX)])
        .collect();
    let prefix = plan::host_prefix_path(&context.prefix, &host.facts().operating_system);
    let mut wanted = directories_to_clean(&prefix, context.external_etcd);
    wanted.push(RKE_LOG_DIR.to_string());
    let (names, mut dirs, has_image) =
        futures::future::try_join3(present(names), existing_directories(host, &wanted), async {
            host.docker()
                .image_exists(&context.image)
                .await
                .map_err(RemoveError::from)
        })
        .await?;
    actions.extend(names.into_iter().map(remove));
    let log_dir = dirs.iter().any(|d| d == RKE_LOG_DIR);
    dirs.retain(|d| d != RKE_LOG_DIR);
    if (!dirs.is_empty() || log_dir) && !has_image {
        actions.push(Action::PullImage {
            image: context.image.clone(),
        });
    }
    if !dirs.is_empty() {
        actions.push(Action::CleanDirectories { paths: dirs });
    }
    if log_dir {
        actions.push(Action::CleanLogLinks {
            dir: RKE_LOG_DIR.to_string(),
            image: context.image.clone(),
        });
    }
    Ok(actions)
}

/// Which actions of a host's teardown run together: its containers go (and the cleaner image
/// comes) at once, then its directories and log links are cleaned at once (different
/// directories, helper containers of different names); anything else runs alone.
fn wave_of(action: &Action) -> Option<u8> {
    match action {
        Action::RemoveContainer { .. } | Action::PullImage { .. } => Some(0),
        Action::CleanDirectories { .. } | Action::CleanLogLinks { .. } => Some(1),
        _ => None,
    }
}

/// Consecutive actions of the same wave, in the planned order.
fn waves(actions: &[Action]) -> Vec<&[Action]> {
    actions
        .chunk_by(|a, b| wave_of(a).is_some() && wave_of(a) == wave_of(b))
        .collect()
}

/// Applies one host's teardown wave by wave ([`waves`]), each wave's actions at once. Every
/// action is reported in the planned order, as the dry run lists it; a wave with a failure
/// stops the host after the whole wave is reported.
async fn apply_in_waves(exec: &Executor<'_>, host: &str, actions: &[Action]) -> Result<(), String> {
    let on = exec.on(host);
    for wave in waves(actions) {
        let results = futures::future::join_all(wave.iter().map(|a| on.run(a))).await;
        let mut first_error = None;
        for (action, result) in wave.iter().zip(results) {
            if let Err(e) = on.report(action, result) {
                first_error.get_or_insert(e.to_string());
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    Ok(())
}

/// The hosts to clean, in config order, each once with the union of its roles.
fn host_work(config: &RkeConfig, pool: &HostPool) -> Vec<HostWork> {
    let mut by_address: BTreeMap<&str, Roles> = BTreeMap::new();
    let mut order = Vec::new();
    for n in &config.nodes {
        let r = Roles::of(&n.role);
        let entry = by_address.entry(n.address.as_str()).or_insert_with(|| {
            order.push(n.address.clone());
            Roles::default()
        });
        entry.etcd |= r.etcd;
        entry.controlplane |= r.controlplane;
        entry.worker |= r.worker;
    }
    order
        .into_iter()
        .filter(|a| pool.get(a).is_some())
        .map(|a| HostWork {
            roles: by_address[a.as_str()],
            address: a,
        })
        .collect()
}

pub struct CleanContext {
    image: String,
    /// Runs Windows hosts' privileged steps (the sidekick image, as RKE1 uses on Windows).
    windows_image: String,
    registries: Vec<crate::hosts::target::RegistryCredential>,
    prefix: String,
    external_etcd: bool,
}

/// The subset of `dirs` that exists on the host, asked over SSH so nothing is created.
async fn existing_directories(host: &Host, dirs: &[String]) -> Result<Vec<String>, RemoveError> {
    let script = format!(
        "for d in {}; do [ -d \"$d\" ] && echo \"$d\"; done; true",
        dirs.iter()
            .map(|d| shell_words::quote(d).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = host
        .link()
        .exec(&script)
        .await
        .map_err(RemoveError::ListDirectories)?;
    let present: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    Ok(dirs
        .iter()
        .filter(|d| present.iter().any(|p| p == *d))
        .cloned()
        .collect())
}

/// The local files `remove` deletes: the kubeconfig, the state and, unless kept, the state's
/// backups, each of which holds every private key of the removed cluster.
pub(crate) fn local_files_to_delete(
    cluster: &Cluster,
    keep_backups: bool,
) -> Vec<std::path::PathBuf> {
    let mut paths = vec![
        cluster.files.kubeconfig_path.clone(),
        cluster.files.state_path.clone(),
    ];
    if !keep_backups {
        paths.extend(crate::state::list_backups(&cluster.files.state_path).unwrap_or_default());
    }
    paths
}

/// The backups `--keep-backups` keeps: they hold every private key of the removed cluster.
fn warn_kept_backups(cluster: &Cluster, reporter: &Reporter) {
    let kept = crate::state::list_backups(&cluster.files.state_path).unwrap_or_default();
    if !kept.is_empty() {
        let list: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
        reporter.warn(format!(
            "keeping {} backup(s) of the state, which hold every private key of the removed \
             cluster: {}",
            kept.len(),
            list.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests;
