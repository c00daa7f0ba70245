//! Step 2, connect: every host at once; any host that cannot be reached stops the run before
//! anything changes, with every host's problem listed (RKE1 silently dropped them, §33.18).
//! Each host's Docker Engine API range against the cluster's runtime and, when hosts or roles were added, the ports between roles are checked
//! here; hosts that left the cluster are connected to as well, to clean them later.

use super::state::Loaded;
use super::{UpError, UpOptions};
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::hosts::{self, HostPool};
use crate::output::Reporter;
use crate::phases::reconcile;
use std::collections::BTreeSet;

/// The connections `up` works through.
pub(super) struct Connected {
    pub(super) pool: HostPool,
    /// Hosts and etcd members added or removed since the previous run.
    pub(super) recon: reconcile::Changes,
    /// The hosts that left the cluster and could be reached.
    pub(super) removed_pool: Option<HostPool>,
    /// Every port between roles was checked here (hosts or roles were added).
    pub(super) ports_checked: bool,
}

pub(super) async fn connect(
    cluster: &Cluster,
    opts: &UpOptions,
    loaded: &Loaded,
    reporter: &Reporter,
) -> Result<Connected, UpError> {
    let old_current = loaded.old_current.as_ref();
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
    if opts.disable_port_check || opts.dry_run {
        // The checks start listener containers; a dry run changes nothing.
    } else if !hosts_added {
        tracing::debug!("no host or role added: port checks skipped, as RKE1 does (§10)");
    } else {
        port_checks(cluster, &pool, reporter).await?;
        ports_checked = true;
    }
    let removed_pool = connect_removed(old_current, &recon, opts, reporter).await;
    phase.done();
    Ok(Connected {
        pool,
        recon,
        removed_pool,
        ports_checked,
    })
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
    let mut problems = Vec::new();
    for host in pool.hosts() {
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
/// hosts themselves; every host's unreachable ports are listed together.
pub(super) async fn port_checks(
    cluster: &Cluster,
    pool: &HostPool,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let mut plan = cluster.port_check_plan();
    // The listeners and probes are Linux containers: Windows workers are left out (and said so).
    let windows: Vec<String> = pool
        .hosts()
        .filter(|h| h.facts().is_windows())
        .map(|h| h.name().to_string())
        .collect();
    if !windows.is_empty() {
        plan.without_hosts(&windows);
        reporter.warn(format!(
            "port checks skip the Windows hosts {}: their probes are Linux containers",
            windows.join(", ")
        ));
    }
    let step = reporter.host_action("connect", "all hosts", "port checks between roles");
    let failures = crate::hosts::ports::check_cluster_ports(pool, &plan).await?;
    if failures.is_empty() {
        step.ok();
        return Ok(());
    }
    let text = failures
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    step.fail(&text);
    Err(UpError::PortChecks(failures))
}
