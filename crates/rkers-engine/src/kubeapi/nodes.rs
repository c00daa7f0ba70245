//! Kubernetes Node objects: finding a host's node, syncing its labels, annotations and taints
//! (§21), cordon and uncordon, readiness and deletion.

use super::{KubeApi, KubeApiError};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, DeleteParams, PostParams};
use std::time::Duration;

pub use rkers_core::node::{
    CONTROLPLANE_TAINT, ETCD_TAINT, EXTERNAL_ADDRESS_ANNOTATION, HOSTNAME_LABEL,
    INTERNAL_ADDRESS_ANNOTATION, NodeSync, ROLE_LABELS, TaintSpec,
};

/// A [`NodeSync`] applied to a Node object as the API holds it.
pub trait ApplyToNode {
    /// Applies the changes to a Node object; true when anything changed.
    fn apply_to(&self, node: &mut Node) -> bool;
}

impl ApplyToNode for NodeSync {
    fn apply_to(&self, node: &mut Node) -> bool {
        let before = node.clone();
        let annotations = node
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(EXTERNAL_ADDRESS_ANNOTATION.into(), self.address.clone());
        annotations.insert(
            INTERNAL_ADDRESS_ANNOTATION.into(),
            self.internal_address.clone(),
        );
        let labels = node.metadata.labels.get_or_insert_with(Default::default);
        for k in &self.labels_to_delete {
            if !self.labels_to_add.contains_key(k) {
                labels.remove(k);
            }
        }
        for (k, v) in &self.labels_to_add {
            labels.insert(k.clone(), v.clone());
        }
        let spec = node.spec.get_or_insert_with(Default::default);
        let taints = spec.taints.get_or_insert_with(Vec::new);
        taints.retain(|t| {
            !self.taints_to_delete.iter().any(|d| {
                d.key == t.key
                    && d.effect == t.effect
                    && d.value == t.value.clone().unwrap_or_default()
            })
        });
        for add in &self.taints_to_add {
            let exists = taints.iter().any(|t| {
                t.key == add.key
                    && t.effect == add.effect
                    && t.value.clone().unwrap_or_default() == add.value
            });
            if !exists {
                taints.push(Taint {
                    key: add.key.clone(),
                    value: (!add.value.is_empty()).then(|| add.value.clone()),
                    effect: add.effect.clone(),
                    time_added: None,
                });
            }
        }
        if taints.is_empty() {
            spec.taints = None;
        }
        *node != before
    }
}

