//! The Kubernetes API side of a run: a client built from the admin kubeconfig, the RBAC objects
//! RKE1 creates (§20), the in-cluster copy of the state (§7) and the node label, annotation and
//! taint sync (§21).

pub mod drain;
pub mod nodes;
pub mod removed_apis;

pub use nodes::{ApplyToNode, HOSTNAME_LABEL, NodeSync, TaintSpec, find_node, sync_node};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{ApiResource, Scope};
use std::collections::BTreeMap;
use std::time::Duration;

/// Field manager name for every server-side apply rkers makes.
pub const FIELD_MANAGER: &str = "rkers";
/// Where RKE1 keeps the full state in the cluster (§7); rkers uses the same object.
pub const STATE_SECRET_NAMESPACE: &str = "kube-system";
pub const STATE_SECRET_NAME: &str = "full-cluster-state";
pub const STATE_SECRET_KEY: &str = "full-cluster-state";

#[derive(Debug, thiserror::Error)]
pub enum KubeApiError {
    #[error("invalid kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("Kubernetes API at {server}: {message}")]
    Api { server: String, message: String },
    #[error("node {0} not found in the cluster")]
    NodeNotFound(String),
}

/// A client for one API server, with the server named in every error.
#[derive(Clone)]
pub struct KubeApi {
    pub client: kube::Client,
    pub server: String,
}

