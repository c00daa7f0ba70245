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
//! In file order: the serde helpers; [`RkeConfig`] (the top level) with its upgrade strategy,
//! bastion, registries and [`SystemImages`]; [`Node`]; [`Services`] and the six services,
//! declared through `service_struct!` (RKE1's shared `BaseService` fields); network, auth and
//! ingress; the cloud providers (vSphere, OpenStack, Azure, AWS, Harvester); monitoring,
//! restore, certificate rotation, DNS, taints, secrets encryption, drain input; and last the
//! etcd backup configuration.

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
