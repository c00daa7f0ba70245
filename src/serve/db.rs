//! The server's database: clusters, state history, operations, their events and the
//! per-cluster lock. One schema and one set of queries for SQLite (the embedded default) and
//! PostgreSQL (several replicas on one database), through sqlx's `Any` driver; the schema is
//! migrated at start by the migrations embedded in the binary.

use serde::Serialize;
use sqlx::AnyPool;
use sqlx::Row;
use sqlx::any::AnyPoolOptions;

/// How long a replica's hold on a cluster lasts without renewal. The running replica renews it
/// every [`RENEW_EVERY`]; a replica that crashed stops renewing, and once the lease expired the
/// next request (on any replica) takes the cluster over and marks the dead operation failed.
pub const LEASE_MS: i64 = 30_000;
pub const RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
#[error("database {what}: {source}")]
pub struct DbError {
    what: String,
    #[source]
    source: sqlx::Error,
}

fn ctx(what: impl Into<String>) -> impl FnOnce(sqlx::Error) -> DbError {
    let what = what.into();
    move |source| DbError { what, source }
}

pub fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

pub fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// The database URL for messages, without what may be secret: the user info
/// (`user:password@`; without a scheme, its password masked as every error quoting an input
/// does) and the value of every `password`-like query parameter.
pub fn shown_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut shown = match base.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            format!("{scheme}://{rest}")
        }
        // No scheme (`bob:pw@db.local/x`, which sqlx refuses): its password is masked too.
        None => crate::output::mask_credentials(base),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if crate::output::is_secret_name(key) => format!("{key}=***"),
                _ => param.to_string(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&params.join("&"));
    }
    shown
}

/// Creates a new, empty database on the PostgreSQL server of `url` and returns its URL: tests
/// running at once (or again) each get their own.
pub async fn create_postgres_database(url: &str) -> Result<String, DbError> {
    sqlx::any::install_default_drivers();
    let shown = shown_url(url);
    let name = format!("rkers_t_{}", hex::encode(rand::random::<[u8; 6]>()));
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .map_err(ctx(format!("{shown}: cannot connect")))?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .map_err(ctx(format!("{shown}: create database {name}")))?;
    pool.close().await;
    let base = url.rsplit_once('/').map_or(url, |(base, _)| base);
    Ok(format!("{base}/{name}"))
}

/// The lock row `/healthz` writes and rolls back (an existing row of that name is left alone).
const HEALTH_PROBE_KEY: &str = "..healthz";

/// The one row of `key_check`.
const KEY_CHECK_ID: &str = "secret-key";

/// Creates the SQLite file and its directories private to the server's user. An existing file
/// (or journal) others may read is made private: it holds sealed secrets, and its journal files
/// take its mode.
fn create_private_file(path: &std::path::Path) -> Result<(), DbError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let io = |what: &std::path::Path| {
        let what = what.display().to_string();
        move |e| DbError {
            what,
            source: sqlx::Error::Io(e),
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(dir))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path))?;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_file() && mode & 0o077 != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                .map_err(io(&file))?;
            tracing::warn!(
                "{}: was open to other users (mode {mode:04o}); made 0600",
                file.display()
            );
        }
    }
    Ok(())
}

#[derive(Clone)]
pub struct Db {
    pub(super) pool: AnyPool,
}

