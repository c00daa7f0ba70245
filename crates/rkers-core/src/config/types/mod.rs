//! The `cluster.yml` data model (spec §3), one set of types for both formats:
//! deserializing reads the cluster.yml keys (YAML tags of RKE1, including the lowercased
//! field-name quirks such as `s3backupconfig`, `cacertificates`, `cloudprovider`,
//! `tolerationseconds`), serializing writes RKE1's JSON tags (the `rkeConfig` object of
//! `cluster.rkestate`), and every JSON name is also accepted on input so the same types read
//! state files. Go's `omitempty` is mirrored with `skip_serializing_if`; fields without it are
//! always written (a nil pointer becomes `null`, as in Go).
//!
//! Sub-trees that RKE1 re-parses as Kubernetes API objects (audit policy, event rate limit
//! configuration, admission configuration, encryption configuration, ingress extra
//! env/volumes/mounts) are kept as lossless `serde_json::Value`s.
//!
//! Here, in file order: the serde helpers the sub-modules share; `service_struct!` (RKE1's shared
//! `BaseService` fields); [`RkeConfig`] (the top level) with its upgrade strategy, bastion,
//! registries and [`SystemImages`]; [`Node`]; monitoring, restore, certificate rotation, DNS,
//! taints, secrets encryption, drain input; and last the etcd backup configuration. Beside it:
//! `services` ([`Services`] and the six services), `network` (network, auth, ingress and the
//! network plugins) and `cloud` (the cloud providers), all re-exported here.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field that may be written as YAML `null` (e.g. `labels:` with nothing after it): go-yaml
/// leaves the Go zero value in that case, so we take the type's default.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Go's encoding/json writes integral floats without a fraction (`128`, not `128.0`); doing the
/// same keeps a state file byte-compatible and round-trips to an equal JSON value.
fn go_float<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Debug stand-in for secret material: says whether it is set, never what it is.
struct Redacted<'a, T: ?Sized>(&'a T);

trait IsUnset {
    fn is_unset(&self) -> bool;
}
impl IsUnset for String {
    fn is_unset(&self) -> bool {
        self.is_empty()
    }
}
impl<T> IsUnset for Option<T> {
    fn is_unset(&self) -> bool {
        self.is_none()
    }
}

impl<T: IsUnset + ?Sized> fmt::Debug for Redacted<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_unset() {
            f.write_str("\"\"")
        } else {
            f.write_str("<redacted>")
        }
    }
}

/// A Kubernetes `core/v1` Toleration as RKE1 reads it: the YAML spelling of
/// `tolerationSeconds` is the lowercased Go field name `tolerationseconds`.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Toleration {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub key: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub operator: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub effect: String,
    #[serde(
        rename(deserialize = "tolerationseconds"),
        alias = "tolerationSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub toleration_seconds: Option<i64>,
}

/// The `update_strategy` of an addon DaemonSet or Deployment. RKE1 re-reads these with JSON
/// semantics (case-insensitive keys), so `rollingUpdate` and `rollingupdate` both work.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default)]
pub struct UpdateStrategy {
    /// `RollingUpdate`, `OnDelete` (DaemonSet) or `Recreate` (Deployment).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub strategy: String,
    #[serde(
        rename = "rollingUpdate",
        alias = "rollingupdate",
        alias = "rolling_update",
        skip_serializing_if = "Option::is_none"
    )]
    pub rolling_update: Option<RollingUpdate>,
}

/// Kubernetes IntOrString values (`1`, `"25%"`) are kept as JSON values.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default)]
pub struct RollingUpdate {
    #[serde(
        rename = "maxUnavailable",
        alias = "maxunavailable",
        alias = "max_unavailable",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_unavailable: Option<serde_json::Value>,
    #[serde(
        rename = "maxSurge",
        alias = "maxsurge",
        alias = "max_surge",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_surge: Option<serde_json::Value>,
}

/// Borrowed view of the fields every service shares (RKE1's inlined `BaseService`).
#[derive(Clone, Copy, Debug)]
pub struct BaseServiceRef<'a> {
    pub image: &'a str,
    pub extra_args: &'a BTreeMap<String, String>,
    pub extra_args_array: &'a BTreeMap<String, Vec<String>>,
    pub extra_binds: &'a [String],
    pub extra_env: &'a [String],
    pub win_extra_args: &'a BTreeMap<String, String>,
    pub win_extra_args_array: &'a BTreeMap<String, Vec<String>>,
    pub win_extra_binds: &'a [String],
    pub win_extra_env: &'a [String],
}

