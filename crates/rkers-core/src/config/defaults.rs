//! RKE1's defaulting of a parsed cluster.yml (spec §4, upstream `cluster/defaults.go`).
//!
//! Defaults are written into the config itself because RKE1 stores the defaulted config in
//! the state file; a later run compares against it.

use std::collections::BTreeMap;

use serde_json::json;

use super::VersionCatalog;
use super::types::*;
use super::validate::{parse_k8s_version, version_at_least};

pub const DEFAULT_SERVICE_CLUSTER_IP_RANGE: &str = "10.43.0.0/16";
pub const DEFAULT_NODE_PORT_RANGE: &str = "30000-32767";
pub const DEFAULT_CLUSTER_CIDR: &str = "10.42.0.0/16";
pub const DEFAULT_CLUSTER_DNS_SERVICE: &str = "10.43.0.10";
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
pub const DEFAULT_CLUSTER_NAME: &str = "local";
pub const DEFAULT_SSH_KEY_PATH: &str = "~/.ssh/id_rsa";
pub const DEFAULT_SSH_PORT: &str = "22";
pub const DEFAULT_DOCKER_SOCKET: &str = "/var/run/docker.sock";
pub const DEFAULT_AUTH_STRATEGY: &str = "x509";
pub const DEFAULT_AUTHORIZATION_MODE: &str = "rbac";
pub const DEFAULT_AUTHN_CACHE_TIMEOUT: &str = "5s";
pub const DEFAULT_NETWORK_PLUGIN: &str = "canal";
pub const DEFAULT_NETWORK_CLOUD_PROVIDER: &str = "none";
pub const DEFAULT_INGRESS_PROVIDER: &str = "nginx";
pub const DEFAULT_MONITORING_PROVIDER: &str = "metrics-server";
pub const DEFAULT_ETCD_SNAPSHOT_CREATION: &str = "12h";
pub const DEFAULT_ETCD_SNAPSHOT_RETENTION: &str = "72h";
pub const DEFAULT_BACKUP_INTERVAL_HOURS: i64 = 12;
pub const DEFAULT_BACKUP_RETENTION: i64 = 6;
/// Seconds to wait for one-shot backup/restore containers (RKE1's docker wait timeout).
pub const DEFAULT_BACKUP_TIMEOUT: i64 = 300;
pub const DEFAULT_ADDON_JOB_TIMEOUT: i64 = 45;
pub const DEFAULT_MAX_UNAVAILABLE_WORKER: &str = "10%";
pub const DEFAULT_MAX_UNAVAILABLE_CONTROLPLANE: &str = "1";
pub const DEFAULT_NODE_DRAIN_TIMEOUT: i64 = 120;
pub const DEFAULT_NODE_DRAIN_GRACE_PERIOD: i64 = -1;
pub const DEFAULT_HTTP_PORT: i64 = 80;
pub const DEFAULT_HTTPS_PORT: i64 = 443;
pub const DEFAULT_AUDIT_LOG_PATH: &str = "/var/log/kube-audit/audit-log.json";
pub const ADMISSION_CONTROL_CONFIG_FILE_ARG: &str = "admission-control-config-file";
pub const FLEXVOLUME_PLUGIN_DIR: &str =
    "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/nodeagent~uds";

/// The webhook kubeconfig RKE1 writes when `authentication.strategy` includes `webhook` and no
/// `config_file` is given (must stay byte-identical: it is stored in the state file).
pub const DEFAULT_AUTHN_WEBHOOK_CONFIG: &str = "
apiVersion: v1
kind: Config
clusters:
- name: Default
  cluster:
    insecure-skip-tls-verify: true
    server: http://127.0.0.1:6440/v1/authenticate
users:
- name: Default
  user:
    insecure-skip-tls-verify: true
current-context: webhook
contexts:
- name: webhook
  context:
    user: Default
    cluster: Default
";

fn set_if_empty(field: &mut String, value: &str) {
    if field.is_empty() {
        *field = value.to_string();
    }
}

fn at_least(version: &str, min: (u64, u64, u64)) -> bool {
    parse_k8s_version(version)
        .map(|v| version_at_least(&v, min))
        .unwrap_or(false)
}

/// Fills in everything RKE1 fills in before planning. Never fails: values it cannot default
/// (for example because `kubernetes_version` does not parse) are left empty for
/// [`super::validate`] to report.
pub fn apply_defaults(cfg: &mut RkeConfig, catalog: &dyn VersionCatalog) {
    set_if_empty(&mut cfg.ssh_key_path, DEFAULT_SSH_KEY_PATH);
    set_if_empty(&mut cfg.prefix_path, "/");

    if !cfg.bastion_host.address.is_empty() {
        set_if_empty(&mut cfg.bastion_host.port, DEFAULT_SSH_PORT);
        let key_path = cfg.ssh_key_path.clone();
        set_if_empty(&mut cfg.bastion_host.ssh_key_path, &key_path);
        cfg.bastion_host.ssh_agent_auth = cfg.ssh_agent_auth;
    }
    for node in &mut cfg.nodes {
        if node.internal_address.is_empty() {
            node.internal_address = node.address.clone();
        }
        if node.hostname_override.is_empty() {
            node.hostname_override = node.address.clone();
        }
        set_if_empty(&mut node.ssh_key_path, &cfg.ssh_key_path);
        set_if_empty(&mut node.port, DEFAULT_SSH_PORT);
        node.hostname_override = node.hostname_override.to_lowercase();
        // `ssh_agent_auth` is a cluster-wide setting in RKE1: the node's own value is replaced.
        node.ssh_agent_auth = cfg.ssh_agent_auth;
        // RKE1 defaults the socket only when dialing; the state file keeps it empty.
    }

    set_if_empty(&mut cfg.authorization.mode, DEFAULT_AUTHORIZATION_MODE);
    set_if_empty(&mut cfg.ingress.provider, DEFAULT_INGRESS_PROVIDER);
    set_if_empty(&mut cfg.cluster_name, DEFAULT_CLUSTER_NAME);
    if cfg.kubernetes_version.is_empty() {
        cfg.kubernetes_version = catalog.default_version();
    }
    if cfg.addon_job_timeout == 0 {
        cfg.addon_job_timeout = DEFAULT_ADDON_JOB_TIMEOUT;
    }
    set_if_empty(&mut cfg.monitoring.provider, DEFAULT_MONITORING_PROVIDER);

    set_system_image_defaults(cfg, catalog);

    if cfg.cloud_provider.name == "aws"
        && cfg.cloud_provider.use_instance_metadata_hostname.is_none()
    {
        cfg.cloud_provider.use_instance_metadata_hostname = Some(false);
    }

    // Kubernetes 1.24 removed dockershim: cri-dockerd is on unless the user says otherwise.
    if at_least(&cfg.kubernetes_version, (1, 24, 0)) && cfg.enable_cri_dockerd.is_none() {
        cfg.enable_cri_dockerd = Some(true);
    }

    set_dns_defaults(cfg);
    set_services_defaults(cfg);
    set_network_defaults(cfg);
    set_authn_defaults(cfg);
    set_upgrade_strategy_defaults(cfg);
    set_addons_defaults(cfg);
}

