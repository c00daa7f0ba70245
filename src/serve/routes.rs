//! The HTTP API's routes and handlers. Every error answer is `{"error": ...}` (plus details),
//! passed through the redactor: no key, token or kubeconfig reaches a response.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures::Stream;
use serde_json::{Value, json};

use super::App;
use super::db::Put;
use super::ops::{self, Kind, StartError};
use super::store::DbStateStore;
use crate::api;

/// An error answer.
pub struct Failure(StatusCode, Value);

impl Failure {
    fn new(status: StatusCode, message: impl std::fmt::Display) -> Self {
        Failure(
            status,
            json!({ "error": crate::output::redact(&message.to_string()) }),
        )
    }

    fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!("{}", crate::output::redact(&e.to_string()));
        Failure::new(StatusCode::INTERNAL_SERVER_ERROR, e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut response = (self.0, Json(self.1)).into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
        }
        response
    }
}

type Answer = Result<Response, Failure>;

pub fn router(app: App) -> Router {
    let v1 = Router::new()
        .route("/clusters", get(list_clusters))
        .route("/clusters/{name}", put(put_cluster))
        .route("/clusters/{name}/plan", get(plan))
        .route("/clusters/{name}/states", get(states))
        .route("/clusters/{name}/{operation}", post(start))
        .route("/operations/{id}", get(operation))
        .route("/operations/{id}/cancel", post(cancel))
        .route("/operations/{id}/events", get(events))
        .layer(middleware::from_fn_with_state(app.clone(), authenticate));
    Router::new()
        .route("/healthz", get(healthz))
        .nest("/v1", v1)
        .fallback(|| async { Failure::new(StatusCode::NOT_FOUND, "no such endpoint") })
        .layer(middleware::map_response(json_errors))
        .with_state(app)
}

/// How long `/healthz` waits for the database.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// `ok` while the database can be read and written and this server's secret key opens what it
/// holds; 503 with the cause when not.
async fn healthz(State(app): State<App>) -> Answer {
    let check = async {
        app.db.check_read_write().await.map_err(|e| e.to_string())?;
        super::check_key(&app.db, &app.secrets)
            .await
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(HEALTH_TIMEOUT, check).await {
        Ok(Ok(())) => Ok("ok".into_response()),
        Ok(Err(e)) => Err(Failure::new(StatusCode::SERVICE_UNAVAILABLE, e)),
        Err(_) => Err(Failure::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the database did not answer within {}s",
                HEALTH_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// The longest error text of axum's own (a rejected body, a wrong method) passed on.
const MAX_ERROR_TEXT: usize = 4096;

/// Errors axum answers by itself (a method not allowed, a body that is not UTF-8, a path that
/// does not parse) come as plain text: they are turned into `{"error": ...}` like every other.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_ERROR_TEXT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_string()
    } else {
        text
    };
    let mut json = Failure::new(status, message).into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            json.headers_mut().insert(name.clone(), value.clone());
        }
    }
    json
}

async fn authenticate(State(app): State<App>, request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !app.tokens.allows(header) {
        let why = if header.is_none() {
            "missing bearer token: send `Authorization: Bearer <token>`"
        } else {
            "invalid bearer token"
        };
        return Failure::new(StatusCode::UNAUTHORIZED, why).into_response();
    }
    next.run(request).await
}

/// Cluster names become database keys and log fields: keep them plain.
fn check_name(name: &str) -> Result<(), Failure> {
    // `.` and `..` are path segments to anything that puts a name in a path or a URL.
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!(
                "cluster name `{name}`: use 1 to 128 letters, digits, `-`, `_` or `.` (not `.` or `..` alone)"
            ),
        ))
    }
}

async fn list_clusters(State(app): State<App>) -> Answer {
    let clusters = app.db.list_clusters().await.map_err(Failure::internal)?;
    Ok(Json(json!({ "clusters": clusters })).into_response())
}

