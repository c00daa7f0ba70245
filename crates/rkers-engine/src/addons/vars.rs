//! The variables RKE1 hands each addon template (§19.3): computed from cluster.yml and the
//! KDM catalog, keyed by the names KDM's Go templates use (`.ClusterCIDR`, `.Image`, ...), with
//! the template each addon's version selects.

use super::AddonError;
use crate::config::{RkeConfig, Toleration, UpdateStrategy};
use crate::metadata::{Catalog, addon as kdm};
use serde_json::{Map, json};
use std::collections::BTreeMap;

/// Paths RKE1 passes to the CNI templates for the kube-node identity (§19.3).
const KUBE_NODE_KUBECONFIG: &str = "/etc/kubernetes/ssl/kubecfg-kube-node.yaml";
const KUBE_NODE_CERT: &str = "/etc/kubernetes/ssl/kube-node.pem";
const KUBE_NODE_KEY: &str = "/etc/kubernetes/ssl/kube-node-key.pem";
const KUBE_CA_CERT: &str = "/etc/kubernetes/ssl/kube-ca.pem";
const CANAL_API_ROOT: &str = "https://127.0.0.1:6443";

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

#[cfg(test)]
mod tests {
    use super::*;

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
