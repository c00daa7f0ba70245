//! The version catalog against the facts extracted from KDM (data/versions.json).

use std::collections::BTreeMap;
use std::io::Write;

use rkers::metadata::{
    Catalog, CatalogData, DockerVerdict, K8sVersion, MetadataError, RANCHER_METADATA_URL_ENV,
    RKERS_METADATA_FILE_ENV, SYSTEM_IMAGE_KEYS, ServiceOptions, UnpublishedVersion, addon,
    list_versions, system_images_listing,
};

/// The newest version whose Kubernetes image is public (see data/README.md).
const DEFAULT: &str = "v1.32.6-rancher1-1";
/// What RKE v1.8.14 offers (the newest patch of v1.30, v1.31 and v1.32), then rkers' own minors
/// (data/versions-next.json).
const CURRENT: [&str; 8] = [
    "v1.30.14-rancher1-1",
    "v1.31.14-rancher1-1",
    "v1.32.13-rancher1-3",
    "v1.33.5-rkers1",
    "v1.34.10-rkers1",
    "v1.35.8-rkers1",
    "v1.36.3-rkers1",
    "v1.37.2-rkers1",
];
#[path = "support/rke1_releases.rs"]
mod rke1_releases;
use rke1_releases::{PATCH_RANGES, SHIPPED_BY_RKE_1_7_AND_1_8};

fn catalog() -> &'static Catalog {
    Catalog::embedded()
}

fn catalog_with(edit: impl FnOnce(&mut CatalogData)) -> Catalog {
    let mut data = catalog().data().clone();
    edit(&mut data);
    Catalog::from_data(data, "test").expect("edited catalog is valid")
}

/// The trait the config module defines; the impl below is what the integrator writes.
trait VersionCatalog {
    fn default_version(&self) -> String;
    fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>>;
    fn is_supported(&self, version: &str) -> bool;
    fn supported_versions(&self) -> Vec<String>;
}

impl VersionCatalog for Catalog {
    fn default_version(&self) -> String {
        Catalog::default_version(self)
    }
    fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>> {
        Catalog::system_images(self, version)
    }
    fn is_supported(&self, version: &str) -> bool {
        Catalog::is_supported(self, version)
    }
    fn supported_versions(&self) -> Vec<String> {
        Catalog::supported_versions(self)
    }
}

#[test]
fn catalog_works_through_the_config_trait() {
    let c: &dyn VersionCatalog = catalog();
    assert_eq!(c.default_version(), DEFAULT);
    assert!(c.is_supported("v1.20.15-rancher2-2"));
    assert!(!c.is_supported("v1.32.0-rancher1-1"));
    assert_eq!(
        c.system_images(DEFAULT).unwrap()["kubernetes"],
        "rancher/hyperkube:v1.32.6-rancher1"
    );
    assert!(
        c.supported_versions()
            .contains(&"v1.27.16-rancher1-1".to_string())
    );
}

#[test]
fn covers_every_minor_from_v1_20_to_v1_32() {
    let versions = catalog().supported_versions();
    for minor in 20..=32 {
        let prefix = format!("v1.{minor}.");
        assert!(
            versions.iter().any(|v| v.starts_with(&prefix)),
            "no {prefix}x version in {versions:?}"
        );
    }
    // Every v1.20 release KDM knows, from v1.20.4 to the last v1.20.15 rebuild.
    let v120: Vec<_> = versions
        .iter()
        .filter(|v| v.starts_with("v1.20."))
        .collect();
    assert_eq!(v120.len(), 20, "{v120:?}");
    assert_eq!(v120.first().unwrap().as_str(), "v1.20.4-rancher1-1");
    assert_eq!(v120.last().unwrap().as_str(), "v1.20.15-rancher2-2");
    let v132: Vec<_> = versions
        .iter()
        .filter(|v| v.starts_with("v1.32."))
        .collect();
    assert_eq!(v132.first().unwrap().as_str(), "v1.32.2-rancher1-1");
    assert_eq!(v132.last().unwrap().as_str(), "v1.32.13-rancher1-3");
    assert!(catalog().data().source.minors_not_found.is_empty());
}

#[test]
fn every_version_rke_1_7_and_1_8_shipped_is_known() {
    let c = catalog();
    // RKE v1.8.14's data.json has the RKE Extended Life versions too (v1.32.12, v1.32.13).
    for v in SHIPPED_BY_RKE_1_7_AND_1_8 {
        assert!(c.is_supported(v), "{v}");
        assert!(!c.is_unpublished(v), "{v}");
    }
    assert!(c.data().unpublished_versions.is_empty());
}