/// Fills every empty `system_images` entry from the catalog; with a private registry marked
/// `is_default`, defaulted images (not the user's own) get its URL as prefix.
fn set_system_image_defaults(cfg: &mut RkeConfig, catalog: &dyn VersionCatalog) {
    let Some(defaults) = catalog.system_images(&cfg.kubernetes_version) else {
        return;
    };
    let registry = cfg
        .private_registries
        .iter()
        .find(|r| r.is_default)
        .map(|r| r.url.clone())
        .unwrap_or_default();
    let images = &mut cfg.system_images;
    for (key, slot) in images.slots_mut() {
        if !slot.is_empty() {
            continue;
        }
        if let Some(image) = defaults.get(key) {
            *slot = if registry.is_empty() || image.is_empty() {
                image.clone()
            } else {
                format!("{registry}/{image}")
            };
        }
    }
}

/// Where the images of a version without published metadata come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnpublishedImages {
    /// The cluster's state recorded them for this very version (RKE1 always records every
    /// image in `currentState.rkeConfig.systemImages`).
    State,
    /// Only cluster.yml `system_images` can give them (validation says which are missing).
    SystemImages,
}

impl UnpublishedImages {
    /// What the run (and its dry run) says about the images.
    pub fn note(self, version: &str) -> String {
        let from = match self {
            UnpublishedImages::State => "the cluster's state",
            UnpublishedImages::SystemImages => "cluster.yml system_images",
        };
        format!(
            "kubernetes_version {version}: images from {from}; this version's metadata is not published"
        )
    }
}

/// For a version RKE1 shipped without published metadata: fills every empty `system_images`
/// slot from `state_config` (the config the state last applied) when it is at the same
/// version; images of another version are never borrowed. `None` for any other version.
pub fn images_for_unpublished_version(
    cfg: &mut RkeConfig,
    catalog: &dyn VersionCatalog,
    state_config: Option<&RkeConfig>,
) -> Option<UnpublishedImages> {
    if !catalog.is_unpublished(&cfg.kubernetes_version) {
        return None;
    }
    let Some(recorded) = state_config.filter(|s| s.kubernetes_version == cfg.kubernetes_version)
    else {
        return Some(UnpublishedImages::SystemImages);
    };
    let recorded: BTreeMap<&str, &String> = recorded.system_images.slots().into_iter().collect();
    let mut filled = false;
    for (key, slot) in cfg.system_images.slots_mut() {
        if let Some(image) = recorded.get(key).filter(|i| !i.is_empty())
            && slot.is_empty()
        {
            *slot = (*image).clone();
            filled = true;
        }
    }
    Some(if filled {
        UnpublishedImages::State
    } else {
        UnpublishedImages::SystemImages
    })
}

impl SystemImages {
    /// Every image slot with its `system_images` YAML key.
    pub fn slots(&self) -> Vec<(&'static str, &String)> {
        let s = self;
        vec![
            ("etcd", &s.etcd),
            ("alpine", &s.alpine),
            ("nginx_proxy", &s.nginx_proxy),
            ("cert_downloader", &s.cert_downloader),
            (
                "kubernetes_services_sidecar",
                &s.kubernetes_services_sidecar,
            ),
            ("kubedns", &s.kubedns),
            ("dnsmasq", &s.dnsmasq),
            ("kubedns_sidecar", &s.kubedns_sidecar),
            ("kubedns_autoscaler", &s.kubedns_autoscaler),
            ("coredns", &s.coredns),
            ("coredns_autoscaler", &s.coredns_autoscaler),
            ("nodelocal", &s.nodelocal),
            ("kubernetes", &s.kubernetes),
            ("flannel", &s.flannel),
            ("flannel_cni", &s.flannel_cni),
            ("calico_node", &s.calico_node),
            ("calico_cni", &s.calico_cni),
            ("calico_controllers", &s.calico_controllers),
            ("calico_ctl", &s.calico_ctl),
            ("calico_flexvol", &s.calico_flexvol),
            ("canal_node", &s.canal_node),
            ("canal_cni", &s.canal_cni),
            ("canal_controllers", &s.canal_controllers),
            ("canal_flannel", &s.canal_flannel),
            ("canal_flexvol", &s.canal_flexvol),
            ("weave_node", &s.weave_node),
            ("weave_cni", &s.weave_cni),
            ("pod_infra_container", &s.pod_infra_container),
            ("ingress", &s.ingress),
            ("ingress_backend", &s.ingress_backend),
            ("ingress_webhook", &s.ingress_webhook),
            ("metrics_server", &s.metrics_server),
            (
                "windows_pod_infra_container",
                &s.windows_pod_infra_container,
            ),
            ("aci_cni_deploy_container", &s.aci_cni_deploy_container),
            ("aci_host_container", &s.aci_host_container),
            ("aci_opflex_container", &s.aci_opflex_container),
            ("aci_mcast_container", &s.aci_mcast_container),
            ("aci_ovs_container", &s.aci_ovs_container),
            ("aci_controller_container", &s.aci_controller_container),
            ("aci_gbp_server_container", &s.aci_gbp_server_container),
            (
                "aci_opflex_server_container",
                &s.aci_opflex_server_container,
            ),
        ]
    }

