//! A Windows worker's containers: the kubelet, kube-proxy, flanneld (in service-sidekick) and
//! nginx-proxy processes each one starts through wins, and [`windows_host_plan`] that puts them
//! together with the host's files and directories.

use super::*;

/// Windows kubeconfig for a component: RKE1's node kubeconfig with certificate paths made
/// absolute Windows paths (processes run on the host, not in the container).
pub(super) fn windows_kubeconfig(component: &str) -> String {
    crate::pki::node_kubeconfig(component).replace("/etc/kubernetes/ssl/", "c:/etc/kubernetes/ssl/")
}

fn ssl(prefix: &str, file: &str) -> String {
    join_path(&[prefix, "/etc/kubernetes/ssl", file])
}

pub(super) fn win(path: &str) -> String {
    path.replace('/', "\\")
}

/// Builds a Windows worker's plan. `all_hosts` are the cluster's hosts (the control plane list
/// feeds nginx-proxy).
pub(crate) fn windows_host_plan(
    input: &PlanInput,
    all_hosts: &[Host],
    host: &Host,
    _facts: &HostFacts,
) -> Result<WindowsHostPlan, PlanError> {
    let cfg = input.config;
    let refused = |cause: String| PlanError::Host {
        host: host.address.clone(),
        cause,
    };
    if host.roles.etcd || host.roles.controlplane {
        return Err(refused(
            "Windows hosts can only be workers (etcd and controlplane run on Linux)".into(),
        ));
    }
    let options = input.windows_service_options.ok_or_else(|| {
        refused(format!(
            "no Windows service options for Kubernetes {}; Windows workers cannot be planned",
            cfg.kubernetes_version
        ))
    })?;
    let prefix = windows_prefix_path(cfg);
    if prefix != WINDOWS_PREFIX_PATH {
        return Err(refused(format!(
            "win_prefix_path {prefix:?} is not supported (only c:/)"
        )));
    }
    let cloud = cloud_config_file(&cfg.cloud_provider)?;
    let cp_hosts: Vec<&Host> = all_hosts.iter().filter(|h| h.roles.controlplane).collect();
    let env = windows_env(cfg, host, &prefix, cloud.as_ref().map(|c| c.0.as_str()));

    let kubelet = kubelet_process(input, host, &prefix, options, cloud.as_ref())?;
    let proxy = kube_proxy_process(input, host, &prefix, options, cloud.is_some())?;
    let flanneld = flanneld_process(host, &prefix)?;
    let nginx = nginx_process();

    let mut containers = IndexMap::new();
    let mut add = |spec: ContainerSpec| {
        containers.insert(spec.name.clone(), spec);
    };
    let pipe_and_wins = [
        WINS_PIPE_BIND.to_string(),
        format!(
            "{}:c:/host/etc/rancher/wins:ro",
            join_path(&[&prefix, "/etc/rancher/wins"])
        ),
    ];

    let mut sidekick_env = env.clone();
    sidekick_env.push(format!("RKE_NODE_NAME_OVERRIDE={}", host.hostname));
    let mut sidekick_binds: Vec<String> = [
        ("/opt", "c:/host/opt"),
        ("/etc", "c:/host/etc"),
        ("/etc/cni/net.d", "c:/host/etc/cni/net.d"),
        ("/etc/kube-flannel", "c:/host/etc/kube-flannel"),
        ("/run", "c:/host/run"),
    ]
    .iter()
    .map(|(h, c)| format!("{}:{c}", join_path(&[&prefix, h])))
    .collect();
    sidekick_binds.push(WINS_PIPE_BIND.into());
    add(windows_container(
        SERVICE_SIDEKICK,
        &cfg.system_images.kubernetes_services_sidecar,
        &sidekick_script(&flanneld),
        sidekick_env,
        sidekick_binds,
        false,
    ));

    let cp_list = cp_hosts
        .iter()
        .map(|h| h.internal_address.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mut nginx_env = vec![format!("CP_HOSTS={cp_list}")];
    nginx_env.extend(env.iter().cloned());
    let mut nginx_binds = vec![
        format!("{}:c:/host/etc/nginx", join_path(&[&prefix, "/etc/nginx"])),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    nginx_binds.extend(pipe_and_wins.iter().cloned());
    add(windows_container(
        NGINX_PROXY,
        &cfg.system_images.nginx_proxy,
        &nginx.launcher_script(),
        nginx_env,
        nginx_binds,
        true,
    ));

    let kubelet_svc = &cfg.services.kubelet;
    let mut kubelet_env = pick(&kubelet_svc.win_extra_env, &kubelet_svc.extra_env).to_vec();
    kubelet_env.extend(env.iter().cloned());
    if let Some((_, text)) = &cloud {
        kubelet_env.push(format!(
            "RKE_CLOUD_CONFIG_CHECKSUM={}",
            crate::plan::config_checksum(text, &cfg.kubernetes_version)
        ));
    }
    let mut kubelet_binds = vec![
        format!(
            "{}:c:/host/etc/kubernetes",
            join_path(&[&prefix, "/etc/kubernetes"])
        ),
        format!(
            "{}:c:/host/var/lib/kubelet",
            join_path(&[&prefix, "/var/lib/kubelet"])
        ),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    kubelet_binds.extend(pipe_and_wins.iter().cloned());
    kubelet_binds.extend(
        pick(&kubelet_svc.win_extra_binds, &kubelet_svc.extra_binds)
            .iter()
            .cloned(),
    );
    add(windows_container(
        KUBELET,
        &image_or(&kubelet_svc.image, &cfg.system_images.kubernetes),
        &kubelet.launcher_script(),
        kubelet_env,
        kubelet_binds,
        true,
    ));

    let proxy_svc = &cfg.services.kubeproxy;
    let mut proxy_env = pick(&proxy_svc.win_extra_env, &proxy_svc.extra_env).to_vec();
    proxy_env.extend(env.iter().cloned());
    proxy_env.extend(crate::plan::containers::br_netfilter_env(cfg));
    let mut proxy_binds = vec![
        format!(
            "{}:c:/host/etc/kubernetes",
            join_path(&[&prefix, "/etc/kubernetes"])
        ),
        format!("{}:c:/host/run", join_path(&[&prefix, "/run"])),
    ];
    proxy_binds.extend(pipe_and_wins.iter().cloned());
    proxy_binds.extend(
        pick(&proxy_svc.win_extra_binds, &proxy_svc.extra_binds)
            .iter()
            .cloned(),
    );
    add(windows_container(
        KUBE_PROXY,
        &image_or(&proxy_svc.image, &cfg.system_images.kubernetes),
        &proxy.launcher_script(),
        proxy_env,
        proxy_binds,
        true,
    ));

    let processes = vec![nginx, kubelet, flanneld, proxy];
    let wins_config = WinsConfig::for_processes(&processes);
    let files = windows_files(cfg, &prefix, &cp_hosts, &wins_config, cloud.as_ref())?;

    let mut certificate_names = vec![
        "kube-ca".to_string(),
        "kube-proxy".into(),
        "kube-node".into(),
    ];
    if kubelet_svc.generate_serving_certificate {
        for h in all_hosts {
            certificate_names.push(cert_name_for_host(
                &h.address,
                &h.internal_address,
                "kube-kubelet",
            ));
        }
    }

    Ok(WindowsHostPlan {
        host: HostPlan {
            address: host.address.clone(),
            internal_address: host.internal_address.clone(),
            hostname: host.hostname.clone(),
            roles: host.roles.clone(),
            prefix_path: prefix.clone(),
            containers,
            files,
            certificate_names: uniq(certificate_names),
            port_checks: vec![PortCheck {
                address: host.address.clone(),
                port: 10250,
                protocol: "TCP".into(),
            }],
        },
        setup: WindowsSetup {
            directories: windows_directories(&prefix),
            wins_config,
            processes,
        },
    })
}

fn pick<'a, T>(windows: &'a [T], linux: &'a [T]) -> &'a [T] {
    if windows.is_empty() { linux } else { windows }
}

fn pick_map<'a, V>(
    windows: &'a BTreeMap<String, V>,
    linux: &'a BTreeMap<String, V>,
) -> &'a BTreeMap<String, V> {
    if windows.is_empty() { linux } else { windows }
}

fn image_or(image: &str, default: &str) -> String {
    if image.is_empty() {
        default.to_string()
    } else {
        image.to_string()
    }
}

/// RKE1's `getWindowsEnv` block.
fn windows_env(cfg: &RkeConfig, host: &Host, prefix: &str, cloud: Option<&str>) -> Vec<String> {
    let kubelet = &cfg.services.kubelet;
    vec![
        format!(
            "RKE_CLUSTER_CIDR={}",
            cfg.services.kube_controller.cluster_cidr
        ),
        format!("RKE_CLUSTER_DOMAIN={}", kubelet.cluster_domain),
        format!("RKE_CLUSTER_DNS_SERVER={}", kubelet.cluster_dns_server),
        format!(
            "RKE_CLUSTER_SERVICE_CIDR={}",
            cfg.services.kube_controller.service_cluster_ip_range
        ),
        format!("RKE_NODE_ADDRESS={}", host.address),
        format!("RKE_NODE_INTERNAL_ADDRESS={}", host.internal_address),
        format!("RKE_CLOUD_PROVIDER_NAME={}", cloud.unwrap_or("")),
        format!("RKE_NODE_PREFIX_PATH={prefix}"),
    ]
}

pub(super) fn windows_container(
    name: &str,
    image: &str,
    script: &str,
    env: Vec<String>,
    binds: Vec<String>,
    uses_sidekick: bool,
) -> ContainerSpec {
    let mut entrypoint: Vec<String> = LAUNCHER.iter().map(|s| s.to_string()).collect();
    entrypoint.push(encode_powershell(script));
    ContainerSpec {
        name: name.into(),
        image: image.into(),
        entrypoint,
        env: uniq(env),
        binds: uniq(binds),
        volumes_from: if uses_sidekick {
            vec![SERVICE_SIDEKICK.into()]
        } else {
            Vec::new()
        },
        // Windows containers have no host network, host PID or privileged mode (RKE1's process
        // filter clears them); all host access goes through wins.
        network_mode: None,
        pid_mode: None,
        privileged: false,
        restart_policy: Some("always".into()),
        labels: BTreeMap::from([(CONTAINER_NAME_LABEL.to_string(), name.to_string())]),
        user: Some(CONTAINER_USER.into()),
        start: true,
        ..Default::default()
    }
}

/// `args` when wins passes each intact; the refusal names the host.
fn checked(host: &Host, what: &str, args: Vec<String>) -> Result<Vec<String>, PlanError> {
    for arg in &args {
        check_wins_list_value(what, arg).map_err(|e| PlanError::Host {
            host: host.address.clone(),
            cause: e.to_string(),
        })?;
    }
    Ok(args)
}

fn kubelet_process(
    input: &PlanInput,
    host: &Host,
    prefix: &str,
    options: &crate::plan::ServiceOptions,
    cloud: Option<&(String, String)>,
) -> Result<WinsProcess, PlanError> {
    let has_cloud = cloud.is_some();
    let cfg = input.config;
    let kubelet = &cfg.services.kubelet;
    // `external-aws` is passed to Kubernetes as `external`, as on Linux.
    let cloud_flag = match cloud {
        Some((name, _)) if name == "external-aws" => "external".to_string(),
        Some((name, _)) => name.clone(),
        None => String::new(),
    };
    let mut args = map(&[
        ("client-ca-file", &ssl(prefix, "kube-ca.pem")),
        ("cloud-provider", &cloud_flag),
        ("cluster-dns", &kubelet.cluster_dns_server),
        ("cluster-domain", &kubelet.cluster_domain),
        ("fail-swap-on", &kubelet.fail_swap_on.to_string()),
        ("hostname-override", &host.hostname),
        ("kubeconfig", &ssl(prefix, "kubecfg-kube-node.yaml")),
        (
            "pod-infra-container-image",
            &cfg.system_images.windows_pod_infra_container,
        ),
        ("root-dir", &join_path(&[prefix, "/var/lib/kubelet"])),
        // The RKE1 Windows entrypoint always added the node IP (the container's own address
        // would be wrong on the host).
        ("node-ip", &host.internal_address),
    ]);
    if has_cloud {
        args.insert(
            "cloud-config".into(),
            join_path(&[prefix, "/etc/kubernetes/cloud-config"]),
        );
    }
    if kubelet.generate_serving_certificate {
        // RKE1 leaves these two unprefixed on Windows; we prefix them like every other path.
        let name = cert_name_for_host(&host.address, &host.internal_address, "kube-kubelet");
        args.insert("tls-cert-file".into(), ssl(prefix, &format!("{name}.pem")));
        args.insert(
            "tls-private-key-file".into(),
            ssl(prefix, &format!("{name}-key.pem")),
        );
    }
    apply_service_options(&mut args, &options.kubelet, Some(prefix));
    apply_extra_args(
        &mut args,
        pick_map(&kubelet.win_extra_args, &kubelet.extra_args),
    );
    if let Some(ip) = cfg
        .dns
        .as_ref()
        .and_then(|d| d.nodelocal.as_ref())
        .map(|n| n.ip_address.as_str())
        .filter(|ip| !ip.is_empty())
    {
        args.insert("cluster-dns".into(), ip.to_string());
    }
    let rendered = render_flags(
        &args,
        pick_map(&kubelet.win_extra_args_array, &kubelet.extra_args_array),
    );
    let args = checked(host, "kubelet", rendered)?;
    Ok(WinsProcess {
        container: KUBELET.into(),
        image_path: r"c:\etc\kubernetes\bin\kubelet.exe".into(),
        host_view_path: r"c:\host\etc\kubernetes\bin\kubelet.exe".into(),
        path: win(&join_path(&[prefix, "/etc/kubernetes/bin/kubelet.exe"])),
        args,
        source_vip_from_network: None,
        exposes: vec![Expose {
            protocol: ExposeProtocol::Tcp,
            port: 10250,
        }],
        envs: Vec::new(),
    })
}

fn kube_proxy_process(
    input: &PlanInput,
    host: &Host,
    prefix: &str,
    options: &crate::plan::ServiceOptions,
    has_cloud: bool,
) -> Result<WinsProcess, PlanError> {
    let cfg = input.config;
    let proxy = &cfg.services.kubeproxy;
    let mut args = map(&[
        ("cluster-cidr", &cfg.services.kube_controller.cluster_cidr),
        ("hostname-override", &host.hostname),
        ("kubeconfig", &ssl(prefix, "kubecfg-kube-proxy.yaml")),
        ("network-name", OVERLAY_NETWORK_NAME),
    ]);
    apply_service_options(&mut args, &options.kubeproxy, None);
    if has_cloud {
        args.insert("bind-address".into(), host.internal_address.clone());
    }
    apply_extra_args(
        &mut args,
        pick_map(&proxy.win_extra_args, &proxy.extra_args),
    );
    let rendered = render_flags(
        &args,
        pick_map(&proxy.win_extra_args_array, &proxy.extra_args_array),
    );
    let args = checked(host, "kube-proxy", rendered)?;
    Ok(WinsProcess {
        container: KUBE_PROXY.into(),
        image_path: r"c:\etc\kubernetes\bin\kube-proxy.exe".into(),
        host_view_path: r"c:\host\etc\kubernetes\bin\kube-proxy.exe".into(),
        path: win(&join_path(&[prefix, "/etc/kubernetes/bin/kube-proxy.exe"])),
        args,
        source_vip_from_network: Some(OVERLAY_NETWORK_NAME.into()),
        exposes: vec![Expose {
            protocol: ExposeProtocol::Tcp,
            port: 10256,
        }],
        envs: Vec::new(),
    })
}

fn flanneld_process(host: &Host, prefix: &str) -> Result<WinsProcess, PlanError> {
    let args = vec![
        format!(
            "--kubeconfig-file={}",
            win(&ssl(prefix, "kubecfg-kube-node.yaml"))
        ),
        "--ip-masq".into(),
        "--kube-subnet-mgr".into(),
        "--iptables-forward-rules=false".into(),
        format!(
            "--net-config-path={}",
            win(&join_path(&[prefix, "/etc/kube-flannel/net-conf.json"]))
        ),
        format!("--iface={}", host.internal_address),
    ];
    let envs = vec![format!("NODE_NAME={}", host.hostname)];
    Ok(WinsProcess {
        container: SERVICE_SIDEKICK.into(),
        image_path: r"c:\opt\bin\flanneld.exe".into(),
        host_view_path: r"c:\host\opt\bin\flanneld.exe".into(),
        path: win(&join_path(&[prefix, "/opt/bin/flanneld.exe"])),
        args: checked(host, "flanneld", args)?,
        source_vip_from_network: None,
        exposes: vec![Expose {
            protocol: ExposeProtocol::Udp,
            port: WINDOWS_VXLAN_PORT,
        }],
        envs: checked(host, "flanneld env", envs)?,
    })
}

pub(super) fn nginx_process() -> WinsProcess {
    WinsProcess {
        container: NGINX_PROXY.into(),
        image_path: r"c:\etc\nginx\nginx.exe".into(),
        host_view_path: r"c:\host\etc\nginx\nginx.exe".into(),
        // nginx reads conf\nginx.conf relative to its working directory, wins' default (the
        // executable's directory, c:\etc\nginx).
        path: r"c:\etc\nginx\nginx.exe".into(),
        args: Vec::new(),
        source_vip_from_network: None,
        exposes: Vec::new(),
        envs: Vec::new(),
    }
}

/// The sidekick stages the CNI plugins kubelet calls, then runs flanneld (which creates the HNS
/// network) for as long as the container lives, as RKE1's sidekick did.
fn sidekick_script(flanneld: &WinsProcess) -> String {
    let mut script = String::from(SCRIPT_PREAMBLE);
    for plugin in CNI_PLUGINS {
        script.push_str(&stage_file(
            &format!(r"c:\opt\cni\bin\{plugin}"),
            &format!(r"c:\host\opt\cni\bin\{plugin}"),
        ));
    }
    let flanneld_script = flanneld.launcher_script();
    script.push_str(
        flanneld_script
            .strip_prefix(SCRIPT_PREAMBLE)
            .unwrap_or(&flanneld_script),
    );
    script
}
