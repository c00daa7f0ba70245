//! The server against a real database and no hosts: SQLite always, and PostgreSQL too when
//! `RKERS_TEST_POSTGRES_URL` names one (scripts/test sets it from scripts/postgres); each test
//! gets its own database there.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::store::DbStateStore;
use super::*;
use crate::state::StateFile;
use crate::state::{StateStore, StateVersion, StoreError};

pub(super) const TOKEN: &str = "test-token-0123456789abcdef";

/// One SQLite file, plus a fresh PostgreSQL database when the environment names a server.
pub(super) async fn databases() -> Vec<(String, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![(
        format!("sqlite://{}", dir.path().join("serve.db").display()),
        Some(dir),
    )];
    if let Ok(url) = std::env::var("RKERS_TEST_POSTGRES_URL") {
        out.push((db::create_postgres_database(&url).await.unwrap(), None));
    }
    out
}

pub(super) async fn app(url: &str, replica: &str) -> App {
    App {
        db: Db::connect(url).await.unwrap(),
        secrets: SecretBox::new(&[9; 32]),
        tokens: Arc::new(Tokens::from_plain(&[TOKEN])),
        replica: replica.into(),
        transport: Default::default(),
        running: Default::default(),
    }
}

pub(super) async fn call(
    app: &App,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let res = router(app.clone())
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).to_string();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A cluster.yml that validates; its one node does not exist (nothing listens on port 1), so an
/// `up` of it fails at once, and it carries a registry password that must never come back.
pub(super) const CLUSTER_YML: &str = "nodes:
  - address: 127.0.0.1
    port: \"1\"
    user: root
    role: [controlplane, etcd, worker]
private_registries:
  - url: registry.example:5000
    user: rkers
    password: hunter2-registry-secret
";

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_a_valid_token_are_refused() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        for token in [None, Some("wrong-token-0123456789abcdef"), Some("")] {
            let (status, body) = call(&app, "GET", "/v1/clusters", token, "").await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{url} {token:?}: {body}");
            assert!(
                body["error"].as_str().unwrap().contains("bearer token"),
                "{body}"
            );
            let (status, _) = call(&app, "PUT", "/v1/clusters/x", token, CLUSTER_YML).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        // Nothing was registered by the refused PUTs.
        let (status, body) = call(&app, "GET", "/v1/clusters", Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["clusters"], serde_json::json!([]), "{url}");
    }
}

