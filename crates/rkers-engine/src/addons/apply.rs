//! Applying one addon: server-side apply of every object of its manifest (field manager
//! `rkers`), pruning what the previous manifest listed and the new one lacks, and RKE1's
//! ConfigMap `kube-system/<resource>` that holds the manifest (§19.2).

use super::{AddonError, AddonPlan};
use crate::kubeapi::{FIELD_MANAGER, KubeApi, stored_content};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// Where RKE1 keeps each addon's manifest.
pub const ADDON_NAMESPACE: &str = "kube-system";
/// How long to wait for an object that is being deleted before applying it again.
const TERMINATING_WAIT: Duration = Duration::from_secs(120);

/// The identity of one manifest object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    pub api_version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects and for namespaced ones that name none (`default`).
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

impl ObjectId {
    /// The namespace a namespaced object lives in: its own, else `default`.
    pub fn namespace_or_default(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }

    pub fn of(v: &Value) -> Option<ObjectId> {
        Some(ObjectId {
            api_version: v.get("apiVersion")?.as_str()?.to_string(),
            kind: v.get("kind")?.as_str()?.to_string(),
            namespace: v["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            name: v["metadata"]["name"].as_str()?.to_string(),
        })
    }

    fn gvk(&self) -> GroupVersionKind {
        let (group, version) = match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        };
        GroupVersionKind::gvk(group, version, &self.kind)
    }
}

/// The objects of a manifest, in order; empty documents are skipped and `kind: List` expanded.
pub fn parse_manifest(resource: &str, text: &str) -> Result<Vec<Value>, AddonError> {
    let mut out = Vec::new();
    for (index, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let doc = serde::Deserialize::deserialize(doc).map_err(|e: serde_norway::Error| {
            AddonError::Manifest {
                resource: resource.to_string(),
                index: index + 1,
                message: e.to_string(),
            }
        })?;
        let doc: Value = doc;
        if doc.is_null() {
            continue;
        }
        let items = if doc["kind"].as_str().is_some_and(|k| k.ends_with("List")) {
            doc["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![doc]
        };
        for item in items {
            if item.is_null() {
                continue;
            }
            if ObjectId::of(&item).is_none() {
                return Err(AddonError::Manifest {
                    resource: resource.to_string(),
                    index: index + 1,
                    message: "an object needs apiVersion, kind and metadata.name".into(),
                });
            }
            out.push(item);
        }
    }
    Ok(out)
}

/// Kinds whose pod template sits at these paths; their container ports get a protocol too.
const POD_SPEC_PATHS: &[(&str, &[&str])] = &[
    ("Pod", &["spec"]),
    ("Deployment", &["spec", "template", "spec"]),
    ("DaemonSet", &["spec", "template", "spec"]),
    ("StatefulSet", &["spec", "template", "spec"]),
    ("ReplicaSet", &["spec", "template", "spec"]),
    ("ReplicationController", &["spec", "template", "spec"]),
    ("Job", &["spec", "template", "spec"]),
    (
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
];

/// A Deployment whose replica count another field manager set (the DNS autoscaler, an
/// operator's `kubectl scale`) keeps it: the applied copy leaves `spec.replicas` out, so rkers
/// neither changes it nor reads the difference as a change. KDM's CoreDNS templates before
/// `coredns-v1.8.3-rancher3` (Kubernetes v1.24 and older) say `replicas: 1` while the autoscaler
/// beside them scales the Deployment: applied as written, every `up` set it back to one, and a
/// no-op `up` on a real v1.24 cluster planned that change. RKE1 does not re-apply an addon
/// whose manifest did not change. A Deployment rkers itself scaled last gets the manifest's count.
pub fn leave_replicas_to_their_scaler(object: &mut Value, existing: Option<&DynamicObject>) {
    let deployment = object["kind"] == "Deployment"
        && object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("apps/"));
    let scaled_elsewhere = existing.is_some_and(|o| {
        o.metadata.managed_fields.iter().flatten().any(|m| {
            m.manager.as_deref() != Some(FIELD_MANAGER)
                && m.fields_v1
                    .as_ref()
                    .is_some_and(|f| f.0.pointer("/f:spec/f:replicas").is_some())
        })
    });
    if deployment
        && scaled_elsewhere
        && let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("replicas");
    }
}

