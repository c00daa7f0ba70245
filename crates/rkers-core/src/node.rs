//! What rkers wants of a host's Kubernetes Node: its labels, annotations and taints (§21), as
//! [`NodeSync`] decides them from the host's roles and cluster.yml. The root package applies
//! them to the Node objects it reads through the API.

use std::collections::{BTreeMap, BTreeSet};

pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
pub const EXTERNAL_ADDRESS_ANNOTATION: &str = "rke.cattle.io/external-ip";
pub const INTERNAL_ADDRESS_ANNOTATION: &str = "rke.cattle.io/internal-ip";
pub const ROLE_LABELS: [(&str, &str); 3] = [
    ("etcd", "node-role.kubernetes.io/etcd"),
    ("controlplane", "node-role.kubernetes.io/controlplane"),
    ("worker", "node-role.kubernetes.io/worker"),
];
/// Taints RKE1 reserves for hosts without the worker role (§18).
pub const ETCD_TAINT: (&str, &str, &str) = ("node-role.kubernetes.io/etcd", "true", "NoExecute");
pub const CONTROLPLANE_TAINT: (&str, &str, &str) =
    ("node-role.kubernetes.io/controlplane", "true", "NoSchedule");

/// A taint identified, as RKE1 identifies it, by key and effect.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TaintSpec {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl TaintSpec {
    pub fn new(key: &str, value: &str, effect: &str) -> Self {
        TaintSpec {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        }
    }
}

/// What to change on one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSync {
    pub hostname: String,
    pub address: String,
    pub internal_address: String,
    pub labels_to_add: BTreeMap<String, String>,
    pub labels_to_delete: BTreeSet<String>,
    pub taints_to_add: Vec<TaintSpec>,
    pub taints_to_delete: Vec<TaintSpec>,
}

impl NodeSync {
    /// The changes for a host, from its roles and labels/taints in the new config and what the
    /// previous run applied (`old_*`, empty for a new host). Labels set by others are never
    /// touched: only role labels and labels rkers itself set before are deleted.
    #[allow(clippy::too_many_arguments)]
    pub fn for_host(
        hostname: &str,
        address: &str,
        internal_address: &str,
        roles: &BTreeSet<String>,
        labels: &BTreeMap<String, String>,
        old_labels: &BTreeMap<String, String>,
        taints: &[TaintSpec],
        old_taints: &[TaintSpec],
    ) -> Self {
        let mut sync = NodeSync {
            hostname: hostname.to_string(),
            address: address.to_string(),
            internal_address: internal_address.to_string(),
            ..Default::default()
        };
        for (role, label) in ROLE_LABELS {
            if roles.contains(role) {
                sync.labels_to_add.insert(label.into(), "true".into());
            } else {
                sync.labels_to_delete.insert(label.into());
            }
        }
        for (k, v) in labels {
            sync.labels_to_add.insert(k.clone(), v.clone());
        }
        for k in old_labels.keys() {
            if !labels.contains_key(k) {
                sync.labels_to_delete.insert(k.clone());
            }
        }
        let is_worker = roles.contains("worker");
        let mut wanted: Vec<TaintSpec> = taints.to_vec();
        for (role, taint) in [("etcd", ETCD_TAINT), ("controlplane", CONTROLPLANE_TAINT)] {
            let t = TaintSpec::new(taint.0, taint.1, taint.2);
            if !is_worker && roles.contains(role) {
                wanted.push(t);
            } else {
                sync.taints_to_delete.push(t);
            }
        }
        let same = |a: &TaintSpec, b: &TaintSpec| a.key == b.key && a.effect == b.effect;
        for old in old_taints {
            match wanted.iter().find(|w| same(w, old)) {
                Some(w) if w.value == old.value => {}
                _ => sync.taints_to_delete.push(old.clone()),
            }
        }
        sync.taints_to_delete
            .retain(|d| !wanted.iter().any(|w| w == d));
        sync.taints_to_add = wanted;
        sync
    }
}
