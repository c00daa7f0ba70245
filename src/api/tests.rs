//! The API's behaviour that needs no host: config errors, the one `result` event, the
//! compare-and-swap save of what a run leaves.

use super::run::*;
use super::*;
use crate::cluster::Cluster;
use crate::config;
use crate::output::Reporter;
use crate::state::{ClusterFiles, StateFile};
use rkers_core::bounded::{KUBECONFIG, STATE};
use std::path::Path;
use std::sync::Mutex;

fn collecting() -> (EventSink, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = events.clone();
    let sink: EventSink = Arc::new(move |e| sink_events.lock().unwrap().push(e));
    (sink, events)
}

fn results(events: &Mutex<Vec<Event>>) -> Vec<Event> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.event == Some("result"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn invalid_yaml_names_line_and_column_and_ends_with_one_result() {
    let (sink, events) = collecting();
    let store = Arc::new(MemoryStateStore::new(None));
    let op = Operation::new(
        ClusterInput::Yaml("nodes:\n  - address: 10.0.0.1\n    role: [etcd\n".into()),
        store.clone(),
    )
    .with_events(sink);
    let err = up(&op, UpRequest::default()).await.unwrap_err();
    let ApiError::InvalidConfig(message) = &err else {
        panic!("expected InvalidConfig, got {err:?}");
    };
    assert!(
        regex_lite_match(message),
        "no cluster.yml:LINE:COLUMN in {message:?}"
    );
    assert_eq!(err.exit_code(), 2);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].exit_code, Some(2));
    assert_eq!(results[0].status, Status::Failed);
    // Nothing was saved.
    assert_eq!(store.load().unwrap().version, StateVersion::absent());
}

/// `cluster.yml:<digits>:<digits>` somewhere in the text.
fn regex_lite_match(text: &str) -> bool {
    text.match_indices("cluster.yml:").any(|(i, m)| {
        let rest = &text[i + m.len()..];
        let mut parts = rest.splitn(3, ':');
        let line = parts.next().unwrap_or("");
        let column: String = parts
            .next()
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        !line.is_empty() && line.chars().all(|c| c.is_ascii_digit()) && !column.is_empty()
    })
}

#[tokio::test]
async fn a_config_that_fails_validation_is_invalid_config() {
    let (sink, events) = collecting();
    let op = Operation::new(
        ClusterInput::Config(Box::default()),
        Arc::new(MemoryStateStore::new(None)),
    )
    .with_events(sink);
    let err = plan(&op).await.unwrap_err();
    assert!(matches!(err, ApiError::InvalidConfig(_)), "{err:?}");
    assert_eq!(results(&events).len(), 1);
}

#[tokio::test]
async fn an_unknown_service_to_rotate_is_refused_before_anything_runs() {
    let (sink, events) = collecting();
    let op = Operation::new(
        ClusterInput::Yaml(VALID.into()),
        Arc::new(MemoryStateStore::new(None)),
    )
    .with_events(sink);
    let req = CertRotateRequest {
        services: vec!["kube-dns".into()],
        ..Default::default()
    };
    let err = cert_rotate(&op, req).await.unwrap_err();
    assert!(err.to_string().contains("kube-dns"), "{err}");
    assert_eq!(results(&events)[0].exit_code, Some(2));
}

#[tokio::test]
async fn a_cancelled_token_stops_before_anything_runs() {
    let (sink, events) = collecting();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let op = Operation::new(
        ClusterInput::Yaml(VALID.into()),
        Arc::new(MemoryStateStore::new(None)),
    )
    .with_cancel(cancel)
    .with_events(sink);
    let err = up(&op, UpRequest::default()).await.unwrap_err();
    assert!(matches!(err, ApiError::Cancelled), "{err:?}");
    let results = results(&events);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].exit_code, Some(130));
    assert_eq!(results[0].status, Status::Interrupted);
}

const VALID: &str = "nodes:\n  - address: 192.0.2.10\n    user: rke\n    role: [etcd, controlplane, worker]\n    ssh_key: \"not a key\"\n";

