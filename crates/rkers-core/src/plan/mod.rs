//! The plan: pure functions from an already defaulted cluster config, the version's default
//! component flags (KDM service options), per-host facts and the etcd membership context to the
//! desired state of every host — the complete container specs RKE1 would run (§14), the files
//! each host gets (§12, §13) and the port checks (§10). No I/O happens here.
//!
//! Specs reproduce RKE1's so that containers RKE1 created compare equal under RKE1's own
//! comparison (§22.1: image, entrypoint, cmd, env, binds and security options as sets). Flags are
//! rendered sorted (RKE1 renders a Go map in random order; the comparison ignores order).
//!
//! Decisions on §33:
//! - §33.2 (etcd `User` is `<uid>:<uid>` upstream): fixed, we emit `<uid>:<gid>`. RKE1's
//!   comparison does not look at `User`, so an adopted etcd container is not restarted for it.
//! - §33.6 (etcd `--initial-cluster*` flip-flop): we emit RKE1's exact flags (a member being added
//!   and the other ready members get `existing` and the ready list; a plain run gets `new` and the
//!   full list), so freshly created containers match RKE1's. [`ETCD_DONT_CARE_FLAGS`] lists the
//!   flags `diff` must ignore when comparing a running etcd, which removes the spurious restart.
//! - §33.7 is a phase decision (not the plan's).

mod containers;
pub mod encryption;
mod files;
mod flags;
pub mod goyaml;
mod leader_election;
pub mod permissions;
mod platform;
mod util;
mod windows;
mod windows_host;

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::config::types::RkeConfig;

pub use containers::{default_rke_tools, optional_files, s3_backup_flags};
pub use files::{
    admission_configuration_yaml, audit_policy_yaml, cloud_config_file, config_checksum,
    kubelet_docker_config, md5_hex,
};
pub use flags::{apply_service_options, render_flags};
pub use leader_election::lease_loss_window;
pub use platform::Platform;
pub use util::{join_path, remove_z_from_binds};
pub use windows::{
    CONTAINER_USER, Expose, ExposeProtocol, OVERLAY_NETWORK_NAME, STEP_DONE_MARKER,
    STEP_POWERSHELL, WINDOWS_MIN_VXLAN_VNI, WINDOWS_PREFIX_PATH, WINDOWS_VXLAN_PORT,
    WINS_CONFIG_PATH, WINS_HOST_DIR, WINS_PIPE_BIND, WINS_PROCESS_PREFIX, WINS_SERVICE_NAME,
    WindowsHostPlan, WindowsRemovePlan, WindowsSetup, WinsConfig, WinsProcess,
    check_wins_list_value, encode_powershell, is_windows, orphan_cleanup_command,
    remove_plan_windows, validate_windows, windows_prefix_path, windows_privileged_step,
    wins_process_name,
};
pub use windows_host::{
    AgentMode, HOST_AGENT_NAME, HOST_AGENT_TAG, HostReport, HostRequest, IMAGE_WINS_PATHS,
    ReportError, WinsRequest, WinsStatus, host_agent_command, host_agent_script, windows_path,
};

/// Container names (RKE1's, unchanged).
pub const ETCD: &str = "etcd";
pub const ETCD_ROLLING_SNAPSHOTS: &str = "etcd-rolling-snapshots";
pub const KUBE_APISERVER: &str = "kube-apiserver";
pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub const KUBE_SCHEDULER: &str = "kube-scheduler";
pub const KUBELET: &str = "kubelet";
pub const KUBE_PROXY: &str = "kube-proxy";
pub const NGINX_PROXY: &str = "nginx-proxy";
pub const SERVICE_SIDEKICK: &str = "service-sidekick";
/// What a container is renamed to while its replacement is created (RKE1's rolling replace,
/// §22.1): `old-kubelet`.
pub const OLD_PREFIX: &str = "old-";

/// The label every long-running RKE1 component carries.
pub const CONTAINER_NAME_LABEL: &str = "io.rancher.rke.container.name";

/// etcd flags whose value RKE1 changes between runs without effect on a running member (§33.6);
/// `diff` must not replace an etcd container because of them.
pub const ETCD_DONT_CARE_FLAGS: &[&str] = &["--initial-cluster", "--initial-cluster-state"];

/// Whether a rendered etcd argument (`--name=value` or bare `--name`) is one `diff` ignores.
/// Whether the cluster's kubelet refuses to start on a cgroup v1 host: from v1.35 (KEP-5573,
/// Remove cgroup v1 support, beta) unless `services.kubelet.extra_args` sets `fail-cgroupv1`
/// to `false`. `up` and `preflight` refuse such hosts before anything changes: kubelet would
/// restart for ever on each of them.
pub fn kubelet_refuses_cgroup_v1(cfg: &crate::config::RkeConfig) -> bool {
    util::at_least(&cfg.kubernetes_version, 1, 35)
        && cfg
            .services
            .kubelet
            .extra_args
            .get("fail-cgroupv1")
            .is_none_or(|v| v.trim() != "false")
}

