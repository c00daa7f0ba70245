//! Rendering: cluster config + KDM catalog -> the manifests RKE1 would deploy, per addon (§19.3).
//! Pure: no I/O except what the caller passes in (user addon include texts).

use super::{AddonError, AddonPlan, resource};
use crate::config::{RkeConfig, Toleration, UpdateStrategy};
use crate::metadata::{Catalog, addon as kdm};
use minijinja::{Environment, Value};
use serde_json::{Map, json};
use std::collections::BTreeMap;

/// The ported KDM templates (scripts/port-addon-templates), by KDM template key.
static TEMPLATES: &[(&str, &str)] = &[
    (
        "calico-v3.17.1",
        include_str!("../../../../templates/calico-v3.17.1.yaml.j2"),
    ),
    (
        "calico-v3.19.0",
        include_str!("../../../../templates/calico-v3.19.0.yaml.j2"),
    ),
    (
        "calico-v3.21.1",
        include_str!("../../../../templates/calico-v3.21.1.yaml.j2"),
    ),
    (
        "calico-v3.22.5-rancher2",
        include_str!("../../../../templates/calico-v3.22.5-rancher2.yaml.j2"),
    ),
    (
        "calico-v3.22.5",
        include_str!("../../../../templates/calico-v3.22.5.yaml.j2"),
    ),
    (
        "calico-v3.24.1",
        include_str!("../../../../templates/calico-v3.24.1.yaml.j2"),
    ),
    (
        "calico-v3.25.0",
        include_str!("../../../../templates/calico-v3.25.0.yaml.j2"),
    ),
    (
        "calico-v3.26.1-rancher2",
        include_str!("../../../../templates/calico-v3.26.1-rancher2.yaml.j2"),
    ),
    (
        "calico-v3.26.1",
        include_str!("../../../../templates/calico-v3.26.1.yaml.j2"),
    ),
    (
        "calico-v3.27.0-rancher2",
        include_str!("../../../../templates/calico-v3.27.0-rancher2.yaml.j2"),
    ),
    (
        "calico-v3.27.0",
        include_str!("../../../../templates/calico-v3.27.0.yaml.j2"),
    ),
    (
        "calico-v3.27.4",
        include_str!("../../../../templates/calico-v3.27.4.yaml.j2"),
    ),
    (
        "calico-v3.28.0",
        include_str!("../../../../templates/calico-v3.28.0.yaml.j2"),
    ),
    (
        "calico-v3.28.1",
        include_str!("../../../../templates/calico-v3.28.1.yaml.j2"),
    ),
    (
        "calico-v3.29.0",
        include_str!("../../../../templates/calico-v3.29.0.yaml.j2"),
    ),
    (
        "calico-v3.30.2",
        include_str!("../../../../templates/calico-v3.30.2.yaml.j2"),
    ),
    (
        "canal-v3.17.1",
        include_str!("../../../../templates/canal-v3.17.1.yaml.j2"),
    ),
    (
        "canal-v3.19.0",
        include_str!("../../../../templates/canal-v3.19.0.yaml.j2"),
    ),
    (
        "canal-v3.21.1",
        include_str!("../../../../templates/canal-v3.21.1.yaml.j2"),
    ),
    (
        "canal-v3.22.5-rancher2",
        include_str!("../../../../templates/canal-v3.22.5-rancher2.yaml.j2"),
    ),
    (
        "canal-v3.22.5",
        include_str!("../../../../templates/canal-v3.22.5.yaml.j2"),
    ),
    (
        "canal-v3.24.1",
        include_str!("../../../../templates/canal-v3.24.1.yaml.j2"),
    ),
    (
        "canal-v3.25.0",
        include_str!("../../../../templates/canal-v3.25.0.yaml.j2"),
    ),
    (
        "canal-v3.26.1-rancher2",
        include_str!("../../../../templates/canal-v3.26.1-rancher2.yaml.j2"),
    ),
    (
        "canal-v3.26.1",
        include_str!("../../../../templates/canal-v3.26.1.yaml.j2"),
    ),
    (
        "canal-v3.27.0-rancher2",
        include_str!("../../../../templates/canal-v3.27.0-rancher2.yaml.j2"),
    ),
    (
        "canal-v3.27.0",
        include_str!("../../../../templates/canal-v3.27.0.yaml.j2"),
    ),
    (
        "canal-v3.27.4",
        include_str!("../../../../templates/canal-v3.27.4.yaml.j2"),
    ),
    (
        "canal-v3.28.0",
        include_str!("../../../../templates/canal-v3.28.0.yaml.j2"),
    ),
    (
        "canal-v3.28.1",
        include_str!("../../../../templates/canal-v3.28.1.yaml.j2"),
    ),
    (
        "canal-v3.29.0",
        include_str!("../../../../templates/canal-v3.29.0.yaml.j2"),
    ),
    (
        "canal-v3.30.2",
        include_str!("../../../../templates/canal-v3.30.2.yaml.j2"),
    ),
    (
        "coredns-v1.17",
        include_str!("../../../../templates/coredns-v1.17.yaml.j2"),
    ),
    (
        "coredns-v1.8.3-rancher2",
        include_str!("../../../../templates/coredns-v1.8.3-rancher2.yaml.j2"),
    ),
    (
        "coredns-v1.8.3-rancher3",
        include_str!("../../../../templates/coredns-v1.8.3-rancher3.yaml.j2"),
    ),
    (
        "coredns-v1.8.3",
        include_str!("../../../../templates/coredns-v1.8.3.yaml.j2"),
    ),
    (
        "flannel-v0.14.0-rancher2",
        include_str!("../../../../templates/flannel-v0.14.0-rancher2.yaml.j2"),
    ),
    (
        "flannel-v0.14.0",
        include_str!("../../../../templates/flannel-v0.14.0.yaml.j2"),
    ),
    (
        "flannel-v0.19.2",
        include_str!("../../../../templates/flannel-v0.19.2.yaml.j2"),
    ),
    (
        "flannel-v0.21.4",
        include_str!("../../../../templates/flannel-v0.21.4.yaml.j2"),
    ),
    (
        "flannel-v0.24.2",
        include_str!("../../../../templates/flannel-v0.24.2.yaml.j2"),
    ),
    (
        "flannel-v0.25.1",
        include_str!("../../../../templates/flannel-v0.25.1.yaml.j2"),
    ),
    (
        "flannel-v0.26.4",
        include_str!("../../../../templates/flannel-v0.26.4.yaml.j2"),
    ),
    (
        "flannel-v0.27.3",
        include_str!("../../../../templates/flannel-v0.27.3.yaml.j2"),
    ),
    (
        "flannel-v0.28.1",
        include_str!("../../../../templates/flannel-v0.28.1.yaml.j2"),
    ),
    (
        "flannel-v1.16",
        include_str!("../../../../templates/flannel-v1.16.yaml.j2"),
    ),
    (
        "kubedns-v1.16",
        include_str!("../../../../templates/kubedns-v1.16.yaml.j2"),
    ),
    (
        "metricsserver-v0.5.0",
        include_str!("../../../../templates/metricsserver-v0.5.0.yaml.j2"),
    ),
    (
        "metricsserver-v0.5.2",
        include_str!("../../../../templates/metricsserver-v0.5.2.yaml.j2"),
    ),
    (
        "metricsserver-v0.6.1",
        include_str!("../../../../templates/metricsserver-v0.6.1.yaml.j2"),
    ),
    (
        "metricsserver-v0.7.0",
        include_str!("../../../../templates/metricsserver-v0.7.0.yaml.j2"),
    ),
    (
        "metricsserver-v1.20",
        include_str!("../../../../templates/metricsserver-v1.20.yaml.j2"),
    ),
    (
        "nginxingress-v0.48.1",
        include_str!("../../../../templates/nginxingress-v0.48.1.yaml.j2"),
    ),
    (
        "nginxingress-v0.49.3",
        include_str!("../../../../templates/nginxingress-v0.49.3.yaml.j2"),
    ),
    (
        "nginxingress-v1.1.0-rancher2",
        include_str!("../../../../templates/nginxingress-v1.1.0-rancher2.yaml.j2"),
    ),
    (
        "nginxingress-v1.1.0-rancher3",
        include_str!("../../../../templates/nginxingress-v1.1.0-rancher3.yaml.j2"),
    ),
    (
        "nginxingress-v1.1.0-rancher4",
        include_str!("../../../../templates/nginxingress-v1.1.0-rancher4.yaml.j2"),
    ),
    (
        "nginxingress-v1.1.0",
        include_str!("../../../../templates/nginxingress-v1.1.0.yaml.j2"),
    ),
    (
        "nginxingress-v1.10.1-rancher1",
        include_str!("../../../../templates/nginxingress-v1.10.1-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.11.2-rancher1",
        include_str!("../../../../templates/nginxingress-v1.11.2-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.11.2-rancher2",
        include_str!("../../../../templates/nginxingress-v1.11.2-rancher2.yaml.j2"),
    ),
    (
        "nginxingress-v1.11.3-rancher1",
        include_str!("../../../../templates/nginxingress-v1.11.3-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.12.0-rancher1",
        include_str!("../../../../templates/nginxingress-v1.12.0-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.15.12",
        include_str!("../../../../templates/nginxingress-v1.15.12.yaml.j2"),
    ),
    (
        "nginxingress-v1.2.0-rancher1",
        include_str!("../../../../templates/nginxingress-v1.2.0-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.2.0-rancher2",
        include_str!("../../../../templates/nginxingress-v1.2.0-rancher2.yaml.j2"),
    ),
    (
        "nginxingress-v1.5.1-rancher2",
        include_str!("../../../../templates/nginxingress-v1.5.1-rancher2.yaml.j2"),
    ),
    (
        "nginxingress-v1.7.0-rancher1",
        include_str!("../../../../templates/nginxingress-v1.7.0-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.8.1-rancher1",
        include_str!("../../../../templates/nginxingress-v1.8.1-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.9.4-rancher1",
        include_str!("../../../../templates/nginxingress-v1.9.4-rancher1.yaml.j2"),
    ),
    (
        "nginxingress-v1.9.6-rancher1",
        include_str!("../../../../templates/nginxingress-v1.9.6-rancher1.yaml.j2"),
    ),
    (
        "nodelocal-v1.15",
        include_str!("../../../../templates/nodelocal-v1.15.yaml.j2"),
    ),
    (
        "nodelocal-v1.21",
        include_str!("../../../../templates/nodelocal-v1.21.yaml.j2"),
    ),
    (
        "weave-v1.20",
        include_str!("../../../../templates/weave-v1.20.yaml.j2"),
    ),
    (
        "weave-v1.22",
        include_str!("../../../../templates/weave-v1.22.yaml.j2"),
    ),
];

/// Paths RKE1 passes to the CNI templates for the kube-node identity (§19.3).
const KUBE_NODE_KUBECONFIG: &str = "/etc/kubernetes/ssl/kubecfg-kube-node.yaml";
const KUBE_NODE_CERT: &str = "/etc/kubernetes/ssl/kube-node.pem";
const KUBE_NODE_KEY: &str = "/etc/kubernetes/ssl/kube-node-key.pem";
const KUBE_CA_CERT: &str = "/etc/kubernetes/ssl/kube-ca.pem";
const CANAL_API_ROOT: &str = "https://127.0.0.1:6443";

/// The ported template of a KDM template key, if rkers bundles it.
fn template_source(key: &str) -> Option<&'static str> {
    TEMPLATES
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, body)| *body)
}

/// A minijinja environment with the functions the ported templates call. Templates are not
/// added to it: [`render_template`] compiles only the one it renders, since compiling all of
/// them (8.5 MiB of text) on every plan paged the whole text into memory (issue 31: peak RSS).
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    let mut syntax = minijinja::syntax::SyntaxConfig::builder();
    syntax.keep_trailing_newline(true);
    env.set_syntax(syntax.build().expect("default delimiters"));
    env.set_formatter(go_formatter);
    env.add_function("toYaml", |v: Value| -> Result<String, minijinja::Error> {
        let json: serde_json::Value = serde_json::to_value(&v).map_err(|e| {
            minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
        })?;
        Ok(to_yaml(&json))
    });
    env.add_function("GetKubednsStubDomains", |v: Value| -> String {
        // Go's json.Marshal: map keys sorted, compact.
        let json: serde_json::Value = serde_json::to_value(&v).unwrap_or_default();
        serde_json::to_string(&sorted(json)).unwrap_or_default()
    });
    env
}

/// Prints values the way Go's text/template does where it differs from minijinja: a list of
/// strings prints as `[a b]` (KDM's CoreDNS templates print `ReverseCIDRs` that way).
fn go_formatter(
    out: &mut minijinja::Output,
    state: &mut minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    if value.kind() == minijinja::value::ValueKind::Seq {
        let items: Vec<String> = value
            .try_iter()?
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        return out
            .write_str(&format!("[{}]", items.join(" ")))
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string()));
    }
    minijinja::escape_formatter(out, state, value)
}

fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let b: BTreeMap<String, serde_json::Value> =
                m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            serde_json::Value::Object(b.into_iter().collect())
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

/// RKE1's `toYaml`: the value as JSON, re-emitted as block YAML with sorted keys (yaml.v2
/// style: sequences inside mappings are not indented), without the final newline.
pub fn to_yaml(v: &serde_json::Value) -> String {
    let mut out = String::new();
    emit_yaml(&mut out, &sorted(v.clone()), 0, false);
    out.trim_end_matches('\n').to_string()
}

fn emit_yaml(out: &mut String, v: &serde_json::Value, indent: usize, in_seq: bool) {
    use serde_json::Value as J;
    let pad = " ".repeat(indent);
    match v {
        J::Object(m) if m.is_empty() => out.push_str("{}\n"),
        J::Array(a) if a.is_empty() => out.push_str("[]\n"),
        J::Object(m) => {
            for (i, (k, c)) in m.iter().enumerate() {
                if i > 0 || !in_seq {
                    out.push_str(&pad);
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                match c {
                    J::Object(cm) if !cm.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent + 2, false);
                    }
                    J::Array(ca) if !ca.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent, false);
                    }
                    _ => {
                        out.push(' ');
                        emit_yaml(out, c, indent, false);
                    }
                }
            }
        }
        J::Array(a) => {
            for c in a {
                out.push_str(&pad);
                out.push_str("- ");
                match c {
                    J::Object(cm) if !cm.is_empty() => emit_yaml(out, c, indent + 2, true),
                    J::Array(ca) if !ca.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent + 2, false);
                    }
                    _ => emit_yaml(out, c, indent, false),
                }
            }
        }
        scalar => {
            out.push_str(&serde_json::to_string(scalar).unwrap_or_default());
            out.push('\n');
        }
    }
}

