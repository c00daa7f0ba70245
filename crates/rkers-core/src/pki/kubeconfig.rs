//! Kubeconfig texts (§6.1) in RKE1's exact layout, so files and state entries stay identical to
//! what RKE1 writes. The values that come from the user (the cluster name, the server's address)
//! are serialized as double-quoted scalars, where RKE1's template pasted them between quotes: a
//! `"` or `\\` in `cluster_name` gave a kubeconfig no YAML parser reads.

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

/// A YAML double-quoted scalar holding `value`. A JSON string is one (`"`, `\\` and control
/// characters escaped as YAML escapes them); what YAML reads differently from JSON is escaped on
/// top: the line breaks U+0085, U+2028 and U+2029 (folded in a YAML scalar) and characters YAML
/// does not allow unescaped.
fn yaml_quoted(value: &str) -> String {
    let json = serde_json::Value::from(value).to_string();
    let yaml_escapes = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !json.contains(yaml_escapes) {
        return json;
    }
    json.chars()
        .map(|c| match c {
            c if yaml_escapes(c) => format!("\\u{:04x}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// The server URL, the cluster (and context) name and the user name, each quoted.
fn quoted_names(server: &str, cluster: &str, component: &str) -> (String, String, String) {
    (
        yaml_quoted(server),
        yaml_quoted(cluster),
        yaml_quoted(&format!("{component}-{cluster}")),
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
    let (server, cluster, user) = quoted_names(server, cluster, component);
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- cluster:
    api-version: v1
    certificate-authority: {ca_path}
    server: {server}
  name: {cluster}
contexts:
- context:
    cluster: {cluster}
    user: {user}
  name: {cluster}
current-context: {cluster}
users:
- name: {user}
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
    let (server, cluster, user) = quoted_names(server, cluster, component);
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- cluster:
    api-version: v1
    certificate-authority-data: {ca}
    server: {server}
  name: {cluster}
contexts:
- context:
    cluster: {cluster}
    user: {user}
  name: {cluster}
current-context: {cluster}
users:
- name: {user}
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinary_cluster_name_keeps_rke1s_layout() {
        let text = kubeconfig_with_paths(
            "https://127.0.0.1:6443",
            "local",
            "kube-node",
            "ca",
            "c",
            "k",
        );
        assert!(text.contains("    server: \"https://127.0.0.1:6443\"\n  name: \"local\"\n"));
        assert!(text.contains("current-context: \"local\"\nusers:\n- name: \"kube-node-local\"\n"));
    }

    #[test]
    fn any_cluster_name_and_an_ipv6_server_read_back_as_written() {
        let name = "prod \"east\": \\ #1\n\u{85}\u{2028}x";
        let server = format!("https://{}:6443", crate::config::url_host("fd00::1"));
        assert_eq!(server, "https://[fd00::1]:6443");
        let text = kubeconfig_with_data(&server, name, "kube-admin", "ca", "cert", "key");
        let doc: serde_json::Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(doc["clusters"][0]["name"], name);
        assert_eq!(doc["clusters"][0]["cluster"]["server"], server.as_str());
        assert_eq!(doc["contexts"][0]["context"]["cluster"], name);
        assert_eq!(doc["current-context"], name);
        assert_eq!(
            doc["users"][0]["name"],
            format!("kube-admin-{name}").as_str()
        );
        assert_eq!(
            doc["users"][0]["user"]["client-key-data"],
            STANDARD.encode("key").as_str()
        );
    }
}
