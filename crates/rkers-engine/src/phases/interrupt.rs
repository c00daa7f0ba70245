//! What a run that is dropped midway (SIGINT, SIGTERM, SIGHUP, or a cancelled library
//! operation) still undoes: a step that leaves the cluster worse while it is in progress (a
//! node cordoned for its upgrade) hands its undo over here when it is dropped, and the CLI
//! waits a short while for these before it exits. The signals that interrupt a run are read
//! here too, for the CLI and `rkers serve` alike.

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

/// A signal that interrupts a run: SIGINT (Ctrl-C), SIGTERM (`kill`, a service manager) and
/// SIGHUP (the terminal went away) all stop it the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Int,
    Term,
    Hup,
}

impl Interrupt {
    /// 128 + the signal's number, as a shell reports a process the signal ended.
    pub fn exit_code(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
            Interrupt::Hup => 129,
        }
    }

    pub fn message(self) -> String {
        match self {
            Interrupt::Int => "interrupted".into(),
            Interrupt::Term => "interrupted by SIGTERM".into(),
            Interrupt::Hup => "interrupted by SIGHUP".into(),
        }
    }
}

/// The first interrupting signal; never resolves when none can be listened for. The signals
/// are listened for from this call on (it must be made inside the runtime).
pub fn interrupt_signal() -> impl std::future::Future<Output = Interrupt> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    async fn next(s: Option<Signal>) {
        match s {
            Some(mut s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    let int = signal(SignalKind::interrupt()).ok();
    let term = signal(SignalKind::terminate()).ok();
    let hup = signal(SignalKind::hangup()).ok();
    async move {
        tokio::select! {
            _ = next(int) => Interrupt::Int,
            _ = next(term) => Interrupt::Term,
            _ = next(hup) => Interrupt::Hup,
        }
    }
}