/// Whether rkers can render template `key`: ported, or KDM's own body embedded.
fn bundled(key: &str) -> bool {
    template_source(key).is_some() || super::gotemplate::embedded_body(key).is_some()
}

/// Renders template `key` with `vars`: the minijinja port when there is one, else KDM's Go
/// template body as RKE1 renders it (the templates RKE v1.8.14's data selects that were
/// never ported: canal-v3.30.2-rancher2, nginxingress-v1.14.x).
pub fn render_template(
    env: &Environment<'static>,
    key: &str,
    vars: &serde_json::Value,
) -> Result<String, AddonError> {
    let Some(source) = template_source(key) else {
        let body = super::gotemplate::embedded_body(key)
            .ok_or_else(|| AddonError::NoTemplate(key.to_string()))?;
        return super::gotemplate::render(key, &body, vars);
    };
    let template = env
        .template_from_named_str(key, source)
        .map_err(|e| AddonError::Render {
            template: key.to_string(),
            message: format!("{e:#}"),
        })?;
    template
        .render(minijinja::value::Serde(vars))
        .map_err(|e| AddonError::Render {
            template: key.to_string(),
            message: format!("{e:#}"),
        })
}

fn template_for(cfg: &RkeConfig, catalog: &Catalog, addon: &str) -> Result<String, AddonError> {
    catalog
        .addon_template(addon, &cfg.kubernetes_version)
        .ok_or_else(|| AddonError::NoTemplateForVersion {
            addon: addon.to_string(),
            version: cfg.kubernetes_version.clone(),
        })
}

