//! The Windows-only host work of `up` and `remove` (windows-wins.md §5): the orphan sweep that
//! must run before wins starts any process on a Windows worker, and tearing a Windows worker
//! down. Host-level work runs as a privileged step ([`run_privileged_step`]): a one-shot
//! container that mounts the wins pipe and has wins start the host's PowerShell, rendered by
//! [`plan::windows_privileged_step`]. Work that must happen before wins exists (directories,
//! files, installing and starting wins) runs through the host agent over SSH instead
//! ([`run_host_agent`], rendered by `plan::host_agent_script`). Linux hosts never reach this
//! module.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::files::DesiredFile;
use super::manager::PhaseError;
use crate::hosts::{ContainerSpec, Host};
use crate::plan::{
    self, AgentMode, HostReport, HostRequest, WindowsRemovePlan, WinsRequest, WinsStatus,
    windows_path,
};

/// The one-shot container of the orphan sweep.
pub const SWEEP_CONTAINER: &str = "rkers-wins-orphan-sweep";
/// The one-shot container of the host part of `remove`.
pub const REMOVE_CONTAINER: &str = "rkers-wins-remove";
/// A privileged step that has not reported back by then is failed (a wins server that does not
/// answer makes the client wait up to five minutes for the pipe).
const STEP_TIMEOUT: Duration = Duration::from_secs(180);

/// The container `up` copies `wins.exe` out of an image with (created, never started).
pub const WINS_SOURCE_CONTAINER: &str = "rkers-wins-source";
/// How long wins gets to stop the processes of removed containers (windows-wins.md §5.2).
pub const WINS_SETTLE: Duration = Duration::from_secs(10);

/// Where rkers installs `wins.exe` on a host (plan form).
pub fn wins_exe_path() -> String {
    format!("{}/wins.exe", plan::WINS_HOST_DIR)
}

/// A Windows worker as `up` found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowsObserved {
    /// The files asked for that exist, by their path relative to the host's root
    /// (`etc/kubernetes/ssl/kube-ca.pem`).
    pub files: BTreeMap<String, Vec<u8>>,
    /// Planned directories that do not exist, in plan form (`c:/etc/kubernetes/ssl`).
    pub missing_directories: Vec<String>,
    pub wins: WinsStatus,
}

/// Runs the host agent (PowerShell over SSH) with `request` and returns its report. Fails with
/// the agent's own message when it reports an error, and names the host and phase.
pub async fn run_host_agent(
    host: &Host,
    phase: &str,
    request: &HostRequest,
) -> Result<HostReport, PhaseError> {
    require_windows(host, phase)?;
    let out = host
        .link()
        .exec_with_input(
            &plan::host_agent_command(),
            plan::HOST_AGENT_NAME,
            &request.encode(),
        )
        .await
        .map_err(|e| host_error(host, phase, e.to_string()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).replace('\r', "");
    let stderr_note = if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", last_lines(&stderr, 3))
    };
    match HostReport::parse(&out.stdout_str()) {
        Ok(report) if out.success() => Ok(report),
        Ok(_) => Err(host_error(
            host,
            phase,
            format!(
                "{} reported success but exited with {:?}{stderr_note}",
                plan::HOST_AGENT_NAME,
                out.exit_status
            ),
        )),
        Err(message) => Err(host_error(
            host,
            phase,
            format!("{}: {message}{stderr_note}", plan::HOST_AGENT_NAME),
        )),
    }
}

fn absolute(root: &str, relative: &str) -> String {
    windows_path(&plan::join_path(&[root, relative]))
}

/// Reads what `up` needs to decide about a Windows worker in one round trip: which of
/// `directories` are missing, the contents of the files at `relative_paths` (under `root`),
/// and the state of wins.
pub async fn observe_host(
    host: &Host,
    root: &str,
    directories: &[String],
    relative_paths: &[String],
) -> Result<WindowsObserved, PhaseError> {
    let by_windows_path: BTreeMap<String, &String> = relative_paths
        .iter()
        .map(|rel| (absolute(root, rel), rel))
        .collect();
    let request = HostRequest {
        mode: Some(AgentMode::Observe),
        directories: directories.iter().map(|d| windows_path(d)).collect(),
        read: by_windows_path.keys().cloned().collect(),
        wins: Some((WinsRequest::Status, windows_path(&wins_exe_path()))),
        ..Default::default()
    };
    let report = run_host_agent(host, "observe windows host", &request).await?;
    Ok(WindowsObserved {
        files: report
            .files
            .into_iter()
            .filter_map(|(path, contents)| {
                by_windows_path
                    .get(&path)
                    .map(|rel| ((*rel).clone(), contents))
            })
            .collect(),
        // In the plan's order, which is the order to create them in.
        missing_directories: directories
            .iter()
            .filter(|d| report.missing_directories.contains(&windows_path(d)))
            .cloned()
            .collect(),
        wins: report.wins.unwrap_or_default(),
    })
}

