//! The cluster actions of `up` (pseudo-host `cluster`): what the run changes through the
//! Kubernetes API, decided from what it wants and what it read there, in the order `up` takes
//! them: encryption turned off, RBAC, Secrets rewritten, the state Secret, node labels and
//! taints, addons.
//!
//! What cannot be read (a new cluster, an API server that does not answer) is planned
//! unconditionally, with that as its reason; what was read and already matches is not planned,
//! so `up` on an unchanged cluster has nothing to do here either.

use super::Action;
use crate::kubeapi::ApplyToNode;
use k8s_openapi::api::core::v1::{Node, Taint};
use rkers_core::addon::{AddonObserved, AddonPlan};
use rkers_core::node::{HOSTNAME_LABEL, NodeSync};
use std::collections::BTreeMap;

/// What the run wants of the cluster.
pub struct ClusterDesired {
    /// Encryption is on in the state the cluster runs and off in cluster.yml, and the
    /// controlplane hosts' part of turning it off is planned (a kube-apiserver runs).
    pub disable_encryption: bool,
    /// Why every Secret is rewritten with the provider now first, when it is.
    pub rewrite_secrets: Option<String>,
    /// The RBAC objects `up` applies, as `Kind namespace/name`.
    pub rbac_objects: Vec<String>,
    /// The state the run records in the state Secret, as JSON.
    pub state: serde_json::Value,
    /// Each node's labels, annotations and taints.
    pub nodes: Vec<NodeSync>,
    /// Every addon in RKE1's order, with the objects of its manifest (`Kind namespace/name`).
    pub addons: Vec<(AddonPlan, Vec<String>)>,
    /// The cluster ran before this run (its state has a current state).
    pub existing: bool,
}

/// What the run read through the Kubernetes API.
pub enum ClusterObserved {
    /// Nothing could be read: a new cluster, or an API server that did not answer.
    Unread,
    Read(ApiObserved),
}

pub struct ApiObserved {
    /// RBAC objects missing or different from what `up` applies.
    pub rbac_changed: Vec<String>,
    /// The state the state Secret holds, as JSON.
    pub state_secret: Option<serde_json::Value>,
    pub nodes: Vec<Node>,
    /// Per addon resource name.
    pub addons: BTreeMap<String, AddonObserved>,
}

/// The cluster actions, in the order `up` applies them.
pub fn cluster_actions(desired: &ClusterDesired, observed: &ClusterObserved) -> Vec<Action> {
    let read = match observed {
        ClusterObserved::Read(r) => Some(r),
        ClusterObserved::Unread => None,
    };
    let unread = if desired.existing {
        "the Kubernetes API could not be read"
    } else {
        "new cluster"
    };
    let mut actions = Vec::new();
    if desired.disable_encryption {
        actions.push(Action::DisableEncryption {
            reason: "secrets_encryption_config is off in cluster.yml".into(),
        });
    }
    match read {
        None => actions.push(Action::ApplyRbac {
            objects: desired.rbac_objects.clone(),
            reason: unread.into(),
        }),
        Some(r) if !r.rbac_changed.is_empty() => actions.push(Action::ApplyRbac {
            objects: r.rbac_changed.clone(),
            reason: "missing or changed".into(),
        }),
        Some(_) => {}
    }
    if let Some(reason) = &desired.rewrite_secrets {
        actions.push(Action::RewriteSecrets {
            reason: reason.clone(),
        });
    }
    let state_reason = match read.map(|r| r.state_secret.as_ref()) {
        None => Some(unread),
        Some(None) => Some("not saved yet"),
        Some(Some(stored)) if *stored != desired.state => Some("the state changed"),
        Some(Some(_)) => None,
    };
    if let Some(reason) = state_reason {
        actions.push(Action::SaveStateSecret {
            reason: reason.into(),
        });
    }
    for sync in &desired.nodes {
        let changes = match read {
            None => Some(vec![unread.to_string()]),
            Some(r) => match find_node(&r.nodes, &sync.hostname) {
                None => Some(vec!["not registered yet".to_string()]),
                Some(node) => node_changes(sync, node),
            },
        };
        if let Some(changes) = changes {
            actions.push(Action::SyncNode {
                node: sync.hostname.clone(),
                changes,
                sync: Box::new(sync.clone()),
            });
        }
    }
    for (plan, objects) in &desired.addons {
        if let Some(a) = addon_action(plan, objects, read, desired.existing, unread) {
            actions.push(a);
        }
    }
    actions
}

