//! `cloud_provider:` of cluster.yml and the options of each cloud provider RKE1 knows (vSphere,
//! OpenStack, Azure, AWS, Harvester, custom).

use super::*;

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct CloudProvider {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        rename(deserialize = "useInstanceMetadataHostname"),
        skip_serializing_if = "Option::is_none"
    )]
    pub use_instance_metadata_hostname: Option<bool>,
    #[serde(
        rename(deserialize = "awsCloudProvider"),
        skip_serializing_if = "Option::is_none"
    )]
    pub aws_cloud_provider: Option<AwsCloudProvider>,
    #[serde(
        rename(deserialize = "azureCloudProvider"),
        skip_serializing_if = "Option::is_none"
    )]
    pub azure_cloud_provider: Option<AzureCloudProvider>,
    #[serde(
        rename(deserialize = "openstackCloudProvider"),
        skip_serializing_if = "Option::is_none"
    )]
    pub openstack_cloud_provider: Option<OpenstackCloudProvider>,
    #[serde(
        rename(deserialize = "vsphereCloudProvider"),
        skip_serializing_if = "Option::is_none"
    )]
    pub vsphere_cloud_provider: Option<VsphereCloudProvider>,
    #[serde(
        rename(deserialize = "harvesterCloudProvider"),
        skip_serializing_if = "Option::is_none"
    )]
    pub harvester_cloud_provider: Option<HarvesterCloudProvider>,
    #[serde(
        rename(deserialize = "customCloudProvider"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub custom_cloud_provider: String,
}

