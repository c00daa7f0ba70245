//! The addons step of `up` (§19): render every addon, apply them through the API server in
//! RKE1's order, wait for their workloads (and, after the network plugin, for every node's
//! network), and prune what earlier runs deployed and this one no longer does.

use crate::addons::apply::{self, ObjectId};
use crate::addons::{AddonError, AddonPlan, plan_addons, resource, wait};
use crate::cluster::Cluster;
use crate::diff::Action;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Jobs RKE1 deletes before deploying ingress-nginx newer than 0.40.0: Jobs are immutable, so
/// a changed template could not be applied over them.
const INGRESS_ADMISSION_JOBS: &[&str] = &[
    "ingress-nginx-admission-create",
    "ingress-nginx-admission-patch",
];
const INGRESS_NAMESPACE: &str = "ingress-nginx";

/// Reads `addons_include` entries: local files (relative to the directory of cluster.yml, as
/// RKE1 is normally run from there) and `http://` URLs.
async fn read_includes(cluster: &Cluster) -> Result<Vec<String>, AddonError> {
    let base = cluster
        .files
        .config_path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut out = Vec::new();
    for source in &cluster.config.addons_include {
        let fail = |message: String| AddonError::Include {
            include: source.clone(),
            message,
        };
        let text = if source.starts_with("http://") || source.starts_with("https://") {
            fetch_url(source).await.map_err(fail)?
        } else {
            let path = base.join(source);
            std::fs::read_to_string(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?
        };
        apply::parse_manifest(source, &text).map_err(|e| fail(e.to_string()))?;
        out.push(text);
    }
    Ok(out)
}

async fn fetch_url(url: &str) -> Result<String, String> {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::rt::TokioIo;
    let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err("only http:// URLs are supported; put the file next to cluster.yml".into());
    }
    let host = uri.host().ok_or("URL without host")?.to_string();
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = http::Request::get(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .header("host", host)
        .body(Empty::<hyper::body::Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("HTTP {}", resp.status()));
    }
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    String::from_utf8(body.to_bytes().to_vec()).map_err(|e| e.to_string())
}

/// What applying an addon did, for the log (the dry run lists it as the addon's action).
fn log_change(reporter: &Reporter, change: &apply::AddonChange, plan: &AddonPlan) {
    if plan.manifest.is_some() {
        reporter.info(format!(
            "[addons] {}{}: applied {} objects, {} changed",
            plan.resource,
            plan.template
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default(),
            change.objects.len(),
            change.changed.len()
        ));
        for id in &change.changed {
            reporter.info(format!("[addons]   changed {id}"));
        }
    }
    for id in &change.pruned {
        reporter.info(format!("[addons] {}: pruned {id}", plan.resource));
    }
}

/// Label selectors of the network plugin's DaemonSets, to describe its pods on unready nodes.
async fn cni_pod_selectors(
    api: &KubeApi,
    objects: &[ObjectId],
) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    for id in objects.iter().filter(|o| o.kind == "DaemonSet") {
        let ns = if id.namespace.is_empty() {
            "default"
        } else {
            &id.namespace
        };
        if let Ok(ds) = Api::<DaemonSet>::namespaced(api.client.clone(), ns)
            .get(&id.name)
            .await
            && let Some(labels) = ds.spec.and_then(|s| s.selector.match_labels)
        {
            out.push((ns.to_string(), labels));
        }
    }
    out
}

