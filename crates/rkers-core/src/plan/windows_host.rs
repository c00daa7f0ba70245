//! The host-level work on a Windows worker that runs before wins exists, or that wins is for
//! (windows-wins.md §6, "host-level prerequisites, done over SSH"): creating the directories,
//! reading and writing the plan's files (certificates, kubeconfigs, CNI, flannel, nginx and wins
//! config), and registering, starting or restarting the rancher-wins service. One PowerShell
//! script, the host agent, does all of it; rkers runs it over an SSH exec channel and talks to
//! it through a line protocol on stdin and stdout. This module renders the script and the
//! protocol; `phases::windows` runs it. No I/O happens here.
//!
//! Why a line protocol and not JSON: Windows PowerShell 5.1's `ConvertFrom-Json` refuses input
//! over about 2 MB, and `wins.exe` alone is larger once encoded. Every free-text field (paths,
//! contents, messages) travels base64-encoded, so no quoting rule of cmd.exe, PowerShell or
//! Win32-OpenSSH can touch it, and file contents never appear on a command line.
//!
//! Request (stdin), one record per line, fields separated by one space:
//! `observe` | `apply` (first), `dir <path>`, `read <path>`, `write <path> <content> [private]`,
//! `remove <path>`, `wins status|ensure|restart <wins.exe path>`, `end` (last: a request cut
//! short is refused).
//! Report (stdout): `missing-dir <path>` (observe) or `created-dir <path>` (apply),
//! `file <path> <content>`, `wrote <path>`, `removed <path>`,
//! `wins exe=<0|1> service=<missing|running|stopped|…> pipe=<0|1>`, `wins-registered`,
//! `wins-started`, `wins-restarted`, then `done`; or `error <message>` and exit code 1.
//!
//! A `private` file gets a protected ACL (SYSTEM and Administrators only) before its contents
//! are written: files created under `c:\` inherit read access for every local user, and a
//! private key must not be readable by them. Only secrets are so marked ([`is_private_file`]):
//! the host processes wins starts run as LocalSystem, but what else reads the configuration
//! files (container processes among them) cannot be checked without a Windows host.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::windows::{WINS_SERVICE_NAME, encode_powershell};

/// The first line of the agent script; test doubles recognise the agent by it.
pub const HOST_AGENT_TAG: &str = "# rkers windows host agent, protocol 1";
/// How errors and progress name the agent (its command line is an unreadable encoded script).
pub const HOST_AGENT_NAME: &str = "windows host agent (powershell.exe over SSH)";
/// Where `wins.exe` may sit in the image rkers copies it from, tried in this order: rke-tools'
/// Windows images and rancher/wins put it on the PATH in `c:\Windows` (windows-wins.md §3.4,
/// the wins Dockerfile); older rke-tools kept it with the other tools.
pub const IMAGE_WINS_PATHS: &[&str] = &[
    r"C:\Windows\wins.exe",
    r"C:\opt\rke-tools\bin\wins.exe",
    r"C:\wins.exe",
];

/// Whether the agent only looks or also changes the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentMode {
    Observe,
    Apply,
}

/// What the agent does with the rancher-wins service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinsRequest {
    /// Report the service and pipe state only.
    Status,
    /// Register the service when missing, start it when stopped, wait for its pipe.
    Ensure,
    /// As `Ensure`, and restart it when it was running (its config changed).
    Restart,
}

/// One run of the host agent. Paths are Windows paths (`c:\etc\...`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HostRequest {
    pub mode: Option<AgentMode>,
    pub directories: Vec<String>,
    pub read: Vec<String>,
    /// Files to write; those `is_private_file` names are marked `private`.
    pub write: Vec<(String, Vec<u8>)>,
    pub remove: Vec<String>,
    /// The request and the `wins.exe` path on the host.
    pub wins: Option<(WinsRequest, String)>,
}

impl std::fmt::Debug for HostRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Written contents are keys and certificates: only their paths and sizes are shown.
        let writes: Vec<String> = self
            .write
            .iter()
            .map(|(p, c)| format!("{p} ({} bytes)", c.len()))
            .collect();
        f.debug_struct("HostRequest")
            .field("mode", &self.mode)
            .field("directories", &self.directories)
            .field("read", &self.read)
            .field("write", &writes)
            .field("remove", &self.remove)
            .field("wins", &self.wins)
            .finish()
    }
}

fn b64(text: &[u8]) -> String {
    STANDARD.encode(text)
}

