//! What wins is told: the processes containers start through `wins cli prc run` (their
//! PowerShell launch scripts, encoded once) and the wins service's own configuration.

use super::*;

/// `TCP` or `UDP`, as `--exposes` spells them (the enum of `ProcessExpose.Protocol`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExposeProtocol {
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "UDP")]
    Udp,
}

/// One host port wins opens in the Windows Firewall (ActiveStore) while the process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expose {
    pub protocol: ExposeProtocol,
    pub port: u16,
}

impl Expose {
    /// The `--exposes` list element: `TCP:10250`.
    pub fn render(&self) -> String {
        let proto = match self.protocol {
            ExposeProtocol::Tcp => "TCP",
            ExposeProtocol::Udp => "UDP",
        };
        format!("{proto}:{}", self.port)
    }
}

/// One host process a container starts through `wins cli prc run`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinsProcess {
    /// The container that runs the wins client.
    pub container: String,
    /// The pristine binary inside the image, copied to the host before every start.
    pub image_path: String,
    /// The host's copy as the container sees it through its `c:/host/...` bind.
    pub host_view_path: String,
    /// `--path`: the same absolute path holds the image's copy inside the container and the
    /// staged copy on the host, which is what wins' checksum handshake compares.
    pub path: String,
    /// `--args`, one element per argv entry (joined with single spaces on the command line).
    pub args: Vec<String>,
    /// When set, `--source-vip=<x.y.z.254>` is appended at run time from the first subnet of
    /// this HNS network (it exists only after flanneld created it).
    pub source_vip_from_network: Option<String>,
    /// `--exposes`.
    pub exposes: Vec<Expose>,
    /// `--envs` (`KEY=value`).
    pub envs: Vec<String>,
}

impl WinsProcess {
    /// The executable's file name (`kubelet.exe`).
    pub fn exe_name(&self) -> &str {
        self.path.rsplit(['\\', '/']).next().unwrap_or(&self.path)
    }

    /// The name wins gives the host process and uses as firewall-rule prefix.
    pub fn host_process_name(&self) -> String {
        wins_process_name(self.exe_name())
    }

    /// The arguments after `wins.exe`: `cli prc run --path … [--args …] [--exposes …] [--envs …]`.
    /// `source_vip` is the run-time value for [`WinsProcess::source_vip_from_network`].
    pub fn cli_args(&self, source_vip: Option<&str>) -> Vec<String> {
        let mut args = self.args.clone();
        if let (Some(_), Some(vip)) = (&self.source_vip_from_network, source_vip) {
            args.push(format!("--source-vip={vip}"));
        }
        let mut out: Vec<String> = ["cli", "prc", "run", "--path", &self.path]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut list = |flag: &str, items: Vec<String>| {
            if !items.is_empty() {
                out.push(flag.to_string());
                out.push(items.join(" "));
            }
        };
        list("--args", args);
        list(
            "--exposes",
            self.exposes.iter().map(Expose::render).collect(),
        );
        list("--envs", self.envs.clone());
        out
    }

    /// The PowerShell the container runs: stage the binary, resolve run-time values, run wins.
    pub fn launcher_script(&self) -> String {
        let mut script = String::from(SCRIPT_PREAMBLE);
        script.push_str(&stage_file(&self.image_path, &self.host_view_path));
        let mut args = self.args.join(" ");
        let mut args_expr = ps_quote(&args);
        if let Some(network) = &self.source_vip_from_network {
            script.push_str(&source_vip_lookup(network));
            args.push_str(" --source-vip=");
            args_expr = format!("({} + $sourceVip)", ps_quote(&args));
        }
        script.push_str(&format!(
            "& {} cli prc run --path {}",
            ps_quote(WINS_CLI),
            ps_quote(&self.path)
        ));
        if !args.is_empty() {
            script.push_str(&format!(" --args {args_expr}"));
        }
        if !self.exposes.is_empty() {
            let exposes: Vec<String> = self.exposes.iter().map(Expose::render).collect();
            script.push_str(&format!(" --exposes {}", ps_quote(&exposes.join(" "))));
        }
        if !self.envs.is_empty() {
            script.push_str(&format!(" --envs {}", ps_quote(&self.envs.join(" "))));
        }
        script.push_str("\nexit $LASTEXITCODE\n");
        script
    }
}

pub(super) const SCRIPT_PREAMBLE: &str =
    "$ErrorActionPreference = 'Stop'\n$ProgressPreference = 'SilentlyContinue'\n";