/// Issue 50: a snapshot name that is no plain file name (a path, whitespace, a shell's special
/// character) is a bad request, answered before any operation starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_name_that_is_no_file_name_is_a_bad_request() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let (status, body) = call(&app, "PUT", "/v1/clusters/c", Some(TOKEN), CLUSTER_YML).await;
        assert!(status.is_success(), "{body}");
        for operation in ["snapshot-save", "snapshot-restore"] {
            for name in ["../../etc/x", "a b", "a\tb", "a\nb", "a;b"] {
                let request = serde_json::json!({ "name": name }).to_string();
                let path = format!("/v1/clusters/c/{operation}");
                let (status, body) = call(&app, "POST", &path, Some(TOKEN), &request).await;
                assert_eq!(
                    status,
                    StatusCode::BAD_REQUEST,
                    "{operation} {name:?}: {body}"
                );
                assert!(
                    body["error"]
                        .as_str()
                        .unwrap()
                        .contains("invalid snapshot name"),
                    "{body}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_cluster_yml_is_refused_with_line_and_column() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let yml = "nodes:\n  - address: 10.0.0.1\n    user: root\n    role: [controlplane, etcd, wrker]\n";
        let (status, body) = call(&app, "PUT", "/v1/clusters/bad", Some(TOKEN), yml).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let problem = &body["problems"][0];
        assert_eq!(problem["line"], 4, "{body}");
        assert!(problem["column"].as_u64().unwrap() > 0, "{body}");
        assert!(
            problem["text"]
                .as_str()
                .unwrap()
                .starts_with("bad/cluster.yml:4:"),
            "{body}"
        );
        let (status, body) = call(&app, "PUT", "/v1/clusters/bad", Some(TOKEN), "nodes: [").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["problems"][0]["line"].as_u64().unwrap() > 0, "{body}");
        let (_, list) = call(&app, "GET", "/v1/clusters", Some(TOKEN), "").await;
        assert_eq!(list["clusters"], serde_json::json!([]), "{url}: {list}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn states_are_sealed_and_saved_by_compare_and_swap() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        app.db.put_cluster("c1", "sealed").await.unwrap();
        let a = DbStateStore::new(app.db.clone(), app.secrets.clone(), "c1", Some("op-a"));
        let b = DbStateStore::new(app.db.clone(), app.secrets.clone(), "c1", Some("op-b"));
        let mut state = StateFile::default();
        state.desired_state.rke_config = Some(serde_json::json!({
            "privateRegistries": [{ "password": "hunter2-state-secret" }]
        }));
        let first = a.load().unwrap();
        assert!(first.state.is_none());
        assert_eq!(b.load().unwrap().version, first.version);
        let v1 = a.save(&state, &first.version).unwrap();
        // b loaded before a saved: refused, naming the version it found.
        let err = b.save(&StateFile::default(), &first.version).unwrap_err();
        assert!(
            matches!(&err, StoreError::Conflict { found, .. } if *found == v1),
            "{url}: {err}"
        );
        let v2 = b.save(&state, &b.load().unwrap().version).unwrap();
        assert_ne!(v1, v2);
        // A version this store never gave out is a conflict too, never a blind write.
        assert!(matches!(
            a.save(&state, &StateVersion::new("sha256:00")),
            Err(StoreError::Conflict { .. })
        ));
        let loaded = a.load().unwrap();
        assert_eq!(loaded.version, v2);
        assert_eq!(loaded.state.unwrap(), state);
        // Every version is kept, sealed: the secret is nowhere in the rows.
        let history = app.db.state_history("c1").await.unwrap();
        assert_eq!(
            history.iter().map(|h| h.version).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(history[1].operation.as_deref(), Some("op-b"));
        let (_, sealed) = app.db.latest_state("c1").await.unwrap().unwrap();
        assert!(
            sealed.starts_with("v1:") && !sealed.contains("hunter2"),
            "{sealed}"
        );
        // Another key cannot read it.
        let other = DbStateStore::new(app.db.clone(), SecretBox::new(&[1; 32]), "c1", None);
        let err = other.load().unwrap_err().to_string();
        assert!(err.contains("does not decrypt"), "{err}");
    }
}

/// Two replicas on one database: whichever holds a cluster, a request on either gets 409 with
/// the running operation's id; a lease that expired (its replica died) is taken over.
#[tokio::test(flavor = "multi_thread")]
async fn a_busy_cluster_is_409_with_the_running_operation_on_every_replica() {
    for (url, _keep) in databases().await {
        let a = app(&url, "replica-a").await;
        let b = app(&url, "replica-b").await;
        let (status, body) = call(&a, "PUT", "/v1/clusters/busy", Some(TOKEN), CLUSTER_YML).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(!body.to_string().contains("hunter2"), "{body}");
        // Replica a runs an operation on the cluster.
        assert_eq!(
            a.db.try_lock("busy", "op-a", "replica-a").await.unwrap(),
            db::Lock::Acquired { took_over: None }
        );
        a.db.insert_operation("op-a", "busy", "up", &serde_json::json!({}), "replica-a")
            .await
            .unwrap();
        for replica in [&b, &a] {
            let (status, body) =
                call(replica, "POST", "/v1/clusters/busy/up", Some(TOKEN), "").await;
            assert_eq!(status, StatusCode::CONFLICT, "{url}: {body}");
            assert_eq!(body["operation_id"], "op-a", "{body}");
        }
        // Renewal keeps it; a crashed replica stops renewing and the lease runs out.
        assert!(a.db.renew_lock("busy", "op-a").await.unwrap());
        sqlx::query("UPDATE cluster_locks SET expires_at = 0")
            .execute(&a.db.pool)
            .await
            .unwrap();
        let (status, body) = call(&b, "POST", "/v1/clusters/busy/up", Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::ACCEPTED, "{url}: {body}");
        let new_op = body["operation_id"].as_str().unwrap().to_string();
        assert!(!a.db.renew_lock("busy", "op-a").await.unwrap());
        let dead = a.db.operation("op-a").await.unwrap().unwrap();
        assert_eq!(dead.status, "failed");
        assert!(dead.error.unwrap().contains("stopped renewing"));

        // The new operation streams from the other replica until its result event.
        let events = stream_events(&a, &new_op).await;
        let result = events.last().unwrap();
        assert_eq!(result.0, "result", "{events:?}");
        assert!(!format!("{events:?}").contains("hunter2"), "{events:?}");
        let (_, op) = call(
            &a,
            "GET",
            &format!("/v1/operations/{new_op}"),
            Some(TOKEN),
            "",
        )
        .await;
        assert_ne!(op["status"], "running", "{op}");
        assert_eq!(op["replica"], "replica-b", "{op}");
        assert_eq!(
            op["exit_code"].as_i64(),
            serde_json::from_str::<Value>(&result.1).unwrap()["exit_code"].as_i64(),
            "{op} {result:?}"
        );
        // Ended: the lock is free again, and cancelling now is refused.
        let (status, _) = call(
            &a,
            "POST",
            &format!("/v1/operations/{new_op}/cancel"),
            Some(TOKEN),
            "",
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        let (_, list) = call(&b, "GET", "/v1/clusters", Some(TOKEN), "").await;
        assert_eq!(
            list["clusters"][0]["last_operation"]["id"],
            new_op.as_str(),
            "{list}"
        );
        let (status, body) = call(&a, "POST", "/v1/clusters/busy/remove", Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        stream_events(&b, body["operation_id"].as_str().unwrap()).await;
    }
}

/// The SSE stream of an operation: (event name, data) until the stream ends.
async fn stream_events(app: &App, id: &str) -> Vec<(String, String)> {
    let req = Request::get(format!("/v1/operations/{id}/events"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let res = router(app.clone()).oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let mut body = res.into_body();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    while let Ok(Some(frame)) = tokio::time::timeout_at(deadline, body.frame()).await {
        if let Ok(data) = frame.unwrap().into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        if let (Some(event), Some(data)) = (field("event:"), field("data:")) {
            out.push((event, data));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_puts_of_a_new_cluster_report_created_once() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let puts = (0..16).map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                call(&app, "PUT", "/v1/clusters/raced", Some(TOKEN), CLUSTER_YML).await
            })
        });
        let answers = futures::future::join_all(puts).await;
        let mut created = 0;
        for answer in answers {
            let (status, body) = answer.unwrap();
            assert!(status.is_success(), "{url}: {status} {body}");
            if body["created"] == true {
                assert_eq!(status, StatusCode::CREATED, "{body}");
                created += 1;
            } else {
                assert_eq!(status, StatusCode::OK, "{body}");
            }
        }
        assert_eq!(created, 1, "{url}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_error_is_json_and_dot_names_are_refused() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        // The scheme in any case.
        for scheme in ["bearer", "BEARER", "Bearer"] {
            let req = Request::get("/v1/clusters")
                .header("authorization", format!("{scheme} {TOKEN}"))
                .body(Body::empty())
                .unwrap();
            let res = router(app.clone()).oneshot(req).await.unwrap();
            assert_eq!(res.status(), StatusCode::OK, "{scheme}");
        }
        for (method, path) in [
            ("GET", "/nowhere"),
            ("DELETE", "/v1/clusters/x"),
            ("GET", "/v1/operations"),
            ("PUT", "/v1/clusters/."),
            ("PUT", "/v1/clusters/.."),
            ("PUT", "/v1/clusters/%2E%2E"),
        ] {
            let (status, body) = call(&app, method, path, Some(TOKEN), CLUSTER_YML).await;
            assert!(status.is_client_error(), "{method} {path}: {status}");
            assert!(body["error"].is_string(), "{method} {path}: {body}");
        }
        // A body that is not UTF-8: axum's own rejection, as JSON.
        let req = Request::put("/v1/clusters/x")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::from(vec![0xff, 0xfe, 0x00]))
            .unwrap();
        let res = router(app.clone()).oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            res.headers()["content-type"].to_str().unwrap(),
            "application/json"
        );
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(body["error"].as_str().unwrap().contains("UTF-8"), "{body}");
        let (_, list) = call(&app, "GET", "/v1/clusters", Some(TOKEN), "").await;
        assert_eq!(list["clusters"], serde_json::json!([]), "{url}: {list}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn healthz_fails_when_the_database_cannot_be_used() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let (status, body) = call(&app, "GET", "/healthz", None, "").await;
        assert_eq!(status, StatusCode::OK, "{url}: {body}");
        app.db.pool.close().await;
        let (status, body) = call(&app, "GET", "/healthz", None, "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {body}");
        assert!(body["error"].as_str().unwrap().contains("health"), "{body}");
    }
    // A database another process holds locked for writing: readable maybe, not writable.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.db");
    let app = app(&format!("sqlite://{}", path.display()), "a").await;
    use sqlx::Connection;
    let mut holder = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut holder)
        .await
        .unwrap();
    let (status, body) = call(&app, "GET", "/healthz", None, "").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sqlite_database_is_private_and_a_refused_server_is_named_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/dir/serve.db");
    Db::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);

    // Nothing listens on port 1: the cause comes back at once, without the password.
    let started = std::time::Instant::now();
    let err = Db::connect("postgres://rkers:pg-secret-pw@127.0.0.1:1/rkers?password=other-pw")
        .await
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{err}"
    );
    assert!(err.contains("refused"), "{err}");
    assert!(
        !err.contains("pg-secret-pw") && !err.contains("other-pw") && !err.contains("rkers:"),
        "{err}"
    );
}