/// A state the run wrote is saved over the version it loaded; when another writer saved in
/// between, the save is refused with a conflict and the other writer's state stays.
#[test]
fn what_a_run_leaves_is_saved_by_compare_and_swap() {
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let store = Arc::new(MemoryStateStore::new(None));
    let op = Operation::new(ClusterInput::Yaml(VALID.into()), store.clone());

    // A run whose phase wrote a state: saved, the version moves on.
    let run = Run::prepare(&op, &reporter).unwrap();
    let mut written = StateFile::default();
    written.desired_state.rke_config = Some(serde_json::json!({ "clusterName": "a" }));
    let files = &run.cluster.files;
    written.save_to(&files.storage, &files.state_path).unwrap();
    let (outcome, ()) = run.finish(&op, Ok(())).unwrap();
    assert_ne!(outcome.state_version, StateVersion::absent());
    assert_eq!(store.load().unwrap().version, outcome.state_version);
    assert!(outcome.kubeconfig.is_none());

    // The next run is seeded with it, in memory only (the state holds every private key); a
    // run that changes nothing saves nothing.
    let run = Run::prepare(&op, &reporter).unwrap();
    let files = &run.cluster.files;
    assert!(files.storage.read(&files.state_path, STATE).is_ok());
    assert!(
        !files.state_path.exists(),
        "the state was written to {}",
        files.state_path.display()
    );
    let (same, ()) = run.finish(&op, Ok(())).unwrap();
    assert_eq!(same.state_version, outcome.state_version);

    // Another writer saves while a run is under way: the run's save is a conflict.
    let run = Run::prepare(&op, &reporter).unwrap();
    let mut theirs = written.clone();
    theirs.desired_state.rke_config = Some(serde_json::json!({ "clusterName": "theirs" }));
    let their_version = store.save(&theirs, &outcome.state_version).unwrap();
    let mut ours = written.clone();
    ours.desired_state.rke_config = Some(serde_json::json!({ "clusterName": "ours" }));
    let files = &run.cluster.files;
    ours.save_to(&files.storage, &files.state_path).unwrap();
    let err = run.finish(&op, Ok(())).unwrap_err();
    assert!(
        matches!(err, ApiError::Store(StoreError::Conflict { .. })),
        "{err:?}"
    );
    let stored = store.load().unwrap();
    assert_eq!(stored.version, their_version);
    assert_eq!(
        stored.state.unwrap().desired_state.rke_config,
        theirs.desired_state.rke_config
    );
}

/// The state (it holds every private key) and the admin kubeconfig never touch the disk: the
/// run is seeded with them in memory, its scratch directory holds neither, and the kubeconfig
/// the run leaves comes back in the outcome. They were written in the scratch directory in
/// plain text, where a killed server left them.
#[test]
fn the_state_and_the_kubeconfig_stay_in_memory() {
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let key =
        "-----BEGIN RSA PRIVATE KEY-----\nkube-admin-key-1c9f\n-----END RSA PRIVATE KEY-----\n";
    let kubeconfig = format!("apiVersion: v1\nkind: Config\n# client-key-data for {key}");
    let mut state = StateFile::default();
    state.desired_state.rke_config = Some(serde_json::json!({ "clusterName": "a" }));
    let admin = crate::pki::CertificatePki {
        key_pem: key.into(),
        config: kubeconfig.clone(),
        ..Default::default()
    };
    state
        .current_state
        .certificates_bundle
        .insert("kube-admin".into(), admin);
    let store = Arc::new(MemoryStateStore::new(Some(state)));
    let scratch_parent = tempfile::tempdir().unwrap();
    let op = Operation::new(ClusterInput::Yaml(VALID.into()), store.clone())
        .with_scratch_parent(scratch_parent.path());

    let run = Run::prepare(&op, &reporter).unwrap();
    let files = &run.cluster.files;
    let seeded = files
        .storage
        .read_to_string(&files.state_path, STATE)
        .unwrap();
    assert!(seeded.contains("kube-admin-key-1c9f"), "{seeded}");
    assert_eq!(
        files
            .storage
            .read_to_string(&files.kubeconfig_path, KUBECONFIG)
            .unwrap(),
        kubeconfig
    );
    // Nothing on disk holds the key: every file under the scratch parent is read.
    let mut on_disk = Vec::new();
    let mut dirs = vec![scratch_parent.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                assert!(
                    !text.contains("kube-admin-key-1c9f"),
                    "{} holds the private key",
                    path.display()
                );
                on_disk.push(path);
            }
        }
    }
    assert!(
        !on_disk.contains(&files.state_path) && !on_disk.contains(&files.kubeconfig_path),
        "{on_disk:?}"
    );

    let (outcome, ()) = run.finish(&op, Ok(())).unwrap();
    assert_eq!(outcome.kubeconfig.as_deref(), Some(kubeconfig.as_str()));
}

/// A state file the run left that cannot be read whole is never saved over the stored one.
#[test]
fn an_unreadable_state_is_not_saved() {
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let store = Arc::new(MemoryStateStore::new(None));
    let op = Operation::new(ClusterInput::Yaml(VALID.into()), store.clone());
    let run = Run::prepare(&op, &reporter).unwrap();
    let files = &run.cluster.files;
    files
        .storage
        .write_private(&files.state_path, b"{\"half\": ")
        .unwrap();
    let err = run.finish(&op, Ok(())).unwrap_err();
    assert!(matches!(err, ApiError::Store(_)), "{err:?}");
    assert_eq!(store.load().unwrap().version, StateVersion::absent());
}