impl fmt::Debug for CloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudProvider")
            .field("name", &self.name)
            .field(
                "use_instance_metadata_hostname",
                &self.use_instance_metadata_hostname,
            )
            .field("aws_cloud_provider", &self.aws_cloud_provider)
            .field("azure_cloud_provider", &self.azure_cloud_provider)
            .field("openstack_cloud_provider", &self.openstack_cloud_provider)
            .field("vsphere_cloud_provider", &self.vsphere_cloud_provider)
            .field("harvester_cloud_provider", &self.harvester_cloud_provider)
            .field(
                "custom_cloud_provider",
                &Redacted(&self.custom_cloud_provider),
            )
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct VsphereCloudProvider {
    #[serde(deserialize_with = "nullable")]
    pub global: GlobalVsphereOpts,
    #[serde(
        alias = "virtualCenter",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub virtual_center: BTreeMap<String, VirtualCenterConfig>,
    #[serde(deserialize_with = "nullable")]
    pub network: NetworkVsphereOpts,
    #[serde(deserialize_with = "nullable")]
    pub disk: DiskVsphereOpts,
    #[serde(deserialize_with = "nullable")]
    pub workspace: WorkspaceVsphereOpts,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct GlobalVsphereOpts {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub password: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub server: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub port: String,
    #[serde(
        rename(serialize = "insecure-flag", deserialize = "insecure-flag"),
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub insecure_flag: bool,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub datacenter: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub datacenters: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub datastore: String,
    #[serde(
        rename(serialize = "working-dir", deserialize = "working-dir"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub working_dir: String,
    #[serde(
        rename(
            serialize = "soap-roundtrip-count",
            deserialize = "soap-roundtrip-count"
        ),
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub soap_roundtrip_count: i64,
    #[serde(
        rename(serialize = "vm-uuid", deserialize = "vm-uuid"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vm_uuid: String,
    #[serde(
        rename(serialize = "vm-name", deserialize = "vm-name"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub vm_name: String,
}

impl fmt::Debug for GlobalVsphereOpts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalVsphereOpts")
            .field("user", &self.user)
            .field("password", &Redacted(&self.password))
            .field("server", &self.server)
            .field("port", &self.port)
            .field("insecure_flag", &self.insecure_flag)
            .field("datacenter", &self.datacenter)
            .field("datacenters", &self.datacenters)
            .field("datastore", &self.datastore)
            .field("working_dir", &self.working_dir)
            .field("soap_roundtrip_count", &self.soap_roundtrip_count)
            .field("vm_uuid", &self.vm_uuid)
            .field("vm_name", &self.vm_name)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct VirtualCenterConfig {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub password: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub port: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub datacenters: String,
    #[serde(
        rename(
            serialize = "soap-roundtrip-count",
            deserialize = "soap-roundtrip-count"
        ),
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub soap_roundtrip_count: i64,
}

impl fmt::Debug for VirtualCenterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualCenterConfig")
            .field("user", &self.user)
            .field("password", &Redacted(&self.password))
            .field("port", &self.port)
            .field("datacenters", &self.datacenters)
            .field("soap_roundtrip_count", &self.soap_roundtrip_count)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct NetworkVsphereOpts {
    #[serde(
        rename(serialize = "public-network", deserialize = "public-network"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub public_network: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct DiskVsphereOpts {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub scsicontrollertype: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct WorkspaceVsphereOpts {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub server: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub datacenter: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub folder: String,
    #[serde(
        rename(serialize = "default-datastore", deserialize = "default-datastore"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub default_datastore: String,
    #[serde(
        rename(serialize = "resourcepool-path", deserialize = "resourcepool-path"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub resourcepool_path: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct OpenstackCloudProvider {
    #[serde(deserialize_with = "nullable")]
    pub global: GlobalOpenstackOpts,
    #[serde(alias = "loadBalancer", deserialize_with = "nullable")]
    pub load_balancer: LoadBalancerOpenstackOpts,
    #[serde(alias = "blockStorage", deserialize_with = "nullable")]
    pub block_storage: BlockStorageOpenstackOpts,
    #[serde(deserialize_with = "nullable")]
    pub route: RouteOpenstackOpts,
    #[serde(deserialize_with = "nullable")]
    pub metadata: MetadataOpenstackOpts,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct GlobalOpenstackOpts {
    #[serde(
        rename(serialize = "auth-url", deserialize = "auth-url"),
        deserialize_with = "nullable"
    )]
    pub auth_url: String,
    #[serde(deserialize_with = "nullable")]
    pub username: String,
    #[serde(
        rename(serialize = "user-id", deserialize = "user-id"),
        deserialize_with = "nullable"
    )]
    pub user_id: String,
    #[serde(deserialize_with = "nullable")]
    pub password: String,
    #[serde(
        rename(serialize = "tenant-id", deserialize = "tenant-id"),
        deserialize_with = "nullable"
    )]
    pub tenant_id: String,
    #[serde(
        rename(serialize = "tenant-name", deserialize = "tenant-name"),
        deserialize_with = "nullable"
    )]
    pub tenant_name: String,
    #[serde(
        rename(serialize = "trust-id", deserialize = "trust-id"),
        deserialize_with = "nullable"
    )]
    pub trust_id: String,
    #[serde(
        rename(serialize = "domain-id", deserialize = "domain-id"),
        deserialize_with = "nullable"
    )]
    pub domain_id: String,
    #[serde(
        rename(serialize = "domain-name", deserialize = "domain-name"),
        deserialize_with = "nullable"
    )]
    pub domain_name: String,
    #[serde(deserialize_with = "nullable")]
    pub region: String,
    #[serde(
        rename(serialize = "ca-file", deserialize = "ca-file"),
        deserialize_with = "nullable"
    )]
    pub ca_file: String,
}

