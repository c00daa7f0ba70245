//! `rkers doctor --fix calico-runtime|flannel-nat|webhooks` and `--restore-webhooks` decided:
//! which nodes get calico's runtime repair, whose flannel pod restarts, which blocking
//! admission webhook configurations are backed up and deleted (never one Kubernetes or rkers'
//! addons installed), what the backup holds, and what the restore puts back. No I/O: the engine (`rkers::doctor::fix`) probes the nodes,
//! reads the configurations and the backup file, and applies these stages.
//!
//! - `--fix calico-runtime` runs one stage, the broken nodes one after the other (each printed
//!   before it runs; the engine then restarts the calico-node pods of the nodes it fixed that
//!   are still not ready).
//! - `--fix flannel-nat` runs one stage: the flannel pod of each node whose nat chain is lost
//!   deleted, one node after the other (the engine waits for each node's chain to come back).
//! - `--fix webhooks` runs two: the backup written next to the state (merged with an earlier
//!   one), then the configurations deleted (the engine then wakes the CNI DaemonSets and waits
//!   for their pods).
//! - `--restore-webhooks` runs one: every configuration of the backup created again.

#[cfg(test)]
mod tests;

use super::Action;
use crate::changeset::{CLUSTER, Changeset, LOCAL, Pace};
use crate::files::FileWrite;
use serde_json::Value;
use std::fmt;

/// Webhook configurations rkers' own addons install; never removed by `--fix`.
pub const ADDON_CONFIGS: &[&str] = &["ingress-nginx-admission"];

/// The kind of an admission webhook configuration.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Validating,
    Mutating,
}

impl Kind {
    /// The resource as kubectl names it.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Validating => "validatingwebhookconfiguration",
            Kind::Mutating => "mutatingwebhookconfiguration",
        }
    }

    /// The object's `kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Kind::Validating => "ValidatingWebhookConfiguration",
            Kind::Mutating => "MutatingWebhookConfiguration",
        }
    }

    /// The kind an object's `kind` names, if it is a webhook configuration.
    pub fn of(kind: &str) -> Option<Kind> {
        [Kind::Validating, Kind::Mutating]
            .into_iter()
            .find(|k| k.kind() == kind)
    }
}

/// Why `--fix` must leave a configuration alone, if so: Kubernetes installed it (its name
/// starts with `system:` or it has the `kubernetes.io/bootstrapping` label), or rkers' addons
/// did (one of [`ADDON_CONFIGS`], or rkers' field manager wrote it).
pub fn protected(name: &str, bootstrapping: bool, managed_by_rkers: bool) -> Option<String> {
    if name.starts_with("system:") || bootstrapping {
        return Some("installed by Kubernetes".into());
    }
    if ADDON_CONFIGS.contains(&name) || managed_by_rkers {
        return Some("installed by rkers' addons".into());
    }
    None
}

/// A webhook configuration by kind and name.
pub type ConfigRef = (Kind, String);
/// A configuration `--fix` must leave alone, and who installed it.
pub type Protected = (Kind, String, String);

/// One blocking webhook as the decision needs it: its configuration and why it is protected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocker {
    pub kind: Kind,
    pub config: String,
    pub protected: Option<String>,
}

/// The distinct configurations of `blocking`: those `--fix` may remove, and those it keeps.
pub fn removable(blocking: &[Blocker]) -> (Vec<ConfigRef>, Vec<Protected>) {
    let mut ok = std::collections::BTreeSet::new();
    let mut kept = std::collections::BTreeSet::new();
    for b in blocking {
        match &b.protected {
            None => {
                ok.insert((b.kind, b.config.clone()));
            }
            Some(who) => {
                kept.insert((b.kind, b.config.clone(), who.clone()));
            }
        }
    }
    (ok.into_iter().collect(), kept.into_iter().collect())
}

// ---------------------------------------------------------------- calico-runtime

/// The stage of `--fix calico-runtime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalicoStage {
    /// The broken nodes' directories and tmpfiles.d entry written, one node after the other.
    Repair,
}

impl fmt::Display for CalicoStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CalicoStage::Repair => "calico-runtime",
        })
    }
}

/// What the probe found on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CalicoNode {
    /// The host's address (the changeset's key).
    pub host: String,
    pub node: String,
    /// The check's verdict: nothing to fix.
    pub healthy: bool,
    /// The directories that are wrong, with what the host has (`missing`, or mode and owner).
    pub directories: Vec<(String, String)>,
    /// Why the tmpfiles.d entry is wrong, if it is.
    pub entry_problem: Option<String>,
}

