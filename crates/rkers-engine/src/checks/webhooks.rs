//! Incident 3: an admission webhook with `failurePolicy: Fail` that intercepts pod creation in
//! `kube-system` (or the CNI's namespace) while its own service is down keeps the CNI from
//! starting: no CNI without the webhook, no webhook without the CNI.
//!
//! [`WebhookView`] flattens validating and mutating webhooks into what matters here; the rule
//! matching is pure and unit-tested. [`find`] asks the API server for the configurations,
//! namespace labels, endpoints and events; `up` calls it before restarting system pods.

use super::selector;
use super::{Finding, Status};
use crate::hosts::Host;
use crate::kubeapi::{KubeApi, KubeApiError};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Endpoints, Event, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub const CHECK: &str = "webhook";

// What `--fix` may remove is decided in the core, with the configurations' kinds.
pub use rkers_core::diff::doctor_fix::{ADDON_CONFIGS, Kind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Client {
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
    Url(String),
}

/// One webhook of one configuration, as this check sees it.
#[derive(Clone, Debug)]
pub struct WebhookView {
    pub kind: Kind,
    pub config: String,
    pub webhook: String,
    /// `Fail` when unset (admissionregistration/v1's default).
    pub failure_policy: String,
    pub rules: Vec<RuleWithOperations>,
    pub namespace_selector: Option<LabelSelector>,
    pub object_selector: Option<LabelSelector>,
    pub client: Client,
    /// Why `--fix` must leave it alone (Kubernetes' own or an rkers addon's), if so.
    pub protected: Option<String>,
}

fn protected(meta: &ObjectMeta) -> Option<String> {
    rkers_core::diff::doctor_fix::protected(
        meta.name.as_deref().unwrap_or_default(),
        meta.labels
            .as_ref()
            .is_some_and(|l| l.contains_key("kubernetes.io/bootstrapping")),
        meta.managed_fields
            .iter()
            .flatten()
            .any(|m| m.manager.as_deref() == Some(crate::kubeapi::FIELD_MANAGER)),
    )
}

fn client_of(
    svc: Option<&k8s_openapi::api::admissionregistration::v1::ServiceReference>,
    url: Option<&String>,
) -> Client {
    match (svc, url) {
        (Some(s), _) => Client::Service {
            namespace: s.namespace.clone(),
            name: s.name.clone(),
            port: s.port.unwrap_or(443) as u16,
        },
        (None, Some(u)) => Client::Url(u.clone()),
        (None, None) => Client::Url(String::new()),
    }
}

/// One [`WebhookView`] per webhook of a configuration; validating and mutating webhooks share
/// every field read here but are distinct types.
macro_rules! views_of {
    ($name:ident, $ty:ty, $kind:expr) => {
        pub fn $name(c: &$ty) -> Vec<WebhookView> {
            let config = c.metadata.name.clone().unwrap_or_default();
            c.webhooks
                .iter()
                .flatten()
                .map(|w| WebhookView {
                    kind: $kind,
                    config: config.clone(),
                    webhook: w.name.clone(),
                    failure_policy: w.failure_policy.clone().unwrap_or_else(|| "Fail".into()),
                    rules: w.rules.clone().unwrap_or_default(),
                    namespace_selector: w.namespace_selector.clone(),
                    object_selector: w.object_selector.clone(),
                    client: client_of(
                        w.client_config.service.as_ref(),
                        w.client_config.url.as_ref(),
                    ),
                    protected: protected(&c.metadata),
                })
                .collect()
        }
    };
}

views_of!(
    views_validating,
    ValidatingWebhookConfiguration,
    Kind::Validating
);
views_of!(views_mutating, MutatingWebhookConfiguration, Kind::Mutating);

/// Whether one rule intercepts `CREATE pods` (core group, v1, namespaced).
pub fn rule_covers_pod_create(r: &RuleWithOperations) -> bool {
    let has = |v: &Option<Vec<String>>, want: &[&str]| {
        v.as_ref()
            .is_some_and(|v| v.iter().any(|x| want.contains(&x.as_str())))
    };
    let ops = has(&r.operations, &["CREATE", "*"]);
    let groups = has(&r.api_groups, &["", "*"]);
    let versions = has(&r.api_versions, &["v1", "*"]);
    let resources = has(&r.resources, &["pods", "*", "*/*"]);
    let scope = r
        .scope
        .as_deref()
        .is_none_or(|s| s == "*" || s == "Namespaced");
    ops && groups && versions && resources && scope
}

impl WebhookView {
    pub fn covers_pod_create(&self) -> bool {
        self.rules.iter().any(rule_covers_pod_create)
    }

    /// Whether it intercepts pods with any of `pod_labels` in a namespace labelled `ns_labels`.
    pub fn covers(
        &self,
        ns_labels: &BTreeMap<String, String>,
        pod_labels: &[BTreeMap<String, String>],
    ) -> bool {
        self.covers_pod_create()
            && selector::matches(self.namespace_selector.as_ref(), ns_labels)
            && pod_labels
                .iter()
                .any(|l| selector::matches(self.object_selector.as_ref(), l))
    }

    pub fn fails_closed(&self) -> bool {
        self.failure_policy != "Ignore"
    }

    pub fn rules_text(&self) -> String {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|r| {
                let j = |v: &Option<Vec<String>>| v.as_deref().unwrap_or(&[]).join(",");
                format!(
                    "{} {}/{} {}",
                    j(&r.operations),
                    if j(&r.api_groups).is_empty() {
                        "core".to_string()
                    } else {
                        j(&r.api_groups)
                    },
                    j(&r.api_versions),
                    j(&r.resources)
                )
            })
            .collect();
        rules.join("; ")
    }

    pub fn client_text(&self) -> String {
        match &self.client {
            Client::Service {
                namespace,
                name,
                port,
            } => format!("service {namespace}/{name}:{port}"),
            Client::Url(u) => format!("url {u}"),
        }
    }
}

