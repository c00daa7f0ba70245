//! Container specs of every long-running RKE1 component (§14) and the per-host assembly.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use indexmap::IndexMap;

use super::files::{
    admission_configuration_yaml, audit_policy_yaml, cloud_config_file, kubelet_docker_config,
    md5_hex,
};
use super::flags::{apply_extra_args, apply_service_options, map, render_flags};
use super::util::{at_least, image_tag, join_path, parse_version, remove_z_from_binds, uniq};
use super::*;
use crate::config::types::RkeConfig;
use crate::config::url_host;

const SSL: &str = "/etc/kubernetes/ssl/";
const CLOUD_CONFIG_PATH: &str = "/etc/kubernetes/cloud-config";
/// The files RKE1's file deployer writes on a host with `controlplane` or not, besides the
/// cloud config: when one is no longer configured, RKE1 deploys it empty, which deletes it (§13).
pub fn optional_files(controlplane: bool) -> &'static [&'static str] {
    if controlplane {
        &[
            AUTHN_WEBHOOK_PATH,
            ENCRYPTION_PATH,
            ADMISSION_PATH,
            AUDIT_POLICY_PATH,
        ]
    } else {
        &[AUTHN_WEBHOOK_PATH]
    }
}

const AUTHN_WEBHOOK_PATH: &str = "/etc/kubernetes/kube-api-authn-webhook.yaml";
const ENCRYPTION_PATH: &str = "/etc/kubernetes/ssl/encryption.yaml";
const ADMISSION_PATH: &str = "/etc/kubernetes/admission.yaml";
const AUDIT_POLICY_PATH: &str = "/etc/kubernetes/audit-policy.yaml";
const ETCD_DATA_DIR: &str = "/var/lib/rancher/etcd/";
const ETCD_SNAPSHOT_PATH: &str = "/opt/rke/etcd-snapshots/";
const TOOLS_ENTRYPOINT: &str = "/opt/rke-tools/entrypoint.sh";
const LEGACY_TOOLS_ENTRYPOINT: &str = "/opt/rke/entrypoint.sh";
const MCS_LABEL: &str = "label=level:s0:c1000,c1001";
const SELINUX_LABEL: &str = "label=type:rke_container_t";
const CONTROLPLANE_TAINT: &str = "node-role.kubernetes.io/controlplane=true:NoSchedule";

const CLOUD_CONFIG_SUM_ENV: &str = "RKE_CLOUD_CONFIG_CHECKSUM";
const ADMISSION_SUM_ENV: &str = "RKE_ADMISSION_CONFIG_CHECKSUM";
const AUDIT_SUM_ENV: &str = "RKE_AUDITLOG_CONFIG_CHECKSUM";

fn cert(name: &str) -> String {
    format!("{SSL}{name}.pem")
}
fn key(name: &str) -> String {
    format!("{SSL}{name}-key.pem")
}
fn kubeconfig(name: &str) -> String {
    format!("{SSL}kubecfg-{name}.yaml")
}
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// One host of the cluster with its roles.
#[derive(Clone, Debug)]
pub struct Host {
    pub address: String,
    pub internal_address: String,
    pub hostname: String,
    pub roles: Roles,
}

/// The cluster-wide values every host plan uses, computed once.
pub struct ClusterView<'a> {
    input: &'a PlanInput<'a>,
    cfg: &'a RkeConfig,
    pub hosts: Vec<Host>,
    etcd_hosts: Vec<Host>,
    cp_hosts: Vec<Host>,
    worker_hosts: Vec<Host>,
    /// Effective cloud provider name and cloud-config text.
    cloud: Option<(String, String)>,
    admission_yaml: Option<String>,
    audit_yaml: Option<String>,
    k8s_122: bool,
}