/// Creates `directories`, writes `files` (relative to `root`, each atomically) and deletes
/// `remove` (relative to `root`), in one round trip.
pub async fn write_host_files(
    host: &Host,
    root: &str,
    directories: &[String],
    files: &[DesiredFile],
    remove: &[String],
) -> Result<HostReport, PhaseError> {
    let request = HostRequest {
        mode: Some(AgentMode::Apply),
        directories: directories.iter().map(|d| windows_path(d)).collect(),
        write: files
            .iter()
            .map(|f| (absolute(root, &f.relative_path), f.contents.clone()))
            .collect(),
        remove: remove.iter().map(|rel| absolute(root, rel)).collect(),
        ..Default::default()
    };
    run_host_agent(host, "write windows files", &request).await
}

/// Copies `wins.exe` out of `image` (which must be on the host) to where the plan runs it.
/// Returns the path it was found at in the image.
pub async fn install_wins(host: &Host, image: &str) -> Result<String, PhaseError> {
    const PHASE: &str = "install wins";
    require_windows(host, PHASE)?;
    let found = host
        .docker()
        .read_image_file(WINS_SOURCE_CONTAINER, image, plan::IMAGE_WINS_PATHS)
        .await
        .map_err(|e| host_error(host, PHASE, e.to_string()))?;
    let Some((source, bytes)) = found else {
        return Err(host_error(
            host,
            PHASE,
            format!(
                "{image} has no wins.exe at {}; set system_images.kubernetes_services_sidecar to a \
                 Windows rke-tools image that carries wins",
                plan::IMAGE_WINS_PATHS.join(", ")
            ),
        ));
    };
    let exe = DesiredFile {
        relative_path: wins_exe_path(),
        contents: bytes,
        mode: 0o755,
    };
    write_host_files(host, "", &[plan::WINS_HOST_DIR.to_string()], &[exe], &[]).await?;
    Ok(source)
}

/// Registers the rancher-wins service when missing and starts it, or restarts it when
/// `restart` (its config changed), then waits for its pipe.
pub async fn start_wins(
    host: &Host,
    restart: bool,
) -> Result<(WinsStatus, Vec<String>), PhaseError> {
    let request = HostRequest {
        mode: Some(AgentMode::Apply),
        wins: Some((
            if restart {
                WinsRequest::Restart
            } else {
                WinsRequest::Ensure
            },
            windows_path(&wins_exe_path()),
        )),
        ..Default::default()
    };
    let report = run_host_agent(host, "start wins", &request).await?;
    let status = report.wins.unwrap_or_default();
    if !status.running() || !status.pipe {
        return Err(host_error(
            host,
            "start wins",
            format!(
                "rancher-wins is {} and its pipe is {}",
                status.service,
                if status.pipe { "there" } else { "missing" }
            ),
        ));
    }
    Ok((status, report.wins_changes))
}

/// What `up` asks of wins on one Windows worker, after its files are written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WinsStep {
    /// Copy `wins.exe` out of this image first.
    pub install_from: Option<String>,
    /// Register and start wins (`false`), or restart it (`true`: its config changed).
    pub start: Option<bool>,
    /// The host's wins-managed containers, in plan order.
    pub containers: Vec<String>,
    /// Containers the worker plane creates or recreates anyway (not started here).
    pub replaced: Vec<String>,
    /// The image privileged steps (the orphan sweep) run in.
    pub sweep_image: String,
    /// How long wins gets to stop the processes of the stopped containers ([`WINS_SETTLE`]).
    pub settle: Duration,
}

/// What [`prepare_host`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WinsPrepared {
    /// Where `wins.exe` was found in the image, when it was installed.
    pub installed_from: Option<String>,
    /// `registered`, `started`, `restarted`, as the host agent reported them.
    pub service_changes: Vec<String>,
    /// Containers stopped for a restart of wins and started again afterwards.
    pub restarted_containers: Vec<String>,
    pub sweep: SweepReport,
}

