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
/// RKE1 is normally run from there) and `http://` or `https://` URLs.
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
            let connector = system_https_connector().map_err(fail)?;
            fetch_url(source, connector, &INCLUDE_LIMITS)
                .await
                .map_err(fail)?
        } else {
            let path = base.join(source);
            rkers_core::bounded::read_to_string(&path, rkers_core::bounded::ADDON)
                .map_err(|e| fail(format!("{}: {e}", path.display())))?
        };
        apply::parse_manifest(source, &text).map_err(|e| fail(e.to_string()))?;
        out.push(text);
    }
    Ok(out)
}

/// How long one `addons_include` URL may take (connecting, the answer, the whole body) and how
/// large its manifest may be: a server that stalls or streams without end stops `up` with a
/// reason instead of hanging it or filling memory.
struct FetchLimits {
    timeout: Duration,
    max_bytes: usize,
}

const INCLUDE_LIMITS: FetchLimits = FetchLimits {
    timeout: Duration::from_secs(60),
    max_bytes: 16 * 1024 * 1024,
};

type HttpsConnector =
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// `http://` and `https://`, the server verified against the system's CA store.
fn system_https_connector() -> Result<HttpsConnector, String> {
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
        .map_err(|e| format!("cannot read the system's CA certificates: {e}"))?
        .https_or_http()
        .enable_http1()
        .build())
}

async fn fetch_url(
    url: &str,
    connector: HttpsConnector,
    limits: &FetchLimits,
) -> Result<String, String> {
    use http_body_util::{BodyExt, Empty, Limited};
    let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<hyper::body::Bytes>>(connector);
    let fetch = async {
        // hyper's client names only "client error (Connect)": its causes say what failed.
        let resp = client.get(uri).await.map_err(|e| {
            let report = crate::error::ErrorReport::of_foreign(&e);
            std::iter::once(report.message)
                .chain(report.causes)
                .collect::<Vec<_>>()
                .join(": ")
        })?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status()));
        }
        let body = Limited::new(resp.into_body(), limits.max_bytes)
            .collect()
            .await
            .map_err(|e| match e.downcast::<http_body_util::LengthLimitError>() {
                Ok(_) => format!("the manifest is larger than {} bytes", limits.max_bytes),
                Err(e) => e.to_string(),
            })?;
        String::from_utf8(body.to_bytes().to_vec()).map_err(|e| e.to_string())
    };
    tokio::time::timeout(limits.timeout, fetch)
        .await
        .map_err(|_| format!("no complete answer within {:?}", limits.timeout))?
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

/// A critical addon that failed: its action (which names the object), or its workloads.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{0}")]
    Apply(#[from] crate::phases::executor::ExecError),
    #[error("{0}")]
    Wait(#[from] AddonError),
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
) -> Result<(), DeployError> {
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
                    .map_err(DeployError::from),
                None => Ok(()),
            };
            let result = match result {
                Ok(()) => wait_addon(api, plan, timeout)
                    .await
                    .map_err(DeployError::from),
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
        Err(e) => phase.fail(&e.to_string()),
    }
    result
}

impl crate::error::HostContext for DeployError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            DeployError::Apply(e) => crate::error::HostContext::hosts(e),
            DeployError::Wait(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{OutputFormat, Reporter};

    /// Reads one request from `stream` and answers it with `body` (or 404), closing after.
    async fn answer<S>(mut stream: S, body: Option<&str>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut request = [0u8; 2048];
        let _ = stream.read(&mut request).await;
        let response = match body {
            Some(b) => format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            ),
            None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_string(),
        };
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    }

    /// An HTTP server on loopback that answers every request with `body` (or 404), once per
    /// connection, for as many connections as asked.
    async fn serve(body: Option<&'static str>, connections: usize) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for _ in 0..connections {
                let (stream, _) = listener.accept().await.unwrap();
                answer(stream, body).await;
            }
        });
        format!("http://{address}")
    }

    /// An HTTPS server on loopback whose certificate (for 127.0.0.1) a fresh test CA signed;
    /// its URL and a connector that trusts that CA alone.
    async fn serve_tls(body: String, connections: usize) -> (String, HttpsConnector) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for _ in 0..connections {
                let (stream, _) = listener.accept().await.unwrap();
                // A client that refuses the certificate ends the handshake: next connection.
                if let Ok(tls) = acceptor.accept(stream).await {
                    answer(tls, Some(&body)).await;
                }
            }
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(client)
            .https_or_http()
            .enable_http1()
            .build();
        (format!("https://{address}"), connector)
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
        // A server whose CA the system does not trust is refused, named.
        let (url, _) = serve_tls(MANIFEST.to_string(), 1).await;
        let untrusted = cluster_with_includes(dir.path(), &[format!("{url}/t.yaml")]);
        let e = read_includes(&untrusted).await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("addons_include {url}/t.yaml")) && e.contains("certificate"),
            "{e}"
        );
        std::fs::write(dir.path().join("bad.yaml"), "kind: [unclosed").unwrap();
        let bad = cluster_with_includes(dir.path(), &["bad.yaml".into()]);
        let e = read_includes(&bad).await.unwrap_err().to_string();
        assert!(e.contains("addons_include bad.yaml"), "{e}");
    }

    #[tokio::test]
    async fn https_includes_are_verified_and_read() {
        let (url, trusting) = serve_tls(MANIFEST.to_string(), 1).await;
        let text = fetch_url(&format!("{url}/a.yaml"), trusting, &INCLUDE_LIMITS)
            .await
            .unwrap();
        assert_eq!(text, MANIFEST);
    }

    #[tokio::test]
    async fn a_stalling_or_endless_server_is_cut_off() {
        let limits = FetchLimits {
            timeout: Duration::from_millis(500),
            max_bytes: 1024,
        };
        // Accepts, reads the request, never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(stream);
        });
        let connector = system_https_connector().unwrap();
        let e = fetch_url(&format!("http://{address}/slow.yaml"), connector, &limits)
            .await
            .unwrap_err();
        assert_eq!(e, "no complete answer within 500ms");

        let (url, trusting) = serve_tls("x".repeat(4096), 1).await;
        let e = fetch_url(&format!("{url}/big.yaml"), trusting, &limits)
            .await
            .unwrap_err();
        assert_eq!(e, "the manifest is larger than 1024 bytes");
    }
}
