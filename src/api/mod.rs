//! rkers as a library: `up`, its dry run, `remove`, `cert rotate`, `rollback` and etcd
//! snapshots as async functions, for a program (a management server) that drives many clusters at once.
//!
//! One [`Operation`] carries everything a run needs: the cluster config (a value or YAML text),
//! where its state lives ([`StateStore`], saved by compare-and-swap on the version loaded), how
//! hosts are reached ([`TransportFactory`]), a [`CancellationToken`] and an [`EventSink`] that
//! receives the same events `--output json` prints, already redacted. Nothing is read from the
//! process: no current directory, no environment variable, no prompt on stdin. Two operations
//! on two clusters run concurrently in one process.
//!
//! The phases work on the files RKE1 keeps next to cluster.yml; each operation gives them a
//! private scratch directory, seeded with the stored state and removed afterwards, and saves
//! what they leave there into the store.
//!
//! ```no_run
//! # async fn example() -> Result<(), rkers::api::ApiError> {
//! use std::sync::Arc;
//! use rkers::api::{self, ClusterInput, MemoryStateStore, Operation, UpRequest};
//!
//! let yaml = std::fs::read_to_string("cluster.yml").unwrap();
//! let store = Arc::new(MemoryStateStore::new(None));
//! let op = Operation::new(ClusterInput::Yaml(yaml), store.clone())
//!     .with_events(Arc::new(|event| println!("{}", serde_json::to_string(&event).unwrap())));
//! let outcome = api::up(&op, UpRequest::default()).await?;
//! println!("state saved as version {}", outcome.state_version);
//! # Ok(()) }
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::config::KeyDifference;
pub use crate::output::{Event, EventSink, Status};
pub use crate::state::{
    FileStateStore, Loaded, MemoryStateStore, RollbackRefused, StateStore, StateVersion, StoreError,
};
pub use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, ClusterError};
use crate::config::{self, RkeConfig};
pub use crate::hosts::{ExecOutput, HostLink};
use crate::hosts::{HostError, LinkOpener, Links, SshOptions, SshTarget};
use crate::metadata::Catalog;
use crate::output::Reporter;
use crate::phases;
use crate::state::{ClusterFiles, StateFile};
use futures::future::BoxFuture;

/// The cluster.yml of an operation.
pub enum ClusterInput {
    /// cluster.yml text; errors in it are reported as `cluster.yml:LINE:COLUMN`.
    Yaml(String),
    /// An already built config (defaults are applied and it is validated as YAML would be).
    Config(Box<RkeConfig>),
}

/// Everything one operation needs; nothing process-wide.
///
/// ```
/// use std::sync::Arc;
/// use rkers::api::{CancellationToken, ClusterInput, MemoryStateStore, Operation};
///
/// let cancel = CancellationToken::new();
/// let op = Operation::new(
///     ClusterInput::Yaml("nodes: []\n".into()),
///     Arc::new(MemoryStateStore::new(None)),
/// )
/// .with_cancel(cancel.clone());
/// // Another task may now call `cancel.cancel()` to stop the operation.
/// # let _ = op;
/// ```
pub struct Operation {
    pub cluster: ClusterInput,
    pub store: Arc<dyn StateStore>,
    /// How each host is reached; [`SshTransport`] by default.
    pub transport: Arc<dyn TransportFactory>,
    pub cancel: CancellationToken,
    /// Receives every event of the operation, redacted, ending with one `result` event.
    pub events: EventSink,
    /// The Kubernetes version metadata; the one compiled into rkers by default.
    pub metadata: Catalog,
    /// Where the private scratch directory of each run is made; the system's temporary
    /// directory by default.
    pub scratch_parent: Option<PathBuf>,
}

