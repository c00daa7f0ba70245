//! The containers of every node: kubelet, kube-proxy, the nginx-proxy of hosts without the
//! control plane, and service-sidekick.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::*;
use crate::plan::files::kubelet_docker_config;
use crate::plan::flags::{apply_extra_args, apply_service_options, map, render_flags};
use crate::plan::util::{at_least, join_path, uniq};

impl<'a> ClusterView<'a> {
    pub(super) fn kubelet(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let kubelet = &self.cfg.services.kubelet;
        let version = self.cfg.kubernetes_version.as_str();
        let kubelet_root = join_path(&[prefix, "/var/lib/kubelet"]);
        let infra_image = if kubelet.infra_container_image.is_empty() {
            self.cfg.system_images.pod_infra_container.clone()
        } else {
            kubelet.infra_container_image.clone()
        };
        let mut args = map(&[
            ("client-ca-file", &cert("kube-ca")),
            ("cloud-provider", &self.cloud_provider_flag()),
            ("cluster-dns", &kubelet.cluster_dns_server),
            ("cluster-domain", &kubelet.cluster_domain),
            ("fail-swap-on", &kubelet.fail_swap_on.to_string()),
            ("hostname-override", &host.hostname),
            ("kubeconfig", &kubeconfig("kube-node")),
            ("pod-infra-container-image", &infra_image),
            ("root-dir", &kubelet_root),
        ]);
        if self.input.dind {
            // Before KDM's flags, as RKE1 sets it (`BuildKubeletProcess`).
            args.insert("healthz-bind-address".into(), "0.0.0.0".into());
        }
        if host.roles.controlplane && !host.roles.worker {
            args.insert("register-with-taints".into(), CONTROLPLANE_TAINT.into());
        }
        if host.address != host.internal_address {
            args.insert("node-ip".into(), host.internal_address.clone());
        }
        if self.cloud.is_some() {
            args.insert("cloud-config".into(), CLOUD_CONFIG_PATH.into());
            if self.cloud_name() == "external-aws" && self.uses_instance_metadata_hostname() {
                // The rke-tools wrapper then takes the node name from EC2 instance metadata.
                args.remove("hostname-override");
            }
        }
        if kubelet.generate_serving_certificate {
            let name = cert_name_for_host(&host.address, &host.internal_address, "kube-kubelet");
            args.insert("tls-cert-file".into(), cert(&name));
            args.insert("tls-private-key-file".into(), key(&name));
        }
        let cri_dockerd = self.cfg.enable_cri_dockerd == Some(true);
        let mut binds = Vec::new();
        if cri_dockerd {
            if !at_least(version, 1, 27) {
                args.insert("container-runtime".into(), "remote".into());
            }
            if at_least(version, 1, 24) {
                args.insert(
                    "container-runtime-endpoint".into(),
                    "unix:///var/run/cri-dockerd.sock".into(),
                );
                binds.push(format!(
                    "{}:/var/lib/cri-dockerd:z",
                    join_path(&[prefix, "/var/lib/cri-dockerd"])
                ));
            } else {
                args.insert(
                    "container-runtime-endpoint".into(),
                    "/var/run/dockershim.sock".into(),
                );
            }
        }
        apply_service_options(&mut args, &self.input.service_options.kubelet, Some(prefix));

        let root = &facts.docker_root_dir;
        binds.extend([
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
            "/etc/cni:/etc/cni:rw,z".into(),
            "/opt/cni:/opt/cni:rw,z".into(),
            format!("{}:/var/lib/cni:z", join_path(&[prefix, "/var/lib/cni"])),
            "/var/lib/calico:/var/lib/calico:z".into(),
            "/etc/resolv.conf:/etc/resolv.conf".into(),
            "/sys:/sys:rprivate".into(),
            format!("{root}:{root}:rw,rslave,z"),
            format!("{kubelet_root}:{kubelet_root}:shared,z"),
            "/var/lib/rancher:/var/lib/rancher:shared,z".into(),
            "/var/run:/var/run:rw,rprivate".into(),
            "/run:/run:rprivate".into(),
            format!("{}:/etc/ceph", join_path(&[prefix, "/etc/ceph"])),
            "/dev:/host/dev:rprivate".into(),
            "/var/log/containers:/var/log/containers:z".into(),
            "/var/log/pods:/var/log/pods:z".into(),
            "/usr:/host/usr:ro".into(),
            "/etc:/host/etc:ro".into(),
        ]);
        if kubelet_root != "/var/lib/kubelet" {
            // Flex volume drivers keep their well-known path when a prefix is used.
            binds.push(
                "/var/lib/kubelet/volumeplugins:/var/lib/kubelet/volumeplugins:shared,z".into(),
            );
        }
        let mut binds = self.strip_z_if_122(binds);
        binds.extend(kubelet.extra_binds.iter().cloned());

        let mut env = kubelet.extra_env.clone();
        if cri_dockerd {
            env.push("RKE_KUBELET_CRIDOCKERD=true".into());
            if !self.cfg.cri_dockerd_stream_server_address.is_empty() {
                env.push(format!(
                    "CRIDOCKERD_STREAM_SERVER_ADDRESS={}",
                    self.cfg.cri_dockerd_stream_server_address
                ));
            }
            if !self.cfg.cri_dockerd_stream_server_port.is_empty() {
                env.push(format!(
                    "CRIDOCKERD_STREAM_SERVER_PORT={}",
                    self.cfg.cri_dockerd_stream_server_port
                ));
            }
            if is_dual_stack(&self.cfg.services.kube_controller.cluster_cidr) {
                env.push("RKE_KUBELET_CRIDOCKERD_DUALSTACK=true".into());
            }
        }
        env.extend(self.cloud_checksum_env());
        if !self.cfg.private_registries.is_empty() {
            let config = kubelet_docker_config(&self.cfg.private_registries);
            env.push(format!(
                "RKE_KUBELET_DOCKER_CONFIG={}",
                STANDARD.encode(config)
            ));
            env.push(format!(
                "RKE_KUBELET_DOCKER_FILE={}",
                join_path(&[prefix, "/var/lib/kubelet/config.json"])
            ));
        }
        apply_extra_args(&mut args, &kubelet.extra_args);
        if cri_dockerd && at_least(version, 1, 36) {
            keep_websockets_off_kubelet(&mut args);
        }
        if cri_dockerd && !args.contains_key("pod-infra-container-image") {
            // Kubernetes v1.35 took the flag from kubelet (the sandbox image is the runtime's
            // setting) and RKE1's entrypoint read it from there for cri-dockerd: without this,
            // cri-dockerd falls back to its built-in registry.k8s.io pause image, which a host
            // that pulls through `private_registries` cannot get. rke-tools' entrypoint passes
            // it on as `--pod-infra-container-image` (images/tools in this repository does).
            env.push(format!("RKE_KUBELET_PAUSE_IMAGE={infra_image}"));
        }
        // Node-local DNS wins even over the user's extra_args, as upstream.
        if let Some(ip) = self
            .cfg
            .dns
            .as_ref()
            .and_then(|d| d.nodelocal.as_ref())
            .map(|n| n.ip_address.as_str())
            .filter(|ip| !ip.is_empty())
        {
            args.insert("cluster-dns".into(), ip.to_string());
        }
        let mut entrypoint = self.tools_entrypoint(KUBELET);
        entrypoint.extend(render_flags(&args, &kubelet.extra_args_array));
        self.finish(
            ContainerSpec {
                name: KUBELET.into(),
                image: self.image_or_default(&kubelet.image),
                entrypoint,
                env: uniq(env),
                binds: uniq(binds),
                volumes_from: strings(&[SERVICE_SIDEKICK]),
                network_mode: Some("host".into()),
                pid_mode: Some("host".into()),
                privileged: true,
                restart_policy: Some("always".into()),
                labels: Self::labelled(KUBELET),
                health_check: Some(HealthCheck {
                    url: "http://localhost:10248/healthz".into(),
                    client_certificate: None,
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    pub(super) fn kube_proxy(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let proxy = &self.cfg.services.kubeproxy;
        let mut args = map(&[
            (
                "cluster-cidr",
                &self.cfg.services.kube_controller.cluster_cidr,
            ),
            ("hostname-override", &host.hostname),
            ("kubeconfig", &kubeconfig("kube-proxy")),
        ]);
        apply_service_options(&mut args, &self.input.service_options.kubeproxy, None);
        if self.cloud.is_some() {
            let bind = if !host.internal_address.is_empty() && host.address != host.internal_address
            {
                &host.internal_address
            } else {
                &host.address
            };
            args.insert("bind-address".into(), bind.clone());
            if matches!(self.cloud_name(), "aws" | "external-aws")
                && self.uses_instance_metadata_hostname()
            {
                args.remove("hostname-override");
            }
        }
        if self.input.dind {
            // After KDM's flags (which set 127.0.0.1), as RKE1 does (`BuildKubeProxyProcess`).
            args.insert("healthz-bind-address".into(), "0.0.0.0".into());
        }
        let mut binds = self.strip_z_if_122(vec![
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
            "/run:/run".into(),
            "/lib/modules:/lib/modules:ro".into(),
        ]);
        binds.extend(proxy.extra_binds.iter().cloned());
        apply_extra_args(&mut args, &proxy.extra_args);
        let mut entrypoint = self.tools_entrypoint(KUBE_PROXY);
        entrypoint.extend(render_flags(&args, &proxy.extra_args_array));
        self.finish(
            ContainerSpec {
                name: KUBE_PROXY.into(),
                image: self.image_or_default(&proxy.image),
                entrypoint,
                env: uniq(
                    proxy
                        .extra_env
                        .iter()
                        .cloned()
                        .chain(br_netfilter_env(self.cfg)),
                ),
                binds: uniq(binds),
                volumes_from: strings(&[SERVICE_SIDEKICK]),
                network_mode: Some("host".into()),
                pid_mode: Some("host".into()),
                privileged: true,
                restart_policy: Some("always".into()),
                labels: Self::labelled(KUBE_PROXY),
                health_check: Some(HealthCheck {
                    url: "http://localhost:10256/healthz".into(),
                    client_certificate: None,
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    pub(super) fn nginx_proxy(&self, facts: &HostFacts) -> ContainerSpec {
        let cp_hosts = self
            .cp_hosts
            .iter()
            .map(|h| h.internal_address.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let env = vec![format!("CP_HOSTS={cp_hosts}")];
        self.finish(
            ContainerSpec {
                name: NGINX_PROXY.into(),
                image: self.cfg.system_images.nginx_proxy.clone(),
                entrypoint: strings(&["nginx-proxy"]),
                // The same text as the env so a changed controlplane list changes Cmd too.
                cmd: env.clone(),
                env,
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(NGINX_PROXY),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    pub(super) fn sidekick(&self, facts: &HostFacts) -> ContainerSpec {
        self.finish(
            ContainerSpec {
                name: SERVICE_SIDEKICK.into(),
                image: self.cfg.system_images.kubernetes_services_sidecar.clone(),
                entrypoint: strings(&["/bin/bash"]),
                network_mode: Some("none".into()),
                labels: Self::labelled(SERVICE_SIDEKICK),
                // Exists only to share its `/opt/rke-tools` volume.
                start: false,
                ..Default::default()
            },
            facts,
        )
    }
}

/// Whether a comma-separated CIDR list holds both an IPv4 and an IPv6 network.
fn is_dual_stack(cidrs: &str) -> bool {
    let nets: Vec<ipnet::IpNet> = cidrs
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    if nets.len() != cidrs.split(',').count() {
        return false;
    }
    nets.iter().any(|n| matches!(n, ipnet::IpNet::V4(_)))
        && nets.iter().any(|n| matches!(n, ipnet::IpNet::V6(_)))
}

/// The feature gate kubelet must not have with cri-dockerd, from v1.36 on (where it is on by
/// default): with it kubelet declares that it takes exec, attach and port-forward over
/// WebSockets and translates them itself into SPDY towards the runtime's streaming URL; the URL
/// cri-dockerd returns has no scheme, which that translator reads as HTTPS, while cri-dockerd's
/// streaming server speaks plain HTTP (`http: server gave HTTP response to HTTPS client`, seen
/// on kubelet v1.37.2 with cri-dockerd 0.3.17; 0.4.0 returns the same URL). Off, the node does
/// not declare it and kube-apiserver translates as it did before v1.36. A gate the user set for
/// it in `extra_args` is kept as given.
const KUBELET_WEBSOCKETS_GATE: &str = "ExtendWebSocketsToKubelet";

fn keep_websockets_off_kubelet(args: &mut BTreeMap<String, String>) {
    let gates = args.entry("feature-gates".to_string()).or_default();
    if gates
        .split(',')
        .any(|g| g.trim().split('=').next() == Some(KUBELET_WEBSOCKETS_GATE))
    {
        return;
    }
    if !gates.is_empty() {
        gates.push(',');
    }
    gates.push_str(KUBELET_WEBSOCKETS_GATE);
    gates.push_str("=false");
}

#[cfg(test)]
mod websockets_gate_tests {
    use super::*;

    #[test]
    fn the_gate_is_added_once_and_a_users_choice_is_kept() {
        let mut args = BTreeMap::new();
        keep_websockets_off_kubelet(&mut args);
        assert_eq!(args["feature-gates"], "ExtendWebSocketsToKubelet=false");
        let mut args = map(&[("feature-gates", "Foo=true")]);
        keep_websockets_off_kubelet(&mut args);
        keep_websockets_off_kubelet(&mut args);
        assert_eq!(
            args["feature-gates"],
            "Foo=true,ExtendWebSocketsToKubelet=false"
        );
        let mut args = map(&[("feature-gates", "ExtendWebSocketsToKubelet=true")]);
        keep_websockets_off_kubelet(&mut args);
        assert_eq!(args["feature-gates"], "ExtendWebSocketsToKubelet=true");
    }
}

/// `RKE_KUBE_PROXY_BR_NETFILTER=true` when `network.enable_br_netfilter` is on (RKE v1.8's
/// `BuildKubeProxyProcess`, on Linux and Windows hosts alike).
pub(crate) fn br_netfilter_env(cfg: &crate::config::RkeConfig) -> Option<String> {
    (cfg.network.enable_br_netfilter == Some(true))
        .then(|| "RKE_KUBE_PROXY_BR_NETFILTER=true".to_string())
}

#[cfg(test)]
mod br_netfilter_tests {
    use super::*;
    use crate::config::{RkeConfig, settle_br_netfilter};

    fn settled(yml: Option<bool>, previous: Option<Option<bool>>) -> Option<String> {
        let mut cfg = RkeConfig::default();
        cfg.network.enable_br_netfilter = yml;
        let previous = previous.map(|p| {
            let mut old = RkeConfig::default();
            old.network.enable_br_netfilter = p;
            old
        });
        settle_br_netfilter(&mut cfg, previous.as_ref());
        br_netfilter_env(&cfg)
    }

    #[test]
    fn a_new_cluster_gets_rke_v1_8s_default_and_an_adopted_one_keeps_its_own() {
        let on = Some("RKE_KUBE_PROXY_BR_NETFILTER=true".to_string());
        // New cluster: RKE v1.8's default.
        assert_eq!(settled(None, None), on);
        // A state RKE v1.8 (or rkers) wrote says true; one from RKE v1.7 or earlier has no key.
        assert_eq!(settled(None, Some(Some(true))), on);
        assert_eq!(settled(None, Some(None)), None);
        // cluster.yml decides whatever the state says.
        assert_eq!(settled(Some(true), Some(None)), on);
        assert_eq!(settled(Some(false), None), None);
    }
}