/// What the repair writes: the directories' mode and owner, the entry's path, and the image of
/// the helper container that writes them.
#[derive(Clone, Debug)]
pub struct CalicoRepair {
    pub mode: u32,
    pub owner: String,
    pub entry: String,
    pub image: String,
}

/// Every node the check did not pass gets the repair: its wrong directories and its entry.
/// The helper writes both whatever was found, so a node the check failed for another reason
/// still gets the entry written.
pub fn calico_fix(repair: &CalicoRepair, nodes: &[CalicoNode]) -> Changeset<CalicoStage> {
    let mut changes = Changeset::default();
    for n in nodes.iter().filter(|n| !n.healthy) {
        for (path, found) in &n.directories {
            changes.push(
                CalicoStage::Repair,
                Pace::OneAtATime,
                &n.host,
                Action::EnsureCniDirectory {
                    path: path.clone(),
                    mode: format!("{:04o}", repair.mode),
                    owner: repair.owner.clone(),
                    found: found.clone(),
                    image: repair.image.clone(),
                },
            );
        }
        let reason = match (&n.entry_problem, n.directories.is_empty()) {
            (Some(problem), _) => Some(problem.clone()),
            (None, true) => Some("the check failed; the entry is written again".to_string()),
            (None, false) => None,
        };
        if let Some(reason) = reason {
            changes.push(
                CalicoStage::Repair,
                Pace::OneAtATime,
                &n.host,
                Action::WriteTmpfilesEntry {
                    path: repair.entry.clone(),
                    reason,
                    image: repair.image.clone(),
                },
            );
        }
    }
    changes
}

// ---------------------------------------------------------------- flannel-nat

/// The stage of `--fix flannel-nat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlannelStage {
    /// The broken nodes' flannel (or canal) pods deleted, one node after the other, each node's
    /// chain waited for before the next.
    Restart,
}

impl fmt::Display for FlannelStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlannelStage::Restart => "flannel-nat",
        })
    }
}

/// What doctor's nat check found on one node, and the flannel pod that runs there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlannelNode {
    /// The host's address (the changeset's key).
    pub host: String,
    pub node: String,
    /// The check passed: nothing to fix.
    pub healthy: bool,
    /// The check's one-line verdict.
    pub summary: String,
    /// The node's flannel or canal pod: namespace and name.
    pub pod: Option<(String, String)>,
}

/// Every node whose `FLANNEL-POSTRTG` chain (or POSTROUTING's jump to it) is missing gets its
/// flannel pod deleted: flannel writes the chain when it starts (incidents.md §2), and the
/// DaemonSet starts the successor at once. One node at a time, so a flannel that cannot start
/// again stops the fix after one node. A broken node without a pod is [`flannel_unfixable`].
pub fn flannel_fix(nodes: &[FlannelNode]) -> Changeset<FlannelStage> {
    let mut changes = Changeset::default();
    for n in nodes.iter().filter(|n| !n.healthy) {
        if let Some((namespace, name)) = &n.pod {
            changes.push(
                FlannelStage::Restart,
                Pace::OneAtATime,
                &n.host,
                Action::DeletePod {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    node: n.node.clone(),
                    reason: format!("{}; its successor writes the nat rules again", n.summary),
                },
            );
        }
    }
    changes
}

/// The broken nodes `--fix flannel-nat` cannot fix: no flannel pod runs there to restart. Host
/// and why, naming the node.
pub fn flannel_unfixable(nodes: &[FlannelNode]) -> Vec<(String, String)> {
    nodes
        .iter()
        .filter(|n| !n.healthy && n.pod.is_none())
        .map(|n| {
            (
                n.host.clone(),
                format!(
                    "host {}: node {}: {}, and no flannel or canal pod runs there to restart \
                     (is its DaemonSet scheduled on the node?)",
                    n.host, n.node, n.summary
                ),
            )
        })
        .collect()
}

// ---------------------------------------------------------------- webhooks

/// The stages of `--fix webhooks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookStage {
    /// The removed configurations saved next to the state, before any is deleted.
    Backup,
    /// The configurations deleted.
    Delete,
}

impl fmt::Display for WebhookStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WebhookStage::Backup => "webhooks-backup",
            WebhookStage::Delete => "webhooks-delete",
        })
    }
}