/// Declares one of the six service structs: RKE1 inlines its `BaseService` (image, extra args,
/// binds and env, for Linux and Windows) into each, so every service has these nine fields first,
/// with the same YAML keys, aliases and null handling, then its own fields.
macro_rules! service_struct {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $($(#[$fattr:meta])* pub $field:ident: $fty:ty,)*
        }
    ) => {
        $(#[$attr])*
        pub struct $name {
            #[serde(
                deserialize_with = "nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub image: String,
            #[serde(
                alias = "extraArgs",
                deserialize_with = "nullable",
                skip_serializing_if = "BTreeMap::is_empty"
            )]
            pub extra_args: BTreeMap<String, String>,
            #[serde(
                alias = "extraArgsArray",
                deserialize_with = "nullable",
                skip_serializing_if = "BTreeMap::is_empty"
            )]
            pub extra_args_array: BTreeMap<String, Vec<String>>,
            #[serde(
                alias = "extraBinds",
                deserialize_with = "nullable",
                skip_serializing_if = "Vec::is_empty"
            )]
            pub extra_binds: Vec<String>,
            #[serde(
                alias = "extraEnv",
                deserialize_with = "nullable",
                skip_serializing_if = "Vec::is_empty"
            )]
            pub extra_env: Vec<String>,
            #[serde(
                alias = "winExtraArgs",
                deserialize_with = "nullable",
                skip_serializing_if = "BTreeMap::is_empty"
            )]
            pub win_extra_args: BTreeMap<String, String>,
            #[serde(
                alias = "winExtraArgsArray",
                deserialize_with = "nullable",
                skip_serializing_if = "BTreeMap::is_empty"
            )]
            pub win_extra_args_array: BTreeMap<String, Vec<String>>,
            #[serde(
                alias = "winExtraBinds",
                deserialize_with = "nullable",
                skip_serializing_if = "Vec::is_empty"
            )]
            pub win_extra_binds: Vec<String>,
            #[serde(
                alias = "winExtraEnv",
                deserialize_with = "nullable",
                skip_serializing_if = "Vec::is_empty"
            )]
            pub win_extra_env: Vec<String>,
            $($(#[$fattr])* pub $field: $fty,)*
        }

        impl $name {
            /// The shared service fields (`image`, `extra_args`, `extra_binds`, ...).
            pub fn base(&self) -> BaseServiceRef<'_> {
                BaseServiceRef {
                    image: &self.image,
                    extra_args: &self.extra_args,
                    extra_args_array: &self.extra_args_array,
                    extra_binds: &self.extra_binds,
                    extra_env: &self.extra_env,
                    win_extra_args: &self.win_extra_args,
                    win_extra_args_array: &self.win_extra_args_array,
                    win_extra_binds: &self.win_extra_binds,
                    win_extra_env: &self.win_extra_env,
                }
            }
        }
    };
}

// After `service_struct!`: a macro is in scope only below its definition.
mod cloud;
mod network;
mod services;

pub use cloud::*;
pub use network::*;
pub use services::*;

