//! The cluster.yml model (RKE1 schema, §3), its defaults (§4) and validation.
//!
//! This module owns everything about the user's cluster configuration:
//! - [`types`]: the data model, shared by `cluster.yml` (YAML keys) and the `rkeConfig` object
//!   of `cluster.rkestate` (JSON tags);
//! - [`load_file`] / [`load_str`]: parsing with YAML 1.1 booleans as go-yaml v2 reads them,
//!   unknown keys reported as warnings, and a map from key path to file position;
//! - [`apply_defaults`]: RKE1's defaulting (`cluster/defaults.go`), driven by a
//!   [`VersionCatalog`] that the metadata module implements;
//! - [`key_differences`]: where two configs differ, by cluster.yml key path;
//! - [`validate`]: every check RKE1 makes plus the ones it misses, all reported at once with
//!   `file:line:column`.

mod defaults;
mod key_diff;
mod load;
pub mod types;
mod validate;

use std::collections::BTreeMap;
use std::fmt;

pub use defaults::{
    UnpublishedImages, apply_defaults, images_for_unpublished_version, settle_br_netfilter,
};
pub use key_diff::{KeyDifference, key_differences};
pub use load::{Loaded, Locations, Position, load_file, load_str};
pub use types::*;
pub use validate::{
    VersionError, is_dns1123_subdomain, parse_k8s_version, unknown_version_message, validate,
    warnings,
};

/// A node address as the host part of a URL or `host:port`: an IPv6 literal in brackets
/// (`https://[fd00::1]:6443`), anything else as it is.
pub fn url_host(address: &str) -> std::borrow::Cow<'_, str> {
    match address.parse::<std::net::Ipv6Addr>() {
        Ok(_) => format!("[{address}]").into(),
        Err(_) => address.into(),
    }
}

/// Kubernetes version metadata as the config module needs it (implemented by `metadata`).
pub trait VersionCatalog {
    /// The version used when `kubernetes_version` is empty (e.g. `v1.31.1-rancher1-1`).
    fn default_version(&self) -> String;
    /// Default system images for a version, keyed by the `system_images` YAML key
    /// (e.g. `nginx_proxy`); `None` for a version the catalog does not know.
    fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>>;
    /// Whether the version may be deployed without the user listing every image.
    fn is_supported(&self, version: &str) -> bool;
    /// Every supported version, for error messages.
    fn supported_versions(&self) -> Vec<String>;
    /// A version RKE1 shipped whose metadata was never published: its images must come from
    /// the cluster's state or from `system_images`.
    fn is_unpublished(&self, _version: &str) -> bool {
        false
    }
    /// The known versions of `version`'s minor closest to it, for an unknown version's error.
    fn nearest_versions(&self, _version: &str) -> Vec<String> {
        Vec::new()
    }
}

/// Applies RKE1's defaults to a loaded config and validates it: the config `rke up` would
/// work with. Extra (non-fatal) findings are appended to `loaded.warnings`.
pub fn prepare(mut loaded: Loaded, catalog: &dyn VersionCatalog) -> Result<Loaded, ConfigError> {
    apply_defaults(&mut loaded.config, catalog);
    let problems = validate(&loaded.config, catalog, &loaded.locations);
    if !problems.is_empty() {
        return Err(ConfigError::Invalid(problems));
    }
    let extra = warnings(&loaded.config, &loaded.locations);
    loaded.warnings.extend(extra);
    Ok(loaded)
}

/// One problem (or warning) in a config file, located at the offending key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    /// 1-based; 0 when the position is unknown.
    pub line: u64,
    /// 1-based; 0 when the position is unknown.
    pub column: u64,
    /// Key path such as `nodes[1].address`; empty for the whole document.
    pub path: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if self.path.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.path, self.message)
        }
    }
}

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML, or not the shape of a cluster.yml (wrong types, duplicate keys).
    #[error("{0}")]
    Syntax(Diagnostic),
    /// Semantically invalid; carries every problem found.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<Diagnostic>),
}