impl Operation {
    /// An operation over SSH with a fresh cancellation token, no event sink and the embedded
    /// metadata.
    pub fn new(cluster: ClusterInput, store: Arc<dyn StateStore>) -> Self {
        Operation {
            cluster,
            store,
            transport: Arc::new(SshTransport::default()),
            cancel: CancellationToken::new(),
            events: Arc::new(|_| {}),
            metadata: Catalog::embedded().clone(),
            scratch_parent: None,
        }
    }

    pub fn with_transport(mut self, t: Arc<dyn TransportFactory>) -> Self {
        self.transport = t;
        self
    }

    pub fn with_cancel(mut self, c: CancellationToken) -> Self {
        self.cancel = c;
        self
    }

    pub fn with_events(mut self, s: EventSink) -> Self {
        self.events = s;
        self
    }

    /// Another version catalog (e.g. [`Catalog::from_file`] of a KDM `data.json`).
    pub fn with_metadata(mut self, catalog: Catalog) -> Self {
        self.metadata = catalog;
        self
    }

    /// Makes each run's scratch directory under `dir` instead of the system's temp directory.
    pub fn with_scratch_parent(mut self, dir: impl Into<PathBuf>) -> Self {
        self.scratch_parent = Some(dir.into());
        self
    }
}

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

/// `rkers remove`.
#[derive(Clone, Debug, Default)]
pub struct RemoveRequest {
    pub keep_backups: bool,
}

/// `rkers cert rotate`.
#[derive(Clone, Debug, Default)]
pub struct CertRotateRequest {
    pub rotate_ca: bool,
    /// Services by their RKE1 names (`kube-apiserver`, `kubelet`, `etcd`, ...); empty means all.
    pub services: Vec<String>,
}

/// `rkers rollback`: back to what the previous successful `up` applied, as the state records
/// it (the operation's config is only compared with it afterwards).
#[derive(Clone, Debug, Default)]
pub struct RollbackRequest {
    /// Only show what the rollback would do (`--dry-run`): no host, and not the store, changes.
    pub dry_run: bool,
    /// First restore the etcd snapshot the rolled-back run took before it changed anything
    /// (`--restore-snapshot`): needed to go back over a Kubernetes minor.
    pub restore_snapshot: bool,
    pub disable_port_check: bool,
    /// Take no etcd snapshot before a change to etcd or the control plane (`--no-snapshot`).
    pub no_snapshot: bool,
}

/// What a rollback leaves.
#[derive(Debug)]
pub struct RollbackOutcome {
    /// A dry run saves nothing: its version is the one loaded, and it has no kubeconfig.
    pub outcome: Outcome,
    /// The `kubernetes_version` rolled back to.
    pub kubernetes_version: String,
    /// The etcd snapshot restored first (`restore_snapshot`).
    pub restored_snapshot: Option<String>,
    /// A dry run's per-host actions; `None` for a run, and for a dry run that restores a
    /// snapshot (its plan is in the events).
    pub plan: Option<Plan>,
    /// The keys where the operation's cluster.yml differs from the rolled-back config (change
    /// them back, or the next `up` undoes the rollback); `Err` says why it could not be
    /// compared. The events say the same.
    pub cluster_yml_differs: Result<Vec<KeyDifference>, String>,
}

/// What a finished operation leaves: the admin kubeconfig (contains a key: callers must not log
/// it) and the version of the state it saved.
pub struct Outcome {
    pub kubeconfig: Option<String>,
    pub state_version: StateVersion,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcome")
            .field(
                "kubeconfig",
                &self.kubeconfig.as_ref().map(|_| "<redacted>"),
            )
            .field("state_version", &self.state_version)
            .finish()
    }
}

