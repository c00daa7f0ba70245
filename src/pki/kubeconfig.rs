//! Kubeconfig texts (§6.1), built by hand in RKE1's exact layout so files and state entries stay
//! identical to what RKE1 writes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::names::{CA_CERT_NAME, KUBE_ADMIN_CERT_NAME, cert_path, key_path};
use super::{Bundle, PkiError};

/// Every node reaches the API server through localhost (the API server itself, or nginx-proxy).
pub const LOCAL_API_SERVER_URL: &str = "https://127.0.0.1:6443";

/// `/etc/kubernetes/ssl/kubecfg-<component>.yaml`: cluster and context `local`, user
/// `<component>-local`, certificate and key as node file paths.
pub fn node_kubeconfig(component: &str) -> String {
    kubeconfig_with_paths(
        LOCAL_API_SERVER_URL,
        "local",
        component,
        &cert_path(CA_CERT_NAME),
        &cert_path(component),
        &key_path(component),
    )
}

pub(crate) fn kubeconfig_with_paths(
    server: &str,
    cluster: &str,
    component: &str,
    ca_path: &str,
    cert_path: &str,
    key_path: &str,
) -> String {
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- cluster:
    api-version: v1
    certificate-authority: {ca_path}
    server: "{server}"
  name: "{cluster}"
contexts:
- context:
    cluster: "{cluster}"
    user: "{component}-{cluster}"
  name: "{cluster}"
current-context: "{cluster}"
users:
- name: "{component}-{cluster}"
  user:
    client-certificate: {cert_path}
    client-key: {key_path}"#
    )
}

pub(crate) fn kubeconfig_with_data(
    server: &str,
    cluster: &str,
    component: &str,
    ca_pem: &str,
    cert_pem: &str,
    key_pem: &str,
) -> String {
    let ca = STANDARD.encode(ca_pem);
    let cert = STANDARD.encode(cert_pem);
    let key = STANDARD.encode(key_pem);
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- cluster:
    api-version: v1
    certificate-authority-data: {ca}
    server: "{server}"
  name: "{cluster}"
contexts:
- context:
    cluster: "{cluster}"
    user: "{component}-{cluster}"
  name: "{cluster}"
current-context: "{cluster}"
users:
- name: "{component}-{cluster}"
  user:
    client-certificate-data: {cert}
    client-key-data: {key}"#
    )
}

/// The workstation kubeconfig (`kube_config_<config file>`) for `kube-admin`, pointing at
/// `server_url` (e.g. `https://<first reachable controlplane>:6443`).
pub fn admin_kubeconfig(
    bundle: &Bundle,
    cluster_name: &str,
    server_url: &str,
) -> Result<String, PkiError> {
    let ca = super::generate::ca_certificate(bundle)?;
    let admin = bundle
        .get(KUBE_ADMIN_CERT_NAME)
        .filter(|c| c.has_certificate() && c.has_key())
        .ok_or_else(|| PkiError::InvalidCertificate {
            name: KUBE_ADMIN_CERT_NAME.to_string(),
            reason: "certificate or key missing from the bundle".to_string(),
        })?;
    Ok(kubeconfig_with_data(
        server_url,
        cluster_name,
        KUBE_ADMIN_CERT_NAME,
        &ca.certificate_pem,
        &admin.certificate_pem,
        &admin.key_pem,
    ))
}
