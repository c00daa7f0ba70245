//! The library API end to end, in one process: two 1-host clusters on two sandbox instances
//! brought up concurrently through `rkers::api::up`, each with its own in-memory state store and
//! event sink; a kube-apiserver flag changed on B and rolled back through `rkers::api::rollback`;
//! then an `up` cancelled midway, whose state still loads and a later `up` converges.
//!
//! The two instances are given as environment variables, each holding the environment
//! scripts/sandbox reads for that instance, as `KEY=VALUE` words:
//!
//! ```text
//! RKERS_API_E2E_A="SANDBOX_INSTANCE=s RKERS_SANDBOX_DIR=/var/lib/rkers-sandbox-s SANDBOX_BRIDGE=rkbrs \
//!   SANDBOX_SUBNET_PREFIX=10.77.7 SANDBOX_POD_PREFIX=10.71 SANDBOX_REGISTRY_LOCAL=127.0.0.1:5007 \
//!   SANDBOX_REGISTRY_STORAGE=/var/lib/rkers-sandbox/registry/storage"
//! RKERS_API_E2E_B="SANDBOX_INSTANCE=q ... (another instance)"
//! ```
//!
//! `RKERS_SANDBOX_SCRIPT` among the words (or in the test's environment) names the sandbox
//! script; the repository's by default. Skips, saying so, when either variable is unset or the
//! test is not root.

mod support;

use rkers::api::{
    self, ApiError, CancellationToken, ClusterInput, Event, EventSink, MemoryStateStore, Operation,
    RemoveRequest, RollbackRequest, SshTransport, StateStore, StateVersion, Status, UpRequest,
};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One sandbox instance with one host, and the cluster.yml it wrote.
struct Instance {
    host: support::docker_host::Instance,
    cluster_yml: String,
    address: String,
}

impl Instance {
    fn from_var(var: &str) -> Result<Instance, String> {
        let words = std::env::var(var).map_err(|_| format!("{var} is not set"))?;
        let host = support::docker_host::Instance::from_words(&words)
            .map_err(|e| format!("{var}: {e}"))?;
        // Fresh hosts: a cluster an earlier run left there would be refused as foreign.
        host.sandbox(&["down", "--purge"]);
        let out = host.sandbox(&["up", "--hosts", "1", "--roles", "default"]);
        let path = PathBuf::from(out.lines().last().unwrap_or_default().trim());
        let cluster_yml = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (sandbox output: {out})", path.display()))?;
        let address = support::Sandbox {
            dir: host.dir.clone(),
            cluster_yml: cluster_yml.clone(),
        }
        .node_addresses()
        .first()
        .cloned()
        .ok_or("the sandbox's cluster.yml has no node")?;
        Ok(Instance {
            host,
            cluster_yml,
            address,
        })
    }

    fn sandbox(&self, args: &[&str]) -> String {
        self.host.sandbox(args)
    }

    /// An operation on this instance's cluster, its events collected.
    fn operation(&self, store: Arc<MemoryStateStore>) -> (Operation, Arc<Mutex<Vec<Event>>>) {
        self.operation_on(ClusterInput::Yaml(self.cluster_yml.clone()), store)
    }

