//! Running one operation for the server: the cluster's lock, the library call, its events into
//! the database, the lease kept alive while it runs, and cancellation from any replica (a flag
//! in the operation's row that the owning replica polls and turns into the cancellation token).

use std::sync::Arc;

use serde::Deserialize;
use tokio::sync::mpsc;

use super::App;
use super::db::{Lock, RENEW_EVERY};
use super::store::{DbStateStore, row_of};
use crate::api::{self, ApiError, CancellationToken, ClusterInput, Event, Operation, Outcome};

/// What an operation endpoint starts, with the request's options (kept in the operation's
/// record; none of them is a secret).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Kind {
    Up(UpParams),
    Remove(RemoveParams),
    CertRotate(CertRotateParams),
    SnapshotSave(SnapshotParams),
    SnapshotRestore(SnapshotParams),
    Rollback(RollbackParams),
}

#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpParams {
    pub force: bool,
    pub disable_port_check: bool,
    /// Adopt a cluster RKE1 built without asking (a server cannot ask).
    pub yes: bool,
}

#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoveParams {
    pub keep_backups: bool,
}

#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CertRotateParams {
    pub rotate_ca: bool,
    pub services: Vec<String>,
}

/// `rkers rollback`'s options: back to what the previous successful `up` applied, from the
/// stored state (the registered cluster.yml is only compared with it, in the events).
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RollbackParams {
    /// Only plan: the events show what the rollback would do; nothing changes.
    pub dry_run: bool,
    /// Restore the etcd snapshot taken before the rolled-back change first.
    pub restore_snapshot: bool,
    pub disable_port_check: bool,
}

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotParams {
    pub name: String,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Up(_) => "up",
            Kind::Remove(_) => "remove",
            Kind::CertRotate(_) => "cert-rotate",
            Kind::SnapshotSave(_) => "snapshot-save",
            Kind::SnapshotRestore(_) => "snapshot-restore",
            Kind::Rollback(_) => "rollback",
        }
    }
}

/// Why an operation did not start.
pub enum StartError {
    UnknownCluster,
    Busy {
        operation: String,
    },
    /// The server is stopping: it starts no operation any more.
    ShuttingDown,
    Internal(String),
}

/// The operations this replica runs, by id, with the token that cancels each; closed once the
/// server stops, after which nothing new starts.
#[derive(Clone, Default)]
pub struct Running(Arc<std::sync::Mutex<RunningOps>>);

#[derive(Default)]
struct RunningOps {
    closed: bool,
    ops: std::collections::BTreeMap<String, CancellationToken>,
}

impl Running {
    fn inner(&self) -> std::sync::MutexGuard<'_, RunningOps> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a starting operation; false when the server is stopping.
    fn register(&self, id: &str, cancel: CancellationToken) -> bool {
        let mut inner = self.inner();
        if inner.closed {
            return false;
        }
        inner.ops.insert(id.to_string(), cancel);
        true
    }

    fn done(&self, id: &str) {
        self.inner().ops.remove(id);
    }

    pub fn is_closed(&self) -> bool {
        self.inner().closed
    }

    /// Starts nothing more and cancels every running operation; returns their ids.
    pub fn close(&self) -> Vec<String> {
        let mut inner = self.inner();
        inner.closed = true;
        for cancel in inner.ops.values() {
            cancel.cancel();
        }
        inner.ops.keys().cloned().collect()
    }

    /// The operations still running.
    pub fn ids(&self) -> Vec<String> {
        self.inner().ops.keys().cloned().collect()
    }
}

/// The error recorded for an operation the stopping server interrupted.
pub fn stopped_message(replica: &str) -> String {
    format!(
        "interrupted: the server (replica {replica}) stopped; the state holds what the operation \
         saved last, and running it again goes on from there"
    )
}

