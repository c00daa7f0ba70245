//! The directories and files a Windows worker needs on its disk: kubeconfigs, the flannel and
//! CNI configuration, nginx-proxy's upstreams.

use super::*;

/// Directories to create on the host, in creation order.
pub fn windows_directories(prefix: &str) -> Vec<String> {
    [
        "/etc/kubernetes/bin",
        "/etc/kubernetes/ssl",
        "/etc/cni/net.d",
        "/etc/kube-flannel",
        "/etc/nginx/conf",
        "/etc/nginx/logs",
        "/etc/nginx/temp",
        "/etc/rancher/wins",
        "/opt/bin",
        "/opt/cni/bin",
        "/var/lib/cni",
        "/var/lib/kubelet/pki",
        "/var/lib/kubelet/volumeplugins",
        "/var/log/containers",
        "/var/log/pods",
        "/run",
    ]
    .iter()
    .map(|p| join_path(&[prefix, p]))
    .collect()
}

fn host_file(prefix: &str, path: &str, contents: String) -> FileSpec {
    let full = join_path(&[prefix, path]);
    FileSpec {
        path: full.clone(),
        // Processes run on the host, so their flags name the host path.
        container_path: full,
        contents,
        mode: 0o600,
        checksum_env: None,
        remove_when_empty: true,
    }
}

pub(super) fn windows_files(
    cfg: &RkeConfig,
    prefix: &str,
    cp_hosts: &[&Host],
    wins_config: &WinsConfig,
    cloud: Option<&(String, String)>,
) -> Result<Vec<FileSpec>, PlanError> {
    let mut files = vec![
        host_file(prefix, "/etc/rancher/wins/config", wins_config.to_yaml()),
        host_file(
            prefix,
            "/etc/kubernetes/ssl/kubecfg-kube-node.yaml",
            windows_kubeconfig("kube-node"),
        ),
        host_file(
            prefix,
            "/etc/kubernetes/ssl/kubecfg-kube-proxy.yaml",
            windows_kubeconfig("kube-proxy"),
        ),
        host_file(
            prefix,
            "/etc/cni/net.d/10-flannel.conflist",
            flannel_conflist(cfg),
        ),
        host_file(
            prefix,
            "/etc/kube-flannel/net-conf.json",
            flannel_net_conf(cfg)?,
        ),
        host_file(prefix, "/etc/nginx/conf/nginx.conf", nginx_conf(cp_hosts)),
    ];
    if let Some((_, text)) = cloud {
        let mut file = host_file(prefix, "/etc/kubernetes/cloud-config", text.clone());
        file.checksum_env = Some("RKE_CLOUD_CONFIG_CHECKSUM".into());
        file.remove_when_empty = false;
        files.push(file);
    }
    if !cfg.private_registries.is_empty() {
        // The RKE1 entrypoint wrote RKE_KUBELET_DOCKER_CONFIG here; we write it directly.
        files.push(host_file(
            prefix,
            "/var/lib/kubelet/config.json",
            crate::plan::kubelet_docker_config(&cfg.private_registries),
        ));
    }
    Ok(files)
}

/// `10-flannel.conflist` for the VXLAN backend (win-overlay), as RKE1's sidekick wrote it.
pub fn flannel_conflist(cfg: &RkeConfig) -> String {
    let cluster_cidr = &cfg.services.kube_controller.cluster_cidr;
    let service_cidr = &cfg.services.kube_controller.service_cluster_ip_range;
    let kubelet = &cfg.services.kubelet;
    let conflist = json!({
        "name": OVERLAY_NETWORK_NAME,
        "cniVersion": "0.2.0",
        "plugins": [{
            "type": "flannel",
            "capabilities": {"dns": true},
            "delegate": {
                "type": "win-overlay",
                "dns": {
                    "nameservers": [kubelet.cluster_dns_server],
                    "search": [format!("svc.{}", kubelet.cluster_domain)],
                },
                "policies": [
                    {"name": "EndpointPolicy", "value": {
                        "Type": "OutBoundNAT",
                        "ExceptionList": [cluster_cidr, service_cidr],
                    }},
                    {"name": "EndpointPolicy", "value": {
                        "Type": "ROUTE",
                        "NeedEncap": true,
                        "DestinationPrefix": service_cidr,
                    }},
                ],
            },
        }],
    });
    serde_json::to_string_pretty(&conflist).unwrap_or_default()
}

/// flanneld's `net-conf.json` (VXLAN, VNI from `flannel_backend_vni`, port 4789).
pub fn flannel_net_conf(cfg: &RkeConfig) -> Result<String, PlanError> {
    let vni = match cfg.network.options.get("flannel_backend_vni") {
        None => WINDOWS_MIN_VXLAN_VNI,
        Some(text) => text.parse::<u32>().map_err(|_| {
            PlanError::Unsupported(format!(
                "network option flannel_backend_vni {text:?} is not a number"
            ))
        })?,
    };
    let conf = json!({
        "Network": cfg.services.kube_controller.cluster_cidr,
        "Backend": {
            "Name": OVERLAY_NETWORK_NAME,
            "Type": "vxlan",
            "VNI": vni,
            "Port": WINDOWS_VXLAN_PORT,
        },
    });
    Ok(serde_json::to_string_pretty(&conf).unwrap_or_default())
}

/// nginx's stream proxy to the control plane (what RKE1's confd template rendered).
pub fn nginx_conf(cp_hosts: &[&Host]) -> String {
    let mut upstream = String::new();
    for h in cp_hosts {
        upstream.push_str(&format!(
            "        server {}:6443;\n",
            crate::config::url_host(&h.internal_address)
        ));
    }
    format!(
        "worker_processes auto;\n\
         error_log stderr notice;\n\
         events {{\n    worker_connections 1024;\n}}\n\
         stream {{\n    \
         upstream kube_apiserver {{\n{upstream}    }}\n    \
         server {{\n        \
         listen 6443;\n        \
         proxy_pass kube_apiserver;\n        \
         proxy_timeout 10m;\n        \
         proxy_connect_timeout 2s;\n    \
         }}\n\
         }}\n"
    )
}
