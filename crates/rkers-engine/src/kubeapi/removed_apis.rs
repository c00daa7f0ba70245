//! Reading a cluster for its uses of API versions that later minors remove, as kubent and
//! pluto do: the API server's own count of requests to deprecated APIs, objects of kinds
//! removed outright, and the `apiVersion` in objects' last-applied configurations. What the
//! uses mean for a minor change is decided by [`rkers_core::diff::removed_apis`].

use super::{KubeApi, KubeApiError};
use crate::metadata::RemovedApis;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, verbs};
use rkers_core::diff::removed_apis::{ApiUse, Seen};
use std::collections::BTreeSet;

/// The gauge the API server sets for each deprecated API it served a request for since it
/// started (Kubernetes v1.19+).
pub const DEPRECATED_REQUESTS_METRIC: &str = "apiserver_requested_deprecated_apis";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Objects listed per request.
const PAGE: u32 = 500;

impl KubeApi {
    /// Every use of a removed or deprecated API version the cluster shows, for the kinds whose
    /// removals come after minor `above` (older ones are long gone from this cluster). The
    /// request counts are read first, so this method's own listing is never among them, and
    /// objects are listed through a version the table does not remove where there is one.
    pub async fn removed_api_uses(
        &self,
        table: &RemovedApis,
        above: u64,
    ) -> Result<Vec<ApiUse>, KubeApiError> {
        let mut uses = self.deprecated_requests().await?;
        let rows: Vec<_> = table
            .rows()
            .iter()
            .filter(|r| r.removed_minor() > above && r.scan_objects)
            .collect();
        let mut groups: BTreeSet<String> = BTreeSet::new();
        for r in &rows {
            groups.insert(r.group.clone());
            if let Some((group, _)) = r.replacement.as_deref().and_then(|a| a.rsplit_once('/')) {
                groups.insert(group.to_string());
            }
        }
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        let discovery = Discovery::new(self.client.clone())
            .filter(&groups)
            .run()
            .await
            .map_err(|e| self.err("API discovery", e))?;
        // Resources this method itself lists through a removed version (a kind removed
        // outright): the API server counts those requests too, and the objects found are
        // named one by one instead.
        let mut listed_through_removed: Vec<(String, String, String)> = Vec::new();
        let mut kinds: Vec<&str> = Vec::new();
        for r in &rows {
            if !kinds.contains(&r.kind.as_str()) {
                kinds.push(&r.kind);
            }
        }
        for kind in kinds {
            let related: BTreeSet<&str> = rows
                .iter()
                .filter(|r| r.kind == kind)
                .flat_map(|r| {
                    let replacement = r.replacement.as_deref().and_then(|a| a.rsplit_once('/'));
                    [Some(r.group.as_str()), replacement.map(|(g, _)| g)]
                })
                .flatten()
                .collect();
            let Some((resource, _)) = list_resource(&discovery, table, kind, &related) else {
                continue;
            };
            if table.by_kind(&resource.api_version, kind).is_some() {
                listed_through_removed.push((
                    resource.group.clone(),
                    resource.version.clone(),
                    resource.plural.clone(),
                ));
            }
            // Served only in a version the table removes outright (PodSecurityPolicy): every
            // object of it is a use.
            let outright = table
                .by_kind(&resource.api_version, kind)
                .filter(|r| r.outright());
            for (object, last_applied) in self.list_objects(&resource).await? {
                if let Some(row) = outright {
                    uses.push(ApiUse {
                        group: row.group.clone(),
                        version: row.version.clone(),
                        kind: kind.to_string(),
                        seen: Seen::Object {
                            object: object.clone(),
                        },
                    });
                }
                let Some(applied) = last_applied else {
                    continue;
                };
                if let Some(row) = table.by_kind(&applied, kind) {
                    uses.push(ApiUse {
                        group: row.group.clone(),
                        version: row.version.clone(),
                        kind: kind.to_string(),
                        seen: Seen::LastApplied { object },
                    });
                }
            }
        }
        uses.retain(|u| {
            !(matches!(u.seen, Seen::Requests { .. })
                && listed_through_removed
                    .iter()
                    .any(|(g, v, r)| *g == u.group && *v == u.version && *r == u.kind))
        });
        Ok(uses)
    }

    /// `apiserver_requested_deprecated_apis` from the API server's `/metrics`.
    async fn deprecated_requests(&self) -> Result<Vec<ApiUse>, KubeApiError> {
        let request = http::Request::get("/metrics")
            .body(Vec::new())
            .map_err(|e| self.err("GET /metrics", e))?;
        let text = self
            .client
            .request_text(request)
            .await
            .map_err(|e| self.err("GET /metrics", e))?;
        Ok(parse_deprecated_requests(&text))
    }

