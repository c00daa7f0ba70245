//! Kubernetes minors after RKE1's last (v1.32), as rkers' own metadata: `data/versions-next.json`.
//! Each minor is the previous one's data (v1.33 starts from `data/versions.json`'s v1.32) with
//! its changes applied, and every change names its source. [`extend`] adds the result to the
//! catalog's tables so these versions are accepted and listed like RKE1's; [`step_reasons`]
//! says, for a minor change, which flags and images change and why (the dry run prints it).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::catalog::{CatalogData, ServiceOptions, image_tag};
use super::version::{K8sVersion, VersionError};

/// The file compiled into the binary.
const EMBEDDED_JSON: &str = include_str!("../../../../data/versions-next.json");

/// Where a fact comes from: a public page and what it says, in our words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub url: String,
    pub says: String,
}

/// What a minor does to one default flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The component no longer has the flag: rkers stops passing it.
    Removed,
    /// The flag is newly required or its default changes: rkers passes `value`.
    Set,
}

/// One flag change of a minor, with its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagChange {
    /// A service options key: `etcd`, `kubeapi`, `kube_controller`, `scheduler`, `kubelet`,
    /// `kubeproxy`.
    pub component: String,
    pub flag: String,
    pub change: ChangeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub source: Source,
}

/// Feature gates a minor removes (a component refuses to start when `--feature-gates` names one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemovedGates {
    #[serde(default)]
    pub gates: Vec<String>,
    #[serde(default)]
    pub source: Source,
}

/// Something an operator must know about a minor that is not a flag (cgroup v1, ipvs, etcd).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    pub text: String,
    pub source: Source,
}

/// One minor after v1.32.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextMinor {
    /// `vX.Y`.
    pub minor: String,
    /// rkers' version string of it, `vX.Y.Z-rkersN`.
    pub version: String,
    pub version_source: Source,
    /// The etcd release this minor runs with: upstream's, or the patch etcd asks for before its
    /// next minor (a rolling upgrade to 3.7 needs 3.6.11 first).
    pub etcd: String,
    pub etcd_source: Source,
    /// `system_images` keys that differ from the previous minor's.
    pub images: BTreeMap<String, String>,
    #[serde(default)]
    pub flag_changes: Vec<FlagChange>,
    #[serde(default)]
    pub removed_feature_gates: RemovedGates,
    #[serde(default)]
    pub notes: Vec<Note>,
}

impl NextMinor {
    /// `(component, flag)` of every flag this minor removes.
    pub fn removed_flags(&self) -> impl Iterator<Item = (&str, &str)> {
        self.changes_of(ChangeKind::Removed)
    }

    /// `(component, flag)` of every flag this minor requires.
    pub fn required_flags(&self) -> impl Iterator<Item = (&str, &str)> {
        self.changes_of(ChangeKind::Set)
    }

    fn changes_of(&self, kind: ChangeKind) -> impl Iterator<Item = (&str, &str)> {
        self.flag_changes
            .iter()
            .filter(move |c| c.change == kind)
            .map(|c| (c.component.as_str(), c.flag.as_str()))
    }
}

/// The on-disk format of `data/versions-next.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextData {
    #[serde(default)]
    pub about: String,
    /// The RKE1 version whose images v1.33 starts from.
    pub base_images: String,
    pub minors: Vec<NextMinor>,
    /// Minors not included, and why.
    #[serde(default)]
    pub left_out: BTreeMap<String, String>,
    #[serde(default)]
    pub docker_and_cri_dockerd: serde_json::Value,
}

impl NextData {
    /// The data compiled into the binary, parsed once.
    pub fn embedded() -> &'static NextData {
        static EMBEDDED: OnceLock<NextData> = OnceLock::new();
        EMBEDDED.get_or_init(|| {
            serde_json::from_str(EMBEDDED_JSON)
                .expect("data/versions-next.json compiled into rkers is valid (checked by tests)")
        })
    }

    /// The entry of minor `(major, minor)`.
    pub fn minor(&self, major: u64, minor: u64) -> Option<&NextMinor> {
        self.minors
            .iter()
            .find(|m| m.minor == format!("v{major}.{minor}"))
    }
}

/// The default flags of `component` (a service options key).
fn component_mut<'a>(
    options: &'a mut ServiceOptions,
    component: &str,
) -> Option<&'a mut BTreeMap<String, String>> {
    Some(match component {
        "etcd" => &mut options.etcd,
        "kubeapi" => &mut options.kubeapi,
        "kube_controller" => &mut options.kube_controller,
        "scheduler" => &mut options.scheduler,
        "kubelet" => &mut options.kubelet,
        "kubeproxy" => &mut options.kubeproxy,
        _ => return None,
    })
}