#[test]
fn every_patch_of_rke_1_7_and_1_8s_minors_is_known() {
    let c = catalog();
    let known: Vec<K8sVersion> = c
        .supported_versions()
        .iter()
        .map(|v| K8sVersion::parse(v).unwrap())
        .collect();
    for (minor, first, last) in PATCH_RANGES {
        for patch in first..=last {
            assert!(
                known
                    .iter()
                    .any(|v| v.major() == 1 && v.minor() == minor && v.patch() == patch),
                "no v1.{minor}.{patch}-rancherN-M known"
            );
        }
    }
}

#[test]
fn nearest_versions_are_the_neighbours_in_the_minor() {
    let c = catalog();
    assert_eq!(
        c.nearest_versions("v1.32.12-rancher1-2"),
        ["v1.32.12-rancher1-1", "v1.32.13-rancher1-1"]
    );
    assert_eq!(
        c.nearest_versions("v1.32.99-rancher1-1"),
        ["v1.32.13-rancher1-3"]
    );
    assert_eq!(
        c.nearest_versions("v1.20.1-rancher1-1"),
        ["v1.20.4-rancher1-1"]
    );
    assert!(c.nearest_versions("v1.40.0-rancher1-1").is_empty());
    assert!(c.nearest_versions("banana").is_empty());
}

#[test]
fn supported_versions_are_sorted_by_semver() {
    let versions = catalog().supported_versions();
    let parsed: Vec<K8sVersion> = versions
        .iter()
        .map(|v| K8sVersion::parse(v).unwrap())
        .collect();
    let mut sorted = parsed.clone();
    sorted.sort();
    assert_eq!(parsed, sorted);
    let p20_9 = versions.iter().position(|v| v == "v1.20.9-rancher1-1");
    let p20_10 = versions.iter().position(|v| v == "v1.20.10-rancher1-1");
    assert!(p20_9 < p20_10, "1.20.9 must sort before 1.20.10");
}

#[test]
fn every_version_has_complete_images_for_its_keys() {
    for version in catalog().supported_versions() {
        let parsed = K8sVersion::parse(&version).unwrap();
        let images = catalog().system_images(&version).unwrap();
        for key in images.keys() {
            assert!(
                SYSTEM_IMAGE_KEYS.contains(&key.as_str()),
                "{version}: unknown key {key}"
            );
        }
        let mut required = vec![
            "etcd",
            "alpine",
            "nginx_proxy",
            "cert_downloader",
            "kubernetes_services_sidecar",
            "kubedns",
            "dnsmasq",
            "kubedns_sidecar",
            "kubedns_autoscaler",
            "coredns",
            "coredns_autoscaler",
            "nodelocal",
            "kubernetes",
            "flannel",
            "flannel_cni",
            "calico_node",
            "calico_cni",
            "calico_controllers",
            "calico_ctl",
            "calico_flexvol",
            "canal_node",
            "canal_cni",
            "canal_controllers",
            "canal_flannel",
            "canal_flexvol",
            "pod_infra_container",
            "ingress",
            "ingress_backend",
            "metrics_server",
            "windows_pod_infra_container",
        ];
        if parsed.minor() >= 21 {
            required.push("ingress_webhook");
        }
        if parsed.minor() < 30 {
            required.extend(["weave_node", "weave_cni"]);
        } else {
            assert!(
                !images.contains_key("weave_node"),
                "{version}: weave is refused from 1.30"
            );
        }
        for key in required {
            let image = images
                .get(key)
                .unwrap_or_else(|| panic!("{version}: missing {key}"));
            assert!(
                image.contains(':'),
                "{version}.{key}: untagged image {image}"
            );
        }
        // The hyperkube tag is the version without its last "-M" (KDM's own consistency rule);
        // RKE Extended Life builds (v1.31.11+, v1.32.7+) come from another repository.
        let kube = &images["kubernetes"];
        let tag = kube
            .strip_prefix("rancher/hyperkube:")
            .or_else(|| kube.strip_prefix("rke-extended-life/hyperkube:"))
            // rkers' own minors (data/versions-next.json): the image users build.
            .or_else(|| kube.strip_prefix("rkers/hyperkube:"))
            .unwrap_or_else(|| panic!("{version}: kubernetes image {kube}"));
        assert!(version.starts_with(tag), "{version}: hyperkube tag {tag}");
        // The four rke-tools roles share one image.
        let tools = &images["alpine"];
        assert!(
            tools.starts_with("rancher/rke-tools:"),
            "{version}: {tools}"
        );
        for key in [
            "nginx_proxy",
            "cert_downloader",
            "kubernetes_services_sidecar",
        ] {
            assert_eq!(&images[key], tools, "{version}.{key}");
        }
    }
}

