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

/// The refusal of a Linux host on cgroup v1 when the cluster's kubelet (`version`) refuses such
/// hosts ([`crate::plan::kubelet_refuses_cgroup_v1`]).
pub fn cgroup_v1_check(
    host: &str,
    facts: &HostFacts,
    refuses: bool,
    version: &str,
) -> Option<HostError> {
    (refuses && !facts.is_windows() && facts.cgroup_version.trim() == "1").then(|| {
        HostError::CgroupV1 {
            host: host.to_owned(),
            version: version.to_owned(),
        }
    })
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

#[cfg(test)]
mod cgroup_v1_tests {
    use super::*;

    fn facts(os_type: &str, cgroup_version: &str) -> HostFacts {
        HostFacts {
            os_type: os_type.into(),
            operating_system: "Debian GNU/Linux 12 (bookworm)".into(),
            kernel: "6.1.0".into(),
            arch: "x86_64".into(),
            cgroup_driver: "cgroupfs".into(),
            cgroup_version: cgroup_version.into(),
            docker_version: "29.7.1".into(),
            api_version: "1.55".into(),
            engine_api_version: "1.55".into(),
            engine_min_api_version: "1.40".into(),
            selinux: false,
            docker_root_dir: "/var/lib/docker".into(),
            transport: DockerTransport::StreamLocal,
            transport_reason: TransportReason::SocketForwarded,
        }
    }

    #[test]
    fn a_cgroup_v1_linux_host_is_refused_only_when_kubelet_refuses_it() {
        let v1 = facts("linux", "1");
        let e = cgroup_v1_check("host1", &v1, true, "v1.35.5-rkers1").expect("refused");
        assert_eq!(e.kind(), "cgroup-v1");
        let text = e.to_string();
        assert!(text.starts_with("host host1: "), "{text}");
        assert!(text.contains("fail-cgroupv1: \"false\""), "{text}");
        assert!(
            text.contains("systemd.unified_cgroup_hierarchy=1"),
            "{text}"
        );
        assert!(cgroup_v1_check("host1", &v1, false, "v1.34.10-rkers1").is_none());
        assert!(cgroup_v1_check("host1", &facts("linux", "2"), true, "v1.35.5").is_none());
        assert!(cgroup_v1_check("win1", &facts("windows", ""), true, "v1.35.5").is_none());
    }

    #[test]
    fn kubelet_refuses_cgroup_v1_from_v1_35_unless_fail_cgroupv1_is_false() {
        let mut cfg = crate::config::RkeConfig {
            kubernetes_version: "v1.34.10-rkers1".into(),
            ..Default::default()
        };
        assert!(!crate::plan::kubelet_refuses_cgroup_v1(&cfg));
        cfg.kubernetes_version = "v1.35.5-rkers1".into();
        assert!(crate::plan::kubelet_refuses_cgroup_v1(&cfg));
        cfg.services
            .kubelet
            .extra_args
            .insert("fail-cgroupv1".into(), "false".into());
        assert!(!crate::plan::kubelet_refuses_cgroup_v1(&cfg));
    }
}