/// Issue 50: a `--database` without a scheme was quoted whole in the error, password and all.
#[tokio::test(flavor = "multi_thread")]
async fn a_database_url_without_a_scheme_is_refused_without_its_password() {
    let err = Db::connect("bob:pw-secret@db.example/rkers")
        .await
        .err()
        .expect("a URL without a scheme is refused")
        .to_string();
    assert!(err.contains("bob:[REDACTED]@db.example/rkers"), "{err}");
    assert!(!err.contains("pw-secret"), "{err}");
}

#[test]
fn database_urls_are_shown_without_secrets() {
    for (url, shown) in [
        (
            "postgres://rkers:pw@db.example:5432/rkers",
            "postgres://db.example:5432/rkers",
        ),
        (
            "postgres://rkers@db.example/rkers",
            "postgres://db.example/rkers",
        ),
        (
            "postgres://db.example/rkers?user=rkers&password=pw&sslmode=require",
            "postgres://db.example/rkers?user=rkers&password=***&sslmode=require",
        ),
        (
            "sqlite:///var/lib/rkers/serve.db",
            "sqlite:///var/lib/rkers/serve.db",
        ),
        (
            "sqlite://a@b/serve.db?mode=rwc",
            "sqlite://b/serve.db?mode=rwc",
        ),
        // Issue 50: without a scheme (sqlx refuses it), the password was shown whole.
        (
            "bob:pw-secret@db.example/rkers",
            "bob:[REDACTED]@db.example/rkers",
        ),
    ] {
        assert_eq!(db::shown_url(url), shown, "{url}");
    }
}

