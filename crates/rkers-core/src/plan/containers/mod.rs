//! Container specs of every long-running RKE1 component (§14) and the per-host assembly. This
//! root owns the cluster-wide view every spec reads ([`ClusterView`]), the host paths and labels
//! the components share, and the helpers that finish a spec; each component family has its
//! own file.

use std::collections::BTreeMap;

use super::files::{
    admission_configuration_yaml, audit_policy_yaml, cloud_config_file, config_checksum,
};
use super::util::{at_least, parse_version, remove_z_from_binds};
use super::*;
use crate::config::types::RkeConfig;

mod control_plane;
mod etcd;
mod host_plan;
mod node;

pub use etcd::{default_rke_tools, s3_backup_flags};
pub(crate) use node::br_netfilter_env;

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
        self.cloud.as_ref().map(|(_, text)| {
            format!(
                "{CLOUD_CONFIG_SUM_ENV}={}",
                config_checksum(text, &self.cfg.kubernetes_version)
            )
        })
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
}
