//! The cluster.yml model (RKE1 schema, §3), its defaults (§4) and validation.
//!
//! This module owns everything about the user's cluster configuration:
//! - [`types`]: the data model, shared by `cluster.yml` (YAML keys) and the `rkeConfig` object
//!   of `cluster.rkestate` (JSON tags);
//! - [`load_file`] / [`load_str`]: parsing with YAML 1.1 booleans as go-yaml v2 reads them,
//!   unknown keys reported as warnings, and a map from key path to file position;
//! - [`apply_defaults`]: RKE1's defaulting (`cluster/defaults.go`), driven by a
//!   [`VersionCatalog`] that the metadata module implements;
//! - [`validate`]: every check RKE1 makes plus the ones it misses, all reported at once with
//!   `file:line:column`.

mod defaults;
mod load;
pub mod types;
mod validate;

use std::collections::BTreeMap;
use std::fmt;

pub use defaults::apply_defaults;
pub use load::{Loaded, Locations, Position, load_file, load_str};
pub use types::*;
pub use validate::{parse_k8s_version, validate};

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

    /// The process exit code for this error: 2 for an invalid config, 1 when unreadable.
    pub fn exit_code(&self) -> i32 {
        match self {
            ConfigError::Io { .. } => 1,
            ConfigError::Syntax(_) | ConfigError::Invalid(_) => 2,
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
