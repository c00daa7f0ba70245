//! Facts about a host read from `docker info` / `docker version`, and the Docker version
//! check against the supported list of a Kubernetes minor (spec §8.3).

use serde::Serialize;

use super::docker::{DockerClient, DockerTransport, TransportReason};
use super::error::HostError;

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
        self.os_type.eq_ignore_ascii_case("windows")
    }

    pub async fn gather(docker: &DockerClient) -> Result<HostFacts, HostError> {
        let info = docker.info().await?;
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

/// Outcome of the Docker version check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum DockerVersionCheck {
    Supported,
    /// `ignore_docker_version` is set.
    Ignored,
    /// No list for this Kubernetes minor: nothing to check against.
    NoList,
    /// Newer than every version the list knows: a warning, not an error (spec §32 #6).
    NewerThanKnown {
        newest_known: String,
    },
    Unsupported {
        supported: String,
    },
}

fn major_minor(v: &str) -> Option<(u64, u64)> {
    let v = v.trim().trim_start_matches('v');
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Compares `docker_version` by major.minor with `supported` (KDM entries such as `20.10.x`).
pub fn check_docker_version(
    docker_version: &str,
    supported: &[String],
    ignore_docker_version: bool,
) -> DockerVersionCheck {
    if ignore_docker_version {
        return DockerVersionCheck::Ignored;
    }
    let known: Vec<(u64, u64)> = supported.iter().filter_map(|s| major_minor(s)).collect();
    if known.is_empty() {
        return DockerVersionCheck::NoList;
    }
    let Some(have) = major_minor(docker_version) else {
        return DockerVersionCheck::Unsupported {
            supported: supported.join(", "),
        };
    };
    if known.contains(&have) {
        return DockerVersionCheck::Supported;
    }
    let newest = *known.iter().max().expect("non-empty");
    if have > newest {
        DockerVersionCheck::NewerThanKnown {
            newest_known: format!("{}.{}", newest.0, newest.1),
        }
    } else {
        DockerVersionCheck::Unsupported {
            supported: supported.join(", "),
        }
    }
}

impl DockerVersionCheck {
    /// The error for a failed check (the caller decides whether it is fatal).
    pub fn to_error(&self, host: &str, docker_version: &str, k8s_minor: &str) -> Option<HostError> {
        match self {
            DockerVersionCheck::Unsupported { supported } => {
                Some(HostError::UnsupportedDockerVersion {
                    host: host.to_owned(),
                    version: docker_version.to_owned(),
                    k8s_minor: k8s_minor.to_owned(),
                    supported: supported.clone(),
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Vec<String> {
        [
            "1.13.x", "17.03.x", "18.09.x", "19.03.x", "20.10.x", "27.2.x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn version_check_by_major_minor() {
        assert_eq!(
            check_docker_version("20.10.24+dfsg1", &list(), false),
            DockerVersionCheck::Supported
        );
        assert_eq!(
            check_docker_version("28.2.2", &list(), false),
            DockerVersionCheck::NewerThanKnown {
                newest_known: "27.2".into()
            }
        );
        let old = check_docker_version("17.12.1-ce", &list(), false);
        assert!(matches!(old, DockerVersionCheck::Unsupported { .. }));
        let msg = old
            .to_error("n1", "17.12.1-ce", "1.20")
            .unwrap()
            .to_string();
        assert!(
            msg.contains("n1")
                && msg.contains("17.12.1-ce")
                && msg.contains("ignore_docker_version"),
            "{msg}"
        );
        assert_eq!(
            check_docker_version("17.12.1", &list(), true),
            DockerVersionCheck::Ignored
        );
        assert_eq!(
            check_docker_version("17.12.1", &[], false),
            DockerVersionCheck::NoList
        );
    }
}