impl RkeConfig {
    /// The `rkeConfig` object as RKE1 writes it into `cluster.rkestate` (JSON tags).
    pub fn to_state_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the config model always serializes to JSON")
    }

    /// Reads the `rkeConfig` object of a state file (JSON tags; YAML keys also accepted).
    pub fn from_state_json(value: &serde_json::Value) -> Result<RkeConfig, serde_json::Error> {
        RkeConfig::deserialize(value)
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RkeConfig {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Node>,
    #[serde(deserialize_with = "nullable")]
    pub services: Services,
    #[serde(deserialize_with = "nullable")]
    pub network: NetworkConfig,
    #[serde(deserialize_with = "nullable")]
    pub authentication: AuthnConfig,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub addons: String,
    #[serde(
        alias = "addonsInclude",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub addons_include: Vec<String>,
    #[serde(alias = "systemImages", deserialize_with = "nullable")]
    pub system_images: SystemImages,
    #[serde(
        alias = "sshKeyPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_key_path: String,
    #[serde(
        alias = "sshCertPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_cert_path: String,
    #[serde(alias = "sshAgentAuth", deserialize_with = "nullable")]
    pub ssh_agent_auth: bool,
    #[serde(deserialize_with = "nullable")]
    pub authorization: AuthzConfig,
    #[serde(alias = "ignoreDockerVersion")]
    pub ignore_docker_version: Option<bool>,
    #[serde(alias = "enableCriDockerd")]
    pub enable_cri_dockerd: Option<bool>,
    #[serde(
        alias = "kubernetesVersion",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubernetes_version: String,
    #[serde(
        alias = "privateRegistries",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub private_registries: Vec<PrivateRegistry>,
    #[serde(deserialize_with = "nullable")]
    pub ingress: IngressConfig,
    #[serde(
        alias = "clusterName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cluster_name: String,
    #[serde(alias = "cloudProvider", deserialize_with = "nullable")]
    pub cloud_provider: CloudProvider,
    #[serde(
        alias = "prefixPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub prefix_path: String,
    #[serde(
        alias = "winPrefixPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub win_prefix_path: String,
    #[serde(
        alias = "addonJobTimeout",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub addon_job_timeout: i64,
    #[serde(alias = "bastionHost", deserialize_with = "nullable")]
    pub bastion_host: BastionHost,
    #[serde(deserialize_with = "nullable")]
    pub monitoring: MonitoringConfig,
    #[serde(deserialize_with = "nullable")]
    pub restore: RestoreConfig,
    #[serde(alias = "rotateCertificates", skip_serializing_if = "Option::is_none")]
    pub rotate_certificates: Option<RotateCertificates>,
    #[serde(alias = "rotateEncryptionKey", deserialize_with = "nullable")]
    pub rotate_encryption_key: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns: Option<DnsConfig>,
    #[serde(alias = "upgradeStrategy", skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<NodeUpgradeStrategy>,
    #[serde(
        alias = "criDockerdStreamServerAddress",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cri_dockerd_stream_server_address: String,
    #[serde(
        alias = "criDockerdStreamServerPort",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cri_dockerd_stream_server_port: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct NodeUpgradeStrategy {
    #[serde(
        alias = "maxUnavailableWorker",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub max_unavailable_worker: String,
    #[serde(
        alias = "maxUnavailableControlplane",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub max_unavailable_controlplane: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<bool>,
    #[serde(alias = "nodeDrainInput", skip_serializing_if = "Option::is_none")]
    pub node_drain_input: Option<NodeDrainInput>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct BastionHost {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub address: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub port: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user: String,
    #[serde(
        alias = "sshAgentAuth",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub ssh_agent_auth: bool,
    #[serde(
        alias = "sshKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_key: String,
    #[serde(
        alias = "sshKeyPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_key_path: String,
    #[serde(
        alias = "sshCert",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_cert: String,
    #[serde(
        alias = "sshCertPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_cert_path: String,
    #[serde(
        alias = "ignoreProxyEnvVars",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub ignore_proxy_env_vars: bool,
}

impl fmt::Debug for BastionHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BastionHost")
            .field("address", &self.address)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("ssh_agent_auth", &self.ssh_agent_auth)
            .field("ssh_key", &Redacted(&self.ssh_key))
            .field("ssh_key_path", &self.ssh_key_path)
            .field("ssh_cert", &self.ssh_cert)
            .field("ssh_cert_path", &self.ssh_cert_path)
            .field("ignore_proxy_env_vars", &self.ignore_proxy_env_vars)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct PrivateRegistry {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub url: String,
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
        alias = "isDefault",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub is_default: bool,
    #[serde(alias = "ecrCredentialPlugin", skip_serializing_if = "Option::is_none")]
    pub ecr_credential_plugin: Option<EcrCredentialPlugin>,
}

impl fmt::Debug for PrivateRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateRegistry")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("password", &Redacted(&self.password))
            .field("is_default", &self.is_default)
            .field("ecr_credential_plugin", &self.ecr_credential_plugin)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SystemImages {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub etcd: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub alpine: String,
    #[serde(
        alias = "nginxProxy",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub nginx_proxy: String,
    #[serde(
        alias = "certDownloader",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cert_downloader: String,
    #[serde(
        alias = "kubernetesServicesSidecar",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubernetes_services_sidecar: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubedns: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub dnsmasq: String,
    #[serde(
        alias = "kubednsSidecar",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubedns_sidecar: String,
    #[serde(
        alias = "kubednsAutoscaler",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubedns_autoscaler: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub coredns: String,
    #[serde(
        alias = "corednsAutoscaler",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub coredns_autoscaler: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub nodelocal: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub kubernetes: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub flannel: String,
    #[serde(
        alias = "flannelCni",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub flannel_cni: String,
    #[serde(
        alias = "calicoNode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub calico_node: String,
    #[serde(
        alias = "calicoCni",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub calico_cni: String,
    #[serde(
        alias = "calicoControllers",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub calico_controllers: String,
    #[serde(
        alias = "calicoCtl",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub calico_ctl: String,
    #[serde(
        rename(serialize = "calicoFlexVol"),
        alias = "calicoFlexVol",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub calico_flexvol: String,
    #[serde(
        alias = "canalNode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub canal_node: String,
    #[serde(
        alias = "canalCni",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub canal_cni: String,
    #[serde(
        alias = "canalControllers",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub canal_controllers: String,
    #[serde(
        alias = "canalFlannel",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub canal_flannel: String,
    #[serde(
        rename(serialize = "canalFlexVol"),
        alias = "canalFlexVol",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub canal_flexvol: String,
    #[serde(
        alias = "weaveNode",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub weave_node: String,
    #[serde(
        alias = "weaveCni",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub weave_cni: String,
    #[serde(
        alias = "podInfraContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub pod_infra_container: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ingress: String,
    #[serde(
        alias = "ingressBackend",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ingress_backend: String,
    #[serde(
        alias = "ingressWebhook",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ingress_webhook: String,
    #[serde(
        alias = "metricsServer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub metrics_server: String,
    #[serde(
        alias = "windowsPodInfraContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub windows_pod_infra_container: String,
    #[serde(
        alias = "aciCniDeployContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_cni_deploy_container: String,
    #[serde(
        alias = "aciHostContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_host_container: String,
    #[serde(
        alias = "aciOpflexContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_opflex_container: String,
    #[serde(
        alias = "aciMcastContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_mcast_container: String,
    #[serde(
        alias = "aciOvsContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_ovs_container: String,
    #[serde(
        alias = "aciControllerContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_controller_container: String,
    #[serde(
        alias = "aciGbpServerContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_gbp_server_container: String,
    #[serde(
        alias = "aciOpflexServerContainer",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aci_opflex_server_container: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Node {
    #[serde(
        rename(deserialize = "nodeName"),
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_name: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub address: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub port: String,
    #[serde(
        alias = "internalAddress",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub internal_address: String,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub role: Vec<String>,
    #[serde(
        alias = "hostnameOverride",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub hostname_override: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user: String,
    #[serde(
        alias = "dockerSocket",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub docker_socket: String,
    #[serde(
        alias = "sshAgentAuth",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub ssh_agent_auth: bool,
    #[serde(
        alias = "sshKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_key: String,
    #[serde(
        alias = "sshKeyPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_key_path: String,
    #[serde(
        alias = "sshCert",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_cert: String,
    #[serde(
        alias = "sshCertPath",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ssh_cert_path: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("node_name", &self.node_name)
            .field("address", &self.address)
            .field("port", &self.port)
            .field("internal_address", &self.internal_address)
            .field("role", &self.role)
            .field("hostname_override", &self.hostname_override)
            .field("user", &self.user)
            .field("docker_socket", &self.docker_socket)
            .field("ssh_agent_auth", &self.ssh_agent_auth)
            .field("ssh_key", &Redacted(&self.ssh_key))
            .field("ssh_key_path", &self.ssh_key_path)
            .field("ssh_cert", &self.ssh_cert)
            .field("ssh_cert_path", &self.ssh_cert_path)
            .field("labels", &self.labels)
            .field("taints", &self.taints)
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct MonitoringConfig {
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
    #[serde(alias = "updateStrategy", skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(
        alias = "metricsServerPriorityClassName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub metrics_server_priority_class_name: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RestoreConfig {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub restore: bool,
    #[serde(
        alias = "snapshotName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub snapshot_name: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RotateCertificates {
    #[serde(
        rename(deserialize = "cacertificates"),
        alias = "caCertificates",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub ca_certificates: bool,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct DnsConfig {
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
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub upstreamnameservers: Vec<String>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub reversecidrs: Vec<String>,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub stubdomains: BTreeMap<String, Vec<String>>,
    #[serde(
        alias = "nodeSelector",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodelocal: Option<Nodelocal>,
    #[serde(alias = "updateStrategy", skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(
        alias = "linearAutoscalerParams",
        skip_serializing_if = "Option::is_none"
    )]
    pub linear_autoscaler_params: Option<LinearAutoscalerParams>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Nodelocal {
    #[serde(
        alias = "ipAddress",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ip_address: String,
    #[serde(alias = "updateStrategy", skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(
        alias = "nodeSelector",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    #[serde(
        alias = "nodeLocalDnsPriorityClassName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_local_dns_priority_class_name: String,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct LinearAutoscalerParams {
    #[serde(
        alias = "coresPerReplica",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero",
        serialize_with = "go_float"
    )]
    pub cores_per_replica: f64,
    #[serde(
        alias = "nodesPerReplica",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero",
        serialize_with = "go_float"
    )]
    pub nodes_per_replica: f64,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub min: i64,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub max: i64,
    #[serde(
        alias = "preventSinglePointFailure",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub prevent_single_point_failure: bool,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Taint {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub key: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub effect: String,
    #[serde(
        rename(deserialize = "timeAdded"),
        skip_serializing_if = "Option::is_none"
    )]
    pub time_added: Option<String>,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SecretsEncryptionConfig {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(alias = "customConfig", skip_serializing_if = "Option::is_none")]
    pub custom_config: Option<serde_json::Value>,
}