impl ConfigError {
    /// Every diagnostic this error carries (none for I/O errors).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            ConfigError::Io { .. } => Vec::new(),
            ConfigError::Syntax(d) => vec![d.clone()],
            ConfigError::Invalid(ds) => ds.clone(),
        }
    }

    /// The process exit code for this error: 1 when the file does not exist (nothing to judge),
    /// 2 for a config that cannot be used: unreadable, not text, or invalid.
    pub fn exit_code(&self) -> i32 {
        match self {
            ConfigError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 1,
            ConfigError::Io { .. } | ConfigError::Syntax(_) | ConfigError::Invalid(_) => 2,
        }
    }
}

fn join_lines(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A [`VersionCatalog`] backed by a fixed table (tests, offline tools).
#[derive(Clone, Debug, Default)]
pub struct StaticCatalog {
    pub default_version: String,
    /// version → (`system_images` key → image)
    pub versions: BTreeMap<String, BTreeMap<String, String>>,
}

impl VersionCatalog for StaticCatalog {
    fn default_version(&self) -> String {
        self.default_version.clone()
    }
    fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>> {
        self.versions.get(version).cloned()
    }
    fn is_supported(&self, version: &str) -> bool {
        self.versions.contains_key(version)
    }
    fn supported_versions(&self) -> Vec<String> {
        self.versions.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_like_rke1() {
        let v = parse_k8s_version("v1.30.5-rancher1-1").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 30, 5));
        assert!(parse_k8s_version("1.30.5").is_err());
        assert!(parse_k8s_version("v").is_err());
        assert!(parse_k8s_version("v1.30").is_err());
    }

    #[test]
    fn dns1123_subdomains() {
        assert!(is_dns1123_subdomain("node-1.example.com"));
        assert!(!is_dns1123_subdomain("Node-1"));
        assert!(!is_dns1123_subdomain("node_1"));
        assert!(!is_dns1123_subdomain("-node"));
        assert!(!is_dns1123_subdomain("node..a"));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
    }

    #[test]
    fn locations_fall_back_to_the_nearest_written_parent() {
        let loaded = load_str("nodes:\n  - address: a\n    user: b\n", "c.yml").unwrap();
        let at = |p: &str| loaded.locations.nearest(p).map(|p| (p.line, p.column));
        assert_eq!(at("nodes[0].user"), Some((3, 5)));
        assert_eq!(at("nodes[0].role[1]"), Some((2, 5)));
        assert_eq!(at("services.etcd.path"), Some((1, 1)));
        assert_eq!(loaded.locations.path_at(3, 11), "nodes[0].user");
    }

    #[test]
    fn debug_output_redacts_secrets() {
        let node = Node {
            address: "10.0.0.1".into(),
            ssh_key: "-----BEGIN OPENSSH PRIVATE KEY-----secret".into(),
            ..Default::default()
        };
        let s3 = S3BackupConfig {
            secret_key: "s3-secret".into(),
            ..Default::default()
        };
        let shown = format!("{node:?} {s3:?}");
        assert!(shown.contains("10.0.0.1"));
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        assert!(!shown.contains("s3-secret"), "{shown}");
    }

    #[test]
    fn syntax_errors_carry_file_line_column_and_key() {
        let err = load_str("nodes:\n  - address: a\n    port: [22]\n", "c.yml").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.starts_with("c.yml:3:11: nodes[0].port: "), "{text}");
    }

    #[test]
    fn non_finite_floats_are_rejected() {
        let err = load_str(
            "dns:\n  linear_autoscaler_params:\n    cores_per_replica: .nan\n",
            "c.yml",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text
                .starts_with("c.yml:3:5: dns.linear_autoscaler_params.cores_per_replica: expected a finite number"),
            "{text}"
        );
    }
}
