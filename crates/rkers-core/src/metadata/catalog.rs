//! The version catalog: `data/versions.json` (facts extracted from KDM) loaded into typed structs,
//! plus the lookups RKE performs on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::MetadataError;
use super::kdm;
use super::version::{K8sVersion, VersionRange, minor_key_of};

/// The catalog compiled into the binary.
const EMBEDDED_JSON: &str = include_str!("../../../../data/versions.json");

/// Environment variable RKE reads for an alternative metadata file (RKE also accepts URLs;
/// rkers only accepts local paths).
pub const RANCHER_METADATA_URL_ENV: &str = "RANCHER_METADATA_URL";
/// rkers' own override: a path to a file in the `data/versions.json` format.
pub const RKERS_METADATA_FILE_ENV: &str = "RKERS_METADATA_FILE";

/// Every key `system_images` may hold in cluster.yml, in RKE's field order.
pub const SYSTEM_IMAGE_KEYS: &[&str] = &[
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
    "weave_node",
    "weave_cni",
    "pod_infra_container",
    "ingress",
    "ingress_backend",
    "ingress_webhook",
    "metrics_server",
    "windows_pod_infra_container",
    "aci_cni_deploy_container",
    "aci_host_container",
    "aci_opflex_container",
    "aci_mcast_container",
    "aci_ovs_container",
    "aci_controller_container",
    "aci_gbp_server_container",
    "aci_opflex_server_container",
];

/// Addon names as KDM keys its template ranges (`addon_template(ADDON_..., version)`).
pub mod addon {
    pub const CALICO: &str = "calico";
    pub const CANAL: &str = "canal";
    pub const FLANNEL: &str = "flannel";
    pub const WEAVE: &str = "weave";
    pub const ACI: &str = "aci";
    pub const COREDNS: &str = "coreDNS";
    pub const KUBEDNS: &str = "kubeDNS";
    pub const METRICS_SERVER: &str = "metricsServer";
    pub const NGINX_INGRESS: &str = "nginxIngress";
    pub const NODELOCAL: &str = "nodelocal";
}

/// Default flags (without `--`) of each Kubernetes component for one version or minor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceOptions {
    #[serde(default)]
    pub etcd: BTreeMap<String, String>,
    #[serde(default)]
    pub kubeapi: BTreeMap<String, String>,
    #[serde(default)]
    pub kubelet: BTreeMap<String, String>,
    #[serde(default)]
    pub kubeproxy: BTreeMap<String, String>,
    #[serde(default)]
    pub kube_controller: BTreeMap<String, String>,
    #[serde(default)]
    pub scheduler: BTreeMap<String, String>,
}

/// Which RKE releases list or accept a version (KDM `K8sVersionInfo`, RKE fields only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rke_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rke_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecate_rke_version: Option<String>,
}

/// Where the data came from (informational; `data/README.md` describes the full record, which
/// names every KDM branch, commit and saved page the file was extracted from).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    #[serde(default)]
    pub repository: String,
    #[serde(default)]
    pub generator: String,
    #[serde(default)]
    pub minors_requested: Vec<String>,
    #[serde(default)]
    pub minors_not_found: Vec<String>,
    /// Everything else the extractor records (branches, pages, hashes), kept as written.
    #[serde(flatten)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// A version RKE1 released whose metadata KDM never published (RKE Extended Life): accepted,
/// with its minor's options and templates and images taken from the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnpublishedVersion {
    /// The RKE release that shipped it.
    #[serde(default)]
    pub rke: String,
}