fn addon_action(
    plan: &AddonPlan,
    objects: &[String],
    read: Option<&ApiObserved>,
    existing: bool,
    unread: &str,
) -> Option<Action> {
    let resource = plan.resource.to_string();
    let Some(read) = read else {
        return match &plan.manifest {
            Some(_) => Some(Action::ApplyAddon {
                resource,
                changed: objects.to_vec(),
                pruned: Vec::new(),
                reason: unread.into(),
                plan: Box::new(plan.clone()),
            }),
            // Only a cluster that ran before can hold what an earlier run deployed.
            None if existing => Some(Action::RemoveAddon {
                resource,
                pruned: Vec::new(),
                reason: format!("turned off; {unread}"),
                plan: Box::new(plan.clone()),
            }),
            None => None,
        };
    };
    let seen = read.addons.get(plan.resource).cloned().unwrap_or_default();
    match &plan.manifest {
        None if seen.stored.is_some() => Some(Action::RemoveAddon {
            resource,
            pruned: seen.pruned,
            reason: "turned off".into(),
            plan: Box::new(plan.clone()),
        }),
        None => None,
        Some(manifest) => {
            let reason = match &seen.stored {
                None => "not deployed yet",
                Some(s) if s != manifest => "its manifest changed",
                Some(_) if !seen.changed.is_empty() => "objects differ from its manifest",
                Some(_) => return None,
            };
            Some(Action::ApplyAddon {
                resource,
                changed: seen.changed,
                pruned: seen.pruned,
                reason: reason.into(),
                plan: Box::new(plan.clone()),
            })
        }
    }
}

/// A host's node, by its `kubernetes.io/hostname` label, case-insensitively as RKE1.
pub fn find_node<'a>(nodes: &'a [Node], hostname: &str) -> Option<&'a Node> {
    nodes.iter().find(|n| {
        n.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HOSTNAME_LABEL))
            .is_some_and(|h| h.eq_ignore_ascii_case(hostname))
    })
}

