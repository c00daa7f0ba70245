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
//! The phases work on the files RKE1 keeps next to cluster.yml; each operation keeps the two
//! that hold keys (the state and the admin kubeconfig) in memory, seeded with the stored state,
//! and saves what the phases leave into the store. The rest (`known_hosts`) goes to a private
//! scratch directory removed afterwards.
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

mod cert_rotate;
mod remove;
mod rollback;
mod run;
mod snapshots;
mod transport;
mod up;

use std::path::PathBuf;
use std::sync::Arc;

pub use crate::config::KeyDifference;
pub use crate::hosts::{ExecOutput, HostLink};
pub use crate::output::{Event, EventSink, Status};
pub use crate::state::{
    FileStateStore, Loaded, MemoryStateStore, RollbackRefused, StateStore, StateVersion, StoreError,
};
pub use cert_rotate::{CertRotateRequest, cert_rotate};
pub use remove::{RemoveRequest, remove};
pub use rollback::{RollbackOutcome, RollbackRequest, rollback};
pub use run::stale_scratch_dirs;
pub use snapshots::{snapshot_restore, snapshot_save};
pub use tokio_util::sync::CancellationToken;
pub use transport::{SshTransport, TransportFactory};
pub use up::{PlanRequest, UpRequest, plan, plan_with, up};

use crate::config::RkeConfig;
use crate::metadata::Catalog;

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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rollback;