impl fmt::Debug for GlobalOpenstackOpts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalOpenstackOpts")
            .field("auth_url", &self.auth_url)
            .field("username", &self.username)
            .field("user_id", &self.user_id)
            .field("password", &Redacted(&self.password))
            .field("tenant_id", &self.tenant_id)
            .field("tenant_name", &self.tenant_name)
            .field("trust_id", &self.trust_id)
            .field("domain_id", &self.domain_id)
            .field("domain_name", &self.domain_name)
            .field("region", &self.region)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct LoadBalancerOpenstackOpts {
    #[serde(
        rename(serialize = "lb-version", deserialize = "lb-version"),
        deserialize_with = "nullable"
    )]
    pub lb_version: String,
    #[serde(
        rename(serialize = "use-octavia", deserialize = "use-octavia"),
        deserialize_with = "nullable"
    )]
    pub use_octavia: bool,
    #[serde(
        rename(serialize = "subnet-id", deserialize = "subnet-id"),
        deserialize_with = "nullable"
    )]
    pub subnet_id: String,
    #[serde(
        rename(serialize = "floating-network-id", deserialize = "floating-network-id"),
        deserialize_with = "nullable"
    )]
    pub floating_network_id: String,
    #[serde(
        rename(serialize = "lb-method", deserialize = "lb-method"),
        deserialize_with = "nullable"
    )]
    pub lb_method: String,
    #[serde(
        rename(serialize = "lb-provider", deserialize = "lb-provider"),
        deserialize_with = "nullable"
    )]
    pub lb_provider: String,
    #[serde(
        rename(serialize = "create-monitor", deserialize = "create-monitor"),
        deserialize_with = "nullable"
    )]
    pub create_monitor: bool,
    #[serde(
        rename(serialize = "monitor-delay", deserialize = "monitor-delay"),
        deserialize_with = "nullable"
    )]
    pub monitor_delay: String,
    #[serde(
        rename(serialize = "monitor-timeout", deserialize = "monitor-timeout"),
        deserialize_with = "nullable"
    )]
    pub monitor_timeout: String,
    #[serde(
        rename(serialize = "monitor-max-retries", deserialize = "monitor-max-retries"),
        deserialize_with = "nullable"
    )]
    pub monitor_max_retries: i64,
    #[serde(
        rename(
            serialize = "manage-security-groups",
            deserialize = "manage-security-groups"
        ),
        deserialize_with = "nullable"
    )]
    pub manage_security_groups: bool,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct BlockStorageOpenstackOpts {
    #[serde(
        rename(serialize = "bs-version", deserialize = "bs-version"),
        deserialize_with = "nullable"
    )]
    pub bs_version: String,
    #[serde(
        rename(serialize = "trust-device-path", deserialize = "trust-device-path"),
        deserialize_with = "nullable"
    )]
    pub trust_device_path: bool,
    #[serde(
        rename(serialize = "ignore-volume-az", deserialize = "ignore-volume-az"),
        deserialize_with = "nullable"
    )]
    pub ignore_volume_az: bool,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RouteOpenstackOpts {
    #[serde(
        rename(serialize = "router-id", deserialize = "router-id"),
        deserialize_with = "nullable"
    )]
    pub router_id: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct MetadataOpenstackOpts {
    #[serde(
        rename(serialize = "search-order", deserialize = "search-order"),
        deserialize_with = "nullable"
    )]
    pub search_order: String,
    #[serde(
        rename(serialize = "request-timeout", deserialize = "request-timeout"),
        deserialize_with = "nullable"
    )]
    pub request_timeout: i64,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AzureCloudProvider {
    #[serde(deserialize_with = "nullable")]
    pub cloud: String,
    #[serde(rename(deserialize = "tenantId"), deserialize_with = "nullable")]
    pub tenant_id: String,
    #[serde(rename(deserialize = "subscriptionId"), deserialize_with = "nullable")]
    pub subscription_id: String,
    #[serde(rename(deserialize = "resourceGroup"), deserialize_with = "nullable")]
    pub resource_group: String,
    #[serde(deserialize_with = "nullable")]
    pub location: String,
    #[serde(rename(deserialize = "vnetName"), deserialize_with = "nullable")]
    pub vnet_name: String,
    #[serde(
        rename(deserialize = "vnetResourceGroup"),
        deserialize_with = "nullable"
    )]
    pub vnet_resource_group: String,
    #[serde(rename(deserialize = "subnetName"), deserialize_with = "nullable")]
    pub subnet_name: String,
    #[serde(
        rename(deserialize = "securityGroupName"),
        deserialize_with = "nullable"
    )]
    pub security_group_name: String,
    #[serde(
        rename(deserialize = "securityGroupResourceGroup"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub security_group_resource_group: String,
    #[serde(rename(deserialize = "routeTableName"), deserialize_with = "nullable")]
    pub route_table_name: String,
    #[serde(
        rename(deserialize = "primaryAvailabilitySetName"),
        deserialize_with = "nullable"
    )]
    pub primary_availability_set_name: String,
    #[serde(rename(deserialize = "vmType"), deserialize_with = "nullable")]
    pub vm_type: String,
    #[serde(
        rename(deserialize = "primaryScaleSetName"),
        deserialize_with = "nullable"
    )]
    pub primary_scale_set_name: String,
    #[serde(rename(deserialize = "aadClientId"), deserialize_with = "nullable")]
    pub aad_client_id: String,
    #[serde(rename(deserialize = "aadClientSecret"), deserialize_with = "nullable")]
    pub aad_client_secret: String,
    #[serde(
        rename(deserialize = "aadClientCertPath"),
        deserialize_with = "nullable"
    )]
    pub aad_client_cert_path: String,
    #[serde(
        rename(deserialize = "aadClientCertPassword"),
        deserialize_with = "nullable"
    )]
    pub aad_client_cert_password: String,
    #[serde(
        rename(deserialize = "cloudProviderBackoff"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_backoff: bool,
    #[serde(
        rename(deserialize = "cloudProviderBackoffRetries"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_backoff_retries: i64,
    #[serde(
        rename(deserialize = "cloudProviderBackoffExponent"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_backoff_exponent: i64,
    #[serde(
        rename(deserialize = "cloudProviderBackoffDuration"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_backoff_duration: i64,
    #[serde(
        rename(deserialize = "cloudProviderBackoffJitter"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_backoff_jitter: i64,
    #[serde(
        rename(deserialize = "cloudProviderRateLimit"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_rate_limit: bool,
    #[serde(
        rename(
            serialize = "cloudProviderRateLimitQPS",
            deserialize = "cloudProviderRateLimitQPS"
        ),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_rate_limit_qps: i64,
    #[serde(
        rename(deserialize = "cloudProviderRateLimitBucket"),
        deserialize_with = "nullable"
    )]
    pub cloud_provider_rate_limit_bucket: i64,
    #[serde(
        rename(deserialize = "useInstanceMetadata"),
        deserialize_with = "nullable"
    )]
    pub use_instance_metadata: bool,
    #[serde(
        rename(deserialize = "useManagedIdentityExtension"),
        deserialize_with = "nullable"
    )]
    pub use_managed_identity_extension: bool,
    #[serde(
        rename(
            serialize = "userAssignedIdentityID",
            deserialize = "userAssignedIdentityID"
        ),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user_assigned_identity_id: String,
    #[serde(
        rename(deserialize = "maximumLoadBalancerRuleCount"),
        deserialize_with = "nullable"
    )]
    pub maximum_load_balancer_rule_count: i64,
    #[serde(
        rename(deserialize = "loadBalancerSku"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub load_balancer_sku: String,
    #[serde(
        rename(
            serialize = "excludeMasterFromStandardLB",
            deserialize = "excludeMasterFromStandardLB"
        ),
        skip_serializing_if = "Option::is_none"
    )]
    pub exclude_master_from_standard_lb: Option<bool>,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tags: String,
}