/// Validates the cluster.yml as `rkers up` would (defaults applied) and stores it sealed.
async fn put_cluster(State(app): State<App>, Path(name): Path<String>, body: String) -> Answer {
    check_name(&name)?;
    let file = format!("{name}/cluster.yml");
    let invalid = |e: crate::config::ConfigError| {
        let problems: Vec<Value> = e
            .diagnostics()
            .iter()
            .map(|d| {
                json!({
                    "line": d.line,
                    "column": d.column,
                    "path": d.path,
                    "message": crate::output::redact(&d.message),
                    "text": crate::output::redact(&d.to_string()),
                })
            })
            .collect();
        Failure(
            StatusCode::BAD_REQUEST,
            json!({
                "error": format!("invalid cluster configuration:\n{}", crate::output::redact(&e.to_string())),
                "problems": problems,
            }),
        )
    };
    let loaded = crate::config::load_str(&body, &file).map_err(invalid)?;
    // The catalog operations run with (the library's default), so what validates here runs.
    let catalog = crate::metadata::Catalog::embedded();
    let warnings: Vec<String> = crate::config::prepare(loaded, catalog)
        .map_err(invalid)?
        .warnings
        .iter()
        .map(|w| crate::output::redact(&w.to_string()))
        .collect();
    let sealed = app
        .secrets
        .seal(&super::config_purpose(&name), body.as_bytes());
    let created = match app
        .db
        .put_cluster(&name, &sealed)
        .await
        .map_err(Failure::internal)?
    {
        Put::Created => true,
        Put::Replaced => false,
        // The running operation read the config it runs with; replacing it now would make the
        // stored config say what no run applied.
        Put::Busy { operation } => return Err(busy(&name, &operation)),
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({ "name": name, "created": created, "warnings": warnings })),
    )
        .into_response())
}

/// `POST /v1/clusters/{name}/{operation}` with the operation's options as an optional JSON body.
async fn start(
    State(app): State<App>,
    Path((name, operation)): Path<(String, String)>,
    body: String,
) -> Answer {
    check_name(&name)?;
    let body = if body.trim().is_empty() {
        "{}"
    } else {
        body.as_str()
    };
    let bad = |e: serde_json::Error| {
        Failure::new(
            StatusCode::BAD_REQUEST,
            format!("the options of `{operation}`: {e}"),
        )
    };
    let kind = match operation.as_str() {
        "up" => Kind::Up(serde_json::from_str(body).map_err(bad)?),
        "remove" => Kind::Remove(serde_json::from_str(body).map_err(bad)?),
        "cert-rotate" => Kind::CertRotate(serde_json::from_str(body).map_err(bad)?),
        "snapshot-save" => Kind::SnapshotSave(serde_json::from_str(body).map_err(bad)?),
        "snapshot-restore" => Kind::SnapshotRestore(serde_json::from_str(body).map_err(bad)?),
        "rollback" => Kind::Rollback(serde_json::from_str(body).map_err(bad)?),
        other => {
            return Err(Failure::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no operation `{other}`: use up, remove, cert-rotate, snapshot-save, \
                     snapshot-restore or rollback"
                ),
            ));
        }
    };
    // A snapshot name that is no plain file name is the request's fault, refused before any
    // operation starts.
    if let Kind::SnapshotSave(p) | Kind::SnapshotRestore(p) = &kind {
        crate::phases::etcd_snapshot::check_snapshot_name(&p.name)
            .map_err(|e| Failure::new(StatusCode::BAD_REQUEST, e))?;
    }
    match ops::start(&app, &name, kind).await {
        Ok(id) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "operation_id": id,
                "events": format!("/v1/operations/{id}/events"),
            })),
        )
            .into_response()),
        Err(StartError::UnknownCluster) => Err(unknown_cluster(&name)),
        Err(StartError::Busy { operation }) => Err(busy(&name, &operation)),
        Err(StartError::ShuttingDown) => Err(Failure::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is stopping and starts no operation; send the request to another \
             replica, or again once it is back",
        )),
        Err(StartError::Internal(e)) => Err(Failure::internal(e)),
    }
}

/// 409 for a cluster an operation holds, with that operation's id.
fn busy(name: &str, operation: &str) -> Failure {
    Failure(
        StatusCode::CONFLICT,
        json!({
            "error": format!("cluster {name} is busy: operation {operation} is running on it"),
            "operation_id": operation,
        }),
    )
}

fn unknown_cluster(name: &str) -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        format!("no cluster `{name}`: register it first with PUT /v1/clusters/{name}"),
    )
}

/// The dry run of `up` (reads the hosts and the stored state; changes nothing, takes no lock).
async fn plan(State(app): State<App>, Path(name): Path<String>) -> Answer {
    check_name(&name)?;
    let sealed = app
        .db
        .cluster_config(&name)
        .await
        .map_err(Failure::internal)?
        .ok_or_else(|| unknown_cluster(&name))?;
    let yaml = app
        .secrets
        .open_string(&super::config_purpose(&name), &sealed)
        .map_err(Failure::internal)?;
    let db = app.db.clone();
    let secrets = app.secrets.clone();
    let transport = app.transport.clone();
    let result = ops::spawn_operation(move || async move {
        let store = Arc::new(DbStateStore::new(db, secrets, &name, None));
        let op =
            api::Operation::new(api::ClusterInput::Yaml(yaml), store).with_transport(transport);
        api::plan(&op).await
    })
    .await
    .map_err(Failure::internal)?;
    match result {
        Ok(plan) => Ok(Json(plan).into_response()),
        Err(e @ api::ApiError::InvalidConfig(_)) => Err(Failure::new(StatusCode::BAD_REQUEST, e)),
        Err(e) => Err(Failure::new(StatusCode::BAD_GATEWAY, e)),
    }
}