/// `remove` deletes the state: the store is left without one.
#[test]
fn a_state_the_run_removed_is_deleted_from_the_store() {
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let mut state = StateFile::default();
    state.desired_state.rke_config = Some(serde_json::json!({ "clusterName": "a" }));
    let store = Arc::new(MemoryStateStore::new(Some(state)));
    let op = Operation::new(ClusterInput::Yaml(VALID.into()), store.clone());
    let before = store.load().unwrap().version;
    let run = Run::prepare(&op, &reporter).unwrap();
    let dir = run.cluster.files.state_path.parent().unwrap().to_path_buf();
    let files = &run.cluster.files;
    files.storage.remove(&files.state_path).unwrap();
    let (outcome, ()) = run.finish(&op, Ok(())).unwrap();
    assert_ne!(outcome.state_version, before);
    assert!(store.load().unwrap().state.is_none());
    // The scratch directory (it held the private keys) is gone.
    assert!(
        !dir.exists(),
        "{} still has {:?}",
        dir.display(),
        std::fs::read_dir(&dir).map(|d| d.map(|e| e.unwrap().file_name()).collect::<Vec<_>>())
    );
}

/// Each operation masks the secrets of its own config in its events and its error; nothing is
/// registered process-wide, so the command line's redactor does not grow with every operation.
#[tokio::test]
async fn secrets_are_masked_per_operation() {
    let password = "registry-pass-4f9e1c";
    let yaml = format!(
        "nodes:\n  - address: 192.0.2.10\n    user: rke\n    role: [etcd, controlplane, worker]\n\
         private_registries:\n  - url: r.example\n    user: u\n    password: {password}\n\
         kubernetes_version: v0.0.1-nonexistent\n"
    );
    let (sink, events) = collecting();
    let op = Operation::new(
        ClusterInput::Yaml(yaml),
        Arc::new(MemoryStateStore::new(None)),
    )
    .with_events(sink);
    let _ = plan(&op).await;
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let run_reporter = Reporter::with_sink(Arc::new(|_| {}));
    let _ = Cluster::from_loaded(
        config::load_str(
            &format!(
                "nodes:\n  - address: 192.0.2.10\n    user: rke\n    role: [etcd]\n\
                 private_registries:\n  - url: r.example\n    password: {password}\n"
            ),
            CONFIG_NAME,
        )
        .unwrap(),
        Catalog::embedded().clone(),
        ClusterFiles::from_config_path(Path::new("/nonexistent/cluster.yml")),
        &run_reporter,
    );
    let text = format!("login with {password} failed");
    assert_eq!(
        run_reporter.redactor().redact(&text),
        "login with [REDACTED] failed"
    );
    // Another operation's reporter, and the process's, know nothing of it.
    assert_eq!(reporter.redactor().redact(&text), text);
    assert_eq!(crate::output::redact(&text), text);
    for e in events.lock().unwrap().iter() {
        let json = serde_json::to_string(e).unwrap();
        assert!(!json.contains(password), "{json}");
    }
}

/// A server spawns operations on its runtime: their futures must be `Send`.
#[test]
fn operations_can_be_spawned() {
    fn send<F: std::future::Future + Send>(_: &F) {}
    fn spawnable<T: Send + Sync + 'static>(_: &T) {}
    let op = Operation::new(
        ClusterInput::Yaml(String::new()),
        Arc::new(MemoryStateStore::new(None)),
    );
    send(&up(&op, UpRequest::default()));
    send(&plan(&op));
    send(&remove(&op, RemoveRequest::default()));
    send(&cert_rotate(&op, CertRotateRequest::default()));
    send(&snapshot_save(&op, "a"));
    send(&snapshot_restore(&op, "a"));
    send(&rollback(&op, RollbackRequest::default()));
    spawnable(&op);
}

/// Issue 16: an operation's failure on a host ends with the same `result` event as the
/// command line's: the host, the causes, and the error the caller gets back.
#[tokio::test]
async fn a_failure_on_a_host_names_it_in_the_result_event() {
    let (sink, events) = collecting();
    let op = Operation::new(
        ClusterInput::Yaml(
            "nodes:\n  - address: 127.0.0.1\n    port: \"1\"\n    user: root\n    role: [controlplane, etcd, worker]\n"
                .into(),
        ),
        Arc::new(MemoryStateStore::new(None)),
    )
    .with_events(sink);
    let err = up(&op, UpRequest::default()).await.unwrap_err();
    assert!(matches!(err, ApiError::Failed(_)), "{err:?}");
    assert_eq!(err.exit_code(), 1);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].host.as_deref(), Some("127.0.0.1"), "{results:?}");
    assert_eq!(results[0].error, Some(err.to_string()));
    let cause = results[0].cause.clone().unwrap_or_default();
    assert!(
        cause
            .first()
            .is_some_and(|c| c.starts_with("host 127.0.0.1: ")),
        "{results:?}"
    );
}
