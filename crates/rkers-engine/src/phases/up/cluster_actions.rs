//! Step 3, the cluster's part: what `up` wants of the cluster (RBAC, the state Secret, node
//! labels and taints, addons, encryption changes) and what the Kubernetes API holds now, read
//! only, turned into the `cluster` actions by [`crate::diff::cluster`]; and each host's log
//! links, which follow from its created containers.

use super::UpError;
use super::state::Loaded;
use crate::addons::plan::ManifestsUnread;
use crate::cluster::Cluster;
use crate::config::RkeConfig;
use crate::diff::Action;
use crate::diff::cluster::{ApiObserved, ClusterDesired, ClusterObserved, cluster_actions};
use crate::kubeapi::{KubeApi, NodeSync, TaintSpec};
use crate::output::Reporter;
use crate::plan::{ClusterPlan, HostFacts};
use k8s_openapi::api::core::v1::Node;
use std::collections::{BTreeMap, BTreeSet};

/// The addons of the run and the cluster actions, in the order `up` applies them.
pub(super) struct PlannedCluster {
    pub(super) addons: Vec<crate::addons::AddonPlan>,
    pub(super) actions: Vec<Action>,
}

/// The provider file the cluster runs with when encryption is on there and turned off in
/// cluster.yml.
pub(super) fn encryption_turned_off(loaded: &Loaded) -> Option<&str> {
    let applied = loaded
        .old
        .as_ref()?
        .current_state
        .encryption_config
        .as_str();
    (!applied.is_empty() && loaded.state.desired_state.encryption_config.is_empty())
        .then_some(applied)
}

/// `disable_encryption`: the controlplane hosts' part of turning encryption off is planned
/// ([`super::plan`]), so the Secrets are rewritten in plain text after it.
pub(super) async fn plan_cluster(
    cluster: &Cluster,
    loaded: &Loaded,
    plan: &ClusterPlan,
    disable_encryption: bool,
    reporter: &Reporter,
) -> Result<PlannedCluster, UpError> {
    let addons = crate::phases::addons::addon_plans(cluster).await?;
    // One client for everything this step reads; a new cluster has no API server yet.
    let api = match loaded.old_current {
        None => Err(ManifestsUnread::NewCluster),
        Some(_) => connect(cluster).await,
    };
    let addons = keep_deployed(api.as_ref(), addons, reporter).await?;
    let mut with_objects = Vec::new();
    for a in &addons {
        let objects = crate::phases::addons::manifest_objects(a)?;
        with_objects.push((a.clone(), objects));
    }
    let old_encryption = loaded
        .old
        .as_ref()
        .map(|o| o.current_state.encryption_config.as_str())
        .unwrap_or_default();
    let new_encryption = loaded.state.desired_state.encryption_config.as_str();
    let rewrite_secrets =
        (!new_encryption.is_empty() && new_encryption != old_encryption).then(|| {
            if old_encryption.is_empty() {
                "encryption turned on"
            } else {
                "the encryption provider changed"
            }
            .to_string()
        });
    let mut recorded = loaded.state.clone();
    recorded.promote_desired_to_current();
    // The state's own JSON, which always parses back.
    let state = comparable(
        serde_json::from_str(&recorded.to_json()?).map_err(crate::state::StateError::Serialize)?,
    );
    let rbac = rbac(cluster);
    let desired = ClusterDesired {
        disable_encryption,
        rewrite_secrets,
        rbac_objects: crate::kubeapi::authz_objects(rbac),
        state,
        nodes: node_syncs(cluster, loaded.old_current.as_deref(), plan),
        addons: with_objects,
        existing: loaded.old_current.is_some(),
    };
    let read = match &api {
        Err(ManifestsUnread::NewCluster) => None,
        Err(e) => Some(Err(e.to_string())),
        Ok(api) => Some(observe(api, &addons, rbac).await),
    };
    let observed = match read {
        None => ClusterObserved::Unread,
        Some(Ok(read)) => ClusterObserved::Read(read),
        Some(Err(e)) => {
            reporter.warn(format!(
                "the Kubernetes API could not be read ({e}): RBAC, the state Secret, node \
                 labels and taints and every addon are planned as changes"
            ));
            ClusterObserved::Unread
        }
    };
    Ok(PlannedCluster {
        actions: cluster_actions(&desired, &observed),
        addons,
    })
}

/// Addons whose template is not bundled keep the manifest the cluster runs (RKE1's ConfigMap),
/// read here, before anything else is decided; each says so in one line, in the dry run as in
/// the run. A cluster that runs none of it is refused before anything changes.
async fn keep_deployed(
    api: Result<&KubeApi, &ManifestsUnread>,
    addons: Vec<crate::addons::AddonPlan>,
    reporter: &Reporter,
) -> Result<Vec<crate::addons::AddonPlan>, crate::addons::AddonError> {
    let unbundled: Vec<&str> = addons
        .iter()
        .filter(|a| a.unbundled)
        .map(|a| a.resource)
        .collect();
    if unbundled.is_empty() {
        return Ok(addons);
    }
    let stored;
    let read = match api {
        Ok(api) => {
            stored = read_stored_manifests(api, &unbundled).await;
            stored.as_ref()
        }
        Err(e) => Err(e),
    };
    let (addons, notes) = crate::addons::plan::keep_deployed(addons, read)?;
    for note in notes {
        reporter.warn(note);
    }
    Ok(addons)
}

