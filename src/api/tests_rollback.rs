//! [`rollback`] without hosts: its refusals are typed and leave the store alone, and its dry run
//! goes to the hosts of the config the state recorded, not the operation's, saving nothing.

use super::run::*;
use super::*;
use crate::output::Reporter;
use crate::state::{ClusterFiles, StateFile};
use crate::{config, phases};
use std::sync::Mutex;

/// The config the previous run applied: one host nothing listens on (port 1), so a run that
/// reaches it fails at once, naming it.
const RECORDED: &str = "nodes:\n  - address: 127.0.0.1\n    port: \"1\"\n    user: root\n    role: [controlplane, etcd, worker]\nservices:\n  kube-api:\n    extra_args:\n      audit-log-maxage: \"7\"\n";
/// The operation's cluster.yml: another host (also refusing), and the flag changed.
const CURRENT: &str = "nodes:\n  - address: 127.0.0.2\n    port: \"1\"\n    user: root\n    role: [controlplane, etcd, worker]\nservices:\n  kube-api:\n    extra_args:\n      audit-log-maxage: \"9\"\n";

fn defaulted(yaml: &str) -> serde_json::Value {
    let mut config = config::load_str(yaml, CONFIG_NAME).unwrap().config;
    config::apply_defaults(&mut config, Catalog::embedded());
    config.to_state_json()
}

/// The state after a successful `up` from [`RECORDED`] to [`CURRENT`], the previous run kept
/// when `with_previous`.
fn state_after_a_change(with_previous: bool) -> StateFile {
    let mut state = StateFile::default();
    state.current_state.rke_config = Some(defaulted(CURRENT));
    state.desired_state.rke_config = Some(defaulted(CURRENT));
    if with_previous {
        state.extra.insert(
            crate::state::PREVIOUS_KEY.into(),
            serde_json::json!({ "rkeConfig": defaulted(RECORDED) }),
        );
    }
    state
}

fn operation(store: Arc<MemoryStateStore>) -> (Operation, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let into = events.clone();
    let op = Operation::new(ClusterInput::Yaml(CURRENT.into()), store)
        .with_events(Arc::new(move |e| into.lock().unwrap().push(e)));
    (op, events)
}

fn result_events(events: &Mutex<Vec<Event>>) -> Vec<Event> {
    let events = events.lock().unwrap();
    events
        .iter()
        .filter(|e| e.event == Some("result"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn without_a_previous_run_the_rollback_is_refused_and_says_so() {
    let store = Arc::new(MemoryStateStore::new(Some(state_after_a_change(false))));
    let before = store.load().unwrap().version;
    let (op, events) = operation(store.clone());
    for dry_run in [true, false] {
        let req = RollbackRequest {
            dry_run,
            ..Default::default()
        };
        let err = rollback(&op, req).await.unwrap_err();
        assert!(
            matches!(err, ApiError::Refused(RollbackRefused::NoPrevious)),
            "{err:?}"
        );
        assert!(err.to_string().contains("records no previous run"), "{err}");
        assert_eq!(err.exit_code(), 1);
    }
    let results = result_events(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| r.exit_code == Some(1) && r.status == Status::Failed),
        "{results:?}"
    );
    assert_eq!(store.load().unwrap().version, before);
    // No hosts were reached: nothing names one.
    for e in events.lock().unwrap().iter() {
        assert!(e.host.is_none(), "{e:?}");
    }
}

#[tokio::test]
async fn without_a_state_there_is_nothing_to_roll_back() {
    let (op, _) = operation(Arc::new(MemoryStateStore::new(None)));
    let err = rollback(&op, RollbackRequest::default()).await.unwrap_err();
    assert!(
        matches!(err, ApiError::Refused(RollbackRefused::NoState)),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_dry_run_goes_to_the_recorded_config_and_saves_nothing() {
    let store = Arc::new(MemoryStateStore::new(Some(state_after_a_change(true))));
    let before = store.load().unwrap().version;
    let (op, events) = operation(store.clone());
    let req = RollbackRequest {
        dry_run: true,
        ..Default::default()
    };
    let err = rollback(&op, req).await.unwrap_err();
    assert!(matches!(err, ApiError::Failed(_)), "{err:?}");
    let results = result_events(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    // The host of the recorded config, not the operation's 127.0.0.2.
    assert_eq!(results[0].host.as_deref(), Some("127.0.0.1"), "{results:?}");
    let said: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| e.message.clone())
        .collect();
    assert!(
        said.iter()
            .any(|m| m
                .starts_with("Rolling back to the config the previous successful run replaced")),
        "{said:?}"
    );
    assert_eq!(store.load().unwrap().version, before);
}

/// The keys where `current` (a cluster.yml) differs from the config `state`'s rollback goes
/// back to, as the rollback reports them.
fn keys_differing(state: &StateFile, current: &str) -> Vec<String> {
    let reporter = Reporter::with_sink(Arc::new(|_| {}));
    let dir = tempfile::tempdir().unwrap();
    let prepared = phases::rollback::prepare(
        Some(state),
        false,
        ClusterFiles::from_config_path(&dir.path().join(CONFIG_NAME)),
        Catalog::embedded().clone(),
        CONFIG_STATE_NAME,
        &reporter,
    )
    .unwrap();
    let current = config::load_str(current, CONFIG_NAME).unwrap().config;
    phases::rollback::cluster_yml_differences(Ok(current), &prepared.cluster)
        .unwrap()
        .into_iter()
        .map(|d| d.key)
        .collect()
}

/// The comparison the rollback reports: the operation's cluster.yml, defaulted, against the
/// recorded config.
#[test]
fn the_keys_that_differ_are_those_of_the_operations_cluster_yml() {
    let keys = keys_differing(&state_after_a_change(true), CURRENT);
    // The node's name and internal address default to its address, on both sides.
    assert_eq!(
        keys,
        [
            "nodes[0].address",
            "nodes[0].hostname_override",
            "nodes[0].internal_address",
            "services.kube-api.extra_args.audit-log-maxage"
        ],
        "{keys:?}"
    );
}

/// What cluster.yml leaves to the state (`network.enable_br_netfilter`, settled by `up` and
/// written to the state) is no difference: the next `up` settles it from the rolled-back config
/// the same way. Set in cluster.yml to another value, it is one.
#[test]
fn a_key_the_state_settles_differs_only_when_cluster_yml_sets_it_otherwise() {
    let differing = |recorded: bool, current: &str| -> Vec<String> {
        let mut state = state_after_a_change(false);
        let mut back = config::load_str(RECORDED, CONFIG_NAME).unwrap().config;
        config::apply_defaults(&mut back, Catalog::embedded());
        back.network.enable_br_netfilter = Some(recorded);
        state.extra.insert(
            crate::state::PREVIOUS_KEY.into(),
            serde_json::json!({ "rkeConfig": back.to_state_json() }),
        );
        keys_differing(&state, current)
    };
    for recorded in [true, false] {
        assert_eq!(
            differing(recorded, RECORDED),
            Vec::<String>::new(),
            "{recorded}"
        );
    }
    let set_off = format!("{RECORDED}network:\n  enable_br_netfilter: false\n");
    assert_eq!(differing(true, &set_off), ["network.enable_br_netfilter"]);
    assert_eq!(differing(false, &set_off), Vec::<String>::new());
}
