//! Certificate names, environment variable names and node paths (§11 naming helpers).

use super::PkiHost;

pub const CA_CERT_NAME: &str = "kube-ca";
pub const REQUEST_HEADER_CA_CERT_NAME: &str = "kube-apiserver-requestheader-ca";
pub const KUBE_API_CERT_NAME: &str = "kube-apiserver";
pub const KUBE_CONTROLLER_CERT_NAME: &str = "kube-controller-manager";
pub const KUBE_SCHEDULER_CERT_NAME: &str = "kube-scheduler";
pub const KUBE_PROXY_CERT_NAME: &str = "kube-proxy";
pub const KUBE_NODE_CERT_NAME: &str = "kube-node";
pub const KUBELET_CERT_PREFIX: &str = "kube-kubelet";
pub const ETCD_CERT_PREFIX: &str = "kube-etcd";
pub const ETCD_CLIENT_CA_CERT_NAME: &str = "kube-etcd-client-ca";
pub const ETCD_CLIENT_CERT_NAME: &str = "kube-etcd-client";
pub const API_PROXY_CLIENT_CERT_NAME: &str = "kube-apiserver-proxy-client";
pub const SERVICE_ACCOUNT_TOKEN_KEY_NAME: &str = "kube-service-account-token";
pub const KUBE_ADMIN_CERT_NAME: &str = "kube-admin";

pub const KUBE_NODE_COMMON_NAME: &str = "system:node";
pub const KUBE_NODE_ORGANIZATION: &str = "system:nodes";
pub const KUBE_ADMIN_ORGANIZATION: &str = "system:masters";

/// Where certificates live on a node.
pub const CERT_PATH_PREFIX: &str = "/etc/kubernetes/ssl/";

/// `<prefix>-<internal address if set and different from address, else address>`, dots turned
/// into dashes, lowercased: `kube-etcd-172-26-14-216`.
pub fn crt_name_for_host(host: &PkiHost, prefix: &str) -> String {
    let address = if !host.internal_address.is_empty() && host.internal_address != host.address {
        &host.internal_address
    } else {
        &host.address
    };
    format!("{prefix}-{}", address.replace('.', "-").to_lowercase())
}

/// `kube-etcd-172-26-14-216` → `KUBE_ETCD_172_26_14_216`.
pub fn env_name(cert_name: &str) -> String {
    cert_name.to_uppercase().replace('-', "_")
}

pub fn key_env_name(cert_name: &str) -> String {
    format!("{}_KEY", env_name(cert_name))
}

pub fn config_env_name(cert_name: &str) -> String {
    format!("KUBECFG_{}", env_name(cert_name))
}

pub fn cert_path(cert_name: &str) -> String {
    format!("{CERT_PATH_PREFIX}{cert_name}.pem")
}

pub fn key_path(cert_name: &str) -> String {
    format!("{CERT_PATH_PREFIX}{cert_name}-key.pem")
}

pub fn config_path(cert_name: &str) -> String {
    format!("{CERT_PATH_PREFIX}kubecfg-{cert_name}.yaml")
}

/// RKE1 writes `system:<name>` into the bundle's `commonName` field whenever it has no explicit
/// one, even when the certificate's real CN differs (e.g. `kube-ca`). Kept for identical state.
pub fn default_common_name(cert_name: &str) -> String {
    format!("system:{cert_name}")
}

/// Whether a node-side kubeconfig belongs to this certificate: every one except the CA, the
/// API server, etcd, kubelet serving certificates and the service account key.
pub fn has_node_kubeconfig(cert_name: &str) -> bool {
    cert_name != CA_CERT_NAME
        && cert_name != KUBE_API_CERT_NAME
        && !cert_name.contains(ETCD_CERT_PREFIX)
        && !cert_name.contains(KUBELET_CERT_PREFIX)
        && cert_name != SERVICE_ACCOUNT_TOKEN_KEY_NAME
}

/// The bundle's `commonName` / `ouName` fields for a certificate read from a cert dir.
pub fn bundle_names_for_dir_entry(cert_name: &str) -> (String, String) {
    match cert_name {
        KUBE_NODE_CERT_NAME => (
            KUBE_NODE_COMMON_NAME.to_string(),
            KUBE_NODE_ORGANIZATION.to_string(),
        ),
        KUBE_ADMIN_CERT_NAME => (cert_name.to_string(), KUBE_ADMIN_ORGANIZATION.to_string()),
        _ => (cert_name.to_string(), String::new()),
    }
}