impl HostRequest {
    /// The stdin of the agent.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::new();
        out.push_str(match self.mode.unwrap_or(AgentMode::Observe) {
            AgentMode::Observe => "observe\n",
            AgentMode::Apply => "apply\n",
        });
        for d in &self.directories {
            out.push_str(&format!("dir {}\n", b64(d.as_bytes())));
        }
        for p in &self.read {
            out.push_str(&format!("read {}\n", b64(p.as_bytes())));
        }
        for (p, contents) in &self.write {
            let private = if is_private_file(p) { " private" } else { "" };
            out.push_str(&format!(
                "write {} {}{private}\n",
                b64(p.as_bytes()),
                b64(contents)
            ));
        }
        for p in &self.remove {
            out.push_str(&format!("remove {}\n", b64(p.as_bytes())));
        }
        if let Some((request, exe)) = &self.wins {
            let verb = match request {
                WinsRequest::Status => "status",
                WinsRequest::Ensure => "ensure",
                WinsRequest::Restart => "restart",
            };
            out.push_str(&format!("wins {verb} {}\n", b64(exe.as_bytes())));
        }
        out.push_str("end\n");
        out.into_bytes()
    }
}

/// The rancher-wins service as the agent found it (after its changes, in apply mode).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WinsStatus {
    /// `wins.exe` is where the plan expects it.
    pub exe_present: bool,
    /// `missing`, or the service status lower-cased (`running`, `stopped`, `startpending`...).
    pub service: String,
    /// `\\.\pipe\rancher_wins` exists, i.e. the server is listening.
    pub pipe: bool,
}

impl WinsStatus {
    pub fn registered(&self) -> bool {
        !self.service.is_empty() && self.service != "missing"
    }
    pub fn running(&self) -> bool {
        self.service == "running"
    }
}

/// What the agent reported.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HostReport {
    /// Contents of the files asked for that exist, by the path as asked.
    pub files: BTreeMap<String, Vec<u8>>,
    pub missing_directories: Vec<String>,
    pub created_directories: Vec<String>,
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub wins: Option<WinsStatus>,
    /// `registered`, `started`, `restarted`, in the order they happened.
    pub wins_changes: Vec<String>,
}

impl std::fmt::Debug for HostReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostReport")
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .field("missing_directories", &self.missing_directories)
            .field("created_directories", &self.created_directories)
            .field("written", &self.written)
            .field("removed", &self.removed)
            .field("wins", &self.wins)
            .field("wins_changes", &self.wins_changes)
            .finish()
    }
}

/// Why the agent's report was not one: the agent failed, stopped early, or wrote something
/// the report's format does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The agent's own error message.
    #[error("{0}")]
    Agent(String),
    #[error("the agent stopped before reporting `done`")]
    NotDone,
    #[error("report line {line}: {problem}")]
    Malformed { line: usize, problem: String },
}

fn malformed(line: usize, problem: impl Into<String>) -> ReportError {
    ReportError::Malformed {
        line,
        problem: problem.into(),
    }
}

fn decode_field(field: Option<&str>, line: usize) -> Result<Vec<u8>, ReportError> {
    let field = field.ok_or_else(|| malformed(line, "a field is missing"))?;
    STANDARD
        .decode(field.trim())
        .map_err(|e| malformed(line, format!("not base64: {e}")))
}

fn decode_text(field: Option<&str>, line: usize) -> Result<String, ReportError> {
    String::from_utf8(decode_field(field, line)?)
        .map_err(|_| malformed(line, "a path is not UTF-8"))
}