/// Writes the `protocol: TCP` that the API server would default into Service ports and
/// container ports that omit it. Server-side apply needs it before defaulting: `protocol` is part
/// of those lists' merge keys, and API servers before 1.21 refuse such an element ("associative
/// list with keys has an element that omits key field \"protocol\""); KDM's ingress-nginx
/// admission Service is one. Kubernetes stores the same value, so nothing reads as changed.
/// Built-in kinds only: a custom resource's schema may have no such field.
pub fn fill_port_protocols(object: &mut Value) {
    fn fill(ports: Option<&mut Value>, port_key: &str) {
        let Some(ports) = ports.and_then(Value::as_array_mut) else {
            return;
        };
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            if port.contains_key(port_key) && !port.contains_key("protocol") {
                port.insert("protocol".into(), json!("TCP"));
            }
        }
    }
    let core = |o: &Value| {
        let v = o["apiVersion"].as_str().unwrap_or_default();
        v == "v1"
            || v.starts_with("apps/")
            || v.starts_with("batch/")
            || v.starts_with("extensions/")
    };
    if !core(object) {
        return;
    }
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    if kind == "Service" {
        fill(object.pointer_mut("/spec/ports"), "port");
        return;
    }
    let Some((_, path)) = POD_SPEC_PATHS.iter().find(|(k, _)| *k == kind) else {
        return;
    };
    let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
    let Some(pod) = object.pointer_mut(&pointer) else {
        return;
    };
    for list in ["containers", "initContainers"] {
        if let Some(containers) = pod.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                fill(c.get_mut("ports"), "containerPort");
            }
        }
    }
}

/// What applying one addon did (or, in a dry run, would do).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AddonChange {
    pub resource: String,
    /// Every object of the new manifest.
    pub objects: Vec<ObjectId>,
    /// Objects that were created or whose stored state changed.
    pub changed: Vec<ObjectId>,
    /// Objects of the previous manifest that were deleted.
    pub pruned: Vec<ObjectId>,
}

/// Resolves kinds to API resources through discovery, once per kind.
pub struct Resolver<'a> {
    api: &'a KubeApi,
    cache: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>,
}

impl<'a> Resolver<'a> {
    pub fn new(api: &'a KubeApi) -> Self {
        Resolver {
            api,
            cache: HashMap::new(),
        }
    }