/// Copies `from` to `to` unless `to` already holds the same bytes (wins renamed the previous
/// copy away when it started it, so normally it is missing).
pub(super) fn stage_file(from: &str, to: &str) -> String {
    format!(
        "if (-not (Test-Path -PathType Leaf {to}) -or (Get-FileHash {from}).Hash -ne (Get-FileHash {to}).Hash) {{\n    \
         Copy-Item -Force -Path {from} -Destination {to}\n}}\n",
        from = ps_quote(from),
        to = ps_quote(to)
    )
}

/// Waits for the HNS network flanneld creates, then derives kube-proxy's overlay source VIP
/// (`.254` of the node's pod subnet), as the RKE1 kube-proxy entrypoint did.
fn source_vip_lookup(network: &str) -> String {
    format!(
        "$sourceVip = $null\n\
         while (-not $sourceVip) {{\n    \
         $found = & {wins} cli hns get-network --name {network} 2>$null | ConvertFrom-Json\n    \
         if ($found -and $found.Subnets) {{\n        \
         $sourceVip = ($found.Subnets[0].AddressCIDR -replace '\\.\\d+/\\d+$', '') + '.254'\n    \
         }} else {{\n        \
         Start-Sleep -Seconds 5\n    \
         }}\n\
         }}\n",
        wins = ps_quote(WINS_CLI),
        network = ps_quote(network)
    )
}

/// A PowerShell single-quoted literal.
pub(super) fn ps_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `pwsh -EncodedCommand` wants base64 of the UTF-16LE script.
pub fn encode_powershell(script: &str) -> String {
    let bytes: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    STANDARD.encode(bytes)
}

/// The name wins derives from an executable: `rancher-wins-` + the file name with trailing
/// `.`, `e`, `x` characters trimmed (wins trims a *cutset*, so `nginx.exe` gives
/// `rancher-wins-ngin`); firewall rules are `<name>-<PROTO>-<port>`.
pub fn wins_process_name(exe_name: &str) -> String {
    let renamed = format!("{WINS_PROCESS_PREFIX}{exe_name}");
    renamed.trim_end_matches(['.', 'e', 'x']).to_string()
}

/// A `--args`/`--envs` element wins would split or mangle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WinsValueError {
    #[error("{what}: an empty element cannot be passed through wins")]
    Empty { what: String },
    #[error(
        "{what}: value {value:?} contains {c:?}; wins passes arguments as one string split on \
         spaces, so values with spaces, tabs or quotes cannot reach a Windows process intact"
    )]
    Split {
        what: String,
        value: String,
        c: char,
    },
}

/// Rejects a `--args`/`--envs` element wins would split or mangle: its client splits the list on
/// spaces (outside quotes, v0.1+; on every space in v0.0.4) and keeps quote characters.
pub fn check_wins_list_value(what: &str, value: &str) -> Result<(), WinsValueError> {
    if value.is_empty() {
        return Err(WinsValueError::Empty {
            what: what.to_string(),
        });
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_whitespace() || *c == '"' || *c == '\'')
    {
        return Err(WinsValueError::Split {
            what: what.to_string(),
            value: value.to_string(),
            c,
        });
    }
    Ok(())
}

/// wins' server configuration (`c:\etc\rancher\wins\config`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinsConfig {
    pub debug: bool,
    /// gRPC pipe name.
    pub listen: String,
    /// Proxy pipe name.
    pub proxy: String,
    pub white_list: WinsWhiteList,
    pub upgrade: WinsUpgrade,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinsWhiteList {
    /// Exact executable paths `ProcessService/Start` accepts (compared lower-cased, cleaned).
    #[serde(rename = "processPaths")]
    pub process_paths: Vec<String>,
    /// Host ports the proxy pipe may reach (integers: wins decodes `[]int`).
    #[serde(rename = "proxyPorts")]
    pub proxy_ports: Vec<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinsUpgrade {
    /// `none`: wins must never replace itself under running processes (a self-upgrade restart
    /// orphans every managed process); rkers upgrades it explicitly.
    pub mode: String,
}

impl WinsConfig {
    pub fn for_processes(processes: &[WinsProcess]) -> Self {
        let mut paths: Vec<String> = processes.iter().map(|p| p.path.clone()).collect();
        paths.push(STEP_POWERSHELL.into());
        paths.sort();
        paths.dedup();
        WinsConfig {
            debug: false,
            listen: "rancher_wins".into(),
            proxy: "rancher_wins_proxy".into(),
            white_list: WinsWhiteList {
                process_paths: paths,
                proxy_ports: Vec::new(),
            },
            upgrade: WinsUpgrade {
                mode: "none".into(),
            },
        }
    }

    /// The YAML text (wins parses it with ghodss/yaml, i.e. by JSON field names).
    pub fn to_yaml(&self) -> String {
        to_go_yaml(&serde_json::to_value(self).unwrap_or_default())
    }
}
