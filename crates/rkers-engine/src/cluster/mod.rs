//! A cluster as one command sees it: the config (defaulted and validated), the version metadata,
//! the files named after the config and the state. It also maps the config into the inputs of
//! the other modules (PKI spec, plan inputs, SSH targets), so those modules stay independent of
//! each other and of the config model.

pub mod targets;

use crate::config::{self, ConfigError, Diagnostic, RkeConfig};
use crate::metadata::{Catalog, MetadataError};
use crate::output::{Redactor, Reporter};
use crate::pki::{self, PkiError, PkiHost, PkiSpec};
use crate::state::{ClusterFiles, ClusterState, StateError, StateFile};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Metadata(#[from] MetadataError),
    #[error("{0}")]
    State(#[from] StateError),
    #[error("certificates: {0}")]
    Pki(#[from] PkiError),
    #[error("{0}")]
    Encryption(#[from] crate::plan::encryption::EncryptionError),
    #[error("the cluster has no controlplane host for the admin kubeconfig to point at")]
    NoControlPlane,
    #[error("cannot write the admin kubeconfig {path}: {source}")]
    WriteKubeconfig {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ClusterError {
    pub fn is_invalid_config(&self) -> bool {
        matches!(self, ClusterError::Config(e) if e.exit_code() == 2)
    }
}

pub struct Cluster {
    pub config: RkeConfig,
    pub warnings: Vec<Diagnostic>,
    pub catalog: Catalog,
    pub files: ClusterFiles,
    /// Where this run's secrets are registered: its reporter's redactor.
    pub redactor: std::sync::Arc<Redactor>,
    /// The admin kubeconfig's path as the state records it (`configPath`); the real path when
    /// `None`. The library API's runs work in a new scratch directory each time, and a path
    /// that changes would make every run issue a new admin certificate.
    pub recorded_kubeconfig_path: Option<String>,
}

impl Cluster {
    /// The container runtime each host's Docker must speak to (the Docker API check): the
    /// Kubernetes version, whether kubelet goes through cri-dockerd, and the rke-tools image
    /// cri-dockerd comes from.
    pub fn runtime_client(&self) -> crate::metadata::docker_api::RuntimeClient {
        let c = &self.config;
        crate::metadata::docker_api::RuntimeClient {
            kubernetes_version: c.kubernetes_version.clone(),
            cri_dockerd: c.enable_cri_dockerd == Some(true),
            tools_image: c.system_images.kubernetes_services_sidecar.clone(),
        }
    }

    /// The tag of the default Kubernetes version's `alpine` (rke-tools) image, which RKE1 gives
    /// to every `rancher/rke-tools` backup helper (§14.2, §33.9).
    pub fn default_rke_tools_tag(&self) -> Option<String> {
        self.catalog
            .system_images(&self.catalog.default_version())
            .and_then(|i| i.get("alpine").and_then(|a| crate::metadata::image_tag(a)))
    }

    /// The admin kubeconfig for `bundle`, pointing at the first controlplane host (§6.1).
    pub fn admin_kubeconfig(&self, bundle: &pki::Bundle) -> Result<String, ClusterError> {
        let server = self
            .config
            .nodes
            .iter()
            .find(|n| n.role.iter().any(|r| r == "controlplane"))
            .map(|n| format!("https://{}:6443", config::url_host(&n.address)))
            .ok_or(ClusterError::NoControlPlane)?;
        Ok(pki::admin_kubeconfig(
            bundle,
            &self.config.cluster_name,
            &server,
        )?)
    }

    /// Writes `kube_config_<name>.yml` for `bundle`'s admin certificate, pointing at the first
    /// controlplane host as RKE1 does (§6.1), atomically and mode 0600, and says so.
    pub fn write_admin_kubeconfig(
        &self,
        bundle: &pki::Bundle,
        reporter: &Reporter,
    ) -> Result<(), ClusterError> {
        let text = self.admin_kubeconfig(bundle)?;
        let path = &self.files.kubeconfig_path;
        (self.files.storage)
            .write_private(path, text.as_bytes())
            .map_err(|source| ClusterError::WriteKubeconfig {
                path: path.clone(),
                source,
            })?;
        reporter.info(format!(
            "Successfully Deployed local admin kubeconfig at [{}]",
            path.display()
        ));
        Ok(())
    }

    /// Reads, defaults and validates the config; every problem is reported at once. For a
    /// version without published metadata the state file is read too: its images are the
    /// cluster's.
    pub fn load(path: &Path, reporter: &Reporter) -> Result<Cluster, ClusterError> {
        let catalog = Catalog::load()?;
        let loaded = config::load_file(path)?;
        let files = ClusterFiles::from_config_path(path);
        let state = if catalog.is_unpublished(&loaded.config.kubernetes_version) {
            StateFile::load(&files.state_path)?
        } else {
            None
        };
        Self::from_loaded_with_state(loaded, catalog, files, state.as_ref(), reporter)
    }

    /// [`Cluster::load`] for a config already parsed, with the metadata and the file names
    /// given by the caller (the library API: nothing read from the environment or the disk).
    pub fn from_loaded(
        loaded: config::Loaded,
        catalog: Catalog,
        files: ClusterFiles,
        reporter: &Reporter,
    ) -> Result<Cluster, ClusterError> {
        Self::from_loaded_with_state(loaded, catalog, files, None, reporter)
    }

    /// [`Cluster::from_loaded`] with the cluster's state, where a version without published
    /// metadata takes its images from.
    pub fn from_loaded_with_state(
        loaded: config::Loaded,
        catalog: Catalog,
        files: ClusterFiles,
        state: Option<&StateFile>,
        reporter: &Reporter,
    ) -> Result<Cluster, ClusterError> {
        let mut config = loaded.config;
        for warning in &loaded.warnings {
            reporter.warn(warning.to_string());
        }
        register_secrets(&config, reporter.redactor());
        config::apply_defaults(&mut config, &catalog);
        // A state whose config does not parse has no images to give; `up` reports it later.
        let state_config = state
            .and_then(|s| s.current_state.rke_config.as_ref())
            .and_then(|c| RkeConfig::from_state_json(c).ok());
        let unpublished =
            config::images_for_unpublished_version(&mut config, &catalog, state_config.as_ref());
        let problems = config::validate(&config, &catalog, &loaded.locations);
        if !problems.is_empty() {
            return Err(ConfigError::Invalid(problems).into());
        }
        if let Some(source) = unpublished {
            reporter.warn(source.note(&config.kubernetes_version));
        }
        let mut warnings = loaded.warnings;
        for warning in config::warnings(&config, &loaded.locations) {
            reporter.warn(warning.to_string());
            warnings.push(warning);
        }
        Ok(Cluster {
            config,
            warnings,
            catalog,
            files,
            redactor: reporter.redactor().clone(),
            recorded_kubeconfig_path: None,
        })
    }

    pub fn load_state(&self) -> Result<Option<StateFile>, ClusterError> {
        let state = StateFile::load_from(&self.files.storage, &self.files.state_path)?;
        if let Some(s) = &state {
            for side in [&s.desired_state, &s.current_state] {
                for cert in side.certificates_bundle.values() {
                    self.redactor.register(&cert.key_pem);
                }
            }
        }
        Ok(state)
    }

    /// The certificate inputs: hosts in config order, SANs, CIDRs, domain (§11).
    pub fn pki_spec(&self) -> Result<PkiSpec, ClusterError> {
        let c = &self.config;
        let hosts = c
            .nodes
            .iter()
            .map(|n| PkiHost {
                address: n.address.clone(),
                internal_address: n.internal_address.clone(),
                hostname_override: n.hostname_override.clone(),
                roles: pki::HostRoles {
                    etcd: n.role.iter().any(|r| r == "etcd"),
                    controlplane: n.role.iter().any(|r| r == "controlplane"),
                    worker: n.role.iter().any(|r| r == "worker"),
                },
            })
            .collect();
        let etcd = &c.services.etcd;
        let external_etcd = (!etcd.external_urls.is_empty()).then(|| pki::ExternalEtcd {
            ca_cert: etcd.ca_cert.clone(),
            cert: etcd.cert.clone(),
            key: etcd.key.clone(),
        });
        Ok(PkiSpec {
            hosts,
            extra_sans: c.authentication.sans.clone(),
            service_cidrs: pki::parse_service_cidrs(&c.services.kube_api.service_cluster_ip_range)?,
            cluster_domain: c.services.kubelet.cluster_domain.clone(),
            cluster_name: c.cluster_name.clone(),
            kubelet_serving_certs: c.services.kubelet.generate_serving_certificate,
            external_etcd,
            admin_kubeconfig_path: self
                .recorded_kubeconfig_path
                .clone()
                .unwrap_or_else(|| self.files.kubeconfig_path.display().to_string()),
        })
    }

    /// The default component flags of the cluster's version, in the plan's shape.
    pub fn service_options(&self) -> Result<crate::plan::ServiceOptions, ClusterError> {
        let o = self.catalog.service_options(
            &self.config.kubernetes_version,
            Some(&self.config.system_images.kubernetes),
        )?;
        Ok(o.into())
    }

    /// The default Windows kubelet and kube-proxy flags of the cluster's version (§28).
    pub fn windows_service_options(&self) -> Result<crate::plan::ServiceOptions, ClusterError> {
        let o = self.catalog.windows_service_options(
            &self.config.kubernetes_version,
            Some(&self.config.system_images.kubernetes),
        )?;
        Ok(o.into())
    }

    /// RKE1's init phase (§9.1): certificates generated, reconciled with the previous run, or
    /// read from the cert dir; the desired state is the new config with those certificates.
    /// The current state is carried over untouched.
    pub fn init_state(
        &self,
        old: Option<&StateFile>,
        custom_certs: Option<&Path>,
    ) -> Result<(StateFile, pki::Changes), ClusterError> {
        let (bundle, changes) = self.certificates(old, custom_certs)?.make()?;
        let encryption_config = self.desired_encryption_config(old)?;
        Ok((self.state_with(old, bundle, encryption_config), changes))
    }

    /// What [`Cluster::init_state`] needs to make the certificates, owned, so the work (RSA
    /// keys: the longest part of a new cluster's start) can run on a thread of its own while
    /// `up` connects to the hosts.
    pub fn certificates(
        &self,
        old: Option<&StateFile>,
        custom_certs: Option<&Path>,
    ) -> Result<CertificatesJob, ClusterError> {
        Ok(CertificatesJob {
            spec: self.pki_spec()?,
            old_bundle: old
                .map(|s| &s.desired_state.certificates_bundle)
                .filter(|b| !b.is_empty())
                .cloned(),
            custom_certs: custom_certs.map(Path::to_path_buf),
        })
    }

    /// The desired state: the new config with `bundle` (from [`Cluster::certificates`]) and
    /// `encryption_config` (from [`Cluster::desired_encryption_config`]); every private key in
    /// the bundle is registered for redaction first.
    /// cluster.yml with what it leaves to the cluster's state settled (`previous`: the config the
    /// state says the cluster runs): see [`config::settle_br_netfilter`].
    pub fn settled_config(&self, previous: Option<&RkeConfig>) -> RkeConfig {
        let mut config = self.config.clone();
        config::settle_br_netfilter(&mut config, previous);
        config
    }

    pub fn state_with(
        &self,
        old: Option<&StateFile>,
        bundle: pki::Bundle,
        encryption_config: String,
    ) -> StateFile {
        let old_desired = old.map(|s| &s.desired_state);
        for cert in bundle.values() {
            self.redactor.register(&cert.key_pem);
        }
        let previous = old
            .and_then(|s| s.current_state.rke_config.as_ref())
            .and_then(|c| RkeConfig::from_state_json(c).ok());
        let new_config = self.settled_config(previous.as_ref()).to_state_json();
        let rke_config = match old_desired.and_then(|d| d.rke_config.as_ref()) {
            Some(previous) => with_unknown_fields(previous, new_config),
            None => new_config,
        };
        let desired = ClusterState {
            rke_config: Some(rke_config),
            certificates_bundle: bundle,
            encryption_config,
            ..Default::default()
        };
        StateFile {
            desired_state: desired,
            current_state: old.map(|s| s.current_state.clone()).unwrap_or_default(),
            extra: old.map(|s| s.extra.clone()).unwrap_or_default(),
        }
    }
}

/// The certificates of a run, to be made: see [`Cluster::certificates`].
pub struct CertificatesJob {
    spec: PkiSpec,
    old_bundle: Option<pki::Bundle>,
    custom_certs: Option<PathBuf>,
}

impl CertificatesJob {
    /// Every certificate and key is new (a new cluster, no cert dir): the slow case, and one
    /// that reads nothing that could be wrong.
    pub fn generates_everything(&self) -> bool {
        self.custom_certs.is_none() && self.old_bundle.is_none()
    }

    /// Generated, reconciled with the previous run's, or read from the cert dir; what changed.
    pub fn make(self) -> Result<(pki::Bundle, pki::Changes), ClusterError> {
        if let Some(dir) = &self.custom_certs {
            let custom = pki::load_custom_certs(dir, &self.spec)?;
            let changes = pki::Changes {
                changed: custom.bundle.keys().cloned().collect(),
                removed: Default::default(),
            };
            for w in &custom.warnings {
                tracing::warn!("{w}");
            }
            return Ok((custom.bundle, changes));
        }
        Ok(match self.old_bundle {
            Some(bundle) => pki::reconcile_bundle(bundle, &self.spec)?,
            None => {
                let bundle = pki::generate_bundle(&self.spec)?;
                let changes = pki::Changes {
                    changed: bundle.keys().cloned().collect(),
                    removed: Default::default(),
                };
                (bundle, changes)
            }
        })
    }
}

impl Cluster {
    /// The provider file the config asks for (§23): the custom config rendered verbatim; the
    /// generated one kept from the state (the latest applied text first, so a finished key
    /// rotation is not undone), else a new key; nothing when encryption is off.
    pub fn desired_encryption_config(
        &self,
        old: Option<&StateFile>,
    ) -> Result<String, ClusterError> {
        use crate::plan::encryption::{self, EncryptionKey};
        let Some(sec) = self.config.services.kube_api.enabled_secrets_encryption() else {
            return Ok(String::new());
        };
        let text = if let Some(custom) = &sec.custom_config {
            encryption::render_custom(custom)?
        } else {
            let kept = old.and_then(|s| {
                [&s.current_state, &s.desired_state]
                    .into_iter()
                    .map(|c| &c.encryption_config)
                    .find(|t| !t.is_empty() && encryption::encrypts_with_aescbc(t))
            });
            match kept {
                Some(t) => t.clone(),
                None => encryption::render_provider(&[EncryptionKey::generate()]),
            }
        };
        if let Ok(keys) = encryption::aescbc_keys(&text) {
            for k in keys {
                self.redactor.register(&k.secret);
            }
        }
        Ok(text)
    }
}

/// Every secret the config carries is masked wherever it could show up later.
fn register_secrets(c: &RkeConfig, r: &Redactor) {
    for n in &c.nodes {
        r.register(&n.ssh_key);
    }
    r.register(&c.bastion_host.ssh_key);
    if !c.private_registries.is_empty() {
        // What kubelet's RKE_KUBELET_DOCKER_CONFIG carries: each registry's `user:password` and
        // the whole config, both base64, would show a password to anyone who decodes them.
        use base64::Engine;
        let base64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        r.register(&base64(&crate::plan::kubelet_docker_config(
            &c.private_registries,
        )));
        for reg in c
            .private_registries
            .iter()
            .filter(|r| !r.password.is_empty())
        {
            r.register(&base64(&format!("{}:{}", reg.user, reg.password)));
        }
    }
    for reg in &c.private_registries {
        r.register(&reg.password);
        if let Some(ecr) = &reg.ecr_credential_plugin {
            r.register(&ecr.aws_secret_access_key);
            r.register(&ecr.aws_session_token);
        }
    }
    if let Some(backup) = &c.services.etcd.backup_config
        && let Some(s3) = &backup.s3_backup_config
    {
        r.register(&s3.secret_key);
    }
    r.register(&c.services.etcd.key);
}

/// The new config plus the fields of the previous one that rkers does not model (a newer RKE's
/// keys), so writing the state never drops them. Fields rkers models come from the new config
/// only: a label or option the user removed stays removed.
fn with_unknown_fields(previous: &serde_json::Value, new: serde_json::Value) -> serde_json::Value {
    let modeled = match RkeConfig::from_state_json(previous) {
        Ok(c) => c.to_state_json(),
        // A previous config rkers cannot read at all has nothing it could safely keep.
        Err(_) => return new,
    };
    let unknown = json_minus(previous, &modeled);
    match unknown {
        Some(u) => crate::state::merge_preserving(&u, new),
        None => new,
    }
}

/// What `a` has that `b` lacks: whole keys absent from `b`, recursively through objects.
fn json_minus(a: &serde_json::Value, b: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = serde_json::Map::new();
            for (k, va) in a {
                match b.get(k) {
                    None => {
                        out.insert(k.clone(), va.clone());
                    }
                    Some(vb) => {
                        if let Some(d) = json_minus(va, vb) {
                            out.insert(k.clone(), d);
                        }
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        _ => None,
    }
}

crate::error::about_no_host!(ClusterError);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_survive_and_removed_known_fields_stay_removed() {
        let previous = json!({
            "nodes": [{"address": "10.0.0.1", "role": ["etcd"], "user": "root", "labels": {"team": "a"}}],
            "clusterName": "local",
            "futureField": {"x": 1},
            "services": {"etcd": {"futureEtcdKnob": true}}
        });
        let new = json!({
            "nodes": [{"address": "10.0.0.1", "role": ["etcd"], "user": "root"}],
            "clusterName": "local",
            "services": {"etcd": {}}
        });
        let merged = with_unknown_fields(&previous, new);
        assert_eq!(merged["futureField"], json!({"x": 1}));
        assert_eq!(merged["services"]["etcd"]["futureEtcdKnob"], json!(true));
        assert!(merged["nodes"][0].get("labels").is_none(), "{merged}");
    }

    #[test]
    fn the_registry_credentials_kubelet_gets_are_masked() {
        let yaml = "nodes:\n  - address: 10.0.0.1\n    user: root\n    role: [etcd, controlplane, worker]\n\
                    private_registries:\n  - url: registry.example:5000\n    user: rkers\n    password: s3cr3t-pass\n";
        let loaded = config::load_str(yaml, "cluster.yml").unwrap();
        let redactor = Redactor::default();
        register_secrets(&loaded.config, &redactor);
        use base64::Engine;
        let config = crate::plan::kubelet_docker_config(&loaded.config.private_registries);
        let env = format!(
            "RKE_KUBELET_DOCKER_CONFIG={}",
            base64::engine::general_purpose::STANDARD.encode(config)
        );
        assert_eq!(
            redactor.redact(&env),
            "RKE_KUBELET_DOCKER_CONFIG=[REDACTED]"
        );
    }
}