/// Applies one flag change to a set of default flags. A removed flag becomes `""`, which deletes
/// it from the flags RKE1's rules add as well (see `plan::flags::apply_service_options`).
fn apply_change(options: &mut ServiceOptions, change: &FlagChange) -> Result<(), MinorError> {
    let flags = component_mut(options, &change.component)
        .ok_or_else(|| MinorError::UnknownComponent(change.component.clone()))?;
    let value = match change.change {
        ChangeKind::Removed => String::new(),
        ChangeKind::Set => change
            .value
            .clone()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| MinorError::NoValue(change.flag.clone()))?,
    };
    flags.insert(change.flag.clone(), value);
    Ok(())
}

/// Why `data/versions-next.json` does not extend `data/versions.json`.
#[derive(Debug, thiserror::Error)]
pub enum NextError {
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("base_images {0} has no system_images")]
    NoBaseImages(String),
    #[error("no service options for {0}")]
    NoServiceOptions(String),
    /// One minor of the file, named by its key.
    #[error("{minor}: {cause}")]
    Minor { minor: String, cause: MinorError },
}

/// What is wrong with one minor of `data/versions-next.json`.
#[derive(Debug, thiserror::Error)]
pub enum MinorError {
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("version {0} is of another minor")]
    OtherMinor(String),
    #[error("follows v{0}.{1}: minors must come one at a time")]
    NotNext(u64, u64),
    #[error("already in data/versions.json")]
    Known,
    #[error("unknown component {0:?}")]
    UnknownComponent(String),
    #[error("{0}: a set flag needs a value")]
    NoValue(String),
    #[error("unknown system_images key {0:?}")]
    UnknownImageKey(String),
    #[error("the etcd image {image} is not etcd {etcd}")]
    EtcdMismatch { image: String, etcd: String },
}

/// Adds every minor of `next` to `data`: its version's images, its minor's Linux and Windows
/// default flags and its Docker versions, each derived from the previous minor's.
pub fn extend(data: &mut CatalogData, next: &NextData) -> Result<(), NextError> {
    let base = K8sVersion::parse(&next.base_images)?;
    let minor = base.minor_key();
    let mut images = data
        .system_images
        .get(&next.base_images)
        .cloned()
        .ok_or_else(|| NextError::NoBaseImages(next.base_images.clone()))?;
    let options_of = |table: &BTreeMap<String, ServiceOptions>, key: &str| {
        table
            .get(key)
            .cloned()
            .ok_or_else(|| NextError::NoServiceOptions(key.to_string()))
    };
    let mut linux = options_of(&data.service_options, &minor)?;
    let mut windows = options_of(&data.windows_service_options, &minor)?;
    let docker = data
        .docker_versions
        .get(&base.docker_key())
        .cloned()
        .unwrap_or_default();
    let mut previous = (base.major(), base.minor());
    for entry in &next.minors {
        let here = |cause: MinorError| NextError::Minor {
            minor: entry.minor.clone(),
            cause,
        };
        let version = K8sVersion::parse(&entry.version).map_err(|e| here(e.into()))?;
        if version.minor_key() != entry.minor {
            return Err(here(MinorError::OtherMinor(entry.version.clone())));
        }
        if (version.major(), version.minor()) != (previous.0, previous.1 + 1) {
            return Err(here(MinorError::NotNext(previous.0, previous.1)));
        }
        if data.system_images.contains_key(&entry.version)
            || data.service_options.contains_key(&entry.minor)
        {
            return Err(here(MinorError::Known));
        }
        for change in &entry.flag_changes {
            apply_change(&mut linux, change).map_err(here)?;
            // Windows hosts run only kubelet and kube-proxy.
            if matches!(change.component.as_str(), "kubelet" | "kubeproxy") {
                apply_change(&mut windows, change).map_err(here)?;
            }
        }
        for (key, image) in &entry.images {
            if !images.contains_key(key) && !super::SYSTEM_IMAGE_KEYS.contains(&key.as_str()) {
                return Err(here(MinorError::UnknownImageKey(key.clone())));
            }
            images.insert(key.clone(), image.clone());
        }
        if image_tag(&images["etcd"]).as_deref() != Some(entry.etcd.as_str()) {
            return Err(here(MinorError::EtcdMismatch {
                image: images["etcd"].clone(),
                etcd: entry.etcd.clone(),
            }));
        }
        data.system_images
            .insert(entry.version.clone(), images.clone());
        data.service_options
            .insert(entry.minor.clone(), linux.clone());
        data.windows_service_options
            .insert(entry.minor.clone(), windows.clone());
        data.docker_versions
            .insert(version.docker_key(), docker.clone());
        // Offered after RKE1's last release: a catalog emulating an older RKE leaves them out.
        data.version_info.insert(
            entry.minor.clone(),
            super::VersionInfo {
                min_rke_version: Some(data.rke_version.clone()),
                ..Default::default()
            },
        );
        previous = (version.major(), version.minor());
    }
    Ok(())
}

