//! The plan of a Windows worker (windows-wins.md, spec §28): the wins service configuration, the
//! directories and files the host needs, and the four containers RKE1 ran there
//! (`service-sidekick` hosting flanneld, `nginx-proxy`, `kubelet`, `kube-proxy`), each of which
//! starts its real process on the host through rancher/wins (`wins cli prc run`). Also the pure
//! pieces other phases use on Windows: validation of the cluster shape, the orphan sweep and the
//! `remove` steps as PowerShell text. No I/O happens here.
//!
//! Design decisions (the RKE1 Windows images and their PowerShell entrypoints no longer exist, so
//! the container commands are rkers' own; names, labels, binds and host paths are RKE1's):
//! - Every container runs `pwsh -EncodedCommand <script>`: the script text is base64 UTF-16LE,
//!   so no layer (Docker's Windows argv escaping, PowerShell `-File` splitting at `:`) can alter
//!   the `wins cli prc run` arguments. [`WinsProcess::launcher_script`] is the readable form.
//! - wins *moves* the host binary away on every start (it becomes `rancher-wins-<exe>`), so each
//!   script first copies the pristine binary from the image to the host path (through the
//!   `c:/host/...` bind) whenever it is missing or differs, then runs wins.
//! - The wins client is the host's own `wins.exe` (bind `<p>/etc/rancher/wins`), so client and
//!   server are always the same build.
//! - The wins config is written with the keys wins ≥ v0.1.2 really reads (`white_list`,
//!   `processPaths`, integer `proxyPorts`); RKE1/Rancher wrote `whiteList` with string ports,
//!   which newer wins silently ignores, leaving every executable allowed.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::containers::Host;
use super::files::cloud_config_file;
use super::flags::{apply_extra_args, apply_service_options, map, render_flags};
use super::goyaml::to_go_yaml;
use super::util::{at_least, join_path, uniq};
use super::{
    CONTAINER_NAME_LABEL, ContainerSpec, FileSpec, HostFacts, HostPlan, KUBE_PROXY, KUBELET,
    NGINX_PROXY, PlanError, PlanInput, PortCheck, SERVICE_SIDEKICK, cert_name_for_host,
};
use crate::config::types::RkeConfig;

/// The only prefix path a Windows host may have: the images carry the binaries at `c:\...`, and
/// wins' checksum handshake needs the same absolute path inside the container and on the host.
pub const WINDOWS_PREFIX_PATH: &str = "c:/";
/// The wins gRPC pipe, bound into every container (the forward-slash form Rancher used).
pub const WINS_PIPE_BIND: &str = "//./pipe/rancher_wins://./pipe/rancher_wins";
/// The Windows service wins registers.
pub const WINS_SERVICE_NAME: &str = "rancher-wins";
/// Where rkers installs the wins server binary on the host (the client inside containers runs the
/// same file through a bind).
pub const WINS_HOST_DIR: &str = "c:/etc/rancher/wins";
/// wins' default config file path (`--config`).
pub const WINS_CONFIG_PATH: &str = "c:/etc/rancher/wins/config";
/// Host processes wins starts are renamed to `rancher-wins-<exe>`.
pub const WINS_PROCESS_PREFIX: &str = "rancher-wins-";
/// The user every Windows container runs as: only Administrators may open the wins pipe.
pub const CONTAINER_USER: &str = "ContainerAdministrator";
/// The wins client as containers see it.
const WINS_CLI: &str = r"c:\host\etc\rancher\wins\wins.exe";
/// The shell of every Windows container (the script follows as `-EncodedCommand`).
const LAUNCHER: &[&str] = &[
    "pwsh",
    "-NoLogo",
    "-NonInteractive",
    "-NoProfile",
    "-EncodedCommand",
];
/// The flannel VXLAN port and smallest VNI Windows' overlay networking accepts.
pub const WINDOWS_VXLAN_PORT: u16 = 4789;
pub const WINDOWS_MIN_VXLAN_VNI: u32 = 4096;
/// HNS network flanneld creates in VXLAN mode.
pub const OVERLAY_NETWORK_NAME: &str = "vxlan0";
/// CNI plugins the rke-tools Windows image carries in `c:\opt\cni\bin`.
const CNI_PLUGINS: &[&str] = &[
    "flannel.exe",
    "host-local.exe",
    "win-bridge.exe",
    "win-overlay.exe",
];

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

const SCRIPT_PREAMBLE: &str =
    "$ErrorActionPreference = 'Stop'\n$ProgressPreference = 'SilentlyContinue'\n";