impl fmt::Debug for AzureCloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureCloudProvider")
            .field("cloud", &self.cloud)
            .field("tenant_id", &self.tenant_id)
            .field("subscription_id", &self.subscription_id)
            .field("resource_group", &self.resource_group)
            .field("location", &self.location)
            .field("vnet_name", &self.vnet_name)
            .field("vnet_resource_group", &self.vnet_resource_group)
            .field("subnet_name", &self.subnet_name)
            .field("security_group_name", &self.security_group_name)
            .field(
                "security_group_resource_group",
                &self.security_group_resource_group,
            )
            .field("route_table_name", &self.route_table_name)
            .field(
                "primary_availability_set_name",
                &self.primary_availability_set_name,
            )
            .field("vm_type", &self.vm_type)
            .field("primary_scale_set_name", &self.primary_scale_set_name)
            .field("aad_client_id", &self.aad_client_id)
            .field("aad_client_secret", &Redacted(&self.aad_client_secret))
            .field("aad_client_cert_path", &self.aad_client_cert_path)
            .field(
                "aad_client_cert_password",
                &Redacted(&self.aad_client_cert_password),
            )
            .field("cloud_provider_backoff", &self.cloud_provider_backoff)
            .field(
                "cloud_provider_backoff_retries",
                &self.cloud_provider_backoff_retries,
            )
            .field(
                "cloud_provider_backoff_exponent",
                &self.cloud_provider_backoff_exponent,
            )
            .field(
                "cloud_provider_backoff_duration",
                &self.cloud_provider_backoff_duration,
            )
            .field(
                "cloud_provider_backoff_jitter",
                &self.cloud_provider_backoff_jitter,
            )
            .field("cloud_provider_rate_limit", &self.cloud_provider_rate_limit)
            .field(
                "cloud_provider_rate_limit_qps",
                &self.cloud_provider_rate_limit_qps,
            )
            .field(
                "cloud_provider_rate_limit_bucket",
                &self.cloud_provider_rate_limit_bucket,
            )
            .field("use_instance_metadata", &self.use_instance_metadata)
            .field(
                "use_managed_identity_extension",
                &self.use_managed_identity_extension,
            )
            .field("user_assigned_identity_id", &self.user_assigned_identity_id)
            .field(
                "maximum_load_balancer_rule_count",
                &self.maximum_load_balancer_rule_count,
            )
            .field("load_balancer_sku", &self.load_balancer_sku)
            .field(
                "exclude_master_from_standard_lb",
                &self.exclude_master_from_standard_lb,
            )
            .field("tags", &self.tags)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AwsCloudProvider {
    #[serde(deserialize_with = "nullable")]
    pub global: GlobalAwsOpts,
    #[serde(
        alias = "serviceOverride",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub service_override: BTreeMap<String, ServiceOverride>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct HarvesterCloudProvider {
    #[serde(alias = "cloudConfig", deserialize_with = "nullable")]
    pub cloud_config: String,
}

impl fmt::Debug for HarvesterCloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HarvesterCloudProvider")
            .field("cloud_config", &Redacted(&self.cloud_config))
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct ServiceOverride {
    #[serde(deserialize_with = "nullable")]
    pub service: String,
    #[serde(deserialize_with = "nullable")]
    pub region: String,
    #[serde(deserialize_with = "nullable")]
    pub url: String,
    #[serde(
        rename(serialize = "signing-region", deserialize = "signing-region"),
        deserialize_with = "nullable"
    )]
    pub signing_region: String,
    #[serde(
        rename(serialize = "signing-method", deserialize = "signing-method"),
        deserialize_with = "nullable"
    )]
    pub signing_method: String,
    #[serde(
        rename(serialize = "signing-name", deserialize = "signing-name"),
        deserialize_with = "nullable"
    )]
    pub signing_name: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct GlobalAwsOpts {
    #[serde(deserialize_with = "nullable")]
    pub zone: String,
    #[serde(deserialize_with = "nullable")]
    pub vpc: String,
    #[serde(
        rename(serialize = "subnet-id", deserialize = "subnet-id"),
        deserialize_with = "nullable"
    )]
    pub subnet_id: String,
    #[serde(
        rename(serialize = "routetable-id", deserialize = "routetable-id"),
        deserialize_with = "nullable"
    )]
    pub routetable_id: String,
    #[serde(
        rename(serialize = "role-arn", deserialize = "role-arn"),
        deserialize_with = "nullable"
    )]
    pub role_arn: String,
    #[serde(
        rename(
            serialize = "kubernetes-cluster-tag",
            deserialize = "kubernetes-cluster-tag"
        ),
        deserialize_with = "nullable"
    )]
    pub kubernetes_cluster_tag: String,
    #[serde(
        rename(
            serialize = "kubernetes-cluster-id",
            deserialize = "kubernetes-cluster-id"
        ),
        deserialize_with = "nullable"
    )]
    pub kubernetes_cluster_id: String,
    #[serde(
        rename(
            serialize = "disable-security-group-ingress",
            deserialize = "disable-security-group-ingress"
        ),
        deserialize_with = "nullable"
    )]
    pub disable_security_group_ingress: bool,
    #[serde(
        rename(serialize = "elb-security-group", deserialize = "elb-security-group"),
        deserialize_with = "nullable"
    )]
    pub elb_security_group: String,
    #[serde(
        rename(
            serialize = "disable-strict-zone-check",
            deserialize = "disable-strict-zone-check"
        ),
        deserialize_with = "nullable"
    )]
    pub disable_strict_zone_check: bool,
}
