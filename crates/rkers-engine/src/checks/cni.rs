//! The CNI as the API server shows it: which plugin families run (from cluster.yml's
//! `network.plugin` and from the DaemonSets carrying the plugins' labels), their pods per node
//! with state and last log lines, nodes NotReady for want of a network plugin, and the waits
//! `--fix webhooks` and rolling upgrades use.

use super::{Finding, Status, last_lines};
use crate::kubeapi::{KubeApi, KubeApiError};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, LogParams};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Labels of calico-node's pods (calico, and canal whose pods run calico-node).
pub const CALICO_SELECTORS: &[&str] = &["k8s-app=calico-node", "k8s-app=canal"];
/// Labels of flannel's pods (RKE's template, upstream's, and canal's).
pub const FLANNEL_SELECTORS: &[&str] = &["k8s-app=flannel", "app=flannel", "k8s-app=canal"];
pub const POD_CHECK: &str = "cni-pod";
pub const NETWORK_CHECK: &str = "cni-network";

/// Which families the config names.
pub fn families_of_plugin(plugin: &str) -> (bool, bool) {
    match plugin {
        "calico" => (true, false),
        "canal" => (true, true),
        "flannel" => (false, true),
        _ => (false, false),
    }
}

/// One CNI DaemonSet found in the cluster.
#[derive(Clone, Debug)]
pub struct CniDaemonSet {
    pub namespace: String,
    pub name: String,
    pub selector: String,
    pub calico: bool,
    pub flannel: bool,
    pub template_labels: BTreeMap<String, String>,
    pub images: Vec<String>,
}

/// The CNI of a cluster.
#[derive(Clone, Debug, Default)]
pub struct Cni {
    pub calico: bool,
    pub flannel: bool,
    pub daemonsets: Vec<CniDaemonSet>,
}

impl Cni {
    /// kube-system and every namespace a CNI DaemonSet runs in.
    pub fn namespaces(&self) -> Vec<String> {
        let mut ns: BTreeSet<String> = ["kube-system".to_string()].into();
        ns.extend(self.daemonsets.iter().map(|d| d.namespace.clone()));
        ns.into_iter().collect()
    }

    /// Label sets of the system pods a webhook must not block: the CNI's, plus the plugins'
    /// well-known labels (their pods may not exist yet), plus a pod with no labels.
    pub fn pod_labels(&self) -> Vec<BTreeMap<String, String>> {
        let mut v: Vec<BTreeMap<String, String>> = self
            .daemonsets
            .iter()
            .map(|d| d.template_labels.clone())
            .collect();
        for sel in CALICO_SELECTORS.iter().chain(FLANNEL_SELECTORS) {
            let (k, val) = sel.split_once('=').expect("selector is k=v");
            v.push([(k.to_string(), val.to_string())].into());
        }
        v.push(BTreeMap::new());
        v
    }
}

/// Finds the CNI DaemonSets; `plugin` is cluster.yml's `network.plugin`.
pub async fn discover(api: &KubeApi, plugin: &str) -> Result<Cni, KubeApiError> {
    let (mut calico, mut flannel) = families_of_plugin(plugin);
    let dss: Api<DaemonSet> = Api::all(api.client.clone());
    let mut found: BTreeMap<(String, String), CniDaemonSet> = BTreeMap::new();
    for sel in CALICO_SELECTORS.iter().chain(FLANNEL_SELECTORS) {
        let list = dss
            .list(&ListParams::default().labels(sel))
            .await
            .map_err(|e| api.err(&format!("list daemonsets {sel}"), e))?;
        for ds in list.items {
            let ns = ds.metadata.namespace.clone().unwrap_or_default();
            let name = ds.metadata.name.clone().unwrap_or_default();
            let is_calico = CALICO_SELECTORS.contains(sel);
            let is_flannel = FLANNEL_SELECTORS.contains(sel);
            calico |= is_calico;
            flannel |= is_flannel;
            let spec = ds.spec.as_ref();
            let template = spec.and_then(|s| s.template.metadata.as_ref());
            let entry = found
                .entry((ns.clone(), name.clone()))
                .or_insert(CniDaemonSet {
                    namespace: ns,
                    name,
                    selector: sel.to_string(),
                    calico: false,
                    flannel: false,
                    template_labels: template.and_then(|m| m.labels.clone()).unwrap_or_default(),
                    images: spec
                        .and_then(|s| s.template.spec.as_ref())
                        .map(|p| {
                            p.containers
                                .iter()
                                .filter_map(|c| c.image.clone())
                                .collect()
                        })
                        .unwrap_or_default(),
                });
            entry.calico |= is_calico;
            entry.flannel |= is_flannel;
        }
    }
    Ok(Cni {
        calico,
        flannel,
        daemonsets: found.into_values().collect(),
    })
}