/// A fresh operation id (128 random bits, hex).
fn new_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// Takes the cluster's lock, records the operation and runs it in the background; returns its
/// id at once.
pub async fn start(app: &App, cluster: &str, kind: Kind) -> Result<String, StartError> {
    let internal = |e: &dyn std::fmt::Display| StartError::Internal(e.to_string());
    if app.running.is_closed() {
        return Err(StartError::ShuttingDown);
    }
    let Some(sealed) = app
        .db
        .cluster_config(cluster)
        .await
        .map_err(|e| internal(&e))?
    else {
        return Err(StartError::UnknownCluster);
    };
    let yaml = app
        .secrets
        .open_string(&super::config_purpose(cluster), &sealed)
        .map_err(|e| internal(&e))?;
    let id = new_id();
    match app
        .db
        .try_lock(cluster, &id, &app.replica)
        .await
        .map_err(|e| internal(&e))?
    {
        Lock::Busy { operation } => return Err(StartError::Busy { operation }),
        Lock::Acquired { took_over } => {
            if let Some(dead) = took_over {
                let message = "its replica stopped renewing the cluster's lock (it crashed or \
                               lost the database); the outcome is unknown, the state holds what \
                               it saved last";
                let _ = app
                    .db
                    .finish_operation(&dead, "failed", 1, Some(message), None)
                    .await;
                tracing::warn!(operation = %dead, %cluster, "took over an expired lock");
            }
        }
    }
    let params = serde_json::to_value(&kind).unwrap_or_default();
    if let Err(e) = app
        .db
        .insert_operation(&id, cluster, kind.name(), &params, &app.replica)
        .await
    {
        let _ = app.db.release_lock(cluster, &id).await;
        return Err(internal(&e));
    }
    let cancel = CancellationToken::new();
    if !app.running.register(&id, cancel.clone()) {
        let message = stopped_message(&app.replica);
        let _ = app
            .db
            .finish_operation(&id, "interrupted", 130, Some(&message), None)
            .await;
        let _ = app.db.release_lock(cluster, &id).await;
        return Err(StartError::ShuttingDown);
    }
    tracing::info!(operation = %id, %cluster, kind = kind.name(), "operation started");
    let app2 = app.clone();
    let (cluster2, id2) = (cluster.to_string(), id.clone());
    spawn_operation(move || run(app2, cluster2, id2, kind, yaml, cancel));
    Ok(id)
}

/// Runs an operation as a task of the server's runtime. The library's futures are `Send`
/// (`api`'s tests check it), so operations share the runtime's workers with the requests.
pub fn spawn_operation<F, Fut, T>(make: F) -> tokio::task::JoinHandle<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(make())
}

async fn run(
    app: App,
    cluster: String,
    id: String,
    kind: Kind,
    yaml: String,
    cancel: CancellationToken,
) {
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let final_tx = tx.clone();
    let sink: api::EventSink = Arc::new(move |e: Event| {
        let _ = tx.send(e);
    });
    let writer = tokio::spawn(write_events(app.clone(), id.clone(), rx));
    let keeper = tokio::spawn(keep_lease(
        app.clone(),
        cluster.clone(),
        id.clone(),
        cancel.clone(),
    ));
    let store = Arc::new(DbStateStore::new(
        app.db.clone(),
        app.secrets.clone(),
        &cluster,
        Some(&id),
    ));
    let op = Operation::new(ClusterInput::Yaml(yaml), store)
        .with_transport(app.transport.clone())
        .with_cancel(cancel.clone())
        .with_events(sink);
    let result = run_kind(&op, &kind).await;
    drop(op);

    let (status, code, error, version) = match &result {
        Ok(outcome) => ("succeeded", 0, None, row_of(&outcome.state_version)),
        // Cancelled by the server stopping, not by a request.
        Err(ApiError::Cancelled) if app.running.is_closed() => (
            "interrupted",
            130,
            Some(stopped_message(&app.replica)),
            None,
        ),
        Err(ApiError::Cancelled) => ("cancelled", 130, Some(redacted(&ApiError::Cancelled)), None),
        Err(e) => ("failed", i64::from(e.exit_code()), Some(redacted(e)), None),
    };
    if let Ok(Outcome {
        kubeconfig: Some(kubeconfig),
        ..
    }) = &result
    {
        // Kept sealed for the operator's tooling; never part of a response or an event.
        let sealed = app
            .secrets
            .seal(&super::kubeconfig_purpose(&cluster), kubeconfig.as_bytes());
        if let Err(e) = app.db.put_kubeconfig(&cluster, &sealed).await {
            tracing::error!(operation = %id, "{e}");
        }
    }
    // The library ends every run with one result event; one is made here if it did not.
    let mut fallback = Event::new(if code == 0 {
        api::Status::Ok
    } else {
        api::Status::Failed
    });
    fallback.event = Some("result");
    fallback.exit_code = Some(u8::try_from(code).unwrap_or(1));
    fallback.error = error.clone();
    if status == "interrupted" {
        fallback.status = api::Status::Interrupted;
    }
    let _ = final_tx.send(fallback);
    drop(final_tx);
    let (next_seq, result_event) = writer.await.unwrap_or((0, None));
    keeper.abort();

    // The record and the lock first, then the result event: a client that saw the result can
    // start the next operation on this cluster at once.
    if let Err(e) = app
        .db
        .finish_operation(&id, status, code, error.as_deref(), version)
        .await
    {
        tracing::error!(operation = %id, "{e}");
    }
    if let Err(e) = app.db.release_lock(&cluster, &id).await {
        tracing::error!(operation = %id, "{e}");
    }
    if let Some(body) = result_event
        && let Err(e) = app.db.insert_event(&id, next_seq, &body).await
    {
        tracing::error!(operation = %id, "{e}");
    }
    app.running.done(&id);
    tracing::info!(operation = %id, %cluster, status, "operation ended");
}

