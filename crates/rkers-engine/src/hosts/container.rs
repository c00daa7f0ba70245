//! The desired shape of a container ([`ContainerSpec`], produced by `plan`; rkers-core owns it)
//! and what a host actually runs ([`ObservedContainer`], read back by `inspect`), plus their
//! mapping to and from the Docker API types.

use std::collections::{BTreeMap, HashMap};

use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, HostConfig, HostConfigLogConfig,
    PortBinding as DockerPortBinding, RestartPolicy as DockerRestartPolicy, RestartPolicyNameEnum,
};
pub use rkers_core::container::{ContainerSpec, PortBinding, RestartPolicy};
use serde::{Deserialize, Serialize};

fn none_if_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// The body of `POST /containers/create` for a spec.
pub trait ToCreateBody {
    fn to_create_body(&self) -> ContainerCreateBody;
}

impl ToCreateBody for ContainerSpec {
    fn to_create_body(&self) -> ContainerCreateBody {
        let mut exposed = Vec::new();
        let mut port_map: HashMap<String, Option<Vec<DockerPortBinding>>> = HashMap::new();
        for p in &self.ports {
            let key = format!("{}/{}", p.container_port, p.protocol);
            if !exposed.contains(&key) {
                exposed.push(key.clone());
            }
            port_map
                .entry(key)
                .or_insert_with(|| Some(Vec::new()))
                .get_or_insert_with(Vec::new)
                .push(DockerPortBinding {
                    host_ip: Some(p.host_ip.clone()),
                    host_port: Some(p.host_port.to_string()),
                });
        }
        let host_config = HostConfig {
            binds: none_if_empty(self.binds.clone()),
            network_mode: self.network_mode.clone(),
            pid_mode: self.pid_mode.clone(),
            privileged: Some(self.privileged),
            restart_policy: self.restart_policy.map(|r| DockerRestartPolicy {
                name: Some(match r {
                    RestartPolicy::No => RestartPolicyNameEnum::NO,
                    RestartPolicy::Always => RestartPolicyNameEnum::ALWAYS,
                    RestartPolicy::UnlessStopped => RestartPolicyNameEnum::UNLESS_STOPPED,
                    RestartPolicy::OnFailure => RestartPolicyNameEnum::ON_FAILURE,
                }),
                maximum_retry_count: None,
            }),
            volumes_from: none_if_empty(self.volumes_from.clone()),
            security_opt: none_if_empty(self.security_opt.clone()),
            port_bindings: (!port_map.is_empty()).then_some(port_map),
            log_config: self.log_driver.as_ref().map(|d| HostConfigLogConfig {
                typ: Some(d.clone()),
                config: (!self.log_opts.is_empty())
                    .then(|| self.log_opts.clone().into_iter().collect()),
            }),
            ..Default::default()
        };
        ContainerCreateBody {
            image: Some(self.image.clone()),
            entrypoint: none_if_empty(self.entrypoint.clone()),
            cmd: none_if_empty(self.cmd.clone()),
            env: none_if_empty(self.env.clone()),
            labels: (!self.labels.is_empty()).then(|| self.labels.clone().into_iter().collect()),
            user: self.user.clone(),
            tty: Some(self.tty),
            exposed_ports: none_if_empty(exposed),
            host_config: Some(host_config),
            ..Default::default()
        }
    }
}

/// What a host runs under a container name, as far as rkers compares it (spec §22.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedContainer {
    pub id: String,
    pub name: String,
    pub running: bool,
    pub restarting: bool,
    /// Docker's state string: created, running, exited, ...
    pub status: String,
    pub exit_code: Option<i64>,
    /// How often Docker's restart policy restarted it since it was last started by hand.
    #[serde(default)]
    pub restart_count: i64,
    /// When it last started (RFC 3339, as Docker reports it).
    #[serde(default)]
    pub started_at: Option<String>,
    /// When it was created (RFC 3339, as Docker reports it).
    #[serde(default)]
    pub created_at: Option<String>,
    /// Image reference from the container's config (as it was requested).
    pub image: String,
    /// Image ID (`sha256:...`).
    pub image_id: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub binds: Vec<String>,
    pub network_mode: Option<String>,
    pub pid_mode: Option<String>,
    pub privileged: bool,
    pub volumes_from: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub security_opt: Vec<String>,
    pub user: Option<String>,
    pub restart_policy: Option<String>,
    /// Where Docker's json-file driver writes the container's log on the host.
    pub log_path: Option<String>,
    /// Every mount as (source on the host, destination in the container): binds, volumes and
    /// those of `volumes_from`.
    #[serde(default)]
    pub mounts: Vec<(String, String)>,
}

