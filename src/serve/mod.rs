//! `rkers serve`: a management-plane HTTP server on the library API ([`crate::api`]).
//!
//! It owns the JSON API under `/v1` (axum), its database ([`db`]: SQLite embedded by default,
//! PostgreSQL for several replicas on one database), bearer-token authentication ([`auth`]),
//! encryption at rest of configs, states and kubeconfigs ([`crypto`]), the database
//! [`StateStore`](crate::state::StateStore) ([`store`]) and the running of operations
//! under a per-cluster lock held in the database (`ops`).
//!
//! Endpoints (all but `/healthz` need `Authorization: Bearer <token>`):
//! - `PUT /v1/clusters/{name}`: register or update a cluster; the body is its cluster.yml
//!   (400 with `file:line:column` problems when invalid; 409 with the running operation's id
//!   while an operation holds the cluster);
//! - `GET /v1/clusters`: every cluster with its newest state version and last operation;
//! - `POST /v1/clusters/{name}/{up|remove|cert-rotate|snapshot-save|snapshot-restore|rollback}`:
//!   starts the operation (202 with its id; 409 with the running operation's id when the
//!   cluster is busy, on whichever replica); `rollback` takes
//!   `{"dry_run", "restore_snapshot", "disable_port_check"}`;
//! - `GET /v1/clusters/{name}/plan`: the dry run of `up`;
//! - `GET /v1/clusters/{name}/states`: the state history (versions and times only);
//! - `GET /v1/operations/{id}`, `POST /v1/operations/{id}/cancel`;
//! - `GET /v1/operations/{id}/events`: the events as server-sent events, read from the database
//!   (any replica streams any operation), ending with the `result` event.

pub mod auth;
pub mod crypto;
pub mod db;
pub mod listen;
mod ops;
mod routes;
pub mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_listen;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use auth::Tokens;
pub use crypto::SecretBox;
pub use db::Db;
pub use ops::Running;
pub use routes::router;

/// `rkers serve`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on. Without --tls-cert it speaks plain HTTP: keep it on localhost or
    /// put a TLS proxy in front.
    #[arg(long, default_value = "127.0.0.1:8480")]
    pub listen: SocketAddr,
    /// Serve HTTPS with this PEM certificate chain (server certificate first; with --tls-key).
    /// Both files are read again when they change (looked at every 5 s).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (mode 0600: refused when others may read it).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Connections open at once; beyond it a new connection waits in the listen backlog until
    /// one closes (an event stream holds its connection until the operation ends).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// How long a client may take to send a request's headers (and the TLS handshake) before
    /// its connection is closed, e.g. `10s`.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_timeout: std::time::Duration,
    /// How long a client may take to send a request's whole body before the request is
    /// refused and the connection closed, e.g. `30s`.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub body_timeout: std::time::Duration,
    /// Database URL: `sqlite:///path/serve.db` (embedded) or `postgres://user@host/db` (shared
    /// by several replicas).
    #[arg(
        long,
        env = "RKERS_SERVE_DATABASE",
        default_value = "sqlite:///var/lib/rkers/serve.db"
    )]
    pub database: String,
    /// File with the accepted bearer tokens: one a line, or `sha256:<hex digest>`.
    #[arg(long, value_name = "FILE")]
    pub tokens_file: PathBuf,
    /// File with the 32-byte key (raw, or 64 hex digits) that encrypts configs, states and
    /// kubeconfigs in the database.
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: PathBuf,
    /// This replica's name in operation records [default: host name and process id].
    #[arg(long)]
    pub replica_id: Option<String>,
    /// known_hosts file every operation checks host keys against and records new keys in
    /// [default: none; each operation trusts the keys it first sees, in its scratch directory].
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,
    /// Refuse hosts whose key is not in --known-hosts yet, instead of recording it.
    #[arg(long, requires = "known_hosts")]
    pub strict_host_keys: bool,
}

/// What every request handler shares.
#[derive(Clone)]
pub struct App {
    pub db: Db,
    pub secrets: SecretBox,
    pub tokens: Arc<Tokens>,
    pub replica: String,
    /// How every operation reaches its hosts (`--known-hosts`, `--strict-host-keys`).
    pub transport: Arc<crate::api::SshTransport>,
    /// The operations this replica runs (cancelled when the server stops).
    pub running: Running,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A bad tokens file or key file (exit 2).
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Failed(String),
}

/// The associated data of a cluster's sealed cluster.yml.
fn config_purpose(cluster: &str) -> String {
    format!("config:{cluster}")
}

fn kubeconfig_purpose(cluster: &str) -> String {
    format!("kubeconfig:{cluster}")
}

fn default_replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "rkers".into());
    format!("{host}-{}", std::process::id())
}

/// Refuses a file of secrets that users other than its owner may read or write. A file that
/// cannot be read is left to the reader of its contents to report.
fn refuse_shared_file(path: &std::path::Path, what: &str) -> Result<(), ServeError> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ServeError::Setup(format!(
            "{path}: the {what} is open to other users (mode {mode:04o}). Remedy: chmod 600 {path}",
            path = path.display()
        )));
    }
    Ok(())
}

/// The text the key check row holds, sealed with the first replica's key.
const KEY_CHECK: &str = "rkers serve secret key check";

/// Why this server's secret key was not confirmed.
#[derive(Debug, thiserror::Error)]
pub enum KeyCheckError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(
        "the secret key cannot decrypt {what} in the database: this --secret-key-file is not \
         the key the database was written with"
    )]
    WrongKey { what: String },
}