impl fmt::Debug for SecretsEncryptionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsEncryptionConfig")
            .field("enabled", &self.enabled)
            .field("custom_config", &Redacted(&self.custom_config))
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct NodeDrainInput {
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub force: bool,
    #[serde(
        rename(serialize = "ignoreDaemonSets"),
        alias = "ignoreDaemonSets",
        skip_serializing_if = "Option::is_none"
    )]
    pub ignore_daemonsets: Option<bool>,
    #[serde(
        alias = "deleteLocalData",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub delete_local_data: bool,
    #[serde(
        alias = "gracePeriod",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub grace_period: i64,
    #[serde(deserialize_with = "nullable")]
    pub timeout: i64,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct EcrCredentialPlugin {
    #[serde(
        alias = "awsAccessKeyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aws_access_key_id: String,
    #[serde(
        alias = "awsSecretAccessKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aws_secret_access_key: String,
    #[serde(
        rename(serialize = "awsAccessToken"),
        alias = "awsAccessToken",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub aws_session_token: String,
}

impl fmt::Debug for EcrCredentialPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EcrCredentialPlugin")
            .field("aws_access_key_id", &self.aws_access_key_id)
            .field(
                "aws_secret_access_key",
                &Redacted(&self.aws_secret_access_key),
            )
            .field("aws_session_token", &Redacted(&self.aws_session_token))
            .finish()
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize, Debug)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct BackupConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(
        alias = "intervalHours",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub interval_hours: i64,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub retention: i64,
    #[serde(rename(deserialize = "s3backupconfig"), alias = "s3BackupConfig")]
    pub s3_backup_config: Option<S3BackupConfig>,
    #[serde(
        alias = "safeTimestamp",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub safe_timestamp: bool,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub timeout: i64,
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct S3BackupConfig {
    #[serde(
        alias = "accessKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub access_key: String,
    #[serde(
        alias = "secretKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub secret_key: String,
    #[serde(
        alias = "bucketName",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub bucket_name: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub region: String,
    #[serde(deserialize_with = "nullable")]
    pub endpoint: String,
    #[serde(
        alias = "customCa",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub custom_ca: String,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub folder: String,
}

impl fmt::Debug for S3BackupConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3BackupConfig")
            .field("access_key", &self.access_key)
            .field("secret_key", &Redacted(&self.secret_key))
            .field("bucket_name", &self.bucket_name)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("custom_ca", &self.custom_ca)
            .field("folder", &self.folder)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_encryption_is_on_only_when_present_and_enabled() {
        let mut kube_api = KubeApiService::default();
        assert!(kube_api.enabled_secrets_encryption().is_none());
        kube_api.secrets_encryption_config = Some(SecretsEncryptionConfig::default());
        assert!(kube_api.enabled_secrets_encryption().is_none());
        let custom = serde_json::json!({"kind": "EncryptionConfiguration"});
        kube_api.secrets_encryption_config = Some(SecretsEncryptionConfig {
            enabled: true,
            custom_config: Some(custom.clone()),
        });
        let on = kube_api.enabled_secrets_encryption();
        assert_eq!(on.and_then(|s| s.custom_config.as_ref()), Some(&custom));
    }
}