/// The dry run of `up`: the per-host actions, in order.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Plan {
    pub hosts: Vec<crate::diff::HostActions>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The config is not valid; the message names `cluster.yml:LINE:COLUMN` where it can.
    #[error("{0}")]
    InvalidConfig(String),
    /// Loading or saving the state; [`StoreError::Conflict`] when another writer saved first.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A rollback that cannot go back: no state, no previous run recorded, or a Kubernetes
    /// minor crossed back without `restore_snapshot`.
    #[error(transparent)]
    Refused(#[from] RollbackRefused),
    /// The token fired; the state in the store still loads.
    #[error("the operation was cancelled; what it had written to the state is saved")]
    Cancelled,
    /// The operation failed: the message names the host and the cause.
    #[error("{0}")]
    Failed(String),
    /// The operation failed with one of the library's typed errors. Only inside an operation:
    /// its hosts and causes go into the `result` event, and the caller gets it back as
    /// [`ApiError::Failed`], its text masked like the events.
    #[error(transparent)]
    Operation(crate::error::Failure),
}

impl crate::error::HostContext for ApiError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            ApiError::Operation(e) => e.hosts(),
            ApiError::InvalidConfig(_)
            | ApiError::Store(_)
            | ApiError::Refused(_)
            | ApiError::Cancelled
            | ApiError::Failed(_) => Vec::new(),
        }
    }
}

impl ApiError {
    /// The CLI's exit code for the same failure: 2 invalid config, 130 cancelled, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            ApiError::InvalidConfig(_) => 2,
            ApiError::Cancelled => 130,
            ApiError::Store(_)
            | ApiError::Refused(_)
            | ApiError::Failed(_)
            | ApiError::Operation(_) => 1,
        }
    }
}

/// How each host is reached. A phase drives a host through its [`HostLink`]: commands (with
/// stdin), TCP connections made from the host, and the streams its Docker API is spoken over.
/// SSH is the default link ([`SshTransport`] chooses its settings); a factory whose
/// [`open_link`](TransportFactory::open_link) answers for a host plugs in another one, like
/// RKE1's per-node dialers.
///
/// ```no_run
/// use std::sync::Arc;
/// use futures::future::BoxFuture;
/// use rkers::api::{HostLink, TransportFactory};
/// use rkers::hosts::{HostError, SshOptions, SshTarget};
///
/// /// Reaches the nodes whose address starts with `local-` through the caller's own link,
/// /// the others over SSH.
/// struct Mixed {
///     local: Arc<dyn HostLink>,
/// }
///
/// impl TransportFactory for Mixed {
///     fn ssh_options(&self) -> SshOptions {
///         SshOptions::default()
///     }
///     fn open_link<'a>(
///         &'a self,
///         target: &'a SshTarget,
///     ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
///         if !target.address.starts_with("local-") {
///             return None; // SSH, as usual
///         }
///         let link = self.local.clone();
///         Some(Box::pin(async move { Ok(link) }))
///     }
/// }
/// # fn use_it(op: rkers::api::Operation, local: Arc<dyn HostLink>) -> rkers::api::Operation {
/// op.with_transport(Arc::new(Mixed { local }))
/// # }
/// ```
pub trait TransportFactory: Send + Sync {
    /// The SSH settings hosts are reached with (known_hosts, host key policy, timeouts,
    /// concurrency); the concurrency and Docker timeout apply to every link.
    fn ssh_options(&self) -> SshOptions;

    /// Opens the link to one host (cluster.yml's node as a target: address, user, Docker
    /// socket). `None`, the default, reaches it over SSH with [`ssh_options`](Self::ssh_options).
    /// A link is opened once per host and run, and closed with [`HostLink::close`] at the end.
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        let _ = target;
        None
    }
}

/// The operation's factory as the host pool's link opener.
struct FactoryLinks(Arc<dyn TransportFactory>);

impl LinkOpener for FactoryLinks {
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        self.0.open_link(target)
    }
}

/// Hosts reached over SSH, as the CLI does. Nothing is read from the process: no
/// `~/.ssh/config`, no passphrase prompt. New host keys are recorded in `known_hosts` (by
/// default a file in the run's scratch directory, i.e. trusted on first use per operation).
#[derive(Clone, Debug, Default)]
pub struct SshTransport {
    /// known_hosts file to check and record host keys in.
    pub known_hosts: Option<PathBuf>,
    /// Refuse hosts whose key is not in `known_hosts` yet.
    pub strict_host_keys: bool,
}