/// The on-disk format of `data/versions.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogData {
    #[serde(default)]
    pub source: SourceInfo,
    /// The RKE release whose min/max/deprecation rules decide which versions are offered.
    pub rke_version: String,
    pub default_version: String,
    #[serde(default)]
    pub version_info: BTreeMap<String, VersionInfo>,
    /// `"X.Y"` → Docker versions (`"20.10.x"`); compared by major.minor.
    #[serde(default)]
    pub docker_versions: BTreeMap<String, Vec<String>>,
    /// Exact version or `vX.Y` → default flags.
    #[serde(default)]
    pub service_options: BTreeMap<String, ServiceOptions>,
    #[serde(default)]
    pub windows_service_options: BTreeMap<String, ServiceOptions>,
    /// Addon → (semver range → template name), in KDM's order.
    #[serde(default)]
    pub addon_templates: BTreeMap<String, IndexMap<String, String>>,
    /// Version → cluster.yml `system_images` key → image.
    pub system_images: BTreeMap<String, BTreeMap<String, String>>,
    /// Versions RKE1 shipped without published metadata.
    #[serde(default)]
    pub unpublished_versions: BTreeMap<String, UnpublishedVersion>,
    /// Template name → Go template body, when the file brings its own (a KDM data.json's
    /// `templateKeys`); rkers' own data embeds its bodies apart (data/addon-templates.json).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub template_bodies: BTreeMap<String, String>,
}

/// Verdict of the Docker version check (§8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DockerVerdict {
    /// The daemon's major.minor is listed for this Kubernetes minor.
    Supported,
    /// Newer than every listed Docker version: probably fine, worth a warning, not an error.
    NewerThanKnown,
    /// Older than the newest listed version and not listed itself (or nothing is listed).
    Unsupported,
}

/// Loaded, validated version metadata.
#[derive(Debug, Clone)]
pub struct Catalog {
    data: CatalogData,
    origin: String,
    rke_version: semver::Version,
    /// Versions with published data that need no newer RKE than `rke_version`, ascending:
    /// every version RKE1 listed, deprecated or not, so that any cluster it built is adopted.
    supported: Vec<K8sVersion>,
    /// Versions RKE1 shipped without published metadata, ascending.
    unpublished: Vec<K8sVersion>,
    templates: BTreeMap<String, Vec<(VersionRange, String)>>,
}

