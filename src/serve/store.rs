//! [`StateStore`] on the server's database: every save is a new row (the history), sealed with
//! the server's key; the version is the row's number and saving is a compare-and-swap on it.

use std::path::PathBuf;

use super::crypto::SecretBox;
use super::db::Db;
use crate::state::StateFile;
use crate::state::{Loaded, StateStore, StateVersion, StoreError};

pub struct DbStateStore {
    db: Db,
    secrets: SecretBox,
    cluster: String,
    /// The operation whose saves these are, recorded with each version.
    operation: Option<String>,
    runtime: tokio::runtime::Handle,
}

/// The associated data of a cluster's sealed states.
pub fn state_purpose(cluster: &str) -> String {
    format!("state:{cluster}")
}

fn version_of(n: i64) -> StateVersion {
    if n == 0 {
        StateVersion::absent()
    } else {
        StateVersion::new(format!("db:{n}"))
    }
}

/// The row number a version names; None for a version this store never gave out.
pub fn row_of(version: &StateVersion) -> Option<i64> {
    if *version == StateVersion::absent() {
        return Some(0);
    }
    version.to_string().strip_prefix("db:")?.parse().ok()
}

impl DbStateStore {
    /// Must be created inside the server's (multi-threaded) tokio runtime: the trait is
    /// synchronous and the store waits for the database on that runtime.
    pub fn new(db: Db, secrets: SecretBox, cluster: &str, operation: Option<&str>) -> Self {
        DbStateStore {
            db,
            secrets,
            cluster: cluster.to_string(),
            operation: operation.map(str::to_string),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    fn backend(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            store: self.name(),
            message: message.to_string(),
        }
    }

    /// Runs a database call from the synchronous trait: on a runtime worker thread the worker
    /// is handed over to other tasks meanwhile (`block_in_place`), elsewhere the call blocks.
    fn wait<T>(&self, fut: impl std::future::Future<Output = T>) -> Result<T, StoreError> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => {
                Err(self.backend("the database state store needs a multi-threaded tokio runtime"))
            }
            Ok(_) => Ok(tokio::task::block_in_place(|| self.runtime.block_on(fut))),
            Err(_) => Ok(self.runtime.block_on(fut)),
        }
    }

    async fn latest(&self) -> Result<(i64, Option<StateFile>), StoreError> {
        let Some((n, sealed)) = self
            .db
            .latest_state(&self.cluster)
            .await
            .map_err(|e| self.backend(e))?
        else {
            return Ok((0, None));
        };
        let text = self
            .secrets
            .open_string(&state_purpose(&self.cluster), &sealed)
            .map_err(|e| self.backend(e))?;
        let origin = PathBuf::from(format!("{} version {n}", self.name()));
        let state = StateFile::from_json(&text, &origin)?;
        // The private keys are redacted from every event and message from now on.
        for side in [&state.desired_state, &state.current_state] {
            for cert in side.certificates_bundle.values() {
                crate::output::Redactor::global().register(&cert.key_pem);
            }
        }
        Ok((n, Some(state)))
    }

    async fn save_async(
        &self,
        state: &StateFile,
        expected: &StateVersion,
    ) -> Result<StateVersion, StoreError> {
        let current = || async {
            let found = self
                .db
                .latest_state(&self.cluster)
                .await
                .map_err(|e| self.backend(e))?
                .map_or(0, |(n, _)| n);
            Ok::<_, StoreError>(version_of(found))
        };
        let Some(base) = row_of(expected) else {
            return Err(StoreError::Conflict {
                store: self.name(),
                expected: expected.clone(),
                found: current().await?,
            });
        };
        let json = state.to_json()?;
        let sealed = self
            .secrets
            .seal(&state_purpose(&self.cluster), json.as_bytes());
        let inserted = self
            .db
            .insert_state(&self.cluster, base + 1, &sealed, self.operation.as_deref())
            .await
            .map_err(|e| self.backend(e))?;
        if !inserted {
            return Err(StoreError::Conflict {
                store: self.name(),
                expected: expected.clone(),
                found: current().await?,
            });
        }
        Ok(version_of(base + 1))
    }
}

impl StateStore for DbStateStore {
    fn name(&self) -> String {
        format!("database state of cluster {}", self.cluster)
    }

    fn load(&self) -> Result<Loaded, StoreError> {
        let (n, state) = self.wait(self.latest())??;
        Ok(Loaded {
            state,
            version: version_of(n),
        })
    }

    fn save(&self, state: &StateFile, expected: &StateVersion) -> Result<StateVersion, StoreError> {
        self.wait(self.save_async(state, expected))?
    }
}