impl TransportFactory for SshTransport {
    fn ssh_options(&self) -> SshOptions {
        SshOptions {
            known_hosts_path: self.known_hosts.clone(),
            host_key_policy: if self.strict_host_keys {
                crate::hosts::target::HostKeyPolicy::Strict
            } else {
                crate::hosts::target::HostKeyPolicy::AcceptNew
            },
            passphrase_prompt: false,
            ssh_config_enabled: false,
            ..SshOptions::default()
        }
    }
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

/// Tears the cluster down, like `rkers remove --force`; the store is left without a state.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::remove(&op, rkers::api::RemoveRequest::default()).await?;
/// # Ok(()) }
/// ```
pub async fn remove(op: &Operation, req: RemoveRequest) -> Result<Outcome, ApiError> {
    operate(op, "remove", move |run, reporter| {
        let opts = phases::remove::RemoveOptions {
            dry_run: false,
            keep_backups: req.keep_backups,
            agent_override: false,
            ssh: run.ssh.clone(),
        };
        Box::pin(async move {
            phases::remove::remove(&run.cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    phases::remove::RemoveError::Cluster(c) => cluster_error(c),
                    other => ApiError::Operation(crate::error::Failure::new(other)),
                })
        })
    })
    .await
}

/// Rotates certificates, like `rkers cert rotate`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// use rkers::api::CertRotateRequest;
/// let req = CertRotateRequest { services: vec!["kubelet".into()], ..Default::default() };
/// rkers::api::cert_rotate(&op, req).await?;
/// # Ok(()) }
/// ```
pub async fn cert_rotate(op: &Operation, req: CertRotateRequest) -> Result<Outcome, ApiError> {
    operate(op, "cert rotate", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::cert_rotate::RotateOptions {
                dry_run: false,
                services: req
                    .services
                    .iter()
                    .map(|s| rotate_service(s))
                    .collect::<Result<_, _>>()?,
                rotate_ca: req.rotate_ca,
                agent_override: false,
                ssh: run.ssh.clone(),
                ignore_blocking_webhooks: false,
            };
            phases::cert_rotate::cert_rotate(&run.cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    phases::cert_rotate::RotateError::Cluster(c) => cluster_error(c),
                    other => ApiError::Operation(crate::error::Failure::new(other)),
                })
        })
    })
    .await
}

/// Takes a local etcd snapshot named `name` on every etcd host, like
/// `rkers etcd snapshot-save --name NAME`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::snapshot_save(&op, "before-upgrade").await?;
/// # Ok(()) }
/// ```
pub async fn snapshot_save(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    let name = name.to_string();
    operate(op, "etcd snapshot-save", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::etcd_snapshot::SaveOptions {
                name: snapshot_name(&name, reporter)?,
                s3: None,
                ssh: run.ssh.clone(),
                agent_override: false,
                dry_run: false,
            };
            phases::etcd_snapshot::save(&run.cluster, &opts, reporter)
                .await
                .map_err(snapshot_error)
        })
    })
    .await
}

/// Restores the etcd snapshot `name` and brings the cluster up on it, like
/// `rkers etcd snapshot-restore --name NAME`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// rkers::api::snapshot_restore(&op, "before-upgrade").await?;
/// # Ok(()) }
/// ```
pub async fn snapshot_restore(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    let name = name.to_string();
    operate(op, "etcd snapshot-restore", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::etcd_snapshot::RestoreOptions {
                name: snapshot_name(&name, reporter)?,
                s3: None,
                // A restore rebuilds etcd and the control plane by the caller's explicit
                // request: nothing is left to confirm about adopting the cluster (as in the CLI).
                up: up_options(
                    run,
                    &UpRequest {
                        disable_port_check: true,
                        yes: true,
                        ..Default::default()
                    },
                    false,
                ),
                dry_run: false,
            };
            phases::etcd_snapshot::restore(&run.cluster, &opts, reporter)
                .await
                .map_err(snapshot_error)
        })
    })
    .await
}