/// `UpdateStrategy` as RKE1 hands it to the templates: a Kubernetes `{type, rollingUpdate}`.
fn strategy(s: Option<&UpdateStrategy>) -> serde_json::Value {
    let mut m = Map::new();
    if let Some(s) = s {
        if !s.strategy.is_empty() {
            m.insert("type".into(), json!(s.strategy));
        }
        if let Some(r) = &s.rolling_update {
            let mut ru = Map::new();
            if let Some(v) = &r.max_unavailable {
                ru.insert("maxUnavailable".into(), v.clone());
            }
            if let Some(v) = &r.max_surge {
                ru.insert("maxSurge".into(), v.clone());
            }
            m.insert("rollingUpdate".into(), serde_json::Value::Object(ru));
        }
    }
    serde_json::Value::Object(m)
}

fn tolerations(t: &[Toleration]) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or_else(|_| json!([]))
}

fn opt<'a>(m: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    m.get(key).map(String::as_str).unwrap_or("")
}

fn int_option(m: &BTreeMap<String, String>, key: &str, default: i64) -> Result<i64, AddonError> {
    match m.get(key).map(String::as_str) {
        None | Some("") => Ok(default),
        Some(v) => v.parse().map_err(|_| AddonError::BadOption {
            key: key.to_string(),
            value: v.to_string(),
        }),
    }
}

/// `vX.Y` of a version or image tag, as RKE1's `GetTagMajorVersion`.
fn major_minor(tag: &str) -> String {
    let parts: Vec<&str> = tag.split('.').collect();
    if parts.len() < 2 {
        return String::new();
    }
    format!("{}.{}", parts[0], parts[1])
}

fn rbac(cfg: &RkeConfig) -> &str {
    &cfg.authorization.mode
}