pub fn is_etcd_dont_care_arg(arg: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(name, _)| name);
    ETCD_DONT_CARE_FLAGS.contains(&name)
}

/// KDM default flags for the cluster's version (`k8s-service-options`), per component.
/// Conventions kept from KDM: value `""` deletes the flag; for kubelet, `''` sets an empty value
/// and a value starting with `[PREFIX_PATH]` gets the host's prefix path.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceOptions {
    pub etcd: BTreeMap<String, String>,
    pub kube_api: BTreeMap<String, String>,
    pub kube_controller: BTreeMap<String, String>,
    pub scheduler: BTreeMap<String, String>,
    pub kubelet: BTreeMap<String, String>,
    pub kubeproxy: BTreeMap<String, String>,
}

/// What the plan needs to know about one host, from `docker info` (§8.3, §8.4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostFacts {
    /// Docker's `OSType`: `linux` or `windows`.
    pub os_type: String,
    /// Docker's `OperatingSystem` (selects the prefix path on RancherOS, CoreOS, ...).
    pub operating_system: String,
    /// Docker's `DockerRootDir`.
    pub docker_root_dir: String,
    /// Docker reports `selinux` (or `name=selinux`) among its security options.
    pub selinux_enabled: bool,
    /// Docker's `Architecture` (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// Docker's `CgroupDriver` (the rke-tools wrapper passes it to kubelet itself).
    pub cgroup_driver: String,
}

impl HostFacts {
    /// Docker reports a Windows engine ([`windows::is_windows`]).
    pub fn is_windows(&self) -> bool {
        windows::is_windows(self)
    }
}

impl Default for HostFacts {
    fn default() -> Self {
        HostFacts {
            os_type: "linux".into(),
            operating_system: String::new(),
            docker_root_dir: "/var/lib/docker".into(),
            selinux_enabled: false,
            arch: "x86_64".into(),
            cgroup_driver: "cgroupfs".into(),
        }
    }
}

/// etcd membership while members are being added (§16.3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtcdContext {
    /// Addresses of the members that are up ("ready"), in cluster order; when set and non-empty
    /// `--initial-cluster` lists only these instead of every etcd host.
    pub ready_hosts: Option<Vec<String>>,
    /// Addresses of hosts that join an existing cluster (`--initial-cluster-state=existing`).
    pub existing: BTreeSet<String>,
}

impl EtcdContext {
    /// A plain run: every etcd host in `--initial-cluster`, state `new`.
    pub fn fresh() -> Self {
        EtcdContext::default()
    }

    /// The context RKE1 builds after `MemberAdd` of one host: every etcd host not in
    /// `still_pending` is ready and joins the existing cluster (the host just added included).
    pub fn while_adding(etcd_hosts_in_order: &[String], still_pending: &BTreeSet<String>) -> Self {
        let ready: Vec<String> = etcd_hosts_in_order
            .iter()
            .filter(|a| !still_pending.contains(*a))
            .cloned()
            .collect();
        EtcdContext {
            existing: ready.iter().cloned().collect(),
            ready_hosts: Some(ready),
        }
    }
}

/// Everything [`build`] needs besides the config.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// The fully defaulted cluster config.
    pub config: &'a RkeConfig,
    /// KDM service options for the config's version (Linux set).
    pub service_options: &'a ServiceOptions,
    /// KDM's Windows set (`Catalog::windows_service_options`); needed only when a host is
    /// Windows, and planning one without it is an error.
    pub windows_service_options: Option<&'a ServiceOptions>,
    /// Facts per host address; every node of the config must have an entry.
    pub host_facts: &'a BTreeMap<String, HostFacts>,
    pub etcd: &'a EtcdContext,
    /// The encryption provider file (state's `encryptionConfig`) when secrets encryption is on.
    pub encryption_config: Option<&'a str>,
    /// Tag of the rke-tools (alpine) image of KDM's default Kubernetes version: RKE1 runs the
    /// rolling-snapshot container with it when the alpine image is `rancher/rke-tools` (§33.9).
    /// `None` keeps the configured tag.
    pub default_rke_tools_tag: Option<&'a str>,
    /// RKE1's docker-in-docker mode (`up --dind`): the nodes are containers on a private
    /// network, so kubelet's and kube-proxy's health endpoints (and, below v1.24, the
    /// controller manager's and scheduler's) listen on every address.
    pub dind: bool,
}

/// One Docker container as RKE1 would create it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    /// Docker `Entrypoint` (RKE1 puts wrapper + binary + flags here for k8s components).
    pub entrypoint: Vec<String>,
    /// Docker `Cmd`.
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub binds: Vec<String>,
    pub volumes_from: Vec<String>,
    pub network_mode: Option<String>,
    pub pid_mode: Option<String>,
    pub privileged: bool,
    /// `always`, `on-failure`, or none.
    pub restart_policy: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub security_opt: Vec<String>,
    pub user: Option<String>,
    pub port_bindings: Vec<PortBinding>,
    pub health_check: Option<HealthCheck>,
    /// `false` for the Linux sidekick: created, never started.
    pub start: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBinding {
    pub host_ip: String,
    pub host_port: u16,
    pub container_port: u16,
    pub protocol: String,
}