/// The manifests RKE1's ConfigMaps hold for `resources`, read only.
async fn read_stored_manifests(
    api: &KubeApi,
    resources: &[&str],
) -> Result<BTreeMap<String, String>, ManifestsUnread> {
    let mut out = BTreeMap::new();
    for resource in resources {
        if let Some(manifest) = crate::addons::apply::stored_manifest(api, resource).await? {
            out.insert(resource.to_string(), manifest);
        }
    }
    Ok(out)
}

/// A client of the cluster's API server, through the kubeconfig rkers keeps.
async fn connect(cluster: &Cluster) -> Result<KubeApi, ManifestsUnread> {
    let kubeconfig = cluster
        .files
        .storage
        .read_to_string(
            &cluster.files.kubeconfig_path,
            rkers_core::bounded::KUBECONFIG,
        )
        .map_err(|source| ManifestsUnread::Kubeconfig {
            path: cluster.files.kubeconfig_path.display().to_string(),
            source,
        })?;
    Ok(KubeApi::from_kubeconfig(&kubeconfig).await?)
}

/// Whether the authorization mode is RBAC (RKE1's default).
pub(super) fn rbac(cluster: &Cluster) -> bool {
    cluster.config.authorization.mode.is_empty() || cluster.config.authorization.mode == "rbac"
}

/// What the cluster holds, read only: the RBAC objects and addons are each server-side
/// applied as a dry run and compared with what is stored.
async fn observe(
    api: &KubeApi,
    addons: &[crate::addons::AddonPlan],
    rbac: bool,
) -> Result<ApiObserved, String> {
    let state_secret = match api.read_state_secret().await.map_err(|e| e.to_string())? {
        Some(text) => {
            Some(comparable(serde_json::from_str(&text).map_err(|e| {
                format!("Secret kube-system/full-cluster-state: {e}")
            })?))
        }
        None => None,
    };
    let nodes: kube::Api<Node> = kube::Api::all(api.client.clone());
    let nodes = nodes
        .list(&Default::default())
        .await
        .map_err(|e| format!("list nodes: {e}"))?
        .items;
    let rbac_changed = api.authz_changes(rbac).await.map_err(|e| e.to_string())?;
    let mut seen = BTreeMap::new();
    for a in addons {
        let observed = crate::addons::apply::observe_addon(api, a)
            .await
            .map_err(|e| e.to_string())?;
        seen.insert(a.resource.to_string(), observed);
    }
    Ok(ApiObserved {
        rbac_changed,
        state_secret,
        nodes,
        addons: seen,
    })
}

/// A state as compared with the state Secret's: without what every run changes by itself.
/// The Secret gets the state as the run holds it, which carries rkers' mark from the second
/// run on (it comes from the state file); and every run re-signs the `kube-admin` certificate
/// (as RKE1 does), whose kubeconfig also names the path rkers was given. A run that changes
/// nothing else leaves the Secret as it is: the certificate it holds stays valid (same key,
/// same CA).
fn comparable(mut state: serde_json::Value) -> serde_json::Value {
    if let Some(map) = state.as_object_mut() {
        map.remove(crate::state::RKERS_MARK);
        // Only the state file keeps the run history (see `StateFile::without_run_history`).
        map.remove(crate::state::PREVIOUS_KEY);
        map.remove(crate::state::CANDIDATE_KEY);
    }
    for side in ["desiredState", "currentState"] {
        if let Some(admin) = state
            .pointer_mut(&format!("/{side}/certificatesBundle/kube-admin"))
            .and_then(serde_json::Value::as_object_mut)
        {
            for field in ["certificatePEM", "config", "configPath"] {
                admin.remove(field);
            }
        }
    }
    state
}

fn taints_of(cfg: Option<&RkeConfig>, address: &str) -> Vec<TaintSpec> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| {
            n.taints
                .iter()
                .map(|t| TaintSpec::new(&t.key, &t.value, &t.effect))
                .collect()
        })
        .unwrap_or_default()
}

fn labels_of(cfg: Option<&RkeConfig>, address: &str) -> BTreeMap<String, String> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| n.labels.clone())
        .unwrap_or_default()
}

/// Each planned host's node labels, annotations and taints (§21).
fn node_syncs(cluster: &Cluster, old: Option<&RkeConfig>, plan: &ClusterPlan) -> Vec<NodeSync> {
    plan.hosts
        .iter()
        .map(|h| {
            let roles: BTreeSet<String> = [
                ("etcd", h.roles.etcd),
                ("controlplane", h.roles.controlplane),
                ("worker", h.roles.worker),
            ]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(r, _)| r.to_string())
            .collect();
            NodeSync::for_host(
                &h.hostname,
                &h.address,
                &h.internal_address,
                &roles,
                &labels_of(Some(&cluster.config), &h.address),
                &labels_of(old, &h.address),
                &taints_of(Some(&cluster.config), &h.address),
                &taints_of(old, &h.address),
            )
        })
        .collect()
}

/// RKE1's log links (§8.5) for the containers a Linux host's actions create or recreate, the
/// host's last action.
pub(super) fn log_links(
    actions: &[Action],
    platform: crate::plan::Platform,
    facts: Option<&HostFacts>,
) -> Option<Action> {
    // The links are made by a Linux helper container.
    if !platform.runs_linux_helpers() {
        return None;
    }
    let containers: Vec<String> = actions
        .iter()
        .filter_map(Action::new_container)
        .map(str::to_string)
        .collect();
    (!containers.is_empty()).then(|| Action::LinkLogs {
        containers,
        docker_root: facts.map(|f| f.docker_root_dir.clone()).unwrap_or_default(),
    })
}