/// Copies `from` to `to` unless `to` already holds the same bytes (wins renamed the previous
/// copy away when it started it, so normally it is missing).
fn stage_file(from: &str, to: &str) -> String {
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
fn ps_quote(text: &str) -> String {
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

/// Rejects a `--args`/`--envs` element wins would split or mangle: its client splits the list on
/// spaces (outside quotes, v0.1+; on every space in v0.0.4) and keeps quote characters.
pub fn check_wins_list_value(what: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!(
            "{what}: an empty element cannot be passed through wins"
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_whitespace() || *c == '"' || *c == '\'')
    {
        return Err(format!(
            "{what}: value {value:?} contains {c:?}; wins passes arguments as one string split on \
             spaces, so values with spaces, tabs or quotes cannot reach a Windows process intact"
        ));
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

/// What a Windows worker needs besides its containers and files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowsSetup {
    /// Host directories to create before any container (Windows cannot bind a missing source).
    pub directories: Vec<String>,
    pub wins_config: WinsConfig,
    /// The processes the containers start through wins, in start order.
    pub processes: Vec<WinsProcess>,
}

/// A Windows worker's plan: the common [`HostPlan`] and the Windows-only setup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowsHostPlan {
    pub host: HostPlan,
    pub setup: WindowsSetup,
}

/// The prefix path RKE1 gives a Windows host: `win_prefix_path` when set, else the cluster's
/// `prefix_path` unless it is `/`, else `c:/`.
pub fn windows_prefix_path(cfg: &RkeConfig) -> String {
    let configured = if !cfg.win_prefix_path.is_empty() {
        cfg.win_prefix_path.replace('\\', "/")
    } else if cfg.prefix_path != "/" && !cfg.prefix_path.is_empty() {
        cfg.prefix_path.clone()
    } else {
        WINDOWS_PREFIX_PATH.into()
    };
    let lower = configured.to_lowercase();
    if lower == "c:" || lower == "c:/" {
        WINDOWS_PREFIX_PATH.into()
    } else {
        configured
    }
}

/// Whether Docker reports a Windows host.
pub fn is_windows(facts: &HostFacts) -> bool {
    facts.os_type.eq_ignore_ascii_case("windows")
}

/// Checks the cluster shape Windows workers need. Each message names the host or option and says
/// why the combination is refused. Empty when there is no Windows host.
pub fn validate_windows(cfg: &RkeConfig, facts: &BTreeMap<String, HostFacts>) -> Vec<String> {
    let windows: Vec<&str> = cfg
        .nodes
        .iter()
        .filter(|n| facts.get(&n.address).is_some_and(is_windows))
        .map(|n| n.address.as_str())
        .collect();
    if windows.is_empty() {
        return Vec::new();
    }
    let mut errors = Vec::new();
    let mut linux_etcd = false;
    let mut linux_cp = false;
    for node in &cfg.nodes {
        let on_windows = windows.contains(&node.address.as_str());
        for role in &node.role {
            match (role.as_str(), on_windows) {
                ("etcd" | "controlplane", true) => errors.push(format!(
                    "host {}: role {role} on a Windows host is refused: etcd and the control plane \
                     run only on Linux; Windows hosts can only be workers",
                    node.address
                )),
                ("etcd", false) => linux_etcd = true,
                ("controlplane", false) => linux_cp = true,
                _ => {}
            }
        }
    }
    if !linux_etcd {
        errors.push(
            "a cluster with Windows workers needs at least one Linux host with the etcd role"
                .into(),
        );
    }
    if !linux_cp {
        errors.push(
            "a cluster with Windows workers needs at least one Linux host with the controlplane \
             role (Windows workers reach the API server through nginx-proxy)"
                .into(),
        );
    }
    let version = cfg.kubernetes_version.as_str();
    if at_least(version, 1, 24) {
        errors.push(format!(
            "kubernetes_version {version}: Windows workers are refused from v1.24 on: kubelet has no \
             dockershim any more, RKE1 only wires cri-dockerd for Linux, and KDM's Windows kubelet \
             flags still pass --network-plugin which kubelet v1.24+ rejects; use v1.20-v1.23"
        ));
    } else if !at_least(version, 1, 15) {
        errors.push(format!(
            "kubernetes_version {version}: Windows workers need v1.15 or newer (first version with \
             the wins-based plan and without --allow-privileged)"
        ));
    }
    if cfg.enable_cri_dockerd == Some(true) {
        errors.push(
            "enable_cri_dockerd: refused with Windows workers: cri-dockerd is only deployed on Linux"
                .into(),
        );
    }
    let network = &cfg.network;
    if network.plugin != "flannel" {
        errors.push(format!(
            "network plugin {:?}: Windows workers support only flannel (the RKE1 Windows tooling \
             never handled canal, calico, weave or aci)",
            network.plugin
        ));
    } else {
        let backend = network
            .options
            .get("flannel_backend_type")
            .map(String::as_str)
            .unwrap_or("vxlan");
        if backend != "vxlan" {
            errors.push(format!(
                "network option flannel_backend_type {backend:?}: Windows workers are planned only \
                 with vxlan (host-gw needs the node adapter's subnet, known only on the host)"
            ));
        } else {
            let vni = network.options.get("flannel_backend_vni");
            if vni.and_then(|v| v.parse::<u32>().ok()).unwrap_or(0) < WINDOWS_MIN_VXLAN_VNI {
                errors.push(format!(
                    "network option flannel_backend_vni {:?}: must be {WINDOWS_MIN_VXLAN_VNI} or \
                     more on every host when the cluster has Windows workers (Windows overlay \
                     networking rejects smaller VNIs)",
                    vni.map_or("unset", String::as_str)
                ));
            }
            let port = network.options.get("flannel_backend_port");
            if port.map(String::as_str) != Some("4789") {
                errors.push(format!(
                    "network option flannel_backend_port {:?}: must be {WINDOWS_VXLAN_PORT} on \
                     every host when the cluster has Windows workers (the only VXLAN port Windows \
                     supports)",
                    port.map_or("unset", String::as_str)
                ));
            }
        }
    }
    let prefix = windows_prefix_path(cfg);
    if prefix != WINDOWS_PREFIX_PATH {
        errors.push(format!(
            "win_prefix_path {prefix:?}: Windows hosts must use c:/ (the images carry the binaries \
             under c:\\ and wins requires the same absolute path in the container and on the host)"
        ));
    }
    errors
}

/// Windows kubeconfig for a component: RKE1's node kubeconfig with certificate paths made
/// absolute Windows paths (processes run on the host, not in the container).
fn windows_kubeconfig(component: &str) -> String {
    crate::pki::node_kubeconfig(component).replace("/etc/kubernetes/ssl/", "c:/etc/kubernetes/ssl/")
}

fn ssl(prefix: &str, file: &str) -> String {
    join_path(&[prefix, "/etc/kubernetes/ssl", file])
}

fn win(path: &str) -> String {
    path.replace('/', "\\")
}

/// Builds a Windows worker's plan. `all_hosts` are the cluster's hosts (the control plane list
/// feeds nginx-proxy).
pub(crate) fn windows_host_plan(
    input: &PlanInput,
    all_hosts: &[Host],
    host: &Host,
    _facts: &HostFacts,
) -> Result<WindowsHostPlan, PlanError> {
    let cfg = input.config;
    let refused = |cause: String| PlanError::Host {
        host: host.address.clone(),
        cause,
    };
    if host.roles.etcd || host.roles.controlplane {
        return Err(refused(
            "Windows hosts can only be workers (etcd and controlplane run on Linux)".into(),
        ));
    }
    let options = input.windows_service_options.ok_or_else(|| {
        refused(format!(
            "no Windows service options for Kubernetes {}; Windows workers cannot be planned",
            cfg.kubernetes_version
        ))
    })?;
    let prefix = windows_prefix_path(cfg);
    if prefix != WINDOWS_PREFIX_PATH {
        return Err(refused(format!(
            "win_prefix_path {prefix:?} is not supported (only c:/)"
        )));
    }
    let cloud = cloud_config_file(&cfg.cloud_provider)?;
    let cp_hosts: Vec<&Host> = all_hosts.iter().filter(|h| h.roles.controlplane).collect();
    let env = windows_env(cfg, host, &prefix, cloud.as_ref().map(|c| c.0.as_str()));

    let kubelet = kubelet_process(input, host, &prefix, options, cloud.as_ref())?;
    let proxy = kube_proxy_process(input, host, &prefix, options, cloud.is_some())?;
    let flanneld = flanneld_process(host, &prefix)?;
    let nginx = nginx_process();

    let mut containers = IndexMap::new();
    let mut add = |spec: ContainerSpec| {
        containers.insert(spec.name.clone(), spec);
    };
    let pipe_and_wins = [
        WINS_PIPE_BIND.to_string(),
        format!(
            "{}:c:/host/etc/rancher/wins:ro",
            join_path(&[&prefix, "/etc/rancher/wins"])
        ),
    ];

    let mut sidekick_env = env.clone();
    sidekick_env.push(format!("RKE_NODE_NAME_OVERRIDE={}", host.hostname));
    let mut sidekick_binds: Vec<String> = [
        ("/opt", "c:/host/opt"),
        ("/etc", "c:/host/etc"),
        ("/etc/cni/net.d", "c:/host/etc/cni/net.d"),
        ("/etc/kube-flannel", "c:/host/etc/kube-flannel"),
        ("/run", "c:/host/run"),
    ]
    .iter()
    .map(|(h, c)| format!("{}:{c}", join_path(&[&prefix, h])))
    .collect();
    sidekick_binds.push(WINS_PIPE_BIND.into());
    add(windows_container(
        SERVICE_SIDEKICK,
        &cfg.system_images.kubernetes_services_sidecar,
        &sidekick_script(&flanneld),
        sidekick_env,
        sidekick_binds,
        false,
    ));

    let cp_list = cp_hosts
        .iter()
        .map(|h| h.internal_address.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mut nginx_env = vec![format!("CP_HOSTS={cp_list}")];
    nginx_env.extend(env.iter().cloned());
    let mut nginx_binds = vec![
        format!("{}:c:/host/etc/nginx", join_path(&[&prefix, "/etc/nginx"])),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    nginx_binds.extend(pipe_and_wins.iter().cloned());
    add(windows_container(
        NGINX_PROXY,
        &cfg.system_images.nginx_proxy,
        &nginx.launcher_script(),
        nginx_env,
        nginx_binds,
        true,
    ));

    let kubelet_svc = &cfg.services.kubelet;
    let mut kubelet_env = pick(&kubelet_svc.win_extra_env, &kubelet_svc.extra_env).to_vec();
    kubelet_env.extend(env.iter().cloned());
    if let Some((_, text)) = &cloud {
        kubelet_env.push(format!(
            "RKE_CLOUD_CONFIG_CHECKSUM={}",
            super::md5_hex(text)
        ));
    }
    let mut kubelet_binds = vec![
        format!(
            "{}:c:/host/etc/kubernetes",
            join_path(&[&prefix, "/etc/kubernetes"])
        ),
        format!(
            "{}:c:/host/var/lib/kubelet",
            join_path(&[&prefix, "/var/lib/kubelet"])
        ),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    kubelet_binds.extend(pipe_and_wins.iter().cloned());
    kubelet_binds.extend(
        pick(&kubelet_svc.win_extra_binds, &kubelet_svc.extra_binds)
            .iter()
            .cloned(),
    );
    add(windows_container(
        KUBELET,
        &image_or(&kubelet_svc.image, &cfg.system_images.kubernetes),
        &kubelet.launcher_script(),
        kubelet_env,
        kubelet_binds,
        true,
    ));

    let proxy_svc = &cfg.services.kubeproxy;
    let mut proxy_env = pick(&proxy_svc.win_extra_env, &proxy_svc.extra_env).to_vec();
    proxy_env.extend(env.iter().cloned());
    let mut proxy_binds = vec![
        format!(
            "{}:c:/host/etc/kubernetes",
            join_path(&[&prefix, "/etc/kubernetes"])
        ),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    proxy_binds.extend(pipe_and_wins.iter().cloned());
    proxy_binds.extend(
        pick(&proxy_svc.win_extra_binds, &proxy_svc.extra_binds)
            .iter()
            .cloned(),
    );
    add(windows_container(
        KUBE_PROXY,
        &image_or(&proxy_svc.image, &cfg.system_images.kubernetes),
        &proxy.launcher_script(),
        proxy_env,
        proxy_binds,
        true,
    ));

    let processes = vec![nginx, kubelet, flanneld, proxy];
    let wins_config = WinsConfig::for_processes(&processes);
    let files = windows_files(cfg, &prefix, &cp_hosts, &wins_config, cloud.as_ref())?;

    let mut certificate_names = vec![
        "kube-ca".to_string(),
        "kube-proxy".into(),
        "kube-node".into(),
    ];
    if kubelet_svc.generate_serving_certificate {
        for h in all_hosts {
            certificate_names.push(cert_name_for_host(
                &h.address,
                &h.internal_address,
                "kube-kubelet",
            ));
        }
    }

    Ok(WindowsHostPlan {
        host: HostPlan {
            address: host.address.clone(),
            internal_address: host.internal_address.clone(),
            hostname: host.hostname.clone(),
            roles: host.roles.clone(),
            prefix_path: prefix.clone(),
            containers,
            files,
            certificate_names: uniq(certificate_names),
            port_checks: vec![PortCheck {
                address: host.address.clone(),
                port: 10250,
                protocol: "TCP".into(),
            }],
        },
        setup: WindowsSetup {
            directories: windows_directories(&prefix),
            wins_config,
            processes,
        },
    })
}

fn pick<'a, T>(windows: &'a [T], linux: &'a [T]) -> &'a [T] {
    if windows.is_empty() { linux } else { windows }
}

fn pick_map<'a, V>(
    windows: &'a BTreeMap<String, V>,
    linux: &'a BTreeMap<String, V>,
) -> &'a BTreeMap<String, V> {
    if windows.is_empty() { linux } else { windows }
}

fn image_or(image: &str, default: &str) -> String {
    if image.is_empty() {
        default.to_string()
    } else {
        image.to_string()
    }
}

/// RKE1's `getWindowsEnv` block.
fn windows_env(cfg: &RkeConfig, host: &Host, prefix: &str, cloud: Option<&str>) -> Vec<String> {
    let kubelet = &cfg.services.kubelet;
    vec![
        format!(
            "RKE_CLUSTER_CIDR={}",
            cfg.services.kube_controller.cluster_cidr
        ),
        format!("RKE_CLUSTER_DOMAIN={}", kubelet.cluster_domain),
        format!("RKE_CLUSTER_DNS_SERVER={}", kubelet.cluster_dns_server),
        format!(
            "RKE_CLUSTER_SERVICE_CIDR={}",
            cfg.services.kube_controller.service_cluster_ip_range
        ),
        format!("RKE_NODE_ADDRESS={}", host.address),
        format!("RKE_NODE_INTERNAL_ADDRESS={}", host.internal_address),
        format!("RKE_CLOUD_PROVIDER_NAME={}", cloud.unwrap_or("")),
        format!("RKE_NODE_PREFIX_PATH={prefix}"),
    ]
}

fn windows_container(
    name: &str,
    image: &str,
    script: &str,
    env: Vec<String>,
    binds: Vec<String>,
    uses_sidekick: bool,
) -> ContainerSpec {
    let mut entrypoint: Vec<String> = LAUNCHER.iter().map(|s| s.to_string()).collect();
    entrypoint.push(encode_powershell(script));
    ContainerSpec {
        name: name.into(),
        image: image.into(),
        entrypoint,
        env: uniq(env),
        binds: uniq(binds),
        volumes_from: if uses_sidekick {
            vec![SERVICE_SIDEKICK.into()]
        } else {
            Vec::new()
        },
        // Windows containers have no host network, host PID or privileged mode (RKE1's process
        // filter clears them); all host access goes through wins.
        network_mode: None,
        pid_mode: None,
        privileged: false,
        restart_policy: Some("always".into()),
        labels: BTreeMap::from([(CONTAINER_NAME_LABEL.to_string(), name.to_string())]),
        user: Some(CONTAINER_USER.into()),
        start: true,
        ..Default::default()
    }
}

fn checked(what: &str, args: Vec<String>) -> Result<Vec<String>, String> {
    for arg in &args {
        check_wins_list_value(what, arg)?;
    }
    Ok(args)
}

fn kubelet_process(
    input: &PlanInput,
    host: &Host,
    prefix: &str,
    options: &super::ServiceOptions,
    cloud: Option<&(String, String)>,
) -> Result<WinsProcess, PlanError> {
    let has_cloud = cloud.is_some();
    let cfg = input.config;
    let kubelet = &cfg.services.kubelet;
    // `external-aws` is passed to Kubernetes as `external`, as on Linux.
    let cloud_flag = match cloud {
        Some((name, _)) if name == "external-aws" => "external".to_string(),
        Some((name, _)) => name.clone(),
        None => String::new(),
    };
    let mut args = map(&[
        ("client-ca-file", &ssl(prefix, "kube-ca.pem")),
        ("cloud-provider", &cloud_flag),
        ("cluster-dns", &kubelet.cluster_dns_server),
        ("cluster-domain", &kubelet.cluster_domain),
        ("fail-swap-on", &kubelet.fail_swap_on.to_string()),
        ("hostname-override", &host.hostname),
        ("kubeconfig", &ssl(prefix, "kubecfg-kube-node.yaml")),
        (
            "pod-infra-container-image",
            &cfg.system_images.windows_pod_infra_container,
        ),
        ("root-dir", &join_path(&[prefix, "/var/lib/kubelet"])),
        // The RKE1 Windows entrypoint always added the node IP (the container's own address
        // would be wrong on the host).
        ("node-ip", &host.internal_address),
    ]);
    if has_cloud {
        args.insert(
            "cloud-config".into(),
            join_path(&[prefix, "/etc/kubernetes/cloud-config"]),
        );
    }
    if kubelet.generate_serving_certificate {
        // RKE1 leaves these two unprefixed on Windows; we prefix them like every other path.
        let name = cert_name_for_host(&host.address, &host.internal_address, "kube-kubelet");
        args.insert("tls-cert-file".into(), ssl(prefix, &format!("{name}.pem")));
        args.insert(
            "tls-private-key-file".into(),
            ssl(prefix, &format!("{name}-key.pem")),
        );
    }
    apply_service_options(&mut args, &options.kubelet, Some(prefix));
    apply_extra_args(
        &mut args,
        pick_map(&kubelet.win_extra_args, &kubelet.extra_args),
    );
    if let Some(ip) = cfg
        .dns
        .as_ref()
        .and_then(|d| d.nodelocal.as_ref())
        .map(|n| n.ip_address.as_str())
        .filter(|ip| !ip.is_empty())
    {
        args.insert("cluster-dns".into(), ip.to_string());
    }
    let rendered = render_flags(
        &args,
        pick_map(&kubelet.win_extra_args_array, &kubelet.extra_args_array),
    );
    let args = checked("kubelet", rendered).map_err(|cause| PlanError::Host {
        host: host.address.clone(),
        cause,
    })?;
    Ok(WinsProcess {
        container: KUBELET.into(),
        image_path: r"c:\etc\kubernetes\bin\kubelet.exe".into(),
        host_view_path: r"c:\host\etc\kubernetes\bin\kubelet.exe".into(),
        path: win(&join_path(&[prefix, "/etc/kubernetes/bin/kubelet.exe"])),
        args,
        source_vip_from_network: None,
        exposes: vec![Expose {
            protocol: ExposeProtocol::Tcp,
            port: 10250,
        }],
        envs: Vec::new(),
    })
}

fn kube_proxy_process(
    input: &PlanInput,
    host: &Host,
    prefix: &str,
    options: &super::ServiceOptions,
    has_cloud: bool,
) -> Result<WinsProcess, PlanError> {
    let cfg = input.config;
    let proxy = &cfg.services.kubeproxy;
    let mut args = map(&[
        ("cluster-cidr", &cfg.services.kube_controller.cluster_cidr),
        ("hostname-override", &host.hostname),
        ("kubeconfig", &ssl(prefix, "kubecfg-kube-proxy.yaml")),
        ("network-name", OVERLAY_NETWORK_NAME),
    ]);
    apply_service_options(&mut args, &options.kubeproxy, None);
    if has_cloud {
        args.insert("bind-address".into(), host.internal_address.clone());
    }
    apply_extra_args(
        &mut args,
        pick_map(&proxy.win_extra_args, &proxy.extra_args),
    );
    let rendered = render_flags(
        &args,
        pick_map(&proxy.win_extra_args_array, &proxy.extra_args_array),
    );
    let args = checked("kube-proxy", rendered).map_err(|cause| PlanError::Host {
        host: host.address.clone(),
        cause,
    })?;
    Ok(WinsProcess {
        container: KUBE_PROXY.into(),
        image_path: r"c:\etc\kubernetes\bin\kube-proxy.exe".into(),
        host_view_path: r"c:\host\etc\kubernetes\bin\kube-proxy.exe".into(),
        path: win(&join_path(&[prefix, "/etc/kubernetes/bin/kube-proxy.exe"])),
        args,
        source_vip_from_network: Some(OVERLAY_NETWORK_NAME.into()),
        exposes: vec![Expose {
            protocol: ExposeProtocol::Tcp,
            port: 10256,
        }],
        envs: Vec::new(),
    })
}

fn flanneld_process(host: &Host, prefix: &str) -> Result<WinsProcess, PlanError> {
    let args = vec![
        format!(
            "--kubeconfig-file={}",
            win(&ssl(prefix, "kubecfg-kube-node.yaml"))
        ),
        "--ip-masq".into(),
        "--kube-subnet-mgr".into(),
        "--iptables-forward-rules=false".into(),
        format!(
            "--net-config-path={}",
            win(&join_path(&[prefix, "/etc/kube-flannel/net-conf.json"]))
        ),
        format!("--iface={}", host.internal_address),
    ];
    let envs = vec![format!("NODE_NAME={}", host.hostname)];
    let to_host_error = |cause| PlanError::Host {
        host: host.address.clone(),
        cause,
    };
    Ok(WinsProcess {
        container: SERVICE_SIDEKICK.into(),
        image_path: r"c:\opt\bin\flanneld.exe".into(),
        host_view_path: r"c:\host\opt\bin\flanneld.exe".into(),
        path: win(&join_path(&[prefix, "/opt/bin/flanneld.exe"])),
        args: checked("flanneld", args).map_err(to_host_error)?,
        source_vip_from_network: None,
        exposes: vec![Expose {
            protocol: ExposeProtocol::Udp,
            port: WINDOWS_VXLAN_PORT,
        }],
        envs: checked("flanneld env", envs).map_err(to_host_error)?,
    })
}

fn nginx_process() -> WinsProcess {
    WinsProcess {
        container: NGINX_PROXY.into(),
        image_path: r"c:\etc\nginx\nginx.exe".into(),
        host_view_path: r"c:\host\etc\nginx\nginx.exe".into(),
        // nginx reads conf\nginx.conf relative to its working directory, wins' default (the
        // executable's directory, c:\etc\nginx).
        path: r"c:\etc\nginx\nginx.exe".into(),
        args: Vec::new(),
        source_vip_from_network: None,
        exposes: Vec::new(),
        envs: Vec::new(),
    }
}

/// The sidekick stages the CNI plugins kubelet calls, then runs flanneld (which creates the HNS
/// network) for as long as the container lives, as RKE1's sidekick did.
fn sidekick_script(flanneld: &WinsProcess) -> String {
    let mut script = String::from(SCRIPT_PREAMBLE);
    for plugin in CNI_PLUGINS {
        script.push_str(&stage_file(
            &format!(r"c:\opt\cni\bin\{plugin}"),
            &format!(r"c:\host\opt\cni\bin\{plugin}"),
        ));
    }
    let flanneld_script = flanneld.launcher_script();
    script.push_str(
        flanneld_script
            .strip_prefix(SCRIPT_PREAMBLE)
            .unwrap_or(&flanneld_script),
    );
    script
}

/// Directories to create on the host, in creation order.
pub fn windows_directories(prefix: &str) -> Vec<String> {
    [
        "/etc/kubernetes/bin",
        "/etc/kubernetes/ssl",
        "/etc/cni/net.d",
        "/etc/kube-flannel",
        "/etc/nginx/conf",
        "/etc/nginx/logs",
        "/etc/nginx/temp",
        "/etc/rancher/wins",
        "/opt/bin",
        "/opt/cni/bin",
        "/var/lib/cni",
        "/var/lib/kubelet/pki",
        "/var/lib/kubelet/volumeplugins",
        "/var/log/containers",
        "/var/log/pods",
        "/run",
    ]
    .iter()
    .map(|p| join_path(&[prefix, p]))
    .collect()
}

fn host_file(prefix: &str, path: &str, contents: String) -> FileSpec {
    let full = join_path(&[prefix, path]);
    FileSpec {
        path: full.clone(),
        // Processes run on the host, so their flags name the host path.
        container_path: full,
        contents,
        mode: 0o600,
        checksum_env: None,
        remove_when_empty: true,
    }
}

fn windows_files(
    cfg: &RkeConfig,
    prefix: &str,
    cp_hosts: &[&Host],
    wins_config: &WinsConfig,
    cloud: Option<&(String, String)>,
) -> Result<Vec<FileSpec>, PlanError> {
    let mut files = vec![
        host_file(prefix, "/etc/rancher/wins/config", wins_config.to_yaml()),
        host_file(
            prefix,
            "/etc/kubernetes/ssl/kubecfg-kube-node.yaml",
            windows_kubeconfig("kube-node"),
        ),
        host_file(
            prefix,
            "/etc/kubernetes/ssl/kubecfg-kube-proxy.yaml",
            windows_kubeconfig("kube-proxy"),
        ),
        host_file(
            prefix,
            "/etc/cni/net.d/10-flannel.conflist",
            flannel_conflist(cfg),
        ),
        host_file(
            prefix,
            "/etc/kube-flannel/net-conf.json",
            flannel_net_conf(cfg)?,
        ),
        host_file(prefix, "/etc/nginx/conf/nginx.conf", nginx_conf(cp_hosts)),
    ];
    if let Some((_, text)) = cloud {
        let mut file = host_file(prefix, "/etc/kubernetes/cloud-config", text.clone());
        file.checksum_env = Some("RKE_CLOUD_CONFIG_CHECKSUM".into());
        file.remove_when_empty = false;
        files.push(file);
    }
    if !cfg.private_registries.is_empty() {
        // The RKE1 entrypoint wrote RKE_KUBELET_DOCKER_CONFIG here; we write it directly.
        files.push(host_file(
            prefix,
            "/var/lib/kubelet/config.json",
            super::kubelet_docker_config(&cfg.private_registries),
        ));
    }
    Ok(files)
}

/// `10-flannel.conflist` for the VXLAN backend (win-overlay), as RKE1's sidekick wrote it.
pub fn flannel_conflist(cfg: &RkeConfig) -> String {
    let cluster_cidr = &cfg.services.kube_controller.cluster_cidr;
    let service_cidr = &cfg.services.kube_controller.service_cluster_ip_range;
    let kubelet = &cfg.services.kubelet;
    let conflist = json!({
        "name": OVERLAY_NETWORK_NAME,
        "cniVersion": "0.2.0",
        "plugins": [{
            "type": "flannel",
            "capabilities": {"dns": true},
            "delegate": {
                "type": "win-overlay",
                "dns": {
                    "nameservers": [kubelet.cluster_dns_server],
                    "search": [format!("svc.{}", kubelet.cluster_domain)],
                },
                "policies": [
                    {"name": "EndpointPolicy", "value": {
                        "Type": "OutBoundNAT",
                        "ExceptionList": [cluster_cidr, service_cidr],
                    }},
                    {"name": "EndpointPolicy", "value": {
                        "Type": "ROUTE",
                        "NeedEncap": true,
                        "DestinationPrefix": service_cidr,
                    }},
                ],
            },
        }],
    });
    serde_json::to_string_pretty(&conflist).unwrap_or_default()
}

/// flanneld's `net-conf.json` (VXLAN, VNI from `flannel_backend_vni`, port 4789).
pub fn flannel_net_conf(cfg: &RkeConfig) -> Result<String, PlanError> {
    let vni = match cfg.network.options.get("flannel_backend_vni") {
        None => WINDOWS_MIN_VXLAN_VNI,
        Some(text) => text.parse::<u32>().map_err(|_| {
            PlanError::Unsupported(format!(
                "network option flannel_backend_vni {text:?} is not a number"
            ))
        })?,
    };
    let conf = json!({
        "Network": cfg.services.kube_controller.cluster_cidr,
        "Backend": {
            "Name": OVERLAY_NETWORK_NAME,
            "Type": "vxlan",
            "VNI": vni,
            "Port": WINDOWS_VXLAN_PORT,
        },
    });
    Ok(serde_json::to_string_pretty(&conf).unwrap_or_default())
}

/// nginx's stream proxy to the control plane (what RKE1's confd template rendered).
pub fn nginx_conf(cp_hosts: &[&Host]) -> String {
    let mut upstream = String::new();
    for h in cp_hosts {
        upstream.push_str(&format!(
            "        server {}:6443;\n",
            crate::config::url_host(&h.internal_address)
        ));
    }
    format!(
        "worker_processes auto;\n\
         error_log stderr notice;\n\
         events {{\n    worker_connections 1024;\n}}\n\
         stream {{\n    \
         upstream kube_apiserver {{\n{upstream}    }}\n    \
         server {{\n        \
         listen 6443;\n        \
         proxy_pass kube_apiserver;\n        \
         proxy_timeout 10m;\n        \
         proxy_connect_timeout 2s;\n    \
         }}\n\
         }}\n"
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wins_names_trim_a_cutset_like_wins() {
        assert_eq!(wins_process_name("kubelet.exe"), "rancher-wins-kubelet");
        assert_eq!(
            wins_process_name("kube-proxy.exe"),
            "rancher-wins-kube-proxy"
        );
        assert_eq!(wins_process_name("nginx.exe"), "rancher-wins-ngin");
        assert_eq!(wins_process_name("flanneld.exe"), "rancher-wins-flanneld");
    }

    #[test]
    fn list_values_with_spaces_or_quotes_are_refused() {
        assert!(check_wins_list_value("kubelet", "--v=2").is_ok());
        let err = check_wins_list_value("kubelet", "--node-labels=a b").unwrap_err();
        assert!(err.contains("kubelet") && err.contains("spaces"), "{err}");
        assert!(check_wins_list_value("x", "--a=\"b\"").is_err());
        assert!(check_wins_list_value("x", "").is_err());
    }

    #[test]
    fn encoded_command_is_utf16le_base64() {
        // "a" → 0x61 0x00
        assert_eq!(encode_powershell("a"), "YQA=");
    }

    #[test]
    fn wins_config_uses_the_keys_wins_reads() {
        let yaml = WinsConfig::for_processes(&[nginx_process()]).to_yaml();
        assert!(yaml.contains("white_list:"), "{yaml}");
        assert!(yaml.contains("processPaths:"), "{yaml}");
        assert!(yaml.contains("proxyPorts: []"), "{yaml}");
        assert!(!yaml.contains("whiteList"), "{yaml}");
    }

    #[test]
    fn cli_args_join_lists_with_single_spaces() {
        let mut p = nginx_process();
        p.args = vec!["--a=1".into(), "--b".into()];
        p.exposes = vec![
            Expose {
                protocol: ExposeProtocol::Tcp,
                port: 1,
            },
            Expose {
                protocol: ExposeProtocol::Udp,
                port: 2,
            },
        ];
        p.source_vip_from_network = Some("vxlan0".into());
        assert_eq!(
            p.cli_args(Some("10.42.1.254")),
            vec![
                "cli",
                "prc",
                "run",
                "--path",
                r"c:\etc\nginx\nginx.exe",
                "--args",
                "--a=1 --b --source-vip=10.42.1.254",
                "--exposes",
                "TCP:1 UDP:2"
            ]
        );
    }

    #[test]
    fn prefix_path_rules() {
        let mut cfg = RkeConfig {
            prefix_path: "/".into(),
            ..Default::default()
        };
        assert_eq!(windows_prefix_path(&cfg), "c:/");
        cfg.win_prefix_path = r"C:\".into();
        assert_eq!(windows_prefix_path(&cfg), "c:/");
        cfg.win_prefix_path = "d:/rke".into();
        assert_eq!(windows_prefix_path(&cfg), "d:/rke");
    }

    #[test]
    fn remove_plan_covers_processes_rules_network_and_dirs() {
        let plan = remove_plan_windows("c:/", true);
        assert_eq!(plan.containers[0], KUBE_PROXY);
        let s = &plan.host_script;
        assert!(s.contains("Get-Process -Name 'rancher-wins-*'"));
        assert!(s.contains("-PolicyStore ActiveStore -Name 'rancher-wins-*'"));
        assert!(s.contains("Remove-HnsNetwork"));
        assert!(s.contains(r"'c:\var\lib\kubelet'"));
        // Unregistering runs detached, after the step has reported back.
        let later = encode_powershell(
            "Start-Sleep -Seconds 5\nStop-Service -Name 'rancher-wins' -ErrorAction SilentlyContinue\n\
             & 'c:\\etc\\rancher\\wins\\wins.exe' srv app run --unregister\n\
             Start-Sleep -Seconds 2\n\
             Remove-Item -Recurse -Force 'c:\\etc\\rancher\\wins' -ErrorAction SilentlyContinue\n",
        );
        assert!(s.contains(&later), "{s}");
        assert!(
            !remove_plan_windows("c:/", false)
                .host_script
                .contains("Start-Process")
        );
    }

    #[test]
    fn orphan_sweep_compares_with_the_wins_server_start() {
        let s = orphan_cleanup_command();
        assert!(s.contains("Name='rancher-wins'"));
        assert!(s.contains("$p.StartTime -lt $serverStart"));
        // The sweep runs as a wins-managed PowerShell itself: it must not stop itself.
        assert!(s.contains("$p.Id -ne $PID"));
        assert!(s.contains("Remove-NetFirewallRule"));
        assert!(s.contains(r"'c:\etc\kubernetes\bin'"));
    }
}
