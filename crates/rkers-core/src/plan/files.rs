//! Contents of the files RKE1 deploys to hosts (§13) and of the env values derived from them:
//! admission configuration, audit policy, cloud-config, kubelet's registry `config.json`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use super::PlanError;
use super::goyaml::to_go_yaml;
use super::util::at_least;
use crate::config::types::{CloudProvider, KubeApiService, PrivateRegistry};

/// Lower-case hex MD5.
pub fn md5_hex(text: &str) -> String {
    hex::encode(Md5::digest(text.as_bytes()))
}

/// The checksum of a configuration file that RKE1 puts in a container's environment
/// (`RKE_*_CONFIG_CHECKSUM`) so that a changed file recreates the container: RKE1's
/// `getStringChecksum`. From RKE v1.8.5 it is SHA-256 for Kubernetes v1.31.6 and later
/// (`>=1.31.6-rancher0`) and MD5 before (RKE v1.8.0 hashed every version with MD5); a real
/// RKE v1.8.14 cluster at v1.32.9 carries SHA-256 values, which an MD5 here would recreate
/// kube-apiserver for on adoption.
pub fn config_checksum(text: &str, kubernetes_version: &str) -> String {
    let sha256 = match super::util::parse_version(kubernetes_version) {
        Some(v) => (v.major, v.minor, v.patch) >= (1, 31, 6),
        // RKE1 logs the parse failure and falls back to MD5.
        None => false,
    };
    if sha256 {
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    } else {
        md5_hex(text)
    }
}

