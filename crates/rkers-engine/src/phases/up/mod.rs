//! `rkers up`: RKE1's workflow (§9) as a sequence of steps over one SSH connection per host.
//! `up` reads as the list of steps in order; each step lives in its own file:
//!
//! 1. `state`: certificates generated or reconciled; the desired state is written before any
//!    host is touched (§9.1).
//! 2. `connect`: every host at once; any host that cannot be reached stops the run before
//!    anything changes, with every host's problem listed (RKE1 silently dropped them, §33.18).
//! 3. `plan` and `observe`: the desired containers and files of each host (pure), compared
//!    with what each host runs and holds (`host_actions`), and what the cluster holds through
//!    its API (`cluster_actions`); the result is the list of actions `--dry-run` prints
//!    (`dry_run`).
//! 4. apply: first what comes before any change (`snapshot`: the etcd snapshot a change to
//!    etcd or the control plane takes, stale `old-…` containers), then `files` and certificates, images, Windows hosts' wins (`windows`), the etcd
//!    plane (`etcd_members`, `etcd`), the control plane (`planes`, `rolling`), RBAC and
//!    the current state (`cluster`; on an existing cluster after the worker plane, so a failed
//!    worker leaves the last healthy state), the worker plane, node labels and taints and log links
//!    (`nodes`), hosts that left (`removed_hosts`), in RKE1's order, hosts in parallel where
//!    safe; last, once all went well, the state this run replaced kept for `rkers rollback`
//!    (`cluster`). `containers` brings one container to its planned state.

mod cluster;
mod cluster_actions;
mod connect;
mod containers;
mod dry_run;
mod error;
mod etcd;
mod etcd_members;
mod files;
mod free_ports;
mod host_actions;
mod host_files;
mod nodes;
mod observe;
mod plan;
mod planes;
mod removed_apis;
mod removed_hosts;
mod rolling;
mod run;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_etcd;
mod windows;

pub use error::UpError;
pub(crate) use host_files::{etc_kubernetes, host_files, kubernetes_view_map};

use crate::cluster::Cluster;
use crate::hosts::SshOptions;
use crate::output::Reporter;
use crate::phases::{PhaseError, Runner};
use run::{CONTROL_PLANE, WORKER_PLANE};
use std::path::PathBuf;
use std::sync::Arc;

pub struct UpOptions {
    pub dry_run: bool,
    pub force: bool,
    pub disable_port_check: bool,
    pub custom_certs: Option<PathBuf>,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    /// `--ignore-docker-version` given on the command line; otherwise the config's value counts.
    pub ignore_docker_version_flag: bool,
    pub ssh: SshOptions,
    /// `--yes`: adopt a cluster whose state rkers did not write without asking.
    pub yes: bool,
    /// Asks the operator to confirm the adoption summary it is shown; `None` when nobody can be
    /// asked (no terminal), and then only `yes` adopts.
    pub confirm: Option<crate::phases::adoption::ConfirmAdoption>,
    /// `--ignore-blocking-webhooks`: go on although a webhook blocks system pods.
    pub ignore_blocking_webhooks: bool,
    /// `--ignore-removed-apis`: go on with a minor change although the target minor stops
    /// serving API versions the cluster uses.
    pub ignore_removed_apis: bool,
    /// `--dind`: the plan takes RKE1's docker-in-docker flags.
    pub dind: bool,
    /// `--no-snapshot`: no etcd snapshot before a change to etcd or the control plane.
    pub no_snapshot: bool,
    /// `--node-ready-timeout`: how long an upgraded worker's node may take to be Ready again
    /// before its previous containers are put back; `None`: 180 s.
    pub node_ready_timeout: Option<std::time::Duration>,
    /// `rkers rollback --restore-snapshot`: etcd was just restored from the snapshot taken
    /// while the older minor ran, so going back a minor is what is asked, not a mistake.
    pub minor_back_from_snapshot: bool,
}