    /// An operation with another cluster.yml.
    fn operation_on(
        &self,
        cluster: ClusterInput,
        store: Arc<MemoryStateStore>,
    ) -> (Operation, Arc<Mutex<Vec<Event>>>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let into = events.clone();
        let sink: EventSink = Arc::new(move |e| into.lock().unwrap().push(e));
        // The sandbox records its hosts' keys there on every `up`.
        let transport = SshTransport {
            known_hosts: Some(self.host.dir.join("ssh/known_hosts")),
            strict_host_keys: false,
        };
        let op = Operation::new(cluster, store)
            .with_transport(Arc::new(transport))
            .with_events(sink);
        (op, events)
    }
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

fn has_ca(store: &MemoryStateStore) -> bool {
    let loaded = store.load().expect("the state loads");
    loaded
        .state
        .is_some_and(|s| s.current_state.certificates_bundle.contains_key("kube-ca"))
}

/// The events name this instance's host and never the other's.
fn assert_own_events(label: &str, events: &Mutex<Vec<Event>>, own: &str, other: &str) {
    let events = events.lock().unwrap();
    let text: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert!(
        text.iter().any(|t| t.contains(own)),
        "{label}: no event names its host {own}"
    );
    assert!(
        !text.iter().any(|t| t.contains(other)),
        "{label}: an event names the other cluster's host {other}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clusters_in_one_process_and_a_cancelled_up() {
    if !support::is_root() {
        support::skip("needs root (the sandbox runs as root)");
        return;
    }
    let (a, b) = match (
        Instance::from_var("RKERS_API_E2E_A"),
        Instance::from_var("RKERS_API_E2E_B"),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            support::skip(&format!(
                "{e}: set RKERS_API_E2E_A and RKERS_API_E2E_B to two sandbox instances' \
                 environments (see the top of tests/e2e_api.rs)"
            ));
            return;
        }
    };
    assert_ne!(a.address, b.address, "the two instances share an address");

    // Leftovers of an earlier run go first: `remove` works from the config alone.
    let (clean_a, _) = a.operation(Arc::new(MemoryStateStore::new(None)));
    let (clean_b, _) = b.operation(Arc::new(MemoryStateStore::new(None)));
    let (ra, rb) = tokio::join!(
        api::remove(&clean_a, RemoveRequest::default()),
        api::remove(&clean_b, RemoveRequest::default())
    );
    ra.expect("remove A");
    rb.expect("remove B");

    // 1. Both clusters at once, in this process.
    let store_a = Arc::new(MemoryStateStore::new(None));
    let store_b = Arc::new(MemoryStateStore::new(None));
    let (op_a, events_a) = a.operation(store_a.clone());
    let (op_b, events_b) = b.operation(store_b.clone());
    let started = std::time::Instant::now();
    let (out_a, out_b) = tokio::join!(
        api::up(&op_a, UpRequest::default()),
        api::up(&op_b, UpRequest::default())
    );
    eprintln!("both clusters up in {:?}", started.elapsed());
    let out_a = out_a.unwrap_or_else(|e| panic!("up A: {e}"));
    let out_b = out_b.unwrap_or_else(|e| panic!("up B: {e}"));
    for (label, out, store, events, own, other) in [
        ("A", &out_a, &store_a, &events_a, &a.address, &b.address),
        ("B", &out_b, &store_b, &events_b, &b.address, &a.address),
    ] {
        assert_ne!(out.state_version, StateVersion::absent(), "{label}");
        assert_eq!(store.load().unwrap().version, out.state_version, "{label}");
        assert!(has_ca(store), "{label}: no CA in the saved state");
        let kubeconfig = out.kubeconfig.as_deref().unwrap_or_default();
        assert!(
            kubeconfig.contains(&format!("https://{own}:6443")),
            "{label}: the kubeconfig does not point at its host"
        );
        let results = results(events);
        assert_eq!(results.len(), 1, "{label}: {results:?}");
        assert_eq!(results[0].exit_code, Some(0), "{label}: {results:?}");
        assert!(
            events.lock().unwrap().last().unwrap().event == Some("result"),
            "{label}: the result event is not the last"
        );
        assert_own_events(label, events, own, other);
    }

    // 2. A second `up` of B converges again.
    let before_b = serde_json::to_value(store_b.load().unwrap().state).unwrap();
    let (again_b, _) = b.operation(store_b.clone());
    let again = api::up(&again_b, UpRequest::default())
        .await
        .expect("second up B");
    assert!(has_ca(&store_b));
    // Only the admin certificate changed: like RKE1, every `up` signs it again. Nothing that
    // differs between runs (the scratch directory's path) leaks into the state.
    let changed = changed_paths(
        &before_b,
        &serde_json::to_value(store_b.load().unwrap().state).unwrap(),
        "",
    );
    assert!(
        changed.iter().all(|p| p.contains("/kube-admin/")),
        "the second up changed {changed:?}"
    );
    assert!(
        !changed.iter().any(|p| p.ends_with("/configPath")),
        "{changed:?}"
    );
    assert_eq!(store_b.load().unwrap().version, again.state_version);

    // 2b. A flag changed and rolled back through the API.
    let t = std::time::Instant::now();
    rollback_a_flag(&b, &store_b).await;
    eprintln!("flag changed and rolled back in {:?}", t.elapsed());

    // 3. Remove A through the API: the store is left without a state.
    let (remove_a, remove_events) = a.operation(store_a.clone());
    api::remove(&remove_a, RemoveRequest::default())
        .await
        .expect("remove A");
    assert!(store_a.load().unwrap().state.is_none());
    assert_eq!(results(&remove_events)[0].exit_code, Some(0));

    // 4. A cold `up` of A cancelled midway.
    let cancel = CancellationToken::new();
    let (cancelled_op, cancelled_events) = a.operation(store_a.clone());
    let cancelled_op = cancelled_op.with_cancel(cancel.clone());
    let before = store_a.load().unwrap().version;
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(8)).await;
        cancel.cancel();
    });
    let t = std::time::Instant::now();
    let err = api::up(&cancelled_op, UpRequest::default())
        .await
        .expect_err("the cancelled up finished");
    canceller.await.unwrap();
    eprintln!("cancelled up returned after {:?}", t.elapsed());
    assert!(matches!(err, ApiError::Cancelled), "{err:?}");
    assert_eq!(err.exit_code(), 130);
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the cancelled up took {:?} to stop",
        t.elapsed()
    );
    let results_c = results(&cancelled_events);
    assert_eq!(results_c.len(), 1, "{results_c:?}");
    assert_eq!(results_c[0].status, Status::Interrupted);
    let loaded = store_a
        .load()
        .expect("the state loads after the cancellation");
    eprintln!(
        "after the cancellation: version {} -> {}, state {}",
        before,
        loaded.version,
        if loaded.state.is_some() {
            "saved"
        } else {
            "none yet"
        }
    );
    {
        let events = cancelled_events.lock().unwrap();
        // Nothing unfinished reports success after the token fired.
        let interrupted = events
            .iter()
            .filter(|e| e.status == Status::Interrupted)
            .count();
        assert!(interrupted >= 1, "no interrupted event");
    }

    // 5. The next `up` converges from whatever the cancelled one left.
    let (retry, retry_events) = a.operation(store_a.clone());
    let out = api::up(
        &retry,
        UpRequest {
            yes: true,
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("up A after the cancellation: {e}"));
    assert!(has_ca(&store_a));
    assert!(out.kubeconfig.is_some());
    assert_eq!(results(&retry_events)[0].exit_code, Some(0));

    // Their clusters would only load the machine for the tests that follow.
    a.sandbox(&["down", "--purge"]);
    b.sandbox(&["down", "--purge"]);
}