impl HostReport {
    /// Parses the agent's stdout. Fails on an `error` line (with the agent's message), on a
    /// report without its final `done`, and on anything it cannot read.
    pub fn parse(stdout: &str) -> Result<HostReport, ReportError> {
        let mut report = HostReport::default();
        let mut done = false;
        for (index, raw) in stdout.lines().enumerate() {
            let n = index + 1;
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let mut fields = line.split(' ');
            let kind = fields.next().unwrap_or_default();
            match kind {
                "file" => {
                    let path = decode_text(fields.next(), n)?;
                    let contents = decode_field(Some(fields.next().unwrap_or("")), n)?;
                    report.files.insert(path, contents);
                }
                "missing-dir" => report
                    .missing_directories
                    .push(decode_text(fields.next(), n)?),
                "created-dir" => report
                    .created_directories
                    .push(decode_text(fields.next(), n)?),
                "wrote" => report.written.push(decode_text(fields.next(), n)?),
                "removed" => report.removed.push(decode_text(fields.next(), n)?),
                "wins" => {
                    let mut status = WinsStatus::default();
                    for pair in fields {
                        match pair.split_once('=') {
                            Some(("exe", v)) => status.exe_present = v == "1",
                            Some(("service", v)) => status.service = v.to_string(),
                            Some(("pipe", v)) => status.pipe = v == "1",
                            _ => {
                                return Err(malformed(n, format!("unknown wins field {pair:?}")));
                            }
                        }
                    }
                    report.wins = Some(status);
                }
                "wins-registered" | "wins-started" | "wins-restarted" => report
                    .wins_changes
                    .push(kind.trim_start_matches("wins-").to_string()),
                "error" => {
                    let message = decode_text(fields.next(), n)
                        .unwrap_or_else(|_| "(unreadable message)".into());
                    return Err(ReportError::Agent(message));
                }
                "done" => done = true,
                // PowerShell may print warnings of its own; they are not part of the report.
                _ => {}
            }
        }
        if !done {
            return Err(ReportError::NotDone);
        }
        Ok(report)
    }
}

/// Whether a file of a Windows worker holds a secret (a private key, registry credentials, the
/// cloud provider's config), so that only SYSTEM and Administrators may read it. `path` in plan
/// or Windows form.
pub fn is_private_file(path: &str) -> bool {
    let path = path.replace('\\', "/").to_ascii_lowercase();
    let name = path.rsplit('/').next().unwrap_or_default();
    name.ends_with("-key.pem")
        || name == "cloud-config"
        || path.ends_with("var/lib/kubelet/config.json")
}