/// Installs, registers and (re)starts wins on one Windows worker. A restart first stops the
/// wins-managed containers and gives wins [`WINS_SETTLE`] to stop their processes, then
/// restarts the service, sweeps what outlived it and starts the containers again: restarting
/// wins under running processes is what leaves a node in the "Access is denied" loop
/// (windows-wins.md §5.1, §5.3 step 5).
pub async fn prepare_host(host: &Host, step: &WinsStep) -> Result<WinsPrepared, PhaseError> {
    let mut done = WinsPrepared::default();
    if let Some(image) = &step.install_from {
        done.installed_from = Some(install_wins(host, image).await?);
    }
    let Some(restart) = step.start else {
        return Ok(done);
    };
    let started = start_wins_safely(host, restart, step).await?;
    Ok(WinsPrepared {
        installed_from: done.installed_from,
        ..started
    })
}

/// Registers and starts wins, or restarts it (`restart`) the safe way: the running containers
/// of `step` stop first, wins gets [`WinsStep::settle`] to stop their processes, and after the
/// restart what outlived it is swept and the containers not replaced start again.
pub async fn start_wins_safely(
    host: &Host,
    restart: bool,
    step: &WinsStep,
) -> Result<WinsPrepared, PhaseError> {
    const PHASE: &str = "wins";
    let mut done = WinsPrepared::default();
    let docker = host.docker();
    let err = |e: crate::hosts::HostError| host_error(host, PHASE, e.to_string());
    let mut stopped = Vec::new();
    if restart {
        for name in &step.containers {
            if docker
                .inspect_container(name)
                .await
                .map_err(err)?
                .is_some_and(|c| c.running)
            {
                docker.stop_container(name).await.map_err(err)?;
                stopped.push(name.clone());
            }
        }
        if !stopped.is_empty() {
            tokio::time::sleep(step.settle).await;
        }
    }
    let (_, changes) = start_wins(host, restart).await?;
    done.service_changes = changes;
    if !stopped.is_empty() {
        done.sweep = sweep_orphans(host, &step.sweep_image).await?;
        for name in stopped.iter().filter(|n| !step.replaced.contains(n)) {
            docker.start_container(name).await.map_err(err)?;
            done.restarted_containers.push(name.clone());
        }
    }
    Ok(done)
}

/// What the orphan sweep found and did on one host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Names of the `rancher-wins-*` host processes it stopped (they had outlived the wins
    /// server that started them).
    pub stopped: Vec<String>,
}

/// Stops wins-managed host processes that outlived the wins server which started them, removes
/// their firewall rules and leftover renamed binaries (windows-wins.md §5.3), so the next
/// `wins cli prc run` does not fail with "could not rename binary … Access is denied".
/// `image` is the Windows image that carries PowerShell 7 (the sidekick's, rke-tools).
pub async fn sweep_orphans(host: &Host, image: &str) -> Result<SweepReport, PhaseError> {
    let output = run_privileged_step(
        host,
        "wins orphan sweep",
        SWEEP_CONTAINER,
        image,
        &plan::orphan_cleanup_command(),
    )
    .await?;
    parse_sweep(&output).ok_or_else(|| {
        host_error(
            host,
            "wins orphan sweep",
            format!(
                "the sweep finished without its report line; output: {}",
                last_lines(&output, 5)
            ),
        )
    })
}

/// The Windows part of `remove` for one host, in order: force-remove the plan's containers (which
/// ends their wins streams, so wins stops their host processes), wait `settle_seconds`, then, as
/// a privileged step, stop every remaining `rancher-wins-*` process, remove wins' firewall
/// rules, the HNS network and the directories the plan wrote (and unregister wins when the plan
/// says so). `image` as for [`sweep_orphans`].
pub async fn remove_windows_host(
    host: &Host,
    plan: &WindowsRemovePlan,
    image: &str,
) -> Result<(), PhaseError> {
    const PHASE: &str = "remove windows host";
    require_windows(host, PHASE)?;
    for name in plan
        .containers
        .iter()
        .map(String::as_str)
        .chain([SWEEP_CONTAINER, REMOVE_CONTAINER])
    {
        host.docker()
            .remove_container(name)
            .await
            .map_err(|e| host_error(host, PHASE, e.to_string()))?;
    }
    if plan.settle_seconds > 0 {
        tokio::time::sleep(Duration::from_secs(plan.settle_seconds.into())).await;
    }
    run_privileged_step(host, PHASE, REMOVE_CONTAINER, image, &plan.host_script).await?;
    Ok(())
}

