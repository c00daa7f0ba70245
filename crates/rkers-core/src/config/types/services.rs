//! `services:` of cluster.yml: [`Services`] and its six services, each declared through the
//! parent's `service_struct!` so RKE1's shared `BaseService` fields are written once, with the
//! audit log and event rate limit settings kube-api carries.

use super::*;

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Services {
    #[serde(deserialize_with = "nullable")]
    pub etcd: EtcdService,
    #[serde(
        rename(deserialize = "kube-api"),
        alias = "kubeApi",
        deserialize_with = "nullable"
    )]
    pub kube_api: KubeApiService,
    #[serde(
        rename(deserialize = "kube-controller"),
        alias = "kubeController",
        deserialize_with = "nullable"
    )]
    pub kube_controller: KubeControllerService,
    #[serde(deserialize_with = "nullable")]
    pub scheduler: SchedulerService,
    #[serde(deserialize_with = "nullable")]
    pub kubelet: KubeletService,
    #[serde(deserialize_with = "nullable")]
    pub kubeproxy: KubeproxyService,
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct EtcdService {
        #[serde(
            alias = "externalUrls",
            deserialize_with = "nullable",
            skip_serializing_if = "Vec::is_empty"
        )]
        pub external_urls: Vec<String>,
        #[serde(
            alias = "caCert",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub ca_cert: String,
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub cert: String,
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub key: String,
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub path: String,
        #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
        pub uid: i64,
        #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
        pub gid: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub snapshot: Option<bool>,
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub retention: String,
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub creation: String,
        #[serde(alias = "backupConfig", skip_serializing_if = "Option::is_none")]
        pub backup_config: Option<BackupConfig>,
    }
}

impl fmt::Debug for EtcdService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdService")
            .field("image", &self.image)
            .field("extra_args", &self.extra_args)
            .field("extra_args_array", &self.extra_args_array)
            .field("extra_binds", &self.extra_binds)
            .field("extra_env", &self.extra_env)
            .field("win_extra_args", &self.win_extra_args)
            .field("win_extra_args_array", &self.win_extra_args_array)
            .field("win_extra_binds", &self.win_extra_binds)
            .field("win_extra_env", &self.win_extra_env)
            .field("external_urls", &self.external_urls)
            .field("ca_cert", &self.ca_cert)
            .field("cert", &self.cert)
            .field("key", &Redacted(&self.key))
            .field("path", &self.path)
            .field("uid", &self.uid)
            .field("gid", &self.gid)
            .field("snapshot", &self.snapshot)
            .field("retention", &self.retention)
            .field("creation", &self.creation)
            .field("backup_config", &self.backup_config)
            .finish()
    }
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct KubeApiService {
        #[serde(
            alias = "serviceClusterIpRange",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub service_cluster_ip_range: String,
        #[serde(
            alias = "serviceNodePortRange",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub service_node_port_range: String,
        #[serde(
            alias = "podSecurityConfiguration",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub pod_security_configuration: String,
        #[serde(
            alias = "alwaysPullImages",
            deserialize_with = "nullable",
            skip_serializing_if = "is_false"
        )]
        pub always_pull_images: bool,
        #[serde(
            alias = "secretsEncryptionConfig",
            skip_serializing_if = "Option::is_none"
        )]
        pub secrets_encryption_config: Option<SecretsEncryptionConfig>,
        #[serde(alias = "auditLog", skip_serializing_if = "Option::is_none")]
        pub audit_log: Option<AuditLog>,
        #[serde(
            alias = "admissionConfiguration",
            skip_serializing_if = "Option::is_none"
        )]
        pub admission_configuration: Option<serde_json::Value>,
        #[serde(alias = "eventRateLimit", skip_serializing_if = "Option::is_none")]
        pub event_rate_limit: Option<EventRateLimit>,
    }
}

impl KubeApiService {
    /// `secrets_encryption_config` when cluster.yml has it and it is enabled: the one reading
    /// of "is secrets encryption on" for `up` and `encrypt rotate-key`.
    pub fn enabled_secrets_encryption(&self) -> Option<&SecretsEncryptionConfig> {
        self.secrets_encryption_config
            .as_ref()
            .filter(|s| s.enabled)
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct EventRateLimit {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<serde_json::Value>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuditLog {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<AuditLogConfig>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuditLogConfig {
    #[serde(
        alias = "maxAge",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub max_age: i64,
    #[serde(
        alias = "maxBackup",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub max_backup: i64,
    #[serde(
        alias = "maxSize",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub max_size: i64,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub path: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<serde_json::Value>,
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct KubeControllerService {
        #[serde(
            alias = "clusterCidr",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub cluster_cidr: String,
        #[serde(
            alias = "serviceClusterIpRange",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub service_cluster_ip_range: String,
    }
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct KubeletService {
        #[serde(
            alias = "clusterDomain",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub cluster_domain: String,
        #[serde(
            alias = "infraContainerImage",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub infra_container_image: String,
        #[serde(
            alias = "clusterDnsServer",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub cluster_dns_server: String,
        #[serde(
            alias = "failSwapOn",
            deserialize_with = "nullable",
            skip_serializing_if = "is_false"
        )]
        pub fail_swap_on: bool,
        #[serde(
            alias = "generateServingCertificate",
            deserialize_with = "nullable",
            skip_serializing_if = "is_false"
        )]
        pub generate_serving_certificate: bool,
    }
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct KubeproxyService {}
}

service_struct! {
    #[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
    #[serde(default, rename_all(serialize = "camelCase"))]
    pub struct SchedulerService {}
}