/// The agent script (Windows PowerShell 5.1 and PowerShell 7).
pub fn host_agent_script() -> String {
    let service = WINS_SERVICE_NAME;
    format!(
        r#"{HOST_AGENT_TAG}
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
function Dec([string]$s) {{ [Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($s)) }}
function Enc([string]$s) {{ [Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes($s)) }}
function Protect([string]$p) {{
    $acl = New-Object System.Security.AccessControl.FileSecurity
    $acl.SetAccessRuleProtection($true, $false)
    foreach ($sid in 'S-1-5-18', 'S-1-5-32-544') {{
        $id = New-Object System.Security.Principal.SecurityIdentifier($sid)
        $acl.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($id, 'FullControl', 'Allow')))
    }}
    Set-Acl -LiteralPath $p -AclObject $acl
}}
$report = New-Object System.Collections.Generic.List[string]
$mode = $null
$wins = $null
$complete = $false
try {{
    $stdin = [Console]::In
    while ($null -ne ($line = $stdin.ReadLine())) {{
        $f = $line.TrimEnd("`r").Split(' ')
        if ($f[0] -eq 'observe' -or $f[0] -eq 'apply') {{ $mode = $f[0]; continue }}
        if ($null -eq $mode) {{ throw 'the request does not start with observe or apply' }}
        if ($f[0] -eq 'end') {{ $complete = $true; continue }}
        if ($f[0] -eq 'dir') {{
            $p = Dec $f[1]
            if (-not (Test-Path -LiteralPath $p -PathType Container)) {{
                if ($mode -eq 'apply') {{
                    New-Item -ItemType Directory -Force -Path $p | Out-Null
                    $report.Add("created-dir $($f[1])")
                }} else {{
                    $report.Add("missing-dir $($f[1])")
                }}
            }}
        }} elseif ($f[0] -eq 'read') {{
            $p = Dec $f[1]
            if (Test-Path -LiteralPath $p -PathType Leaf) {{
                $report.Add("file $($f[1]) " + [Convert]::ToBase64String([IO.File]::ReadAllBytes($p)))
            }}
        }} elseif ($f[0] -eq 'write') {{
            if ($mode -ne 'apply') {{ throw 'write in an observe request' }}
            $p = Dec $f[1]
            $parent = Split-Path -Parent $p
            if (-not (Test-Path -LiteralPath $parent -PathType Container)) {{
                New-Item -ItemType Directory -Force -Path $parent | Out-Null
            }}
            $tmp = "$p.rkers-tmp"
            if ($f.Length -gt 3) {{
                if ($f[3] -ne 'private') {{ throw "unknown write flag '$($f[3])'" }}
                # Empty and protected first, so the contents are never readable by others.
                [IO.File]::WriteAllBytes($tmp, [byte[]]@())
                Protect $tmp
            }}
            [IO.File]::WriteAllBytes($tmp, [Convert]::FromBase64String($f[2]))
            Move-Item -LiteralPath $tmp -Destination $p -Force
            $report.Add("wrote $($f[1])")
        }} elseif ($f[0] -eq 'remove') {{
            if ($mode -ne 'apply') {{ throw 'remove in an observe request' }}
            $p = Dec $f[1]
            if (Test-Path -LiteralPath $p -PathType Leaf) {{
                Remove-Item -LiteralPath $p -Force
                $report.Add("removed $($f[1])")
            }}
        }} elseif ($f[0] -eq 'wins') {{
            $wins = @{{ action = $f[1]; exe = (Dec $f[2]) }}
        }} else {{
            throw "unknown request line '$($f[0])'"
        }}
    }}
    if (-not $complete) {{ throw 'the request ended before its end line' }}
    if ($wins) {{
        $exePresent = Test-Path -LiteralPath $wins.exe -PathType Leaf
        $svc = Get-Service -Name '{service}' -ErrorAction SilentlyContinue
        if ($mode -eq 'apply' -and $wins.action -ne 'status') {{
            if (-not $exePresent) {{ throw "wins.exe is not at $($wins.exe)" }}
            $wasRunning = $svc -and $svc.Status -eq 'Running'
            if (-not $svc) {{
                $registered = & $wins.exe srv app run --register 2>&1
                if ($LASTEXITCODE -ne 0) {{ throw "wins.exe srv app run --register exited with ${{LASTEXITCODE}}: $registered" }}
                $report.Add('wins-registered')
            }}
            Set-Service -Name '{service}' -StartupType Automatic
            if ($wins.action -eq 'restart' -and $wasRunning) {{
                Restart-Service -Name '{service}' -Force
                $report.Add('wins-restarted')
            }} elseif (-not $wasRunning) {{
                Start-Service -Name '{service}'
                $report.Add('wins-started')
            }}
            $deadline = (Get-Date).AddSeconds(30)
            while (-not (Test-Path -LiteralPath '\\.\pipe\rancher_wins') -and (Get-Date) -lt $deadline) {{
                Start-Sleep -Milliseconds 500
            }}
            if (-not (Test-Path -LiteralPath '\\.\pipe\rancher_wins')) {{ throw 'rancher-wins runs but its pipe \\.\pipe\rancher_wins did not appear within 30 s' }}
            $svc = Get-Service -Name '{service}'
        }}
        $state = 'missing'
        if ($svc) {{ $state = $svc.Status.ToString().ToLowerInvariant() }}
        $pipe = 0
        if (Test-Path -LiteralPath '\\.\pipe\rancher_wins') {{ $pipe = 1 }}
        $report.Add("wins exe=$([int]$exePresent) service=$state pipe=$pipe")
    }}
    foreach ($l in $report) {{ [Console]::Out.WriteLine($l) }}
    [Console]::Out.WriteLine('done')
    exit 0
}} catch {{
    [Console]::Out.WriteLine('error ' + (Enc $_.Exception.Message))
    exit 1
}}
"#
    )
}

/// The command line that starts the agent: the host's Windows PowerShell (present on every
/// Windows Server, unlike `pwsh`), the script as `-EncodedCommand` so neither cmd.exe nor a
/// PowerShell login shell (Win32-OpenSSH's `DefaultShell`) re-parses it.
pub fn host_agent_command() -> String {
    format!(
        "powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand {}",
        encode_powershell(&host_agent_script())
    )
}

