//! Certificate rotation (`cert rotate`, §25.1): which entries get new keys.

use std::str::FromStr;

use super::generate::{Changes, new_ca_entry, reconcile_bundle};
use super::names::*;
use super::{Bundle, PkiError, PkiSpec};

/// A `--service` value of `cert rotate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RotateService {
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Kubelet,
    KubeProxy,
    Etcd,
}

impl RotateService {
    pub const ALL: [RotateService; 6] = [
        RotateService::KubeApiserver,
        RotateService::KubeControllerManager,
        RotateService::KubeScheduler,
        RotateService::Kubelet,
        RotateService::KubeProxy,
        RotateService::Etcd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RotateService::KubeApiserver => "kube-apiserver",
            RotateService::KubeControllerManager => "kube-controller-manager",
            RotateService::KubeScheduler => "kube-scheduler",
            RotateService::Kubelet => "kubelet",
            RotateService::KubeProxy => "kube-proxy",
            RotateService::Etcd => "etcd",
        }
    }

    /// Whether a bundle entry belongs to this service's certificates.
    fn owns(self, name: &str) -> bool {
        match self {
            RotateService::KubeApiserver => name == KUBE_API_CERT_NAME,
            RotateService::KubeControllerManager => name == KUBE_CONTROLLER_CERT_NAME,
            RotateService::KubeScheduler => name == KUBE_SCHEDULER_CERT_NAME,
            RotateService::KubeProxy => name == KUBE_PROXY_CERT_NAME,
            RotateService::Kubelet => {
                name == KUBE_NODE_CERT_NAME || name.starts_with(KUBELET_CERT_PREFIX)
            }
            RotateService::Etcd => is_etcd_member_cert(name),
        }
    }
}

impl FromStr for RotateService {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RotateService::ALL
            .into_iter()
            .find(|svc| svc.as_str() == s)
            .ok_or_else(|| {
                let allowed: Vec<&str> = RotateService::ALL.iter().map(|s| s.as_str()).collect();
                format!(
                    "unknown service [{s}] for certificate rotation, allowed: {}",
                    allowed.join(", ")
                )
            })
    }
}

fn is_etcd_member_cert(name: &str) -> bool {
    name.starts_with(ETCD_CERT_PREFIX)
        && name != ETCD_CLIENT_CERT_NAME
        && name != ETCD_CLIENT_CA_CERT_NAME
}

/// Rotates certificates with new keys (§25.1):
/// - `rotate_ca`: new `kube-ca` and request-header CA, then every component certificate
///   (`services` is ignored);
/// - `services` empty: every component certificate;
/// - otherwise only the certificates of the listed services.
///
/// The service account key is never rotated (existing tokens stay valid). Without `rotate_ca`
/// an expired CA is refused, as RKE1 does.
pub fn rotate_bundle(
    bundle: Bundle,
    spec: &PkiSpec,
    services: &[RotateService],
    rotate_ca: bool,
) -> Result<(Bundle, Changes), PkiError> {
    let old = bundle.clone();
    let mut certs = bundle;
    if rotate_ca {
        for name in [CA_CERT_NAME, REQUEST_HEADER_CA_CERT_NAME] {
            certs.insert(name.to_string(), new_ca_entry(name)?);
        }
    } else {
        let ca = certs
            .get(CA_CERT_NAME)
            .filter(|c| c.has_certificate() && c.has_key())
            .ok_or_else(|| PkiError::MissingCa {
                name: CA_CERT_NAME.to_string(),
            })?;
        let info = ca.info()?;
        if info.not_after <= time::OffsetDateTime::now_utc() {
            return Err(PkiError::CaExpired {
                not_after: info.not_after,
            });
        }
    }

    let everything = rotate_ca || services.is_empty();
    certs.retain(|name, _| {
        let keep_always = name == CA_CERT_NAME
            || name == REQUEST_HEADER_CA_CERT_NAME
            || name == SERVICE_ACCOUNT_TOKEN_KEY_NAME
            || name == ETCD_CLIENT_CERT_NAME
            || name == ETCD_CLIENT_CA_CERT_NAME;
        if keep_always {
            return true;
        }
        if everything {
            return false;
        }
        !services.iter().any(|svc| svc.owns(name))
    });

    // Dropped entries are recreated from scratch (new keys); the rest follow §11.3.
    let (certs, _) = reconcile_bundle(certs, spec)?;
    let changes = Changes::between(&old, &certs);
    Ok((certs, changes))
}