impl<'a> ClusterView<'a> {
    pub fn new(input: &'a PlanInput<'a>) -> Result<Self, PlanError> {
        let cfg = input.config;
        let mut hosts: Vec<Host> = Vec::new();
        for node in &cfg.nodes {
            let internal = if node.internal_address.is_empty() {
                node.address.clone()
            } else {
                node.internal_address.clone()
            };
            let hostname = if node.hostname_override.is_empty() {
                node.address.to_lowercase()
            } else {
                node.hostname_override.clone()
            };
            let host = match hosts.iter_mut().find(|h| h.address == node.address) {
                Some(existing) => existing,
                None => {
                    hosts.push(Host {
                        address: node.address.clone(),
                        internal_address: internal,
                        hostname,
                        roles: Roles::default(),
                    });
                    hosts.last_mut().expect("just pushed")
                }
            };
            for role in &node.role {
                match role.as_str() {
                    "etcd" => host.roles.etcd = true,
                    "controlplane" => host.roles.controlplane = true,
                    "worker" => host.roles.worker = true,
                    other => {
                        return Err(PlanError::Host {
                            host: node.address.clone(),
                            cause: format!("unknown role [{other}]"),
                        });
                    }
                }
            }
        }
        let filter = |f: fn(&Roles) -> bool| -> Vec<Host> {
            hosts.iter().filter(|h| f(&h.roles)).cloned().collect()
        };
        let etcd_hosts = filter(|r| r.etcd);
        let cp_hosts = filter(|r| r.controlplane);
        let worker_hosts = filter(|r| r.worker);

        let kube_api = &cfg.services.kube_api;
        let version = cfg.kubernetes_version.as_str();
        let admission_yaml = (!kube_api
            .extra_args
            .contains_key("admission-control-config-file"))
        .then(|| admission_configuration_yaml(kube_api, version));
        let audit_yaml =
            kube_api.audit_log.as_ref().filter(|a| a.enabled).map(|a| {
                audit_policy_yaml(a.configuration.as_ref().and_then(|c| c.policy.as_ref()))
            });

        Ok(ClusterView {
            input,
            cfg,
            hosts,
            etcd_hosts,
            cp_hosts,
            worker_hosts,
            cloud: cloud_config_file(&cfg.cloud_provider)?,
            admission_yaml,
            audit_yaml,
            k8s_122: at_least(version, 1, 22),
        })
    }

    fn cloud_name(&self) -> &str {
        self.cloud.as_ref().map_or("", |(name, _)| name.as_str())
    }

    /// `cloud-provider` flag value: `external-aws` is passed to Kubernetes as `external`.
    fn cloud_provider_flag(&self) -> String {
        match self.cloud_name() {
            "external-aws" => "external".into(),
            other => other.into(),
        }
    }

    fn cloud_checksum_env(&self) -> Option<String> {
        self.cloud
            .as_ref()
            .map(|(_, text)| format!("{CLOUD_CONFIG_SUM_ENV}={}", md5_hex(text)))
    }

    fn uses_instance_metadata_hostname(&self) -> bool {
        self.cfg.cloud_provider.use_instance_metadata_hostname == Some(true)
    }

    fn encryption(&self) -> Option<&str> {
        self.input.encryption_config.filter(|t| !t.is_empty())
    }

    fn tools_entrypoint(&self, component: &str) -> Vec<String> {
        let sidecar = &self.cfg.system_images.kubernetes_services_sidecar;
        // RKE1 takes the text after the last `:` of the image as its version.
        let last = sidecar.rsplit(':').next().unwrap_or("");
        let legacy = parse_version(last).is_some_and(|v| v < semver::Version::new(0, 1, 13));
        let wrapper = if legacy {
            LEGACY_TOOLS_ENTRYPOINT
        } else {
            TOOLS_ENTRYPOINT
        };
        strings(&[wrapper, component])
    }

    fn image_or_default(&self, service_image: &str) -> String {
        if service_image.is_empty() {
            self.cfg.system_images.kubernetes.clone()
        } else {
            service_image.to_string()
        }
    }

    /// Security options RKE1 adds when Docker runs with SELinux (`GetProcessConfig`).
    fn security_opts(&self, spec: &ContainerSpec, facts: &HostFacts) -> Vec<String> {
        if spec.privileged || !facts.selinux_enabled {
            return Vec::new();
        }
        let mut opts = Vec::new();
        let uses_sidekick = spec.volumes_from.iter().any(|v| v == SERVICE_SIDEKICK);
        let is_sidekick =
            spec.labels.get(CONTAINER_NAME_LABEL).map(String::as_str) == Some(SERVICE_SIDEKICK);
        if uses_sidekick || is_sidekick {
            opts.push(MCS_LABEL.to_string());
        }
        if self.k8s_122 {
            opts.push(SELINUX_LABEL.to_string());
        }
        opts
    }

