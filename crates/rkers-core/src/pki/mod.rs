//! Certificates, keys and kubeconfigs of a cluster (§11): generation of the full bundle,
//! reconciliation on later runs (§11.3), the per-host selection for the cert deployer (§11.1,
//! §12), kubeconfigs (§6.1), custom certificates and CSRs from a cert dir (§11.4, §2.8), and
//! inspection for `cert list`.
//!
//! This module takes its own input ([`PkiSpec`]) rather than the config model, so the caller maps
//! `cluster.yml` onto it.

mod certdir;
mod certificate;
mod generate;
mod hosts;
mod inspect;
mod kubeconfig;
pub mod names;
mod rotate;
mod spec;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use certdir::{CsrReport, CustomCerts, generate_csrs, load_custom_certs};
pub use certificate::{CertInfo, CertificatePki};
pub use generate::cert_object;
pub use generate::{
    Changes, check_ca_certificate, check_signing_ca, generate_bundle, reconcile_bundle,
};
pub use hosts::{cert_names_for_host, certs_for_host};
pub use inspect::{CertSummary, inspect_bundle};
pub use kubeconfig::{LOCAL_API_SERVER_URL, admin_kubeconfig, node_kubeconfig};
pub use names::crt_name_for_host;
pub use rotate::{RotateService, rotate_bundle};
pub use spec::{
    ExternalEtcd, HostRoles, PkiHost, PkiSpec, kubernetes_service_ips, parse_service_cidrs,
};

/// The `certificatesBundle` map: certificate name → entry. A `BTreeMap` because Go writes map
/// keys sorted, so the state file keeps RKE1's order.
pub type Bundle = BTreeMap<String, CertificatePki>;

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate [{name}] is invalid: {reason}")]
    InvalidCertificate { name: String, reason: String },
    #[error("private key of [{name}] is invalid: {reason}")]
    InvalidKey { name: String, reason: String },
    #[error("CA certificate or key [{name}] is missing from the certificate bundle")]
    MissingCa { name: String },
    #[error("cannot generate certificate [{name}]: {reason}")]
    Generate { name: String, reason: String },
    #[error(
        "CA certificate is invalid, please use the --rotate-ca flag to rotate CA certificate, error: it expired on {not_after}"
    )]
    CaExpired { not_after: time::OffsetDateTime },
    #[error("invalid service cluster IP range [{value}]: {reason}")]
    ServiceCidr { value: String, reason: String },
    #[error("custom certificates in [{dir}]: {reason}")]
    CustomCerts { dir: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