    /// Mutable access to every image slot with its `system_images` YAML key.
    pub fn slots_mut(&mut self) -> Vec<(&'static str, &mut String)> {
        let s = self;
        vec![
            ("etcd", &mut s.etcd),
            ("alpine", &mut s.alpine),
            ("nginx_proxy", &mut s.nginx_proxy),
            ("cert_downloader", &mut s.cert_downloader),
            (
                "kubernetes_services_sidecar",
                &mut s.kubernetes_services_sidecar,
            ),
            ("kubedns", &mut s.kubedns),
            ("dnsmasq", &mut s.dnsmasq),
            ("kubedns_sidecar", &mut s.kubedns_sidecar),
            ("kubedns_autoscaler", &mut s.kubedns_autoscaler),
            ("coredns", &mut s.coredns),
            ("coredns_autoscaler", &mut s.coredns_autoscaler),
            ("nodelocal", &mut s.nodelocal),
            ("kubernetes", &mut s.kubernetes),
            ("flannel", &mut s.flannel),
            ("flannel_cni", &mut s.flannel_cni),
            ("calico_node", &mut s.calico_node),
            ("calico_cni", &mut s.calico_cni),
            ("calico_controllers", &mut s.calico_controllers),
            ("calico_ctl", &mut s.calico_ctl),
            ("calico_flexvol", &mut s.calico_flexvol),
            ("canal_node", &mut s.canal_node),
            ("canal_cni", &mut s.canal_cni),
            ("canal_controllers", &mut s.canal_controllers),
            ("canal_flannel", &mut s.canal_flannel),
            ("canal_flexvol", &mut s.canal_flexvol),
            ("weave_node", &mut s.weave_node),
            ("weave_cni", &mut s.weave_cni),
            ("pod_infra_container", &mut s.pod_infra_container),
            ("ingress", &mut s.ingress),
            ("ingress_backend", &mut s.ingress_backend),
            ("ingress_webhook", &mut s.ingress_webhook),
            ("metrics_server", &mut s.metrics_server),
            (
                "windows_pod_infra_container",
                &mut s.windows_pod_infra_container,
            ),
            ("aci_cni_deploy_container", &mut s.aci_cni_deploy_container),
            ("aci_host_container", &mut s.aci_host_container),
            ("aci_opflex_container", &mut s.aci_opflex_container),
            ("aci_mcast_container", &mut s.aci_mcast_container),
            ("aci_ovs_container", &mut s.aci_ovs_container),
            ("aci_controller_container", &mut s.aci_controller_container),
            ("aci_gbp_server_container", &mut s.aci_gbp_server_container),
            (
                "aci_opflex_server_container",
                &mut s.aci_opflex_server_container,
            ),
        ]
    }
}

fn set_dns_defaults(cfg: &mut RkeConfig) {
    if cfg.dns.as_ref().is_some_and(|d| !d.provider.is_empty()) {
        return;
    }
    let Ok(version) = parse_k8s_version(&cfg.kubernetes_version) else {
        return;
    };
    let provider = if version_at_least(&version, (1, 14, 0)) {
        "coredns"
    } else {
        "kube-dns"
    };
    cfg.dns.get_or_insert_with(DnsConfig::default).provider = provider.to_string();
}

