//! The control plane: kube-apiserver, kube-controller-manager and kube-scheduler, with the
//! etcd connection string and the version quirks they share.

use std::collections::BTreeMap;

use super::*;
use crate::config::url_host;
use crate::plan::files::config_checksum;
use crate::plan::flags::{apply_extra_args, apply_service_options, map, render_flags};
use crate::plan::util::{at_least, image_tag, join_path, parse_version, uniq};

impl<'a> ClusterView<'a> {
    pub(super) fn kube_apiserver(
        &self,
        host: &Host,
        facts: &HostFacts,
        prefix: &str,
    ) -> ContainerSpec {
        let api = &self.cfg.services.kube_api;
        let etcd = &self.cfg.services.etcd;
        let external_etcd = !etcd.external_urls.is_empty();
        let (etcd_servers, etcd_prefix, etcd_cert, etcd_key, etcd_ca) = if external_etcd {
            (
                etcd.external_urls.join(","),
                etcd.path.clone(),
                cert("kube-etcd-client"),
                key("kube-etcd-client"),
                cert("kube-etcd-client-ca"),
            )
        } else {
            (
                self.etcd_connection_string(&host.internal_address),
                "/registry".to_string(),
                cert("kube-node"),
                key("kube-node"),
                cert("kube-ca"),
            )
        };
        let mut args = map(&[
            ("admission-control-config-file", ADMISSION_PATH),
            ("client-ca-file", &cert("kube-ca")),
            ("cloud-provider", &self.cloud_provider_flag()),
            ("etcd-cafile", &etcd_ca),
            ("etcd-certfile", &etcd_cert),
            ("etcd-keyfile", &etcd_key),
            ("etcd-prefix", &etcd_prefix),
            ("etcd-servers", &etcd_servers),
            ("kubelet-client-certificate", &cert("kube-apiserver")),
            ("kubelet-client-key", &key("kube-apiserver")),
            (
                "proxy-client-cert-file",
                &cert("kube-apiserver-proxy-client"),
            ),
            ("proxy-client-key-file", &key("kube-apiserver-proxy-client")),
            ("requestheader-allowed-names", "kube-apiserver-proxy-client"),
            (
                "requestheader-client-ca-file",
                &cert("kube-apiserver-requestheader-ca"),
            ),
            (
                "service-account-key-file",
                &key("kube-service-account-token"),
            ),
            ("service-cluster-ip-range", &api.service_cluster_ip_range),
            ("service-node-port-range", &api.service_node_port_range),
            ("tls-cert-file", &cert("kube-apiserver")),
            ("tls-private-key-file", &key("kube-apiserver")),
        ]);
        let mut env = Vec::new();
        if self.cloud.is_some() {
            args.insert("cloud-config".into(), CLOUD_CONFIG_PATH.into());
        }
        if let Some(webhook) = &self.cfg.authentication.webhook {
            args.insert(
                "authentication-token-webhook-config-file".into(),
                AUTHN_WEBHOOK_PATH.into(),
            );
            args.insert(
                "authentication-token-webhook-cache-ttl".into(),
                webhook.cache_timeout.clone(),
            );
        }
        env.extend(self.cloud_checksum_env());
        if self.encryption().is_some() {
            args.insert("encryption-provider-config".into(), ENCRYPTION_PATH.into());
        }
        if self.cfg.services.kubelet.generate_serving_certificate {
            args.insert("kubelet-certificate-authority".into(), cert("kube-ca"));
        }
        apply_service_options(&mut args, &self.input.service_options.kube_api, None);
        if self.cfg.kubernetes_version.starts_with("v1.8.") {
            args.insert("apiserver-count".into(), self.cp_hosts.len().to_string());
        }
        if self.cfg.authorization.mode == "rbac" {
            args.insert("authorization-mode".into(), "Node,RBAC".into());
        }
        if host.internal_address.parse::<std::net::IpAddr>().is_ok() {
            args.insert("advertise-address".into(), host.internal_address.clone());
        }
        // RKE1 appends to whichever admission flag is present; with neither it writes the flag
        // with an empty name, reproduced here as upstream does.
        let admission_flag = ["enable-admission-plugins", "admission-control"]
            .into_iter()
            .find(|f| args.contains_key(*f))
            .unwrap_or("")
            .to_string();
        let mut append_plugin = |plugin: &str| {
            let current = args.get(&admission_flag).cloned().unwrap_or_default();
            args.insert(admission_flag.clone(), format!("{current},{plugin}"));
        };
        if api.always_pull_images {
            append_plugin("AlwaysPullImages");
        }
        if api.event_rate_limit.as_ref().is_some_and(|e| e.enabled) {
            append_plugin("EventRateLimit");
        }
        let audit = api.audit_log.as_ref();
        // Upstream sets the flags whenever a configuration exists, enabled or not.
        if let Some(conf) = audit.and_then(|a| a.configuration.as_ref()) {
            args.insert("audit-log-path".into(), conf.path.clone());
            args.insert("audit-log-maxage".into(), conf.max_age.to_string());
            args.insert("audit-log-maxbackup".into(), conf.max_backup.to_string());
            args.insert("audit-log-maxsize".into(), conf.max_size.to_string());
            args.insert("audit-log-format".into(), conf.format.clone());
            args.insert("audit-policy-file".into(), AUDIT_POLICY_PATH.into());
        }
        let mut binds = vec![format!(
            "{}:/etc/kubernetes:z",
            join_path(&[prefix, "/etc/kubernetes"])
        )];
        if let Some(text) = &self.admission_yaml {
            env.push(format!(
                "{ADMISSION_SUM_ENV}={}",
                config_checksum(text, &self.cfg.kubernetes_version)
            ));
        }
        if let Some(text) = &self.audit_yaml {
            binds.push(format!(
                "{}:/var/log/kube-audit",
                join_path(&[prefix, "/var/log/kube-audit"])
            ));
            env.push(format!(
                "{AUDIT_SUM_ENV}={}",
                config_checksum(text, &self.cfg.kubernetes_version)
            ));
        }
        let mut binds = self.strip_z_if_122(binds);
        apply_extra_args(&mut args, &api.extra_args);
        let mut entrypoint = self.tools_entrypoint(KUBE_APISERVER);
        entrypoint.extend(render_flags(&args, &api.extra_args_array));
        binds.extend(api.extra_binds.iter().cloned());
        env.extend(api.extra_env.iter().cloned());
        self.finish(
            ContainerSpec {
                name: KUBE_APISERVER.into(),
                image: self.image_or_default(&api.image),
                entrypoint,
                env: uniq(env),
                binds: uniq(binds),
                volumes_from: strings(&[SERVICE_SIDEKICK]),
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(KUBE_APISERVER),
                health_check: Some(HealthCheck {
                    url: "https://localhost:6443/healthz".into(),
                    client_certificate: Some("kube-apiserver".into()),
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    /// `GetEtcdConnString`: this host first when it is an etcd member, then the others in order.
    fn etcd_connection_string(&self, own_internal: &str) -> String {
        let mut urls: Vec<String> = self
            .etcd_hosts
            .iter()
            .filter(|h| h.internal_address != own_internal)
            .map(|h| format!("https://{}:2379", url_host(&h.internal_address)))
            .collect();
        if self
            .etcd_hosts
            .iter()
            .any(|h| h.internal_address == own_internal)
        {
            urls.insert(0, format!("https://{}:2379", url_host(own_internal)));
        }
        urls.join(",")
    }

    /// RKE1's docker-in-docker mode below v1.24 (which removed the flag): the controller
    /// manager and the scheduler listen on every address (`BuildKubeControllerProcess`,
    /// `BuildSchedulerProcess`), before KDM's flags.
    fn dind_address(&self, args: &mut BTreeMap<String, String>) {
        if self.input.dind && !at_least(&self.cfg.kubernetes_version, 1, 24) {
            args.insert("address".into(), "0.0.0.0".into());
        }
    }

    fn k8s_image_older_than(&self, minor_limit: u64) -> bool {
        // RKE1 compares the kubernetes image tag with `v1.<minor>.99-rancher99`.
        image_tag(&self.cfg.system_images.kubernetes)
            .and_then(parse_version)
            .is_some_and(|v| (v.major, v.minor) <= (1, minor_limit))
    }

    pub(super) fn kube_controller_manager(&self, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let kcm = &self.cfg.services.kube_controller;
        let mut args = map(&[
            ("cloud-provider", &self.cloud_provider_flag()),
            ("cluster-cidr", &kcm.cluster_cidr),
            ("kubeconfig", &kubeconfig("kube-controller-manager")),
            ("root-ca-file", &cert("kube-ca")),
            (
                "service-account-private-key-file",
                &key("kube-service-account-token"),
            ),
            ("service-cluster-ip-range", &kcm.service_cluster_ip_range),
        ]);
        self.dind_address(&mut args);
        if self.cloud.is_some() {
            args.insert("cloud-config".into(), CLOUD_CONFIG_PATH.into());
        }
        let mut env = kcm.extra_env.clone();
        env.extend(self.cloud_checksum_env());
        apply_service_options(&mut args, &self.input.service_options.kube_controller, None);
        let cmd = if self.cfg.authorization.mode == "rbac" {
            strings(&["--use-service-account-credentials=true"])
        } else {
            Vec::new()
        };
        let mut binds = vec![format!(
            "{}:/etc/kubernetes:z",
            join_path(&[prefix, "/etc/kubernetes"])
        )];
        if self.k8s_122 {
            binds = remove_z_from_binds(&binds);
            let kc = args.get("kubeconfig").cloned().unwrap_or_default();
            args.insert("authentication-kubeconfig".into(), kc.clone());
            args.insert("authorization-kubeconfig".into(), kc);
        }
        apply_extra_args(&mut args, &kcm.extra_args);
        let mut entrypoint = self.tools_entrypoint(KUBE_CONTROLLER_MANAGER);
        entrypoint.extend(render_flags(&args, &kcm.extra_args_array));
        binds.extend(kcm.extra_binds.iter().cloned());
        let url = if self.k8s_image_older_than(21) {
            "http://localhost:10252/healthz"
        } else {
            "https://localhost:10257/healthz"
        };
        self.finish(
            ContainerSpec {
                name: KUBE_CONTROLLER_MANAGER.into(),
                image: self.image_or_default(&kcm.image),
                entrypoint,
                cmd,
                env: uniq(env),
                binds: uniq(binds),
                volumes_from: strings(&[SERVICE_SIDEKICK]),
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(KUBE_CONTROLLER_MANAGER),
                health_check: Some(HealthCheck {
                    url: url.into(),
                    client_certificate: None,
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    pub(super) fn kube_scheduler(&self, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let scheduler = &self.cfg.services.scheduler;
        let mut args = map(&[("kubeconfig", &kubeconfig("kube-scheduler"))]);
        self.dind_address(&mut args);
        apply_service_options(&mut args, &self.input.service_options.scheduler, None);
        let mut binds = vec![format!(
            "{}:/etc/kubernetes:z",
            join_path(&[prefix, "/etc/kubernetes"])
        )];
        if self.k8s_122 {
            binds = remove_z_from_binds(&binds);
            let kc = args.get("kubeconfig").cloned().unwrap_or_default();
            args.insert("authentication-kubeconfig".into(), kc.clone());
            args.insert("authorization-kubeconfig".into(), kc);
        }
        apply_extra_args(&mut args, &scheduler.extra_args);
        let mut entrypoint = self.tools_entrypoint(KUBE_SCHEDULER);
        entrypoint.extend(render_flags(&args, &scheduler.extra_args_array));
        binds.extend(scheduler.extra_binds.iter().cloned());
        let url = if self.k8s_image_older_than(22) {
            "http://localhost:10251/healthz"
        } else {
            "https://localhost:10259/healthz"
        };
        self.finish(
            ContainerSpec {
                name: KUBE_SCHEDULER.into(),
                image: self.image_or_default(&scheduler.image),
                entrypoint,
                // Upstream passes extra_env through untouched (no de-duplication).
                env: scheduler.extra_env.clone(),
                binds: uniq(binds),
                volumes_from: strings(&[SERVICE_SIDEKICK]),
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(KUBE_SCHEDULER),
                health_check: Some(HealthCheck {
                    url: url.into(),
                    client_certificate: None,
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }
}
