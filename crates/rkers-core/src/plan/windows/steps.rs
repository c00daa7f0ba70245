//! Windows steps that are not containers of the cluster: the orphan sweep, privileged steps run
//! through wins, and what `remove` does on a Windows host.

use super::*;

/// PowerShell that stops wins-managed host processes which outlived their wins server (windows-wins.md
/// §5.3): a `rancher-wins-*` process is an orphan when it started before the running
/// `rancher-wins` service process, or when no wins server runs at all; it then removes the
/// ActiveStore firewall rules of the stopped processes and the leftover renamed binaries, so the
/// next start does not fail with "could not rename binary … Access is denied". Prints one JSON
/// line `{"stopped":[names…]}`. Run it before (re)creating any wins-managed container.
pub fn orphan_cleanup_command() -> String {
    let dirs = [r"c:\etc\kubernetes\bin", r"c:\etc\nginx", r"c:\opt\bin"]
        .iter()
        .map(|d| ps_quote(d))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "$ErrorActionPreference = 'Stop'\n\
         $service = Get-CimInstance Win32_Service -Filter \"Name='{WINS_SERVICE_NAME}'\"\n\
         $serverStart = $null\n\
         if ($service -and $service.ProcessId -ne 0) {{\n    \
         $serverStart = (Get-Process -Id $service.ProcessId -ErrorAction SilentlyContinue).StartTime\n\
         }}\n\
         $stopped = @()\n\
         foreach ($p in @(Get-Process -Name '{WINS_PROCESS_PREFIX}*' -ErrorAction SilentlyContinue)) {{\n    \
         if ($p.Id -ne $PID -and ($null -eq $serverStart -or $p.StartTime -lt $serverStart)) {{\n        \
         Stop-Process -Id $p.Id -Force -ErrorAction SilentlyContinue\n        \
         if (Get-Process -Id $p.Id -ErrorAction SilentlyContinue) {{ & taskkill.exe /T /F /PID $p.Id | Out-Null }}\n        \
         Get-NetFirewallRule -PolicyStore ActiveStore -Name \"$($p.Name)-*\" -ErrorAction SilentlyContinue | Remove-NetFirewallRule\n        \
         $stopped += $p.Name\n    \
         }}\n\
         }}\n\
         foreach ($dir in @({dirs})) {{\n    \
         foreach ($f in @(Get-ChildItem -Path $dir -Filter '{WINS_PROCESS_PREFIX}*.exe' -ErrorAction SilentlyContinue)) {{\n        \
         if (-not (Get-Process -Name $f.BaseName -ErrorAction SilentlyContinue)) {{ Remove-Item -Force $f.FullName -ErrorAction SilentlyContinue }}\n    \
         }}\n\
         }}\n\
         @{{ stopped = $stopped }} | ConvertTo-Json -Compress\n"
    )
}

/// Host PowerShell as privileged steps read it (through a read-only bind).
const HOST_POWERSHELL_DIR: &str = "c:/Windows/System32/WindowsPowerShell/v1.0";
/// The copy of `powershell.exe` wins starts for privileged steps. It lives in the wins directory,
/// which the step container binds at the same path, so wins' checksum handshake compares one
/// file with itself; wins renames it away on every start, so each step stages it again.
pub const STEP_POWERSHELL: &str = r"c:\etc\rancher\wins\powershell.exe";
/// The line a privileged step prints last: `wins cli prc run` exits 0 whatever the host process
/// did, so this marker is the only proof the script ran to its end.
pub const STEP_DONE_MARKER: &str = "rkers-privileged-step-done";

/// The container that runs `script` (PowerShell) on a Windows host with host privileges: it
/// mounts the wins pipe and has wins start the host's own PowerShell, `-EncodedCommand`, as
/// LocalSystem; the script's output comes back as the container's logs. This is how every
/// privileged Windows step is run (Linux steps run in privileged containers instead).
pub fn windows_privileged_step(name: &str, image: &str, script: &str) -> ContainerSpec {
    let mut host_script = String::from(script);
    if !host_script.ends_with('\n') {
        host_script.push('\n');
    }
    host_script.push_str(&format!("Write-Output '{STEP_DONE_MARKER}'\n"));
    let host_args = format!(
        "-NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand {}",
        encode_powershell(&host_script)
    );
    let wins_dir = WINS_HOST_DIR;
    let mut launcher = String::from(SCRIPT_PREAMBLE);
    launcher.push_str(&stage_file(
        r"c:\host\powershell\powershell.exe",
        STEP_POWERSHELL,
    ));
    launcher.push_str(&format!(
        "& {} cli prc run --path {} --args {}\nexit $LASTEXITCODE\n",
        ps_quote(&win(&format!("{wins_dir}/wins.exe"))),
        ps_quote(STEP_POWERSHELL),
        ps_quote(&host_args)
    ));
    let mut spec = windows_container(
        name,
        image,
        &launcher,
        Vec::new(),
        vec![
            WINS_PIPE_BIND.into(),
            format!("{wins_dir}:{wins_dir}"),
            format!("{HOST_POWERSHELL_DIR}:c:/host/powershell:ro"),
        ],
        false,
    );
    spec.restart_policy = None;
    spec.labels.clear();
    spec
}