fn set_services_defaults(cfg: &mut RkeConfig) {
    // Per-service images are not configurable in RKE1: they always follow system_images.
    let kubernetes = cfg.system_images.kubernetes.clone();
    let services = &mut cfg.services;
    services.kube_api.image = kubernetes.clone();
    services.scheduler.image = kubernetes.clone();
    services.kube_controller.image = kubernetes.clone();
    services.kubelet.image = kubernetes.clone();
    services.kubeproxy.image = kubernetes;
    services.etcd.image = cfg.system_images.etcd.clone();

    if services.etcd.snapshot.is_none() {
        services.etcd.snapshot = Some(true);
    }
    set_if_empty(
        &mut services.kube_api.service_cluster_ip_range,
        DEFAULT_SERVICE_CLUSTER_IP_RANGE,
    );
    set_if_empty(
        &mut services.kube_api.service_node_port_range,
        DEFAULT_NODE_PORT_RANGE,
    );
    set_if_empty(
        &mut services.kube_controller.service_cluster_ip_range,
        DEFAULT_SERVICE_CLUSTER_IP_RANGE,
    );
    set_if_empty(
        &mut services.kube_controller.cluster_cidr,
        DEFAULT_CLUSTER_CIDR,
    );
    set_if_empty(
        &mut services.kubelet.cluster_dns_server,
        DEFAULT_CLUSTER_DNS_SERVICE,
    );
    set_if_empty(&mut services.kubelet.cluster_domain, DEFAULT_CLUSTER_DOMAIN);
    set_if_empty(
        &mut services.kubelet.infra_container_image,
        &cfg.system_images.pod_infra_container,
    );
    set_if_empty(&mut services.etcd.creation, DEFAULT_ETCD_SNAPSHOT_CREATION);
    set_if_empty(
        &mut services.etcd.retention,
        DEFAULT_ETCD_SNAPSHOT_RETENTION,
    );

    let etcd_args = &mut services.etcd.extra_args;
    etcd_args
        .entry("election-timeout".to_string())
        .or_insert_with(|| "5000".to_string());
    etcd_args
        .entry("heartbeat-interval".to_string())
        .or_insert_with(|| "500".to_string());

    if let Some(backup) = services.etcd.backup_config.as_mut()
        && backup.enabled != Some(false)
    {
        if backup.interval_hours == 0 {
            backup.interval_hours = DEFAULT_BACKUP_INTERVAL_HOURS;
        }
        if backup.retention == 0 {
            backup.retention = DEFAULT_BACKUP_RETENTION;
        }
        if backup.timeout == 0 {
            backup.timeout = DEFAULT_BACKUP_TIMEOUT;
        }
    }

    let kube_api = &mut services.kube_api;
    if !kube_api
        .extra_args
        .contains_key(ADMISSION_CONTROL_CONFIG_FILE_ARG)
    {
        if let Some(limit) = kube_api.event_rate_limit.as_mut()
            && limit.enabled
            && limit.configuration.is_none()
        {
            limit.configuration = Some(default_event_rate_limit_config());
        }
        // RKE1 also defaults this with `authorization.mode: none` and then rejects its own
        // default ("PodSecurity can't be enabled with RBAC support disabled"); we only default
        // it where it can work.
        if at_least(&cfg.kubernetes_version, (1, 23, 0))
            && cfg.authorization.mode == DEFAULT_AUTHORIZATION_MODE
            && kube_api.pod_security_configuration.is_empty()
        {
            kube_api.pod_security_configuration = "privileged".to_string();
        }
    }

    if needs_audit_log(&cfg.kubernetes_version) && kube_api.audit_log.is_none() {
        kube_api.audit_log = Some(AuditLog {
            enabled: true,
            configuration: None,
        });
    }
    if let Some(audit) = kube_api.audit_log.as_mut()
        && audit.enabled
    {
        match audit.configuration.as_mut() {
            None => audit.configuration = Some(default_audit_log_config()),
            Some(config) if config.policy.is_none() => {
                config.policy = Some(default_audit_policy());
            }
            Some(_) => {}
        }
    }
}

/// kube-apiserver audit logging is on by default from 1.15.11, 1.16.8 and 1.17.4.
fn needs_audit_log(version: &str) -> bool {
    let Ok(v) = parse_k8s_version(version) else {
        return false;
    };
    match (v.major, v.minor) {
        (1, 15) => version_at_least(&v, (1, 15, 11)),
        (1, 16) => version_at_least(&v, (1, 16, 8)),
        _ => version_at_least(&v, (1, 17, 4)),
    }
}

pub fn default_audit_policy() -> serde_json::Value {
    json!({
        "kind": "Policy",
        "apiVersion": "audit.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "rules": [{"level": "Metadata"}]
    })
}

pub fn default_audit_log_config() -> AuditLogConfig {
    AuditLogConfig {
        max_age: 30,
        max_backup: 10,
        max_size: 100,
        path: DEFAULT_AUDIT_LOG_PATH.to_string(),
        format: "json".to_string(),
        policy: Some(default_audit_policy()),
    }
}

pub fn default_event_rate_limit_config() -> serde_json::Value {
    json!({
        "kind": "Configuration",
        "apiVersion": "eventratelimit.admission.k8s.io/v1alpha1",
        "limits": [{"type": "Server", "qps": 5000, "burst": 20000}]
    })
}

/// `network.enable_br_netfilter` when cluster.yml does not set it. RKE v1.8.0 and later default
/// it to true (`setClusterNetworkDefaults`), which puts `RKE_KUBE_PROXY_BR_NETFILTER=true` in
/// kube-proxy's environment; a cluster an earlier release built runs kube-proxy without it and
/// its state has no `enableBrNetfilter`. So a new cluster gets RKE v1.8's default, and a cluster
/// with a state keeps what its state says (absent: off): adopting a cluster RKE v1.7 or earlier
/// built restarts no kube-proxy for it, and one RKE v1.8 built keeps it on. The value settled
/// here is written to the state, so the next run reads the same.
pub fn settle_br_netfilter(cfg: &mut RkeConfig, previous: Option<&RkeConfig>) {
    if cfg.network.enable_br_netfilter.is_none() {
        cfg.network.enable_br_netfilter =
            Some(previous.is_none_or(|p| p.network.enable_br_netfilter == Some(true)));
    }
}