/// Brings the cluster back to what the previous successful `up` applied, like
/// `rkers rollback`: the config recorded in the stored state, applied exactly as recorded (or,
/// with `restore_snapshot`, the etcd snapshot taken before the change restored first). A state
/// without a previous run, or a minor crossed back without the snapshot, is refused with
/// [`ApiError::Refused`] before any host is reached. The operation's own config is only
/// compared with the rolled-back one.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// use rkers::api::{self, RollbackRequest};
/// let plan = api::rollback(&op, RollbackRequest { dry_run: true, ..Default::default() }).await?;
/// println!("back to {}: {:?}", plan.kubernetes_version, plan.cluster_yml_differs);
/// api::rollback(&op, RollbackRequest::default()).await?;
/// # Ok(()) }
/// ```
pub async fn rollback(op: &Operation, req: RollbackRequest) -> Result<RollbackOutcome, ApiError> {
    use phases::rollback::{self as back, RollbackError, RollbackRunError};
    let prepare = |reporter: &Reporter| {
        let mut restore_snapshot = None;
        let mut differences = Err(String::new());
        let run = Run::prepare_with(op, reporter, |files, state| {
            let prepared = back::prepare(
                state,
                req.restore_snapshot,
                files,
                op.metadata.clone(),
                CONFIG_STATE_NAME,
                reporter,
            )
            .map_err(|e| match e {
                RollbackError::Refused(r) => ApiError::Refused(r),
                other => ApiError::Failed(other.to_string()),
            })?;
            let current = input_config(op)
                .map(|l| l.config)
                .map_err(|e| e.to_string());
            differences = back::cluster_yml_differences(current, &prepared.cluster);
            restore_snapshot = prepared.restore_snapshot;
            Ok(prepared.cluster)
        })?;
        Ok((run, (restore_snapshot, differences)))
    };
    let dry_run = req.dry_run;
    let (outcome, (restored_snapshot, differences), (version, plan)) = operate_with(
        op,
        "rollback",
        dry_run,
        prepare,
        move |run, prepared, reporter| {
            let (restore_snapshot, differences) = prepared;
            let mut opts = up_options(
                run,
                &UpRequest {
                    disable_port_check: req.disable_port_check,
                    no_snapshot: req.no_snapshot,
                    ..Default::default()
                },
                dry_run,
            );
            // A dry run leaves every file as it was, known_hosts too.
            opts.ssh.record_new_host_keys = !dry_run;
            Box::pin(async move {
                let plan = back::run(&run.cluster, restore_snapshot.as_deref(), opts, reporter)
                    .await
                    .map_err(|e| match e {
                        RollbackRunError::Up(e) => up_error(e),
                        RollbackRunError::Restore(e) => snapshot_error(e),
                    })?;
                back::report_differences(differences, reporter);
                Ok((run.cluster.config.kubernetes_version.clone(), plan))
            })
        },
    )
    .await?;
    Ok(RollbackOutcome {
        outcome,
        kubernetes_version: version,
        restored_snapshot,
        plan: plan.map(|hosts| Plan { hosts }),
        cluster_yml_differs: differences,
    })
}

/// One operation that changes the cluster: a run prepared from `op`, `phase` under the
/// cancellation token, what it left saved into the store, and the one `result` event.
async fn operate(
    op: &Operation,
    command: &str,
    phase: impl for<'a> FnOnce(
        &'a Run,
        &'a Reporter,
    ) -> futures::future::BoxFuture<'a, Result<(), ApiError>>,
) -> Result<Outcome, ApiError> {
    let prepare = |reporter: &Reporter| Ok((Run::prepare(op, reporter)?, ()));
    operate_with(op, command, false, prepare, |run, (), reporter| {
        phase(run, reporter)
    })
    .await
    .map(|(outcome, (), ())| outcome)
}