#[test]
fn images_match_the_spec_table_for_the_newest_versions() {
    let c = catalog();
    let img = |v: &str, k: &str| c.system_images(v).unwrap()[k].clone();
    assert_eq!(
        img("v1.31.2-rancher2-1", "etcd"),
        "rancher/mirrored-coreos-etcd:v3.5.15"
    );
    assert_eq!(
        img("v1.31.2-rancher2-1", "alpine"),
        "rancher/rke-tools:v0.1.105"
    );
    assert_eq!(
        img("v1.32.11-rancher1-1", "kubernetes"),
        "rke-extended-life/hyperkube:v1.32.11-rancher1"
    );
    assert_eq!(
        img("v1.32.6-rancher1-1", "alpine"),
        "rancher/rke-tools:v0.1.114"
    );
    assert_eq!(
        img("v1.28.15-rancher1-1", "ingress"),
        "rancher/nginx-ingress-controller:nginx-1.11.3-rancher1"
    );
    assert_eq!(
        img("v1.30.5-rancher1-1", "alpine"),
        "rancher/rke-tools:v0.1.103"
    );
    assert_eq!(
        img("v1.28.14-rancher1-1", "calico_cni"),
        "rancher/calico-cni:v3.27.4-rancher1"
    );
    assert_eq!(
        img("v1.27.16-rancher1-1", "metrics_server"),
        "rancher/mirrored-metrics-server:v0.6.3"
    );
    assert_eq!(
        img("v1.20.15-rancher2-2", "etcd"),
        "rancher/mirrored-coreos-etcd:v3.4.15-rancher1"
    );
    assert_eq!(
        img("v1.20.15-rancher2-2", "pod_infra_container"),
        "rancher/mirrored-pause:3.6"
    );
}

#[test]
fn current_versions_pick_the_newest_patch_of_each_offered_minor() {
    // Emulating RKE v1.8.14: v1.20 to v1.29 (max RKE 1.3.99 … 1.7.99) are no longer offered,
    // although they stay deployable.
    assert_eq!(catalog().rke_version(), "v1.8.14");
    assert_eq!(catalog().current_versions(), CURRENT);
    assert!(catalog().is_supported("v1.27.16-rancher1-1"));
    assert!(catalog().is_supported("v1.20.4-rancher1-1"));

    let rke17 = catalog_with(|d| {
        d.rke_version = "v1.7.3".to_string();
        d.default_version = "v1.31.10-rancher1-1".to_string();
    });
    assert_eq!(
        rke17.current_versions(),
        [
            "v1.28.15-rancher1-1",
            "v1.29.15-rancher1-1",
            "v1.30.14-rancher1-1",
            "v1.31.14-rancher1-1"
        ],
        "v1.32 needs RKE 1.8"
    );
    assert!(!rke17.is_supported("v1.32.2-rancher1-1"));
    let rke13 = catalog_with(|d| {
        d.rke_version = "v1.3.20".to_string();
        d.default_version = "v1.20.15-rancher2-2".to_string();
    });
    assert_eq!(rke13.current_versions()[0], "v1.20.15-rancher2-2");

    // Versions needing a newer RKE are dropped; deprecated ones stay accepted (adoption) but
    // are no longer offered.
    let old = catalog_with(|d| {
        d.rke_version = "v1.2.10".to_string();
        d.default_version = "v1.20.11-rancher1-2".to_string();
        d.version_info
            .get_mut("v1.20.9-rancher1-1")
            .unwrap()
            .deprecate_rke_version = Some("1.2.5".to_string());
    });
    assert!(!old.is_supported("v1.20.12-rancher1-1"), "needs RKE 1.2.14");
    assert!(
        old.is_supported("v1.20.9-rancher1-1"),
        "deprecated, still adoptable"
    );
    assert!(old.is_supported("v1.20.11-rancher1-2"));
    let newest_v120 = |c: &Catalog| {
        c.current_versions()
            .into_iter()
            .find(|v| v.starts_with("v1.20."))
    };
    let deprecated_newest = catalog_with(|d| {
        d.rke_version = "v1.3.20".to_string();
        d.default_version = "v1.20.15-rancher2-1".to_string();
        d.version_info.insert(
            "v1.20.15-rancher2-2".to_string(),
            rkers::metadata::VersionInfo {
                deprecate_rke_version: Some("1.3.0".to_string()),
                ..Default::default()
            },
        );
    });
    assert_eq!(
        newest_v120(&deprecated_newest).as_deref(),
        Some("v1.20.15-rancher2-1"),
        "a deprecated version is not offered"
    );
    assert!(deprecated_newest.is_supported("v1.20.15-rancher2-2"));
}

