//! Secrets encryption at rest on a running cluster (§23): rewriting every Secret through the
//! API so it is stored with the first provider, kube-apiserver's health check after a restart
//! with a new provider file, and the provider file that turns encryption off, which `up`
//! deploys to the controlplane hosts. `rkers encrypt rotate-key` is
//! [`crate::phases::encrypt_rotate`].

use crate::diff::HealthProbe;
use crate::diff::key_rotation::PROVIDER_FILE;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::health::TlsMaterial;
use crate::plan::encryption;
use crate::state::StateFile;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};

/// RKE1's page size and number of concurrent rewrites.
const PAGE_SIZE: u32 = 250;
const REWRITE_WORKERS: usize = 5;

/// Why the Secrets could not be rewritten, or encryption not turned off.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("list Secrets: {0}")]
    List(#[source] kube::Error),
    /// Each Secret not rewritten, as `namespace/name: why`.
    #[error(
        "{} of {total} Secrets not rewritten:\n  - {}",
        .failed.len(),
        .failed.join("\n  - ")
    )]
    NotRewritten { total: usize, failed: Vec<String> },
    /// The provider file the cluster runs with cannot be read.
    #[error("{0}")]
    Provider(#[source] encryption::EncryptionError),
    #[error(
        "can't turn encryption off: the provider file the cluster runs with has no aescbc \
         key to keep reading its Secrets with; turn it off in the custom_config instead \
         (identity first), run `rkers up`, then remove it"
    )]
    NoKeyToKeep,
}

/// Rewrites every Secret of every namespace with a no-op update, so the API server stores it
/// again with its first provider. A Secret changed meanwhile is read again and rewritten; one
/// deleted meanwhile needs nothing. Returns how many were rewritten.
pub async fn rewrite_secrets(api: &KubeApi, reporter: &Reporter) -> Result<usize, SecretsError> {
    let all: Api<Secret> = Api::all(api.client.clone());
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE_SIZE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = match all.list(&lp).await {
            Ok(p) => p,
            // An expired continue token (410): start the listing over.
            Err(kube::Error::Api(e)) if e.code == 410 && token.is_some() => {
                names.clear();
                token = None;
                continue;
            }
            Err(e) => return Err(SecretsError::List(e)),
        };
        for s in page.items {
            if let (Some(ns), Some(name)) = (s.metadata.namespace, s.metadata.name) {
                names.push((ns, name));
            }
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    let total = names.len();
    let results: Vec<Result<(), String>> = futures::stream::iter(names)
        .map(|(ns, name)| {
            let api: Api<Secret> = Api::namespaced(api.client.clone(), &ns);
            async move { rewrite_one(&api, &ns, &name).await }
        })
        .buffer_unordered(REWRITE_WORKERS)
        .collect()
        .await;
    let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if !failed.is_empty() {
        return Err(SecretsError::NotRewritten { total, failed });
    }
    reporter.info(format!("[rewrite-secrets] {total} secrets rewritten"));
    Ok(total)
}

async fn rewrite_one(api: &Api<Secret>, ns: &str, name: &str) -> Result<(), String> {
    for _ in 0..5 {
        let Some(secret) = api
            .get_opt(name)
            .await
            .map_err(|e| format!("{ns}/{name}: {e}"))?
        else {
            return Ok(());
        };
        match api.replace(name, &PostParams::default(), &secret).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(format!("{ns}/{name}: {e}")),
        }
    }
    Err(format!("{ns}/{name}: kept changing while being rewritten"))
}

/// kube-apiserver's health check after a restart with a new provider file.
pub const APISERVER_HEALTH: &str = "https://localhost:6443/healthz";

/// The health check's TLS material: the cluster CA and the kube-apiserver client certificate.
pub fn apiserver_tls(state: &StateFile) -> TlsMaterial {
    let bundle = if state.current_state.certificates_bundle.is_empty() {
        &state.desired_state.certificates_bundle
    } else {
        &state.current_state.certificates_bundle
    };
    let get = |n: &str| bundle.get(n);
    TlsMaterial {
        ca_pem: get(crate::pki::names::CA_CERT_NAME).map(|c| c.certificate_pem.clone()),
        client_cert_pem: get("kube-apiserver").map(|c| c.certificate_pem.clone()),
        client_key_pem: get("kube-apiserver").map(|c| c.key_pem.clone()),
    }
}

/// The provider file that turns encryption off (§23), from the one the cluster runs with
/// (`applied`): `identity` first, its first aescbc key kept to read what it encrypted. `up`
/// writes it on the controlplane hosts and restarts their kube-apiservers
/// ([`crate::diff::encryption`]) before every Secret is rewritten in plain text; the
/// restarts' health checks reach them with `state`'s certificates, which they run with.
pub fn identity_first(
    applied: &str,
    state: &StateFile,
) -> Result<crate::diff::encryption::IdentityFirst, SecretsError> {
    let keys = encryption::aescbc_keys(applied).map_err(SecretsError::Provider)?;
    let Some(key) = keys.first() else {
        return Err(SecretsError::NoKeyToKeep);
    };
    Ok(crate::diff::encryption::IdentityFirst {
        path: PROVIDER_FILE.into(),
        contents: encryption::render_disabled(key).into_bytes(),
        key: key.name.clone(),
        check: HealthProbe {
            url: APISERVER_HEALTH.into(),
            tls: Some(apiserver_tls(state)),
        },
    })
}