impl ObservedContainer {
    pub fn from_inspect(r: ContainerInspectResponse) -> Self {
        let state = r.state.unwrap_or_default();
        let config = r.config.unwrap_or_default();
        let hc = r.host_config.unwrap_or_default();
        ObservedContainer {
            id: r.id.unwrap_or_default(),
            name: r
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_owned(),
            running: state.running.unwrap_or(false),
            restarting: state.restarting.unwrap_or(false),
            status: state.status.map(|s| s.to_string()).unwrap_or_default(),
            exit_code: state.exit_code,
            restart_count: r.restart_count.unwrap_or(0),
            started_at: state
                .started_at
                .filter(|s| !s.is_empty() && !s.starts_with("0001-")),
            created_at: r
                .created
                .filter(|s| !s.is_empty() && !s.starts_with("0001-")),
            image: config.image.unwrap_or_default(),
            image_id: r.image.unwrap_or_default(),
            entrypoint: config.entrypoint.unwrap_or_default(),
            cmd: config.cmd.unwrap_or_default(),
            env: config.env.unwrap_or_default(),
            binds: hc.binds.unwrap_or_default(),
            network_mode: hc.network_mode.filter(|s| !s.is_empty()),
            pid_mode: hc.pid_mode.filter(|s| !s.is_empty()),
            privileged: hc.privileged.unwrap_or(false),
            volumes_from: hc.volumes_from.unwrap_or_default(),
            labels: config.labels.unwrap_or_default().into_iter().collect(),
            security_opt: hc.security_opt.unwrap_or_default(),
            user: config.user.filter(|s| !s.is_empty()),
            restart_policy: hc
                .restart_policy
                .and_then(|p| p.name)
                .map(|n| n.to_string())
                .filter(|s| !s.is_empty()),
            log_path: r.log_path.filter(|s| !s.is_empty()),
            mounts: r
                .mounts
                .unwrap_or_default()
                .into_iter()
                .filter_map(|m| Some((m.source?, m.destination?)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_body_maps_every_field() {
        let spec = ContainerSpec {
            image: "rkers/rke-tools:v1".into(),
            entrypoint: vec!["/bin/sh".into()],
            cmd: vec!["-c".into(), "true".into()],
            env: vec!["A=1".into()],
            binds: vec!["/etc/kubernetes:/etc/kubernetes:z".into()],
            network_mode: Some("host".into()),
            pid_mode: Some("host".into()),
            privileged: true,
            restart_policy: Some(RestartPolicy::Always),
            volumes_from: vec!["service-sidekick".into()],
            labels: [(
                "io.rancher.rke.container.name".to_owned(),
                "kubelet".to_owned(),
            )]
            .into(),
            security_opt: vec!["label=disable".into()],
            user: Some("52034:52034".into()),
            ports: vec![PortBinding::tcp(2379, 1337), PortBinding::tcp(2380, 1337)],
            ..Default::default()
        };
        let body = spec.to_create_body();
        let hc = body.host_config.as_ref().unwrap();
        assert_eq!(body.exposed_ports, Some(vec!["1337/tcp".to_owned()]));
        let bindings = hc.port_bindings.as_ref().unwrap()["1337/tcp"]
            .as_ref()
            .unwrap();
        assert_eq!(bindings.len(), 2);
        assert_eq!(
            hc.restart_policy.as_ref().unwrap().name,
            Some(RestartPolicyNameEnum::ALWAYS)
        );
        assert_eq!(hc.privileged, Some(true));
        assert_eq!(
            body.labels.as_ref().unwrap()["io.rancher.rke.container.name"],
            "kubelet"
        );
        let json = serde_json::to_string(&spec).unwrap();
        let back: ContainerSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
    }
}