impl KubeApi {
    /// Builds a client from kubeconfig text (the admin kubeconfig rkers writes, §6.1).
    pub async fn from_kubeconfig(text: &str) -> Result<Self, KubeApiError> {
        // The parser's error quotes the kubeconfig's lines (its token, its client key).
        let invalid = |e: &dyn std::fmt::Display| {
            KubeApiError::Kubeconfig(rkers_core::redact::mask_credentials(&e.to_string()))
        };
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| invalid(&e))?;
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| invalid(&e))?;
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(Duration::from_secs(60));
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|e| KubeApiError::Api {
            server: server.clone(),
            message: e.to_string(),
        })?;
        Ok(KubeApi { client, server })
    }

    pub(crate) fn err(&self, context: &str, e: impl std::fmt::Display) -> KubeApiError {
        KubeApiError::Api {
            server: self.server.clone(),
            message: format!("{context}: {e}"),
        }
    }

    /// The server's version, e.g. "v1.20.2".
    pub async fn server_version(&self) -> Result<String, KubeApiError> {
        let info = self
            .client
            .apiserver_version()
            .await
            .map_err(|e| self.err("GET /version", e))?;
        Ok(info.git_version)
    }

    /// The server's minor version, e.g. 20 for "v1.20.2" (0 when it cannot be read from it).
    pub async fn server_minor(&self) -> Result<u32, KubeApiError> {
        let version = self.server_version().await?;
        Ok(version
            .trim_start_matches('v')
            .split('.')
            .nth(1)
            .and_then(|m| m.trim_end_matches('+').parse::<u32>().ok())
            .unwrap_or(0))
    }

    /// Whether what [`KubeApi::apply_authz`] builds on is there: the `kube-system` namespace
    /// (its ServiceAccount's) and the `system:node` ClusterRole (which kubelets register
    /// their nodes through once bound). A new API server makes both within seconds of
    /// serving, before its health check answers; an error is a no.
    pub async fn lets_rbac_in(&self) -> bool {
        use k8s_openapi::api::core::v1::Namespace;
        use k8s_openapi::api::rbac::v1::ClusterRole;
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let roles: Api<ClusterRole> = Api::all(self.client.clone());
        matches!(
            futures::join!(
                namespaces.get_opt("kube-system"),
                roles.get_opt("system:node")
            ),
            (Ok(Some(_)), Ok(Some(_)))
        )
    }

    /// Creates or updates the RBAC objects RKE1 creates right after the control plane (§20).
    pub async fn apply_authz(&self, rbac: bool) -> Result<(), KubeApiError> {
        for doc in authz_docs(rbac) {
            self.apply_yaml(doc).await?;
        }
        Ok(())
    }

    /// The RBAC objects [`KubeApi::apply_authz`] would create or change, as `Kind
    /// namespace/name`: each is server-side applied as a dry run and compared with what is
    /// stored.
    pub async fn authz_changes(&self, rbac: bool) -> Result<Vec<String>, KubeApiError> {
        let mut out = Vec::new();
        for doc in authz_docs(rbac) {
            let (api, obj, name) = self.builtin_object(doc)?;
            let existing = api
                .get_opt(&name)
                .await
                .map_err(|e| self.err(&format!("get {name}"), e))?;
            let params = PatchParams {
                dry_run: true,
                ..PatchParams::apply(FIELD_MANAGER).force()
            };
            let after = api
                .patch(&name, &params, &Patch::Apply(&obj))
                .await
                .map_err(|e| self.err(&format!("apply {name} (dry run)"), e))?;
            if existing.is_none_or(|e| stored_content(&e) != stored_content(&after)) {
                out.push(object_name(&obj));
            }
        }
        Ok(out)
    }

    /// Server-side applies one YAML object of a built-in kind.
    pub async fn apply_yaml(&self, yaml: &str) -> Result<(), KubeApiError> {
        let (api, obj, name) = self.builtin_object(yaml)?;
        let kind = obj
            .types
            .as_ref()
            .map(|t| t.kind.clone())
            .unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&obj),
        )
        .await
        .map_err(|e| self.err(&format!("apply {kind} {name}"), e))?;
        Ok(())
    }

    /// One embedded YAML object of a built-in kind, its API and its name.
    fn builtin_object(
        &self,
        yaml: &str,
    ) -> Result<(Api<DynamicObject>, DynamicObject, String), KubeApiError> {
        let obj: DynamicObject =
            serde_saphyr::from_str(yaml).map_err(|e| self.err("parse embedded manifest", e))?;
        let types = obj
            .types
            .clone()
            .ok_or_else(|| self.err("embedded manifest", "no apiVersion/kind"))?;
        let (group, version) = match types.api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), types.api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &types.kind);
        let (resource, scope) = builtin_resource(&gvk);
        let name = obj
            .metadata
            .name
            .clone()
            .ok_or_else(|| self.err("embedded manifest", "no name"))?;
        let api: Api<DynamicObject> = match scope {
            Scope::Namespaced => Api::namespaced_with(
                self.client.clone(),
                obj.metadata.namespace.as_deref().unwrap_or("default"),
                &resource,
            ),
            Scope::Cluster => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, obj, name))
    }

    /// Stores the full state JSON in the cluster, where RKE1 keeps it (§7), retrying briefly
    /// because the API server may still be settling right after the control plane comes up.
    pub async fn save_state_secret(&self, state_json: &str) -> Result<(), KubeApiError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), STATE_SECRET_NAMESPACE);
        let mut data = BTreeMap::new();
        data.insert(
            STATE_SECRET_KEY.to_string(),
            k8s_openapi::ByteString(state_json.as_bytes().to_vec()),
        );
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(STATE_SECRET_NAME.to_string()),
                namespace: Some(STATE_SECRET_NAMESPACE.to_string()),
                ..Default::default()
            },
            data: Some(data),
            type_: Some("Opaque".to_string()),
            ..Default::default()
        };
        let mut last_error = String::new();
        for _ in 0..30 {
            let result = match api.get_opt(STATE_SECRET_NAME).await {
                Ok(Some(mut existing)) => {
                    existing.data = secret.data.clone();
                    api.replace(STATE_SECRET_NAME, &PostParams::default(), &existing)
                        .await
                        .map(|_| ())
                }
                Ok(None) => api
                    .create(&PostParams::default(), &secret)
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => return Ok(()),
                Err(e) => last_error = e.to_string(),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Err(self.err("save Secret kube-system/full-cluster-state", last_error))
    }

    /// The state the state Secret holds, without the ConfigMap fallback.
    pub async fn read_state_secret(&self) -> Result<Option<String>, KubeApiError> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), STATE_SECRET_NAMESPACE);
        Ok(secrets
            .get_opt(STATE_SECRET_NAME)
            .await
            .map_err(|e| self.err("get Secret full-cluster-state", e))?
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove(STATE_SECRET_KEY))
            .map(|v| String::from_utf8_lossy(&v.0).into_owned()))
    }

    /// Reads the in-cluster state: the Secret first, then the ConfigMap older RKE1 releases
    /// used (§27; RKE1's node-side fallback reads only the ConfigMap, §33.5).
    pub async fn read_state(&self) -> Result<Option<String>, KubeApiError> {
        if let Some(state) = self.read_state_secret().await? {
            return Ok(Some(state));
        }
        let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), STATE_SECRET_NAMESPACE);
        Ok(maps
            .get_opt(STATE_SECRET_NAME)
            .await
            .map_err(|e| self.err("get ConfigMap full-cluster-state", e))?
            .and_then(|cm| cm.data)
            .and_then(|mut d| d.remove(STATE_SECRET_KEY)))
    }
}