/// A webhook found blocking, with what proves it.
#[derive(Clone, Debug)]
pub struct Blocking {
    pub view: WebhookView,
    /// Namespaces whose pod creation it blocks.
    pub namespaces: Vec<String>,
    /// Why its backend does not answer.
    pub why: String,
    pub events: Vec<String>,
}

impl Blocking {
    /// `kind/name` as kubectl names it.
    pub fn object(&self) -> String {
        format!("{}/{}", self.view.kind.resource(), self.view.config)
    }
}

/// What the webhook check found: the blocking webhooks, and the findings to report.
pub struct WebhookCheck {
    pub blocking: Vec<Blocking>,
    pub findings: Vec<Finding>,
}

async fn backend_down(api: &KubeApi, w: &WebhookView, via: Option<&Arc<Host>>) -> Option<String> {
    match &w.client {
        Client::Service {
            namespace,
            name,
            port,
        } => {
            let eps: Api<Endpoints> = Api::namespaced(api.client.clone(), namespace);
            match eps.get_opt(name).await {
                Ok(None) => Some(format!(
                    "service {namespace}/{name} has no Endpoints object (service missing?)"
                )),
                Ok(Some(ep)) => {
                    let ready: usize = ep
                        .subsets
                        .iter()
                        .flatten()
                        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
                        .sum();
                    let not_ready: usize = ep
                        .subsets
                        .iter()
                        .flatten()
                        .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
                        .sum();
                    (ready == 0).then(|| {
                        format!(
                            "service {namespace}/{name}:{port} has no ready endpoints ({not_ready} not ready)"
                        )
                    })
                }
                Err(e) => Some(format!("cannot read endpoints of {namespace}/{name}: {e}")),
            }
        }
        Client::Url(u) => {
            let Ok(uri) = u.parse::<http::Uri>() else {
                return Some(format!("url {u:?} cannot be parsed"));
            };
            let host = uri.host().unwrap_or_default().to_string();
            let port = uri.port_u16().unwrap_or(443);
            let probe = async {
                match via {
                    // From a control plane node, where the API server calls it from.
                    Some(h) => h
                        .link()
                        .open_tcp(&host, port)
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string()),
                    None => tokio::net::TcpStream::connect((host.as_str(), port))
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string()),
                }
            };
            match tokio::time::timeout(Duration::from_secs(5), probe).await {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("url {u} does not answer: {e}")),
                Err(_) => Some(format!("url {u} does not answer within 5s")),
            }
        }
    }
}

/// Events in `namespaces` that show a webhook refused or failed pod creation.
async fn webhook_events(api: &KubeApi, namespaces: &[String]) -> Vec<Event> {
    let mut out = Vec::new();
    for ns in namespaces {
        let events: Api<Event> = Api::namespaced(api.client.clone(), ns);
        if let Ok(list) = events.list(&ListParams::default()).await {
            out.extend(
                list.items
                    .into_iter()
                    .filter(|e| e.message.as_deref().is_some_and(|m| m.contains("webhook"))),
            );
        }
    }
    out
}