/// `/etc/kubernetes/admission.yaml` as RKE1 renders it (`getConsolidatedAdmissionConfiguration`
/// marshalled with sigs.k8s.io/yaml): the EventRateLimit plugin always, the PodSecurity plugin
/// from 1.23. Entries named like those in `admission_configuration.plugins` replace them; other
/// user plugins are dropped, as upstream does (its `copy` into an empty slice copies nothing).
pub fn admission_configuration_yaml(kube_api: &KubeApiService, k8s_version: &str) -> String {
    let user_plugins: Vec<&Value> = kube_api
        .admission_configuration
        .as_ref()
        .and_then(|c| get_ci(c, "plugins"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let user_plugin = |name: &str| {
        user_plugins
            .iter()
            .find(|p| get_ci(p, "name").and_then(Value::as_str) == Some(name))
            .map(|p| plugin_entry_from_user(p))
    };

    let event_rate_limit = user_plugin("EventRateLimit").unwrap_or_else(|| {
        let configuration = kube_api
            .event_rate_limit
            .as_ref()
            .filter(|e| e.enabled)
            .and_then(|e| e.configuration.as_ref())
            .map(normalize_event_rate_limit)
            .unwrap_or_else(default_event_rate_limit);
        plugin("EventRateLimit", configuration)
    });
    let mut plugins = vec![event_rate_limit];
    if at_least(k8s_version, 1, 23) {
        let pod_security = user_plugin("PodSecurity").unwrap_or_else(|| {
            plugin(
                "PodSecurity",
                pod_security_configuration(&kube_api.pod_security_configuration, k8s_version),
            )
        });
        plugins.push(pod_security);
    }
    to_go_yaml(&json!({
        "kind": "AdmissionConfiguration",
        "apiVersion": "apiserver.config.k8s.io/v1",
        "plugins": plugins,
    }))
}

fn plugin(name: &str, configuration: Value) -> Value {
    json!({"name": name, "path": "", "configuration": configuration})
}

/// A user plugin entry after Go's round trip through `AdmissionPluginConfiguration`: `name` and
/// `path` always present, `configuration` kept as raw JSON (`null` when absent).
fn plugin_entry_from_user(entry: &Value) -> Value {
    let text = |key| get_ci(entry, key).and_then(Value::as_str).unwrap_or("");
    json!({
        "name": text("name"),
        "path": text("path"),
        "configuration": get_ci(entry, "configuration").cloned().unwrap_or(Value::Null),
    })
}

fn default_event_rate_limit() -> Value {
    json!({
        "kind": "Configuration",
        "apiVersion": "eventratelimit.admission.k8s.io/v1alpha1",
        "limits": [{"type": "Server", "qps": 5000, "burst": 20000}],
    })
}

/// The user's EventRateLimit configuration after Go decodes it into the typed struct (unknown
/// keys dropped, keys matched case-insensitively, `cacheSize` omitted when zero).
fn normalize_event_rate_limit(config: &Value) -> Value {
    let mut out = Map::new();
    for key in ["kind", "apiVersion"] {
        if let Some(v) = get_ci(config, key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            out.insert(key.to_string(), json!(v));
        }
    }
    let limits: Vec<Value> = get_ci(config, "limits")
        .and_then(Value::as_array)
        .map(|limits| {
            limits
                .iter()
                .map(|l| {
                    let int = |key| get_ci(l, key).and_then(Value::as_i64).unwrap_or(0);
                    let mut limit = Map::new();
                    let kind = get_ci(l, "type").and_then(Value::as_str).unwrap_or("");
                    limit.insert("type".into(), json!(kind));
                    limit.insert("qps".into(), json!(int("qps")));
                    limit.insert("burst".into(), json!(int("burst")));
                    if int("cacheSize") != 0 {
                        limit.insert("cacheSize".into(), json!(int("cacheSize")));
                    }
                    Value::Object(limit)
                })
                .collect()
        })
        .unwrap_or_default();
    out.insert(
        "limits".into(),
        if limits.is_empty() && get_ci(config, "limits").is_none() {
            Value::Null
        } else {
            Value::Array(limits)
        },
    );
    Value::Object(out)
}

fn pod_security_configuration(level: &str, k8s_version: &str) -> Value {
    let api_version = if at_least(k8s_version, 1, 25) {
        "pod-security.admission.config.k8s.io/v1"
    } else {
        "pod-security.admission.config.k8s.io/v1beta1"
    };
    if level == "restricted" {
        json!({
            "kind": "PodSecurityConfiguration",
            "apiVersion": api_version,
            "defaults": {
                "enforce": "restricted", "enforce-version": "latest",
                "audit": "restricted", "audit-version": "latest",
                "warn": "restricted", "warn-version": "latest",
            },
            "exemptions": {"namespaces": ["ingress-nginx", "kube-system"]},
        })
    } else {
        // RKE1 falls back to `privileged` for any other value.
        json!({
            "kind": "PodSecurityConfiguration",
            "apiVersion": api_version,
            "defaults": {"enforce": "privileged", "enforce-version": "latest"},
            "exemptions": {},
        })
    }
}

/// `/etc/kubernetes/audit-policy.yaml` (the audit policy marshalled by sigs.k8s.io/yaml). Go's
/// typed round trip always writes `metadata.creationTimestamp: null`; we add it when missing.
pub fn audit_policy_yaml(policy: Option<&Value>) -> String {
    let mut policy = policy.cloned().unwrap_or(Value::Null);
    if let Value::Object(map) = &mut policy
        && !map.contains_key("metadata")
    {
        map.insert("metadata".into(), json!({"creationTimestamp": null}));
    }
    if policy.is_null() {
        return "null\n".to_string();
    }
    to_go_yaml(&policy)
}

/// The effective cloud provider name and `/etc/kubernetes/cloud-config` contents, `None` when no
/// cloud provider is configured. Mirrors RKE1's provider selection (a custom config wins, then
/// the typed sections); a name without a known provider (e.g. `external-aws`) gives an empty
/// file, as upstream.
pub fn cloud_config_file(cp: &CloudProvider) -> Result<Option<(String, String)>, PlanError> {
    if !cp.custom_cloud_provider.is_empty() {
        if cp.name.is_empty() {
            return Err(PlanError::CloudConfig {
                provider: "custom".into(),
                cause: "name of the cloud provider is not defined for custom provider".into(),
            });
        }
        return Ok(Some((cp.name.clone(), cp.custom_cloud_provider.clone())));
    }
    if let Some(h) = &cp.harvester_cloud_provider {
        return Ok(Some(("harvester".into(), h.cloud_config.clone())));
    }
    let unsupported = |provider: &str| PlanError::CloudConfig {
        provider: provider.into(),
        cause: "generating its INI cloud-config is not implemented yet; use custom_cloud_provider \
                with the file's text"
            .into(),
    };
    if cp.vsphere_cloud_provider.is_some() {
        return Err(unsupported("vsphere"));
    }
    if cp.openstack_cloud_provider.is_some() {
        return Err(unsupported("openstack"));
    }
    if cp.azure_cloud_provider.is_some() {
        return Err(unsupported("azure"));
    }
    if let Some(aws) = &cp.aws_cloud_provider {
        if !aws.service_override.is_empty() {
            // go-ini cannot reflect the map: RKE1 fails with "Failed to parse AWS cloud config".
            return Err(PlanError::CloudConfig {
                provider: "aws".into(),
                cause: "Failed to parse AWS cloud config (service_override is not supported)"
                    .into(),
            });
        }
        return Ok(Some(("aws".into(), aws_ini(&aws.global))));
    }
    match cp.name.as_str() {
        "" => Ok(None),
        "aws" | "harvester" => Ok(Some((cp.name.clone(), String::new()))),
        "azure" | "openstack" | "vsphere" => Err(unsupported(&cp.name)),
        other => Ok(Some((other.to_string(), String::new()))),
    }
}

/// The `[Global]` section go-ini writes for RKE1's AWS options (keys omitted when empty,
/// `=` aligned as go-ini's pretty format does, a blank line after the section).
fn aws_ini(g: &crate::config::types::GlobalAwsOpts) -> String {
    let bool_text = |b: bool| if b { "true".to_string() } else { String::new() };
    let keys = [
        ("Zone", g.zone.clone()),
        ("VPC", g.vpc.clone()),
        ("SubnetID", g.subnet_id.clone()),
        ("RouteTableID", g.routetable_id.clone()),
        ("RoleARN", g.role_arn.clone()),
        ("KubernetesClusterTag", g.kubernetes_cluster_tag.clone()),
        ("KubernetesClusterID", g.kubernetes_cluster_id.clone()),
        (
            "DisableSecurityGroupIngress",
            bool_text(g.disable_security_group_ingress),
        ),
        ("ElbSecurityGroup", g.elb_security_group.clone()),
        (
            "DisableStrictZoneCheck",
            bool_text(g.disable_strict_zone_check),
        ),
    ];
    let present: Vec<_> = keys.iter().filter(|(_, v)| !v.is_empty()).collect();
    let width = present.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::from("[Global]\n");
    for (key, value) in present {
        out.push_str(&format!("{key:<width$} = {value}\n"));
    }
    out.push('\n');
    out
}

/// The docker `config.json` RKE1 hands kubelet (`RKE_KUBELET_DOCKER_CONFIG`, before base64):
/// `auths` per registry URL with base64 `user:password`, ECR entries as `credHelpers`.
pub fn kubelet_docker_config(registries: &[PrivateRegistry]) -> String {
    let mut auths = std::collections::BTreeMap::new();
    let mut helpers = std::collections::BTreeMap::new();
    // RKE1 keys its registry map by URL: a later entry with the same URL replaces an earlier one.
    let mut by_url = std::collections::BTreeMap::new();
    for registry in registries {
        by_url.insert(registry.url.clone(), registry);
    }
    for (url, registry) in by_url {
        if registry.ecr_credential_plugin.is_some() {
            helpers.insert(url, json!("ecr-login"));
        } else {
            let auth = STANDARD.encode(format!("{}:{}", registry.user, registry.password));
            auths.insert(url, json!({"auth": auth}));
        }
    }
    let mut out = Map::new();
    if !auths.is_empty() {
        out.insert("auths".into(), json!(auths));
    }
    if !helpers.is_empty() {
        out.insert("credHelpers".into(), json!(helpers));
    }
    serde_json::to_string(&Value::Object(out)).unwrap_or_else(|_| "{}".into())
}

/// Case-insensitive key lookup, as Go's JSON decoding into structs matches field names.
fn get_ci<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    let map = value.as_object()?;
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_of_empty_text() {
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
    }

    #[test]
    fn config_checksums_are_sha256_from_v1_31_6_as_rke_v1_8_5_and_later_hash_them() {
        let md5 = "d41d8cd98f00b204e9800998ecf8427e";
        let sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(config_checksum("", "v1.31.5-rancher1-1"), md5);
        assert_eq!(config_checksum("", "v1.20.15-rancher2-1"), md5);
        assert_eq!(config_checksum("", "v1.31.6-rancher1-1"), sha);
        assert_eq!(config_checksum("", "v1.32.9-rancher1-1"), sha);
        assert_eq!(config_checksum("", "v1.37.2-rkers1"), sha);
        assert_eq!(config_checksum("", "not a version"), md5);
    }

    #[test]
    fn default_admission_configuration_for_1_31() {
        let kube_api = KubeApiService {
            pod_security_configuration: "privileged".into(),
            ..Default::default()
        };
        assert_eq!(
            admission_configuration_yaml(&kube_api, "v1.31.1-rancher1-1"),
            "apiVersion: apiserver.config.k8s.io/v1\n\
             kind: AdmissionConfiguration\n\
             plugins:\n\
             - configuration:\n    \
                 apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n    \
                 kind: Configuration\n    \
                 limits:\n    \
                 - burst: 20000\n      \
                   qps: 5000\n      \
                   type: Server\n  \
               name: EventRateLimit\n  \
               path: \"\"\n\
             - configuration:\n    \
                 apiVersion: pod-security.admission.config.k8s.io/v1\n    \
                 defaults:\n      \
                   enforce: privileged\n      \
                   enforce-version: latest\n    \
                 exemptions: {}\n    \
                 kind: PodSecurityConfiguration\n  \
               name: PodSecurity\n  \
               path: \"\"\n"
        );
    }

    #[test]
    fn admission_configuration_before_1_23_has_no_pod_security() {
        let yaml = admission_configuration_yaml(&KubeApiService::default(), "v1.20.15-rancher2-2");
        assert!(yaml.contains("EventRateLimit"));
        assert!(!yaml.contains("PodSecurity"));
    }

    #[test]
    fn kubelet_docker_config_encodes_user_and_password() {
        let registry = PrivateRegistry {
            url: "10.77.0.1:5000".into(),
            user: "rkers".into(),
            password: "s3cret".into(),
            ..Default::default()
        };
        assert_eq!(
            kubelet_docker_config(&[registry]),
            format!(
                "{{\"auths\":{{\"10.77.0.1:5000\":{{\"auth\":\"{}\"}}}}}}",
                STANDARD.encode("rkers:s3cret")
            )
        );
    }
}