/// Defect: an operation whose replica was killed stayed "running" for ever (until another
/// operation took its cluster over) and its event stream never ended. The sweep every replica
/// runs ends it once its lease expired: `interrupted`, lock gone, a result event; an operation
/// whose replica still renews its lease is left alone. A stopping server starts nothing (503).
#[tokio::test(flavor = "multi_thread")]
async fn an_operation_whose_replica_died_is_ended_with_a_result() {
    for (url, _keep) in databases().await {
        let a = app(&url, "replica-a").await;
        let (status, body) = call(&a, "PUT", "/v1/clusters/gone", Some(TOKEN), CLUSTER_YML).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = call(&a, "PUT", "/v1/clusters/live", Some(TOKEN), CLUSTER_YML).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        for (cluster, op) in [("gone", "op-gone"), ("live", "op-live")] {
            a.db.try_lock(cluster, op, "replica-x").await.unwrap();
            a.db.insert_operation(op, cluster, "up", &serde_json::json!({}), "replica-x")
                .await
                .unwrap();
            a.db.insert_event(op, 1, r#"{"status":"started","phase":"connect"}"#)
                .await
                .unwrap();
        }
        sqlx::query("UPDATE cluster_locks SET expires_at = 0 WHERE operation = 'op-gone'")
            .execute(&a.db.pool)
            .await
            .unwrap();
        ops::sweep_orphans(&a).await;
        let gone = a.db.operation("op-gone").await.unwrap().unwrap();
        assert_eq!(gone.status, "interrupted", "{url}");
        assert_eq!(gone.exit_code, Some(130));
        assert!(gone.error.unwrap().contains("replica-x stopped renewing"));
        assert_eq!(
            a.db.operation("op-live").await.unwrap().unwrap().status,
            "running",
            "{url}: a live lease is left alone"
        );
        let events = stream_events(&a, "op-gone").await;
        let (name, data) = events.last().unwrap();
        assert_eq!(name, "result", "{events:?}");
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["status"], "interrupted", "{data}");
        // The cluster is free again.
        assert_eq!(
            a.db.try_lock("gone", "op-next", "replica-a").await.unwrap(),
            db::Lock::Acquired { took_over: None }
        );
        a.db.release_lock("gone", "op-next").await.unwrap();

        let cancelled = a.running.close();
        assert!(cancelled.is_empty());
        let (status, body) = call(&a, "POST", "/v1/clusters/gone/up", Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("stopping"),
            "{body}"
        );
    }
}