/// What `sync` changes on `node`, or `None` when it changes nothing.
fn node_changes(sync: &NodeSync, node: &Node) -> Option<Vec<String>> {
    let mut after = node.clone();
    if !sync.apply_to(&mut after) {
        return None;
    }
    let mut out = Vec::new();
    let map = |m: &Option<BTreeMap<String, String>>| m.clone().unwrap_or_default();
    for (what, before, now) in [
        (
            "label",
            map(&node.metadata.labels),
            map(&after.metadata.labels),
        ),
        (
            "annotation",
            map(&node.metadata.annotations),
            map(&after.metadata.annotations),
        ),
    ] {
        for (k, v) in &now {
            if before.get(k) != Some(v) {
                out.push(format!("+{what} {k}={v}"));
            }
        }
        for k in before.keys().filter(|k| !now.contains_key(*k)) {
            out.push(format!("-{what} {k}"));
        }
    }
    let taints = |n: &Node| -> Vec<Taint> {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    let show = |t: &Taint| {
        format!(
            "{}={}:{}",
            t.key,
            t.value.as_deref().unwrap_or_default(),
            t.effect
        )
    };
    let (before, now) = (taints(node), taints(&after));
    for t in now.iter().filter(|t| !before.contains(t)) {
        out.push(format!("+taint {}", show(t)));
    }
    for t in before.iter().filter(|t| !now.contains(t)) {
        out.push(format!("-taint {}", show(t)));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn sync(host: &str, roles: &[&str]) -> NodeSync {
        let roles: BTreeSet<String> = roles.iter().map(|r| r.to_string()).collect();
        NodeSync::for_host(
            host,
            "10.0.0.1",
            "10.0.0.1",
            &roles,
            &BTreeMap::new(),
            &BTreeMap::new(),
            &[],
            &[],
        )
    }

    fn addon(resource: &'static str, manifest: Option<&str>) -> (AddonPlan, Vec<String>) {
        (
            AddonPlan {
                resource,
                template: None,
                manifest: manifest.map(str::to_string),
                critical: true,
                unbundled: false,
            },
            vec!["ConfigMap kube-system/a".to_string()],
        )
    }

    fn desired(existing: bool) -> ClusterDesired {
        ClusterDesired {
            disable_encryption: false,
            rewrite_secrets: None,
            rbac_objects: vec!["ServiceAccount kube-system/rke-job-deployer".into()],
            state: serde_json::json!({"currentState": {"x": 1}}),
            nodes: vec![sync("host1", &["worker"])],
            addons: vec![
                addon("rke-network-plugin", Some("m1")),
                addon("rke-user-addon", None),
            ],
            existing,
        }
    }

    fn texts(actions: &[Action]) -> Vec<String> {
        actions.iter().map(|a| a.to_string()).collect()
    }

    /// The node as a previous sync left it.
    fn synced_node(s: &NodeSync) -> Node {
        let mut node = Node::default();
        node.metadata.labels = Some(BTreeMap::from([(
            HOSTNAME_LABEL.to_string(),
            s.hostname.clone(),
        )]));
        s.apply_to(&mut node);
        node
    }

    fn unchanged(d: &ClusterDesired) -> ApiObserved {
        ApiObserved {
            rbac_changed: Vec::new(),
            state_secret: Some(d.state.clone()),
            nodes: d.nodes.iter().map(synced_node).collect(),
            addons: BTreeMap::from([(
                "rke-network-plugin".to_string(),
                AddonObserved {
                    stored: Some("m1".into()),
                    ..Default::default()
                },
            )]),
        }
    }

    #[test]
    fn a_new_cluster_plans_every_cluster_action_but_removals() {
        let actions = cluster_actions(&desired(false), &ClusterObserved::Unread);
        assert_eq!(
            texts(&actions),
            [
                "apply ServiceAccount kube-system/rke-job-deployer (new cluster)",
                "save the state in Secret kube-system/full-cluster-state (new cluster)",
                "sync node host1: new cluster",
                "apply addon rke-network-plugin (new cluster)\n      apply ConfigMap kube-system/a",
            ]
        );
        // An existing cluster whose API could not be read may hold a turned-off addon.
        let actions = cluster_actions(&desired(true), &ClusterObserved::Unread);
        assert_eq!(
            actions.last().unwrap().to_string(),
            "remove addon rke-user-addon (turned off; the Kubernetes API could not be read)"
        );
    }

    #[test]
    fn an_unchanged_cluster_has_nothing_to_do() {
        let d = desired(true);
        let actions = cluster_actions(&d, &ClusterObserved::Read(unchanged(&d)));
        assert_eq!(texts(&actions), Vec::<String>::new());
    }

    #[test]
    fn each_difference_read_is_one_action() {
        let mut d = desired(true);
        d.disable_encryption = true;
        let mut read = unchanged(&d);
        read.rbac_changed = vec!["ClusterRole proxy-clusterrole-kubeapiserver".into()];
        read.state_secret = Some(serde_json::json!({"currentState": {"x": 0}}));
        // A label rkers set and a role taint were removed by hand.
        read.nodes[0]
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove("node-role.kubernetes.io/worker");
        read.addons.insert(
            "rke-user-addon".into(),
            AddonObserved {
                stored: Some("old".into()),
                pruned: vec!["ConfigMap default/old".into()],
                ..Default::default()
            },
        );
        read.addons.get_mut("rke-network-plugin").unwrap().changed =
            vec!["DaemonSet kube-system/kube-flannel".into()];
        let actions = cluster_actions(&d, &ClusterObserved::Read(read));
        assert_eq!(
            texts(&actions),
            [
                "rewrite every Secret in plain text (secrets_encryption_config is off in \
                 cluster.yml)",
                "apply ClusterRole proxy-clusterrole-kubeapiserver (missing or changed)",
                "save the state in Secret kube-system/full-cluster-state (the state changed)",
                "sync node host1: +label node-role.kubernetes.io/worker=true",
                "apply addon rke-network-plugin (objects differ from its manifest)\n      \
                 apply DaemonSet kube-system/kube-flannel",
                "remove addon rke-user-addon (turned off)\n      prune ConfigMap default/old",
            ]
        );
    }

    #[test]
    fn a_node_not_registered_yet_is_synced_once_it_is() {
        let d = desired(true);
        let mut read = unchanged(&d);
        read.nodes.clear();
        let actions = cluster_actions(&d, &ClusterObserved::Read(read));
        assert_eq!(texts(&actions), ["sync node host1: not registered yet"]);
        let Action::SyncNode { sync, .. } = &actions[0] else {
            panic!("{actions:?}")
        };
        assert_eq!(**sync, d.nodes[0]);
    }

    #[test]
    fn a_changed_manifest_is_applied_even_when_no_object_changes() {
        let d = desired(true);
        let mut read = unchanged(&d);
        read.addons.get_mut("rke-network-plugin").unwrap().stored = Some("m0".into());
        let actions = cluster_actions(&d, &ClusterObserved::Read(read));
        assert_eq!(
            texts(&actions),
            ["apply addon rke-network-plugin (its manifest changed)"]
        );
    }
}
