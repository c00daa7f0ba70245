//! The `.rkestate` file (§7) and the names of the files derived from the config path (§6).
//!
//! The state is read and written in RKE1's exact JSON layout. `rkeConfig` is kept as a raw JSON
//! value: the config module converts it to and from its typed model, and
//! [`merge_preserving`] keeps fields rkers does not know when a new config is written back.

mod backups;
mod files;
mod gojson;
mod lock;
mod merge;
mod previous;
mod store;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::pki::Bundle;

pub use backups::{MAX_BACKUPS, list_backups, reset_for_tests, timestamped_backup_path};
pub use files::{ClusterFiles, Storage, write_atomic};
pub use lock::{Holder, LockError, RunLock, current_holder, lock_path};
pub use merge::{merge_preserving, merge_preserving_where};
pub use previous::{
    CANDIDATE_KEY, PREVIOUS_KEY, PreviousRun, RollbackRefused, RollbackTarget, rollback_target,
};
pub use store::{FileStateStore, Loaded, MemoryStateStore, StateStore, StateVersion, StoreError};

/// Mode of the state file and the admin kubeconfig (§33.12).
pub const STATE_FILE_MODE: u32 = 0o600;

/// The top-level key rkers adds to the state files it writes. RKE1 reads past unknown keys and
/// drops them when it writes the file, so its absence says RKE1 (or an rkers that predates the
/// mark) wrote the file last.
pub const RKERS_MARK: &str = "rkers";

/// Suffix of the copies of earlier states kept next to the state file.
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
    #[error(
        "{path}: refusing to use this state file: {reason}. rkers never replaces a state it \
         cannot fully read; restore it from a backup next to it ({path}.<time>.bak), recover it \
         with `rkers util get-state-file`, or move it away to start a new cluster"
    )]
    NotUnderstood { path: PathBuf, reason: String },
    #[error("cannot serialize the state: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl StateFile {
    /// Parses a state document; `origin` names it in errors (a path, or e.g. the Secret).
    /// A document that is JSON but not a state rkers fully understands is refused: treating it as
    /// "no cluster" would make `up` issue a new CA and replace it.
    pub fn from_json(text: &str, origin: &Path) -> Result<StateFile, StateError> {
        let parse_error = |e: serde_json::Error| StateError::Parse {
            path: origin.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: strip_position(&e),
        };
        let state: StateFile = serde_json::from_str(text).map_err(parse_error)?;
        let raw: Value = serde_json::from_str(text).map_err(parse_error)?;
        if let Some(reason) = not_understood(&raw) {
            return Err(StateError::NotUnderstood {
                path: origin.to_path_buf(),
                reason,
            });
        }
        Ok(state)
    }

    /// Reads a state file. `Ok(None)` when it does not exist (a new cluster).
    pub fn load(path: &Path) -> Result<Option<StateFile>, StateError> {
        Self::load_from(&Storage::Disk, path)
    }

    /// [`StateFile::load`] from `storage`.
    pub fn load_from(storage: &Storage, path: &Path) -> Result<Option<StateFile>, StateError> {
        match storage.read_to_string(path, crate::bounded::STATE) {
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

    /// Writes the state atomically with mode 0600, marked as rkers' ([`RKERS_MARK`]), first
    /// keeping the file as this run found it as a timestamped backup (see [`list_backups`]).
    /// Returns that backup when there is one.
    pub fn save(&self, path: &Path) -> Result<Option<PathBuf>, StateError> {
        self.save_keeping(path, true)
    }

    /// [`StateFile::save`] into `storage`. In memory no backup is kept: the store the state
    /// goes to keeps its versions.
    pub fn save_to(&self, storage: &Storage, path: &Path) -> Result<Option<PathBuf>, StateError> {
        match storage {
            Storage::Disk => self.save(path),
            Storage::Memory(_) => {
                let text = self.marked().to_json()?;
                storage
                    .write_private(path, text.as_bytes())
                    .map_err(|source| StateError::Write {
                        path: path.to_path_buf(),
                        source,
                    })?;
                Ok(None)
            }
        }
    }

    /// This state with rkers' mark ([`RKERS_MARK`]) added.
    fn marked(&self) -> StateFile {
        let mut marked = self.clone();
        marked.extra.insert(
            RKERS_MARK.to_string(),
            serde_json::json!({ "version": env!("CARGO_PKG_VERSION") }),
        );
        marked
    }

    /// [`StateFile::save`] that keeps the replaced state as a backup on every call, not only on
    /// a process's first save of `path` (what a state store serving many operations needs).
    pub fn save_keeping_each(&self, path: &Path) -> Result<Option<PathBuf>, StateError> {
        self.save_keeping(path, false)
    }

    fn save_keeping(
        &self,
        path: &Path,
        once_per_process: bool,
    ) -> Result<Option<PathBuf>, StateError> {
        let text = self.marked().to_json()?;
        let mut kept = None;
        match crate::bounded::read(path, crate::bounded::STATE) {
            Ok(previous) if previous == text.as_bytes() => {}
            Ok(previous) => {
                kept = backups::keep(path, &previous, once_per_process).map_err(|source| {
                    StateError::Write {
                        path: timestamped_backup_path(path, time::OffsetDateTime::now_utc()),
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
        write_atomic(path, text.as_bytes(), STATE_FILE_MODE).map_err(|source| {
            StateError::Write {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Ok(kept)
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

/// What to append to "state file written" so the user knows where the previous state went.
pub fn backup_note(backup: Option<&Path>) -> String {
    backup
        .map(|b| format!(" (the previous state is kept as [{}])", b.display()))
        .unwrap_or_default()
}

/// `cluster.rkestate` → `cluster.rkestate.bak`, the one backup earlier rkers versions kept.
pub fn backup_path(state_path: &Path) -> PathBuf {
    let mut name = state_path.as_os_str().to_os_string();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// Why a parsed document is not a state rkers understands, if it is not: it must have
/// `desiredState` or `currentState`, each an object that is empty or holds at least one of
/// `rkeConfig` (an object), `certificatesBundle`, `encryptionConfig`.
fn not_understood(raw: &Value) -> Option<String> {
    let Value::Object(top) = raw else {
        return Some("it is not a JSON object".into());
    };
    let sides = ["desiredState", "currentState"];
    if !sides.iter().any(|k| top.contains_key(*k)) {
        let keys: Vec<&str> = top.keys().map(String::as_str).take(5).collect();
        return Some(if keys.is_empty() {
            "it is an empty JSON object, without desiredState or currentState".into()
        } else {
            format!(
                "it has neither desiredState nor currentState (its keys: {})",
                keys.join(", ")
            )
        });
    }
    for side in sides {
        let Some(v) = top.get(side) else { continue };
        let Value::Object(fields) = v else {
            return Some(format!("{side} is not a JSON object"));
        };
        if fields.is_empty() {
            continue;
        }
        match fields.get("rkeConfig") {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(_) => return Some(format!("{side}.rkeConfig is not a JSON object")),
        }
        let known = ["rkeConfig", "certificatesBundle", "encryptionConfig"];
        if !known.iter().any(|k| fields.contains_key(*k)) {
            let keys: Vec<&str> = fields.keys().map(String::as_str).take(5).collect();
            return Some(format!(
                "{side} holds none of rkeConfig, certificatesBundle, encryptionConfig (its keys: {})",
                keys.join(", ")
            ));
        }
    }
    None
}

// serde_json appends " at line L column C" to its messages; the position is reported separately.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