impl Catalog {
    /// The catalog compiled into the binary, parsed once.
    pub fn embedded() -> &'static Catalog {
        static EMBEDDED: OnceLock<Catalog> = OnceLock::new();
        EMBEDDED.get_or_init(|| {
            let mut data: CatalogData = serde_json::from_str(EMBEDDED_JSON)
                .expect("data/versions.json compiled into rkers is valid (checked by tests)");
            super::next::extend(&mut data, super::next::NextData::embedded())
                .expect("data/versions-next.json extends data/versions.json (checked by tests)");
            Catalog::from_data(
                data,
                "embedded data/versions.json + data/versions-next.json",
            )
            .expect("the embedded metadata is valid (checked by tests)")
        })
    }

    /// The text of `data/versions.json` compiled into the binary (`rkers --version` prints its
    /// checksum).
    pub fn embedded_json() -> &'static str {
        EMBEDDED_JSON
    }

    /// Parses and validates a catalog in the `data/versions.json` format, or a KDM `data.json`.
    pub fn from_json_str(json: &str) -> Result<Catalog, MetadataError> {
        Self::from_json_str_named(json, "<string>")
    }

    /// Reads a catalog file (`data/versions.json` format or KDM `data.json`).
    pub fn from_file(path: &Path) -> Result<Catalog, MetadataError> {
        let text =
            crate::bounded::read_to_string(path, crate::bounded::METADATA).map_err(|source| {
                MetadataError::Read {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Self::from_json_str_named(&text, &path.display().to_string())
    }

    /// The catalog to use: `RKERS_METADATA_FILE` if set, else `RANCHER_METADATA_URL` if set
    /// (local paths only), else the embedded one.
    pub fn load() -> Result<Catalog, MetadataError> {
        Self::load_with(|name| std::env::var(name).ok())
    }

    /// [`Catalog::load`] with the environment supplied by the caller (for tests and callers
    /// that already captured the environment).
    pub fn load_with(env: impl Fn(&str) -> Option<String>) -> Result<Catalog, MetadataError> {
        let non_empty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = non_empty(RKERS_METADATA_FILE_ENV) {
            return Self::from_file(Path::new(&path));
        }
        if let Some(value) = non_empty(RANCHER_METADATA_URL_ENV) {
            let path = metadata_url_to_path(&value)?;
            return Self::from_file(&path);
        }
        Ok(Self::embedded().clone())
    }

    fn from_json_str_named(json: &str, origin: &str) -> Result<Catalog, MetadataError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| MetadataError::Parse {
                origin: origin.to_string(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?;
        let data = if kdm::looks_like_kdm(&value) {
            let rke_version = Self::embedded_rke_version(origin)?;
            kdm::convert(&value, &rke_version).map_err(|cause| MetadataError::Kdm {
                origin: origin.to_string(),
                cause,
            })?
        } else {
            // Deserialize from the text (not the Value) so errors carry line and column.
            serde_json::from_str::<CatalogData>(json).map_err(|e| MetadataError::Parse {
                origin: origin.to_string(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?
        };
        Self::from_data(data, origin)
    }

    fn embedded_rke_version(origin: &str) -> Result<String, MetadataError> {
        // A KDM file has no notion of "which RKE am I": use the release the embedded data targets.
        if origin.starts_with("embedded") {
            return Err(MetadataError::Invalid {
                origin: origin.to_string(),
                message: "the embedded catalog must be in versions.json format".to_string(),
            });
        }
        Ok(Self::embedded().data.rke_version.clone())
    }

    /// Validates `data` and builds the lookup tables.
    pub fn from_data(data: CatalogData, origin: &str) -> Result<Catalog, MetadataError> {
        let invalid = |message: String| MetadataError::Invalid {
            origin: origin.to_string(),
            message,
        };
        let rke_version = parse_rke_version(&data.rke_version)
            .ok_or_else(|| invalid(format!("rke_version {:?} is not semver", data.rke_version)))?;

        let mut supported = Vec::new();
        for (version, images) in &data.system_images {
            let parsed =
                K8sVersion::parse(version).map_err(|e| invalid(format!("system_images: {e}")))?;
            for (key, image) in images {
                if !SYSTEM_IMAGE_KEYS.contains(&key.as_str()) {
                    return Err(invalid(format!(
                        "system_images[{version}]: unknown key {key:?} (not a cluster.yml system_images key)"
                    )));
                }
                if image.trim().is_empty() {
                    return Err(invalid(format!("system_images[{version}].{key} is empty")));
                }
            }
            if !images.contains_key("kubernetes") {
                return Err(invalid(format!(
                    "system_images[{version}] has no kubernetes image"
                )));
            }
            if !needs_newer_rke(&data, version, &rke_version) {
                supported.push(parsed);
            }
        }
        supported.sort();
        let mut unpublished = Vec::new();
        for version in data.unpublished_versions.keys() {
            let parsed = K8sVersion::parse(version)
                .map_err(|e| invalid(format!("unpublished_versions: {e}")))?;
            if data.system_images.contains_key(version) {
                return Err(invalid(format!(
                    "unpublished_versions: {version} has system_images, so it is published"
                )));
            }
            unpublished.push(parsed);
        }
        unpublished.sort();

        for key in data
            .service_options
            .keys()
            .chain(data.windows_service_options.keys())
            .chain(data.version_info.keys())
        {
            if K8sVersion::parse(key).is_err() && !is_minor_key(key) {
                return Err(invalid(format!(
                    "{key:?} is neither a version (vX.Y.Z-rancherN-M) nor a minor (vX.Y)"
                )));
            }
        }
        for key in data.docker_versions.keys() {
            if !is_minor_key(&format!("v{key}")) {
                return Err(invalid(format!(
                    "docker_versions: {key:?} is not a Kubernetes minor (X.Y)"
                )));
            }
        }

        let mut templates = BTreeMap::new();
        for (addon, ranges) in &data.addon_templates {
            let mut parsed = Vec::new();
            for (range, template) in ranges {
                let r = VersionRange::parse(range)
                    .map_err(|e| invalid(format!("addon_templates.{addon}: {e}")))?;
                parsed.push((r, template.clone()));
            }
            templates.insert(addon.clone(), parsed);
        }

        let catalog = Catalog {
            origin: origin.to_string(),
            rke_version,
            supported,
            unpublished,
            templates,
            data,
        };
        if !catalog.is_supported(&catalog.data.default_version) {
            return Err(invalid(format!(
                "default_version {:?} is not one of the supported versions",
                catalog.data.default_version
            )));
        }
        Ok(catalog)
    }

    /// Where this catalog was read from (a path, or "embedded data/versions.json").
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The raw data (for tooling and tests).
    pub fn data(&self) -> &CatalogData {
        &self.data
    }

    /// The RKE release whose rules this catalog applies (e.g. `v1.7.0`).
    pub fn rke_version(&self) -> &str {
        &self.data.rke_version
    }

    /// The default `kubernetes_version`.
    pub fn default_version(&self) -> String {
        self.data.default_version.clone()
    }

    /// Whether `version` (exact string, e.g. `v1.31.1-rancher1-1`) can be deployed.
    pub fn is_supported(&self, version: &str) -> bool {
        self.supported.iter().any(|v| v.as_str() == version)
    }

    /// Every deployable version, ascending by semver.
    pub fn supported_versions(&self) -> Vec<String> {
        self.supported.iter().map(|v| v.to_string()).collect()
    }

    /// Whether `version` is one RKE1 shipped whose metadata was never published: accepted, with
    /// its images taken from the cluster (state or cluster.yml `system_images`).
    pub fn is_unpublished(&self, version: &str) -> bool {
        self.unpublished.iter().any(|v| v.as_str() == version)
    }

    /// The known versions (published or not) of `version`'s minor closest to it: the nearest
    /// older and the nearest newer one, for an error message about an unknown version.
    pub fn nearest_versions(&self, version: &str) -> Vec<String> {
        let Ok(wanted) = K8sVersion::parse(version) else {
            return Vec::new();
        };
        let mut same_minor: Vec<&K8sVersion> = self
            .supported
            .iter()
            .chain(&self.unpublished)
            .filter(|v| v.major() == wanted.major() && v.minor() == wanted.minor())
            .collect();
        same_minor.sort();
        let older = same_minor.iter().rev().find(|v| ***v < wanted);
        let newer = same_minor.iter().find(|v| ***v > wanted);
        older
            .into_iter()
            .chain(newer)
            .map(|v| v.to_string())
            .collect()
    }

    /// The newest patch of every minor this RKE release offers for a new cluster
    /// (`rke config -l -a`): minors whose `max_rke_version` is older than
    /// [`Catalog::rke_version`] and deprecated versions are left out, and so are versions
    /// without published images.
    pub fn current_versions(&self) -> Vec<String> {
        let mut newest: BTreeMap<(u64, u64), &K8sVersion> = BTreeMap::new();
        for v in &self.supported {
            if let Some(max) = self
                .data
                .version_info
                .get(&v.minor_key())
                .and_then(|info| info.max_rke_version.as_deref())
                && parse_rke_version(max).is_some_and(|max| self.rke_version > max)
            {
                continue;
            }
            if self.is_deprecated(v.as_str()) {
                continue;
            }
            let slot = newest.entry((v.major(), v.minor())).or_insert(v);
            if v > *slot {
                *slot = v;
            }
        }
        newest.values().map(|v| v.to_string()).collect()
    }

    /// The `system_images` defaults of a supported version.
    pub fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>> {
        if !self.is_supported(version) {
            return None;
        }
        self.data.system_images.get(version).cloned()
    }

    /// Default component flags for Linux hosts (§29.1): by exact version first, then by `vX.Y`,
    /// where the minor comes from `kubernetes_image` (the `system_images.kubernetes` image or
    /// just its tag) when that disagrees with `version`.
    pub fn service_options(
        &self,
        version: &str,
        kubernetes_image: Option<&str>,
    ) -> Result<ServiceOptions, MetadataError> {
        lookup_options(&self.data.service_options, version, kubernetes_image)
    }

    /// Default kubelet/kube-proxy flags for Windows hosts, looked up like
    /// [`Catalog::service_options`].
    pub fn windows_service_options(
        &self,
        version: &str,
        kubernetes_image: Option<&str>,
    ) -> Result<ServiceOptions, MetadataError> {
        lookup_options(
            &self.data.windows_service_options,
            version,
            kubernetes_image,
        )
    }

    /// Docker versions listed for a Kubernetes minor (`"1.20"` or `"v1.20"`); empty if unknown.
    pub fn docker_versions(&self, minor: &str) -> Vec<String> {
        let key = minor.strip_prefix('v').unwrap_or(minor);
        self.data
            .docker_versions
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    /// Checks a Docker daemon version (`docker info` ServerVersion, e.g. `20.10.24+dfsg1`)
    /// against the table for the minor of `k8s_version`, comparing major.minor only.
    pub fn docker_version_supported(
        &self,
        k8s_version: &str,
        docker_version: &str,
    ) -> Result<DockerVerdict, MetadataError> {
        let k8s = K8sVersion::parse(k8s_version)?;
        let docker =
            docker_major_minor(docker_version).ok_or_else(|| MetadataError::BadDockerVersion {
                version: docker_version.to_string(),
            })?;
        let listed: Vec<(u64, u64)> = self
            .docker_versions(&k8s.docker_key())
            .iter()
            .filter_map(|v| docker_major_minor(v))
            .collect();
        if listed.contains(&docker) {
            return Ok(DockerVerdict::Supported);
        }
        match listed.iter().max() {
            Some(newest) if docker > *newest => Ok(DockerVerdict::NewerThanKnown),
            _ => Ok(DockerVerdict::Unsupported),
        }
    }

    /// The Go template body the metadata file brings for template `name`, if it has one.
    pub fn template_body(&self, name: &str) -> Option<&str> {
        self.data.template_bodies.get(name).map(String::as_str)
    }

    /// The template KDM selects for `addon` (see [`addon`]) at `version`, if any range matches.
    pub fn addon_template(&self, addon: &str, version: &str) -> Option<String> {
        let version = K8sVersion::parse(version).ok()?;
        self.templates
            .get(addon)?
            .iter()
            .find(|(range, _)| range.matches(&version))
            .map(|(_, template)| template.clone())
    }

    /// The error for a version whose images this catalog cannot list.
    pub(crate) fn unsupported_version_error(&self, version: &str) -> MetadataError {
        MetadataError::UnsupportedVersion {
            version: version.to_string(),
            unpublished: self.is_unpublished(version),
            nearest: self.nearest_versions(version),
        }
    }

    fn is_deprecated(&self, version: &str) -> bool {
        self.data
            .version_info
            .get(version)
            .and_then(|info| info.deprecate_rke_version.as_deref())
            .and_then(parse_rke_version)
            .is_some_and(|deprecated| self.rke_version >= deprecated)
    }
}

fn lookup_options(
    table: &BTreeMap<String, ServiceOptions>,
    version: &str,
    kubernetes_image: Option<&str>,
) -> Result<ServiceOptions, MetadataError> {
    if let Some(options) = table.get(version) {
        return Ok(options.clone());
    }
    let mut minor = minor_key_of(version).unwrap_or_default();
    if let Some(image_minor) = kubernetes_image
        .and_then(image_tag)
        .and_then(|tag| minor_key_of(&tag))
        && image_minor != minor
    {
        minor = image_minor;
    }
    table
        .get(&minor)
        .cloned()
        .ok_or_else(|| MetadataError::NoServiceOptions {
            version: version.to_string(),
            minor,
        })
}

/// The tag of an image reference (`rancher/hyperkube:v1.20.15-rancher1` → `v1.20.15-rancher1`);
/// a bare tag (`v1.20.15-rancher1`) is returned as is.
pub fn image_tag(image: &str) -> Option<String> {
    let image = image.split('@').next().unwrap_or(image);
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) if !tag.is_empty() => Some(tag.to_string()),
        Some(_) => None,
        None if !image.contains('/') => Some(image.to_string()),
        None => None,
    }
}

fn is_minor_key(key: &str) -> bool {
    key.strip_prefix('v')
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        })
}

/// RKE/Rancher release strings such as `1.2.0-rc0` or `v1.7.0`.
fn parse_rke_version(text: &str) -> Option<semver::Version> {
    let text = text.trim().trim_start_matches('v');
    semver::Version::parse(text).ok().or_else(|| {
        // "1.6" style: pad missing fields.
        let mut parts: Vec<&str> = text.split('.').collect();
        while parts.len() < 3 {
            parts.push("0");
        }
        semver::Version::parse(&parts.join(".")).ok()
    })
}

/// Versions that need a newer RKE release than `rke` (by exact version or by minor). A
/// deprecated version is still accepted: a cluster built with it must be adoptable.
fn needs_newer_rke(data: &CatalogData, version: &str, rke: &semver::Version) -> bool {
    let minor = minor_key_of(version).unwrap_or_default();
    [version, minor.as_str()].iter().any(|key| {
        data.version_info
            .get(*key)
            .and_then(|info| info.min_rke_version.as_deref())
            .and_then(parse_rke_version)
            .is_some_and(|min| *rke < min)
    })
}

/// `major.minor` of a Docker version string: `20.10.24+dfsg1`, `27.2.x`, `1.13.1`.
fn docker_major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim().trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let digits: String = minor_text
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let minor = digits.parse().ok()?;
    Some((major, minor))
}

/// Helper for callers that need the path RKE's env variable names (exposed for the CLI's
/// error messages).
pub fn metadata_url_to_path(value: &str) -> Result<PathBuf, MetadataError> {
    let lower = value.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(MetadataError::UrlNotSupported {
            variable: RANCHER_METADATA_URL_ENV,
            value: value.to_string(),
        });
    }
    let path = value.strip_prefix("file://").unwrap_or(value);
    Ok(PathBuf::from(path))
}

/// The set of images of one `system_images` map, minus the Windows pause image (RKE's CLI
/// does not pull it) and empty values.
pub(crate) fn linux_images(images: &BTreeMap<String, String>) -> BTreeSet<String> {
    images
        .iter()
        .filter(|(key, image)| key.as_str() != "windows_pod_infra_container" && !image.is_empty())
        .map(|(_, image)| image.clone())
        .collect()
}

impl crate::config::VersionCatalog for Catalog {
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
    fn is_unpublished(&self, version: &str) -> bool {
        Catalog::is_unpublished(self, version)
    }
    fn nearest_versions(&self, version: &str) -> Vec<String> {
        Catalog::nearest_versions(self, version)
    }
}

impl From<crate::metadata::ServiceOptions> for crate::plan::ServiceOptions {
    fn from(o: crate::metadata::ServiceOptions) -> Self {
        crate::plan::ServiceOptions {
            etcd: o.etcd,
            kube_api: o.kubeapi,
            kube_controller: o.kube_controller,
            scheduler: o.scheduler,
            kubelet: o.kubelet,
            kubeproxy: o.kubeproxy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_is_valid() {
        let c = Catalog::embedded();
        assert!(c.is_supported(&c.default_version()));
        assert!(c.supported_versions().len() > 20);
    }

    #[test]
    fn image_tags() {
        assert_eq!(
            image_tag("rancher/hyperkube:v1.20.15-rancher1").as_deref(),
            Some("v1.20.15-rancher1")
        );
        assert_eq!(
            image_tag("reg.local:5000/rancher/hyperkube:v1.28.1-rancher1").as_deref(),
            Some("v1.28.1-rancher1")
        );
        assert_eq!(image_tag("reg.local:5000/rancher/hyperkube"), None);
        assert_eq!(
            image_tag("v1.28.1-rancher1").as_deref(),
            Some("v1.28.1-rancher1")
        );
    }

    #[test]
    fn docker_versions_parse_leniently() {
        assert_eq!(docker_major_minor("20.10.24+dfsg1"), Some((20, 10)));
        assert_eq!(docker_major_minor("27.2.x"), Some((27, 2)));
        assert_eq!(docker_major_minor("1.13.1"), Some((1, 13)));
        assert_eq!(docker_major_minor("garbage"), None);
    }

    #[test]
    fn metadata_urls_are_refused() {
        let err = metadata_url_to_path(
            "https://releases.rancher.com/kontainer-driver-metadata/data.json",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only file paths are supported"), "{err}");
        assert_eq!(
            metadata_url_to_path("file:///tmp/x.json").unwrap(),
            PathBuf::from("/tmp/x.json")
        );
    }
}