pub async fn up(cluster: &Cluster, opts: &UpOptions, reporter: &Reporter) -> Result<(), UpError> {
    let runner = Runner::new(reporter.clone(), opts.ssh.concurrency);

    // 1. state
    let mut loaded = state::load(cluster, opts, reporter)?;
    // 2. connect
    let connected = connect::connect(cluster, opts, &loaded, reporter).await?;
    // 3. plan and observe
    let planned = plan::plan(cluster, opts, &loaded, connected, reporter).await?;
    plan::confirm(cluster, opts, &loaded, &planned, reporter).await?;
    if opts.dry_run {
        return dry_run::show(cluster, &loaded, planned, reporter).await;
    }
    // Written only now, once no check refused the run and the adoption (if any) is confirmed,
    // and still before any host changes (§9.1): a run that refuses leaves the state file as it
    // was.
    // What the cluster ran until now, which `rkers rollback` goes back to once this run finishes.
    loaded.state.keep_rollback_candidate();
    state::save_desired_state(cluster, &loaded.state, reporter)?;
    let mut run = run::Run::new(planned, cluster.files.kubeconfig_path.clone(), reporter);
    if let Some(timeout) = opts.node_ready_timeout {
        run.node_ready_timeout = timeout;
    }
    let run = Arc::new(run);
    runner.probe_failed_hosts(run.pool.hosts());
    let old_current = loaded.old_current.as_ref();

    // 4. apply
    // The etcd snapshot a change to etcd or the control plane takes first, and the `old-…`
    // containers an interrupted run left; a failure here stops the run with nothing changed.
    snapshot::apply_before_changes(&run, &runner).await?;
    // Encryption turned off: Secrets go back to plain text while the cluster still runs as it
    // was, before the files step removes the provider file; done after it, the step wrote the
    // file back and the next `up` had to remove it again (§23).
    cluster::disable_encryption(&run, reporter).await?;
    files::apply_files(&run, &runner).await?;
    cluster.write_admin_kubeconfig(&run.bundle, reporter)?;
    // A new cluster's kubelets start while etcd and the control plane come up
    // (early_worker_plane); worker-only hosts pull their images there too. The set's task is
    // aborted when `up` returns early.
    let (early_hosts, worker_only) = match old_current {
        None => planes::early_worker_hosts(&run),
        Some(_) => (Vec::new(), Vec::new()),
    };
    // Every container below needs its image: the planes start once their hosts have them.
    // etcd and control plane hosts pull first, so they never queue behind the workers at a
    // registry.
    files::pull_images(&run, &runner, &worker_only).await?;
    // etcd and control plane hosts start theirs now, before their etcd and control plane, so
    // each host applies its actions in the order the dry run lists them; their health is
    // waited for in the background below, alongside etcd. The worker-only hosts start theirs
    // meanwhile, pulling their images first.
    let with_planes: Vec<String> = early_hosts
        .iter()
        .filter(|h| !worker_only.contains(h))
        .cloned()
        .collect();
    if !with_planes.is_empty() {
        planes::start_early_worker_plane(
            &run,
            &runner,
            "kubelets on etcd and control plane hosts",
            with_planes.clone(),
        )
        .await?;
    }
    let mut early_workers = tokio::task::JoinSet::new();
    if !early_hosts.is_empty() {
        // A budget of its own: hosts waiting for kubelet must not hold back etcd.
        let early_runner = Runner::new(reporter.clone(), opts.ssh.concurrency);
        early_runner.probe_failed_hosts(run.pool.hosts());
        early_workers.spawn(planes::early_worker_plane(
            run.clone(),
            early_runner,
            "kubelets",
            early_hosts.clone(),
            worker_only,
            with_planes,
        ));
    }
    windows::prepare_windows(&run, &runner).await?;
    // A new cluster starts its etcd and control plane containers at once (kube-apiserver
    // retries etcd itself) and waits for their health after: RBAC and the state Secret need
    // the API.
    etcd_members::remove_etcd_members(&run, &runner).await?;
    etcd_members::join_etcd_members(&run, &runner).await?;
    if old_current.is_none() {
        planes::start_etcd_and_control_plane(&run, &runner).await?;
    }
    etcd::etcd_plane(&run, &runner).await?;
    // An existing cluster is upgraded host by host within `upgrade_strategy`'s budgets, through
    // the API server it already has; a new one comes up all at once (§17.1).
    if let Some(old) = old_current {
        let upgrade_api = cluster::existing_api(cluster).await?;
        rolling::upgrade_control_plane(cluster, old, &run, &runner, upgrade_api.as_ref()).await?;
    } else {
        planes::plane(&run, &runner, "control plane", CONTROL_PLANE, |h| {
            h.roles.controlplane
        })
        .await?;
    }
    let api = cluster::authz(cluster, &run).await?;
    cluster::rewrite_secrets(&run).await?;
    let saved = if let Some(old) = old_current {
        // Unlike RKE1, which records the state here, before the worker plane (§9), an existing
        // cluster's state is recorded only once its workers ran the change healthy: a worker
        // whose kubelet or kube-proxy failed (and was put back) must leave the state of the last
        // healthy run, not one that claims the new config (issue 30). The file keeps RKE1's
        // format; only the moment it names the new config moves, and a run stopped in the
        // worker plane is read back as one stopped in the control plane always was.
        rolling::upgrade_worker_plane(cluster, old, &run, &runner, Some(&api)).await?;
        cluster::save_state(cluster, loaded.state, &run).await?
    } else {
        // RKE1's order (§9) on a new cluster, which has no earlier state to keep: the state is
        // recorded once the control plane answers; the kubelets already run, only kube-proxy
        // waits for it.
        let saved = cluster::save_state(cluster, loaded.state, &run).await?;
        if let Some(early) = early_workers.join_next().await {
            early??;
        }
        if !early_hosts.is_empty() {
            cluster::wait_registered(&run, &early_hosts, &api, reporter).await;
        }
        // kube-proxy everywhere, and the worker components of etcd and control plane hosts.
        planes::plane(&run, &runner, "worker plane", WORKER_PLANE, |_| true).await?;
        saved
    };
    nodes::sync_nodes(&run).await?;
    removed_hosts::remove_hosts(&run, &runner).await?;
    nodes::link_logs(&run, &runner).await?;
    crate::phases::addons::deploy_addons(
        cluster,
        &run.addons,
        &run.cluster_actions,
        &run.exec,
        &api,
    )
    .await?;
    cluster::finish_state(cluster, saved, &run)?;
    run.pool.close().await;
    reporter.info("Finished building Kubernetes cluster successfully");
    Ok(())
}

/// `up --dry-run` that also hands back the changeset it showed, for the library API's plan.
pub async fn plan_actions(
    cluster: &Cluster,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Result<Vec<crate::diff::HostActions>, UpError> {
    let loaded = state::load(cluster, opts, reporter)?;
    let connected = connect::connect(cluster, opts, &loaded, reporter).await?;
    let planned = plan::plan(cluster, opts, &loaded, connected, reporter).await?;
    plan::confirm(cluster, opts, &loaded, &planned, reporter).await?;
    let shown = planned.shown.clone();
    dry_run::show(cluster, &loaded, planned, reporter).await?;
    Ok(shown)
}

/// Ends a phase with the outcome of its hosts.
fn finish(phase: crate::output::PhaseGuard, result: Result<(), PhaseError>) -> Result<(), UpError> {
    match result {
        Ok(()) => {
            phase.done();
            Ok(())
        }
        Err(e) => {
            phase.fail(&e.to_string());
            Err(e.into())
        }
    }
}