pub fn event_line(e: &Event) -> String {
    let obj = &e.involved_object;
    format!(
        "event {}/{}/{} {}: {} (x{}): {}",
        obj.namespace.as_deref().unwrap_or("-"),
        obj.kind.as_deref().unwrap_or("?"),
        obj.name.as_deref().unwrap_or("?"),
        e.type_.as_deref().unwrap_or(""),
        e.reason.as_deref().unwrap_or(""),
        e.count.unwrap_or(1),
        e.message.as_deref().unwrap_or("").trim()
    )
}

/// Every webhook that can block pod creation in `namespaces` (kube-system and the CNI's), with
/// findings. `pod_labels` are the label sets of the system pods that must be able to start.
pub async fn find(
    api: &KubeApi,
    namespaces: &[String],
    pod_labels: &[BTreeMap<String, String>],
    via: Option<&Arc<Host>>,
) -> Result<WebhookCheck, KubeApiError> {
    let vs: Api<ValidatingWebhookConfiguration> = Api::all(api.client.clone());
    let ms: Api<MutatingWebhookConfiguration> = Api::all(api.client.clone());
    let mut views = Vec::new();
    for c in vs
        .list(&ListParams::default())
        .await
        .map_err(|e| api.err("list validatingwebhookconfigurations", e))?
        .items
    {
        views.extend(views_validating(&c));
    }
    for c in ms
        .list(&ListParams::default())
        .await
        .map_err(|e| api.err("list mutatingwebhookconfigurations", e))?
        .items
    {
        views.extend(views_mutating(&c));
    }
    let nss: Api<Namespace> = Api::all(api.client.clone());
    let mut ns_labels = BTreeMap::new();
    for ns in namespaces {
        // The namespace's labels as the API server matches them: before 1.21 it does not set
        // `kubernetes.io/metadata.name`, so a selector excluding kube-system by that label
        // excludes nothing there, and the webhook does cover kube-system.
        let labels: BTreeMap<String, String> = nss
            .get_opt(ns)
            .await
            .ok()
            .flatten()
            .and_then(|n| n.metadata.labels)
            .unwrap_or_default();
        ns_labels.insert(ns.clone(), labels);
    }
    let events = webhook_events(api, namespaces).await;
    let mut blocking = Vec::new();
    let mut findings = Vec::new();
    for v in views {
        let covered: Vec<String> = namespaces
            .iter()
            .filter(|ns| v.covers(&ns_labels[*ns], pod_labels))
            .cloned()
            .collect();
        if covered.is_empty() || !v.fails_closed() {
            continue;
        }
        let mut evidence = vec![
            format!("{} {} webhook {}", v.kind.kind(), v.config, v.webhook),
            format!("rules: {}", v.rules_text()),
            format!("failurePolicy: {}", v.failure_policy),
            format!(
                "namespaceSelector: {}",
                selector::describe(v.namespace_selector.as_ref())
            ),
            format!(
                "objectSelector: {}",
                selector::describe(v.object_selector.as_ref())
            ),
            format!("calls {}", v.client_text()),
        ];
        let proof: Vec<String> = events
            .iter()
            .filter(|e| e.message.as_deref().is_some_and(|m| m.contains(&v.webhook)))
            .map(event_line)
            .collect();
        match backend_down(api, &v, via).await {
            Some(why) => {
                evidence.push(why.clone());
                evidence.extend(proof.iter().take(5).cloned());
                let object = format!("{}/{}", v.kind.resource(), v.config);
                let mut f = Finding::new(
                    CHECK,
                    Status::Fail,
                    None,
                    format!(
                        "{} {} blocks pod creation in {} (failurePolicy Fail, backend down): \
                         CNI and system pods cannot start",
                        v.kind.kind(),
                        v.config,
                        covered.join(", ")
                    ),
                )
                .evidence(evidence);
                f = match &v.protected {
                    Some(who) => f.fix([format!(
                        "{object} is {who}: bring its backend ({}) back; rkers will not remove it",
                        v.client_text()
                    )]),
                    None => f.fix([
                        "rkers doctor --fix webhooks   (backs it up next to the state, removes it, waits for the CNI; restore with `rkers doctor --restore-webhooks`)".to_string(),
                        format!("or by hand: kubectl get {object} -o yaml > {}.yaml && kubectl delete {object}", v.config),
                        format!(
                            "prevention: exclude {} from its namespaceSelector (kubernetes.io/metadata.name notin ...)",
                            covered.join(", ")
                        ),
                    ]),
                };
                findings.push(f);
                blocking.push(Blocking {
                    view: v,
                    namespaces: covered,
                    why,
                    events: proof,
                });
            }
            None => findings.push(
                Finding::new(
                    CHECK,
                    Status::Warn,
                    None,
                    format!(
                        "{} {} can block pod creation in {}: failurePolicy Fail; its backend answers now, \
                         but if its pods go away with their nodes, the CNI cannot start",
                        v.kind.kind(),
                        v.config,
                        covered.join(", ")
                    ),
                )
                .evidence(evidence)
                .fix([format!(
                    "exclude {} from its namespaceSelector, or set failurePolicy: Ignore",
                    covered.join(", ")
                )]),
            ),
        }
    }
    if findings.is_empty() {
        findings.push(Finding::ok(
            CHECK,
            None,
            format!(
                "no admission webhook can block pod creation in {}",
                namespaces.join(", ")
            ),
        ));
    }
    Ok(WebhookCheck { blocking, findings })
}