/// The RBAC objects of §20 `up` applies: the job deployer's always, the rest under RBAC.
fn authz_docs(rbac: bool) -> Vec<&'static str> {
    let mut docs = vec![JOB_DEPLOYER_SERVICE_ACCOUNT, JOB_DEPLOYER_BINDING];
    if rbac {
        docs.extend([
            SYSTEM_NODE_BINDING,
            KUBEAPI_PROXY_ROLE,
            KUBEAPI_PROXY_BINDING,
        ]);
    }
    docs
}

/// The RBAC objects `up` applies, as `Kind namespace/name`.
pub fn authz_objects(rbac: bool) -> Vec<String> {
    authz_docs(rbac)
        .into_iter()
        .filter_map(|doc| serde_saphyr::from_str::<DynamicObject>(doc).ok())
        .map(|o| object_name(&o))
        .collect()
}

fn object_name(o: &DynamicObject) -> String {
    let kind = o
        .types
        .as_ref()
        .map(|t| t.kind.as_str())
        .unwrap_or_default();
    let name = o.metadata.name.as_deref().unwrap_or_default();
    match &o.metadata.namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// An object as stored, minus what every write or controller touches: the resource version,
/// the field ownership records and the status. Two reads with the same content mean an apply
/// between them changed nothing.
pub fn stored_content(o: &DynamicObject) -> serde_json::Value {
    let mut v = serde_json::to_value(o).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = v
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    v
}

/// The resource and scope of the few built-in kinds rkers applies itself; no discovery round
/// trip is needed for them.
fn builtin_resource(gvk: &kube::api::GroupVersionKind) -> (ApiResource, Scope) {
    let plural = match gvk.kind.as_str() {
        "ServiceAccount" => "serviceaccounts",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ConfigMap" => "configmaps",
        "Secret" => "secrets",
        "Namespace" => "namespaces",
        other => return (ApiResource::from_gvk(gvk), guess_scope(other)),
    };
    let scope = guess_scope(&gvk.kind);
    (ApiResource::from_gvk_with_plural(gvk, plural), scope)
}

fn guess_scope(kind: &str) -> Scope {
    match kind {
        "ClusterRole" | "ClusterRoleBinding" | "Namespace" | "Node" => Scope::Cluster,
        _ => Scope::Namespaced,
    }
}

// The objects of §20, with RKE1's names, labels and annotations.
const JOB_DEPLOYER_SERVICE_ACCOUNT: &str = "apiVersion: v1
kind: ServiceAccount
metadata:
  name: rke-job-deployer
  namespace: kube-system
";

const JOB_DEPLOYER_BINDING: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: job-deployer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  namespace: kube-system
  name: rke-job-deployer
";

const SYSTEM_NODE_BINDING: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:node
  annotations:
    rbac.authorization.kubernetes.io/autoupdate: \"false\"
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
";

const KUBEAPI_PROXY_ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: proxy-clusterrole-kubeapiserver
rules:
- apiGroups: [\"\"]
  resources: [nodes/metrics, nodes/proxy, nodes/stats, nodes/log, nodes/spec]
  verbs: [get, list, watch, create]
";

const KUBEAPI_PROXY_BINDING: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: proxy-role-binding-kubernetes-master
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: proxy-clusterrole-kubeapiserver
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: kube-apiserver
";

/// Deletes every pod matching any of `labels`, in every namespace; returns how many.
pub async fn delete_pods_by_labels(api: &KubeApi, labels: &[&str]) -> Result<usize, kube::Error> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams, ListParams};
    let all: Api<Pod> = Api::all(api.client.clone());
    let mut deleted = 0;
    for label in labels {
        let pods = all.list(&ListParams::default().labels(label)).await?;
        for pod in pods.items {
            let (Some(ns), Some(name)) = (pod.metadata.namespace, pod.metadata.name) else {
                continue;
            };
            let api: Api<Pod> = Api::namespaced(api.client.clone(), &ns);
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => deleted += 1,
                // Gone meanwhile (its controller was faster): nothing left to do.
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(deleted)
}

/// Deletes one pod; one already gone is no error (its controller may have replaced it).
pub async fn delete_pod(api: &KubeApi, namespace: &str, name: &str) -> Result<(), KubeApiError> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams};
    let pods: Api<Pod> = Api::namespaced(api.client.clone(), namespace);
    match pods.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(api.err(&format!("delete pod {namespace}/{name}"), e)),
    }
}

