//! Where a cluster's state lives between runs, behind one trait.
//!
//! The CLI keeps the state in `cluster.rkestate` next to the config ([`FileStateStore`]); a
//! management server keeps it in its database. Saving is a compare-and-swap on the version that
//! was loaded, so two writers (two `serve` replicas, or a CLI run next to a server) can never
//! silently overwrite each other's certificates: the second one gets [`StoreError::Conflict`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::{StateError, StateFile};

/// The version of a stored state, opaque to callers: a content hash for files, a row version in
/// a database. [`StateVersion::absent`] is the version of "no state yet".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateVersion(String);

impl StateVersion {
    /// The version of a store that holds no state.
    pub fn absent() -> Self {
        StateVersion("absent".into())
    }

    /// A version named by the store (e.g. a database row's counter).
    pub fn new(v: impl Into<String>) -> Self {
        StateVersion(v.into())
    }

    fn of_bytes(bytes: &[u8]) -> Self {
        StateVersion(format!("sha256:{:x}", Sha256::digest(bytes)))
    }
}

impl std::fmt::Display for StateVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A state as loaded, with the version a later save must name.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub state: Option<StateFile>,
    pub version: StateVersion,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(
        "{store}: the state changed since this operation loaded it (expected version {expected}, \
         found {found}); another run wrote it. Nothing was saved: run the operation again"
    )]
    Conflict {
        store: String,
        expected: StateVersion,
        found: StateVersion,
    },
    #[error("{store}: {message}")]
    Backend { store: String, message: String },
    /// Another run holds the cluster (the run lock beside a state file).
    #[error(transparent)]
    Busy(#[from] super::LockError),
}

/// Load and compare-and-swap save of one cluster's state.
pub trait StateStore: Send + Sync {
    /// Names the store in messages (a path, `database cluster 7`).
    fn name(&self) -> String;

    /// The state and its version; `state: None` when there is none yet.
    fn load(&self) -> Result<Loaded, StoreError>;

    /// Replaces the state if the stored version is still `expected`, returning the new version.
    fn save(&self, state: &StateFile, expected: &StateVersion) -> Result<StateVersion, StoreError>;

    /// Forgets the state (what `remove` leaves) if the stored version is still `expected`,
    /// returning the new version. The default stores an empty state, which every command reads
    /// as "no cluster yet".
    fn delete(&self, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.save(&StateFile::default(), expected)
    }

    /// Holds the cluster for one operation named `command` (`up`, `remove`, ...) until the
    /// returned lock is dropped, or fails with [`StoreError::Busy`] naming the run that holds
    /// it. The default holds nothing: a store whose owner serializes operations itself (a
    /// server's lease in its database) needs no more.
    fn lock_run(&self, command: &str) -> Result<Option<super::RunLock>, StoreError> {
        let _ = command;
        Ok(None)
    }
}

/// The state file next to the config, RKE1's layout: atomic writes, mode 0600, timestamped
/// backups (see [`StateFile::save`]). The version is the SHA-256 of the file's bytes, so a file
/// changed by hand, by RKE1 or by another rkers between load and save is a conflict.
///
/// ```
/// use rkers_core::state::{FileStateStore, StateFile, StateStore, StateVersion};
/// let dir = tempfile::tempdir().unwrap();
/// let store = FileStateStore::new(dir.path().join("cluster.rkestate"));
/// let loaded = store.load().unwrap();
/// assert!(loaded.state.is_none());
/// let v1 = store.save(&StateFile::default(), &loaded.version).unwrap();
/// // A writer still holding the old version is refused.
/// assert!(store.save(&StateFile::default(), &StateVersion::absent()).is_err());
/// assert_eq!(store.load().unwrap().version, v1);
/// ```
pub struct FileStateStore {
    path: PathBuf,
}

impl FileStateStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStateStore { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn current_version(&self) -> Result<StateVersion, StoreError> {
        match crate::bounded::read(&self.path, crate::bounded::STATE) {
            Ok(bytes) => Ok(StateVersion::of_bytes(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StateVersion::absent()),
            Err(source) => Err(StateError::Read {
                path: self.path.clone(),
                source,
            }
            .into()),
        }
    }
}

impl StateStore for FileStateStore {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&self) -> Result<Loaded, StoreError> {
        match crate::bounded::read(&self.path, crate::bounded::STATE) {
            Ok(bytes) => {
                let text =
                    String::from_utf8(bytes.clone()).map_err(|_| StateError::NotUnderstood {
                        path: self.path.clone(),
                        reason: "it is not UTF-8 text".into(),
                    })?;
                Ok(Loaded {
                    state: Some(StateFile::from_json(&text, &self.path)?),
                    version: StateVersion::of_bytes(&bytes),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Loaded {
                state: None,
                version: StateVersion::absent(),
            }),
            Err(source) => Err(StateError::Read {
                path: self.path.clone(),
                source,
            }
            .into()),
        }
    }

    fn save(&self, state: &StateFile, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.swap(expected, || state.save_keeping_each(&self.path).map(drop))
    }

    /// The run lock beside the file, the one the CLI takes.
    fn lock_run(&self, command: &str) -> Result<Option<super::RunLock>, StoreError> {
        Ok(Some(super::RunLock::acquire(&self.path, command)?))
    }

    fn delete(&self, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.swap(expected, || match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StateError::Write {
                path: self.path.clone(),
                source,
            }),
        })
    }
}

