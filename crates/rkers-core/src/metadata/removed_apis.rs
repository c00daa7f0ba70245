//! The API versions Kubernetes stops serving, by the minor that removes them: the table
//! `data/removed-apis.json` compiled in (each row names its source, the Kubernetes Deprecated
//! API Migration Guide's section), and its look-ups by kind or by resource.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

const EMBEDDED_JSON: &str = include_str!("../../../../data/removed-apis.json");

/// One API version of one kind that a Kubernetes minor no longer serves.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct RemovedApi {
    /// `vX.Y`, the first minor that does not serve it.
    pub removed_in: String,
    /// The API group, empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The plural resource name, as the API server's metrics name it.
    pub resource: String,
    /// The `apiVersion` to move to; `None` when the kind is removed outright.
    pub replacement: Option<String>,
    /// What to do instead, for a kind removed outright.
    #[serde(default)]
    pub fix: Option<String>,
    /// Where the row comes from.
    pub source: String,
    /// Whether `up` lists the kind's objects for their last-applied configurations; `false`
    /// for kinds whose objects components write and nobody applies (Events), and whose
    /// listing would be the costliest.
    #[serde(default = "yes")]
    pub scan_objects: bool,
}

fn yes() -> bool {
    true
}

impl RemovedApi {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// The minor number of `removed_in` (22 for `v1.22`).
    pub fn removed_minor(&self) -> u64 {
        self.removed_in
            .rsplit('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(u64::MAX)
    }

    /// The kind itself goes, not only this version of it.
    pub fn outright(&self) -> bool {
        self.replacement.is_none()
    }

    /// What to change, as one phrase.
    pub fn remedy(&self) -> String {
        match (&self.replacement, &self.fix) {
            (Some(to), _) => format!("use {to} {}", self.kind),
            (None, Some(fix)) => fix.clone(),
            (None, None) => format!("{} has no replacement: remove its objects", self.kind),
        }
    }
}

/// `group/version`, or `version` for the core group.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

#[derive(Deserialize)]
struct TableFile {
    removals: Vec<RemovedApi>,
}

/// The whole table.
#[derive(Clone, Debug)]
pub struct RemovedApis {
    rows: Vec<RemovedApi>,
}

impl RemovedApis {
    /// The table compiled into rkers, parsed once.
    pub fn embedded() -> &'static RemovedApis {
        static EMBEDDED: OnceLock<RemovedApis> = OnceLock::new();
        EMBEDDED.get_or_init(|| {
            RemovedApis::from_json(EMBEDDED_JSON)
                .expect("data/removed-apis.json compiled into rkers is valid (checked by tests)")
        })
    }

    pub fn from_json(json: &str) -> Result<RemovedApis, serde_json::Error> {
        let file: TableFile = serde_json::from_str(json)?;
        Ok(RemovedApis {
            rows: file.removals,
        })
    }

    pub fn from_rows(rows: Vec<RemovedApi>) -> RemovedApis {
        RemovedApis { rows }
    }

    pub fn rows(&self) -> &[RemovedApi] {
        &self.rows
    }

    /// The row of `kind` served as `apiVersion` (`group/version`, or `version` for core).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&RemovedApi> {
        self.rows
            .iter()
            .find(|r| r.kind == kind && r.api_version() == api_version)
    }

    /// The row of `resource` (plural) of `group` at `version`.
    pub fn by_resource(&self, group: &str, version: &str, resource: &str) -> Option<&RemovedApi> {
        self.rows
            .iter()
            .find(|r| r.group == group && r.version == version && r.resource == resource)
    }

    /// The kinds the table names, each once, in the table's order.
    pub fn kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !kinds.contains(&r.kind.as_str()) {
                kinds.push(&r.kind);
            }
        }
        kinds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_valid_and_sourced() {
        let table = RemovedApis::embedded();
        assert!(table.rows().len() > 40);
        for r in table.rows() {
            assert!(
                r.source.starts_with(
                    "https://kubernetes.io/docs/reference/using-api/deprecation-guide/"
                ),
                "{r:?}"
            );
            assert!(r.removed_minor() >= 16 && r.removed_minor() < 100, "{r:?}");
            assert!(r.outright() == r.fix.is_some(), "{r:?}");
            assert_eq!(
                table.by_resource(&r.group, &r.version, &r.resource),
                table.by_kind(&r.api_version(), &r.kind)
            );
        }
        // Every minor the brief names, v1.22 to v1.32.
        for minor in [22, 25, 26, 27, 29, 32] {
            assert!(table.rows().iter().any(|r| r.removed_minor() == minor));
        }
    }

    #[test]
    fn looks_up_the_well_known_removals() {
        let table = RemovedApis::embedded();
        let ingress = table.by_kind("extensions/v1beta1", "Ingress").unwrap();
        assert_eq!(ingress.removed_in, "v1.22");
        assert_eq!(ingress.remedy(), "use networking.k8s.io/v1 Ingress");
        let psp = table
            .by_kind("policy/v1beta1", "PodSecurityPolicy")
            .unwrap();
        assert_eq!(psp.removed_in, "v1.25");
        assert!(psp.outright());
        assert!(psp.remedy().contains("Pod Security Admission"));
        let fs = table
            .by_resource("flowcontrol.apiserver.k8s.io", "v1beta3", "flowschemas")
            .unwrap();
        assert_eq!(fs.removed_in, "v1.32");
        assert!(table.by_kind("networking.k8s.io/v1", "Ingress").is_none());
        assert!(table.by_kind("apps/v1", "Deployment").is_none());
    }
}
