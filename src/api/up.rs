//! `up` and its dry run as library calls, and how an [`UpRequest`] becomes the phases' options.

use super::run::{Run, cluster_error, end, operate};
use super::{ApiError, Operation, Outcome, Plan};
use crate::output::Reporter;
use crate::phases;

/// `rkers up`.
#[derive(Clone, Debug, Default)]
pub struct UpRequest {
    pub force: bool,
    pub disable_port_check: bool,
    /// Adopt a cluster whose state rkers did not write without asking (nobody is asked: without
    /// it such a cluster is refused).
    pub yes: bool,
    /// Go on with a minor upgrade although the target minor stops serving API versions the
    /// cluster uses (`--ignore-removed-apis`).
    pub ignore_removed_apis: bool,
    /// Take no etcd snapshot before a change to etcd or the control plane (`--no-snapshot`).
    pub no_snapshot: bool,
}

/// What [`plan_with`] takes, the dry run's part of [`UpRequest`].
#[derive(Clone, Debug, Default)]
pub struct PlanRequest {
    /// Plan a minor upgrade although the target minor stops serving API versions the cluster
    /// uses; without it the plan refuses as `up` would.
    pub ignore_removed_apis: bool,
}

/// Brings the cluster to its config, like `rkers up`.
///
/// ```no_run
/// # async fn example(yaml: String) -> Result<(), rkers::api::ApiError> {
/// use std::sync::Arc;
/// use rkers::api::{self, ClusterInput, FileStateStore, Operation, UpRequest};
/// let store = Arc::new(FileStateStore::new("/srv/clusters/a/cluster.rkestate"));
/// let op = Operation::new(ClusterInput::Yaml(yaml), store);
/// let outcome = api::up(&op, UpRequest { yes: true, ..Default::default() }).await?;
/// assert!(outcome.kubeconfig.is_some());
/// # Ok(()) }
/// ```
pub async fn up(op: &Operation, req: UpRequest) -> Result<Outcome, ApiError> {
    operate(op, "up", move |run, reporter| {
        let opts = up_options(run, &req, false);
        Box::pin(async move {
            phases::up::up(&run.cluster, &opts, reporter)
                .await
                .map_err(up_error)
        })
    })
    .await
}

/// What `up` would do, without changing any host or the store (`up --dry-run`).
///
/// ```no_run
/// # async fn example(yaml: String) -> Result<(), rkers::api::ApiError> {
/// use std::sync::Arc;
/// use rkers::api::{self, ClusterInput, MemoryStateStore, Operation};
/// let op = Operation::new(ClusterInput::Yaml(yaml), Arc::new(MemoryStateStore::new(None)));
/// let plan = api::plan(&op).await?;
/// for host in &plan.hosts {
///     println!("{}: {} action(s)", host.host, host.actions.len());
/// }
/// # Ok(()) }
/// ```
pub async fn plan(op: &Operation) -> Result<Plan, ApiError> {
    plan_with(op, PlanRequest::default()).await
}

/// [`plan`] with options.
pub async fn plan_with(op: &Operation, req: PlanRequest) -> Result<Plan, ApiError> {
    let reporter = Reporter::with_sink(op.events.clone());
    let result = async {
        let run = Run::prepare(op, &reporter)?;
        let up = UpRequest {
            ignore_removed_apis: req.ignore_removed_apis,
            ..Default::default()
        };
        let mut opts = up_options(&run, &up, true);
        opts.ssh.record_new_host_keys = false;
        let hosts = run
            .guard(op, &reporter, async {
                phases::up::plan_actions(&run.cluster, &opts, &reporter)
                    .await
                    .map_err(up_error)
            })
            .await?;
        Ok(Plan { hosts })
    }
    .await;
    end(&reporter, result)
}

pub(super) fn up_options(run: &Run, req: &UpRequest, dry_run: bool) -> phases::up::UpOptions {
    phases::up::UpOptions {
        dry_run,
        force: req.force,
        disable_port_check: req.disable_port_check,
        custom_certs: None,
        agent_override: false,
        ignore_docker_version_flag: false,
        ssh: run.ssh.clone(),
        yes: req.yes,
        // Nobody to ask: only `yes` adopts.
        confirm: None,
        ignore_blocking_webhooks: false,
        ignore_removed_apis: req.ignore_removed_apis,
        dind: false,
        no_snapshot: req.no_snapshot,
        node_ready_timeout: None,
        minor_back_from_snapshot: false,
    }
}

pub(super) fn up_error(e: phases::up::UpError) -> ApiError {
    match e {
        phases::up::UpError::Cluster(c) => cluster_error(c),
        other => ApiError::Operation(crate::error::Failure::new(other)),
    }
}