/// Finds the node of a host by its `kubernetes.io/hostname` label (case-insensitively, as RKE1),
/// retrying while the kubelet registers.
pub async fn find_node(api: &KubeApi, hostname: &str, attempts: u32) -> Result<Node, KubeApiError> {
    let nodes: Api<Node> = Api::all(api.client.clone());
    for attempt in 0..attempts.max(1) {
        let list = nodes
            .list(&Default::default())
            .await
            .map_err(|e| api.err("list nodes", e))?;
        if let Some(node) = list.items.into_iter().find(|n| {
            n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(HOSTNAME_LABEL))
                .is_some_and(|h| h.eq_ignore_ascii_case(hostname))
        }) {
            return Ok(node);
        }
        if attempt + 1 < attempts {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    Err(KubeApiError::NodeNotFound(hostname.to_string()))
}

/// Waits, asking 4 times a second, until every host in `hostnames` has registered its node
/// (by its `kubernetes.io/hostname` label, case-insensitively), at most `limit`. Returns the
/// hostnames still missing then; errors of the API count as "not yet".
pub async fn wait_registered(api: &KubeApi, hostnames: &[String], limit: Duration) -> Vec<String> {
    let nodes: Api<Node> = Api::all(api.client.clone());
    let started = tokio::time::Instant::now();
    let mut missing: Vec<String> = hostnames.to_vec();
    loop {
        if let Ok(list) = nodes.list(&Default::default()).await {
            let seen: Vec<String> = list
                .items
                .iter()
                .filter_map(|n| n.metadata.labels.as_ref()?.get(HOSTNAME_LABEL))
                .map(|h| h.to_ascii_lowercase())
                .collect();
            missing.retain(|h| !seen.contains(&h.to_ascii_lowercase()));
        }
        if missing.is_empty() || started.elapsed() >= limit {
            return missing;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Applies a [`NodeSync`], writing the node only when it changed; retries on conflicts.
pub async fn sync_node(api: &KubeApi, sync: &NodeSync) -> Result<bool, KubeApiError> {
    let nodes: Api<Node> = Api::all(api.client.clone());
    for _ in 0..5 {
        let mut node = find_node(api, &sync.hostname, 6).await?;
        if !sync.apply_to(&mut node) {
            return Ok(false);
        }
        let name = node.metadata.name.clone().unwrap_or_default();
        match nodes.replace(&name, &PostParams::default(), &node).await {
            Ok(_) => return Ok(true),
            // The kubelet writes its Node too: a conflict means the copy read is stale, and
            // the labels and taints must be applied to the current one.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(api.err(&format!("update node {name}"), e)),
        }
    }
    Err(api.err(
        "update node",
        format!("{}: too many conflicts", sync.hostname),
    ))
}

pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// When the node's kubelet last posted its Ready condition.
pub fn ready_heartbeat(node: &Node) -> Option<String> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .and_then(|c| c.last_heartbeat_time.as_ref())
        .map(|t| t.0.to_string())
}

/// The node's Ready condition as its kubelet posted it, for an error: `Ready=False:
/// KubeletNotReady: runtime network not ready: …`.
pub fn ready_condition(node: &Node) -> String {
    let condition = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let Some(c) = condition else {
        return "no Ready condition posted".to_string();
    };
    [c.reason.as_deref(), c.message.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .fold(format!("Ready={}", c.status), |text, part| {
            format!("{text}: {part}")
        })
}

impl KubeApi {
    /// Marks a node (un)schedulable.
    pub async fn set_unschedulable(
        &self,
        hostname: &str,
        cordon: bool,
    ) -> Result<(), KubeApiError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = find_node(self, hostname, 5).await?;
        let name = node.metadata.name.clone().unwrap_or_default();
        let patch = serde_json::json!({"spec": {"unschedulable": cordon}});
        nodes
            .patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .map_err(|e| self.err(&format!("cordon node {name}"), e))?;
        Ok(())
    }

    /// Deletes a host's node; a node that is already gone is fine.
    pub async fn delete_node(&self, hostname: &str) -> Result<(), KubeApiError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        match find_node(self, hostname, 1).await {
            Ok(node) => {
                let name = node.metadata.name.unwrap_or_default();
                match nodes.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                    Err(e) => Err(self.err(&format!("delete node {name}"), e)),
                }
            }
            Err(KubeApiError::NodeNotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Waits until the host's node reports Ready, or the timeout passes.
    pub async fn wait_node_ready(
        &self,
        hostname: &str,
        timeout: Duration,
    ) -> Result<(), KubeApiError> {
        self.wait_node_ready_after(hostname, None, timeout).await
    }

    /// [`Self::wait_node_ready`], where a Ready condition whose heartbeat is still `stale` (read
    /// before the node's kubelet was replaced) does not count: the node keeps the old kubelet's
    /// Ready for up to 40 s after it stopped, whatever the new one will say.
    pub async fn wait_node_ready_after(
        &self,
        hostname: &str,
        stale: Option<&str>,
        timeout: Duration,
    ) -> Result<(), KubeApiError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_seen = None;
        loop {
            if let Ok(node) = find_node(self, hostname, 1).await {
                let fresh = stale.is_none() || ready_heartbeat(&node).as_deref() != stale;
                if is_ready(&node) && fresh {
                    return Ok(());
                }
                last_seen = Some(if fresh {
                    ready_condition(&node)
                } else {
                    "its Ready condition is still the one its previous kubelet posted".to_string()
                });
            }
            if tokio::time::Instant::now() >= deadline {
                let seen = last_seen.map(|s| format!(" ({s})")).unwrap_or_default();
                return Err(self.err(
                    "wait for node",
                    format!("{hostname} not Ready after {}s{seen}", timeout.as_secs()),
                ));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn roles(r: &[&str]) -> BTreeSet<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_not_ready_node_says_why_and_its_heartbeat_tells_kubelets_apart() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "host2"},
            "status": {"conditions": [{
                "type": "Ready",
                "status": "False",
                "reason": "KubeletNotReady",
                "message": "runtime network not ready: cni config uninitialized",
                "lastHeartbeatTime": "2026-11-28T10:00:00Z"
            }]}
        }))
        .unwrap();
        assert!(!is_ready(&node));
        assert_eq!(
            ready_condition(&node),
            "Ready=False: KubeletNotReady: runtime network not ready: cni config uninitialized"
        );
        assert_eq!(
            ready_heartbeat(&node).as_deref(),
            Some("2026-11-28T10:00:00Z")
        );
        assert_eq!(
            ready_condition(&Node::default()),
            "no Ready condition posted"
        );
        assert_eq!(ready_heartbeat(&Node::default()), None);
    }

    #[test]
    fn etcd_only_host_gets_noexecute_taint_and_role_labels() {
        let sync = NodeSync::for_host(
            "h1",
            "1.1.1.1",
            "10.0.0.1",
            &roles(&["etcd"]),
            &BTreeMap::new(),
            &BTreeMap::new(),
            &[],
            &[],
        );
        assert_eq!(sync.labels_to_add["node-role.kubernetes.io/etcd"], "true");
        assert!(
            sync.labels_to_delete
                .contains("node-role.kubernetes.io/worker")
        );
        assert_eq!(
            sync.taints_to_add,
            vec![TaintSpec::new(
                "node-role.kubernetes.io/etcd",
                "true",
                "NoExecute"
            )]
        );
    }

    #[test]
    fn etcd_and_controlplane_without_worker_get_both_taints() {
        let sync = NodeSync::for_host(
            "h1",
            "a",
            "a",
            &roles(&["etcd", "controlplane"]),
            &BTreeMap::new(),
            &BTreeMap::new(),
            &[],
            &[],
        );
        assert_eq!(sync.taints_to_add.len(), 2);
        assert!(sync.taints_to_delete.is_empty());
    }

    #[test]
    fn gaining_worker_role_removes_reserved_taints() {
        let sync = NodeSync::for_host(
            "h1",
            "a",
            "a",
            &roles(&["controlplane", "worker"]),
            &BTreeMap::new(),
            &BTreeMap::new(),
            &[],
            &[],
        );
        assert!(sync.taints_to_add.is_empty());
        assert!(sync.taints_to_delete.contains(&TaintSpec::new(
            "node-role.kubernetes.io/controlplane",
            "true",
            "NoSchedule"
        )));
    }

    #[test]
    fn removed_config_label_is_deleted_foreign_labels_kept() {
        let old: BTreeMap<String, String> = [("team".to_string(), "a".to_string())].into();
        let sync = NodeSync::for_host(
            "h1",
            "a",
            "a",
            &roles(&["worker"]),
            &BTreeMap::new(),
            &old,
            &[],
            &[],
        );
        let mut node = Node::default();
        node.metadata.labels = Some(
            [
                ("team".to_string(), "a".to_string()),
                ("other".to_string(), "x".to_string()),
            ]
            .into(),
        );
        assert!(sync.apply_to(&mut node));
        let labels = node.metadata.labels.unwrap();
        assert!(!labels.contains_key("team"));
        assert_eq!(labels["other"], "x");
        assert_eq!(labels["node-role.kubernetes.io/worker"], "true");
    }

    #[test]
    fn changed_taint_value_replaces_old_one_and_second_apply_is_noop() {
        let old = vec![TaintSpec::new("dedicated", "a", "NoSchedule")];
        let new = vec![TaintSpec::new("dedicated", "b", "NoSchedule")];
        let sync = NodeSync::for_host(
            "h1",
            "a",
            "a",
            &roles(&["worker"]),
            &BTreeMap::new(),
            &BTreeMap::new(),
            &new,
            &old,
        );
        let mut node = Node {
            spec: Some(k8s_openapi::api::core::v1::NodeSpec {
                taints: Some(vec![Taint {
                    key: "dedicated".into(),
                    value: Some("a".into()),
                    effect: "NoSchedule".into(),
                    time_added: None,
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(sync.apply_to(&mut node));
        let taints = node.spec.as_ref().unwrap().taints.clone().unwrap();
        assert_eq!(taints.len(), 1);
        assert_eq!(taints[0].value.as_deref(), Some("b"));
        assert!(
            !sync.apply_to(&mut node),
            "second apply must change nothing"
        );
    }
}
