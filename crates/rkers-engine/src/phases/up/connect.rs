//! Step 2, connect: every host at once; any host that cannot be reached stops the run before
//! anything changes, with every host's problem listed (RKE1 silently dropped them, §33.18).
//! Each host's Docker Engine API range against the cluster's runtime and, when hosts or roles were added, the ports between roles are checked
//! here; hosts that left the cluster are connected to as well, to clean them later.

use super::{UpError, UpOptions};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::hosts::{self, HostPool};
use crate::output::Reporter;
use crate::phases::reconcile;
use std::collections::{BTreeMap, BTreeSet};

/// The connections `up` works through.
pub(super) struct Connected {
    pub(super) pool: HostPool,
    /// Hosts and etcd members added or removed since the previous run.
    pub(super) recon: reconcile::Changes,
    /// The hosts that left the cluster and could be reached.
    pub(super) removed_pool: Option<HostPool>,
    /// Every port between roles was checked here (hosts or roles were added).
    pub(super) ports_checked: bool,
    /// Per host, the images pulled here while the port checks ran, which the host lacked when
    /// the run found it.
    pub(super) prefetched: BTreeMap<String, BTreeSet<String>>,
}

pub(super) async fn connect(
    cluster: &Cluster,
    opts: &UpOptions,
    old_current: Option<&RkeConfig>,
    encryption_config: &str,
    reporter: &Reporter,
) -> Result<Connected, UpError> {
    let phase = reporter.phase("connect");
    let targets = cluster.ssh_targets(opts.agent_override);
    let pool = match HostPool::connect(&targets, &opts.ssh).await {
        Ok(pool) => pool,
        Err(problems) => {
            phase.fail(&problems.summary());
            return Err(problems.into());
        }
    };
    check_docker_versions(cluster, &pool, opts, reporter)?;
    let recon = reconcile::changes(old_current, &cluster.config)?;
    let hosts_added = match old_current {
        None => true,
        Some(old) => cluster.config.nodes.iter().any(|n| {
            !old.nodes
                .iter()
                .any(|o| o.address == n.address && n.role.iter().all(|r| o.role.contains(r)))
        }),
    };
    let mut ports_checked = false;
    let mut prefetched = BTreeMap::new();
    if opts.disable_port_check || opts.dry_run {
        // The checks start listener containers; a dry run changes nothing.
    } else if !hosts_added {
        tracing::debug!("no host or role added: port checks skipped, as RKE1 does (§10)");
    } else {
        let images = images_to_prefetch(cluster, opts, encryption_config, old_current, &pool);
        prefetched = port_checks(cluster, &pool, &images, reporter).await?;
        ports_checked = true;
    }
    let removed_pool = connect_removed(old_current, &recon, opts, reporter).await;
    phase.done();
    Ok(Connected {
        pool,
        recon,
        removed_pool,
        ports_checked,
        prefetched,
    })
}

/// Per Linux host, every image its planned containers and the file helper use. Empty when the
/// plan cannot be made: the plan step then reports why.
fn images_to_prefetch(
    cluster: &Cluster,
    opts: &UpOptions,
    encryption_config: &str,
    old_current: Option<&RkeConfig>,
    pool: &HostPool,
) -> BTreeMap<String, BTreeSet<String>> {
    let facts = crate::phases::host_facts(pool);
    let etcd = crate::plan::EtcdContext::fresh();
    let Ok(plan) =
        super::plan::build_plan(cluster, opts, encryption_config, old_current, &facts, &etcd)
    else {
        return BTreeMap::new();
    };
    let helper = &cluster.config.system_images.cert_downloader;
    plan.hosts
        .iter()
        .filter(|h| plan.platform(&h.address).runs_linux_helpers())
        .map(|h| {
            let mut images: BTreeSet<String> =
                h.containers.values().map(|c| c.image.clone()).collect();
            images.insert(helper.clone());
            (h.address.clone(), images)
        })
        .collect()
}

/// Pulls `images` on every host while the port checks run, each host at most `--concurrency`
/// at a time and each registry at most its cap of pulls (hosts::pulls); returns the images each
/// host lacked. A failed pull is left to the images step, which tries again and names it.
async fn pull_during_port_checks(
    pool: &HostPool,
    images: &BTreeMap<String, BTreeSet<String>>,
    registries: &[hosts::target::RegistryCredential],
    reporter: &Reporter,
) -> BTreeMap<String, BTreeSet<String>> {
    let names: Vec<String> = images.keys().cloned().collect();
    let pulled = pool
        .for_each(&names, |h| async move {
            let step = reporter.host_action("connect", h.name(), "pull images during port checks");
            let (docker, name) = (&h.docker(), h.name());
            let pulls = images
                .get(name)
                .into_iter()
                .flatten()
                .map(|image| async move {
                    match docker.ensure_image(image, registries, &mut |_| {}).await {
                        Ok(true) => Some(image.clone()),
                        Ok(false) => None,
                        Err(e) => {
                            tracing::debug!(
                                host = name,
                                image,
                                "pull left to the images step: {e}"
                            );
                            None
                        }
                    }
                });
            let lacked: BTreeSet<String> = futures::future::join_all(pulls)
                .await
                .into_iter()
                .flatten()
                .collect();
            step.ok();
            Ok::<_, hosts::HostError>(lacked)
        })
        .await;
    pulled
        .into_iter()
        .filter_map(|(host, r)| r.ok().map(|lacked| (host, lacked)))
        .filter(|(_, lacked)| !lacked.is_empty())
        .collect()
}

