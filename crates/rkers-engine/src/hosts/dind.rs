//! `up --dind` / `remove --dind` (RKE1's experimental mode): each node of cluster.yml is a
//! privileged Docker-in-Docker container `rke-dind-<address>` on the daemon `DOCKER_HOST`
//! names. The node's address becomes the container's IP on that daemon's default bridge; its
//! Docker API is `tcp://<IP>:2375` (no TLS, as the dind image serves it with an empty
//! `DOCKER_TLS_CERTDIR`); its commands are `docker exec`s in the container
//! ([`LocalLink::in_container`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::docker::DockerClient;
use super::error::HostError;
use super::link::{HostLink, LinkOpener};
use super::local::{DockerEndpoint, LocalLink};
use super::target::{RegistryCredential, SshTarget};

/// RKE1's prefix of the node containers.
pub const CONTAINER_PREFIX: &str = "rke-dind";
/// RKE1's default image (a rkers build here passes `--dind-image`).
pub const DEFAULT_IMAGE: &str = "docker:24.0.9-dind";
/// Where the node's dockerd listens without TLS.
pub const DOCKER_PORT: u16 = 2375;

/// How the node containers are made.
#[derive(Clone, Debug)]
pub struct DindOptions {
    pub image: String,
    /// Storage driver of the inner dockerd; empty: the outer daemon's.
    pub storage_driver: String,
    /// Used when the machine's `/etc/resolv.conf` is a symlink (it is not bind-mounted then).
    pub dns_server: String,
    pub registries: Vec<RegistryCredential>,
}

/// The container of the node whose cluster.yml address is `address`.
pub fn container_name(address: &str) -> String {
    format!("{CONTAINER_PREFIX}-{address}")
}

/// A client of the outer daemon.
pub async fn outer_client(
    outer: &Arc<DockerEndpoint>,
    timeout: Duration,
) -> Result<DockerClient, HostError> {
    let name = format!("docker {outer}");
    DockerClient::connect_with(&name, &outer.to_string(), outer.opener(), timeout).await
}

