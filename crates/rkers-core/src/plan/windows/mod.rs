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

mod files;
mod host_plan;
mod steps;
#[cfg(test)]
mod tests;
mod wins;

pub use self::files::*;
pub(crate) use self::host_plan::*;
pub use self::steps::*;
pub use self::wins::*;

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
    super::Platform::of(facts) == super::Platform::Windows
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