/// The node's name as Kubernetes knows it.
pub fn node_name(n: &Node) -> String {
    n.metadata.name.clone().unwrap_or_default()
}

/// The Ready condition as `status reason: message`.
pub fn ready_condition(n: &Node) -> Option<(String, String, String)> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// Whether a pod runs with every container ready.
pub fn pod_ready(p: &Pod) -> bool {
    let st = p.status.as_ref();
    st.and_then(|s| s.phase.as_deref()) == Some("Running")
        && st
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// `Running, 2 restarts` / `CrashLoopBackOff (container calico-node, 5 restarts, last exit 1)`.
pub fn pod_state(p: &Pod) -> String {
    let st = p.status.as_ref();
    let phase = st
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Unknown".into());
    let mut parts = Vec::new();
    for cs in st
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
    {
        let state = cs.state.as_ref();
        let now = if let Some(w) = state.and_then(|s| s.waiting.as_ref()) {
            w.reason.clone().unwrap_or_else(|| "Waiting".into())
        } else if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
            format!("Terminated exit {}", t.exit_code)
        } else if cs.ready {
            "ready".into()
        } else {
            "running, not ready".into()
        };
        let mut s = format!("{}: {now}, {} restarts", cs.name, cs.restart_count);
        if let Some(t) = cs.last_state.as_ref().and_then(|l| l.terminated.as_ref()) {
            s.push_str(&format!(", last exit {}", t.exit_code));
        }
        parts.push(s);
    }
    if parts.is_empty() {
        phase
    } else {
        format!("{phase} ({})", parts.join("; "))
    }
}

/// The last log lines of a pod's containers that are not ready (the previous run's when the
/// current one has not written any yet).
pub async fn pod_logs(api: &KubeApi, p: &Pod, lines: i64) -> Vec<String> {
    let ns = p.metadata.namespace.clone().unwrap_or_default();
    let name = p.metadata.name.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), &ns);
    let mut out = Vec::new();
    let statuses = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default();
    for cs in statuses.iter().filter(|c| !c.ready) {
        for previous in [false, true] {
            let params = LogParams {
                container: Some(cs.name.clone()),
                tail_lines: Some(lines),
                previous,
                ..Default::default()
            };
            if let Ok(text) = pods.logs(&name, &params).await
                && !text.trim().is_empty()
            {
                out.extend(last_lines(&text, lines as usize).into_iter().map(|l| {
                    format!(
                        "log {}{}: {l}",
                        cs.name,
                        if previous { " (previous)" } else { "" }
                    )
                }));
                break;
            }
        }
    }
    out
}

/// CNI pods of `ds`, by node.
pub async fn pods_by_node(api: &KubeApi, ds: &CniDaemonSet) -> BTreeMap<String, Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), &ds.namespace);
    let mut out: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    if let Ok(list) = pods.list(&ListParams::default().labels(&ds.selector)).await {
        for p in list.items {
            let node = p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            out.entry(node).or_default().push(p);
        }
    }
    out
}

