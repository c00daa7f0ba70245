//! `network:`, `authentication:`, `authorization:` and `ingress:` of cluster.yml, and the
//! settings of each network plugin (calico, flannel, canal, weave, aci).

use super::*;

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct NetworkConfig {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub plugin: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub options: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub mtu: i64,
    #[serde(
        alias = "calicoNetworkProvider",
        skip_serializing_if = "Option::is_none"
    )]
    pub calico_network_provider: Option<CalicoNetworkProvider>,
    #[serde(
        alias = "canalNetworkProvider",
        skip_serializing_if = "Option::is_none"
    )]
    pub canal_network_provider: Option<CanalNetworkProvider>,
    #[serde(
        alias = "flannelNetworkProvider",
        skip_serializing_if = "Option::is_none"
    )]
    pub flannel_network_provider: Option<FlannelNetworkProvider>,
    #[serde(
        alias = "weaveNetworkProvider",
        skip_serializing_if = "Option::is_none"
    )]
    pub weave_network_provider: Option<WeaveNetworkProvider>,
    #[serde(alias = "aciNetworkProvider", skip_serializing_if = "Option::is_none")]
    pub aci_network_provider: Option<AciNetworkProvider>,
    #[serde(
        alias = "nodeSelector",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    #[serde(alias = "updateStrategy", skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// RKE v1.8's `enable_br_netfilter` (default true): kube-proxy gets
    /// `RKE_KUBE_PROXY_BR_NETFILTER=true`, on which rke-tools' entrypoint loads br_netfilter.
    #[serde(alias = "enableBrNetfilter", skip_serializing_if = "Option::is_none")]
    pub enable_br_netfilter: Option<bool>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuthWebhookConfig {
    #[serde(
        alias = "configFile",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub config_file: String,
    #[serde(
        alias = "cacheTimeout",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cache_timeout: String,
}

