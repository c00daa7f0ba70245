//! Cordon, drain and uncordon of one node for a rolling upgrade (§17, `upgrade_strategy`), with
//! `kubectl drain`'s rules for which pods may be evicted.
//!
//! RKE1 leaves nodes cordoned when an upgrade fails, and uncordons every node it touches even
//! when an operator had cordoned it on purpose (§32 pain point 18). rkers marks the nodes it
//! cordons with an annotation and only ever uncordons those, so an operator's cordon survives
//! and a failed run's cordon is undone by the next one.

use super::{KubeApi, KubeApiError, find_node};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use std::time::Duration;

/// Marks a node that rkers cordoned; its value is irrelevant.
pub const CORDONED_BY_RKERS: &str = "rkers.io/cordoned-for-upgrade";

/// `upgrade_strategy.node_drain_input`, as `kubectl drain` flags.
#[derive(Clone, Debug, PartialEq)]
pub struct DrainOptions {
    /// Evict pods no controller manages (they are gone for good).
    pub force: bool,
    pub ignore_daemonsets: bool,
    /// Evict pods with emptyDir volumes (their data is lost).
    pub delete_emptydir_data: bool,
    /// `None` lets each pod use its own grace period (RKE1's `-1`).
    pub grace_period: Option<i64>,
    pub timeout: Duration,
}

impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            force: false,
            ignore_daemonsets: true,
            delete_emptydir_data: false,
            grace_period: None,
            timeout: Duration::from_secs(120),
        }
    }
}

/// What a drain does with one pod.
#[derive(Debug, PartialEq, Eq)]
pub enum PodDisposition {
    /// Left alone (a static pod's mirror, a DaemonSet's pod).
    Keep(&'static str),
    Evict,
    /// The drain stops: evicting this pod needs an option that is not set.
    Refuse(String),
}

/// `kubectl drain`'s filters, in its order.
pub fn disposition(pod: &Pod, opts: &DrainOptions) -> PodDisposition {
    let meta = &pod.metadata;
    if meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
    {
        return PodDisposition::Keep("static pod");
    }
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    let controller = meta
        .owner_references
        .as_ref()
        .and_then(|o| o.iter().find(|r| r.controller == Some(true)));
    if let Some(owner) = controller
        && owner.kind == "DaemonSet"
    {
        return if opts.ignore_daemonsets {
            PodDisposition::Keep("DaemonSet pod")
        } else {
            PodDisposition::Refuse(
                "managed by a DaemonSet (set node_drain_input.ignore_daemonsets)".into(),
            )
        };
    }
    if finished {
        return PodDisposition::Evict;
    }
    if controller.is_none() && !opts.force {
        return PodDisposition::Refuse(
            "not managed by a controller and would be lost (set node_drain_input.force)".into(),
        );
    }
    let has_emptydir = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|v| v.iter().any(|v| v.empty_dir.is_some()));
    if has_emptydir && !opts.delete_emptydir_data {
        return PodDisposition::Refuse(
            "uses emptyDir data that would be lost (set node_drain_input.delete_local_data)".into(),
        );
    }
    PodDisposition::Evict
}

/// Whether a cordon call changed the node.
#[derive(Debug, PartialEq, Eq)]
pub enum Cordon {
    /// rkers cordoned it now (or a failed earlier run did); uncordon it when done.
    ByRkers,
    /// Someone else cordoned it; it stays cordoned.
    AlreadyCordoned,
}

fn node_name(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

fn cordoned_by_rkers(node: &Node) -> bool {
    node.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CORDONED_BY_RKERS))
}

