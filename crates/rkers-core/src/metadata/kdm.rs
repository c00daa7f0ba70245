//! Reading a KDM `data.json` (the file RKE's `RANCHER_METADATA_URL` points at) into
//! [`CatalogData`], its addon template bodies included, so an operator's existing local KDM
//! file keeps working with rkers and brings its own templates.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::catalog::{CatalogData, ServiceOptions, SourceInfo, VersionInfo};

/// KDM's JSON field names of `RKESystemImages` → cluster.yml `system_images` keys
/// (the `json:` and `yaml:` struct tags of RKE's types).
const IMAGE_JSON_TO_YAML: &[(&str, &str)] = &[
    ("etcd", "etcd"),
    ("alpine", "alpine"),
    ("nginxProxy", "nginx_proxy"),
    ("certDownloader", "cert_downloader"),
    ("kubernetesServicesSidecar", "kubernetes_services_sidecar"),
    ("kubedns", "kubedns"),
    ("dnsmasq", "dnsmasq"),
    ("kubednsSidecar", "kubedns_sidecar"),
    ("kubednsAutoscaler", "kubedns_autoscaler"),
    ("coredns", "coredns"),
    ("corednsAutoscaler", "coredns_autoscaler"),
    ("nodelocal", "nodelocal"),
    ("kubernetes", "kubernetes"),
    ("flannel", "flannel"),
    ("flannelCni", "flannel_cni"),
    ("calicoNode", "calico_node"),
    ("calicoCni", "calico_cni"),
    ("calicoControllers", "calico_controllers"),
    ("calicoCtl", "calico_ctl"),
    ("calicoFlexVol", "calico_flexvol"),
    ("canalNode", "canal_node"),
    ("canalCni", "canal_cni"),
    ("canalControllers", "canal_controllers"),
    ("canalFlannel", "canal_flannel"),
    ("canalFlexVol", "canal_flexvol"),
    ("weaveNode", "weave_node"),
    ("weaveCni", "weave_cni"),
    ("podInfraContainer", "pod_infra_container"),
    ("ingress", "ingress"),
    ("ingressBackend", "ingress_backend"),
    ("ingressWebhook", "ingress_webhook"),
    ("metricsServer", "metrics_server"),
    ("windowsPodInfraContainer", "windows_pod_infra_container"),
    ("aciCniDeployContainer", "aci_cni_deploy_container"),
    ("aciHostContainer", "aci_host_container"),
    ("aciOpflexContainer", "aci_opflex_container"),
    ("aciMcastContainer", "aci_mcast_container"),
    ("aciOvsContainer", "aci_ovs_container"),
    ("aciControllerContainer", "aci_controller_container"),
    ("aciGbpServerContainer", "aci_gbp_server_container"),
    ("aciOpflexServerContainer", "aci_opflex_server_container"),
];

/// The map key under which KDM stores template bodies next to the ranges.
const TEMPLATE_BODIES_KEY: &str = "templateKeys";