async fn states(State(app): State<App>, Path(name): Path<String>) -> Answer {
    check_name(&name)?;
    if app
        .db
        .cluster_config(&name)
        .await
        .map_err(Failure::internal)?
        .is_none()
    {
        return Err(unknown_cluster(&name));
    }
    let history = app
        .db
        .state_history(&name)
        .await
        .map_err(Failure::internal)?;
    Ok(Json(json!({ "cluster": name, "versions": history })).into_response())
}

fn unknown_operation(id: &str) -> Failure {
    Failure::new(StatusCode::NOT_FOUND, format!("no operation `{id}`"))
}

async fn operation(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let op = app
        .db
        .operation(&id)
        .await
        .map_err(Failure::internal)?
        .ok_or_else(|| unknown_operation(&id))?;
    Ok(Json(op).into_response())
}

/// Flags the operation; the replica running it cancels it within a second. 202 while it
/// runs, 409 when it already ended.
async fn cancel(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let op = app
        .db
        .request_cancel(&id)
        .await
        .map_err(Failure::internal)?
        .ok_or_else(|| unknown_operation(&id))?;
    if op.status != "running" {
        return Err(Failure(
            StatusCode::CONFLICT,
            json!({
                "error": format!("operation {id} already ended: {}", op.status),
                "operation_id": id,
                "status": op.status,
            }),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "operation_id": id, "status": "cancelling" })),
    )
        .into_response())
}

/// How often a stream looks for new events in the database.
const POLL: Duration = Duration::from_millis(250);

/// The operation's events as server-sent events (`event: progress`, then `event: result`),
/// each with its sequence number as the SSE id, so a client reconnecting with `Last-Event-ID`
/// resumes where it stopped.
async fn events(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, Failure> {
    if app
        .db
        .operation(&id)
        .await
        .map_err(Failure::internal)?
        .is_none()
    {
        return Err(unknown_operation(&id));
    }
    let after: i64 = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (tx, rx) = futures::channel::mpsc::channel::<Result<SseEvent, Infallible>>(64);
    tokio::spawn(follow(app, id, after, tx));
    Ok(Sse::new(rx).keep_alive(KeepAlive::default()))
}

/// Feeds one stream until the result event (or until the client went away).
async fn follow(
    app: App,
    id: String,
    mut after: i64,
    mut tx: futures::channel::mpsc::Sender<Result<SseEvent, Infallible>>,
) {
    use futures::SinkExt;
    let mut ended_since = None;
    loop {
        // Read the record before the events: when it says "ended", every event it had was
        // written before, so the read below sees them all.
        let ended = match app.db.operation(&id).await {
            Ok(Some(op)) if op.status != "running" => Some(op),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(operation = %id, "{e}");
                None
            }
        };
        let batch = app.db.events_after(&id, after).await.unwrap_or_default();
        for (seq, body) in batch {
            after = seq;
            let is_result = serde_json::from_str::<Value>(&body)
                .ok()
                .is_some_and(|v| v.get("event").and_then(Value::as_str) == Some("result"));
            let event = SseEvent::default()
                .event(if is_result { "result" } else { "progress" })
                .id(seq.to_string())
                .data(body);
            if tx.send(Ok(event)).await.is_err() || is_result {
                return;
            }
        }
        if let Some(op) = ended {
            // The runner stores the result event just after the record and the lock; an
            // operation still without one a few seconds after it ended lost its replica (it
            // died and another took the cluster over): its record says how it ended.
            let since = *ended_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > Duration::from_secs(5) {
                let body = json!({
                    "event": "result",
                    "status": if op.status == "interrupted" { "interrupted" } else { "failed" },
                    "exit_code": op.exit_code.unwrap_or(1),
                    "error": op.error,
                });
                let _ = tx
                    .send(Ok(SseEvent::default()
                        .event("result")
                        .id((after + 1).to_string())
                        .data(body.to_string())))
                    .await;
                return;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