/// The kube-apiserver flag changed on B and rolled back.
const FLAG: (&str, &str) = ("event-ttl", "2h0m0s");

/// B's kube-apiserver gets [`FLAG`] through `up`, then `api::rollback` takes it away again: its
/// dry run plans the kube-apiserver's recreation and names the cluster.yml key that differs,
/// the run leaves the container without the flag, the state's previous run is now the one
/// rolled back from (a second rollback would go forward), and `plan` with the old cluster.yml
/// finds nothing to do on the host.
async fn rollback_a_flag(b: &Instance, store: &Arc<MemoryStateStore>) {
    let apiserver_args = || {
        b.host
            .docker(&["inspect", "-f", "{{json .Args}}", "kube-apiserver"])
    };
    let flag = format!("--{}={}", FLAG.0, FLAG.1);
    let mut changed = rkers::config::load_str(&b.cluster_yml, "cluster.yml")
        .expect("the sandbox's cluster.yml")
        .config;
    changed
        .services
        .kube_api
        .extra_args
        .insert(FLAG.0.into(), FLAG.1.into());
    let changed = || ClusterInput::Config(Box::new(changed.clone()));
    // No snapshot before either change: only the containers are under test here.
    let (op, _) = b.operation_on(changed(), store.clone());
    let up = UpRequest {
        no_snapshot: true,
        ..Default::default()
    };
    api::up(&op, up).await.expect("up with the flag");
    assert!(apiserver_args().contains(&flag), "{}", apiserver_args());

    let (op, events) = b.operation_on(changed(), store.clone());
    let before = store.load().unwrap().version;
    let req = RollbackRequest {
        dry_run: true,
        no_snapshot: true,
        ..Default::default()
    };
    let dry = api::rollback(&op, req).await.expect("rollback --dry-run");
    assert_eq!(store.load().unwrap().version, before, "the dry run saved");
    assert_eq!(dry.outcome.state_version, before);
    let planned = on_hosts(&dry.plan.expect("the dry run's plan"));
    assert!(
        !planned.is_empty() && planned.iter().all(|a| a.contains("kube-apiserver")),
        "the dry run plans {planned:?}"
    );
    let differs: Vec<String> = dry
        .cluster_yml_differs
        .expect("compared")
        .into_iter()
        .map(|d| d.key)
        .collect();
    // The rolled-back config has no kube-api extra_args at all: the whole map differs.
    assert_eq!(differs, ["services.kube-api.extra_args"], "{differs:?}");
    assert_eq!(results(&events)[0].exit_code, Some(0));

    let req = RollbackRequest {
        no_snapshot: true,
        ..Default::default()
    };
    let done = api::rollback(&op, req).await.expect("rollback");
    assert_ne!(done.outcome.state_version, before);
    assert!(!apiserver_args().contains(&flag), "{}", apiserver_args());
    let state = store.load().unwrap().state.expect("a state");
    let previous = state.previous().expect("readable").expect("a previous run");
    assert_eq!(
        previous.rke_config["services"]["kubeApi"]["extraArgs"][FLAG.0], FLAG.1,
        "the run rolled back from is the previous one now"
    );
    let current = &state.current_state.rke_config.expect("current config");
    assert!(
        current["services"]["kubeApi"]["extraArgs"]
            .get(FLAG.0)
            .is_none(),
        "the rolled-back config is current"
    );

    // `up` with the old cluster.yml now changes no host.
    let (op, _) = b.operation(store.clone());
    let left = on_hosts(&api::plan(&op).await.expect("plan with the old cluster.yml"));
    assert!(
        left.is_empty(),
        "after the rollback, up would still {left:?}"
    );
}

/// A plan's actions on the hosts (not the `cluster` pseudo-host's), as `host: action` lines.
fn on_hosts(plan: &api::Plan) -> Vec<String> {
    plan.hosts
        .iter()
        .filter(|h| h.host != "cluster")
        .flat_map(|h| h.actions.iter().map(|a| format!("{}: {a}", h.host)))
        .collect()
}

/// The JSON paths where two documents differ (values not shown: they hold keys).
fn changed_paths(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Vec<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let null = Value::Null;
                    changed_paths(
                        x.get(k).unwrap_or(&null),
                        y.get(k).unwrap_or(&null),
                        &format!("{at}/{k}"),
                    )
                })
                .collect()
        }
        _ if a == b => Vec::new(),
        _ => vec![at.to_string()],
    }
}
