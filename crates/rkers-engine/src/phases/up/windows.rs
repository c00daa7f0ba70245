//! Apply: wins installed, registered and (re)started on the Windows workers that need it, and
//! the sweep of processes that outlived their wins server.

use super::run::Run;
use super::{UpError, finish};
use crate::diff::Action;
use crate::phases::Runner;
use std::sync::Arc;

/// Installs, registers and (re)starts wins on the Windows workers that need it, after their
/// files (the wins config among them) are written and their images pulled (`wins.exe` comes
/// out of the sidekick's image). A restart first stops the wins-managed containers and waits
/// for wins to stop their processes, then sweeps what outlived it and starts them again:
/// restarting wins under running processes is what leaves a node in the "Access is denied"
/// loop (windows-wins.md §5.1).
pub(super) async fn prepare_windows(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let hosts: Vec<String> = run
        .plan
        .windows
        .keys()
        .filter(|a| {
            run.actions[*a]
                .iter()
                .any(|x| matches!(x, Action::InstallWins { .. } | Action::StartWins { .. }))
        })
        .cloned()
        .collect();
    if hosts.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("wins");
    let r = run.clone();
    let result = runner
        .for_each_host("wins", "install and start wins", hosts, move |address| {
            let run = r.clone();
            async move { prepare_windows_host(&run, &address).await }
        })
        .await;
    finish(phase, result)
}

/// The host's planned wins actions, through the executor: `wins.exe` installed, then the
/// service registered and started, or restarted the safe way (`Action::StartWins`).
pub(super) async fn prepare_windows_host(run: &Run, address: &str) -> Result<(), UpError> {
    let wins: Vec<&Action> = run.actions[address]
        .iter()
        .filter(|a| matches!(a, Action::InstallWins { .. } | Action::StartWins { .. }))
        .collect();
    run.executor(address)
        .apply(&wins)
        .await
        .map_err(UpError::from)
}

/// A Windows worker's planned orphan sweep, before its worker plane has wins start anything
/// (planned only when that plane changes).
pub(super) async fn sweep_windows_orphans(run: &Run, address: &str) -> Result<(), UpError> {
    let sweep: Vec<&Action> = run.actions[address]
        .iter()
        .filter(|a| matches!(a, Action::SweepWindowsOrphans { .. }))
        .collect();
    run.executor(address)
        .apply(&sweep)
        .await
        .map_err(UpError::from)
}