#[test]
fn list_versions_prints_default_or_current() {
    assert_eq!(list_versions(catalog(), false), [DEFAULT]);
    assert_eq!(list_versions(catalog(), true), CURRENT);
}

#[test]
fn service_options_by_minor() {
    let c = catalog();
    let v131 = c.service_options("v1.31.1-rancher1-1", None).unwrap();
    assert_eq!(v131.etcd["client-cert-auth"], "true");
    assert!(!v131.etcd.contains_key("enable-v2"));
    assert!(!v131.kubeapi.contains_key("insecure-port"));
    assert_eq!(v131.kubeapi["service-account-issuer"], "rke");
    assert!(!v131.kube_controller.contains_key("pod-eviction-timeout"));
    assert!(!v131.kubelet.contains_key("network-plugin"));
    assert!(!v131.scheduler.contains_key("address"));
    assert_eq!(v131.kubeproxy["healthz-bind-address"], "127.0.0.1");

    let v120 = c.service_options("v1.20.15-rancher2-2", None).unwrap();
    assert_eq!(v120.etcd["enable-v2"], "true");
    assert_eq!(v120.kubeapi["insecure-port"], "0");
    assert_eq!(
        v120.kubeapi["feature-gates"],
        "ServiceAccountIssuerDiscovery=false"
    );
    assert_eq!(v120.kubelet["network-plugin"], "cni");
    assert_eq!(v120.kube_controller["pod-eviction-timeout"], "5m0s");
    assert_eq!(v120.scheduler["address"], "0.0.0.0");

    // The kubernetes image's minor wins over kubernetes_version's (image or bare tag).
    let by_image = c
        .service_options(
            "v1.31.1-rancher1-1",
            Some("rancher/hyperkube:v1.20.15-rancher2"),
        )
        .unwrap();
    assert_eq!(by_image, v120);
    assert_eq!(
        c.service_options("v1.31.1-rancher1-1", Some("v1.20.15-rancher2"))
            .unwrap(),
        v120
    );
    // An image of the same minor changes nothing.
    assert_eq!(
        c.service_options(
            "v1.31.1-rancher1-1",
            Some("registry.local:5000/rancher/hyperkube:v1.31.1-rancher1")
        )
        .unwrap(),
        v131
    );
    // v1.31 and v1.32 share their flags in KDM; an unpublished version takes its minor's.
    assert_eq!(c.service_options("v1.32.6-rancher1-1", None).unwrap(), v131);
    assert_eq!(
        c.service_options(
            "v1.32.13-rancher1-3",
            Some("rke-extended-life/hyperkube:v1.32.13-rancher1")
        )
        .unwrap(),
        v131
    );
}

#[test]
fn service_options_by_exact_version_first() {
    let special = ServiceOptions {
        etcd: BTreeMap::from([("experimental-initial-corrupt-check".into(), "true".into())]),
        ..ServiceOptions::default()
    };
    let c = catalog_with(|d| {
        d.service_options
            .insert("v1.30.5-rancher1-1".to_string(), special.clone());
    });
    assert_eq!(
        c.service_options("v1.30.5-rancher1-1", None).unwrap(),
        special
    );
    // Exact match wins even when the image names another minor.
    assert_eq!(
        c.service_options(
            "v1.30.5-rancher1-1",
            Some("rancher/hyperkube:v1.20.15-rancher2")
        )
        .unwrap(),
        special
    );
    assert_ne!(
        c.service_options("v1.30.4-rancher1-1", None).unwrap(),
        special
    );
}

#[test]
fn service_options_for_unknown_minor_is_rke_error() {
    let err = catalog()
        .service_options("v1.19.16-rancher1-1", None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "No serviceOptions found for cluster version [v1.19.16-rancher1-1] or cluster major version [v1.19]"
    );
}

