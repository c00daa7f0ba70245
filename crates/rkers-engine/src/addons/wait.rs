//! Waiting for addons: each addon's DaemonSets and Deployments become ready, and after the
//! network plugin every node reports its network ready. The wait fails after
//! `addon_job_timeout` without progress (RKE1's 45 s by default), or after `PATIENCE_LIMIT` times
//! that in all: a pod still pulling its image on a slow link or a busy host is not a failure, a
//! pod stuck in ImagePullBackOff or CrashLoopBackOff is (§32 pain point 2, "make timeouts
//! adaptive"). On failure the error says why: each unready pod's state, its events (e.g. an
//! ImagePullBackOff naming the image) and its last log lines.

use super::AddonError;
use super::apply::ObjectId;
use crate::kubeapi::KubeApi;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, LogParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_secs(2);
const LOG_LINES: i64 = 5;
/// The whole wait is at most this many times `addon_job_timeout`, progress or not.
pub const PATIENCE_LIMIT: u32 = 8;

/// The clock of one wait: it runs out after `quiet` without a milestone not seen before, or
/// after `PATIENCE_LIMIT` times `quiet` in all. Milestones are facts that only accumulate while
/// a rollout moves (a pod scheduled, a container started, a count of ready pods reached), so a
/// container that crashes and restarts, or an image pull that fails again, is no progress.
#[derive(Debug)]
pub struct Patience {
    started: Instant,
    last_progress: Instant,
    quiet: Duration,
    seen: std::collections::BTreeSet<String>,
}

impl Patience {
    pub fn new(now: Instant, quiet: Duration) -> Patience {
        Patience {
            started: now,
            last_progress: now,
            quiet,
            seen: Default::default(),
        }
    }

    /// Records what was observed at `now`; true when something of it was not seen before.
    pub fn observe(&mut self, now: Instant, milestones: impl IntoIterator<Item = String>) -> bool {
        let mut progress = false;
        for m in milestones {
            progress |= self.seen.insert(m);
        }
        if progress {
            self.last_progress = now;
        }
        progress
    }

    /// Why the wait is over at `now`, or `None` while it goes on.
    pub fn expired(&self, now: Instant) -> Option<String> {
        let waited = now.saturating_duration_since(self.started).as_secs();
        if now.saturating_duration_since(self.started) >= self.quiet * PATIENCE_LIMIT {
            Some(format!(
                "{waited}s ({PATIENCE_LIMIT} × addon_job_timeout, still progressing)"
            ))
        } else if now.saturating_duration_since(self.last_progress) >= self.quiet {
            Some(format!(
                "{waited}s ({}s without progress: addon_job_timeout)",
                self.quiet.as_secs()
            ))
        } else {
            None
        }
    }
}

/// A pod's init containers' statuses, then its containers'.
fn container_statuses(
    status: &k8s_openapi::api::core::v1::PodStatus,
) -> impl Iterator<Item = &k8s_openapi::api::core::v1::ContainerStatus> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
}

/// What pods matching `selector` in `namespace` have reached: scheduled, each container started
/// (running, or an init container that completed), each container ready.
async fn pod_milestones(
    api: &KubeApi,
    namespace: &str,
    selector: &BTreeMap<String, String>,
) -> Vec<String> {
    let pods_api: Api<Pod> = Api::namespaced(api.client.clone(), namespace);
    let Ok(pods) = pods_api
        .list(&ListParams::default().labels(&label_selector(selector)))
        .await
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for pod in pods.items {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()) {
            out.push(format!("{uid} scheduled on {node}"));
        }
        let status = pod.status.unwrap_or_default();
        for cs in container_statuses(&status) {
            let state = cs.state.clone().unwrap_or_default();
            let started = state.running.is_some()
                || state.terminated.as_ref().is_some_and(|t| t.exit_code == 0);
            if started {
                out.push(format!("{uid} {} started", cs.name));
            }
            if cs.ready {
                out.push(format!("{uid} {} ready", cs.name));
            }
        }
    }
    out
}