/// The blocking webhooks as the core decides on them ([`rkers_core::diff::doctor_fix::removable`]).
pub fn blockers(blocking: &[Blocking]) -> Vec<rkers_core::diff::doctor_fix::Blocker> {
    blocking
        .iter()
        .map(|b| rkers_core::diff::doctor_fix::Blocker {
            kind: b.view.kind,
            config: b.view.config.clone(),
            protected: b.view.protected.clone(),
        })
        .collect()
}

/// Runs `$body` with `$k` standing for the k8s-openapi type of the configuration `$kind`, so
/// that each operation on a configuration is written once for both kinds.
macro_rules! per_kind {
    ($kind:expr, $k:ident => $body:expr) => {
        match $kind {
            Kind::Validating => {
                type $k = ValidatingWebhookConfiguration;
                $body
            }
            Kind::Mutating => {
                type $k = MutatingWebhookConfiguration;
                $body
            }
        }
    };
}

/// The configuration `kind`/`name` as the API server has it.
pub async fn get_config(
    api: &KubeApi,
    kind: Kind,
    name: &str,
) -> Result<serde_json::Value, KubeApiError> {
    let failed = |e: &dyn std::fmt::Display| api.err(&format!("get {name}"), e);
    let value = per_kind!(kind, K => serde_json::to_value(
        Api::<K>::all(api.client.clone())
            .get(name)
            .await
            .map_err(|e| failed(&e))?,
    ));
    value.map_err(|e| failed(&e))
}

/// Deletes the configuration `kind`/`name`.
pub async fn delete_config(api: &KubeApi, kind: Kind, name: &str) -> Result<(), KubeApiError> {
    let r = per_kind!(kind, K => Api::<K>::all(api.client.clone())
        .delete(name, &DeleteParams::default())
        .await
        .map(drop));
    r.map_err(|e| api.err(&format!("delete {}/{name}", kind.resource()), e))
}