#[test]
fn windows_service_options() {
    let c = catalog();
    let w120 = c
        .windows_service_options("v1.20.15-rancher2-2", None)
        .unwrap();
    assert_eq!(w120.kubeproxy["feature-gates"], "WinOverlay=true");
    assert_eq!(w120.kubeproxy["proxy-mode"], "kernelspace");
    assert_eq!(
        w120.kubelet["feature-gates"],
        "HyperVContainer=true,WindowsGMSA=true"
    );
    let w127 = c
        .windows_service_options("v1.27.16-rancher1-1", None)
        .unwrap();
    assert_eq!(w127.kubelet["cgroups-per-qos"], "false");
    assert_eq!(
        w127.kubelet["cert-dir"],
        "[PREFIX_PATH]/var/lib/kubelet/pki"
    );
    assert!(!w127.kubelet.contains_key("feature-gates"));
    assert!(!w127.kubelet.contains_key("cni-bin-dir"));
    assert_eq!(w127.kubeproxy["enable-dsr"], "false");
    assert!(!w127.kubeproxy.contains_key("feature-gates"));
    assert!(w127.etcd.is_empty() && w127.kubeapi.is_empty());
    // Windows worker flags are published for every minor up to v1.32.
    for minor in 20..=32 {
        let key = format!("v1.{minor}");
        assert!(
            c.data().windows_service_options.contains_key(&key),
            "no Windows options for {key}"
        );
    }
    let w132 = c
        .windows_service_options("v1.32.13-rancher1-3", None)
        .unwrap();
    assert_eq!(w132, w127);
}

#[test]
fn docker_versions_and_verdicts() {
    let c = catalog();
    let v120 = c.docker_versions("1.20");
    assert_eq!(
        v120,
        [
            "1.13.x", "17.03.x", "17.06.x", "17.09.x", "18.06.x", "18.09.x", "19.03.x", "20.10.x"
        ]
    );
    assert_eq!(c.docker_versions("v1.20"), v120);
    assert_eq!(c.docker_versions("1.31").last().unwrap(), "28.3.x");
    assert_eq!(c.docker_versions("1.32").last().unwrap(), "28.3.x");
    assert!(c.docker_versions("1.19").is_empty());

    let verdict = |k: &str, d: &str| c.docker_version_supported(k, d).unwrap();
    // Debian bookworm's docker.io reports "20.10.24+dfsg1".
    assert_eq!(
        verdict("v1.20.15-rancher2-2", "20.10.24+dfsg1"),
        DockerVerdict::Supported
    );
    assert_eq!(
        verdict("v1.20.15-rancher2-2", "24.0.7"),
        DockerVerdict::NewerThanKnown
    );
    assert_eq!(
        verdict("v1.31.1-rancher1-1", "27.2.1"),
        DockerVerdict::Supported
    );
    assert_eq!(
        verdict("v1.31.1-rancher1-1", "28.0.4"),
        DockerVerdict::Supported
    );
    assert_eq!(
        verdict("v1.31.1-rancher1-1", "29.0.1"),
        DockerVerdict::NewerThanKnown
    );
    assert_eq!(
        verdict("v1.31.1-rancher1-1", "17.12.1-ce"),
        DockerVerdict::Unsupported
    );
    assert_eq!(
        verdict("v1.31.1-rancher1-1", "1.12.6"),
        DockerVerdict::Unsupported
    );
    // No table for the minor: nothing can be vouched for.
    assert_eq!(
        verdict("v1.19.1-rancher1-1", "20.10.1"),
        DockerVerdict::Unsupported
    );

    let bad_docker = c.docker_version_supported(DEFAULT, "latest").unwrap_err();
    assert!(
        bad_docker.to_string().contains("\"latest\""),
        "{bad_docker}"
    );
    let bad_k8s = c.docker_version_supported("1.31", "27.2.1").unwrap_err();
    assert!(matches!(bad_k8s, MetadataError::Version(_)), "{bad_k8s}");
}