/// [`operate`] with the run made by `prepare` (with what else it hands the phase) and the
/// phase's value handed back. A `dry_run` takes no lock and saves nothing: its outcome names
/// the version it loaded.
async fn operate_with<P, T>(
    op: &Operation,
    command: &str,
    dry_run: bool,
    prepare: impl FnOnce(&Reporter) -> Result<(Run, P), ApiError>,
    phase: impl for<'a> FnOnce(
        &'a Run,
        &'a P,
        &'a Reporter,
    ) -> futures::future::BoxFuture<'a, Result<T, ApiError>>,
) -> Result<(Outcome, P, T), ApiError> {
    let reporter = Reporter::with_sink(op.events.clone());
    let result = async {
        // Held until the state is saved: one operation at a time on a state file.
        let lock = if dry_run {
            None
        } else {
            op.store.lock_run(command)?
        };
        if let Some(notice) = lock.as_ref().and_then(|l| l.takeover_notice()) {
            reporter.warn(notice);
        }
        let (run, prepared) = prepare(&reporter)?;
        let done = run
            .guard(op, &reporter, phase(&run, &prepared, &reporter))
            .await;
        let outcome = if dry_run {
            let unsaved = Outcome {
                kubeconfig: None,
                state_version: run.loaded.version.clone(),
            };
            done.map(|value| (unsaved, value))
        } else {
            run.finish(op, done)
        };
        drop(lock);
        outcome.map(|(outcome, value)| (outcome, prepared, value))
    }
    .await;
    end(&reporter, result)
}

/// The one `result` event every operation ends with. The error handed back is masked like the
/// events: its text may quote a host's output.
fn end<T>(reporter: &Reporter, result: Result<T, ApiError>) -> Result<T, ApiError> {
    // Read before the typed error becomes text: its hosts and causes.
    let report = result
        .as_ref()
        .err()
        .map(|e| crate::error::ErrorReport::of(e).redacted(|t| reporter.redactor().redact(t)));
    let result = result.map_err(|e| match e {
        ApiError::InvalidConfig(m) => ApiError::InvalidConfig(reporter.redactor().redact(&m)),
        ApiError::Failed(m) => ApiError::Failed(reporter.redactor().redact(&m)),
        ApiError::Operation(e) => ApiError::Failed(reporter.redactor().redact(&e.to_string())),
        other => other,
    });
    match &result {
        Ok(_) => reporter.finish_run(0, None),
        Err(e) => reporter.finish_run_with(e.exit_code(), report.as_ref()),
    }
    result
}

fn up_options(run: &Run, req: &UpRequest, dry_run: bool) -> phases::up::UpOptions {
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
        minor_back_from_snapshot: false,
    }
}

fn cluster_error(c: ClusterError) -> ApiError {
    if c.is_invalid_config() {
        ApiError::InvalidConfig(c.to_string())
    } else {
        ApiError::Operation(crate::error::Failure::new(c))
    }
}

fn up_error(e: phases::up::UpError) -> ApiError {
    match e {
        phases::up::UpError::Cluster(c) => cluster_error(c),
        other => ApiError::Operation(crate::error::Failure::new(other)),
    }
}

fn snapshot_error(e: phases::etcd_snapshot::SnapshotError) -> ApiError {
    use phases::etcd_snapshot::SnapshotError;
    match e {
        SnapshotError::Invalid(m) => ApiError::InvalidConfig(m),
        SnapshotError::Cluster(c) => cluster_error(c),
        SnapshotError::Up {
            cause: phases::up::UpError::Cluster(c),
            ..
        } if c.is_invalid_config() => ApiError::InvalidConfig(c.to_string()),
        other => ApiError::Operation(crate::error::Failure::new(other)),
    }
}

fn snapshot_name(name: &str, reporter: &Reporter) -> Result<String, ApiError> {
    let (name, warning) =
        phases::etcd_snapshot::check_snapshot_name(name).map_err(snapshot_error)?;
    if let Some(w) = warning {
        reporter.warn(w);
    }
    Ok(name)
}