    fn finish(&self, mut spec: ContainerSpec, facts: &HostFacts) -> ContainerSpec {
        spec.security_opt = self.security_opts(&spec, facts);
        spec
    }

    fn labelled(name: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(CONTAINER_NAME_LABEL.to_string(), name.to_string())])
    }

    fn strip_z_if_122(&self, binds: Vec<String>) -> Vec<String> {
        if self.k8s_122 {
            remove_z_from_binds(&binds)
        } else {
            binds
        }
    }

    pub fn linux_host_plan(&self, host: &Host, facts: &HostFacts) -> Result<HostPlan, PlanError> {
        let prefix = host_prefix_path(&self.cfg.prefix_path, &facts.operating_system);
        let mut containers = IndexMap::new();
        let mut add = |spec: ContainerSpec| {
            containers.insert(spec.name.clone(), spec);
        };
        if host.roles.etcd {
            add(self.etcd(host, facts, &prefix));
            if self.cfg.services.etcd.snapshot == Some(true) {
                add(self.etcd_rolling_snapshots(host, facts, &prefix));
            }
        }
        if host.roles.controlplane {
            add(self.sidekick(facts));
            add(self.kube_apiserver(host, facts, &prefix));
            add(self.kube_controller_manager(facts, &prefix));
            add(self.kube_scheduler(facts, &prefix));
        } else {
            add(self.nginx_proxy(facts));
            add(self.sidekick(facts));
        }
        add(self.kubelet(host, facts, &prefix));
        add(self.kube_proxy(host, facts, &prefix));

        let mut port_checks = Vec::new();
        let mut ports = |list: &[u16]| {
            for port in list {
                port_checks.push(PortCheck {
                    address: host.address.clone(),
                    port: *port,
                    protocol: "TCP".into(),
                });
            }
        };
        ports(&[10250]);
        if host.roles.controlplane {
            ports(&[6443]);
        }
        if host.roles.etcd {
            ports(&[2379, 2380]);
        }

        Ok(HostPlan {
            address: host.address.clone(),
            internal_address: host.internal_address.clone(),
            hostname: host.hostname.clone(),
            roles: host.roles.clone(),
            files: self.files(host, &prefix),
            certificate_names: self.certificate_names(host),
            prefix_path: prefix,
            containers,
            port_checks,
        })
    }

    fn files(&self, host: &Host, prefix: &str) -> Vec<FileSpec> {
        let file =
            |container_path: &str, contents: &str, checksum: Option<&str>, remove| FileSpec {
                path: join_path(&[prefix, container_path]),
                container_path: container_path.to_string(),
                contents: contents.to_string(),
                mode: 0o600,
                checksum_env: checksum.map(String::from),
                remove_when_empty: remove,
            };
        let mut files = Vec::new();
        if let Some((_, text)) = &self.cloud {
            files.push(file(
                CLOUD_CONFIG_PATH,
                text,
                Some(CLOUD_CONFIG_SUM_ENV),
                false,
            ));
        }
        if let Some(webhook) = &self.cfg.authentication.webhook {
            files.push(file(AUTHN_WEBHOOK_PATH, &webhook.config_file, None, true));
        }
        if host.roles.controlplane {
            if let Some(text) = self.encryption() {
                files.push(file(ENCRYPTION_PATH, text, None, true));
            }
            if let Some(text) = &self.admission_yaml {
                files.push(file(ADMISSION_PATH, text, Some(ADMISSION_SUM_ENV), true));
            }
            let user_policy = self
                .cfg
                .services
                .kube_api
                .extra_args
                .contains_key("audit-policy-file");
            if let (Some(text), false) = (&self.audit_yaml, user_policy) {
                files.push(file(AUDIT_POLICY_PATH, text, Some(AUDIT_SUM_ENV), true));
            }
        }
        files
    }

    /// Certificate bundles the host receives (§11.1 `getCertKeys`).
    fn certificate_names(&self, host: &Host) -> Vec<String> {
        let mut names = strings(&["kube-ca", "kube-proxy", "kube-node"]);
        if self.cfg.services.kubelet.generate_serving_certificate {
            for h in &self.hosts {
                names.push(cert_name_for_host(
                    &h.address,
                    &h.internal_address,
                    "kube-kubelet",
                ));
            }
        }
        if host.roles.etcd {
            for h in &self.etcd_hosts {
                names.push(cert_name_for_host(
                    &h.address,
                    &h.internal_address,
                    "kube-etcd",
                ));
            }
        }
        if host.roles.controlplane {
            names.extend(strings(&[
                "kube-apiserver",
                "kube-service-account-token",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-apiserver-requestheader-ca",
                "kube-apiserver-proxy-client",
            ]));
            if !self.cfg.services.etcd.external_urls.is_empty() {
                names.extend(strings(&["kube-etcd-client", "kube-etcd-client-ca"]));
            }
        }
        uniq(names)
    }

    /// §10 step 2, in RKE1's order.
    pub fn port_check_matrix(&self) -> Vec<PortCheckSet> {
        let internal = |hosts: &[Host]| -> Vec<String> {
            hosts.iter().map(|h| h.internal_address.clone()).collect()
        };
        let mut out = Vec::new();
        let mut rows = |description: &str, sources: &[Host], targets: &[Host], ports: &[u16]| {
            for source in sources {
                out.push(PortCheckSet {
                    description: description.to_string(),
                    source: source.address.clone(),
                    targets: internal(targets),
                    ports: ports.to_vec(),
                });
            }
        };
        if self.etcd_hosts.len() > 1 {
            rows(
                "etcd <-> etcd",
                &self.etcd_hosts,
                &self.etcd_hosts,
                &[2379, 2380],
            );
        }
        rows(
            "control plane -> etcd",
            &self.cp_hosts,
            &self.etcd_hosts,
            &[2379],
        );
        rows(
            "control plane -> worker",
            &self.cp_hosts,
            &self.worker_hosts,
            &[10250],
        );
        rows(
            "worker -> control plane",
            &self.worker_hosts,
            &self.cp_hosts,
            &[6443],
        );
        out
    }

    fn etcd(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let etcd = &self.cfg.services.etcd;
        let node_cert = cert_name_for_host(&host.address, &host.internal_address, "kube-etcd");
        let members: Vec<&Host> = match &self.input.etcd.ready_hosts {
            Some(ready) if !ready.is_empty() => ready
                .iter()
                .filter_map(|a| self.etcd_hosts.iter().find(|h| &h.address == a))
                .collect(),
            _ => self.etcd_hosts.iter().collect(),
        };
        let initial_cluster = members
            .iter()
            .map(|h| {
                format!(
                    "etcd-{}=https://{}:2380",
                    h.hostname,
                    url_host(&h.internal_address)
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let state = if self.input.etcd.existing.contains(&host.address) {
            "existing"
        } else {
            "new"
        };
        let listen = if host.address == host.internal_address {
            "0.0.0.0"
        } else {
            host.internal_address.as_str()
        };
        let listen = url_host(listen);
        let internal = url_host(&host.internal_address);
        let mut args = map(&[
            ("name", &format!("etcd-{}", host.hostname)),
            ("data-dir", ETCD_DATA_DIR),
            ("listen-client-urls", &format!("https://{listen}:2379")),
            (
                "initial-advertise-peer-urls",
                &format!("https://{internal}:2380"),
            ),
            ("listen-peer-urls", &format!("https://{listen}:2380")),
            ("initial-cluster-token", "etcd-cluster-1"),
            ("initial-cluster", &initial_cluster),
            ("initial-cluster-state", state),
            ("trusted-ca-file", &cert("kube-ca")),
            ("peer-trusted-ca-file", &cert("kube-ca")),
            ("cert-file", &cert(&node_cert)),
            ("key-file", &key(&node_cert)),
            ("peer-cert-file", &cert(&node_cert)),
            ("peer-key-file", &key(&node_cert)),
        ]);
        let etcd_version = image_tag(&etcd.image).and_then(parse_version);
        let older_than = |text: &str| {
            let limit = parse_version(text).expect("constant version parses");
            etcd_version.as_ref().is_some_and(|v| *v < limit)
        };
        let client_urls = if older_than("3.4.3-rancher99") {
            format!("https://{internal}:2379,https://{internal}:4001")
        } else {
            format!("https://{internal}:2379")
        };
        args.insert("advertise-client-urls".into(), client_urls);
        if !older_than("3.4.14-rancher99") {
            args.insert(
                "cipher-suites".into(),
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
                    .into(),
            );
        }
        let binds = self.strip_z_if_122(vec![
            format!(
                "{}:{ETCD_DATA_DIR}:z",
                join_path(&[prefix, "/var/lib/etcd"])
            ),
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
        ]);
        apply_service_options(&mut args, &self.input.service_options.etcd, None);
        apply_extra_args(&mut args, &etcd.extra_args);

        let mut cmd = strings(&["/usr/local/bin/etcd"]);
        // Older KDM sets did not carry these; RKE1 then adds the bare flags.
        if !args.contains_key("client-cert-auth") {
            cmd.push("--client-cert-auth".into());
        }
        if !args.contains_key("peer-client-cert-auth") {
            cmd.push("--peer-client-cert-auth".into());
        }
        cmd.extend(render_flags(&args, &etcd.extra_args_array));

        let mut env = vec![
            "ETCDCTL_API=3".to_string(),
            format!("ETCDCTL_CACERT={}", cert("kube-ca")),
            format!("ETCDCTL_CERT={}", cert(&node_cert)),
            format!("ETCDCTL_KEY={}", key(&node_cert)),
        ];
        if older_than("3.2.99") {
            env.push(format!("ETCDCTL_ENDPOINT=https://{listen}:2379"));
        } else if listen == "0.0.0.0" {
            env.push("ETCDCTL_ENDPOINTS=https://127.0.0.1:2379".into());
        } else {
            env.push(format!("ETCDCTL_ENDPOINTS=https://{listen}:2379"));
        }
        let arch = if facts.arch == "aarch64" {
            "arm64"
        } else {
            facts.arch.as_str()
        };
        env.push(format!("ETCD_UNSUPPORTED_ARCH={arch}"));
        env.extend(etcd.extra_env.iter().cloned());

        let mut all_binds = binds;
        all_binds.extend(etcd.extra_binds.iter().cloned());
        // §33.2: RKE1 writes `<uid>:<uid>`; the gid is what the data files are chowned to, and
        // RKE1's comparison ignores `User`, so the fix restarts nothing.
        let user = (etcd.uid != 0 && etcd.gid != 0).then(|| format!("{}:{}", etcd.uid, etcd.gid));
        self.finish(
            ContainerSpec {
                name: ETCD.into(),
                image: etcd.image.clone(),
                entrypoint: Vec::new(),
                cmd,
                env,
                binds: uniq(all_binds),
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(ETCD),
                user,
                health_check: Some(HealthCheck {
                    url: format!("https://{internal}:2379/health"),
                    client_certificate: Some("kube-node".into()),
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    fn etcd_rolling_snapshots(
        &self,
        host: &Host,
        facts: &HostFacts,
        prefix: &str,
    ) -> ContainerSpec {
        let etcd = &self.cfg.services.etcd;
        let mut cmd = strings(&[
            "/opt/rke-tools/rke-etcd-backup",
            "etcd-backup",
            "save",
            "--cacert",
            &cert("kube-ca"),
            "--cert",
            &cert("kube-node"),
            "--key",
            &key("kube-node"),
            "--name",
            ETCD_ROLLING_SNAPSHOTS,
            &format!("--endpoints={}:2379", url_host(&host.internal_address)),
        ]);
        let mut env = etcd.extra_env.clone();
        match &etcd.backup_config {
            None => {
                cmd.push(format!("--retention={}", etcd.retention));
                cmd.push(format!("--creation={}", etcd.creation));
            }
            Some(backup) => {
                cmd.push(format!("--creation={}h", backup.interval_hours));
                cmd.push(format!(
                    "--retention={}h",
                    backup.retention * backup.interval_hours
                ));
                if let Some(s3) = &backup.s3_backup_config {
                    let (flags, s3_env) = s3_backup_flags(s3);
                    cmd.extend(flags);
                    env.extend(s3_env);
                }
            }
        }
        let binds = self.strip_z_if_122(vec![
            format!("{ETCD_SNAPSHOT_PATH}:/backup:z"),
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
        ]);
        // Not a `GetProcessConfig` container: only the type label, only from 1.22.
        let security_opt = if self.k8s_122 && facts.selinux_enabled {
            vec![SELINUX_LABEL.to_string()]
        } else {
            Vec::new()
        };
        ContainerSpec {
            name: ETCD_ROLLING_SNAPSHOTS.into(),
            image: self.rolling_snapshot_image(),
            cmd,
            env,
            binds,
            network_mode: Some("host".into()),
            restart_policy: Some("always".into()),
            security_opt,
            start: true,
            ..Default::default()
        }
    }

    /// RKE1's `GetDefaultRKETools`: a `rancher/rke-tools` image gets the default version's tag.
    fn rolling_snapshot_image(&self) -> String {
        default_rke_tools(
            &self.cfg.system_images.alpine,
            self.input.default_rke_tools_tag,
        )
    }

    fn kube_apiserver(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
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
            env.push(format!("{ADMISSION_SUM_ENV}={}", md5_hex(text)));
        }
        if let Some(text) = &self.audit_yaml {
            binds.push(format!(
                "{}:/var/log/kube-audit",
                join_path(&[prefix, "/var/log/kube-audit"])
            ));
            env.push(format!("{AUDIT_SUM_ENV}={}", md5_hex(text)));
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

    fn kube_controller_manager(&self, facts: &HostFacts, prefix: &str) -> ContainerSpec {
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

    fn kube_scheduler(&self, facts: &HostFacts, prefix: &str) -> ContainerSpec {
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

    fn kubelet(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
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

    fn kube_proxy(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
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
                env: uniq(proxy.extra_env.clone()),
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

    fn nginx_proxy(&self, facts: &HostFacts) -> ContainerSpec {
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

    fn sidekick(&self, facts: &HostFacts) -> ContainerSpec {
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

/// The S3 flags and environment of an rke-tools backup command (RKE1's `configS3BackupImgCmd`):
/// the keys go base64-encoded through the environment, never on the command line.
pub fn s3_backup_flags(s3: &crate::config::S3BackupConfig) -> (Vec<String>, Vec<String>) {
    let mut flags = vec![
        "--s3-backup=true".to_string(),
        format!("--s3-endpoint={}", s3.endpoint),
        format!("--s3-bucketName={}", s3.bucket_name),
        format!("--s3-region={}", s3.region),
    ];
    let mut env = Vec::new();
    if !s3.access_key.is_empty() || !s3.secret_key.is_empty() {
        env.push(format!("S3_ACCESS_KEY={}", STANDARD.encode(&s3.access_key)));
        env.push(format!("S3_SECRET_KEY={}", STANDARD.encode(&s3.secret_key)));
    }
    if !s3.custom_ca.is_empty() {
        flags.push(format!(
            "--s3-endpoint-ca={}",
            STANDARD.encode(&s3.custom_ca)
        ));
    }
    if !s3.folder.is_empty() {
        flags.push(format!("--s3-folder={}", s3.folder));
    }
    (flags, env)
}

/// RKE1's `GetDefaultRKETools`: a `rancher/rke-tools` `alpine` image gets `default_tag`.
pub fn default_rke_tools(alpine: &str, default_tag: Option<&str>) -> String {
    match (image_tag(alpine), default_tag) {
        (Some(tag), Some(default_tag)) if alpine.contains("rancher/rke-tools") => {
            alpine.replacen(tag, default_tag, 1)
        }
        _ => alpine.to_string(),
    }
}
