//! Facts about a host read from `docker info` / `docker version`, and the Docker Engine API
//! check of each host against the cluster's container runtime (spec §8.3).

use serde::Serialize;

use super::docker::{DockerClient, DockerTransport, TransportReason};
use super::error::HostError;
use crate::metadata::docker_api::{self, ApiVersion, DockerApiCheck, Engine, RuntimeClient};

/// What rkers needs to know about a host's Docker engine and OS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostFacts {
    /// `linux` or `windows`.
    pub os_type: String,
    /// Distribution name as Docker reports it (drives the prefix path, spec §8.4).
    pub operating_system: String,
    pub kernel: String,
    pub arch: String,
    /// `cgroupfs` or `systemd`.
    pub cgroup_driver: String,
    /// `1` or `2`.
    pub cgroup_version: String,
    pub docker_version: String,
    /// The API version negotiated with this daemon.
    pub api_version: String,
    /// The newest API version the daemon serves (`docker version`'s `ApiVersion`).
    pub engine_api_version: String,
    /// The oldest API version the daemon accepts (`MinAPIVersion`; 1.44 from Docker 29).
    pub engine_min_api_version: String,
    /// Docker runs with SELinux support (`name=selinux` in its security options).
    pub selinux: bool,
    pub docker_root_dir: String,
    /// How Docker is reached on this host, and why that way.
    pub transport: DockerTransport,
    pub transport_reason: TransportReason,
}

impl HostFacts {
    /// Docker reports a Windows engine: the one test of the platform phases rely on (the plan
    /// decides from it what such a host runs, and the executor how its privileged steps run).
    pub fn is_windows(&self) -> bool {
        crate::plan::Platform::of_os_type(&self.os_type) == crate::plan::Platform::Windows
    }

    pub async fn gather(docker: &DockerClient) -> Result<HostFacts, HostError> {
        let info = docker.info().await?;
        let version = docker.version().await?;
        let s = |o: Option<String>| o.unwrap_or_default();
        Ok(HostFacts {
            os_type: s(info.os_type),
            operating_system: s(info.operating_system),
            kernel: s(info.kernel_version),
            arch: s(info.architecture),
            cgroup_driver: info
                .cgroup_driver
                .map(|d| d.to_string())
                .unwrap_or_default(),
            cgroup_version: info
                .cgroup_version
                .map(|d| d.to_string())
                .unwrap_or_default(),
            docker_version: s(info.server_version),
            api_version: docker.api_version().to_owned(),
            engine_api_version: s(version.api_version),
            engine_min_api_version: s(version.min_api_version),
            selinux: info
                .security_options
                .unwrap_or_default()
                .iter()
                .any(|o| o.split(',').any(|kv| kv == "name=selinux")),
            docker_root_dir: s(info.docker_root_dir),
            transport: docker.transport(),
            transport_reason: docker.transport_reason(),
        })
    }
}

impl HostFacts {
    /// The engine as the Docker API check of [`crate::metadata::docker_api`] sees it.
    pub fn engine(&self) -> Engine {
        Engine {
            version: self.docker_version.clone(),
            api_version: ApiVersion::parse(&self.engine_api_version),
            min_api_version: ApiVersion::parse(&self.engine_min_api_version),
            windows: self.is_windows(),
        }
    }
}

/// The API check of one host, as the error `up` and `preflight` refuse the host with when the
/// runtime cannot drive its Docker.
pub fn docker_api_check(
    host: &str,
    facts: &HostFacts,
    runtime: &RuntimeClient,
    ignore_docker_version: bool,
) -> (DockerApiCheck, Option<HostError>) {
    let check = docker_api::check(&facts.engine(), runtime, ignore_docker_version);
    let error = check
        .refused()
        .map(|(reason, remedy)| HostError::UnsupportedDockerVersion {
            host: host.to_owned(),
            reason: reason.to_owned(),
            remedy: remedy.to_owned(),
        });
    (check, error)
}