/// A workload of an addon and why it is not ready yet (`None` = ready).
async fn workload_pending(
    api: &KubeApi,
    id: &ObjectId,
) -> Result<Option<(String, BTreeMap<String, String>)>, kube::Error> {
    let ns = id.namespace_or_default();
    match id.kind.as_str() {
        "Deployment" => {
            let d = Api::<Deployment>::namespaced(api.client.clone(), ns)
                .get(&id.name)
                .await?;
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let selector = d
                .spec
                .as_ref()
                .and_then(|s| s.selector.match_labels.clone())
                .unwrap_or_default();
            let st = d.status.unwrap_or_default();
            let current = st.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
            let updated = st.updated_replicas.unwrap_or(0);
            let available = st.available_replicas.unwrap_or(0);
            if current && updated >= want && available >= want {
                return Ok(None);
            }
            Ok(Some((
                format!("{id}: {available}/{want} replicas available, {updated} updated"),
                selector,
            )))
        }
        "DaemonSet" => {
            let d = Api::<DaemonSet>::namespaced(api.client.clone(), ns)
                .get(&id.name)
                .await?;
            let selector = d
                .spec
                .as_ref()
                .and_then(|s| s.selector.match_labels.clone())
                .unwrap_or_default();
            let st = d.status.unwrap_or_default();
            let current = st.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
            let want = st.desired_number_scheduled;
            let ready = st.number_ready;
            let updated = st.updated_number_scheduled.unwrap_or(0);
            if current && ready >= want && updated >= want {
                return Ok(None);
            }
            Ok(Some((
                format!("{id}: {ready}/{want} pods ready, {updated} updated"),
                selector,
            )))
        }
        _ => Ok(None),
    }
}