/// Makes sure the node container of `address` runs and its dockerd answers; returns its IP.
pub async fn start_node(
    docker: &DockerClient,
    address: &str,
    opts: &DindOptions,
    timeout: Duration,
) -> Result<String, HostError> {
    let name = container_name(address);
    let fail = |detail: String| HostError::Container {
        host: docker.host().to_owned(),
        container: name.clone(),
        detail,
    };
    let running = match docker.inspect_container(&name).await? {
        Some(c) => c.running,
        None => {
            create(docker, &name, address, opts).await?;
            false
        }
    };
    if !running {
        docker.start_container(&name).await?;
    }
    let ip = container_ip(docker, &name)
        .await?
        .ok_or_else(|| fail("has no address on the default bridge".into()))?;
    // Its dockerd takes a moment to listen after the container starts.
    let endpoint = DockerEndpoint::Tcp(format!("{ip}:{DOCKER_PORT}"));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match endpoint.connect().await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() >= deadline => {
                let logs = docker.logs(&name, 5).await.unwrap_or_default();
                return Err(fail(format!(
                    "its dockerd does not answer on {ip}:{DOCKER_PORT} after {}s ({e}); last log lines: {}",
                    timeout.as_secs(),
                    logs.trim()
                )));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    Ok(ip)
}

async fn create(
    docker: &DockerClient,
    name: &str,
    address: &str,
    opts: &DindOptions,
) -> Result<(), HostError> {
    docker
        .ensure_image(&opts.image, &opts.registries, &mut |_| {})
        .await?;
    let driver = if opts.storage_driver.is_empty() {
        docker.info().await?.driver.unwrap_or_default()
    } else {
        opts.storage_driver.clone()
    };
    let mut binds = vec![
        format!("/var/lib/kubelet-{name}:/var/lib/kubelet:shared"),
        "/etc/machine-id:/etc/machine-id:ro".to_string(),
    ];
    let resolv_is_link = std::fs::symlink_metadata("/etc/resolv.conf")
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(true);
    if !resolv_is_link {
        binds.push("/etc/resolv.conf:/etc/resolv.conf".into());
    }
    let mut start = String::from(
        "mount --make-shared / && mount --make-shared /sys && \
         mount --make-shared /var/lib/docker && dockerd-entrypoint.sh",
    );
    if !driver.is_empty() {
        start.push_str(&format!(
            " --storage-driver={}",
            shell_words::quote(&driver)
        ));
    }
    let body = bollard::models::ContainerCreateBody {
        image: Some(opts.image.clone()),
        entrypoint: Some(vec!["sh".into(), "-c".into(), start]),
        hostname: Some(address.to_owned()),
        env: Some(vec!["DOCKER_TLS_CERTDIR=".into()]),
        host_config: Some(bollard::models::HostConfig {
            privileged: Some(true),
            binds: Some(binds),
            dns: Some(vec![opts.dns_server.clone()]),
            // As RKE1 (Calico needs it).
            sysctls: Some(HashMap::from([(
                "net.ipv4.conf.all.rp_filter".to_string(),
                "1".to_string(),
            )])),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = bollard::query_parameters::CreateContainerOptions {
        name: Some(name.to_owned()),
        ..Default::default()
    };
    docker
        .raw()
        .create_container(Some(options), body)
        .await
        .map_err(|e| HostError::Container {
            host: docker.host().to_owned(),
            container: name.to_owned(),
            detail: format!("create: {e}"),
        })?;
    Ok(())
}

async fn container_ip(docker: &DockerClient, name: &str) -> Result<Option<String>, HostError> {
    let c = docker
        .raw()
        .inspect_container(
            name,
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
        .map_err(|e| HostError::Container {
            host: docker.host().to_owned(),
            container: name.to_owned(),
            detail: format!("inspect: {e}"),
        })?;
    Ok(c.network_settings
        .and_then(|n| n.networks)
        .and_then(|n| n.get("bridge").and_then(|b| b.ip_address.clone()))
        .filter(|ip| !ip.is_empty()))
}

/// The IP of the running node container of `address` (a dry run starts nothing).
pub async fn node_ip(docker: &DockerClient, address: &str) -> Result<String, HostError> {
    let name = container_name(address);
    let missing = |what: &str| HostError::Container {
        host: docker.host().to_owned(),
        container: name.clone(),
        detail: format!("{what}: a dry run starts no node container; run `up --dind` first"),
    };
    match docker.inspect_container(&name).await? {
        Some(c) if c.running => container_ip(docker, &name)
            .await?
            .ok_or_else(|| missing("has no address")),
        Some(_) => Err(missing("is not running")),
        None => Err(missing("does not exist")),
    }
}

/// Removes the node container of `address` with its volumes; absent is fine.
pub async fn remove_node(docker: &DockerClient, address: &str) -> Result<(), HostError> {
    docker.remove_container(&container_name(address)).await
}

/// Opens each node's link: the `rke-dind-*` container whose IP is the node's address.
pub struct DindLinks {
    pub outer: Arc<DockerEndpoint>,
    /// Node address (the container's IP) to its container.
    pub containers: HashMap<String, String>,
    pub docker_timeout: Duration,
}

impl LinkOpener for DindLinks {
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        Some(Box::pin(async move {
            let container =
                self.containers
                    .get(&target.address)
                    .ok_or_else(|| HostError::Container {
                        host: target.name.clone(),
                        container: container_name(&target.address),
                        detail:
                            "no dind container has this address (was it started by `up --dind`?)"
                                .into(),
                    })?;
            let node_docker = DockerEndpoint::Tcp(format!("{}:{DOCKER_PORT}", target.address));
            let link = LocalLink::in_container(
                &target.name,
                self.outer.clone(),
                container,
                node_docker,
                self.docker_timeout,
            )
            .await?;
            Ok(Arc::new(link) as Arc<dyn HostLink>)
        }))
    }
}