#[test]
fn addon_templates_follow_kdm_ranges() {
    let c = catalog();
    let t = |a: &str, v: &str| c.addon_template(a, v);
    assert_eq!(
        t(addon::CALICO, "v1.31.1-rancher1-1").as_deref(),
        Some("calico-v3.28.1")
    );
    assert_eq!(
        t(addon::CALICO, "v1.30.2-rancher1-1").as_deref(),
        Some("calico-v3.28.0")
    );
    assert_eq!(
        t(addon::CANAL, "v1.20.15-rancher2-2").as_deref(),
        Some("canal-v3.17.1")
    );
    assert_eq!(
        t(addon::FLANNEL, "v1.20.15-rancher2-2").as_deref(),
        Some("flannel-v1.16")
    );
    assert_eq!(
        t(addon::FLANNEL, "v1.28.7-rancher1-1").as_deref(),
        Some("flannel-v0.24.2")
    );
    assert_eq!(
        t(addon::COREDNS, "v1.20.15-rancher1-1").as_deref(),
        Some("coredns-v1.17")
    );
    assert_eq!(
        t(addon::COREDNS, "v1.20.15-rancher2-2").as_deref(),
        Some("coredns-v1.8.3-rancher2")
    );
    assert_eq!(
        t(addon::NGINX_INGRESS, "v1.30.4-rancher1-1").as_deref(),
        Some("nginxingress-v1.11.2-rancher1")
    );
    assert_eq!(
        t(addon::ACI, "v1.27.14-rancher1-1").as_deref(),
        Some("aci-v6.0.4.1"),
        "range written with a space after '<'"
    );
    // Ranges of the newer KDM commit, and the two strings repaired from the older branches.
    assert_eq!(
        t(addon::CALICO, "v1.32.13-rancher1-3").as_deref(),
        Some("calico-v3.30.2")
    );
    assert_eq!(
        t(addon::CALICO, "v1.31.10-rancher1-1").as_deref(),
        Some("calico-v3.30.2")
    );
    assert_eq!(
        t(addon::CALICO, "v1.31.9-rancher1-1").as_deref(),
        Some("calico-v3.29.0")
    );
    assert_eq!(
        t(addon::CALICO, "v1.29.2-rancher1-1").as_deref(),
        Some("calico-v3.27.0-rancher2")
    );
    assert_eq!(
        t(addon::FLANNEL, "v1.23.16-rancher2-1").as_deref(),
        Some("flannel-v0.14.0-rancher2")
    );
    assert_eq!(
        t(addon::FLANNEL, "v1.32.11-rancher1-1").as_deref(),
        Some("flannel-v0.27.3")
    );
    assert_eq!(
        t(addon::FLANNEL, "v1.32.12-rancher1-1").as_deref(),
        Some("flannel-v0.28.1")
    );
    assert_eq!(
        t(addon::CANAL, "v1.32.13-rancher1-3").as_deref(),
        Some("canal-v3.30.2-rancher2")
    );
    assert_eq!(
        t(addon::NGINX_INGRESS, "v1.32.2-rancher1-1").as_deref(),
        Some("nginxingress-v1.12.0-rancher1")
    );
    assert_eq!(t("nosuchaddon", DEFAULT), None);
    assert_eq!(t(addon::CALICO, "not-a-version"), None);

    for version in catalog().supported_versions() {
        for a in [
            addon::CALICO,
            addon::CANAL,
            addon::FLANNEL,
            addon::COREDNS,
            addon::KUBEDNS,
            addon::METRICS_SERVER,
            addon::NGINX_INGRESS,
            addon::NODELOCAL,
        ] {
            assert!(t(a, &version).is_some(), "no {a} template for {version}");
        }
    }
}

#[test]
fn system_images_listing_default_version_and_all() {
    let c = catalog();
    let list = system_images_listing(c, None, false).unwrap();
    let mut sorted = list.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(list, sorted, "unique and sorted");
    let images = c.system_images(DEFAULT).unwrap();
    let expected: std::collections::BTreeSet<_> = images
        .iter()
        .filter(|(k, _)| k.as_str() != "windows_pod_infra_container")
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(list, expected.into_iter().collect::<Vec<_>>());
    assert!(list.contains(&"rancher/hyperkube:v1.32.6-rancher1".to_string()));
    assert_eq!(system_images_listing(c, Some(""), false).unwrap(), list);

    let v120 = system_images_listing(c, Some("v1.20.15-rancher2-2"), false).unwrap();
    assert!(v120.contains(&"rancher/hyperkube:v1.20.15-rancher2".to_string()));

    let all = system_images_listing(c, Some("ignored"), true).unwrap();
    for v in CURRENT {
        let kube = &c.system_images(v).unwrap()["kubernetes"];
        assert!(all.contains(kube), "{kube}");
    }
    assert!(!all.contains(&"rancher/hyperkube:v1.27.16-rancher1".to_string()));
}

#[test]
fn windows_pause_image_is_left_out_of_listing() {
    let c = catalog_with(|d| {
        d.system_images.get_mut(DEFAULT).unwrap().insert(
            "windows_pod_infra_container".to_string(),
            "rancher/mirrored-pause-windows:only".to_string(),
        );
    });
    let list = system_images_listing(&c, None, false).unwrap();
    assert!(!list.iter().any(|i| i.contains("pause-windows")));
}