/// One operation's record, as the API shows it.
#[derive(Clone, Debug, Serialize)]
pub struct OperationRow {
    pub id: String,
    pub cluster: String,
    pub kind: String,
    pub params: serde_json::Value,
    pub status: String,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub replica: String,
    pub cancel_requested: bool,
    pub state_version: Option<i64>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ClusterRow {
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    pub state_version: Option<i64>,
    pub last_operation: Option<OperationRow>,
}

#[derive(Debug, Serialize)]
pub struct StateRow {
    pub version: i64,
    pub saved_at: String,
    pub operation: Option<String>,
}

/// What a PUT of a cluster.yml did.
#[derive(Debug, PartialEq, Eq)]
pub enum Put {
    Created,
    Replaced,
    /// Not replaced: `operation` runs on the cluster.
    Busy {
        operation: String,
    },
}

/// The outcome of asking for a cluster's lock.
#[derive(Debug, PartialEq, Eq)]
pub enum Lock {
    /// Held now; `took_over` names an operation whose replica stopped renewing its lease.
    Acquired { took_over: Option<String> },
    /// Another operation holds it.
    Busy { operation: String },
}

const OP_COLUMNS: &str = "id, cluster, kind, params, status, exit_code, error, replica, \
                          cancel_requested, state_version, created_at, finished_at";

fn op_from_row(row: &sqlx::any::AnyRow) -> Result<OperationRow, sqlx::Error> {
    let params: String = row.try_get("params")?;
    Ok(OperationRow {
        id: row.try_get("id")?,
        cluster: row.try_get("cluster")?,
        kind: row.try_get("kind")?,
        params: serde_json::from_str(&params).unwrap_or(serde_json::Value::Null),
        status: row.try_get("status")?,
        exit_code: row.try_get("exit_code")?,
        error: row.try_get("error")?,
        replica: row.try_get("replica")?,
        cancel_requested: row.try_get::<i64, _>("cancel_requested")? != 0,
        state_version: row.try_get("state_version")?,
        created_at: rfc3339(row.try_get("created_at")?),
        finished_at: row.try_get::<Option<i64>, _>("finished_at")?.map(rfc3339),
    })
}

impl Db {
    /// The one text column `sql` selects for `key`, if a row matches.
    async fn text(&self, sql: &str, key: &str, what: String) -> Result<Option<String>, DbError> {
        sqlx::query(sql)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(ctx(what.clone()))?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(ctx(what))
    }

