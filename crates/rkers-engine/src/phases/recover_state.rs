//! `rkers util get-state-file` (§27): the state recovered from the cluster when the local file
//! is lost. First the in-cluster copy (Secret `kube-system/full-cluster-state`, else the older
//! ConfigMap) through the admin kubeconfig; when the API cannot be reached, the state is rebuilt
//! from what the hosts hold in `/etc/kubernetes/ssl`: every certificate and key deployed there
//! (the CA key is on the controlplane hosts; each kubelet serving pair and each etcd member pair
//! only on its own host, so every host is read) and the encryption provider file. Certificates
//! that are never deployed to hosts (kube-admin) are issued again by the CA.
//!
//! RKE1's node-side fallback asked the API through `kubectl` on the node and read only the
//! ConfigMap newer releases delete (§33.5); reading the files works with the API down.

use crate::cluster::Cluster;
use crate::hosts::{HostPool, SshOptions};
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::files;
use crate::pki::{self, Bundle};
use crate::state::{ClusterState, StateFile};
use std::collections::BTreeMap;
use std::time::Duration;

/// Where a recovered state came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The in-cluster copy, read through this API server.
    Api(String),
    /// Rebuilt from the files on these hosts.
    Hosts(Vec<String>),
}

/// Why no state could be recovered.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] crate::hosts::HostProblems),
    /// `problems`: the hosts that could not be read, each with its error.
    #[error(
        "cannot rebuild the state from the hosts: {cause}{}",
        .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>()
    )]
    Rebuild {
        #[source]
        cause: RebuildError,
        problems: Vec<crate::hosts::HostError>,
    },
}

impl crate::error::HostContext for RecoverError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RecoverError::Rebuild { problems, .. } => {
                problems.iter().map(crate::hosts::HostError::host).collect()
            }
            RecoverError::Unreachable(e) => crate::error::HostContext::hosts(e),
        }
    }
}

/// Why the files read from the hosts do not make a state.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("no kube-ca.pem found on any reachable host")]
    NoCa,
    #[error("the CA key (kube-ca-key.pem) is on no reachable controlplane host")]
    NoCaKey,
    #[error("{0}")]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("{0}")]
    Pki(#[from] pki::PkiError),
}

pub struct RecoverOptions {
    pub agent_override: bool,
    pub ssh: SshOptions,
}

pub async fn recover_state(
    cluster: &Cluster,
    opts: &RecoverOptions,
    reporter: &Reporter,
) -> Result<(StateFile, Source), RecoverError> {
    match from_api(cluster).await {
        Ok(Some((state, server))) => return Ok((state, Source::Api(server))),
        Ok(None) => reporter.warn(
            "the cluster answers but holds no full-cluster-state Secret or ConfigMap; \
             rebuilding the state from the hosts",
        ),
        Err(e) => reporter.info(format!(
            "Unable to connect to server using kubeconfig ({e}); rebuilding the state from the controlplane hosts"
        )),
    }
    from_hosts(cluster, opts).await
}

async fn from_api(cluster: &Cluster) -> Result<Option<(StateFile, String)>, String> {
    let path = &cluster.files.kubeconfig_path;
    let text = (cluster.files.storage)
        .read_to_string(path, rkers_core::bounded::KUBECONFIG)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let api = KubeApi::from_kubeconfig(&text)
        .await
        .map_err(|e| e.to_string())?;
    let mut last = String::new();
    for _ in 0..3 {
        match api.read_state().await {
            Ok(Some(json)) => {
                let state = StateFile::from_json(&json, path).map_err(|e| e.to_string())?;
                return Ok(Some((state, api.server.clone())));
            }
            Ok(None) => return Ok(None),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    Err(last)
}

async fn from_hosts(
    cluster: &Cluster,
    opts: &RecoverOptions,
) -> Result<(StateFile, Source), RecoverError> {
    // Least privilege puts each host's own pairs on that host alone: every host is read.
    let targets = cluster.ssh_targets(opts.agent_override);
    let mut problems = Vec::new();
    let mut usable = Vec::new();
    for a in HostPool::connect_each(&targets, &opts.ssh).await {
        match &a.error {
            Some(e) => problems.push(e.clone()),
            None => usable.push(a),
        }
    }
    let pool = HostPool::from_attempts(usable, opts.ssh.concurrency).await?;
    let image = &cluster.config.system_images.cert_downloader;
    let registries = cluster.registry_credentials();
    let mut ssl: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut read_from = Vec::new();
    for host in pool.hosts() {
        let prefix = crate::plan::host_prefix_path(
            &cluster.config.prefix_path,
            &host.facts().operating_system,
        );
        let dir = crate::plan::join_path(&[&prefix, "/etc/kubernetes"]);
        let result = async {
            host.docker()
                .ensure_image(image, &registries, &mut |_| {})
                .await?;
            files::read_dir(host.docker(), &dir, image).await
        }
        .await;
        match result {
            Ok(found) => {
                let before = ssl.len();
                for (path, bytes) in found {
                    if let Some(name) = path.strip_prefix("ssl/") {
                        ssl.entry(name.to_string()).or_insert(bytes);
                    }
                }
                if ssl.len() > before {
                    read_from.push(host.name().to_string());
                }
            }
            Err(e) => problems.push(e),
        }
    }
    pool.close().await;
    let state = state_from_files(cluster, &ssl)
        .map_err(|cause| RecoverError::Rebuild { cause, problems })?;
    Ok((state, Source::Hosts(read_from)))
}

/// The state described by the files of `/etc/kubernetes/ssl` (file name → bytes) and the
/// config: both sides equal, as after a finished `up`.
pub fn state_from_files(
    cluster: &Cluster,
    ssl: &BTreeMap<String, Vec<u8>>,
) -> Result<StateFile, RebuildError> {
    let text = |name: &str| {
        ssl.get(name)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let mut bundle = Bundle::new();
    for file in ssl.keys() {
        let Some(name) = file.strip_suffix(".pem") else {
            continue;
        };
        if name.ends_with("-key") || name.ends_with("-csr") {
            continue;
        }
        let cert = text(file);
        if cert.trim().is_empty() {
            continue;
        }
        let key = text(&format!("{name}-key.pem"));
        let (cn, ou) = pki::names::bundle_names_for_dir_entry(name);
        bundle.insert(
            name.to_string(),
            pki::cert_object(name, Some(&cn), &ou, cert, key),
        );
    }
    let ca = bundle
        .get(pki::names::CA_CERT_NAME)
        .ok_or(RebuildError::NoCa)?;
    if !ca.has_key() {
        return Err(RebuildError::NoCaKey);
    }
    for c in bundle.values() {
        cluster.redactor.register(&c.key_pem);
    }
    let spec = cluster.pki_spec()?;
    let (bundle, _) = pki::reconcile_bundle(bundle, &spec)?;
    for c in bundle.values() {
        cluster.redactor.register(&c.key_pem);
    }
    let side = ClusterState {
        rke_config: Some(cluster.config.to_state_json()),
        certificates_bundle: bundle,
        encryption_config: text("encryption.yaml"),
        ..Default::default()
    };
    Ok(StateFile {
        desired_state: side.clone(),
        current_state: side,
        extra: Default::default(),
    })
}