/// Creates `object`, a configuration of `kind` named `name`: `false` when one of that name
/// exists already (it is kept as it is).
pub async fn create_config(
    api: &KubeApi,
    kind: Kind,
    name: &str,
    object: &serde_json::Value,
) -> Result<bool, KubeApiError> {
    let failed = |e: &dyn std::fmt::Display| api.err(&format!("create {} {name}", kind.kind()), e);
    let r = per_kind!(kind, K => {
        let obj: K = serde_json::from_value(object.clone()).map_err(|e| failed(&e))?;
        Api::<K>::all(api.client.clone())
            .create(&PostParams::default(), &obj)
            .await
            .map(drop)
    });
    match r {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(failed(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::admissionregistration::v1::{
        ServiceReference, ValidatingWebhook, WebhookClientConfig,
    };

    fn rule(ops: &[&str], groups: &[&str], resources: &[&str]) -> RuleWithOperations {
        let v = |x: &[&str]| Some(x.iter().map(|s| s.to_string()).collect());
        RuleWithOperations {
            operations: v(ops),
            api_groups: v(groups),
            api_versions: v(&["v1"]),
            resources: v(resources),
            scope: None,
        }
    }

    #[test]
    fn pod_create_rules() {
        assert!(rule_covers_pod_create(&rule(&["CREATE"], &[""], &["pods"])));
        assert!(rule_covers_pod_create(&rule(&["*"], &["*"], &["*"])));
        assert!(rule_covers_pod_create(&rule(
            &["CREATE", "UPDATE"],
            &[""],
            &["*/*"]
        )));
        assert!(!rule_covers_pod_create(&rule(
            &["UPDATE"],
            &[""],
            &["pods"]
        )));
        assert!(!rule_covers_pod_create(&rule(
            &["CREATE"],
            &["apps"],
            &["deployments"]
        )));
        assert!(!rule_covers_pod_create(&rule(
            &["CREATE"],
            &[""],
            &["pods/exec"]
        )));
        let mut cluster_scoped = rule(&["CREATE"], &[""], &["pods"]);
        cluster_scoped.scope = Some("Cluster".into());
        assert!(!rule_covers_pod_create(&cluster_scoped));
    }

    fn config(
        name: &str,
        policy: Option<&str>,
        ns_sel: Option<LabelSelector>,
    ) -> ValidatingWebhookConfiguration {
        ValidatingWebhookConfiguration {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            webhooks: Some(vec![ValidatingWebhook {
                name: format!("{name}.example.com"),
                failure_policy: policy.map(str::to_string),
                rules: Some(vec![rule(&["CREATE"], &[""], &["pods"])]),
                namespace_selector: ns_sel,
                client_config: WebhookClientConfig {
                    service: Some(ServiceReference {
                        namespace: "gk".into(),
                        name: "gk-webhook".into(),
                        port: None,
                        path: None,
                    }),
                    ..Default::default()
                },
                admission_review_versions: vec!["v1".into()],
                side_effects: "None".into(),
                ..Default::default()
            }]),
        }
    }

    fn ks() -> BTreeMap<String, String> {
        [(
            "kubernetes.io/metadata.name".to_string(),
            "kube-system".to_string(),
        )]
        .into()
    }

    fn calico_pod() -> Vec<BTreeMap<String, String>> {
        vec![[("k8s-app".to_string(), "calico-node".to_string())].into()]
    }

    #[test]
    fn unset_failure_policy_is_fail_and_kube_system_is_covered() {
        let v = &views_validating(&config("gatekeeper", None, None))[0];
        assert_eq!(v.failure_policy, "Fail");
        assert!(v.fails_closed());
        assert!(v.covers(&ks(), &calico_pod()));
        assert_eq!(v.client_text(), "service gk/gk-webhook:443");
        assert_eq!(v.rules_text(), "CREATE core/v1 pods");
        assert_eq!(v.protected, None);
    }

    #[test]
    fn an_exempted_namespace_or_ignore_policy_does_not_block() {
        let sel = LabelSelector {
            match_expressions: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                    key: "kubernetes.io/metadata.name".into(),
                    operator: "NotIn".into(),
                    values: Some(vec!["kube-system".into()]),
                },
            ]),
            ..Default::default()
        };
        let v = &views_validating(&config("kyverno", None, Some(sel)))[0];
        assert!(!v.covers(&ks(), &calico_pod()));
        let v = &views_validating(&config("k8tz", Some("Ignore"), None))[0];
        assert!(!v.fails_closed());
    }

    #[test]
    fn an_object_selector_not_matching_cni_pods_does_not_cover_them() {
        let mut c = config("linkerd", None, None);
        c.webhooks.as_mut().unwrap()[0].object_selector = Some(LabelSelector {
            match_labels: Some([("linkerd.io/inject".to_string(), "enabled".to_string())].into()),
            ..Default::default()
        });
        let v = &views_validating(&c)[0];
        assert!(!v.covers(&ks(), &calico_pod()));
    }

    #[test]
    fn only_unprotected_configs_are_removable_each_once() {
        let blocking = |c: &ValidatingWebhookConfiguration| Blocking {
            view: views_validating(c).remove(0),
            namespaces: vec!["kube-system".into()],
            why: "down".into(),
            events: vec![],
        };
        let mine = config("gatekeeper", None, None);
        let addon = config("ingress-nginx-admission", None, None);
        let (remove, kept) = rkers_core::diff::doctor_fix::removable(&blockers(&[
            blocking(&mine),
            blocking(&mine),
            blocking(&addon),
        ]));
        assert_eq!(remove, [(Kind::Validating, "gatekeeper".to_string())]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1, "ingress-nginx-admission");
    }

    #[test]
    fn addon_and_system_configs_are_protected() {
        let mut c = config("ingress-nginx-admission", None, None);
        assert!(views_validating(&c)[0].protected.is_some());
        c.metadata.name = Some("system:whatever".into());
        assert!(views_validating(&c)[0].protected.as_deref() == Some("installed by Kubernetes"));
        let mut managed = config("mine", None, None);
        managed.metadata.managed_fields = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
                manager: Some("rkers".into()),
                ..Default::default()
            },
        ]);
        assert!(views_validating(&managed)[0].protected.is_some());
    }
}