/// How RKE1 checks a component is healthy (§15).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// Requested through an SSH `direct-tcpip` channel on the node.
    pub url: String,
    /// Certificate bundle name used as TLS client certificate (`kube-apiserver` for the
    /// apiserver, `kube-node` for etcd), if any.
    pub client_certificate: Option<String>,
}

/// A file RKE1 deploys to a host (with its file-deployer, §13).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSpec {
    /// Path on the host (prefix path applied).
    pub path: String,
    /// Path inside containers, as flags reference it.
    pub container_path: String,
    pub contents: String,
    pub mode: u32,
    /// The env variable carrying the MD5 of `contents` in the containers that read the file.
    pub checksum_env: Option<String>,
    /// RKE1 deletes the file instead of writing an empty one (all but the cloud-config).
    pub remove_when_empty: bool,
}

/// A port a host must be reachable on from other hosts (RKE1's plan `portChecks`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCheck {
    pub address: String,
    pub port: u16,
    pub protocol: String,
}

/// One row of the §10 connectivity matrix: from `source` (an address) to every `targets`
/// internal address on every port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCheckSet {
    pub description: String,
    pub source: String,
    pub targets: Vec<String>,
    pub ports: Vec<u16>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    pub etcd: bool,
    pub controlplane: bool,
    pub worker: bool,
}

/// The desired state of one host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPlan {
    pub address: String,
    pub internal_address: String,
    /// `hostname_override` (the Kubernetes node name).
    pub hostname: String,
    pub roles: Roles,
    pub prefix_path: String,
    /// In deployment order.
    pub containers: IndexMap<String, ContainerSpec>,
    pub files: Vec<FileSpec>,
    /// Certificate bundle names the cert-deployer writes to this host (§11.1).
    pub certificate_names: Vec<String>,
    pub port_checks: Vec<PortCheck>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterPlan {
    pub hosts: Vec<HostPlan>,
    /// The host-to-host checks of §10 step 2, in RKE1's order.
    pub port_checks: Vec<PortCheckSet>,
    /// Per Windows host address: wins config, directories and wins-managed processes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub windows: BTreeMap<String, WindowsSetup>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("host {0}: no Docker facts were gathered for it")]
    MissingHostFacts(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("cloud provider {provider}: {cause}")]
    CloudConfig { provider: String, cause: String },
    #[error("host {host}: {cause}")]
    Host { host: String, cause: String },
}

/// Certificate bundle name of a per-host certificate (§11): `<prefix>-<internal address if set
/// and different from the address, else the address>` with dots replaced by dashes, lowercased.
pub fn cert_name_for_host(address: &str, internal_address: &str, prefix: &str) -> String {
    let base = if !internal_address.is_empty() && internal_address != address {
        internal_address
    } else {
        address
    };
    format!("{prefix}-{}", base.replace('.', "-").to_lowercase())
}

/// The prefix path of a host (§8.4): the cluster's `prefix_path` unless it is `/`, else chosen
/// from Docker's `OperatingSystem`.
pub fn host_prefix_path(cluster_prefix: &str, operating_system: &str) -> String {
    if cluster_prefix != "/" {
        return cluster_prefix.to_string();
    }
    let by_os = [
        ("Boot2Docker", "/mnt/sda1/rke"),
        ("RancherOS", "/opt/rke"),
        ("CoreOS", "/opt/rke"),
        ("Flatcar", "/opt/rke"),
        ("Windows", "c:/"),
    ];
    by_os
        .iter()
        .find(|(marker, _)| operating_system.contains(marker))
        .map_or_else(|| cluster_prefix.to_string(), |(_, p)| p.to_string())
}

/// Builds the plan of every host of the config, in `nodes` order (a node listed twice with the
/// same address is planned once, with the union of its roles).
pub fn build(input: &PlanInput) -> Result<ClusterPlan, PlanError> {
    let cluster = containers::ClusterView::new(input)?;
    let mut hosts = Vec::new();
    let mut windows = BTreeMap::new();
    for host in &cluster.hosts {
        let facts = input
            .host_facts
            .get(&host.address)
            .ok_or_else(|| PlanError::MissingHostFacts(host.address.clone()))?;
        match Platform::of(facts) {
            Platform::Linux => hosts.push(cluster.linux_host_plan(host, facts)?),
            Platform::Windows => {
                let plan = windows::windows_host_plan(input, &cluster.hosts, host, facts)?;
                windows.insert(host.address.clone(), plan.setup);
                hosts.push(plan.host);
            }
        }
    }
    Ok(ClusterPlan {
        hosts,
        port_checks: cluster.port_check_matrix(),
        windows,
    })
}