/// `POST /v1/clusters/{name}/rollback` is an operation like `up`: behind the token, its options
/// checked, refused with 409 while another operation holds the cluster, recorded with its
/// options, and ending with the library's refusal when the cluster has no state yet.
#[tokio::test(flavor = "multi_thread")]
async fn rollback_is_an_operation_behind_the_token_and_the_lease() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let path = "/v1/clusters/back/rollback";
        let (status, _) = call(&app, "POST", path, None, "").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{url}");
        let (status, body) = call(&app, "POST", path, Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{url}: {body}");
        let (status, _) = call(&app, "PUT", "/v1/clusters/back", Some(TOKEN), CLUSTER_YML).await;
        assert_eq!(status, StatusCode::CREATED);
        for bad in [
            r#"{"dry_run": true, "force": true}"#,
            r#"{"dry_run": "yes"}"#,
        ] {
            let (status, body) = call(&app, "POST", path, Some(TOKEN), bad).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{url} {bad}: {body}");
            assert!(
                body["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("the options of `rollback`"),
                "{body}"
            );
        }

        // Another operation holds the cluster.
        app.db.try_lock("back", "op-up", "a").await.unwrap();
        let (status, body) = call(&app, "POST", path, Some(TOKEN), "").await;
        assert_eq!(status, StatusCode::CONFLICT, "{url}: {body}");
        assert_eq!(body["operation_id"], "op-up", "{body}");
        app.db.release_lock("back", "op-up").await.unwrap();

        let options = r#"{"dry_run": true, "restore_snapshot": false}"#;
        let (status, body) = call(&app, "POST", path, Some(TOKEN), options).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{url}: {body}");
        let id = body["operation_id"].as_str().unwrap().to_string();
        let events = stream_events(&app, &id).await;
        let (name, data) = events.last().unwrap();
        assert_eq!(name, "result", "{events:?}");
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["exit_code"], 1, "{data}");
        assert!(
            data["error"]
                .as_str()
                .unwrap()
                .contains("the cluster was never brought up"),
            "{data}"
        );
        // Issue 50: the server keeps no state file next to a config.
        assert!(
            !data["error"].as_str().unwrap().contains("next to"),
            "{data}"
        );
        let op = app.db.operation(&id).await.unwrap().unwrap();
        assert_eq!(
            (op.kind.as_str(), op.status.as_str()),
            ("rollback", "failed")
        );
        assert_eq!(op.params["dry_run"], true, "{}", op.params);
        // Ended: the cluster is free for the next operation.
        assert_eq!(
            app.db.try_lock("back", "op-next", "a").await.unwrap(),
            db::Lock::Acquired { took_over: None }
        );
    }
}