/// A plan path (`c:/etc/kubernetes/ssl/kube-ca.pem`) as Windows writes it.
pub fn windows_path(path: &str) -> String {
    path.replace('/', "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_carry_every_free_text_field_in_base64() {
        let request = HostRequest {
            mode: Some(AgentMode::Apply),
            directories: vec![r"c:\etc\kubernetes\ssl".into()],
            read: vec![r"c:\etc\rancher\wins\config".into()],
            write: vec![
                (
                    r"c:\etc\a b.pem".into(),
                    b"line 1\nline 2 with spaces".to_vec(),
                ),
                (r"c:\etc\a-key.pem".into(), b"secret".to_vec()),
            ],
            remove: vec![r"c:\etc\kubernetes\cloud-config".into()],
            wins: Some((WinsRequest::Restart, r"c:\etc\rancher\wins\wins.exe".into())),
        };
        let text = String::from_utf8(request.encode()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "apply");
        assert_eq!(lines.last(), Some(&"end"));
        for line in &lines {
            // Records split on single spaces: a field may not contain one.
            let fields: Vec<&str> = line.split(' ').collect();
            let expected = match fields[0] {
                "apply" | "end" => 1,
                "dir" | "read" | "remove" => 2,
                "write" if line.ends_with(" private") => 4,
                "write" | "wins" => 3,
                other => panic!("unexpected record {other}"),
            };
            assert_eq!(fields.len(), expected, "{line}");
        }
        let write: Vec<&str> = lines[3].split(' ').collect();
        assert_eq!(STANDARD.decode(write[1]).unwrap(), br"c:\etc\a b.pem");
        assert_eq!(
            STANDARD.decode(write[2]).unwrap(),
            b"line 1\nline 2 with spaces"
        );
        // Only the key is marked private.
        assert!(!lines[3].ends_with(" private"), "{}", lines[3]);
        assert!(lines[4].ends_with(" private"), "{}", lines[4]);
        assert!(lines[6].starts_with("wins restart "));
        // Debug output never shows contents.
        assert!(!format!("{request:?}").contains("line 2"));
    }

    #[test]
    fn only_secrets_are_private() {
        for path in [
            "c:/etc/kubernetes/ssl/kube-node-key.pem",
            r"c:\etc\kubernetes\ssl\kube-proxy-key.pem",
            "c:/etc/kubernetes/cloud-config",
            "c:/var/lib/kubelet/config.json",
        ] {
            assert!(is_private_file(path), "{path}");
        }
        for path in [
            "c:/etc/kubernetes/ssl/kube-node.pem",
            "c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml",
            "c:/etc/cni/net.d/10-flannel.conflist",
            "c:/etc/rancher/wins/config",
            "c:/etc/nginx/conf/nginx.conf",
            "c:/etc/rancher/wins/wins.exe",
        ] {
            assert!(!is_private_file(path), "{path}");
        }
    }

    #[test]
    fn report_parsing_reads_every_record_and_requires_done() {
        let path = b64(br"c:\etc\kubernetes\ssl\kube-ca.pem");
        let stdout = format!(
            "WARNING: something PowerShell said\r\nmissing-dir {d}\r\nfile {path} {c}\r\nwrote {path}\r\n\
             wins-registered\r\nwins-started\r\nwins exe=1 service=running pipe=1\r\ndone\r\n",
            d = b64(br"c:\run"),
            c = b64(b"PEM")
        );
        let report = HostReport::parse(&stdout).unwrap();
        assert_eq!(report.missing_directories, vec![r"c:\run".to_string()]);
        assert_eq!(
            report.files[r"c:\etc\kubernetes\ssl\kube-ca.pem"],
            b"PEM".to_vec()
        );
        assert_eq!(report.written.len(), 1);
        assert_eq!(report.wins_changes, vec!["registered", "started"]);
        let wins = report.wins.unwrap();
        assert!(wins.exe_present && wins.running() && wins.registered() && wins.pipe);

        let empty_file = format!("file {path} \ndone\n");
        assert_eq!(
            HostReport::parse(&empty_file).unwrap().files[r"c:\etc\kubernetes\ssl\kube-ca.pem"],
            Vec::<u8>::new()
        );

        let cut = stdout.replace("done\r\n", "");
        assert!(
            HostReport::parse(&cut)
                .unwrap_err()
                .to_string()
                .contains("done")
        );
        let failed = format!(
            "wrote {path}\nerror {}\n",
            b64(b"Access to the path is denied.")
        );
        assert_eq!(
            HostReport::parse(&failed).unwrap_err().to_string(),
            "Access to the path is denied."
        );
        assert!(HostReport::parse("file !!! x\ndone\n").is_err());
    }

    #[test]
    fn the_agent_reads_its_request_from_stdin_and_fits_a_command_line() {
        let script = host_agent_script();
        assert!(script.starts_with(HOST_AGENT_TAG));
        assert!(script.contains("[Console]::In"));
        assert!(script.contains("srv app run --register"));
        assert!(script.contains(r"\\.\pipe\rancher_wins"));
        let command = host_agent_command();
        // Windows' CreateProcess limit is 32767 characters.
        assert!(command.len() < 32_000, "{}", command.len());
        let encoded = command.rsplit(' ').next().unwrap();
        let utf16: Vec<u16> = STANDARD
            .decode(encoded)
            .unwrap()
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(String::from_utf16(&utf16).unwrap(), script);
    }
}