impl fmt::Debug for AuthWebhookConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthWebhookConfig")
            .field("config_file", &Redacted(&self.config_file))
            .field("cache_timeout", &self.cache_timeout)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuthnConfig {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub strategy: String,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub sans: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<AuthWebhookConfig>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuthzConfig {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mode: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub options: BTreeMap<String, String>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct IngressConfig {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub provider: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub options: BTreeMap<String, String>,
    #[serde(
        alias = "nodeSelector",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    #[serde(
        alias = "extraArgs",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub extra_args: BTreeMap<String, String>,
    #[serde(
        alias = "dnsPolicy",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub dns_policy: String,
    #[serde(
        alias = "extraEnvs",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extra_envs: Vec<serde_json::Value>,
    #[serde(
        alias = "extraVolumes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extra_volumes: Vec<serde_json::Value>,
    #[serde(
        alias = "extraVolumeMounts",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extra_volume_mounts: Vec<serde_json::Value>,
    #[serde(alias = "updateStrategy", skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(
        alias = "httpPort",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub http_port: i64,
    #[serde(
        alias = "httpsPort",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub https_port: i64,
    #[serde(
        alias = "networkMode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub network_mode: String,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(alias = "defaultBackend", skip_serializing_if = "Option::is_none")]
    pub default_backend: Option<bool>,
    #[serde(
        alias = "defaultHttpBackendPriorityClassName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub default_http_backend_priority_class_name: String,
    #[serde(
        alias = "nginxIngressControllerPriorityClassName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub nginx_ingress_controller_priority_class_name: String,
    #[serde(alias = "defaultIngressClass", skip_serializing_if = "Option::is_none")]
    pub default_ingress_class: Option<bool>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct CalicoNetworkProvider {
    #[serde(
        rename(deserialize = "cloudprovider"),
        alias = "cloudProvider",
        deserialize_with = "nullable"
    )]
    pub cloud_provider: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct FlannelNetworkProvider {
    #[serde(deserialize_with = "nullable")]
    pub iface: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct CanalNetworkProvider {
    #[serde(deserialize_with = "nullable")]
    pub iface: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct WeaveNetworkProvider {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub password: String,
}

impl fmt::Debug for WeaveNetworkProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeaveNetworkProvider")
            .field("password", &Redacted(&self.password))
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AciNetworkProvider {
    #[serde(
        alias = "systemId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub system_id: String,
    #[serde(
        alias = "apicHosts",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub apic_hosts: Vec<String>,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    #[serde(
        alias = "apicUserName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_user_name: String,
    #[serde(
        alias = "apicUserKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_user_key: String,
    #[serde(
        alias = "apicUserCrt",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_user_crt: String,
    #[serde(
        alias = "apicRefreshTime",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_refresh_time: String,
    #[serde(
        alias = "vmmDomain",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vmm_domain: String,
    #[serde(
        alias = "vmmController",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vmm_controller: String,
    #[serde(
        alias = "encapType",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub encap_type: String,
    #[serde(
        alias = "nodeSubnet",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_subnet: String,
    #[serde(
        alias = "mcastRangeStart",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mcast_range_start: String,
    #[serde(
        alias = "mcastRangeEnd",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mcast_range_end: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aep: String,
    #[serde(
        alias = "vrfName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vrf_name: String,
    #[serde(
        alias = "vrfTenant",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vrf_tenant: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub l3out: String,
    #[serde(
        alias = "l3outExternalNetworks",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub l3out_external_networks: Vec<String>,
    #[serde(
        alias = "externDynamic",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub extern_dynamic: String,
    #[serde(
        alias = "externStatic",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub extern_static: String,
    #[serde(
        alias = "nodeSvcSubnet",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_svc_subnet: String,
    #[serde(
        alias = "kubeApiVlan",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kube_api_vlan: String,
    #[serde(
        alias = "serviceVlan",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub service_vlan: String,
    #[serde(
        alias = "infraVlan",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub infra_vlan: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        alias = "ovsMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ovs_memory_limit: String,
    #[serde(
        alias = "ovsMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ovs_memory_request: String,
    #[serde(
        alias = "imagePullPolicy",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub image_pull_policy: String,
    #[serde(
        alias = "imagePullSecret",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub image_pull_secret: String,
    #[serde(
        alias = "serviceMonitorInterval",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub service_monitor_interval: String,
    #[serde(
        alias = "pbrTrackingNonSnat",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub pbr_tracking_non_snat: String,
    #[serde(
        alias = "installIstio",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub install_istio: String,
    #[serde(
        alias = "istioProfile",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub istio_profile: String,
    #[serde(
        alias = "dropLogEnable",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub drop_log_enable: String,
    #[serde(
        alias = "controllerLogLevel",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub controller_log_level: String,
    #[serde(
        alias = "hostAgentLogLevel",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub host_agent_log_level: String,
    #[serde(
        alias = "opflexLogLevel",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_log_level: String,
    #[serde(
        alias = "useAciCniPriorityClass",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_aci_cni_priority_class: String,
    #[serde(
        alias = "noPriorityClass",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub no_priority_class: String,
    #[serde(
        alias = "maxNodesSvcGraph",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub max_nodes_svc_graph: String,
    #[serde(
        alias = "snatContractScope",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snat_contract_scope: String,
    #[serde(
        alias = "podSubnetChunkSize",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub pod_subnet_chunk_size: String,
    #[serde(
        alias = "enableEndpointSlice",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub enable_endpoint_slice: String,
    #[serde(
        alias = "snatNamespace",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snat_namespace: String,
    #[serde(
        alias = "epRegistry",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ep_registry: String,
    #[serde(
        alias = "opflexMode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_mode: String,
    #[serde(
        alias = "snatPortRangeStart",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snat_port_range_start: String,
    #[serde(
        alias = "snatPortRangeEnd",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snat_port_range_end: String,
    #[serde(
        alias = "snatPortsPerNode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snat_ports_per_node: String,
    #[serde(
        alias = "opflexClientSsl",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_client_ssl: String,
    #[serde(
        alias = "usePrivilegedContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_privileged_container: String,
    #[serde(
        alias = "useHostNetnsVolume",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_host_netns_volume: String,
    #[serde(
        alias = "useOpflexServerVolume",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_opflex_server_volume: String,
    #[serde(
        alias = "subnetDomainName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subnet_domain_name: String,
    #[serde(
        alias = "kafkaBrokers",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub kafka_brokers: Vec<String>,
    #[serde(
        alias = "kafkaClientCrt",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kafka_client_crt: String,
    #[serde(
        alias = "kafkaClientKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kafka_client_key: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub capic: String,
    #[serde(
        alias = "useAciAnywhereCrd",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_aci_anywhere_crd: String,
    #[serde(
        alias = "overlayVrfName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub overlay_vrf_name: String,
    #[serde(
        alias = "gbpPodSubnet",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub gbp_pod_subnet: String,
    #[serde(
        alias = "runGbpContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub run_gbp_container: String,
    #[serde(
        alias = "runOpflexServerContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub run_opflex_server_container: String,
    #[serde(
        alias = "opflexServerPort",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_server_port: String,
    #[serde(
        alias = "durationWaitForNetwork",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub duration_wait_for_network: String,
    #[serde(
        alias = "disableWaitForNetwork",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub disable_wait_for_network: String,
    #[serde(
        alias = "apicSubscriptionDelay",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_subscription_delay: String,
    #[serde(
        alias = "apicRefreshTickerAdjust",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_refresh_ticker_adjust: String,
    #[serde(
        alias = "disablePeriodicSnatGlobalInfoSync",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub disable_periodic_snat_global_info_sync: String,
    #[serde(
        alias = "opflexDeviceDeleteTimeout",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_device_delete_timeout: String,
    #[serde(
        alias = "mtuHeadRoom",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mtu_head_room: String,
    #[serde(
        alias = "nodePodIfEnable",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_pod_if_enable: String,
    #[serde(
        alias = "sriovEnable",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub sriov_enable: String,
    #[serde(
        alias = "multusDisable",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub multus_disable: String,
    #[serde(
        alias = "useClusterRole",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_cluster_role: String,
    #[serde(
        alias = "noWaitForServiceEpReadiness",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub no_wait_for_service_ep_readiness: String,
    #[serde(
        alias = "addExternalSubnetsToRdconfig",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub add_external_subnets_to_rdconfig: String,
    #[serde(
        alias = "serviceGraphEndpointAddDelay",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub service_graph_endpoint_add_delay: String,
    #[serde(
        alias = "serviceGraphEndpointAddServices",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub service_graph_endpoint_add_services: Vec<BTreeMap<String, String>>,
    #[serde(
        alias = "hppOptimization",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub hpp_optimization: String,
    #[serde(
        alias = "sleepTimeSnatGlobalInfoSync",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub sleep_time_snat_global_info_sync: String,
    #[serde(
        alias = "opflexAgentOpflexAsyncjsonEnabled",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_opflex_asyncjson_enabled: String,
    #[serde(
        alias = "opflexAgentOvsAsyncjsonEnabled",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_ovs_asyncjson_enabled: String,
    #[serde(
        alias = "opflexAgentPolicyRetryDelayTimer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_policy_retry_delay_timer: String,
    #[serde(
        alias = "aciMultipod",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_multipod: String,
    #[serde(
        alias = "opflexDeviceReconnectWaitTimeout",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_device_reconnect_wait_timeout: String,
    #[serde(
        alias = "aciMultipodUbuntu",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_multipod_ubuntu: String,
    #[serde(
        alias = "dhcpRenewMaxRetryCount",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub dhcp_renew_max_retry_count: String,
    #[serde(
        alias = "dhcpDelay",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub dhcp_delay: String,
    #[serde(
        alias = "useSystemNodePriorityClass",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub use_system_node_priority_class: String,
    #[serde(
        alias = "aciContainersControllerMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_controller_memory_request: String,
    #[serde(
        alias = "aciContainersControllerMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_controller_memory_limit: String,
    #[serde(
        alias = "aciContainersHostMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_host_memory_request: String,
    #[serde(
        alias = "aciContainersHostMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_host_memory_limit: String,
    #[serde(
        alias = "mcastDaemonMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mcast_daemon_memory_request: String,
    #[serde(
        alias = "mcastDaemonMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mcast_daemon_memory_limit: String,
    #[serde(
        alias = "opflexAgentMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_memory_request: String,
    #[serde(
        alias = "opflexAgentMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_memory_limit: String,
    #[serde(
        alias = "aciContainersMemoryRequest",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_memory_request: String,
    #[serde(
        alias = "aciContainersMemoryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_containers_memory_limit: String,
    #[serde(
        alias = "opflexAgentStatistics",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_statistics: String,
    #[serde(
        alias = "addExternalContractToDefaultEpg",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub add_external_contract_to_default_epg: String,
    #[serde(
        alias = "enableOpflexAgentReconnect",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub enable_opflex_agent_reconnect: String,
    #[serde(
        alias = "opflexOpensslCompat",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_openssl_compat: String,
    #[serde(
        alias = "nodeSnatRedirectExclude",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub node_snat_redirect_exclude: Vec<BTreeMap<String, String>>,
    #[serde(
        alias = "tolerationSeconds",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub toleration_seconds: String,
    #[serde(
        alias = "disableHppRendering",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub disable_hpp_rendering: String,
    #[serde(
        alias = "apicConnectionRetryLimit",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub apic_connection_retry_limit: String,
    #[serde(
        alias = "taintNotReadyNode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub taint_not_ready_node: String,
    #[serde(
        alias = "dropLogDisableEvents",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub drop_log_disable_events: String,
    #[serde(
        alias = "opflexStartupEnabled",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_startup_enabled: String,
    #[serde(
        alias = "opflexStartupPolicyDuration",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_startup_policy_duration: String,
    #[serde(
        alias = "opflexStartupResolveAftConn",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_startup_resolve_aft_conn: String,
    #[serde(
        alias = "opflexSwitchSyncDelay",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_switch_sync_delay: String,
    #[serde(
        alias = "opflexSwitchSyncDynamic",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_switch_sync_dynamic: String,
    #[serde(
        alias = "unknownMacUnicastAction",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub unknown_mac_unicast_action: String,
    #[serde(
        alias = "enableHppDirect",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub enable_hpp_direct: String,
    #[serde(
        alias = "opflexAgentResetWaitDelay",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub opflex_agent_reset_wait_delay: String,
}

impl fmt::Debug for AciNetworkProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AciNetworkProvider")
            .field("system_id", &self.system_id)
            .field("apic_hosts", &self.apic_hosts)
            .field("token", &Redacted(&self.token))
            .field("apic_user_name", &self.apic_user_name)
            .field("apic_user_key", &Redacted(&self.apic_user_key))
            .field("apic_user_crt", &self.apic_user_crt)
            .field("apic_refresh_time", &self.apic_refresh_time)
            .field("vmm_domain", &self.vmm_domain)
            .field("vmm_controller", &self.vmm_controller)
            .field("encap_type", &self.encap_type)
            .field("node_subnet", &self.node_subnet)
            .field("mcast_range_start", &self.mcast_range_start)
            .field("mcast_range_end", &self.mcast_range_end)
            .field("aep", &self.aep)
            .field("vrf_name", &self.vrf_name)
            .field("vrf_tenant", &self.vrf_tenant)
            .field("l3out", &self.l3out)
            .field("l3out_external_networks", &self.l3out_external_networks)
            .field("extern_dynamic", &self.extern_dynamic)
            .field("extern_static", &self.extern_static)
            .field("node_svc_subnet", &self.node_svc_subnet)
            .field("kube_api_vlan", &self.kube_api_vlan)
            .field("service_vlan", &self.service_vlan)
            .field("infra_vlan", &self.infra_vlan)
            .field("tenant", &self.tenant)
            .field("ovs_memory_limit", &self.ovs_memory_limit)
            .field("ovs_memory_request", &self.ovs_memory_request)
            .field("image_pull_policy", &self.image_pull_policy)
            .field("image_pull_secret", &self.image_pull_secret)
            .field("service_monitor_interval", &self.service_monitor_interval)
            .field("pbr_tracking_non_snat", &self.pbr_tracking_non_snat)
            .field("install_istio", &self.install_istio)
            .field("istio_profile", &self.istio_profile)
            .field("drop_log_enable", &self.drop_log_enable)
            .field("controller_log_level", &self.controller_log_level)
            .field("host_agent_log_level", &self.host_agent_log_level)
            .field("opflex_log_level", &self.opflex_log_level)
            .field(
                "use_aci_cni_priority_class",
                &self.use_aci_cni_priority_class,
            )
            .field("no_priority_class", &self.no_priority_class)
            .field("max_nodes_svc_graph", &self.max_nodes_svc_graph)
            .field("snat_contract_scope", &self.snat_contract_scope)
            .field("pod_subnet_chunk_size", &self.pod_subnet_chunk_size)
            .field("enable_endpoint_slice", &self.enable_endpoint_slice)
            .field("snat_namespace", &self.snat_namespace)
            .field("ep_registry", &self.ep_registry)
            .field("opflex_mode", &self.opflex_mode)
            .field("snat_port_range_start", &self.snat_port_range_start)
            .field("snat_port_range_end", &self.snat_port_range_end)
            .field("snat_ports_per_node", &self.snat_ports_per_node)
            .field("opflex_client_ssl", &self.opflex_client_ssl)
            .field("use_privileged_container", &self.use_privileged_container)
            .field("use_host_netns_volume", &self.use_host_netns_volume)
            .field("use_opflex_server_volume", &self.use_opflex_server_volume)
            .field("subnet_domain_name", &self.subnet_domain_name)
            .field("kafka_brokers", &self.kafka_brokers)
            .field("kafka_client_crt", &self.kafka_client_crt)
            .field("kafka_client_key", &Redacted(&self.kafka_client_key))
            .field("capic", &self.capic)
            .field("use_aci_anywhere_crd", &self.use_aci_anywhere_crd)
            .field("overlay_vrf_name", &self.overlay_vrf_name)
            .field("gbp_pod_subnet", &self.gbp_pod_subnet)
            .field("run_gbp_container", &self.run_gbp_container)
            .field(
                "run_opflex_server_container",
                &self.run_opflex_server_container,
            )
            .field("opflex_server_port", &self.opflex_server_port)
            .field("duration_wait_for_network", &self.duration_wait_for_network)
            .field("disable_wait_for_network", &self.disable_wait_for_network)
            .field("apic_subscription_delay", &self.apic_subscription_delay)
            .field(
                "apic_refresh_ticker_adjust",
                &self.apic_refresh_ticker_adjust,
            )
            .field(
                "disable_periodic_snat_global_info_sync",
                &self.disable_periodic_snat_global_info_sync,
            )
            .field(
                "opflex_device_delete_timeout",
                &self.opflex_device_delete_timeout,
            )
            .field("mtu_head_room", &self.mtu_head_room)
            .field("node_pod_if_enable", &self.node_pod_if_enable)
            .field("sriov_enable", &self.sriov_enable)
            .field("multus_disable", &self.multus_disable)
            .field("use_cluster_role", &self.use_cluster_role)
            .field(
                "no_wait_for_service_ep_readiness",
                &self.no_wait_for_service_ep_readiness,
            )
            .field(
                "add_external_subnets_to_rdconfig",
                &self.add_external_subnets_to_rdconfig,
            )
            .field(
                "service_graph_endpoint_add_delay",
                &self.service_graph_endpoint_add_delay,
            )
            .field(
                "service_graph_endpoint_add_services",
                &self.service_graph_endpoint_add_services,
            )
            .field("hpp_optimization", &self.hpp_optimization)
            .field(
                "sleep_time_snat_global_info_sync",
                &self.sleep_time_snat_global_info_sync,
            )
            .field(
                "opflex_agent_opflex_asyncjson_enabled",
                &self.opflex_agent_opflex_asyncjson_enabled,
            )
            .field(
                "opflex_agent_ovs_asyncjson_enabled",
                &self.opflex_agent_ovs_asyncjson_enabled,
            )
            .field(
                "opflex_agent_policy_retry_delay_timer",
                &self.opflex_agent_policy_retry_delay_timer,
            )
            .field("aci_multipod", &self.aci_multipod)
            .field(
                "opflex_device_reconnect_wait_timeout",
                &self.opflex_device_reconnect_wait_timeout,
            )
            .field("aci_multipod_ubuntu", &self.aci_multipod_ubuntu)
            .field(
                "dhcp_renew_max_retry_count",
                &self.dhcp_renew_max_retry_count,
            )
            .field("dhcp_delay", &self.dhcp_delay)
            .field(
                "use_system_node_priority_class",
                &self.use_system_node_priority_class,
            )
            .field(
                "aci_containers_controller_memory_request",
                &self.aci_containers_controller_memory_request,
            )
            .field(
                "aci_containers_controller_memory_limit",
                &self.aci_containers_controller_memory_limit,
            )
            .field(
                "aci_containers_host_memory_request",
                &self.aci_containers_host_memory_request,
            )
            .field(
                "aci_containers_host_memory_limit",
                &self.aci_containers_host_memory_limit,
            )
            .field(
                "mcast_daemon_memory_request",
                &self.mcast_daemon_memory_request,
            )
            .field("mcast_daemon_memory_limit", &self.mcast_daemon_memory_limit)
            .field(
                "opflex_agent_memory_request",
                &self.opflex_agent_memory_request,
            )
            .field("opflex_agent_memory_limit", &self.opflex_agent_memory_limit)
            .field(
                "aci_containers_memory_request",
                &self.aci_containers_memory_request,
            )
            .field(
                "aci_containers_memory_limit",
                &self.aci_containers_memory_limit,
            )
            .field("opflex_agent_statistics", &self.opflex_agent_statistics)
            .field(
                "add_external_contract_to_default_epg",
                &self.add_external_contract_to_default_epg,
            )
            .field(
                "enable_opflex_agent_reconnect",
                &self.enable_opflex_agent_reconnect,
            )
            .field("opflex_openssl_compat", &self.opflex_openssl_compat)
            .field(
                "node_snat_redirect_exclude",
                &self.node_snat_redirect_exclude,
            )
            .field("toleration_seconds", &self.toleration_seconds)
            .field("disable_hpp_rendering", &self.disable_hpp_rendering)
            .field(
                "apic_connection_retry_limit",
                &self.apic_connection_retry_limit,
            )
            .field("taint_not_ready_node", &self.taint_not_ready_node)
            .field("drop_log_disable_events", &self.drop_log_disable_events)
            .field("opflex_startup_enabled", &self.opflex_startup_enabled)
            .field(
                "opflex_startup_policy_duration",
                &self.opflex_startup_policy_duration,
            )
            .field(
                "opflex_startup_resolve_aft_conn",
                &self.opflex_startup_resolve_aft_conn,
            )
            .field("opflex_switch_sync_delay", &self.opflex_switch_sync_delay)
            .field(
                "opflex_switch_sync_dynamic",
                &self.opflex_switch_sync_dynamic,
            )
            .field(
                "unknown_mac_unicast_action",
                &self.unknown_mac_unicast_action,
            )
            .field("enable_hpp_direct", &self.enable_hpp_direct)
            .field(
                "opflex_agent_reset_wait_delay",
                &self.opflex_agent_reset_wait_delay,
            )
            .finish()
    }
}