    /// Connects and migrates. `sqlite:` URLs get their directory (0700) and file (0600)
    /// created, and an existing file others may read made 0600: the file holds sealed
    /// secrets, and SQLite gives its journal files the database file's mode.
    pub async fn connect(url: &str) -> Result<Db, DbError> {
        sqlx::any::install_default_drivers();
        let mut url = url.to_string();
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.trim_start_matches("//");
            let path = path.split('?').next().unwrap_or("");
            if !path.is_empty() && path != ":memory:" {
                create_private_file(std::path::Path::new(path))?;
            }
            if !url.contains('?') {
                url.push_str("?mode=rwc");
            }
        }
        let shown = shown_url(&url);
        // One connection first, without the pool's retries: a server that refuses or a wrong
        // password is reported at once, with its cause, instead of a pool timeout 30 s later.
        {
            use sqlx::Connection;
            sqlx::AnyConnection::connect(&url)
                .await
                .map_err(ctx(format!("{shown}: cannot connect")))?
                .close()
                .await
                .map_err(ctx(format!("{shown}: cannot connect")))?;
        }
        let pool = AnyPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(30))
            .connect(&url)
            .await
            .map_err(ctx(format!("{shown}: cannot connect")))?;
        sqlx::migrate!("src/serve/migrations")
            .run(&pool)
            .await
            .map_err(|e| DbError {
                what: format!("{shown}: migrations"),
                source: sqlx::Error::Migrate(Box::new(e)),
            })?;
        Ok(Db { pool })
    }

    /// Creates or replaces a cluster's (sealed) cluster.yml. Of PUTs that race, exactly one
    /// inserts the row (the database decides), so exactly one says created. A cluster whose
    /// lock a live operation holds keeps its config: the check and the update are one
    /// statement, so no operation starts in between.
    pub async fn put_cluster(&self, name: &str, sealed: &str) -> Result<Put, DbError> {
        let now = now_ms();
        let what = || ctx(format!("cluster {name}: save"));
        let inserted = sqlx::query(
            "INSERT INTO clusters (name, config, created_at, updated_at) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(sealed)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(what())?
        .rows_affected()
            == 1;
        if inserted {
            return Ok(Put::Created);
        }
        let replaced = sqlx::query(
            "UPDATE clusters SET config = $2, updated_at = $3 WHERE name = $1 \
             AND NOT EXISTS (SELECT 1 FROM cluster_locks l \
                             WHERE l.cluster = $1 AND l.expires_at >= $3)",
        )
        .bind(name)
        .bind(sealed)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(what())?
        .rows_affected()
            == 1;
        if replaced {
            return Ok(Put::Replaced);
        }
        let holder = "SELECT operation FROM cluster_locks WHERE cluster = $1";
        let operation = self
            .text(holder, name, format!("cluster {name}: lock"))
            .await?
            .unwrap_or_default();
        Ok(Put::Busy { operation })
    }

    /// Whether the database can be read and written now (for `/healthz`): a write in a
    /// transaction that is rolled back, then a read.
    pub async fn check_read_write(&self) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(ctx("health: begin"))?;
        sqlx::query(
            "INSERT INTO cluster_locks (cluster, operation, replica, expires_at) \
             VALUES ($1, $1, $1, 0) ON CONFLICT (cluster) DO NOTHING",
        )
        .bind(HEALTH_PROBE_KEY)
        .execute(&mut *tx)
        .await
        .map_err(ctx("health: write"))?;
        tx.rollback().await.map_err(ctx("health: write"))?;
        sqlx::query("SELECT COUNT(*) FROM clusters")
            .fetch_one(&self.pool)
            .await
            .map_err(ctx("health: read"))?;
        Ok(())
    }

    /// The key check's sealed value, stored from `sealed` by the first replica that asks.
    pub async fn key_check(&self, sealed: &str) -> Result<String, DbError> {
        sqlx::query(
            "INSERT INTO key_check (id, sealed, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(KEY_CHECK_ID)
        .bind(sealed)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(ctx("key check: write"))?;
        let sql = "SELECT sealed FROM key_check WHERE id = $1";
        self.text(sql, KEY_CHECK_ID, "key check: read".into())
            .await?
            .ok_or_else(|| ctx("key check: read")(sqlx::Error::RowNotFound))
    }

    /// One cluster's name and sealed cluster.yml (the first by name), if any: a database
    /// written before the key check existed is checked against it.
    pub async fn some_cluster_config(&self) -> Result<Option<(String, String)>, DbError> {
        let row = sqlx::query("SELECT name, config FROM clusters ORDER BY name LIMIT 1")
            .fetch_optional(&self.pool)
            .await
            .map_err(ctx("clusters: read one"))?;
        row.map(|r| Ok((r.try_get("name")?, r.try_get("config")?)))
            .transpose()
            .map_err(ctx("clusters: read one"))
    }

    pub async fn cluster_config(&self, name: &str) -> Result<Option<String>, DbError> {
        let sql = "SELECT config FROM clusters WHERE name = $1";
        self.text(sql, name, format!("cluster {name}: read")).await
    }

    pub async fn list_clusters(&self) -> Result<Vec<ClusterRow>, DbError> {
        let rows = sqlx::query(
            "SELECT c.name, c.created_at, c.updated_at, \
                    (SELECT MAX(s.version) FROM states s WHERE s.cluster = c.name) AS state_version, \
                    (SELECT o.id FROM operations o WHERE o.cluster = c.name \
                     ORDER BY o.created_at DESC, o.id DESC LIMIT 1) AS last_op \
             FROM clusters c ORDER BY c.name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ctx("clusters: list"))?;
        let mut out = Vec::new();
        for row in rows {
            let read = |row: &sqlx::any::AnyRow| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<String, _>("name")?,
                    row.try_get::<i64, _>("created_at")?,
                    row.try_get::<i64, _>("updated_at")?,
                    row.try_get::<Option<i64>, _>("state_version")?,
                    row.try_get::<Option<String>, _>("last_op")?,
                ))
            };
            let (name, created, updated, state_version, last) =
                read(&row).map_err(ctx("clusters: list"))?;
            let last_operation = match last {
                Some(id) => self.operation(&id).await?,
                None => None,
            };
            out.push(ClusterRow {
                name,
                created_at: rfc3339(created),
                updated_at: rfc3339(updated),
                state_version,
                last_operation,
            });
        }
        Ok(out)
    }

    /// The newest state version and its sealed JSON.
    pub async fn latest_state(&self, cluster: &str) -> Result<Option<(i64, String)>, DbError> {
        let what = format!("cluster {cluster}: read the state");
        let row = sqlx::query(
            "SELECT version, sealed FROM states WHERE cluster = $1 ORDER BY version DESC LIMIT 1",
        )
        .bind(cluster)
        .fetch_optional(&self.pool)
        .await
        .map_err(ctx(what.clone()))?;
        row.map(|r| Ok((r.try_get("version")?, r.try_get("sealed")?)))
            .transpose()
            .map_err(ctx(what))
    }

    /// Inserts state `version`; false when that version exists already (another writer won the
    /// compare-and-swap).
    pub async fn insert_state(
        &self,
        cluster: &str,
        version: i64,
        sealed: &str,
        operation: Option<&str>,
    ) -> Result<bool, DbError> {
        let result = sqlx::query(
            "INSERT INTO states (cluster, version, saved_at, operation, sealed) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(cluster)
        .bind(version)
        .bind(now_ms())
        .bind(operation)
        .bind(sealed)
        .execute(&self.pool)
        .await;
        match result {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(false),
            Err(e) => Err(ctx(format!(
                "cluster {cluster}: save state version {version}"
            ))(e)),
        }
    }

    pub async fn state_history(&self, cluster: &str) -> Result<Vec<StateRow>, DbError> {
        let what = format!("cluster {cluster}: state history");
        let rows = sqlx::query(
            "SELECT version, saved_at, operation FROM states WHERE cluster = $1 ORDER BY version",
        )
        .bind(cluster)
        .fetch_all(&self.pool)
        .await
        .map_err(ctx(what.clone()))?;
        rows.iter()
            .map(|r| {
                Ok(StateRow {
                    version: r.try_get("version")?,
                    saved_at: rfc3339(r.try_get("saved_at")?),
                    operation: r.try_get("operation")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ctx(what))
    }

    /// Takes the cluster's lock for `operation` unless another live lease holds it. The upsert
    /// only overwrites an expired lease, atomically, so two replicas racing for a free or
    /// expired lock cannot both win.
    pub async fn try_lock(
        &self,
        cluster: &str,
        operation: &str,
        replica: &str,
    ) -> Result<Lock, DbError> {
        let what = format!("cluster {cluster}: lock");
        let holder = "SELECT operation FROM cluster_locks WHERE cluster = $1";
        let previous = self.text(holder, cluster, what.clone()).await?;
        let now = now_ms();
        let taken = sqlx::query(
            "INSERT INTO cluster_locks (cluster, operation, replica, expires_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (cluster) DO UPDATE SET operation = excluded.operation, \
                 replica = excluded.replica, expires_at = excluded.expires_at \
             WHERE cluster_locks.expires_at < $5",
        )
        .bind(cluster)
        .bind(operation)
        .bind(replica)
        .bind(now + LEASE_MS)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(ctx(what.clone()))?
        .rows_affected()
            == 1;
        if taken {
            return Ok(Lock::Acquired {
                took_over: previous.filter(|p| p != operation),
            });
        }
        let holder = self.text(holder, cluster, what).await?;
        Ok(Lock::Busy {
            operation: holder.unwrap_or_default(),
        })
    }

    /// Extends the lease; false when this operation no longer holds the lock (it expired and
    /// another replica took the cluster over).
    pub async fn renew_lock(&self, cluster: &str, operation: &str) -> Result<bool, DbError> {
        Ok(sqlx::query(
            "UPDATE cluster_locks SET expires_at = $1 WHERE cluster = $2 AND operation = $3",
        )
        .bind(now_ms() + LEASE_MS)
        .bind(cluster)
        .bind(operation)
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("cluster {cluster}: renew the lock")))?
        .rows_affected()
            == 1)
    }

    pub async fn release_lock(&self, cluster: &str, operation: &str) -> Result<(), DbError> {
        sqlx::query("DELETE FROM cluster_locks WHERE cluster = $1 AND operation = $2")
            .bind(cluster)
            .bind(operation)
            .execute(&self.pool)
            .await
            .map_err(ctx(format!("cluster {cluster}: release the lock")))?;
        Ok(())
    }

    pub async fn insert_operation(
        &self,
        id: &str,
        cluster: &str,
        kind: &str,
        params: &serde_json::Value,
        replica: &str,
    ) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO operations (id, cluster, kind, params, status, replica, cancel_requested, \
             created_at) VALUES ($1, $2, $3, $4, 'running', $5, 0, $6)",
        )
        .bind(id)
        .bind(cluster)
        .bind(kind)
        .bind(params.to_string())
        .bind(replica)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("operation {id}: record")))?;
        Ok(())
    }

    pub async fn operation(&self, id: &str) -> Result<Option<OperationRow>, DbError> {
        let what = format!("operation {id}: read");
        sqlx::query(&format!(
            "SELECT {OP_COLUMNS} FROM operations WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(ctx(what.clone()))?
        .map(|r| op_from_row(&r))
        .transpose()
        .map_err(ctx(what))
    }

    /// Records how a running operation ended (an operation already ended keeps its outcome).
    pub async fn finish_operation(
        &self,
        id: &str,
        status: &str,
        exit_code: i64,
        error: Option<&str>,
        state_version: Option<i64>,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE operations SET status = $1, exit_code = $2, error = $3, state_version = $4, \
             finished_at = $5 WHERE id = $6 AND status = 'running'",
        )
        .bind(status)
        .bind(exit_code)
        .bind(error)
        .bind(state_version)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("operation {id}: record its outcome")))?;
        Ok(())
    }

    /// Flags a running operation for cancellation; its replica sees the flag within
    /// [`RENEW_EVERY`]. Returns the operation as it is now (None when unknown).
    pub async fn request_cancel(&self, id: &str) -> Result<Option<OperationRow>, DbError> {
        sqlx::query(
            "UPDATE operations SET cancel_requested = 1 WHERE id = $1 AND status = 'running'",
        )
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("operation {id}: cancel")))?;
        self.operation(id).await
    }

    pub async fn cancel_requested(&self, id: &str) -> Result<bool, DbError> {
        Ok(self
            .operation(id)
            .await?
            .is_some_and(|op| op.cancel_requested))
    }

    /// Operations recorded as running whose cluster lease their replica no longer holds:
    /// `(id, cluster, replica)`.
    pub async fn orphaned_operations(&self) -> Result<Vec<(String, String, String)>, DbError> {
        let what = "operations: find those whose replica stopped";
        let rows = sqlx::query(
            "SELECT o.id, o.cluster, o.replica FROM operations o WHERE o.status = 'running' \
             AND NOT EXISTS (SELECT 1 FROM cluster_locks l WHERE l.operation = o.id \
                             AND l.expires_at >= $1)",
        )
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await
        .map_err(ctx(what))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("id")?,
                    r.try_get("cluster")?,
                    r.try_get("replica")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ctx(what))
    }

    /// Records a running operation as interrupted with `message`, drops its lock if it still
    /// has one and ends its events with a result; false when it had ended already.
    pub async fn interrupt_operation(
        &self,
        id: &str,
        cluster: &str,
        message: &str,
    ) -> Result<bool, DbError> {
        let ended = sqlx::query(
            "UPDATE operations SET status = 'interrupted', exit_code = 130, error = $1, \
             finished_at = $2 WHERE id = $3 AND status = 'running'",
        )
        .bind(message)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("operation {id}: record it interrupted")))?
        .rows_affected()
            == 1;
        if !ended {
            return Ok(false);
        }
        self.release_lock(cluster, id).await?;
        let last = self
            .events_after(id, 0)
            .await?
            .last()
            .map_or(0, |(seq, _)| *seq);
        let body = serde_json::json!({
            "event": "result",
            "status": "interrupted",
            "exit_code": 130,
            "error": message,
        });
        self.insert_event(id, last + 1, &body.to_string()).await?;
        Ok(true)
    }

    pub async fn insert_event(&self, operation: &str, seq: i64, body: &str) -> Result<(), DbError> {
        sqlx::query("INSERT INTO events (operation, seq, body) VALUES ($1, $2, $3)")
            .bind(operation)
            .bind(seq)
            .bind(body)
            .execute(&self.pool)
            .await
            .map_err(ctx(format!("operation {operation}: record event {seq}")))?;
        Ok(())
    }

    pub async fn events_after(
        &self,
        operation: &str,
        after: i64,
    ) -> Result<Vec<(i64, String)>, DbError> {
        let what = format!("operation {operation}: read events");
        let rows = sqlx::query(
            "SELECT seq, body FROM events WHERE operation = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(operation)
        .bind(after)
        .fetch_all(&self.pool)
        .await
        .map_err(ctx(what.clone()))?;
        rows.iter()
            .map(|r| Ok((r.try_get("seq")?, r.try_get("body")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ctx(what))
    }

    pub async fn put_kubeconfig(&self, cluster: &str, sealed: &str) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO kubeconfigs (cluster, sealed, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (cluster) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at",
        )
        .bind(cluster)
        .bind(sealed)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(ctx(format!("cluster {cluster}: save the kubeconfig")))?;
        Ok(())
    }

    pub async fn kubeconfig(&self, cluster: &str) -> Result<Option<String>, DbError> {
        let sql = "SELECT sealed FROM kubeconfigs WHERE cluster = $1";
        self.text(
            sql,
            cluster,
            format!("cluster {cluster}: read the kubeconfig"),
        )
        .await
    }
}