/// Waits until every DaemonSet and Deployment among `objects` is ready, at most `timeout`.
pub async fn wait_workloads(
    api: &KubeApi,
    resource: &str,
    objects: &[ObjectId],
    timeout: Duration,
) -> Result<(), AddonError> {
    let workloads: Vec<&ObjectId> = objects
        .iter()
        .filter(|o| {
            o.api_version.starts_with("apps/")
                && matches!(o.kind.as_str(), "Deployment" | "DaemonSet")
        })
        .collect();
    let mut patience = Patience::new(Instant::now(), timeout);
    loop {
        let mut pending = Vec::new();
        // The object whose read failed (the API server busy or restarting), and why: no
        // progress, not the end; the wait fails on it only once its patience is spent.
        let mut unread = None;
        for id in &workloads {
            match workload_pending(api, id).await {
                Ok(Some(p)) => pending.push((*id, p)),
                Ok(None) => {}
                Err(e) => {
                    unread = Some((id.to_string(), e.to_string()));
                    break;
                }
            }
        }
        if let Some((object, message)) = unread {
            patience.observe(Instant::now(), Vec::new());
            if let Some(waited) = patience.expired(Instant::now()) {
                return Err(AddonError::Api {
                    resource: resource.to_string(),
                    object,
                    message: format!(
                        "{message} (reads failed until the wait ended after {waited})"
                    ),
                });
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
        if pending.is_empty() {
            return Ok(());
        }
        let mut milestones = Vec::new();
        for (id, (why, selector)) in &pending {
            milestones.push(why.clone());
            let ns = id.namespace_or_default();
            milestones.extend(pod_milestones(api, ns, selector).await);
        }
        patience.observe(Instant::now(), milestones);
        if let Some(waited) = patience.expired(Instant::now()) {
            let mut report = format!("addon {resource}: workloads not ready after {waited}:");
            for (id, (why, selector)) in &pending {
                report.push_str(&format!("\n  {why}"));
                let ns = id.namespace_or_default();
                report.push_str(&describe_pods(api, ns, selector, None).await);
            }
            return Err(AddonError::NotReady(report));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn label_selector(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Each not-ready pod matching `selector` (on `node` if given): phase, container states, its
/// events and the last log lines of its containers, indented for an error message.
pub async fn describe_pods(
    api: &KubeApi,
    namespace: &str,
    selector: &BTreeMap<String, String>,
    node: Option<&str>,
) -> String {
    let pods_api: Api<Pod> = Api::namespaced(api.client.clone(), namespace);
    let mut lp = ListParams::default().labels(&label_selector(selector));
    if let Some(node) = node {
        lp = lp.fields(&format!("spec.nodeName={node}"));
    }
    let pods = match pods_api.list(&lp).await {
        Ok(p) => p.items,
        Err(e) => return format!("\n    (cannot list pods: {e})"),
    };
    if pods.is_empty() {
        return "\n    no pods were created".to_string();
    }
    let events_api: Api<Event> = Api::namespaced(api.client.clone(), namespace);
    let mut out = String::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            continue;
        }
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_else(|| "<unscheduled>".into());
        out.push_str(&format!(
            "\n    pod {namespace}/{name} on {node_name}: {}",
            status.phase.as_deref().unwrap_or("Unknown")
        ));
        for cs in container_statuses(&status) {
            let state = cs.state.clone().unwrap_or_default();
            if let Some(w) = state.waiting {
                out.push_str(&format!(
                    "\n      container {} ({}): waiting: {} {}",
                    cs.name,
                    cs.image,
                    w.reason.unwrap_or_default(),
                    w.message.unwrap_or_default()
                ));
            } else if let Some(t) = state.terminated {
                out.push_str(&format!(
                    "\n      container {} ({}): terminated: {} exit code {}",
                    cs.name,
                    cs.image,
                    t.reason.unwrap_or_default(),
                    t.exit_code
                ));
            } else if state.running.is_some() {
                out.push_str(&format!(
                    "\n      container {} ({}): running, not ready",
                    cs.name, cs.image
                ));
            }
        }
        let events = events_api
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        for e in events.iter().rev().take(6).rev() {
            out.push_str(&format!(
                "\n      event {} {}: {}",
                e.type_.as_deref().unwrap_or(""),
                e.reason.as_deref().unwrap_or(""),
                e.message.as_deref().unwrap_or("").trim()
            ));
        }
        for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
            let lp = LogParams {
                container: Some(c.name.clone()),
                tail_lines: Some(LOG_LINES),
                ..Default::default()
            };
            if let Ok(logs) = pods_api.logs(&name, &lp).await {
                for line in logs.lines().filter(|l| !l.trim().is_empty()) {
                    out.push_str(&format!("\n      log {}: {line}", c.name));
                }
            }
        }
    }
    out
}

/// After the network plugin: waits until every node is Ready (the kubelet reports NotReady while
/// its CNI is not set up); on timeout names each such node with its condition and the state of
/// the plugin's pods there.
pub async fn wait_nodes_network(
    api: &KubeApi,
    cni_pods: &[(String, BTreeMap<String, String>)],
    timeout: Duration,
) -> Result<(), AddonError> {
    let nodes_api: Api<Node> = Api::all(api.client.clone());
    let mut patience = Patience::new(Instant::now(), timeout);
    loop {
        let nodes = nodes_api
            .list(&ListParams::default())
            .await
            .map_err(|e| AddonError::NotReady(format!("listing nodes: {e}")))?;
        let not_ready: Vec<(String, String)> = nodes
            .items
            .iter()
            .filter_map(|n| {
                let cond = n
                    .status
                    .as_ref()?
                    .conditions
                    .iter()
                    .flatten()
                    .find(|c| c.type_ == "Ready");
                match cond {
                    Some(c) if c.status == "True" => None,
                    Some(c) => Some((
                        n.metadata.name.clone().unwrap_or_default(),
                        c.message.clone().unwrap_or_default(),
                    )),
                    None => Some((
                        n.metadata.name.clone().unwrap_or_default(),
                        "no Ready condition".into(),
                    )),
                }
            })
            .collect();
        if not_ready.is_empty() {
            return Ok(());
        }
        let ready = nodes
            .items
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .filter(|n| !not_ready.iter().any(|(name, _)| name == n));
        let mut milestones: Vec<String> = ready.map(|n| format!("node {n} ready")).collect();
        for (ns, selector) in cni_pods {
            milestones.extend(pod_milestones(api, ns, selector).await);
        }
        patience.observe(Instant::now(), milestones);
        if let Some(waited) = patience.expired(Instant::now()) {
            let mut report =
                format!("network plugin: nodes without a ready network after {waited}:");
            for (node, why) in &not_ready {
                report.push_str(&format!("\n  node {node}: {why}"));
                for (ns, selector) in cni_pods {
                    report.push_str(&describe_pods(api, ns, selector, Some(node)).await);
                }
            }
            return Err(AddonError::NotReady(report));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_rollout_that_keeps_moving_outlasts_the_quiet_timeout() {
        let t0 = Instant::now();
        let quiet = Duration::from_secs(45);
        let mut p = Patience::new(t0, quiet);
        assert!(p.observe(t0, seen(&["ds 0/3 ready", "a scheduled on host1"])));
        // 40 s later host1's container starts: the quiet clock starts again.
        let t1 = t0 + Duration::from_secs(40);
        assert!(p.observe(t1, seen(&["ds 0/3 ready", "a kube-flannel started"])));
        assert_eq!(p.expired(t0 + Duration::from_secs(80)), None);
        let over = p.expired(t1 + quiet).expect("45 s without progress");
        assert!(
            over.contains("85s") && over.contains("without progress"),
            "{over}"
        );
    }

    #[test]
    fn a_crash_loop_is_no_progress() {
        let t0 = Instant::now();
        let mut p = Patience::new(t0, Duration::from_secs(45));
        p.observe(t0, seen(&["ds 2/3 ready", "c main started"]));
        // Restarting the same container again and again adds nothing new.
        for s in 1..=22 {
            let t = t0 + Duration::from_secs(2 * s);
            assert!(!p.observe(t, seen(&["ds 2/3 ready", "c main started"])));
        }
        assert!(p.expired(t0 + Duration::from_secs(44)).is_none());
        assert!(p.expired(t0 + Duration::from_secs(45)).is_some());
    }

    #[test]
    fn progress_forever_still_ends_at_the_limit() {
        let t0 = Instant::now();
        let quiet = Duration::from_secs(10);
        let mut p = Patience::new(t0, quiet);
        let mut t = t0;
        for i in 0..=(PATIENCE_LIMIT * 10) {
            t = t0 + Duration::from_secs(i as u64);
            p.observe(t, vec![format!("pod {i} scheduled on host1")]);
            if t < t0 + quiet * PATIENCE_LIMIT {
                assert!(p.expired(t).is_none(), "ended early at {i}s");
            }
        }
        let over = p.expired(t).expect("the limit");
        assert!(over.contains("still progressing"), "{over}");
    }

    /// An API server that does not answer (restarting, overloaded) is no reason to give up at
    /// the first read: the wait goes on, and fails on the read's error once its patience is
    /// spent, saying so. Nothing listens on 127.0.0.1:1.
    #[tokio::test]
    async fn reads_that_fail_are_retried_until_the_patience_is_spent() {
        let kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n";
        let api = KubeApi::from_kubeconfig(kubeconfig).await.unwrap();
        let deployment = ObjectId {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "kube-system".into(),
            name: "metrics-server".into(),
        };
        let started = Instant::now();
        let quiet = Duration::from_secs(3);
        let err = wait_workloads(&api, "rke-metrics-addon", &[deployment], quiet)
            .await
            .unwrap_err();
        assert!(
            started.elapsed() >= quiet,
            "gave up after {:?}",
            started.elapsed()
        );
        let text = err.to_string();
        assert!(
            text.contains("Deployment kube-system/metrics-server")
                && text.contains("reads failed until the wait ended after")
                && text.contains("without progress: addon_job_timeout"),
            "{text}"
        );
    }
}
