//! Where two configs differ, named by cluster.yml key paths
//! (`services.kubelet.extra_args.max-pods`): what `rkers rollback` tells the user to change in
//! their cluster.yml so the next `up` keeps the rollback. Values of secret-bearing keys are
//! never shown.

use serde_json::Value;

use super::RkeConfig;
use crate::redact::is_secret_name;

/// One key whose value differs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeyDifference {
    /// The cluster.yml key path; list items as `nodes[1]`.
    pub key: String,
    /// The value in the first config (compact JSON), `None` when it has no such key.
    pub left: Option<String>,
    /// The value in the second config.
    pub right: Option<String>,
}

/// What a secret's value shows as.
pub const REDACTED: &str = "[REDACTED]";

/// Keys whose whole value is user data (flag names, labels, options), not more fields: their
/// keys are kept as they are, not turned into cluster.yml spelling.
const FREE_FORM: &[&str] = &[
    "extraArgs",
    "extraArgsArray",
    "winExtraArgs",
    "winExtraArgsArray",
    "labels",
    "annotations",
    "options",
    "nodeSelector",
    "virtualCenter",
    "serviceOverride",
];

/// Fields whose value is a credential although their name does not say so.
const SECRET_FIELDS: &[&str] = &["ssh_key", "key", "cert", "ca_cert", "custom_config"];

/// The keys where `left` and `right` differ, in key order, values of secret-bearing keys
/// redacted.
pub fn key_differences(left: &RkeConfig, right: &RkeConfig) -> Vec<KeyDifference> {
    let mut out = Vec::new();
    walk(
        &left.to_state_json(),
        &right.to_state_json(),
        &mut Vec::new(),
        false,
        &mut out,
    );
    out
}

fn walk(
    left: &Value,
    right: &Value,
    path: &mut Vec<String>,
    free_form: bool,
    out: &mut Vec<KeyDifference>,
) {
    if left == right {
        return;
    }
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for key in keys {
                let child_free_form = !free_form && FREE_FORM.contains(&key.as_str());
                let name = if free_form {
                    key.clone()
                } else {
                    yaml_key(key)
                };
                path.push(name);
                walk(
                    l.get(key).unwrap_or(&Value::Null),
                    r.get(key).unwrap_or(&Value::Null),
                    path,
                    child_free_form,
                    out,
                );
                path.pop();
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (a, b)) in l.iter().zip(r).enumerate() {
                let Some(last) = path.pop() else { return };
                path.push(format!("{last}[{i}]"));
                walk(a, b, path, free_form, out);
                path.pop();
                path.push(last);
            }
        }
        _ => {
            let secret = path.iter().any(|k| {
                let bare = k.split('[').next().unwrap_or(k);
                is_secret_name(bare) || SECRET_FIELDS.contains(&bare)
            });
            let show = |v: &Value| {
                (!v.is_null()).then(|| {
                    if secret {
                        REDACTED.to_string()
                    } else {
                        v.to_string()
                    }
                })
            };
            out.push(KeyDifference {
                key: path.join("."),
                left: show(left),
                right: show(right),
            });
        }
    }
}

/// A field's JSON tag in its cluster.yml spelling: RKE1's YAML keys are the snake_case of its
/// JSON tags, except two services.
fn yaml_key(json: &str) -> String {
    match json {
        "kubeApi" => return "kube-api".into(),
        "kubeController" => return "kube-controller".into(),
        _ => {}
    }
    let mut out = String::with_capacity(json.len() + 4);
    for c in json.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    fn config(yaml: &str) -> RkeConfig {
        load_str(yaml, "cluster.yml").unwrap().config
    }

    #[test]
    fn names_the_cluster_yml_keys_that_differ() {
        let left = config(
            "kubernetes_version: v1.20.2\nservices:\n  kubelet:\n    extra_args:\n      max-pods: \"120\"\n  kube-api:\n    service_node_port_range: 30000-32000\n",
        );
        let right = config(
            "kubernetes_version: v1.20.2\nservices:\n  kubelet:\n    extra_args:\n      max-pods: \"110\"\n",
        );
        let diffs = key_differences(&left, &right);
        assert_eq!(
            diffs,
            vec![
                KeyDifference {
                    key: "services.kube-api.service_node_port_range".into(),
                    left: Some("\"30000-32000\"".into()),
                    right: None,
                },
                KeyDifference {
                    key: "services.kubelet.extra_args.max-pods".into(),
                    left: Some("\"120\"".into()),
                    right: Some("\"110\"".into()),
                },
            ]
        );
        assert!(key_differences(&left, &left).is_empty());
    }

    #[test]
    fn list_items_are_indexed_and_secrets_redacted() {
        let left = config(
            "nodes:\n- address: 10.0.0.1\n  user: a\n  role: [etcd]\n  ssh_key: KEY-ONE\nprivate_registries:\n- url: r\n  password: hunter2-long\n",
        );
        let right = config(
            "nodes:\n- address: 10.0.0.1\n  user: b\n  role: [etcd]\n  ssh_key: KEY-TWO\nprivate_registries:\n- url: r\n  password: other-pass\n",
        );
        let diffs = key_differences(&left, &right);
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "nodes[0].ssh_key",
                "nodes[0].user",
                "private_registries[0].password"
            ]
        );
        let text = format!("{diffs:?}");
        for secret in ["KEY-ONE", "KEY-TWO", "hunter2-long", "other-pass"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert_eq!(diffs[0].left.as_deref(), Some(REDACTED));
        assert_eq!(diffs[1].right.as_deref(), Some("\"b\""));
    }
}