    /// The API of `id`; retries for a while, since a custom resource's kind appears in
    /// discovery a moment after its CRD was created.
    async fn resolve(
        &mut self,
        id: &ObjectId,
        wait: bool,
    ) -> Result<Option<Api<DynamicObject>>, kube::Error> {
        let gvk = id.gvk();
        if !self.cache.contains_key(&gvk) {
            let mut tries = if wait { 15 } else { 1 };
            loop {
                match kube::discovery::pinned_kind(&self.api.client, &gvk).await {
                    Ok(found) => {
                        self.cache.insert(gvk.clone(), found);
                        break;
                    }
                    Err(e) => {
                        tries -= 1;
                        if tries == 0 {
                            if is_missing_kind(&e) {
                                return Ok(None);
                            }
                            return Err(e);
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }
        let (resource, caps) = &self.cache[&gvk];
        let client = self.api.client.clone();
        Ok(Some(match caps.scope {
            Scope::Namespaced => {
                let ns = if id.namespace.is_empty() {
                    "default"
                } else {
                    &id.namespace
                };
                Api::namespaced_with(client, ns, resource)
            }
            Scope::Cluster => Api::all_with(client, resource),
        }))
    }
}

/// Deletes one object through its own API version: `false` when it was already gone or its
/// kind is no longer served.
pub async fn delete_object(api: &KubeApi, id: &ObjectId) -> Result<bool, kube::Error> {
    let Some(target) = Resolver::new(api).resolve(id, false).await? else {
        return Ok(false);
    };
    match target.delete(&id.name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

fn is_missing_kind(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 404,
        kube::Error::Discovery(_) => true,
        _ => false,
    }
}

fn api_error(resource: &str, id: &ObjectId, e: impl std::fmt::Display) -> AddonError {
    AddonError::Api {
        resource: resource.to_string(),
        object: id.to_string(),
        message: e.to_string(),
    }
}

/// An object as stored minus what every write touches: the resource version and the field
/// ownership records. (A no-op apply may still rewrite those, e.g. Namespaces on v1.20.)
fn content_of(o: &DynamicObject) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or_default();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    v
}

/// The manifest a previous run (of rkers or RKE1) stored for `resource`, if any.
pub async fn stored_manifest(api: &KubeApi, resource: &str) -> Result<Option<String>, AddonError> {
    let cms: Api<ConfigMap> = Api::namespaced(api.client.clone(), ADDON_NAMESPACE);
    let cm = cms.get_opt(resource).await.map_err(|e| AddonError::Api {
        resource: resource.to_string(),
        object: format!("ConfigMap {ADDON_NAMESPACE}/{resource}"),
        message: e.to_string(),
    })?;
    Ok(cm.and_then(|c| c.data).and_then(|mut d| d.remove(resource)))
}

/// Applies `plan` (or removes the addon when it has no manifest): server-side applies every
/// object, deletes what the stored previous manifest had and the new one lacks, then stores the
/// new manifest in RKE1's ConfigMap. [`observe_addon`] reads what it would change.
pub async fn apply_addon(api: &KubeApi, plan: &AddonPlan) -> Result<AddonChange, AddonError> {
    let resource = plan.resource;
    // Without its manifest an unbundled addon would read as turned off and be deleted.
    if plan.unbundled && plan.manifest.is_none() {
        return Err(AddonError::NoTemplate(
            plan.template.clone().unwrap_or_default(),
        ));
    }
    let previous = stored_manifest(api, resource).await?;
    let new_objects = match &plan.manifest {
        Some(m) => parse_manifest(resource, m)?,
        None => Vec::new(),
    };
    // A previous manifest that no longer parses (hand-edited ConfigMap) prunes nothing.
    let old_ids: Vec<ObjectId> = previous
        .as_deref()
        .and_then(|p| parse_manifest(resource, p).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(ObjectId::of)
        .collect();
    let new_ids: Vec<ObjectId> = new_objects.iter().filter_map(ObjectId::of).collect();
    let keep: BTreeSet<&ObjectId> = new_ids.iter().collect();
    let mut change = AddonChange {
        resource: resource.to_string(),
        objects: new_ids.clone(),
        ..Default::default()
    };
    let stale: Vec<ObjectId> = old_ids
        .iter()
        .filter(|id| !keep.contains(id))
        .cloned()
        .collect();
    let mut resolver = Resolver::new(api);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // Before 1.21 the API server has no field manager for APIServices and panics on their
    // server-side apply (kubernetes/kubernetes#89264, fixed by #98576): those are created or
    // replaced instead. Asked only when the manifest has one.
    let apply_apiservices = if new_ids.iter().any(is_apiservice) {
        api.server_minor().await.map_err(|e| AddonError::Api {
            resource: resource.to_string(),
            object: "server version".into(),
            message: e.to_string(),
        })? >= 21
    } else {
        true
    };
    for (obj, id) in new_objects.iter().zip(&new_ids) {
        let target = resolver
            .resolve(id, true)
            .await
            .map_err(|e| api_error(resource, id, e))?
            .ok_or_else(|| api_error(resource, id, "the API server does not serve this kind"))?;
        let mut existing = target
            .get_opt(&id.name)
            .await
            .map_err(|e| api_error(resource, id, e))?;
        // An object still being deleted (a namespace a previous run pruned) cannot be applied
        // to; wait until it is gone and create it anew.
        let deadline = std::time::Instant::now() + TERMINATING_WAIT;
        while existing
            .as_ref()
            .is_some_and(|o| o.metadata.deletion_timestamp.is_some())
        {
            if std::time::Instant::now() >= deadline {
                return Err(api_error(resource, id, "still being deleted"));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            existing = target
                .get_opt(&id.name)
                .await
                .map_err(|e| api_error(resource, id, e))?;
        }
        let existing_version = existing
            .as_ref()
            .and_then(|o| o.metadata.resource_version.clone());
        let mut obj = obj.clone();
        fill_port_protocols(&mut obj);
        leave_replicas_to_their_scaler(&mut obj, existing.as_ref());
        let before = existing.map(|o| content_of(&o));
        let after = if is_apiservice(id) && !apply_apiservices {
            create_or_replace(&target, id, &obj, existing_version).await
        } else {
            target.patch(&id.name, &params, &Patch::Apply(&obj)).await
        }
        .map_err(|e| api_error(resource, id, e))?;
        if before.is_none_or(|b| b != content_of(&after)) {
            change.changed.push(id.clone());
        }
    }

    for id in stale.iter().rev() {
        let Some(target) = resolver
            .resolve(id, false)
            .await
            .map_err(|e| api_error(resource, id, e))?
        else {
            continue; // its kind is gone (CRD removed), so is the object
        };
        match target.delete(&id.name, &DeleteParams::background()).await {
            Ok(_) => change.pruned.push(id.clone()),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(api_error(resource, id, e)),
        }
    }

    store_manifest(api, resource, plan.manifest.as_deref()).await?;
    Ok(change)
}

/// An addon as the cluster holds it, read only: the stored manifest, the objects of `plan`'s
/// manifest that applying it would create or change (each server-side applied as a dry run
/// and compared with what is stored), and what it would prune.
pub async fn observe_addon(
    api: &KubeApi,
    plan: &AddonPlan,
) -> Result<rkers_core::addon::AddonObserved, AddonError> {
    let resource = plan.resource;
    let stored = stored_manifest(api, resource).await?;
    let new_objects = match &plan.manifest {
        Some(m) => parse_manifest(resource, m)?,
        None => Vec::new(),
    };
    let new_ids: Vec<ObjectId> = new_objects.iter().filter_map(ObjectId::of).collect();
    let keep: BTreeSet<&ObjectId> = new_ids.iter().collect();
    let pruned: Vec<String> = stored
        .as_deref()
        .and_then(|p| parse_manifest(resource, p).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(ObjectId::of)
        .filter(|id| !keep.contains(id))
        .map(|id| id.to_string())
        .collect();
    let mut changed = Vec::new();
    let mut resolver = Resolver::new(api);
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::apply(FIELD_MANAGER).force()
    };
    for (obj, id) in new_objects.iter().zip(&new_ids) {
        // A kind the server does not serve yet (its CRD comes with this manifest): created.
        let Some(target) = resolver
            .resolve(id, false)
            .await
            .map_err(|e| api_error(resource, id, e))?
        else {
            changed.push(id.to_string());
            continue;
        };
        let Some(existing) = target
            .get_opt(&id.name)
            .await
            .map_err(|e| api_error(resource, id, e))?
        else {
            changed.push(id.to_string());
            continue;
        };
        if existing.metadata.deletion_timestamp.is_some() {
            changed.push(id.to_string());
            continue;
        }
        // Before 1.21 an APIService cannot be server-side applied (see `apply_addon`), not
        // even as a dry run: one that exists counts as unchanged unless the manifest changed.
        if is_apiservice(id) {
            continue;
        }
        let mut obj = obj.clone();
        fill_port_protocols(&mut obj);
        leave_replicas_to_their_scaler(&mut obj, Some(&existing));
        // A dry run the server refuses (an immutable field, e.g. a Job's template) is a change
        // too: applying it is what tells how it ends.
        let after = target.patch(&id.name, &params, &Patch::Apply(&obj)).await;
        if !after.is_ok_and(|after| stored_content(&existing) == stored_content(&after)) {
            changed.push(id.to_string());
        }
    }
    Ok(rkers_core::addon::AddonObserved {
        stored,
        changed,
        pruned,
    })
}

fn is_apiservice(id: &ObjectId) -> bool {
    id.kind == "APIService" && id.api_version.starts_with("apiregistration.k8s.io/")
}

/// Create, or replace the whole object, with field manager `rkers`: for kinds the server
/// cannot apply server-side. Fields other clients set on the object are overwritten.
async fn create_or_replace(
    target: &Api<DynamicObject>,
    id: &ObjectId,
    obj: &Value,
    resource_version: Option<String>,
) -> Result<DynamicObject, kube::Error> {
    let mut desired: DynamicObject =
        serde_json::from_value(obj.clone()).map_err(kube::Error::SerdeError)?;
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    };
    match resource_version {
        None => target.create(&params, &desired).await,
        Some(version) => {
            desired.metadata.resource_version = Some(version);
            target.replace(&id.name, &params, &desired).await
        }
    }
}

/// Writes (or, for a removed addon, deletes) RKE1's ConfigMap for `resource`; a removed addon's
/// RKE1 deploy Job goes too, so RKE1 no longer takes the addon for deployed.
async fn store_manifest(
    api: &KubeApi,
    resource: &str,
    manifest: Option<&str>,
) -> Result<(), AddonError> {
    let cms: Api<ConfigMap> = Api::namespaced(api.client.clone(), ADDON_NAMESPACE);
    let cm_id = format!("ConfigMap {ADDON_NAMESPACE}/{resource}");
    let fail = |e: kube::Error| AddonError::Api {
        resource: resource.to_string(),
        object: cm_id.clone(),
        message: e.to_string(),
    };
    match manifest {
        Some(m) => {
            let cm = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": resource, "namespace": ADDON_NAMESPACE},
                "data": {resource: m},
            });
            cms.patch(
                resource,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&cm),
            )
            .await
            .map_err(fail)?;
        }
        None => {
            match cms.delete(resource, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(fail(e)),
            }
            let jobs: Api<Job> = Api::namespaced(api.client.clone(), ADDON_NAMESPACE);
            let job = format!("{resource}-deploy-job");
            match jobs.delete(&job, &DeleteParams::foreground()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(fail(e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_objects_skip_empty_documents_and_expand_lists() {
        let text = "---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\n\
                    ---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns1\n";
        let objs = parse_manifest("rke-user-addon", text).unwrap();
        let ids: Vec<String> = objs
            .iter()
            .map(|o| ObjectId::of(o).unwrap().to_string())
            .collect();
        assert_eq!(ids, ["ConfigMap x/a", "Namespace ns1"]);
    }

    #[test]
    fn a_deployment_another_manager_scaled_keeps_its_replicas() {
        let manifest = || {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "coredns", "namespace": "kube-system"},
                   "spec": {"replicas": 1, "selector": {}}})
        };
        let live = |manager: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "coredns", "namespace": "kube-system", "managedFields": [
                    {"manager": "rkers", "operation": "Apply", "apiVersion": "apps/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:selector": {}}}},
                    {"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
                     "subresource": "scale", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
                "spec": {"replicas": 2}
            }))
            .unwrap()
        };
        // The DNS autoscaler set it: rkers leaves the count alone.
        let mut obj = manifest();
        leave_replicas_to_their_scaler(&mut obj, Some(&live("cluster-proportional-autoscaler")));
        assert!(obj["spec"].get("replicas").is_none(), "{obj}");
        assert_eq!(obj["spec"]["selector"], json!({}));
        // rkers set it last, or the Deployment is new: the manifest's count.
        let mut obj = manifest();
        leave_replicas_to_their_scaler(&mut obj, Some(&live(FIELD_MANAGER)));
        assert_eq!(obj["spec"]["replicas"], 1);
        let mut obj = manifest();
        leave_replicas_to_their_scaler(&mut obj, None);
        assert_eq!(obj["spec"]["replicas"], 1);
    }