    /// Each object of `resource` as `namespace/name` (or `name`), with the `apiVersion` of its
    /// last-applied configuration when it has one.
    async fn list_objects(
        &self,
        resource: &ApiResource,
    ) -> Result<Vec<(String, Option<String>)>, KubeApiError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), resource);
        let mut out = Vec::new();
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = api
                .list_metadata(&params)
                .await
                .map_err(|e| self.err(&format!("list {}", resource.plural), e))?;
            for item in &page.items {
                let meta = &item.metadata;
                let name = meta.name.clone().unwrap_or_default();
                let object = match &meta.namespace {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name,
                };
                let applied = meta
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(LAST_APPLIED))
                    .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
                    .and_then(|v| v["apiVersion"].as_str().map(str::to_string));
                out.push((object, applied));
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => params = params.continue_token(&next),
                None => return Ok(out),
            }
        }
    }
}

/// The served, listable resource of `kind` in one of `groups`, preferring a version the table
/// does not remove (listing through a deprecated version would count as a deprecated request).
fn list_resource(
    discovery: &Discovery,
    table: &RemovedApis,
    kind: &str,
    groups: &BTreeSet<&str>,
) -> Option<(ApiResource, ApiCapabilities)> {
    let mut candidates: Vec<(ApiResource, ApiCapabilities)> = Vec::new();
    for group in discovery.groups().filter(|g| groups.contains(g.name())) {
        for version in group.versions() {
            for (ar, caps) in group.versioned_resources(version) {
                if ar.kind == kind && caps.supports_operation(verbs::LIST) {
                    candidates.push((ar, caps));
                }
            }
        }
    }
    let removed = |ar: &ApiResource| table.by_kind(&ar.api_version, kind).is_some();
    let pick = candidates
        .iter()
        .position(|(ar, _)| !removed(ar))
        .unwrap_or(0);
    (!candidates.is_empty()).then(|| candidates.swap_remove(pick))
}

/// The series of `apiserver_requested_deprecated_apis` in Prometheus text, as uses (`kind` is
/// the plural resource). Series whose value is 0 are left out.
pub fn parse_deprecated_requests(metrics: &str) -> Vec<ApiUse> {
    let mut out = Vec::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(DEPRECATED_REQUESTS_METRIC) else {
            continue;
        };
        let Some((labels, value)) = rest.strip_prefix('{').and_then(|r| r.rsplit_once('}')) else {
            continue;
        };
        if value.trim().parse::<f64>().is_ok_and(|v| v == 0.0) {
            continue;
        }
        let labels = parse_labels(labels);
        let get = |k: &str| {
            labels
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        if !get("subresource").is_empty() {
            continue;
        }
        let use_ = ApiUse {
            group: get("group"),
            version: get("version"),
            kind: get("resource"),
            seen: Seen::Requests {
                removed_release: Some(get("removed_release")).filter(|r| !r.is_empty()),
            },
        };
        if !out.contains(&use_) {
            out.push(use_);
        }
    }
    out
}

/// `key="value",...` of a Prometheus series, with `\"`, `\\` and `\n` unescaped.
fn parse_labels(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((key.trim_start_matches(',').trim().to_string(), value));
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_deprecated_requests_gauge() {
        // As the sandbox's v1.20 API server writes it, and as later ones do.
        let metrics = r#"# HELP apiserver_requested_deprecated_apis [ALPHA] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="extensions",removed_release="1.22",resource="ingresses",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="policy",removed_release="1.25",resource="podsecuritypolicies",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="batch",removed_release="1.25",resource="cronjobs",subresource="status",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="flowcontrol.apiserver.k8s.io",removed_release="1.29",resource="flowschemas",subresource="",version="v1beta2"} 0
apiserver_requested_deprecated_apis_other{group="x"} 1
apiserver_request_total{code="200"} 7
"#;
        let uses = parse_deprecated_requests(metrics);
        let got: Vec<(String, String, Option<String>)> = uses
            .iter()
            .map(|u| {
                let Seen::Requests { removed_release } = &u.seen else {
                    panic!("{u:?}")
                };
                (u.api_version(), u.kind.clone(), removed_release.clone())
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "extensions/v1beta1".to_string(),
                    "ingresses".to_string(),
                    Some("1.22".to_string())
                ),
                (
                    "policy/v1beta1".to_string(),
                    "podsecuritypolicies".to_string(),
                    Some("1.25".to_string())
                ),
            ]
        );
    }

    #[test]
    fn label_values_are_unescaped() {
        assert_eq!(
            parse_labels(r#"a="x\"y",b="1\\2",c="""#),
            vec![
                ("a".to_string(), "x\"y".to_string()),
                ("b".to_string(), "1\\2".to_string()),
                ("c".to_string(), String::new())
            ]
        );
    }
}
