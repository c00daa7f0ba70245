//! The `.rkestate` file (§7) and the names of the files derived from the config path (§6).
//!
//! The state is read and written in RKE1's exact JSON layout. `rkeConfig` is kept as a raw JSON
//! value: the config module converts it to and from its typed model, and
//! [`merge_preserving`] keeps fields rkers does not know when a new config is written back.

mod files;
mod gojson;
mod merge;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::pki::Bundle;

pub use files::{ClusterFiles, write_atomic};
pub use merge::{merge_preserving, merge_preserving_where};

/// Mode of the state file and the admin kubeconfig (§33.12).
pub const STATE_FILE_MODE: u32 = 0o600;

/// The top-level key rkers adds to the state files it writes. RKE1 reads past unknown keys and
/// drops them when it writes the file, so its absence says RKE1 (or an rkers that predates the
/// mark) wrote the file last.
pub const RKERS_MARK: &str = "rkers";

/// Suffix of the copy of the previous state kept next to the state file.
pub const BACKUP_SUFFIX: &str = ".bak";

/// The whole `.rkestate` document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    /// Written by the init phase: the config and certificates about to be applied.
    #[serde(rename = "desiredState", default)]
    pub desired_state: ClusterState,
    /// Copied from `desired_state` once the control plane is up: what was last applied.
    #[serde(rename = "currentState", default)]
    pub current_state: ClusterState,
    /// Top-level fields of a newer RKE, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One side of the state (RKE1's `State`).
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterState {
    /// The fully defaulted config in RKE1's JSON field names (camelCase).
    #[serde(rename = "rkeConfig", default, skip_serializing_if = "Option::is_none")]
    pub rke_config: Option<Value>,
    #[serde(
        rename = "certificatesBundle",
        default,
        skip_serializing_if = "Bundle::is_empty"
    )]
    pub certificates_bundle: Bundle,
    /// Full text of the EncryptionConfiguration YAML when secrets encryption is on.
    #[serde(
        rename = "encryptionConfig",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub encryption_config: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

// The config holds SSH keys and registry/S3 passwords, the encryption config a key: none of it
// may reach Debug output.
impl std::fmt::Debug for ClusterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterState")
            .field(
                "rke_config",
                &self.rke_config.as_ref().map(|_| "<redacted>"),
            )
            .field("certificates_bundle", &self.certificates_bundle)
            .field("encryption_config_len", &self.encryption_config.len())
            .field("extra_fields", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ClusterState {
    /// RKE1 treats a state without `rkeConfig` as "no cluster yet".
    pub fn is_empty(&self) -> bool {
        self.rke_config.is_none()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read state file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: state file is not valid: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialize the state: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl StateFile {
    /// Parses a state document; `origin` names it in errors (a path, or e.g. the Secret).
    pub fn from_json(text: &str, origin: &Path) -> Result<StateFile, StateError> {
        serde_json::from_str(text).map_err(|e| StateError::Parse {
            path: origin.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: strip_position(&e),
        })
    }

    /// Reads a state file. `Ok(None)` when it does not exist (a new cluster).
    pub fn load(path: &Path) -> Result<Option<StateFile>, StateError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_json(&text, path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// The document exactly as RKE1 writes it: Go's `json.MarshalIndent(state, "", "  ")`.
    pub fn to_json(&self) -> Result<String, StateError> {
        gojson::to_string_indent(self).map_err(StateError::Serialize)
    }

    /// Writes the state atomically with mode 0600, first keeping the previous file as
    /// `<name>.rkestate.bak`.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let mut marked = self.clone();
        marked.extra.insert(
            RKERS_MARK.to_string(),
            serde_json::json!({ "version": env!("CARGO_PKG_VERSION") }),
        );
        let text = marked.to_json()?;
        match std::fs::read(path) {
            Ok(previous) => {
                let backup = backup_path(path);
                write_atomic(&backup, &previous, STATE_FILE_MODE).map_err(|source| {
                    StateError::Write {
                        path: backup.clone(),
                        source,
                    }
                })?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StateError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        write_atomic(path, text.as_bytes(), STATE_FILE_MODE).map_err(|source| StateError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Whether rkers wrote this state file last (see [`RKERS_MARK`]).
    pub fn written_by_rkers(&self) -> bool {
        self.extra.contains_key(RKERS_MARK)
    }

    /// The "current state := desired state" step after the control plane is up.
    pub fn promote_desired_to_current(&mut self) {
        self.current_state = self.desired_state.clone();
    }
}

/// `cluster.rkestate` → `cluster.rkestate.bak`.
pub fn backup_path(state_path: &Path) -> PathBuf {
    let mut name = state_path.as_os_str().to_os_string();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// Every backup of the state file that exists: `cluster.rkestate.bak` and the timestamped
/// `cluster.rkestate.<time>.bak` copies, oldest name first. They hold every private key of the
/// cluster, so `remove` takes them with it.
pub fn backups(state_path: &Path) -> Vec<PathBuf> {
    let Some(name) = state_path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let dir = match state_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(BACKUP_SUFFIX))
        })
        .map(|e| state_path.with_file_name(e.file_name()))
        .collect();
    found.sort();
    found
}

// serde_json appends " at line L column C" to its messages; the position is reported separately.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