    #[test]
    fn ports_without_a_protocol_get_tcp_as_the_api_server_would_default() {
        let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  \
                    - port: 443\n    targetPort: webhook\n  - port: 53\n    protocol: UDP\n\
                    ---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  \
                    template:\n    spec:\n      containers:\n      - name: c\n        ports:\n        \
                    - containerPort: 80\n      initContainers:\n      - name: i\n        ports:\n        \
                    - containerPort: 81\n          protocol: SCTP\n\
                    ---\napiVersion: crd.projectcalico.org/v1\nkind: Service\nmetadata:\n  name: x\n\
                    spec:\n  ports:\n  - port: 1\n";
        let mut objs = parse_manifest("rke-ingress-controller", text).unwrap();
        objs.iter_mut().for_each(fill_port_protocols);
        assert_eq!(objs[0]["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(objs[0]["spec"]["ports"][1]["protocol"], "UDP");
        let pod = &objs[1]["spec"]["template"]["spec"];
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["initContainers"][0]["ports"][0]["protocol"], "SCTP");
        assert!(
            objs[2]["spec"]["ports"][0].get("protocol").is_none(),
            "custom resources are left as written"
        );
    }

    #[test]
    fn an_object_without_a_name_is_an_error_naming_the_document() {
        let text =
            "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n";
        let err = parse_manifest("rke-user-addon", text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rke-user-addon") && err.contains("document 1"),
            "{err}"
        );
    }
}