#[test]
fn unknown_or_unpublished_version_gives_one_short_error() {
    let err = |v: &str| {
        system_images_listing(catalog(), Some(v), false)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("v1.32.99-rancher1-1"),
        "v1.32.99-rancher1-1 is not a Kubernetes version rkers knows (nearest: \
         v1.32.13-rancher1-3); set RKERS_METADATA_FILE to a versions.json that lists it"
    );
    assert_eq!(
        err("v1.40.0-rancher1-1"),
        "v1.40.0-rancher1-1 is not a Kubernetes version rkers knows; set RKERS_METADATA_FILE \
         to a versions.json that lists it"
    );
    assert!(err("banana").starts_with("banana is not a Kubernetes version rkers knows"));
    // A catalog file may list a version RKE1 shipped without metadata (the embedded data has
    // none: RKE v1.8.14's data.json publishes its RKE Extended Life versions).
    let c = catalog_with(|d| {
        d.system_images.remove("v1.32.13-rancher1-2");
        d.unpublished_versions.insert(
            "v1.32.13-rancher1-2".to_string(),
            UnpublishedVersion {
                rke: "v1.8.13".to_string(),
            },
        );
    });
    let unpublished = system_images_listing(&c, Some("v1.32.13-rancher1-2"), false)
        .unwrap_err()
        .to_string();
    assert!(
        unpublished.starts_with("v1.32.13-rancher1-2 has no published metadata"),
        "{unpublished}"
    );
    assert_eq!(c.system_images("v1.32.13-rancher1-2"), None);
    assert_eq!(catalog().system_images("v1.19.16-rancher1-1"), None);
    assert!(K8sVersion::parse("v1.31").is_err());
}

fn temp_json(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn load_honours_env_overrides() {
    let mut data = catalog().data().clone();
    data.default_version = "v1.20.15-rancher2-2".to_string();
    let file = temp_json(&serde_json::to_string_pretty(&data).unwrap());
    let path = file.path().to_str().unwrap().to_string();

    let env = |pairs: Vec<(&'static str, String)>| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
    };

    let embedded = Catalog::load_with(env(vec![])).unwrap();
    assert_eq!(embedded.default_version(), DEFAULT);

    let ours = Catalog::load_with(env(vec![(RKERS_METADATA_FILE_ENV, path.clone())])).unwrap();
    assert_eq!(ours.default_version(), "v1.20.15-rancher2-2");
    assert_eq!(ours.origin(), path);

    let rancher = Catalog::load_with(env(vec![(RANCHER_METADATA_URL_ENV, path.clone())])).unwrap();
    assert_eq!(rancher.default_version(), "v1.20.15-rancher2-2");
    let file_url = Catalog::load_with(env(vec![(
        RANCHER_METADATA_URL_ENV,
        format!("file://{path}"),
    )]))
    .unwrap();
    assert_eq!(file_url.default_version(), "v1.20.15-rancher2-2");

    let url = Catalog::load_with(env(vec![(
        RANCHER_METADATA_URL_ENV,
        "https://releases.rancher.com/kontainer-driver-metadata/dev-v2.10/data.json".to_string(),
    )]))
    .unwrap_err();
    assert!(
        url.to_string().contains("only file paths are supported"),
        "{url}"
    );

    // rkers' own variable wins over RKE's.
    let both = Catalog::load_with(env(vec![
        (
            RANCHER_METADATA_URL_ENV,
            "https://example.invalid/x.json".to_string(),
        ),
        (RKERS_METADATA_FILE_ENV, path.clone()),
    ]))
    .unwrap();
    assert_eq!(both.default_version(), "v1.20.15-rancher2-2");

    let missing = Catalog::load_with(env(vec![(
        RKERS_METADATA_FILE_ENV,
        "/nonexistent/versions.json".to_string(),
    )]))
    .unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/versions.json"),
        "{missing}"
    );
}

#[test]
fn bad_files_name_file_line_and_column() {
    let file = temp_json("{\n  \"rke_version\": \"v1.7.0\",\n  \"default_version\": 12\n}\n");
    let err = Catalog::from_file(file.path()).unwrap_err().to_string();
    let prefix = format!("{}:3:", file.path().display());
    assert!(err.starts_with(&prefix), "{err}");

    let broken = temp_json("{ not json");
    let err = Catalog::from_file(broken.path()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:1:", broken.path().display())),
        "{err}"
    );

    let mut data = catalog().data().clone();
    data.default_version = "v1.32.0-rancher1-1".to_string();
    let err = Catalog::from_data(data, "x.json").unwrap_err().to_string();
    assert!(
        err.contains("default_version") && err.starts_with("x.json"),
        "{err}"
    );

    let mut data = catalog().data().clone();
    data.system_images
        .get_mut(DEFAULT)
        .unwrap()
        .insert("nginxProxy".to_string(), "x:y".to_string());
    let err = Catalog::from_data(data, "x.json").unwrap_err().to_string();
    assert!(err.contains("unknown key \"nginxProxy\""), "{err}");

    let mut data = catalog().data().clone();
    data.addon_templates
        .get_mut("calico")
        .unwrap()
        .insert(">=one".to_string(), "calico-x".to_string());
    let err = Catalog::from_data(data, "x.json").unwrap_err().to_string();
    assert!(err.contains("addon_templates.calico"), "{err}");
}