/// Refuses the hosts whose Docker the cluster's runtime cannot drive (their Engine API ranges
/// do not meet), each with the reason and the remedy; `ignore_docker_version` (or the flag)
/// turns refusals into warnings, as it lets RKE1 go ahead on any Docker.
pub(super) fn check_docker_versions(
    cluster: &Cluster,
    pool: &HostPool,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let ignore =
        opts.ignore_docker_version_flag || cluster.config.ignore_docker_version.unwrap_or(false);
    let runtime = cluster.runtime_client();
    let refuses_cgroup_v1 = crate::plan::kubelet_refuses_cgroup_v1(&cluster.config);
    let mut problems = Vec::new();
    for host in pool.hosts() {
        if let Some(e) = hosts::cgroup_v1_check(
            host.name(),
            host.facts(),
            refuses_cgroup_v1,
            &cluster.config.kubernetes_version,
        ) {
            problems.push((host.name().to_string(), e.to_string()));
        }
        let (check, refusal) = hosts::docker_api_check(host.name(), host.facts(), &runtime, ignore);
        for warning in check.all_warnings() {
            reporter.warn(format!("host {}: {warning}", host.name()));
        }
        if let Some(e) = refusal {
            problems.push((host.name().to_string(), e.to_string()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(UpError::DockerVersions { problems })
    }
}

/// Connects to the hosts that left the cluster, to clean them; one that cannot be reached is
/// reported and its node is still deleted.
pub(super) async fn connect_removed(
    old: Option<&RkeConfig>,
    recon: &reconcile::Changes,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Option<HostPool> {
    let old = old?;
    let gone: BTreeSet<&str> = recon
        .removed_hosts
        .iter()
        .map(|h| h.address.as_str())
        .collect();
    if gone.is_empty() {
        return None;
    }
    let targets: Vec<_> = crate::cluster::targets::ssh_targets_for(old, opts.agent_override)
        .into_iter()
        .filter(|t| gone.contains(t.address.as_str()))
        .collect();
    let mut usable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &opts.ssh).await {
        match &attempt.error {
            Some(e) => reporter.warn(format!(
                "host {} left the cluster but cannot be reached to clean it ({e}); its node is deleted all the same",
                attempt.target.address
            )),
            None => usable.push(attempt),
        }
    }
    HostPool::from_attempts(usable, opts.ssh.concurrency)
        .await
        .ok()
}

/// RKE1's port checks between roles (§10), through listener and checker containers on the
/// hosts themselves; every host's unreachable ports are listed together. Every host first gets
/// the listener image, then pulls `images` while the checks run (issue 31): the images each host
/// lacked come back. A failed check stops the pulls; no container has changed then.
pub(super) async fn port_checks(
    cluster: &Cluster,
    pool: &HostPool,
    images: &BTreeMap<String, BTreeSet<String>>,
    reporter: &Reporter,
) -> Result<BTreeMap<String, BTreeSet<String>>, UpError> {
    let mut plan = cluster.port_check_plan();
    // The listeners and probes are Linux containers: Windows workers are left out (and said so).
    let windows: Vec<String> = pool
        .hosts()
        .filter(|h| !h.platform().runs_linux_helpers())
        .map(|h| h.name().to_string())
        .collect();
    if !windows.is_empty() {
        plan.without_hosts(&windows);
        reporter.warn(format!(
            "port checks skip the Windows hosts {}: their probes are Linux containers",
            windows.join(", ")
        ));
    }
    crate::hosts::ports::ensure_tools_image(pool, &plan).await?;
    let step = reporter.host_action("connect", "all hosts", "port checks between roles");
    let checks = async {
        let failures = crate::hosts::ports::check_cluster_ports(pool, &plan).await?;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(UpError::PortChecks(failures))
        }
    };
    let pulls = async {
        Ok::<_, UpError>(pull_during_port_checks(pool, images, &plan.registries, reporter).await)
    };
    // `try_join`: a failed check drops the pulls at once instead of waiting for them.
    match tokio::try_join!(checks, pulls) {
        Ok(((), lacked)) => {
            step.ok();
            Ok(lacked)
        }
        Err(e) => {
            step.fail(&e.to_string());
            Err(e)
        }
    }
}