/// Runs `script` (PowerShell) on a Windows host with host privileges through wins and returns
/// its output (stdout and stderr as the container logged them, without the completion marker).
/// Fails when the container fails or the script did not reach its end.
pub async fn run_privileged_step(
    host: &Host,
    phase: &str,
    container: &str,
    image: &str,
    script: &str,
) -> Result<String, PhaseError> {
    require_windows(host, phase)?;
    let spec = docker_spec(&plan::windows_privileged_step(container, image, script));
    let result = host
        .docker()
        .run_one_shot(container, &spec, STEP_TIMEOUT)
        .await
        .map_err(|e| host_error(host, phase, e.to_string()))?;
    let logs = result.logs.replace('\r', "");
    let done = logs.lines().any(|l| l.trim() == plan::STEP_DONE_MARKER);
    if result.exit_code != 0 || !done {
        let hint = wins_failure_hint(&logs)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        return Err(host_error(
            host,
            phase,
            format!(
                "privileged step {container} exited with {} without finishing{hint}; last output: {}",
                result.exit_code,
                last_lines(&logs, 5)
            ),
        ));
    }
    Ok(logs
        .lines()
        .filter(|l| l.trim() != plan::STEP_DONE_MARKER)
        .collect::<Vec<_>>()
        .join("\n"))
}

fn require_windows(host: &Host, phase: &str) -> Result<(), PhaseError> {
    if host.platform().runs_under_wins() {
        Ok(())
    } else {
        Err(host_error(
            host,
            phase,
            format!(
                "is a {} host; this step exists only for Windows hosts",
                host.facts().os_type
            ),
        ))
    }
}

/// What a wins client error in the step's output means (windows-wins.md §5.1).
fn wins_failure_hint(logs: &str) -> Option<&'static str> {
    if logs.contains("invalid path") {
        Some(
            "wins refused the executable: its white_list.processPaths lacks c:\\etc\\rancher\\wins\\powershell.exe; rewrite the wins config and restart the rancher-wins service",
        )
    } else if logs.contains("could not rename binary") {
        Some(
            "an earlier wins-started PowerShell still runs; wait for it or stop rancher-wins-powershell",
        )
    } else if logs.contains("could not found binary") || logs.contains("checksum") {
        Some("the staged powershell.exe differs between the container and the host")
    } else if logs.contains("Unavailable") || logs.contains("rancher_wins") {
        Some(
            "the wins server does not answer on \\\\.\\pipe\\rancher_wins: is the rancher-wins service running?",
        )
    } else {
        None
    }
}

#[derive(Deserialize)]
struct SweepLine {
    stopped: StringOrList,
}

/// PowerShell's `ConvertTo-Json` writes a one-element array as a bare string on some versions.
#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrList {
    One(String),
    Many(Vec<String>),
    Null,
}

fn parse_sweep(output: &str) -> Option<SweepReport> {
    output.lines().rev().find_map(|line| {
        let parsed: SweepLine = serde_json::from_str(line.trim()).ok()?;
        Some(SweepReport {
            stopped: match parsed.stopped {
                StringOrList::One(s) => vec![s],
                StringOrList::Many(v) => v,
                StringOrList::Null => Vec::new(),
            },
        })
    })
}

/// The last `n` lines of `text` on one line, for an error message.
fn last_lines(text: &str, n: usize) -> String {
    crate::output::last_lines(text, n).join(" | ")
}

fn host_error(host: &Host, phase: &str, message: String) -> PhaseError {
    PhaseError::Host {
        phase: phase.to_owned(),
        host: host.name().to_owned(),
        message,
    }
}

/// The plan's container as Docker is asked to create it (a one-shot: no restart policy).
fn docker_spec(spec: &plan::ContainerSpec) -> ContainerSpec {
    ContainerSpec {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        user: spec.user.clone(),
        labels: spec.labels.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_report_lines_parse_in_every_shape() {
        let out = "noise\n{\"stopped\":[\"rancher-wins-kubelet\",\"rancher-wins-ngin\"]}";
        assert_eq!(
            parse_sweep(out).unwrap().stopped,
            vec!["rancher-wins-kubelet", "rancher-wins-ngin"]
        );
        assert_eq!(
            parse_sweep("{\"stopped\":\"rancher-wins-kubelet\"}")
                .unwrap()
                .stopped,
            vec!["rancher-wins-kubelet"]
        );
        assert!(
            parse_sweep("{\"stopped\":null}")
                .unwrap()
                .stopped
                .is_empty()
        );
        assert!(parse_sweep("{\"stopped\":[]}").unwrap().stopped.is_empty());
        assert!(parse_sweep("rpc error").is_none());
    }

    #[test]
    fn wins_errors_get_a_hint() {
        assert!(
            wins_failure_hint("rpc error: code = InvalidArgument desc = invalid path")
                .unwrap()
                .contains("processPaths")
        );
        assert!(wins_failure_hint("all fine").is_none());
    }
}