pub(crate) fn looks_like_kdm(value: &Value) -> bool {
    value.get("K8sVersionRKESystemImages").is_some()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KdmServiceOptions {
    #[serde(default)]
    etcd: Option<BTreeMap<String, String>>,
    #[serde(default)]
    kubeapi: Option<BTreeMap<String, String>>,
    #[serde(default)]
    kubelet: Option<BTreeMap<String, String>>,
    #[serde(default)]
    kubeproxy: Option<BTreeMap<String, String>>,
    #[serde(default)]
    kube_controller: Option<BTreeMap<String, String>>,
    #[serde(default)]
    scheduler: Option<BTreeMap<String, String>>,
}

impl From<KdmServiceOptions> for ServiceOptions {
    fn from(o: KdmServiceOptions) -> Self {
        ServiceOptions {
            etcd: o.etcd.unwrap_or_default(),
            kubeapi: o.kubeapi.unwrap_or_default(),
            kubelet: o.kubelet.unwrap_or_default(),
            kubeproxy: o.kubeproxy.unwrap_or_default(),
            kube_controller: o.kube_controller.unwrap_or_default(),
            scheduler: o.scheduler.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KdmVersionInfo {
    #[serde(default, rename = "minRKEVersion")]
    min_rke_version: Option<String>,
    #[serde(default, rename = "maxRKEVersion")]
    max_rke_version: Option<String>,
    #[serde(default, rename = "deprecateRKEVersion")]
    deprecate_rke_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct KdmData {
    #[serde(default, rename = "K8sVersionServiceOptions")]
    service_options: BTreeMap<String, KdmServiceOptions>,
    #[serde(rename = "K8sVersionRKESystemImages")]
    system_images: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default, rename = "K8sVersionedTemplates")]
    templates: BTreeMap<String, indexmap::IndexMap<String, String>>,
    #[serde(default, rename = "K8sVersionInfo")]
    version_info: BTreeMap<String, KdmVersionInfo>,
    #[serde(default, rename = "RKEDefaultK8sVersions")]
    rke_default_versions: BTreeMap<String, String>,
    #[serde(default, rename = "K8sVersionDockerInfo")]
    docker_info: BTreeMap<String, Vec<String>>,
    #[serde(default, rename = "K8sVersionWindowsServiceOptions")]
    windows_service_options: BTreeMap<String, KdmServiceOptions>,
}

/// Why a KDM `data.json` could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum KdmError {
    #[error("not a KDM data.json: {0}")]
    NotKdm(serde_json::Error),
    #[error("KDM data.json has no RKEDefaultK8sVersions.default")]
    NoDefaultVersion,
    #[error("K8sVersionRKESystemImages[{version}]: unknown image field {field:?}")]
    UnknownImageField { version: String, field: String },
}

/// Converts a parsed KDM `data.json`; `rke_version` is the RKE release whose rules apply.
pub(crate) fn convert(value: &Value, rke_version: &str) -> Result<CatalogData, KdmError> {
    let kdm: KdmData = serde_json::from_value(value.clone()).map_err(KdmError::NotKdm)?;
    let default_version = kdm
        .rke_default_versions
        .get("default")
        .cloned()
        .ok_or(KdmError::NoDefaultVersion)?;

    let mut system_images = BTreeMap::new();
    for (version, images) in kdm.system_images {
        let mut converted = BTreeMap::new();
        for (json_key, image) in images {
            let yaml_key = IMAGE_JSON_TO_YAML
                .iter()
                .find(|(j, _)| *j == json_key)
                .map(|(_, y)| *y)
                .ok_or_else(|| KdmError::UnknownImageField {
                    version: version.clone(),
                    field: json_key.clone(),
                })?;
            if !image.is_empty() {
                converted.insert(yaml_key.to_string(), image);
            }
        }
        system_images.insert(version, converted);
    }

    let mut addon_templates = BTreeMap::new();
    let mut template_bodies = BTreeMap::new();
    for (addon, entries) in kdm.templates {
        if addon == TEMPLATE_BODIES_KEY {
            template_bodies.extend(entries);
        } else {
            addon_templates.insert(addon, entries);
        }
    }

    Ok(CatalogData {
        source: SourceInfo {
            repository: "rancher/kontainer-driver-metadata".to_string(),
            generator: "KDM data.json".to_string(),
            ..SourceInfo::default()
        },
        rke_version: rke_version.to_string(),
        default_version,
        version_info: kdm
            .version_info
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    VersionInfo {
                        min_rke_version: v.min_rke_version.filter(|s| !s.is_empty()),
                        max_rke_version: v.max_rke_version.filter(|s| !s.is_empty()),
                        deprecate_rke_version: v.deprecate_rke_version.filter(|s| !s.is_empty()),
                    },
                )
            })
            .collect(),
        docker_versions: kdm.docker_info,
        service_options: kdm
            .service_options
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect(),
        windows_service_options: kdm
            .windows_service_options
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect(),
        addon_templates,
        system_images,
        unpublished_versions: BTreeMap::new(),
        template_bodies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_texts() {
        let no_default = convert(
            &serde_json::json!({"K8sVersionRKESystemImages": {}}),
            "v1.8.0",
        )
        .unwrap_err();
        assert_eq!(
            no_default.to_string(),
            "KDM data.json has no RKEDefaultK8sVersions.default"
        );
        let unknown = convert(
            &serde_json::json!({
                "RKEDefaultK8sVersions": {"default": "v1.32.5-rancher1-1"},
                "K8sVersionRKESystemImages": {"v1.32.5-rancher1-1": {"bogus": "x"}},
            }),
            "v1.8.0",
        )
        .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "K8sVersionRKESystemImages[v1.32.5-rancher1-1]: unknown image field \"bogus\""
        );
        let not_kdm = convert(&serde_json::json!([]), "v1.8.0").unwrap_err();
        assert!(
            not_kdm.to_string().starts_with("not a KDM data.json: "),
            "{not_kdm}"
        );
    }
}