fn set_network_defaults(cfg: &mut RkeConfig) {
    let network = &mut cfg.network;
    set_if_empty(&mut network.plugin, DEFAULT_NETWORK_PLUGIN);
    let mut defaults: BTreeMap<&str, String> = BTreeMap::new();
    match network.plugin.as_str() {
        "calico" => {
            defaults.insert(
                "calico_cloud_provider",
                DEFAULT_NETWORK_CLOUD_PROVIDER.into(),
            );
            defaults.insert(
                "calico_flex_volume_plugin_dir",
                FLEXVOLUME_PLUGIN_DIR.into(),
            );
        }
        "flannel" => {
            defaults.insert("flannel_backend_type", "vxlan".into());
            defaults.insert("flannel_backend_port", "8472".into());
            defaults.insert("flannel_backend_vni", "1".into());
        }
        "canal" => {
            defaults.insert("canal_flannel_backend_type", "vxlan".into());
            defaults.insert("canal_flannel_backend_port", "8472".into());
            defaults.insert("canal_flannel_backend_vni", "1".into());
            defaults.insert("canal_flex_volume_plugin_dir", FLEXVOLUME_PLUGIN_DIR.into());
        }
        "aci" => {
            for (key, value) in ACI_OPTION_DEFAULTS {
                defaults.insert(key, (*value).to_string());
            }
        }
        _ => {}
    }
    if let Some(calico) = network.calico_network_provider.as_mut() {
        set_if_empty(&mut calico.cloud_provider, DEFAULT_NETWORK_CLOUD_PROVIDER);
        defaults.insert("calico_cloud_provider", calico.cloud_provider.clone());
    }
    if let Some(flannel) = &network.flannel_network_provider {
        defaults.insert("flannel_iface", flannel.iface.clone());
    }
    if let Some(canal) = &network.canal_network_provider {
        defaults.insert("canal_iface", canal.iface.clone());
    }
    if let Some(weave) = &network.weave_network_provider {
        defaults.insert("WeavePassword", weave.password.clone());
    }
    if let Some(aci) = network.aci_network_provider.as_mut() {
        aci_provider_options(aci, &mut defaults);
    }
    for (key, value) in defaults {
        network.options.entry(key.to_string()).or_insert(value);
    }
}

/// Option defaults RKE1 sets for the `aci` plugin even without `aci_network_provider`.
const ACI_OPTION_DEFAULTS: &[(&str, &str)] = &[
    ("aci_ovs_memory_limit", "1Gi"),
    ("aci_ovs_memory_request", "128Mi"),
    ("aci_image_pull_policy", "Always"),
    ("aci_pbr_tracking_non_snat", "false"),
    ("aci_install_istio", "false"),
    ("aci_istio_profile", "demo"),
    ("aci_drop_log_enable", "true"),
    ("aci_controller_log_level", "info"),
    ("aci_host_agent_log_level", "info"),
    ("aci_opflex_agent_log_level", "info"),
    ("aci_apic_refresh_time", "1200"),
    ("aci_server_monitor_interval", "5"),
    ("aci_use_aci_cni_priority_class", "false"),
    ("aci_no_priority_class", "false"),
    ("aci_max_nodes_svc_graph", "32"),
    ("aci_snat_contract_scope", "global"),
    ("aci_pod_subnet_chunk_size", "32"),
    ("aci_enable_endpoint_slice", "false"),
    ("aci_snat_namespace", "aci-containers-system"),
    ("aci_snat_port_range_start", "5000"),
    ("aci_snat_port_range_end", "65000"),
    ("aci_snat_ports_per_node", "3000"),
    ("aci_opflex_client_ssl", "true"),
    ("aci_use_privileged_container", "false"),
    ("aci_use_opflex_server_volume", "false"),
    ("aci_use_host_netns_volume", "false"),
    ("aci_capic", "false"),
    ("aci_use_aci_anywhere_crd", "false"),
    ("aci_run_gbp_container", "false"),
    ("aci_run_opflex_server_container", "false"),
    ("aci_duration_wait_for_network", "210"),
    ("aci_disable_wait_for_network", "false"),
    ("aci_use_cluster_role", "true"),
    ("aci_apic_subscription_delay", "0"),
    ("aci_apic_refresh_ticker_adjust", "0"),
    ("aci_disable_periodic_snat_global_info_sync", "false"),
    ("aci_opflex_device_delete_timeout", "0"),
    ("aci_mtu_head_room", "0"),
    ("aci_node_pod_if_enable", "false"),
    ("aci_sriov_enable", "false"),
    ("aci_multus_disable", "true"),
    ("aci_no_wait_for_service_ep_readiness", "false"),
    ("aci_add_external_subnets_to_rdconfig", "false"),
    ("aci_service_graph_endpoint_add_delay", "0"),
    ("aci_hpp_optimization", "false"),
    ("aci_sleep_time_snat_global_info_sync", "0"),
    ("aci_opflex_agent_opflex_asyncjson_enabled", "false"),
    ("aci_opflex_agent_ovs_asyncjson_enabled", "false"),
    ("aci_opflex_agent_policy_retry_delay_timer", "10"),
    ("aci_aci_multipod", "false"),
    ("aci_aci_multipod_ubuntu", "false"),
    ("aci_dhcp_renew_max_retry_count", "0"),
    ("aci_dhcp_delay", "0"),
    ("aci_use_system_node_priority_class", "false"),
    ("aci_aci_containers_memory_limit", "3Gi"),
    ("aci_aci_containers_memory_request", "128Mi"),
    ("aci_opflex_agent_statistics", "true"),
    ("aci_add_external_contract_to_default_epg", "false"),
    ("aci_enable_opflex_agent_reconnect", "false"),
    ("aci_opflex_openssl_compat", "false"),
    ("aci_toleration_seconds", "600"),
    ("aci_disable_hpp_rendering", "false"),
    ("aci_apic_connection_retry_limit", "5"),
    ("aci_taint_not_ready_node", "false"),
    ("aci_drop_log_disable_events", "false"),
    ("aci_opflex_startup_enabled", "false"),
    ("aci_opflex_startup_policy_duration", "60"),
    ("aci_opflex_startup_resolve_aft_conn", "false"),
    ("aci_opflex_switch_sync_delay", "5"),
    ("aci_opflex_switch_sync_dynamic", "10"),
    ("aci_enable_hpp_direct", "false"),
];