/// Server-set fields a create would refuse or that mean nothing once restored.
const SERVER_FIELDS: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
];

/// `object` without the fields the API server sets.
pub fn strip_meta(mut object: Value) -> Value {
    if let Some(m) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in SERVER_FIELDS {
            m.remove(*k);
        }
    }
    object
}

/// Adds `items` to the backup's, keeping what an earlier `--fix` saved (same kind and name:
/// the earlier copy wins, it is the one from before any removal).
pub fn merge_backup(existing: Vec<Value>, items: Vec<Value>) -> Value {
    let key = |v: &Value| {
        (
            v["kind"].as_str().unwrap_or("").to_string(),
            v["metadata"]["name"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut all = existing;
    for i in items {
        if !all.iter().any(|e| key(e) == key(&i)) {
            all.push(i);
        }
    }
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": all})
}

/// Where the backup goes: its directory and file name (next to the state file).
#[derive(Clone, Debug)]
pub struct BackupFile {
    pub dir: String,
    pub name: String,
}

impl BackupFile {
    pub fn path(&self) -> String {
        std::path::Path::new(&self.dir)
            .join(&self.name)
            .display()
            .to_string()
    }
}

/// The backup file's mode: it holds the configurations' client settings.
pub const BACKUP_MODE: u32 = 0o600;

/// `--fix webhooks`: the removable configurations (`objects`, as read, in the order of
/// [`removable`]) backed up into `backup` with what it held (`existing`), then deleted.
/// Nothing when none is removable.
pub fn fix_webhooks(
    backup: &BackupFile,
    existing: Vec<Value>,
    objects: Vec<(ConfigRef, Value)>,
) -> Result<Changeset<WebhookStage>, serde_json::Error> {
    let mut changes = Changeset::default();
    if objects.is_empty() {
        return Ok(changes);
    }
    let refs: Vec<ConfigRef> = objects.iter().map(|(r, _)| r.clone()).collect();
    let merged = merge_backup(
        existing,
        objects.into_iter().map(|(_, o)| strip_meta(o)).collect(),
    );
    let contents = serde_json::to_string_pretty(&merged)?.into_bytes();
    changes.push(
        WebhookStage::Backup,
        Pace::OneAtATime,
        LOCAL,
        Action::WriteFileSet {
            dir: backup.dir.clone(),
            files: vec![FileWrite {
                path: backup.name.clone(),
                mode: BACKUP_MODE,
                // What it backs up, as the run says it.
                reason: refs
                    .iter()
                    .map(|(k, n)| format!("{}/{n}", k.resource()))
                    .collect::<Vec<_>>()
                    .join(", "),
                contents,
            }],
        },
    );
    for (kind, name) in refs {
        changes.push(
            WebhookStage::Delete,
            Pace::OneAtATime,
            CLUSTER,
            Action::DeleteWebhookConfiguration { kind, name },
        );
    }
    Ok(changes)
}

// ---------------------------------------------------------------- --restore-webhooks

/// The stage of `--restore-webhooks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreStage {
    /// Every configuration of the backup created again, unless one of its name exists.
    Create,
}

impl fmt::Display for RestoreStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RestoreStage::Create => "webhooks-restore",
        })
    }
}

/// Why the backup cannot be restored; nothing was changed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreRefused {
    #[error(
        "{path}: no backup of webhook configurations (nothing was removed by `rkers doctor --fix webhooks`)"
    )]
    NoBackup { path: String },
    #[error("{path}: unexpected kind {kind:?}")]
    UnexpectedKind { path: String, kind: String },
}

/// `--restore-webhooks`: every item of the backup `path` created again.
pub fn restore_webhooks(
    path: &str,
    items: Vec<Value>,
) -> Result<Changeset<RestoreStage>, RestoreRefused> {
    if items.is_empty() {
        return Err(RestoreRefused::NoBackup {
            path: path.to_string(),
        });
    }
    let mut changes = Changeset::default();
    for object in items {
        let kind_name = object["kind"].as_str().unwrap_or_default().to_string();
        let kind = Kind::of(&kind_name).ok_or_else(|| RestoreRefused::UnexpectedKind {
            path: path.to_string(),
            kind: kind_name.clone(),
        })?;
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        changes.push(
            RestoreStage::Create,
            Pace::OneAtATime,
            CLUSTER,
            Action::CreateWebhookConfiguration {
                kind,
                name,
                from: path.to_string(),
                object,
            },
        );
    }
    Ok(changes)
}