impl FileStateStore {
    /// Runs `write` if the file is still at `expected`, under the lock beside it.
    fn swap(
        &self,
        expected: &StateVersion,
        write: impl FnOnce() -> Result<(), StateError>,
    ) -> Result<StateVersion, StoreError> {
        // One writer at a time between the check and the rename: an advisory lock on a file
        // beside the state (the state itself is replaced by rename, so it cannot hold a lock).
        let lock_path = {
            let mut name = self.path.as_os_str().to_os_string();
            name.push(".lock");
            PathBuf::from(name)
        };
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| StateError::Write {
                path: lock_path.clone(),
                source,
            })?;
        let _held = FileLock::exclusive(&lock).map_err(|source| StateError::Write {
            path: lock_path.clone(),
            source,
        })?;
        let found = self.current_version()?;
        if &found != expected {
            return Err(StoreError::Conflict {
                store: self.name(),
                expected: expected.clone(),
                found,
            });
        }
        write()?;
        self.current_version()
    }
}

/// An advisory `flock` held until dropped.
struct FileLock<'a>(&'a std::fs::File);

impl<'a> FileLock<'a> {
    fn exclusive(file: &'a std::fs::File) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function borrows for the lock's lifetime.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLock(file))
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in `exclusive`; unlocking a lock this value holds.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// A state held in memory, for tests and for embedding callers that persist it themselves.
/// Versions count saves.
#[derive(Default)]
pub struct MemoryStateStore {
    inner: Mutex<(Option<StateFile>, u64)>,
}

impl MemoryStateStore {
    pub fn new(state: Option<StateFile>) -> Self {
        let saves = u64::from(state.is_some());
        MemoryStateStore {
            inner: Mutex::new((state, saves)),
        }
    }

    fn version(saves: u64) -> StateVersion {
        if saves == 0 {
            StateVersion::absent()
        } else {
            StateVersion::new(format!("memory:{saves}"))
        }
    }
}

impl MemoryStateStore {
    /// Replaces the state if the version is still `expected`.
    fn swap(
        &self,
        expected: &StateVersion,
        state: Option<StateFile>,
    ) -> Result<StateVersion, StoreError> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let found = Self::version(inner.1);
        if &found != expected {
            return Err(StoreError::Conflict {
                store: self.name(),
                expected: expected.clone(),
                found,
            });
        }
        inner.0 = state;
        inner.1 += 1;
        Ok(Self::version(inner.1))
    }
}

impl StateStore for MemoryStateStore {
    fn name(&self) -> String {
        "in-memory state".into()
    }

    fn load(&self) -> Result<Loaded, StoreError> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Loaded {
            state: inner.0.clone(),
            version: Self::version(inner.1),
        })
    }

    fn save(&self, state: &StateFile, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.swap(expected, Some(state.clone()))
    }

    fn delete(&self, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.swap(expected, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with_config(name: &str) -> StateFile {
        let mut s = StateFile::default();
        s.desired_state.rke_config = Some(serde_json::json!({ "clusterName": name }));
        s
    }

    #[test]
    fn file_store_saves_only_over_the_version_it_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.rkestate");
        let a = FileStateStore::new(&path);
        let b = FileStateStore::new(&path);
        let first = a.load().unwrap();
        assert_eq!(first.version, StateVersion::absent());
        let v1 = a.save(&state_with_config("one"), &first.version).unwrap();

        // b loaded before a's save: its save is refused and the file keeps a's state.
        let err = b
            .save(&state_with_config("two"), &first.version)
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
        assert!(err.to_string().contains("cluster.rkestate"), "{err}");
        let now = a.load().unwrap();
        assert_eq!(now.version, v1);
        assert_eq!(now.state.unwrap(), {
            // What was saved, plus rkers' mark.
            let mut s = state_with_config("one");
            s.extra.insert(
                crate::state::RKERS_MARK.into(),
                serde_json::json!({ "version": env!("CARGO_PKG_VERSION") }),
            );
            s
        });

        // A hand edit between load and save is a conflict too.
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + " ").unwrap();
        assert!(matches!(
            a.save(&state_with_config("three"), &v1),
            Err(StoreError::Conflict { .. })
        ));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn file_store_refuses_a_state_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.rkestate");
        std::fs::write(&path, "{\"unrelated\": true}").unwrap();
        let err = FileStateStore::new(&path).load().unwrap_err();
        assert!(err.to_string().contains("refusing to use"), "{err}");
    }

    #[test]
    fn memory_store_counts_versions() {
        let store = MemoryStateStore::new(None);
        let v0 = store.load().unwrap().version;
        let v1 = store.save(&state_with_config("a"), &v0).unwrap();
        assert_ne!(v0, v1);
        assert!(store.save(&state_with_config("b"), &v0).is_err());
        let v2 = store.save(&state_with_config("b"), &v1).unwrap();
        assert_eq!(store.load().unwrap().version, v2);
    }
}