/// Why the defaults change from minor `from` to the next, `to`: one line per removed or set
/// flag, removed feature gate list, etcd release and note, each with its source. Empty when
/// `to` is not one of rkers' own minors.
pub fn step_reasons(next: &NextData, from: (u64, u64), to: (u64, u64)) -> Vec<String> {
    let Some(entry) = next.minor(to.0, to.1) else {
        return Vec::new();
    };
    let at = &entry.minor;
    let mut lines = Vec::new();
    for change in &entry.flag_changes {
        let what = match change.change {
            ChangeKind::Removed => {
                format!("removed in {at}: {} --{}", change.component, change.flag)
            }
            ChangeKind::Set => format!(
                "required from {at}: {} --{}={}",
                change.component,
                change.flag,
                change.value.as_deref().unwrap_or_default()
            ),
        };
        lines.push(format!(
            "{what} ({}: {})",
            change.source.url, change.source.says
        ));
    }
    let gates = &entry.removed_feature_gates;
    if !gates.gates.is_empty() {
        lines.push(format!(
            "feature gates removed in {at} (a --feature-gates in extra_args naming one stops the \
             component): {} ({})",
            gates.gates.join(", "),
            gates.source.url
        ));
    }
    let previous_etcd = next
        .minor(from.0, from.1)
        .map(|m| m.etcd.clone())
        .unwrap_or_else(|| "RKE1's".to_string());
    if previous_etcd == entry.etcd {
        lines.push(format!("etcd stays {} for {at}", entry.etcd));
    } else {
        lines.push(format!(
            "etcd {previous_etcd} → {} for {at}, one member at a time after the snapshot ({}: {})",
            entry.etcd, entry.etcd_source.url, entry.etcd_source.says
        ));
    }
    for note in &entry.notes {
        lines.push(format!("{at}: {} ({})", note.text, note.source.url));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_parses_and_names_a_source_for_everything() {
        let next = NextData::embedded();
        assert!(next.minors.len() >= 3);
        for m in &next.minors {
            assert!(m.version.ends_with("-rkers1"), "{}", m.version);
            for source in m
                .flag_changes
                .iter()
                .map(|c| &c.source)
                .chain(m.notes.iter().map(|n| &n.source))
                .chain([&m.version_source, &m.etcd_source])
            {
                assert!(
                    source.url.starts_with("https://"),
                    "{}: {source:?}",
                    m.minor
                );
                assert!(!source.says.is_empty(), "{}: {source:?}", m.minor);
            }
        }
    }

    #[test]
    fn minors_must_come_one_at_a_time() {
        let mut next = NextData::embedded().clone();
        next.minors.remove(0);
        let mut data: CatalogData =
            serde_json::from_str(include_str!("../../../../data/versions.json")).unwrap();
        let err = extend(&mut data, &next).unwrap_err().to_string();
        assert!(
            err.ends_with(": follows v1.32: minors must come one at a time"),
            "{err}"
        );
    }

    #[test]
    fn reasons_name_removed_flags_and_the_etcd_step() {
        let next = NextData::embedded();
        let to_34 = step_reasons(next, (1, 33), (1, 34)).join("\n");
        assert!(
            to_34.contains("removed in v1.34: kubelet --cloud-config"),
            "{to_34}"
        );
        assert!(to_34.contains("etcd v3.5.21 → v3.6.5"), "{to_34}");
        let to_35 = step_reasons(next, (1, 34), (1, 35)).join("\n");
        assert!(
            to_35.contains("removed in v1.35: kubelet --pod-infra-container-image"),
            "{to_35}"
        );
        assert!(!to_35.contains("etcd v3.6.5 →"), "{to_35}");
        // v1.36 removes no flag RKE passes but drops feature gates and moves etcd to 3.6.8.
        let to_36 = step_reasons(next, (1, 35), (1, 36)).join("\n");
        assert!(!to_36.contains("removed in v1.36:"), "{to_36}");
        assert!(
            to_36.contains("feature gates removed in v1.36")
                && to_36.contains("HonorPVReclaimPolicy"),
            "{to_36}"
        );
        assert!(to_36.contains("etcd v3.6.5 → v3.6.8"), "{to_36}");
        // v1.37 removes no flag RKE passes either; its etcd step stays within 3.6, to the patch
        // etcd asks for before 3.7.
        let to_37 = step_reasons(next, (1, 36), (1, 37)).join("\n");
        assert!(!to_37.contains("removed in v1.37:"), "{to_37}");
        assert!(
            to_37.contains("feature gates removed in v1.37") && to_37.contains("SidecarContainers"),
            "{to_37}"
        );
        assert!(to_37.contains("etcd v3.6.8 → v3.6.11"), "{to_37}");
        assert!(step_reasons(next, (1, 31), (1, 32)).is_empty());
    }
}