/// Template variables of the network plugin (§19.3), or `None` for `none`.
pub fn network_vars(
    cfg: &RkeConfig,
    catalog: &Catalog,
) -> Result<Option<(String, serde_json::Value)>, AddonError> {
    let n = &cfg.network;
    let img = &cfg.system_images;
    let cluster_cidr = &cfg.services.kube_controller.cluster_cidr;
    let o = &n.options;
    let vars = match n.plugin.as_str() {
        "none" | "" => return Ok(None),
        "flannel" => json!({
            "ClusterCIDR": cluster_cidr, "Image": img.flannel, "CNIImage": img.flannel_cni,
            "FlannelInterface": opt(o, "flannel_iface"),
            "FlannelBackend": {"Type": opt(o, "flannel_backend_type"),
                "VNI": int_option(o, "flannel_backend_vni", 1)?,
                "Port": int_option(o, "flannel_backend_port", 8472)?},
            "RBACConfig": rbac(cfg), "ClusterVersion": major_minor(&cfg.kubernetes_version),
            "NodeSelector": n.node_selector, "UpdateStrategy": strategy(n.update_strategy.as_ref()),
            "KubeFlannelPriorityClassName": opt(o, "kube_flannel_priority_class_name"),
        }),
        "calico" => json!({
            "KubeCfg": KUBE_NODE_KUBECONFIG, "ClusterCIDR": cluster_cidr,
            "CNIImage": img.calico_cni, "NodeImage": img.calico_node, "Calicoctl": img.calico_ctl,
            "ControllersImage": img.calico_controllers, "CloudProvider": opt(o, "calico_cloud_provider"),
            "FlexVolImg": img.calico_flexvol, "RBACConfig": rbac(cfg), "NodeSelector": n.node_selector,
            "MTU": n.mtu, "UpdateStrategy": strategy(n.update_strategy.as_ref()),
            "Tolerations": tolerations(&n.tolerations),
            "FlexVolPluginDir": opt(o, "calico_flex_volume_plugin_dir"),
            "CalicoNodePriorityClassName": opt(o, "calico_node_priority_class_name"),
            "CalicoKubeControllersPriorityClassName": opt(o, "calico_kube_controllers_priority_class_name"),
        }),
        "canal" => json!({
            "ClientCertPath": KUBE_NODE_CERT, "APIRoot": CANAL_API_ROOT, "ClientKeyPath": KUBE_NODE_KEY,
            "ClientCAPath": KUBE_CA_CERT, "KubeCfg": KUBE_NODE_KUBECONFIG, "ClusterCIDR": cluster_cidr,
            "NodeImage": img.canal_node, "CNIImage": img.canal_cni, "ControllersImage": img.canal_controllers,
            "CanalFlannelImg": img.canal_flannel, "RBACConfig": rbac(cfg),
            "CanalInterface": opt(o, "canal_iface"), "FlexVolImg": img.canal_flexvol,
            "FlannelBackend": {"Type": opt(o, "canal_flannel_backend_type"),
                "VNI": int_option(o, "canal_flannel_backend_vni", 1)?,
                "Port": int_option(o, "canal_flannel_backend_port", 8472)?},
            "NodeSelector": n.node_selector, "MTU": n.mtu,
            "UpdateStrategy": strategy(n.update_strategy.as_ref()),
            "Tolerations": tolerations(&n.tolerations),
            "FlexVolPluginDir": opt(o, "canal_flex_volume_plugin_dir"),
            "CanalPriorityClassName": opt(o, "canal_priority_class_name"),
            "CalicoKubeControllersPriorityClassName": opt(o, "calico_kube_controllers_priority_class_name"),
        }),
        "weave" => json!({
            "ClusterCIDR": cluster_cidr, "WeavePassword": opt(o, "WeavePassword"),
            "Image": img.weave_node, "CNIImage": img.weave_cni, "WeaveLoopbackImage": img.alpine,
            "RBACConfig": rbac(cfg), "NodeSelector": n.node_selector, "MTU": n.mtu,
            "UpdateStrategy": strategy(n.update_strategy.as_ref()),
            "WeaveNetPriorityClassName": opt(o, "weave_net_priority_class_name"),
        }),
        other => return Err(AddonError::UnsupportedPlugin(other.to_string())),
    };
    let key = template_for(cfg, catalog, &n.plugin)?;
    Ok(Some((key, vars)))
}

fn linear_params(cfg: &RkeConfig) -> String {
    cfg.dns
        .as_ref()
        .and_then(|d| d.linear_autoscaler_params.as_ref())
        .and_then(|p| serde_json::to_string(p).ok())
        .unwrap_or_else(|| "null".into())
}

/// Template variables of the DNS provider: (KDM addon, template key, vars), `None` for `none`.
pub fn dns_vars(
    cfg: &RkeConfig,
    catalog: &Catalog,
) -> Result<Option<(&'static str, String, serde_json::Value)>, AddonError> {
    let Some(d) = cfg.dns.as_ref() else {
        return Ok(None);
    };
    let img = &cfg.system_images;
    let kubelet = &cfg.services.kubelet;
    let mut vars = json!({
        "RBACConfig": rbac(cfg), "ClusterDomain": kubelet.cluster_domain,
        "ClusterDNSServer": kubelet.cluster_dns_server, "ReverseCIDRs": d.reversecidrs,
        "UpstreamNameservers": d.upstreamnameservers, "NodeSelector": d.node_selector,
        "UpdateStrategy": strategy(d.update_strategy.as_ref()),
        "LinearAutoscalerParams": linear_params(cfg), "Tolerations": tolerations(&d.tolerations),
    });
    let m = vars.as_object_mut().expect("object");
    let addon = match d.provider.as_str() {
        "coredns" => {
            m.insert("CoreDNSImage".into(), json!(img.coredns));
            m.insert(
                "CoreDNSAutoScalerImage".into(),
                json!(img.coredns_autoscaler),
            );
            m.insert(
                "CoreDNSPriorityClassName".into(),
                json!(opt(&d.options, "coredns_priority_class_name")),
            );
            m.insert(
                "CoreDNSAutoscalerPriorityClassName".into(),
                json!(opt(&d.options, "coredns_autoscaler_priority_class_name")),
            );
            kdm::COREDNS
        }
        "kube-dns" => {
            m.insert("KubeDNSImage".into(), json!(img.kubedns));
            m.insert("DNSMasqImage".into(), json!(img.dnsmasq));
            m.insert("KubeDNSSidecarImage".into(), json!(img.kubedns_sidecar));
            m.insert(
                "KubeDNSAutoScalerImage".into(),
                json!(img.kubedns_autoscaler),
            );
            m.insert("StubDomains".into(), json!(d.stubdomains));
            m.insert(
                "KubeDNSPriorityClassName".into(),
                json!(opt(&d.options, "kube_dns_priority_class_name")),
            );
            m.insert(
                "KubeDNSAutoscalerPriorityClassName".into(),
                json!(opt(&d.options, "kube_dns_autoscaler_priority_class_name")),
            );
            kdm::KUBEDNS
        }
        _ => return Ok(None),
    };
    let key = template_for(cfg, catalog, addon)?;
    Ok(Some((addon, key, vars)))
}