/// Whether this server's secret key opens what the database holds: the key check row (stored
/// by the first replica on the database) and, for a database older than that row, one
/// cluster's config. A replica started with another `--secret-key-file` would answer 500 to
/// every cluster call and seal new rows no other replica can read.
pub async fn check_key(db: &Db, secrets: &SecretBox) -> Result<(), KeyCheckError> {
    const PURPOSE: &str = "key-check";
    let stored = db
        .key_check(&secrets.seal(PURPOSE, KEY_CHECK.as_bytes()))
        .await?;
    if secrets.open(PURPOSE, &stored).is_err() {
        return Err(KeyCheckError::WrongKey {
            what: "the key check".into(),
        });
    }
    if let Some((name, sealed)) = db.some_cluster_config().await?
        && secrets.open(&config_purpose(&name), &sealed).is_err()
    {
        return Err(KeyCheckError::WrongKey {
            what: format!("the config of cluster {name}"),
        });
    }
    Ok(())
}

/// Removes the scratch directories operations of a killed server left in `parent`. Each
/// running operation holds a lock on its own, so only those whose process is gone are taken.
pub fn remove_scratch_leftovers(parent: &std::path::Path) {
    for path in crate::api::stale_scratch_dirs(parent) {
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(
                "{}: removed, the scratch directory of an operation whose process ended",
                path.display()
            ),
            Err(e) => tracing::warn!("{}: cannot remove this leftover: {e}", path.display()),
        }
    }
}

/// Starts the server and serves until the process ends. Prints one line with the address it
/// listens on (port 0 picks a free one), for scripts and tests.
pub async fn run(args: &ServeArgs) -> Result<(), ServeError> {
    refuse_shared_file(&args.tokens_file, "tokens file")?;
    refuse_shared_file(&args.secret_key_file, "secret key file")?;
    let tokens =
        Tokens::from_file(&args.tokens_file).map_err(|e| ServeError::Setup(e.to_string()))?;
    let secrets = SecretBox::from_file(&args.secret_key_file)
        .map_err(|e| ServeError::Setup(e.to_string()))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            refuse_shared_file(key, "TLS key")?;
            Some(Arc::new(
                tls::Tls::load(cert, key).map_err(|e| ServeError::Setup(e.to_string()))?,
            ))
        }
        _ => None,
    };
    let db = Db::connect(&args.database)
        .await
        .map_err(|e| ServeError::Failed(e.to_string()))?;
    check_key(&db, &secrets).await.map_err(|e| match e {
        KeyCheckError::Database(e) => ServeError::Failed(e.to_string()),
        wrong => ServeError::Setup(wrong.to_string()),
    })?;
    remove_scratch_leftovers(&std::env::temp_dir());
    let app = App {
        db,
        secrets,
        tokens: Arc::new(tokens),
        replica: args.replica_id.clone().unwrap_or_else(default_replica),
        transport: Arc::new(crate::api::SshTransport {
            known_hosts: args.known_hosts.clone(),
            strict_host_keys: args.strict_host_keys,
        }),
        running: Running::default(),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| ServeError::Failed(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Failed(format!("cannot listen on {}: {e}", args.listen)))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!(
        "rkers serve: listening on {scheme}://{addr} (replica {}, database {})",
        app.replica,
        db::shown_url(&args.database)
    );
    // Operations a stopped or crashed replica left "running" are ended now and from time to
    // time, whichever replica notices first.
    let sweeper = {
        let app = app.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(ops::SWEEP_EVERY);
            loop {
                tick.tick().await;
                ops::sweep_orphans(&app).await;
            }
        })
    };
    let reloader = tls.clone().map(|t| t.watch(tls::RELOAD_EVERY));
    let limits = listen::Limits {
        max_connections: args.max_connections as usize,
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let server = listen::serve(listener, router(app.clone()), limits, tls, stop.clone());
    tokio::pin!(server);
    let signal = tokio::select! {
        () = &mut server => {
            sweeper.abort();
            return Err(ServeError::Failed(format!("server on {addr}: stopped accepting")));
        }
        signal = crate::phases::interrupt::interrupt_signal() => signal,
    };
    if let Some(reloader) = reloader {
        reloader.abort();
    }
    sweeper.abort();
    // No new connection from now on; those open (event streams) go on.
    stop.cancel();
    stop_gracefully(&app, signal, server).await;
    Ok(())
}

/// How long a stopping server waits for its operations to end once cancelled.
const STOP_OPERATIONS: std::time::Duration = std::time::Duration::from_secs(60);
/// How long it then waits for the requests in flight (event streams end with their result).
const STOP_REQUESTS: std::time::Duration = std::time::Duration::from_secs(5);

/// On SIGTERM, SIGINT or SIGHUP: no new connection or operation; every running operation is
/// cancelled, which drops its work where it stands, records it as interrupted, releases its
/// lease and ends its events with a result. One that does not end in time is recorded so
/// here. Then the requests in flight get a moment to finish.
async fn stop_gracefully(
    app: &App,
    signal: crate::phases::interrupt::Interrupt,
    server: impl std::future::Future<Output = ()>,
) {
    let cancelled = app.running.close();
    tracing::info!(
        operations = cancelled.len(),
        "{}: stopping (no new operations; the running ones are interrupted)",
        signal.message()
    );
    let deadline = tokio::time::Instant::now() + STOP_OPERATIONS;
    while !app.running.ids().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    for id in app.running.ids() {
        if let Ok(Some(op)) = app.db.operation(&id).await {
            let message = ops::stopped_message(&app.replica);
            if let Err(e) = app.db.interrupt_operation(&id, &op.cluster, &message).await {
                tracing::error!(operation = %id, "{e}");
            }
        }
    }
    let _ = tokio::time::timeout(STOP_REQUESTS, server).await;
    tracing::info!("stopped");
}