/// Per node and CNI DaemonSet: its pod's state, with the last log lines when it is not ready;
/// and per NotReady node whose network plugin is not ready, the CNI pods missing there.
pub async fn findings(api: &KubeApi, cni: &Cni, nodes: &[Node]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut missing_on: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ds in &cni.daemonsets {
        let by_node = pods_by_node(api, ds).await;
        for n in nodes {
            let node = node_name(n);
            let what = format!("{}/{}", ds.namespace, ds.name);
            match by_node.get(&node).and_then(|v| v.first()) {
                None => {
                    missing_on
                        .entry(node.clone())
                        .or_default()
                        .push(what.clone());
                    out.push(
                        Finding::new(POD_CHECK, Status::Fail, Some(&node), format!("no pod of DaemonSet {what} on this node"))
                            .evidence([format!("kubectl -n {} get pods -l {} -o wide: none on {node}", ds.namespace, ds.selector)])
                            .fix([format!("kubectl -n {} get events --field-selector involvedObject.name={}   (why it is not created; see the webhook findings)", ds.namespace, ds.name)]),
                    );
                }
                Some(p) if pod_ready(p) => out.push(Finding::ok(
                    POD_CHECK,
                    Some(&node),
                    format!(
                        "{} {}",
                        p.metadata.name.as_deref().unwrap_or("?"),
                        pod_state(p)
                    ),
                )),
                Some(p) => {
                    let pod = p.metadata.name.clone().unwrap_or_default();
                    let mut evidence =
                        vec![format!("pod {}/{pod}: {}", ds.namespace, pod_state(p))];
                    evidence.extend(pod_logs(api, p, 5).await);
                    let calico_dir = evidence.iter().any(|e| e.contains("/var/run/calico"));
                    let mut fix = Vec::new();
                    if calico_dir {
                        fix.push("see the calico-runtime finding of this node: rkers doctor --fix calico-runtime".to_string());
                    }
                    fix.push(format!("kubectl -n {} describe pod {pod}; kubectl -n {} logs {pod} --all-containers --previous", ds.namespace, ds.namespace));
                    out.push(
                        Finding::new(
                            POD_CHECK,
                            Status::Fail,
                            Some(&node),
                            format!("{what} pod {pod} is not ready: {}", pod_state(p)),
                        )
                        .evidence(evidence)
                        .fix(fix),
                    );
                }
            }
        }
    }
    for n in nodes {
        let node = node_name(n);
        let Some((status, reason, message)) = ready_condition(n) else {
            continue;
        };
        if status == "True" || !message.contains("NetworkPluginNotReady") {
            continue;
        }
        let missing = missing_on.get(&node).cloned().unwrap_or_default();
        let mut summary = format!("NotReady: the network plugin is not ready ({reason})");
        if !missing.is_empty() {
            summary.push_str(&format!("; CNI pods missing: {}", missing.join(", ")));
        }
        out.push(
            Finding::new(NETWORK_CHECK, Status::Fail, Some(&node), summary)
                .evidence([format!("node condition Ready={status} {reason}: {message}")])
                .fix(["see the cni-pod and webhook findings: the CNI pod must start on this node (rkers doctor --fix webhooks if a webhook blocks it)"]),
        );
    }
    out
}

/// The CNI pods [`wait_pods_ready`] still waited for when its time was up.
#[derive(Debug, thiserror::Error)]
#[error("CNI pods not ready after {}s: {}", .waited.as_secs(), .waiting.join("; "))]
pub struct CniPodsNotReady {
    pub waited: Duration,
    /// Each as `node: namespace/daemonset pod state`.
    pub waiting: Vec<String>,
}

/// Waits until every CNI DaemonSet runs a ready pod on each of `nodes` (every node when empty).
pub async fn wait_pods_ready(
    api: &KubeApi,
    cni: &Cni,
    nodes: &[String],
    timeout: Duration,
) -> Result<(), CniPodsNotReady> {
    let deadline = Instant::now() + timeout;
    loop {
        let all: Vec<String> = if nodes.is_empty() {
            let api_nodes: Api<Node> = Api::all(api.client.clone());
            api_nodes
                .list(&ListParams::default())
                .await
                .map(|l| l.items.iter().map(node_name).collect())
                .unwrap_or_default()
        } else {
            nodes.to_vec()
        };
        let mut waiting = Vec::new();
        for ds in &cni.daemonsets {
            let by_node = pods_by_node(api, ds).await;
            for n in &all {
                match by_node.get(n).and_then(|v| v.iter().find(|p| pod_ready(p))) {
                    Some(_) => {}
                    None => waiting.push(format!(
                        "{n}: {}/{} {}",
                        ds.namespace,
                        ds.name,
                        by_node
                            .get(n)
                            .and_then(|v| v.first())
                            .map(pod_state)
                            .unwrap_or_else(|| "no pod".into())
                    )),
                }
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CniPodsNotReady {
                waited: timeout,
                waiting,
            });
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_map_to_families() {
        assert_eq!(families_of_plugin("calico"), (true, false));
        assert_eq!(families_of_plugin("canal"), (true, true));
        assert_eq!(families_of_plugin("flannel"), (false, true));
        assert_eq!(families_of_plugin("none"), (false, false));
    }

    #[test]
    fn namespaces_always_include_kube_system() {
        let mut cni = Cni::default();
        assert_eq!(cni.namespaces(), ["kube-system"]);
        cni.daemonsets.push(CniDaemonSet {
            namespace: "kube-flannel".into(),
            name: "kube-flannel-ds".into(),
            selector: "app=flannel".into(),
            calico: false,
            flannel: true,
            template_labels: [("app".to_string(), "flannel".to_string())].into(),
            images: vec![],
        });
        assert_eq!(cni.namespaces(), ["kube-flannel", "kube-system"]);
        assert!(
            cni.pod_labels()
                .iter()
                .any(|l| l.get("app").map(String::as_str) == Some("flannel"))
        );
    }
}