/// Defaults the ACI provider fields, then maps every one onto its `network.options` key.
fn aci_provider_options(aci: &mut AciNetworkProvider, options: &mut BTreeMap<&str, String>) {
    let fields: Vec<(&'static str, &mut String)> = vec![
        ("aci_ovs_memory_limit", &mut aci.ovs_memory_limit),
        ("aci_ovs_memory_request", &mut aci.ovs_memory_request),
        ("aci_image_pull_policy", &mut aci.image_pull_policy),
        ("aci_pbr_tracking_non_snat", &mut aci.pbr_tracking_non_snat),
        ("aci_install_istio", &mut aci.install_istio),
        ("aci_istio_profile", &mut aci.istio_profile),
        ("aci_drop_log_enable", &mut aci.drop_log_enable),
        ("aci_controller_log_level", &mut aci.controller_log_level),
        ("aci_host_agent_log_level", &mut aci.host_agent_log_level),
        ("aci_opflex_agent_log_level", &mut aci.opflex_log_level),
        ("aci_apic_refresh_time", &mut aci.apic_refresh_time),
        (
            "aci_server_monitor_interval",
            &mut aci.service_monitor_interval,
        ),
        ("aci_no_priority_class", &mut aci.no_priority_class),
        (
            "aci_use_aci_cni_priority_class",
            &mut aci.use_aci_cni_priority_class,
        ),
        ("aci_max_nodes_svc_graph", &mut aci.max_nodes_svc_graph),
        ("aci_snat_contract_scope", &mut aci.snat_contract_scope),
        ("aci_pod_subnet_chunk_size", &mut aci.pod_subnet_chunk_size),
        ("aci_enable_endpoint_slice", &mut aci.enable_endpoint_slice),
        ("aci_snat_namespace", &mut aci.snat_namespace),
        ("aci_snat_port_range_start", &mut aci.snat_port_range_start),
        ("aci_snat_port_range_end", &mut aci.snat_port_range_end),
        ("aci_snat_ports_per_node", &mut aci.snat_ports_per_node),
        ("aci_opflex_client_ssl", &mut aci.opflex_client_ssl),
        (
            "aci_use_privileged_container",
            &mut aci.use_privileged_container,
        ),
        (
            "aci_use_opflex_server_volume",
            &mut aci.use_opflex_server_volume,
        ),
        ("aci_use_host_netns_volume", &mut aci.use_host_netns_volume),
        ("aci_capic", &mut aci.capic),
        ("aci_use_aci_anywhere_crd", &mut aci.use_aci_anywhere_crd),
        ("aci_run_gbp_container", &mut aci.run_gbp_container),
        (
            "aci_run_opflex_server_container",
            &mut aci.run_opflex_server_container,
        ),
        (
            "aci_duration_wait_for_network",
            &mut aci.duration_wait_for_network,
        ),
        (
            "aci_disable_wait_for_network",
            &mut aci.disable_wait_for_network,
        ),
        ("aci_use_cluster_role", &mut aci.use_cluster_role),
        (
            "aci_apic_subscription_delay",
            &mut aci.apic_subscription_delay,
        ),
        (
            "aci_apic_refresh_ticker_adjust",
            &mut aci.apic_refresh_ticker_adjust,
        ),
        (
            "aci_disable_periodic_snat_global_info_sync",
            &mut aci.disable_periodic_snat_global_info_sync,
        ),
        (
            "aci_opflex_device_delete_timeout",
            &mut aci.opflex_device_delete_timeout,
        ),
        ("aci_mtu_head_room", &mut aci.mtu_head_room),
        ("aci_node_pod_if_enable", &mut aci.node_pod_if_enable),
        ("aci_sriov_enable", &mut aci.sriov_enable),
        ("aci_multus_disable", &mut aci.multus_disable),
        (
            "aci_no_wait_for_service_ep_readiness",
            &mut aci.no_wait_for_service_ep_readiness,
        ),
        (
            "aci_add_external_subnets_to_rdconfig",
            &mut aci.add_external_subnets_to_rdconfig,
        ),
        (
            "aci_service_graph_endpoint_add_delay",
            &mut aci.service_graph_endpoint_add_delay,
        ),
        ("aci_hpp_optimization", &mut aci.hpp_optimization),
        (
            "aci_sleep_time_snat_global_info_sync",
            &mut aci.sleep_time_snat_global_info_sync,
        ),
        (
            "aci_opflex_agent_opflex_asyncjson_enabled",
            &mut aci.opflex_agent_opflex_asyncjson_enabled,
        ),
        (
            "aci_opflex_agent_ovs_asyncjson_enabled",
            &mut aci.opflex_agent_ovs_asyncjson_enabled,
        ),
        (
            "aci_opflex_agent_policy_retry_delay_timer",
            &mut aci.opflex_agent_policy_retry_delay_timer,
        ),
        ("aci_aci_multipod", &mut aci.aci_multipod),
        ("aci_aci_multipod_ubuntu", &mut aci.aci_multipod_ubuntu),
        (
            "aci_dhcp_renew_max_retry_count",
            &mut aci.dhcp_renew_max_retry_count,
        ),
        ("aci_dhcp_delay", &mut aci.dhcp_delay),
        (
            "aci_use_system_node_priority_class",
            &mut aci.use_system_node_priority_class,
        ),
        (
            "aci_aci_containers_memory_limit",
            &mut aci.aci_containers_memory_limit,
        ),
        (
            "aci_aci_containers_memory_request",
            &mut aci.aci_containers_memory_request,
        ),
        (
            "aci_opflex_agent_statistics",
            &mut aci.opflex_agent_statistics,
        ),
        (
            "aci_add_external_contract_to_default_epg",
            &mut aci.add_external_contract_to_default_epg,
        ),
        (
            "aci_enable_opflex_agent_reconnect",
            &mut aci.enable_opflex_agent_reconnect,
        ),
        ("aci_opflex_openssl_compat", &mut aci.opflex_openssl_compat),
        ("aci_toleration_seconds", &mut aci.toleration_seconds),
        ("aci_disable_hpp_rendering", &mut aci.disable_hpp_rendering),
        (
            "aci_apic_connection_retry_limit",
            &mut aci.apic_connection_retry_limit,
        ),
        ("aci_taint_not_ready_node", &mut aci.taint_not_ready_node),
        ("aci_enable_hpp_direct", &mut aci.enable_hpp_direct),
        (
            "aci_drop_log_disable_events",
            &mut aci.drop_log_disable_events,
        ),
        (
            "aci_opflex_startup_enabled",
            &mut aci.opflex_startup_enabled,
        ),
        (
            "aci_opflex_startup_policy_duration",
            &mut aci.opflex_startup_policy_duration,
        ),
        (
            "aci_opflex_startup_resolve_aft_conn",
            &mut aci.opflex_startup_resolve_aft_conn,
        ),
        (
            "aci_opflex_switch_sync_delay",
            &mut aci.opflex_switch_sync_delay,
        ),
        (
            "aci_opflex_switch_sync_dynamic",
            &mut aci.opflex_switch_sync_dynamic,
        ),
        // The following have no default; they are only copied.
        (
            "aci_opflex_device_reconnect_wait_timeout",
            &mut aci.opflex_device_reconnect_wait_timeout,
        ),
        ("aci_system_identifier", &mut aci.system_id),
        ("aci_token", &mut aci.token),
        ("aci_apic_user_name", &mut aci.apic_user_name),
        ("aci_apic_user_key", &mut aci.apic_user_key),
        ("aci_apic_user_crt", &mut aci.apic_user_crt),
        ("aci_vmm_domain", &mut aci.vmm_domain),
        ("aci_vmm_controller", &mut aci.vmm_controller),
        ("aci_encap_type", &mut aci.encap_type),
        ("aci_mcast_range_start", &mut aci.mcast_range_start),
        ("aci_mcast_range_end", &mut aci.mcast_range_end),
        ("aci_node_subnet", &mut aci.node_subnet),
        ("aci_aep", &mut aci.aep),
        ("aci_vrf_name", &mut aci.vrf_name),
        ("aci_vrf_tenant", &mut aci.vrf_tenant),
        ("aci_l3out", &mut aci.l3out),
        ("aci_dynamic_external_subnet", &mut aci.extern_dynamic),
        ("aci_static_external_subnet", &mut aci.extern_static),
        ("aci_service_graph_subnet", &mut aci.node_svc_subnet),
        ("aci_kubeapi_vlan", &mut aci.kube_api_vlan),
        ("aci_service_vlan", &mut aci.service_vlan),
        ("aci_infra_vlan", &mut aci.infra_vlan),
        ("aci_image_pull_secret", &mut aci.image_pull_secret),
        ("aci_tenant", &mut aci.tenant),
        ("aci_kafka_client_crt", &mut aci.kafka_client_crt),
        ("aci_kafka_client_key", &mut aci.kafka_client_key),
        ("aci_subnet_domain_name", &mut aci.subnet_domain_name),
        ("aci_ep_registry", &mut aci.ep_registry),
        ("aci_opflex_mode", &mut aci.opflex_mode),
        ("aci_overlay_vrf_name", &mut aci.overlay_vrf_name),
        ("aci_gbp_pod_subnet", &mut aci.gbp_pod_subnet),
        ("aci_opflex_server_port", &mut aci.opflex_server_port),
        (
            "aci_aci_containers_controller_memory_request",
            &mut aci.aci_containers_controller_memory_request,
        ),
        (
            "aci_aci_containers_controller_memory_limit",
            &mut aci.aci_containers_controller_memory_limit,
        ),
        (
            "aci_aci_containers_host_memory_request",
            &mut aci.aci_containers_host_memory_request,
        ),
        (
            "aci_aci_containers_host_memory_limit",
            &mut aci.aci_containers_host_memory_limit,
        ),
        (
            "aci_mcast_daemon_memory_request",
            &mut aci.mcast_daemon_memory_request,
        ),
        (
            "aci_mcast_daemon_memory_limit",
            &mut aci.mcast_daemon_memory_limit,
        ),
        (
            "aci_opflex_agent_memory_request",
            &mut aci.opflex_agent_memory_request,
        ),
        (
            "aci_opflex_agent_memory_limit",
            &mut aci.opflex_agent_memory_limit,
        ),
        (
            "aci_unknown_mac_unicast_action",
            &mut aci.unknown_mac_unicast_action,
        ),
        (
            "aci_opflex_agent_reset_wait_delay",
            &mut aci.opflex_agent_reset_wait_delay,
        ),
    ];
    for (key, field) in fields {
        if let Some((_, default)) = ACI_OPTION_DEFAULTS.iter().find(|(k, _)| *k == key) {
            set_if_empty(field, default);
        }
        options.insert(key, field.clone());
    }
}

