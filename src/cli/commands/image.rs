//! `rkers image build`: reads the inputs, picks the Docker engine (a node's over SSH, or the
//! local one), builds, pushes and prints the `system_images` lines.

use std::sync::Arc;
use std::time::Duration;

use crate::cli::CliError;
use crate::cli::args::ImageBuildArgs;
use crate::cli::commands::up::ssh_options_for;
use crate::cluster::Cluster;
use crate::hosts::HostPool;
use crate::hosts::docker::DockerClient;
use crate::hosts::local::DockerEndpoint;
use crate::image_build::{EngineError, Inputs, Prepared};
use crate::output::Reporter;

pub async fn build(
    cluster: &Cluster,
    args: &ImageBuildArgs,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let inputs = Inputs {
        kubernetes: args.kubernetes.clone(),
        cri_dockerd: args.cri_dockerd.clone(),
        kubernetes_checksum: args.kubernetes_checksum.clone(),
        cri_dockerd_checksum: args.cri_dockerd_checksum.clone(),
        kubernetes_version: args.kubernetes_version.clone(),
        base: args.base.clone(),
        tag: args.tag.clone(),
    };
    let default_registry = cluster
        .config
        .private_registries
        .iter()
        .find(|r| r.is_default)
        .map(|r| r.url.clone());
    reporter.info(format!(
        "reading {} and {}",
        args.kubernetes.display(),
        args.cri_dockerd.display()
    ));
    let prepared = tokio::task::spawn_blocking(move || {
        crate::image_build::prepare(&inputs, default_registry.as_deref())
    })
    .await
    .map_err(|e| CliError::Failed(format!("reading the inputs stopped: {e}")))?
    .map_err(fail)?;
    let req = &prepared.request;
    reporter.info(format!(
        "Kubernetes v{} ({} binaries; checksum: {}); cri-dockerd checksum: {}",
        req.version,
        req.binaries.len(),
        req.kubernetes.verified,
        req.cri_dockerd.verified
    ));
    let registries = cluster.registry_credentials();
    if args.local {
        let endpoint = DockerEndpoint::parse(std::env::var("DOCKER_HOST").ok().as_deref())
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let shown = endpoint.to_string();
        let docker = DockerClient::connect_with(
            "local",
            &shown,
            Arc::new(endpoint).opener(),
            Duration::from_secs(30),
        )
        .await
        .map_err(CliError::failed)?;
        return build_on(&docker, &prepared, &registries, args.no_push, reporter).await;
    }
    let nodes = &cluster.config.nodes;
    let index = match &args.node {
        None if nodes.is_empty() => {
            return Err(CliError::Usage(
                "cluster.yml has no nodes: name a node there, or build with --local".into(),
            ));
        }
        None => 0,
        Some(name) => nodes
            .iter()
            .position(|n| &n.address == name || &n.hostname_override == name)
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "--node {name}: no node of {} has that address or hostname_override",
                    cluster.files.config_path.display()
                ))
            })?,
    };
    let Some(target) = cluster
        .ssh_targets(args.connect.ssh_agent_auth)
        .into_iter()
        .nth(index)
    else {
        return Err(CliError::Usage("the node has no SSH target".into()));
    };
    let pool = HostPool::connect(
        std::slice::from_ref(&target),
        &ssh_options_for(&args.connect, false),
    )
    .await
    .map_err(CliError::failed)?;
    let result = match pool.get(&target.name) {
        Some(host) => {
            build_on(
                host.docker(),
                &prepared,
                &registries,
                args.no_push,
                reporter,
            )
            .await
        }
        None => Err(CliError::Failed(format!("{}: not connected", target.name))),
    };
    pool.close().await;
    result
}

async fn build_on(
    docker: &DockerClient,
    prepared: &Prepared,
    registries: &[crate::hosts::target::RegistryCredential],
    no_push: bool,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let tag = &prepared.plan.tag;
    reporter.info(format!(
        "building {tag} from {} with the Docker engine of {}",
        prepared.request.base,
        docker.host()
    ));
    let mut progress = |line: &str| {
        if !line.trim_start().starts_with("--->") {
            reporter.info(format!("  {line}"));
        }
    };
    let id = crate::image_build::build(docker, prepared, registries, &mut progress)
        .await
        .map_err(fail)?;
    reporter.info(format!("built {tag} ({id}) on {}", docker.host()));
    if no_push {
        reporter.info(format!(
            "not pushed (--no-push): the image is on {} only",
            docker.host()
        ));
    } else {
        crate::image_build::push(docker, tag, registries)
            .await
            .map_err(fail)?;
        reporter.info(format!("pushed {tag}"));
    }
    let lines = format!(
        "# cluster.yml: run the image built from Kubernetes v{}\n{}",
        prepared.request.version,
        crate::image_build::system_images_lines(tag)
    );
    // JSON output is JSON: the lines are an event's message there.
    if reporter.is_json() {
        reporter.info(lines);
        return Ok(());
    }
    super::super::print_out(lines)
}

/// Inputs that are not what the image needs are a usage error (exit 2); a node or Docker that
/// fails is a failed operation (exit 1).
fn fail(e: EngineError) -> CliError {
    match e {
        EngineError::Input(_) | EngineError::Read { .. } => CliError::Usage(e.to_string()),
        other => CliError::failed(other),
    }
}