/// Marks interrupted every operation that says "running" but whose replica no longer holds
/// its cluster's lease (the replica was killed, or stopped before it could record the end),
/// releases what is left of its lock and ends its event stream with a result. Run at start and
/// then every [`SWEEP_EVERY`], so no operation stays "running" for ever.
pub async fn sweep_orphans(app: &App) {
    let orphans = match app.db.orphaned_operations().await {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!("{e}");
            return;
        }
    };
    for (id, cluster, replica) in orphans {
        let message = format!(
            "interrupted: its replica {replica} stopped renewing the cluster's lease (it was \
             stopped or crashed); the outcome is unknown, the state holds what it saved last"
        );
        match app.db.interrupt_operation(&id, &cluster, &message).await {
            Ok(true) => tracing::warn!(operation = %id, %cluster, %replica, "marked interrupted"),
            Ok(false) => {}
            Err(e) => tracing::warn!(operation = %id, "{e}"),
        }
    }
}

/// How often a replica looks for operations whose replica died.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

fn redacted(e: &ApiError) -> String {
    crate::output::redact(&e.to_string())
}

async fn run_kind(op: &Operation, kind: &Kind) -> Result<Outcome, ApiError> {
    match kind {
        Kind::Up(p) => {
            api::up(
                op,
                api::UpRequest {
                    force: p.force,
                    disable_port_check: p.disable_port_check,
                    yes: p.yes,
                    ..Default::default()
                },
            )
            .await
        }
        Kind::Remove(p) => {
            api::remove(
                op,
                api::RemoveRequest {
                    keep_backups: p.keep_backups,
                },
            )
            .await
        }
        Kind::CertRotate(p) => {
            api::cert_rotate(
                op,
                api::CertRotateRequest {
                    rotate_ca: p.rotate_ca,
                    services: p.services.clone(),
                },
            )
            .await
        }
        Kind::SnapshotSave(p) => api::snapshot_save(op, &p.name).await,
        Kind::SnapshotRestore(p) => api::snapshot_restore(op, &p.name).await,
        Kind::Rollback(p) => api::rollback(
            op,
            api::RollbackRequest {
                dry_run: p.dry_run,
                restore_snapshot: p.restore_snapshot,
                disable_port_check: p.disable_port_check,
                ..Default::default()
            },
        )
        .await
        .map(|r| r.outcome),
    }
}

/// Stores the operation's events in order until its result event, which is handed back
/// (unstored) with its sequence number so the runner stores it after the outcome.
async fn write_events(
    app: App,
    id: String,
    mut rx: mpsc::UnboundedReceiver<Event>,
) -> (i64, Option<String>) {
    let mut seq = 1;
    while let Some(event) = rx.recv().await {
        let body = serde_json::to_string(&event).unwrap_or_default();
        if event.event == Some("result") {
            return (seq, Some(body));
        }
        if let Err(e) = app.db.insert_event(&id, seq, &body).await {
            tracing::error!(operation = %id, "{e}");
        }
        seq += 1;
    }
    (seq, None)
}

/// Renews the cluster's lease and watches for a cancel request, every [`RENEW_EVERY`]. A lease
/// that could not be renewed (it expired while the database was unreachable and another
/// replica took the cluster) cancels the operation: it no longer owns the cluster.
async fn keep_lease(app: App, cluster: String, id: String, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(RENEW_EVERY);
    loop {
        tick.tick().await;
        match app.db.renew_lock(&cluster, &id).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(operation = %id, %cluster, "lost the cluster's lock; cancelling");
                cancel.cancel();
            }
            Err(e) => tracing::warn!(operation = %id, "{e}"),
        }
        if let Ok(true) = app.db.cancel_requested(&id).await {
            if !cancel.is_cancelled() {
                tracing::info!(operation = %id, %cluster, "cancel requested");
            }
            cancel.cancel();
        }
    }
}