fn set_authn_defaults(cfg: &mut RkeConfig) {
    let authn = &mut cfg.authentication;
    set_if_empty(&mut authn.strategy, DEFAULT_AUTH_STRATEGY);
    let webhook_enabled = authn
        .strategy
        .split('|')
        .any(|s| s.trim().eq_ignore_ascii_case("webhook"));
    if webhook_enabled && authn.webhook.is_none() {
        authn.webhook = Some(AuthWebhookConfig::default());
    }
    if let Some(webhook) = authn.webhook.as_mut() {
        set_if_empty(&mut webhook.config_file, DEFAULT_AUTHN_WEBHOOK_CONFIG);
        set_if_empty(&mut webhook.cache_timeout, DEFAULT_AUTHN_CACHE_TIMEOUT);
    }
}

fn set_upgrade_strategy_defaults(cfg: &mut RkeConfig) {
    let Some(strategy) = cfg.upgrade_strategy.as_mut() else {
        cfg.upgrade_strategy = Some(NodeUpgradeStrategy {
            max_unavailable_worker: DEFAULT_MAX_UNAVAILABLE_WORKER.to_string(),
            max_unavailable_controlplane: DEFAULT_MAX_UNAVAILABLE_CONTROLPLANE.to_string(),
            ..Default::default()
        });
        return;
    };
    set_if_empty(
        &mut strategy.max_unavailable_worker,
        DEFAULT_MAX_UNAVAILABLE_WORKER,
    );
    set_if_empty(
        &mut strategy.max_unavailable_controlplane,
        DEFAULT_MAX_UNAVAILABLE_CONTROLPLANE,
    );
    if strategy.drain == Some(true) {
        return;
    }
    if strategy.node_drain_input.is_none() {
        strategy.node_drain_input = Some(NodeDrainInput {
            ignore_daemonsets: Some(true),
            timeout: DEFAULT_NODE_DRAIN_TIMEOUT,
            grace_period: DEFAULT_NODE_DRAIN_GRACE_PERIOD,
            ..Default::default()
        });
    }
}