/// Template variables of NodeLocal DNS, `None` unless `dns.nodelocal.ip_address` is set.
pub fn nodelocal_vars(
    cfg: &RkeConfig,
    catalog: &Catalog,
) -> Result<Option<(String, serde_json::Value)>, AddonError> {
    let Some(d) = cfg.dns.as_ref().filter(|d| d.provider != "none") else {
        return Ok(None);
    };
    let Some(nl) = d.nodelocal.as_ref().filter(|n| !n.ip_address.is_empty()) else {
        return Ok(None);
    };
    let kubelet = &cfg.services.kubelet;
    let vars = json!({
        "RBACConfig": rbac(cfg), "NodelocalImage": cfg.system_images.nodelocal,
        "ClusterDomain": kubelet.cluster_domain, "ClusterDNSServer": kubelet.cluster_dns_server,
        "IPAddress": nl.ip_address, "NodeSelector": nl.node_selector,
        "UpdateStrategy": strategy(nl.update_strategy.as_ref()),
        "NodeLocalDNSPriorityClassName": nl.node_local_dns_priority_class_name,
    });
    Ok(Some((template_for(cfg, catalog, kdm::NODELOCAL)?, vars)))
}

/// Template variables of metrics-server, `None` for provider `none`.
pub fn metrics_vars(
    cfg: &RkeConfig,
    catalog: &Catalog,
) -> Result<Option<(String, serde_json::Value)>, AddonError> {
    let m = &cfg.monitoring;
    if m.provider == "none" {
        return Ok(None);
    }
    let image = &cfg.system_images.metrics_server;
    let tag = image.rsplit(':').next().unwrap_or("");
    let vars = json!({
        "RBACConfig": rbac(cfg), "Options": m.options, "NodeSelector": m.node_selector,
        "MetricsServerImage": image, "Version": major_minor(tag),
        "UpdateStrategy": strategy(m.update_strategy.as_ref()), "Replicas": m.replicas,
        "Tolerations": tolerations(&m.tolerations),
        "MetricsServerPriorityClassName": m.metrics_server_priority_class_name,
    });
    Ok(Some((
        template_for(cfg, catalog, kdm::METRICS_SERVER)?,
        vars,
    )))
}

/// The ingress-nginx controller version in an image tag (`nginx-1.11.2-rancher1` -> `1.11.2`).
fn ingress_version(image: &str) -> Option<String> {
    let (_, tag) = image.rsplit_once(':')?;
    let parts: Vec<&str> = tag.split('-').collect();
    if parts.len() == 2 {
        Some(parts[0].to_string())
    } else {
        parts.get(1).map(|s| s.to_string())
    }
}

/// Template variables of ingress-nginx, `None` for provider `none`.
pub fn ingress_vars(
    cfg: &RkeConfig,
    catalog: &Catalog,
) -> Result<Option<(String, serde_json::Value)>, AddonError> {
    let i = &cfg.ingress;
    if i.provider == "none" {
        return Ok(None);
    }
    let img = &cfg.system_images;
    let mut extra_args = i.extra_args.clone();
    let mut alpine = String::new();
    if let Some(version) = ingress_version(&img.ingress) {
        // RKE1 compares these versions as strings; so does rkers, to pick the same branch.
        if version.as_str() < "0.16.0" {
            alpine = img.alpine.clone();
        }
        if version.as_str() >= "1.1.0" {
            extra_args
                .entry("watch-ingress-without-class".into())
                .or_insert_with(|| "true".into());
        }
    }
    let vars = json!({
        "RBACConfig": rbac(cfg), "Options": i.options, "NodeSelector": i.node_selector,
        "ExtraArgs": extra_args, "ExtraEnvs": i.extra_envs, "ExtraVolumes": i.extra_volumes,
        "ExtraVolumeMounts": i.extra_volume_mounts, "DNSPolicy": i.dns_policy, "AlpineImage": alpine,
        "IngressImage": img.ingress, "IngressBackend": img.ingress_backend,
        "IngressWebhook": img.ingress_webhook, "HTTPPort": i.http_port, "HTTPSPort": i.https_port,
        "NetworkMode": i.network_mode, "DefaultBackend": i.default_backend.unwrap_or(false),
        "UpdateStrategy": strategy(i.update_strategy.as_ref()),
        "Tolerations": tolerations(&i.tolerations),
        "NginxIngressControllerPriorityClassName": i.nginx_ingress_controller_priority_class_name,
        "DefaultHTTPBackendPriorityClassName": i.default_http_backend_priority_class_name,
        "DefaultIngressClass": i.default_ingress_class.unwrap_or(true),
    });
    Ok(Some((
        template_for(cfg, catalog, kdm::NGINX_INGRESS)?,
        vars,
    )))
}