async fn delete_admission_jobs(api: &KubeApi) -> Result<(), AddonError> {
    let jobs: Api<Job> = Api::namespaced(api.client.clone(), INGRESS_NAMESPACE);
    for name in INGRESS_ADMISSION_JOBS {
        match jobs.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(AddonError::Api {
                    resource: resource::INGRESS.into(),
                    object: format!("Job {INGRESS_NAMESPACE}/{name}"),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Every addon of the run in RKE1's order, rendered, with the `addons_include` files read.
pub async fn addon_plans(cluster: &Cluster) -> Result<Vec<AddonPlan>, AddonError> {
    let includes = read_includes(cluster).await?;
    plan_addons(&cluster.config, &cluster.catalog, &includes)
}

/// The objects of an addon's manifest, as `Kind namespace/name`.
pub fn manifest_objects(plan: &AddonPlan) -> Result<Vec<String>, AddonError> {
    Ok(match &plan.manifest {
        Some(m) => apply::parse_manifest(plan.resource, m)?
            .iter()
            .filter_map(ObjectId::of)
            .map(|id| id.to_string())
            .collect(),
        None => Vec::new(),
    })
}

/// One addon's planned action: applied (or removed) through the API.
pub async fn apply_one(
    api: &KubeApi,
    plan: &AddonPlan,
    reporter: &Reporter,
) -> Result<(), AddonError> {
    if plan.resource == resource::INGRESS && plan.manifest.is_some() {
        let stored = apply::stored_manifest(api, plan.resource).await?;
        if stored.as_ref() != plan.manifest.as_ref() {
            delete_admission_jobs(api).await?;
        }
    }
    let change = apply::apply_addon(api, plan).await?;
    log_change(reporter, &change, plan);
    Ok(())
}

/// The health gate after an addon, applied or not: its workloads ready and, after the network
/// plugin, every node's network.
async fn wait_addon(api: &KubeApi, plan: &AddonPlan, timeout: Duration) -> Result<(), AddonError> {
    let Some(manifest) = &plan.manifest else {
        return Ok(());
    };
    let objects: Vec<ObjectId> = apply::parse_manifest(plan.resource, manifest)?
        .iter()
        .filter_map(ObjectId::of)
        .collect();
    wait::wait_workloads(api, plan.resource, &objects, timeout).await?;
    if plan.resource == resource::NETWORK {
        let selectors = cni_pod_selectors(api, &objects).await;
        wait::wait_nodes_network(api, &selectors, timeout).await?;
    }
    Ok(())
}

/// The addons step: in RKE1's order, each addon's planned action (`ApplyAddon` or
/// `RemoveAddon` among `actions`) applied through `exec`, then its workloads waited for. A
/// failing system addon (network, DNS, metrics-server, ingress) fails `up`; a failing user
/// addon only warns — RKE1's `addonError.isCritical` rule (§19.1).
pub async fn deploy_addons(
    cluster: &Cluster,
    plans: &[AddonPlan],
    actions: &[Action],
    exec: &crate::phases::executor::Executor<'_>,
    api: &KubeApi,
) -> Result<(), String> {
    let reporter = exec.reporter();
    let phase = reporter.phase("addons");
    let result = async {
        let timeout = Duration::from_secs(cluster.config.addon_job_timeout.max(1) as u64);
        for plan in plans {
            let action = actions.iter().find(|a| match a {
                Action::ApplyAddon { resource, .. } | Action::RemoveAddon { resource, .. } => {
                    resource == plan.resource
                }
                _ => false,
            });
            let result = match action {
                Some(a) => exec
                    .on(crate::phases::changeset::CLUSTER)
                    .apply(&[a])
                    .await
                    .map_err(|e| e.to_string()),
                None => Ok(()),
            };
            let result = match result {
                Ok(()) => wait_addon(api, plan, timeout)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {}
                Err(e) if !plan.critical => {
                    reporter.warn(format!("[addons] user addon {} failed: {e}", plan.resource))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    .await;
    match &result {
        Ok(()) => phase.done(),
        Err(e) => phase.fail(e),
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{OutputFormat, Reporter};

    /// An HTTP server on loopback that answers every request with `body` (or 404), once per
    /// connection, for as many connections as asked.
    async fn serve(body: Option<&'static str>, connections: usize) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for _ in 0..connections {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 2048];
                let _ = stream.read(&mut request).await;
                let response = match body {
                    Some(b) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                        b.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        format!("http://{address}")
    }

    fn cluster_with_includes(dir: &Path, includes: &[String]) -> Cluster {
        let list: String = includes.iter().map(|i| format!("  - {i}\n")).collect();
        let yml = format!(
            "nodes:\n  - address: 10.0.0.1\n    user: rancher\n    role: [controlplane, etcd, worker]\n\
             addons_include:\n{list}"
        );
        let path = dir.join("cluster.yml");
        std::fs::write(&path, yml).unwrap();
        Cluster::load(&path, &Reporter::new(OutputFormat::Text, true)).unwrap()
    }

    const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-include\n";

    #[tokio::test]
    async fn includes_are_read_next_to_cluster_yml_and_over_http() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("extra")).unwrap();
        std::fs::write(dir.path().join("extra/local.yaml"), MANIFEST).unwrap();
        let url = serve(Some(MANIFEST), 1).await;
        let cluster = cluster_with_includes(
            dir.path(),
            &["extra/local.yaml".into(), format!("{url}/a.yaml")],
        );
        // Run from elsewhere: the relative path still resolves against cluster.yml's directory.
        let texts = read_includes(&cluster).await.unwrap();
        assert_eq!(texts, [MANIFEST, MANIFEST]);
    }

    #[tokio::test]
    async fn a_bad_include_names_itself_and_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let url = serve(None, 1).await;
        let missing = cluster_with_includes(dir.path(), &["nope.yaml".into()]);
        let e = read_includes(&missing).await.unwrap_err().to_string();
        assert!(
            e.contains("addons_include nope.yaml") && e.contains("nope.yaml:"),
            "{e}"
        );
        let not_found = cluster_with_includes(dir.path(), &[format!("{url}/x.yaml")]);
        let e = read_includes(&not_found).await.unwrap_err().to_string();
        assert!(e.contains("x.yaml") && e.contains("404"), "{e}");
        let https = cluster_with_includes(dir.path(), &["https://example.invalid/a.yaml".into()]);
        let e = read_includes(&https).await.unwrap_err().to_string();
        assert!(e.contains("only http:// URLs"), "{e}");
        std::fs::write(dir.path().join("bad.yaml"), "kind: [unclosed").unwrap();
        let bad = cluster_with_includes(dir.path(), &["bad.yaml".into()]);
        let e = read_includes(&bad).await.unwrap_err().to_string();
        assert!(e.contains("addons_include bad.yaml"), "{e}");
    }
}