/// What `remove` does on a Windows host, in order (windows-wins.md §5.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowsRemovePlan {
    /// Containers to force-remove first (killing a container ends its wins KeepAlive stream, so
    /// wins stops the host process).
    pub containers: Vec<String>,
    /// Seconds to wait for wins to stop the processes before sweeping.
    pub settle_seconds: u32,
    /// PowerShell to run after that: force-stop every `rancher-wins-*` process, remove their
    /// ActiveStore firewall rules, delete the HNS network, the directories the plan wrote, and
    /// optionally unregister the wins service.
    pub host_script: String,
    /// The directories the script deletes (Windows form, `c:\etc\kubernetes`).
    pub directories: Vec<String>,
    /// Whether the script also unregisters the rancher-wins service and deletes its directory.
    pub unregister_wins: bool,
}

/// The `remove` steps of a Windows worker. `unregister_wins` also stops and deletes the wins
/// service (leave it when wins was installed by someone else).
pub fn remove_plan_windows(prefix: &str, unregister_wins: bool) -> WindowsRemovePlan {
    let dirs: Vec<String> = [
        "/etc/kubernetes",
        "/etc/cni",
        "/etc/kube-flannel",
        "/etc/nginx",
        "/opt/bin",
        "/opt/cni",
        "/var/lib/cni",
        "/var/lib/kubelet",
        "/var/log/containers",
        "/var/log/pods",
        "/run",
    ]
    .iter()
    .map(|d| win(&join_path(&[prefix, d])))
    .collect();
    let mut script = format!(
        "$ErrorActionPreference = 'Continue'\n\
         Get-Process -Name '{WINS_PROCESS_PREFIX}*' -ErrorAction SilentlyContinue | Where-Object {{ $_.Id -ne $PID }} | Stop-Process -Force\n\
         Get-NetFirewallRule -PolicyStore ActiveStore -Name '{WINS_PROCESS_PREFIX}*' -ErrorAction SilentlyContinue | Remove-NetFirewallRule\n\
         Get-HnsNetwork -ErrorAction SilentlyContinue | Where-Object {{ $_.Name -in @('{OVERLAY_NETWORK_NAME}', 'cbr0') }} | Remove-HnsNetwork\n\
         foreach ($dir in @({})) {{\n    \
         for ($i = 0; $i -lt 5 -and (Test-Path $dir); $i++) {{\n        \
         Remove-Item -Recurse -Force $dir -ErrorAction SilentlyContinue\n        \
         if (Test-Path $dir) {{ Start-Sleep -Seconds 2 }}\n    \
         }}\n\
         }}\n",
        dirs.iter()
            .map(|d| ps_quote(d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if unregister_wins {
        // This script itself runs under wins (a privileged step): stopping the service here
        // would cut its output stream before it reports success, so the unregistering is
        // handed to a detached PowerShell that waits a little first.
        let wins_exe = win(&join_path(&[prefix, "/etc/rancher/wins/wins.exe"]));
        // `up` installed wins, so its directory goes too once the service is gone.
        let wins_dir = win(&join_path(&[prefix, "/etc/rancher/wins"]));
        let later = format!(
            "Start-Sleep -Seconds 5\n\
             Stop-Service -Name '{WINS_SERVICE_NAME}' -ErrorAction SilentlyContinue\n\
             & {} srv app run --unregister\n\
             Start-Sleep -Seconds 2\n\
             Remove-Item -Recurse -Force {} -ErrorAction SilentlyContinue\n",
            ps_quote(&wins_exe),
            ps_quote(&wins_dir)
        );
        script.push_str(&format!(
            "Start-Process -WindowStyle Hidden -FilePath 'powershell.exe' -ArgumentList \
             '-NoProfile', '-NonInteractive', '-EncodedCommand', '{}'\n",
            encode_powershell(&later)
        ));
    }
    WindowsRemovePlan {
        containers: vec![
            KUBE_PROXY.into(),
            KUBELET.into(),
            NGINX_PROXY.into(),
            SERVICE_SIDEKICK.into(),
        ],
        settle_seconds: 10,
        host_script: script,
        directories: dirs,
        unregister_wins,
    }
}