/// RKE1's normalisation of user addon documents: each starts with `---` and ends with a newline.
pub fn normalise_user_doc(doc: &str) -> String {
    let mut out = String::new();
    if !doc.trim_start().starts_with("---") {
        out.push_str("---\n");
    }
    out.push_str(doc);
    if !doc.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A system addon's plan: its template rendered with its variables, marked unbundled when
/// rkers lacks the template, or turned off (`None`).
fn system_plan(
    env: &Environment<'static>,
    resource: &'static str,
    selected: Option<(String, serde_json::Value)>,
) -> Result<AddonPlan, AddonError> {
    let mut plan = AddonPlan {
        resource,
        template: None,
        manifest: None,
        critical: true,
        unbundled: false,
    };
    if let Some((key, vars)) = selected {
        if bundled(&key) {
            plan.manifest = Some(render_template(env, &key, &vars)?);
        } else {
            plan.unbundled = true;
        }
        plan.template = Some(key);
    }
    Ok(plan)
}

/// Every addon in RKE1's order (§19.1), each rendered, marked for removal, or marked
/// unbundled (resolved by [`keep_deployed`] once the cluster's ConfigMaps are read).
/// `includes` are the texts of `addons_include`, already read, in config order.
pub fn plan_addons(
    cfg: &RkeConfig,
    catalog: &Catalog,
    includes: &[String],
) -> Result<Vec<AddonPlan>, AddonError> {
    let env = environment();
    let mut plans = vec![system_plan(
        &env,
        resource::NETWORK,
        network_vars(cfg, catalog)?,
    )?];

    let dns = dns_vars(cfg, catalog)?;
    let provider = dns.as_ref().map(|(a, _, _)| *a);
    let dns_plan = system_plan(&env, resource::COREDNS, dns.map(|(_, k, v)| (k, v)))?;
    // The provider not selected goes first, as in RKE1, so that a switch removes the old one
    // even when the new one then fails. RKE1 removes nothing for `none` (§33.14); rkers removes
    // both, since `none` asks for no DNS addon.
    let mut dns_addons = [
        (kdm::KUBEDNS, resource::KUBE_DNS),
        (kdm::COREDNS, resource::COREDNS),
    ];
    dns_addons.sort_by_key(|(addon, _)| provider == Some(*addon));
    for (addon, res) in dns_addons {
        let selected = provider == Some(addon);
        plans.push(if selected {
            AddonPlan {
                resource: res,
                ..dns_plan.clone()
            }
        } else {
            system_plan(&env, res, None)?
        });
    }

    plans.push(system_plan(
        &env,
        resource::NODELOCAL,
        nodelocal_vars(cfg, catalog)?,
    )?);
    plans.push(system_plan(
        &env,
        resource::METRICS,
        metrics_vars(cfg, catalog)?,
    )?);
    plans.push(system_plan(
        &env,
        resource::INGRESS,
        ingress_vars(cfg, catalog)?,
    )?);

    // User addons only warn on failure in RKE1 (§19.1); rkers keeps that.
    plans.push(AddonPlan {
        resource: resource::USER,
        critical: false,
        manifest: (!cfg.addons.trim().is_empty()).then(|| cfg.addons.clone()),
        template: None,
        unbundled: false,
    });
    let included: String = includes.iter().map(|d| normalise_user_doc(d)).collect();
    plans.push(AddonPlan {
        resource: resource::USER_INCLUDES,
        critical: false,
        manifest: (!included.trim().is_empty()).then_some(included),
        template: None,
        unbundled: false,
    });
    Ok(plans)
}

/// The manifests RKE1's ConfigMaps hold, as far as they could be read: by resource name, or
/// why none could be read (a new cluster, an API server that did not answer).
pub type DeployedManifests<'a> = Result<&'a BTreeMap<String, String>, &'a ManifestsUnread>;

/// Why the manifests RKE1's ConfigMaps hold could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsUnread {
    /// The cluster is new: nothing was deployed yet.
    #[error("new cluster")]
    NewCluster,
    /// The kubeconfig rkers keeps could not be read (its path and why).
    #[error("{path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// No client of the API server could be made from it.
    #[error(transparent)]
    Api(#[from] crate::kubeapi::KubeApiError),
    /// A ConfigMap could not be read (it names the resource and the server's answer).
    #[error(transparent)]
    ConfigMap(#[from] AddonError),
}

/// The addon an unbundled plan is for, as its KDM template key names it (`canal-v3.30.2` ->
/// `canal`).
fn addon_name(plan: &AddonPlan) -> &str {
    let template = plan.template.as_deref().unwrap_or(plan.resource);
    template.split_once("-v").map_or(template, |(name, _)| name)
}

/// How to get past an addon whose template is not bundled and which the cluster does not run.
fn not_bundled_remedy(resource: &str) -> &'static str {
    if resource == resource::NETWORK {
        "choose another network plugin (network.plugin) or Kubernetes version \
         (kubernetes_version) in cluster.yml, or deploy the plugin's manifest yourself as a \
         user addon (addons or addons_include) with network.plugin: none"
    } else {
        "choose another provider or Kubernetes version (kubernetes_version) in cluster.yml, or \
         deploy the addon's manifest yourself as a user addon (addons or addons_include) with \
         its provider set to none"
    }
}

/// Resolves every unbundled plan to the manifest the cluster already runs (RKE1's ConfigMap
/// for its resource), so that it changes and prunes nothing, with one line per such addon
/// saying so; or, when the cluster runs none, the error that names the addon, the template
/// and the remedies. Bundled plans pass through unchanged.
pub fn keep_deployed(
    plans: Vec<AddonPlan>,
    deployed: DeployedManifests,
) -> Result<(Vec<AddonPlan>, Vec<String>), AddonError> {
    let mut notes = Vec::new();
    let mut out = Vec::with_capacity(plans.len());
    for mut plan in plans {
        if plan.unbundled && plan.manifest.is_none() {
            let addon = addon_name(&plan).to_string();
            let template = plan.template.clone().unwrap_or_default();
            let configmap = format!(
                "ConfigMap {}/{}",
                super::apply::ADDON_NAMESPACE,
                plan.resource
            );
            let stored = match deployed {
                Ok(map) => map
                    .get(plan.resource)
                    .filter(|m| !m.trim().is_empty())
                    .ok_or_else(|| format!("no {configmap} holds a deployed manifest of it")),
                Err(why) => Err(format!("{configmap} could not be read ({why})")),
            };
            let manifest = stored.map_err(|why| AddonError::NotBundled {
                addon: addon.clone(),
                template: template.clone(),
                why: format!(
                    "{why}, so there is no manifest to keep; {}",
                    not_bundled_remedy(plan.resource)
                ),
            })?;
            notes.push(format!(
                "{addon}: template {template} is not bundled with rkers; keeping the manifest \
                 deployed in {configmap} (unchanged)"
            ));
            plan.manifest = Some(manifest.clone());
        }
        out.push(plan);
    }
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn docs(label: &str, text: &str) -> Vec<serde_json::Value> {
        crate::addons::parse_manifest(label, text)
            .unwrap_or_else(|e| panic!("{label}: YAML does not parse: {e}"))
    }

    fn object_id(v: &serde_json::Value) -> String {
        format!(
            "{}/{}/{}",
            v["kind"].as_str().unwrap_or("?"),
            v["metadata"]["namespace"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("?")
        )
    }

    /// Every golden case (data/addons-golden, rendered by Go's text/template from the KDM
    /// templates) renders to the same objects with the ported minijinja templates.
    #[test]
    fn ported_templates_render_what_rke1_renders() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/addons-golden");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap())
                .unwrap();
        assert!(
            cases.len() >= 2 * TEMPLATES.len(),
            "every template has golden cases"
        );
        let env = environment();
        let mut covered = std::collections::BTreeSet::new();
        for case in &cases {
            let name = case["name"].as_str().unwrap();
            let key = case["template"].as_str().unwrap();
            covered.insert(key.to_string());
            let golden = std::fs::read_to_string(dir.join(format!("{name}.yaml"))).unwrap();
            let ours = render_template(&env, key, &case["vars"]).unwrap();
            let (want, got) = (
                docs(&format!("golden {name}"), &golden),
                docs(&format!("ours {name}"), &ours),
            );
            assert!(!want.is_empty(), "{name}: golden has objects");
            let want_ids: Vec<String> = want.iter().map(object_id).collect();
            let got_ids: Vec<String> = got.iter().map(object_id).collect();
            assert_eq!(got_ids, want_ids, "{name}: same objects in the same order");
            for (w, g) in want.iter().zip(&got) {
                assert_eq!(g, w, "{name}: object {} differs", object_id(w));
            }
        }
        let bundled: std::collections::BTreeSet<String> =
            TEMPLATES.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            covered, bundled,
            "golden cases cover every bundled template"
        );
    }

    /// Every canal template holds the whole canal manifest. port-addon-templates once read a Go
    /// constant only up to its first backtick (KDM writes one as `` ` + "`" + ` ``), which cut every
    /// canal template inside the canal DaemonSet; the Go goldens were rendered from the same cut
    /// text, so only the objects themselves can tell.
    #[test]
    fn every_canal_template_is_whole() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/addons-golden");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap())
                .unwrap();
        let env = environment();
        let canal: Vec<&str> = TEMPLATES
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| k.starts_with("canal-"))
            .collect();
        assert!(canal.len() >= 15, "{canal:?}");
        for key in canal {
            let case = cases
                .iter()
                .find(|c| c["name"] == format!("{key}.defaults"))
                .unwrap_or_else(|| panic!("{key}: no defaults case"));
            let objects = docs(key, &render_template(&env, key, &case["vars"]).unwrap());
            let ids: Vec<String> = objects.iter().map(object_id).collect();
            for want in [
                "ServiceAccount/kube-system/canal",
                "DaemonSet/kube-system/canal",
                "Deployment/kube-system/calico-kube-controllers",
                "PodDisruptionBudget/kube-system/calico-kube-controllers",
            ] {
                assert!(
                    ids.iter().any(|id| id == want),
                    "{key}: no {want} in {ids:?}"
                );
            }
            let daemonset = &objects[ids
                .iter()
                .position(|id| id == "DaemonSet/kube-system/canal")
                .unwrap()];
            let containers: Vec<&str> = daemonset["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(containers, ["calico-node", "kube-flannel"], "{key}");
        }
    }

    /// A template key no catalog selects and rkers does not bundle, standing in for a template KDM
    /// adds after rkers' release.
    const UNBUNDLED_CANAL: &str = "canal-v9.99.0";

    /// Every template the embedded catalog selects for a supported version and a supported addon
    /// (not ACI) is bundled: ported, or KDM's body embedded.
    #[test]
    fn every_selected_template_is_bundled() {
        let catalog = Catalog::embedded();
        let addons = [
            kdm::CALICO,
            kdm::CANAL,
            kdm::FLANNEL,
            kdm::WEAVE,
            kdm::COREDNS,
            kdm::KUBEDNS,
            kdm::METRICS_SERVER,
            kdm::NGINX_INGRESS,
            kdm::NODELOCAL,
        ];
        let mut missing = Vec::new();
        for version in catalog.supported_versions() {
            for addon in addons {
                let Some(key) = catalog.addon_template(addon, &version) else {
                    continue;
                };
                if !super::bundled(&key) {
                    missing.push(format!("{version} {addon}: {key}"));
                }
            }
        }
        assert!(missing.is_empty(), "selected but not bundled: {missing:#?}");
    }

    /// A config with defaults and network `plugin`, on the newest supported version whose
    /// template for it is bundled.
    fn config(plugin: &str) -> (RkeConfig, &'static Catalog) {
        let catalog = Catalog::embedded();
        let version = catalog
            .supported_versions()
            .into_iter()
            .rev()
            .find(|v| {
                catalog
                    .addon_template(plugin, v)
                    .is_some_and(|k| TEMPLATES.iter().any(|(t, _)| *t == k))
            })
            .unwrap_or_else(|| panic!("a supported version with {plugin} bundled"));
        let yml = format!(
            "kubernetes_version: {version}\nnetwork:\n  plugin: {plugin}\nnodes:\n  - address: 10.0.0.1\n    user: rancher\n    role: [controlplane, etcd, worker]\n"
        );
        let mut cfg = crate::config::load_str(&yml, "cluster.yml").unwrap().config;
        crate::config::apply_defaults(&mut cfg, catalog);
        (cfg, catalog)
    }

    /// The plans of `plugin` on a bundled version, with the network plugin's template swapped
    /// for `template`, a key rkers does not bundle (one KDM selects for newer versions, or one
    /// made up for the test).
    fn plans_needing(plugin: &str, template: &str) -> Vec<AddonPlan> {
        assert!(!bundled(template), "{template} is bundled");
        let (cfg, catalog) = config(plugin);
        let mut plans = plan_addons(&cfg, catalog, &[]).unwrap();
        let vars = network_vars(&cfg, catalog).unwrap().unwrap().1;
        plans[0] = system_plan(
            &environment(),
            resource::NETWORK,
            Some((template.into(), vars)),
        )
        .unwrap();
        plans
    }

    fn network(plans: &[AddonPlan]) -> &AddonPlan {
        plans
            .iter()
            .find(|p| p.resource == resource::NETWORK)
            .unwrap()
    }

    const DEPLOYED: &str = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: canal\n  namespace: kube-system\n";

    #[test]
    fn a_bundled_template_renders_and_keep_deployed_leaves_it_alone() {
        let (cfg, catalog) = config("canal");
        let plans = plan_addons(&cfg, catalog, &[]).unwrap();
        let net = network(&plans);
        let key = net.template.clone().unwrap();
        assert!(key.starts_with("canal-"), "{key}");
        assert!(!net.unbundled);
        let vars = network_vars(&cfg, catalog).unwrap().unwrap().1;
        let rendered = render_template(&environment(), &key, &vars).unwrap();
        assert_eq!(net.manifest.as_deref(), Some(rendered.as_str()));
        assert!(rendered.contains("kind: DaemonSet"));
        // Nothing to keep: the same plans whatever the cluster holds, and no note.
        let mut stored = BTreeMap::new();
        stored.insert(resource::NETWORK.to_string(), DEPLOYED.to_string());
        for deployed in [Ok(&stored), Err(&ManifestsUnread::NewCluster)] {
            let (kept, notes) = keep_deployed(plans.clone(), deployed).unwrap();
            assert_eq!(kept, plans);
            assert!(notes.is_empty(), "{notes:?}");
        }
    }

    #[test]
    fn an_unbundled_template_keeps_the_deployed_manifest_with_a_note() {
        let plans = plans_needing("canal", UNBUNDLED_CANAL);
        let net = network(&plans);
        let key = net.template.clone().unwrap();
        assert_eq!(key, UNBUNDLED_CANAL);
        assert!(net.unbundled && net.manifest.is_none());
        let mut stored = BTreeMap::new();
        stored.insert(resource::NETWORK.to_string(), DEPLOYED.to_string());
        stored.insert(resource::COREDNS.to_string(), "not: kept".to_string());
        let (kept, notes) = keep_deployed(plans.clone(), Ok(&stored)).unwrap();
        assert_eq!(network(&kept).manifest.as_deref(), Some(DEPLOYED));
        assert_eq!(network(&kept).template.as_deref(), Some(key.as_str()));
        assert_eq!(
            notes,
            [format!(
                "canal: template {key} is not bundled with rkers; keeping the manifest deployed \
                 in ConfigMap kube-system/rke-network-plugin (unchanged)"
            )]
        );
        // Every other addon is rendered as always, whatever its ConfigMap holds.
        for (before, after) in plans.iter().zip(&kept) {
            if before.resource != resource::NETWORK {
                assert_eq!(before, after);
            }
        }
    }

    #[test]
    fn an_unbundled_template_the_cluster_does_not_run_is_refused_with_the_remedies() {
        // Every calico template KDM selects is bundled: a made-up newer one stands in.
        let plans = plans_needing("calico", "calico-v9.99.9");
        let key = network(&plans).template.clone().unwrap();
        let empty = BTreeMap::new();
        let mut blank = BTreeMap::new();
        blank.insert(resource::NETWORK.to_string(), "\n".to_string());
        let unreadable = ManifestsUnread::Kubeconfig {
            path: "/var/kube_config_cluster.yml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        for (deployed, why) in [
            (
                Ok(&empty),
                "no ConfigMap kube-system/rke-network-plugin holds a deployed manifest",
            ),
            (
                Ok(&blank),
                "no ConfigMap kube-system/rke-network-plugin holds a deployed manifest",
            ),
            (
                Err(&ManifestsUnread::NewCluster),
                "ConfigMap kube-system/rke-network-plugin could not be read (new cluster)",
            ),
            (
                Err(&unreadable),
                "ConfigMap kube-system/rke-network-plugin could not be read \
                 (/var/kube_config_cluster.yml: gone)",
            ),
        ] {
            let e = keep_deployed(plans.clone(), deployed)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("calico: template {key} is not bundled")),
                "{e}"
            );
            assert!(e.contains(why), "{e}");
            for remedy in [
                "network.plugin",
                "kubernetes_version",
                "addons_include",
                "network.plugin: none",
            ] {
                assert!(e.contains(remedy), "{remedy}: {e}");
            }
        }
    }

    #[test]
    fn to_yaml_matches_yaml_v2_block_style() {
        let v = json!([{"key": "a", "operator": "Exists", "tolerationSeconds": 30}]);
        assert_eq!(
            to_yaml(&v),
            "- \"key\": \"a\"\n  \"operator\": \"Exists\"\n  \"tolerationSeconds\": 30"
        );
        let v = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}});
        assert_eq!(
            to_yaml(&v),
            "\"rollingUpdate\":\n  \"maxUnavailable\": 1\n\"type\": \"RollingUpdate\""
        );
    }

    #[test]
    fn ingress_version_from_both_tag_formats() {
        assert_eq!(
            ingress_version("rancher/nginx-ingress-controller:nginx-1.11.2-rancher1").as_deref(),
            Some("1.11.2")
        );
        assert_eq!(
            ingress_version("rancher/nginx-ingress-controller:0.21.0-rancher3").as_deref(),
            Some("0.21.0")
        );
    }
}