fn rotate_service(name: &str) -> Result<crate::pki::RotateService, ApiError> {
    use crate::pki::RotateService as S;
    Ok(match name {
        "kube-apiserver" => S::KubeApiserver,
        "kube-controller-manager" => S::KubeControllerManager,
        "kube-scheduler" => S::KubeScheduler,
        "kubelet" => S::Kubelet,
        "kube-proxy" => S::KubeProxy,
        "etcd" => S::Etcd,
        other => {
            return Err(ApiError::InvalidConfig(format!(
                "cert rotate: unknown service {other:?}; the services are kube-apiserver, \
                 kube-controller-manager, kube-scheduler, kubelet, kube-proxy and etcd"
            )));
        }
    })
}

/// The operation's cluster.yml, read (not yet defaulted).
fn input_config(op: &Operation) -> Result<config::Loaded, config::ConfigError> {
    match &op.cluster {
        ClusterInput::Yaml(text) => config::load_str(text, CONFIG_NAME),
        ClusterInput::Config(c) => Ok(config::Loaded {
            config: (**c).clone(),
            warnings: Vec::new(),
            locations: config::Locations::empty(CONFIG_NAME),
        }),
    }
}

/// The name the config is given in messages.
const CONFIG_NAME: &str = "cluster.yml";

/// One run's scratch directory, seeded from the store, and the cluster the phases see.
struct Run {
    /// Held for its removal when the run ends (it holds private keys).
    _scratch: tempfile::TempDir,
    cluster: Cluster,
    loaded: Loaded,
    /// The state document as it was written into the scratch directory.
    seeded: Option<Vec<u8>>,
    ssh: SshOptions,
}

impl Run {
    fn prepare(op: &Operation, reporter: &Reporter) -> Result<Run, ApiError> {
        let loaded_config = input_config(op).map_err(|e| cluster_error(ClusterError::Config(e)))?;
        Self::prepare_with(op, reporter, |files, state| {
            Cluster::from_loaded_with_state(
                loaded_config,
                op.metadata.clone(),
                files,
                state,
                reporter,
            )
            .map_err(cluster_error)
        })
    }

    /// A run of the cluster `cluster` makes of the scratch directory's files and the stored
    /// state.
    fn prepare_with(
        op: &Operation,
        reporter: &Reporter,
        cluster: impl FnOnce(ClusterFiles, Option<&StateFile>) -> Result<Cluster, ApiError>,
    ) -> Result<Run, ApiError> {
        if op.cancel.is_cancelled() {
            return Err(ApiError::Cancelled);
        }
        let scratch = match &op.scratch_parent {
            Some(parent) => tempfile::Builder::new()
                .prefix("rkers-op-")
                .tempdir_in(parent),
            None => tempfile::Builder::new().prefix("rkers-op-").tempdir(),
        }
        .map_err(|e| ApiError::Failed(format!("cannot make a scratch directory: {e}")))?;
        let files = ClusterFiles::from_config_path(&scratch.path().join(CONFIG_NAME));

        // Read first: a version without published metadata takes its images from the state.
        let loaded = op.store.load()?;
        let mut cluster = cluster(files, loaded.state.as_ref())?;
        // What RKE1 records for a cluster.yml in the current directory: the same every run.
        cluster.recorded_kubeconfig_path = Some(format!("./kube_config_{CONFIG_NAME}"));

        let seeded = match &loaded.state {
            Some(state) => {
                // As stored, without rkers' mark added: a state RKE1 wrote must still be
                // recognised as one to adopt.
                let text = state
                    .to_json()
                    .map_err(|e| ApiError::Store(StoreError::State(e)))?;
                write_private(&cluster.files.state_path, text.as_bytes())?;
                seed_kubeconfig(state, &cluster.files.kubeconfig_path)?;
                Some(text.into_bytes())
            }
            None => None,
        };
        let mut ssh = op.transport.ssh_options();
        if ssh.known_hosts_path.is_none() {
            ssh.known_hosts_path = Some(scratch.path().join("known_hosts"));
        }
        ssh.links = Links(Some(Arc::new(FactoryLinks(op.transport.clone()))));
        let notices = reporter.clone();
        ssh.notices = crate::hosts::target::NoticeSink::new(move |m| notices.warn(m));
        Ok(Run {
            _scratch: scratch,
            cluster,
            loaded,
            seeded,
            ssh,
        })
    }

