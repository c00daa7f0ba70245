//! Step 3: the plan `up` would make for the connected hosts (which containers each runs,
//! their health checks, the files they get), and per host its files as found and which of
//! the containers that read a changed file exist.

use super::{CertRotate, RotateError};
use crate::cluster::Cluster;
use crate::hosts::HostPool;
use crate::phases::read_files::{ToRead, read_host_files};
use crate::phases::up::host_files;
use crate::plan::{self, ClusterPlan};
use rkers_core::diff::cert_rotation::CertHost;
use std::collections::BTreeSet;

/// The connected hosts and what was found on each.
pub(super) struct Found {
    pub pool: HostPool,
    pub hosts: Vec<CertHost>,
}

pub(super) async fn hosts(command: &mut CertRotate<'_>) -> Result<Found, RotateError> {
    let pool = command
        .pool
        .take()
        .ok_or_else(|| RotateError::NotConnected {
            host: "every host".into(),
        })?;
    let cluster = command.cluster;
    let bundle = &command.state.desired_state.certificates_bundle;
    let cluster_plan = build_plan(
        cluster,
        &pool,
        &command.state.desired_state.encryption_config,
        command.state.current_state.rke_config.as_ref(),
    )?;
    let helper_image = &cluster.config.system_images.cert_downloader;
    let registries = cluster.registry_credentials();
    let mut hosts = Vec::new();
    let platforms: Vec<plan::Platform> = cluster_plan
        .hosts
        .iter()
        .map(|h| cluster_plan.platform(&h.address))
        .collect();
    for (h, platform) in cluster_plan.hosts.into_iter().zip(platforms) {
        let host = pool
            .get(&h.address)
            .ok_or_else(|| RotateError::NotConnected {
                host: h.address.clone(),
            })?;
        let docker = host.docker();
        let desired = host_files(&h, bundle, &command.spec, platform);
        let loaded = host_files(&h, &command.loaded_bundle, &command.spec, platform);
        let paths: Vec<String> = desired.iter().map(|f| f.relative_path.clone()).collect();
        let on_disk = read_host_files(
            host,
            &h,
            platform,
            ToRead {
                paths: &paths,
                directories: &[],
                running: &[],
                helper_image,
                helper_present: false,
                registries: &registries,
            },
        )
        .await?
        .files;
        let mut found = CertHost {
            address: h.address.clone(),
            platform,
            dir: platform.files_root(&h),
            desired,
            loaded,
            on_disk,
            containers: h.containers,
            found: BTreeSet::new(),
        };
        for name in found.readers_to_find() {
            if docker.inspect_container(name).await?.is_some() {
                found.found.insert(name.to_string());
            }
        }
        hosts.push(found);
    }
    Ok(Found { pool, hosts })
}

fn build_plan(
    cluster: &Cluster,
    pool: &HostPool,
    encryption_config: &str,
    current: Option<&serde_json::Value>,
) -> Result<ClusterPlan, RotateError> {
    let facts = crate::phases::host_facts(pool);
    let service_options = cluster.service_options()?;
    let windows_options = if facts
        .values()
        .any(|f| plan::Platform::of(f) == plan::Platform::Windows)
    {
        Some(cluster.windows_service_options()?)
    } else {
        None
    };
    let default_tools_tag = cluster.default_rke_tools_tag();
    // The cluster's own choice of br_netfilter (its state's), as `up` plans it: a rotation
    // recreates containers and must not change anything else about them.
    let previous = current.and_then(|c| crate::config::RkeConfig::from_state_json(c).ok());
    let config = cluster.settled_config(previous.as_ref());
    plan::build(&plan::PlanInput {
        config: &config,
        service_options: &service_options,
        windows_service_options: windows_options.as_ref(),
        host_facts: &facts,
        etcd: &plan::EtcdContext::fresh(),
        encryption_config: (!encryption_config.is_empty()).then_some(encryption_config),
        default_rke_tools_tag: default_tools_tag.as_deref(),
        // `cert rotate` has no `--dind`.
        dind: false,
    })
    .map_err(RotateError::from)
}
