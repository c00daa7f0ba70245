//! What a run that is dropped midway (SIGINT, SIGTERM, SIGHUP, or a cancelled library
//! operation) still undoes: a step that leaves the cluster worse while it is in progress (a
//! node cordoned for its upgrade) hands its undo over here when it is dropped, and the CLI
//! waits a short while for these before it exits.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

static PENDING: Mutex<Vec<tokio::task::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Runs `undo` on the current runtime; an interrupted CLI run waits for it (bounded).
pub fn spawn_undo(undo: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let task = runtime.spawn(undo);
        PENDING.lock().unwrap_or_else(|p| p.into_inner()).push(task);
    }
}

/// Waits up to `limit` for the undos handed over so far.
pub async fn finish_interrupted(limit: Duration) {
    let tasks = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|p| p.into_inner()));
    let _ = tokio::time::timeout(limit, futures::future::join_all(tasks)).await;
}