#[test]
fn reads_a_kdm_data_json() {
    // The shape of KDM's generated data.json (Go JSON names), trimmed to one version.
    let kdm = r#"{
      "K8sVersionServiceOptions": {
        "v1.30": {"etcd": {"client-cert-auth": "true"}, "kubeapi": null, "kubelet": {"v": "2"},
                  "kubeproxy": {"v": "2"}, "kubeController": {"leader-elect": "true"}, "scheduler": {"v": "2"}}
      },
      "K8sVersionRKESystemImages": {
        "v1.30.5-rancher1-1": {"etcd": "rancher/mirrored-coreos-etcd:v3.5.12",
          "kubernetes": "rancher/hyperkube:v1.30.5-rancher1", "alpine": "rancher/rke-tools:v0.1.103",
          "nginxProxy": "rancher/rke-tools:v0.1.103", "calicoFlexVol": "rancher/mirrored-calico-pod2daemon-flexvol:v3.28.1",
          "windowsPodInfraContainer": "rancher/mirrored-pause:3.7"}
      },
      "K8sVersionedTemplates": {
        "calico": {">=1.30.4-rancher1-1": "calico-v3.28.1"},
        "templateKeys": {"calico-v3.28.1": "apiVersion: v1 ..."}
      },
      "K8sVersionInfo": {"v1.30": {"minRKEVersion": "1.6.0-rc0", "minRancherVersion": "2.9.0-patch0"}},
      "RancherDefaultK8sVersions": {"default": "v1.30.x"},
      "RKEDefaultK8sVersions": {"0.3": "v1.16.3-rancher1-1", "default": "v1.30.5-rancher1-1"},
      "K8sVersionDockerInfo": {"1.30": ["20.10.x", "27.2.x"]},
      "K8sVersionWindowsServiceOptions": {"v1.30": {"kubelet": {"cgroups-per-qos": "false"}}},
      "CisConfigParams": {}, "CisBenchmarkVersionInfo": {}, "k3s": {}, "rke2": {}
    }"#;
    let file = temp_json(kdm);
    let c = Catalog::load_with(|name| {
        (name == RANCHER_METADATA_URL_ENV).then(|| file.path().display().to_string())
    })
    .unwrap();
    assert_eq!(c.default_version(), "v1.30.5-rancher1-1");
    let images = c.system_images("v1.30.5-rancher1-1").unwrap();
    assert_eq!(images["nginx_proxy"], "rancher/rke-tools:v0.1.103");
    assert_eq!(
        images["calico_flexvol"],
        "rancher/mirrored-calico-pod2daemon-flexvol:v3.28.1"
    );
    assert_eq!(
        images["windows_pod_infra_container"],
        "rancher/mirrored-pause:3.7"
    );
    let opts = c.service_options("v1.30.5-rancher1-1", None).unwrap();
    assert_eq!(opts.kube_controller["leader-elect"], "true");
    assert!(opts.kubeapi.is_empty());
    assert_eq!(
        c.addon_template(addon::CALICO, "v1.30.5-rancher1-1")
            .as_deref(),
        Some("calico-v3.28.1")
    );
    assert_eq!(
        c.docker_version_supported("v1.30.5-rancher1-1", "27.2.0")
            .unwrap(),
        DockerVerdict::Supported
    );
    assert_eq!(c.current_versions(), ["v1.30.5-rancher1-1"]);
    // The file brings its own template bodies, as it does for RKE1.
    assert_eq!(
        c.template_body("calico-v3.28.1"),
        Some("apiVersion: v1 ...")
    );
    assert_eq!(c.template_body("calico-v3.30.2"), None);
}

#[test]
fn a_metadata_file_that_is_no_regular_file_is_refused_at_once() {
    // /dev/zero would be read until memory runs out; a bound refuses it before a byte.
    let err = Catalog::from_file(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/dev/zero"), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}