    /// Runs a phase until it ends or the operation is cancelled. On cancellation the phase is
    /// dropped after the reporter knows, so every step it leaves unfinished reports
    /// `interrupted`.
    async fn guard<T>(
        &self,
        op: &Operation,
        reporter: &Reporter,
        phase: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let mut phase = Box::pin(phase);
        let finished = tokio::select! {
            biased;
            r = &mut phase => Some(r),
            _ = op.cancel.cancelled() => None,
        };
        match finished {
            Some(r) => r,
            None => {
                reporter.mark_interrupted();
                drop(phase);
                Err(ApiError::Cancelled)
            }
        }
    }

    /// Saves what the phase left in the scratch directory into the store (also after a
    /// failure or cancellation: the state records certificates already on hosts), then
    /// returns the phase's result and value.
    fn finish<T>(
        self,
        op: &Operation,
        done: Result<T, ApiError>,
    ) -> Result<(Outcome, T), ApiError> {
        let saved = self.save_state(op);
        let value = done?;
        let state_version = saved?;
        let kubeconfig = match std::fs::read_to_string(&self.cluster.files.kubeconfig_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ApiError::Failed(format!(
                    "cannot read the admin kubeconfig the run wrote: {e}"
                )));
            }
        };
        Ok((
            Outcome {
                kubeconfig,
                state_version,
            },
            value,
        ))
    }

    fn save_state(&self, op: &Operation) -> Result<StateVersion, ApiError> {
        let path = &self.cluster.files.state_path;
        let bytes = match std::fs::read(path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ApiError::Failed(format!(
                    "cannot read the state the run wrote ({e}); the store was not changed"
                )));
            }
        };
        let expected = &self.loaded.version;
        match (bytes, &self.seeded) {
            (Some(now), Some(before)) if &now == before => Ok(expected.clone()),
            (Some(now), _) => {
                // A state that does not read back whole is never saved over the stored one.
                let text = String::from_utf8(now).map_err(|_| {
                    ApiError::Failed(
                        "the state the run wrote is not UTF-8; the store was not changed".into(),
                    )
                })?;
                let state = StateFile::from_json(&text, Path::new(CONFIG_STATE_NAME))
                    .map_err(|e| ApiError::Store(StoreError::State(e)))?;
                // Rewritten with the same content (a run that changed nothing): no new version.
                if self.loaded.state.as_ref() == Some(&state) {
                    return Ok(expected.clone());
                }
                Ok(op.store.save(&state, expected)?)
            }
            (None, Some(_)) => Ok(op.store.delete(expected)?),
            (None, None) => Ok(expected.clone()),
        }
    }
}

/// The state's name in messages.
const CONFIG_STATE_NAME: &str = "cluster.rkestate";

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ApiError> {
    crate::state::write_atomic(path, bytes, 0o600)
        .map_err(|e| ApiError::Failed(format!("cannot write {}: {e}", path.display())))
}

/// The admin kubeconfig the state records, where the phases that talk to the API server of an
/// existing cluster look for it.
fn seed_kubeconfig(state: &StateFile, path: &Path) -> Result<(), ApiError> {
    let admin = state
        .current_state
        .certificates_bundle
        .get("kube-admin")
        .or_else(|| state.desired_state.certificates_bundle.get("kube-admin"));
    match admin {
        Some(cert) if !cert.config.is_empty() => write_private(path, cert.config.as_bytes()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rollback;