crate::error::about_no_host!(KubeApiError);

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: a kubeconfig with a YAML syntax error is refused without its token or client
    /// key, whatever the parser quotes of its lines.
    #[tokio::test]
    async fn a_broken_kubeconfig_is_refused_without_its_credentials() {
        let text = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: kubeconfigtoken0123456789\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n    password: [unclosed\n";
        let Err(e) = KubeApi::from_kubeconfig(text).await else {
            panic!("a kubeconfig with a syntax error was accepted");
        };
        let shown = e.to_string();
        assert!(shown.starts_with("invalid kubeconfig: "), "{shown}");
        for secret in ["kubeconfigtoken", "LS0tLS1CRUdJTi", "unclosed"] {
            assert!(!shown.contains(secret), "{secret} in: {shown}");
        }
    }

    #[test]
    fn embedded_rbac_objects_parse_with_names_and_kinds() {
        for (doc, kind, name) in [
            (
                JOB_DEPLOYER_SERVICE_ACCOUNT,
                "ServiceAccount",
                "rke-job-deployer",
            ),
            (JOB_DEPLOYER_BINDING, "ClusterRoleBinding", "job-deployer"),
            (SYSTEM_NODE_BINDING, "ClusterRoleBinding", "system:node"),
            (
                KUBEAPI_PROXY_ROLE,
                "ClusterRole",
                "proxy-clusterrole-kubeapiserver",
            ),
            (
                KUBEAPI_PROXY_BINDING,
                "ClusterRoleBinding",
                "proxy-role-binding-kubernetes-master",
            ),
        ] {
            let obj: DynamicObject = serde_saphyr::from_str(doc).unwrap();
            assert_eq!(obj.types.unwrap().kind, kind);
            assert_eq!(obj.metadata.name.as_deref(), Some(name));
        }
        let node: DynamicObject = serde_saphyr::from_str(SYSTEM_NODE_BINDING).unwrap();
        assert_eq!(
            node.metadata.annotations.unwrap()["rbac.authorization.kubernetes.io/autoupdate"],
            "false"
        );
    }

    #[test]
    fn builtin_scopes() {
        let crb = kube::api::GroupVersionKind::gvk(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
        );
        let (res, scope) = builtin_resource(&crb);
        assert_eq!(res.plural, "clusterrolebindings");
        assert!(matches!(scope, Scope::Cluster));
        let sa = kube::api::GroupVersionKind::gvk("", "v1", "ServiceAccount");
        let (res, scope) = builtin_resource(&sa);
        assert_eq!(res.plural, "serviceaccounts");
        assert!(matches!(scope, Scope::Namespaced));
    }
}