fn rolling(
    max_unavailable: serde_json::Value,
    max_surge: Option<serde_json::Value>,
) -> UpdateStrategy {
    UpdateStrategy {
        strategy: "RollingUpdate".to_string(),
        rolling_update: Some(RollingUpdate {
            max_unavailable: Some(max_unavailable),
            max_surge,
        }),
    }
}

fn daemonset_strategy_defaults(current: Option<UpdateStrategy>) -> UpdateStrategy {
    match current {
        Some(s) if s.strategy != "RollingUpdate" => s,
        Some(s)
            if s.rolling_update
                .as_ref()
                .is_some_and(|r| r.max_unavailable.is_some()) =>
        {
            s
        }
        _ => rolling(json!(1), None),
    }
}

fn deployment_strategy_defaults(current: Option<UpdateStrategy>) -> UpdateStrategy {
    match current {
        Some(s) if s.strategy != "RollingUpdate" => s,
        Some(mut s) if s.rolling_update.is_some() => {
            let r = s.rolling_update.as_mut().expect("checked above");
            r.max_unavailable.get_or_insert_with(|| json!("25%"));
            r.max_surge.get_or_insert_with(|| json!("25%"));
            s
        }
        _ => rolling(json!("25%"), Some(json!("25%"))),
    }
}

fn dns_strategy_defaults(
    current: Option<UpdateStrategy>,
    provider: &str,
) -> Option<UpdateStrategy> {
    if let Some(s) = &current
        && !s.strategy.is_empty()
        && s.strategy != "RollingUpdate"
    {
        return current;
    }
    let (unavailable, surge, coredns) = match provider {
        "coredns" => (json!(1), json!(0), true),
        "kube-dns" => (json!(0), json!("10%"), false),
        _ => return current,
    };
    match current {
        Some(mut s) if s.rolling_update.is_some() => {
            let r = s.rolling_update.as_mut().expect("checked above");
            if coredns {
                r.max_unavailable.get_or_insert(unavailable);
            } else {
                r.max_surge.get_or_insert(surge);
            }
            Some(s)
        }
        _ => Some(rolling(unavailable, Some(surge))),
    }
}

fn set_addons_defaults(cfg: &mut RkeConfig) {
    cfg.ingress.update_strategy = Some(daemonset_strategy_defaults(
        cfg.ingress.update_strategy.take(),
    ));
    cfg.network.update_strategy = Some(daemonset_strategy_defaults(
        cfg.network.update_strategy.take(),
    ));
    if let Some(dns) = cfg.dns.as_mut() {
        dns.update_strategy = dns_strategy_defaults(dns.update_strategy.take(), &dns.provider);
        if dns.linear_autoscaler_params.is_none() {
            dns.linear_autoscaler_params = Some(LinearAutoscalerParams {
                cores_per_replica: 128.0,
                nodes_per_replica: 4.0,
                min: 1,
                max: 0,
                prevent_single_point_failure: true,
            });
        }
    }
    cfg.monitoring.update_strategy = Some(deployment_strategy_defaults(
        cfg.monitoring.update_strategy.take(),
    ));
    if cfg.monitoring.replicas.is_none() {
        cfg.monitoring.replicas = Some(1);
    }

    let from_121 = at_least(&cfg.kubernetes_version, (1, 21, 0));
    if cfg.ingress.network_mode.is_empty() {
        cfg.ingress.network_mode = if from_121 { "hostPort" } else { "hostNetwork" }.to_string();
    }
    if cfg.ingress.http_port == 0 {
        cfg.ingress.http_port = DEFAULT_HTTP_PORT;
    }
    if cfg.ingress.https_port == 0 {
        cfg.ingress.https_port = DEFAULT_HTTPS_PORT;
    }
    if cfg.ingress.default_backend.is_none() {
        cfg.ingress.default_backend = Some(!from_121);
    }
    if cfg.ingress.default_ingress_class.is_none() {
        cfg.ingress.default_ingress_class = Some(true);
    }
}

impl Node {
    /// The Docker socket to tunnel to. RKE1 applies this default only when dialing, so the
    /// state file keeps an empty `docker_socket`.
    pub fn docker_socket_or_default(&self) -> &str {
        if self.docker_socket.is_empty() {
            DEFAULT_DOCKER_SOCKET
        } else {
            &self.docker_socket
        }
    }
}