fn unschedulable(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

impl KubeApi {
    /// Cordons the host's node for an upgrade and marks it as cordoned by rkers.
    pub async fn cordon_for_upgrade(&self, hostname: &str) -> Result<Cordon, KubeApiError> {
        let node = find_node(self, hostname, 5).await?;
        if unschedulable(&node) && !cordoned_by_rkers(&node) {
            return Ok(Cordon::AlreadyCordoned);
        }
        let patch = serde_json::json!({
            "metadata": {"annotations": {CORDONED_BY_RKERS: "true"}},
            "spec": {"unschedulable": true},
        });
        let name = node_name(&node);
        Api::<Node>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| self.err(&format!("cordon node {name}"), e))?;
        Ok(Cordon::ByRkers)
    }

    /// Uncordons the host's node if rkers cordoned it; returns whether it did.
    pub async fn uncordon_after_upgrade(&self, hostname: &str) -> Result<bool, KubeApiError> {
        let node = find_node(self, hostname, 5).await?;
        if !cordoned_by_rkers(&node) {
            return Ok(false);
        }
        let patch = serde_json::json!({
            "metadata": {"annotations": {CORDONED_BY_RKERS: null}},
            "spec": {"unschedulable": false},
        });
        let name = node_name(&node);
        Api::<Node>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| self.err(&format!("uncordon node {name}"), e))?;
        Ok(true)
    }

    /// Evicts the pods `kubectl drain` would from the host's node and waits until they are
    /// gone. Stops before evicting anything when a pod needs an option that is not set, naming
    /// every such pod. Returns the evicted pods as `namespace/name`.
    pub async fn drain(
        &self,
        hostname: &str,
        opts: &DrainOptions,
    ) -> Result<Vec<String>, KubeApiError> {
        let node = find_node(self, hostname, 5).await?;
        let name = node_name(&node);
        let pods: Api<Pod> = Api::all(self.client.clone());
        let list = pods
            .list(&ListParams::default().fields(&format!("spec.nodeName={name}")))
            .await
            .map_err(|e| self.err(&format!("list pods on node {name}"), e))?;
        let mut evict = Vec::new();
        let mut refused = Vec::new();
        for pod in &list.items {
            let id = format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            match disposition(pod, opts) {
                PodDisposition::Keep(_) => {}
                PodDisposition::Evict => evict.push((
                    id,
                    pod.metadata.namespace.clone().unwrap_or_default(),
                    pod.metadata.name.clone().unwrap_or_default(),
                    pod.metadata.uid.clone(),
                )),
                PodDisposition::Refuse(why) => refused.push(format!("{id}: {why}")),
            }
        }
        if !refused.is_empty() {
            return Err(self.err(
                &format!("drain node {name}"),
                format!("cannot evict:\n    {}", refused.join("\n    ")),
            ));
        }
        let policy = self.eviction_api_version().await?;
        let deadline = tokio::time::Instant::now() + opts.timeout;
        for (id, namespace, pod, _) in &evict {
            self.evict_until_accepted(policy, namespace, pod, opts.grace_period, deadline)
                .await
                .map_err(|e| self.err(&format!("drain node {name}: evict {id}"), e))?;
        }
        for (id, namespace, pod, uid) in &evict {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            loop {
                match api.get_opt(pod).await {
                    Ok(None) => break,
                    Ok(Some(p)) if p.metadata.uid != *uid => break,
                    Ok(Some(_)) | Err(_) => {}
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(self.err(
                        &format!("drain node {name}"),
                        format!(
                            "{id} still terminating after {}s (node_drain_input.timeout)",
                            opts.timeout.as_secs()
                        ),
                    ));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        Ok(evict.into_iter().map(|(id, ..)| id).collect())
    }

    /// policy/v1 Eviction exists from Kubernetes 1.22; older servers only take v1beta1.
    async fn eviction_api_version(&self) -> Result<&'static str, KubeApiError> {
        let minor = self.server_minor().await?;
        Ok(if minor >= 22 {
            "policy/v1"
        } else {
            "policy/v1beta1"
        })
    }

    /// Posts an eviction; a disruption budget that forbids it now (429) is retried until the
    /// deadline, as `kubectl drain` does.
    async fn evict_until_accepted(
        &self,
        api_version: &str,
        namespace: &str,
        pod: &str,
        grace_period: Option<i64>,
        deadline: tokio::time::Instant,
    ) -> Result<(), String> {
        let mut body = serde_json::json!({
            "apiVersion": api_version,
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace},
        });
        if let Some(seconds) = grace_period {
            body["deleteOptions"] = serde_json::json!({"gracePeriodSeconds": seconds});
        }
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        loop {
            let request = http::Request::post(format!(
                "/api/v1/namespaces/{namespace}/pods/{pod}/eviction"
            ))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .map_err(|e| e.to_string())?;
            match self.client.request_text(request).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 429 => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(format!(
                            "a disruption budget still forbids the eviction at the timeout: {}",
                            s.message
                        ));
                    }
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    fn owned_by(kind: &str) -> serde_json::Value {
        serde_json::json!({"metadata": {"name": "p", "namespace": "n", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": kind, "name": "o", "uid": "u", "controller": true}
        ]}})
    }

    #[test]
    fn replicaset_pods_are_evicted() {
        assert_eq!(
            disposition(&pod(owned_by("ReplicaSet")), &DrainOptions::default()),
            PodDisposition::Evict
        );
    }

    #[test]
    fn daemonset_pods_are_kept_or_refused_by_option() {
        let p = pod(owned_by("DaemonSet"));
        assert_eq!(
            disposition(&p, &DrainOptions::default()),
            PodDisposition::Keep("DaemonSet pod")
        );
        let strict = DrainOptions {
            ignore_daemonsets: false,
            ..Default::default()
        };
        assert!(
            matches!(disposition(&p, &strict), PodDisposition::Refuse(m) if m.contains("DaemonSet"))
        );
    }

    #[test]
    fn mirror_pods_are_always_kept() {
        let p = pod(
            serde_json::json!({"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "x"}}}),
        );
        let force = DrainOptions {
            force: true,
            ..Default::default()
        };
        assert_eq!(disposition(&p, &force), PodDisposition::Keep("static pod"));
    }

    #[test]
    fn bare_pods_need_force() {
        let p = pod(serde_json::json!({"metadata": {"name": "p"}}));
        assert!(matches!(
            disposition(&p, &DrainOptions::default()),
            PodDisposition::Refuse(m) if m.contains("force")
        ));
        let force = DrainOptions {
            force: true,
            ..Default::default()
        };
        assert_eq!(disposition(&p, &force), PodDisposition::Evict);
    }

    #[test]
    fn finished_bare_pods_are_evicted_without_force() {
        let p =
            pod(serde_json::json!({"metadata": {"name": "p"}, "status": {"phase": "Succeeded"}}));
        assert_eq!(
            disposition(&p, &DrainOptions::default()),
            PodDisposition::Evict
        );
    }

    #[test]
    fn emptydir_pods_need_delete_local_data() {
        let mut v = owned_by("ReplicaSet");
        v["spec"] =
            serde_json::json!({"containers": [], "volumes": [{"name": "d", "emptyDir": {}}]});
        let p = pod(v);
        assert!(matches!(
            disposition(&p, &DrainOptions::default()),
            PodDisposition::Refuse(m) if m.contains("delete_local_data")
        ));
        let allow = DrainOptions {
            delete_emptydir_data: true,
            ..Default::default()
        };
        assert_eq!(disposition(&p, &allow), PodDisposition::Evict);
    }
}
