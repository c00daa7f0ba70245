//! What each planned host runs and holds: containers, images, and its files
//! ([`crate::phases::read_files`]); and the refusal to build a new cluster over one that runs
//! without state.

use super::UpError;
use super::run::{KNOWN_CONTAINERS, Observed};
use crate::hosts::{self, HostPool};
use crate::phases::files::DesiredFile;
use crate::phases::read_files::{ToRead, read_host_files};
use crate::pki::Bundle;
use crate::plan::{self, ClusterPlan};
use crate::state::StateFile;
use std::collections::{BTreeMap, BTreeSet};

pub(super) async fn observe(
    pool: &HostPool,
    cluster_plan: &ClusterPlan,
    bundle: &Bundle,
    desired_files: &BTreeMap<String, Vec<DesiredFile>>,
    helper_image: &str,
    registries: &[hosts::target::RegistryCredential],
) -> Result<BTreeMap<String, Observed>, UpError> {
    let tasks = cluster_plan.hosts.iter().map(|h| async move {
        let host = pool.get(&h.address).ok_or_else(|| UpError::NotConnected {
            host: h.address.clone(),
        })?;
        let docker = host.docker();
        let mut obs = Observed {
            platform: cluster_plan.platform(&h.address),
            ..Observed::default()
        };
        for name in KNOWN_CONTAINERS {
            if let Some(c) = docker.inspect_container(name).await? {
                obs.containers.insert(name.to_string(), c);
            }
        }
        for old in super::snapshot::old_names() {
            if docker.inspect_container(&old).await?.is_some() {
                obs.stale_old.push(old);
            }
        }
        let mut images: BTreeSet<&str> = h.containers.values().map(|c| c.image.as_str()).collect();
        images.insert(helper_image);
        for image in images {
            let env = match docker.raw().inspect_image(image).await {
                Ok(i) => Some(i.config.and_then(|c| c.env).unwrap_or_default()),
                Err(_) => None,
            };
            obs.images.insert(image.to_string(), env);
        }
        let directories = cluster_plan
            .windows
            .get(&h.address)
            .map_or(&[][..], |setup| setup.directories.as_slice());
        // By name, for a Windows worker's agent: the plan's files, the optional ones, and keys
        // an older run or RKE1 may have left there (for the least-privilege clean-up).
        let mut paths: Vec<String> = desired_files[&h.address]
            .iter()
            .map(|f| f.relative_path.clone())
            .collect();
        paths.extend(
            plan::optional_files(h.roles.controlplane)
                .iter()
                .filter_map(|p| p.strip_prefix('/'))
                .map(str::to_string),
        );
        paths.extend(
            bundle
                .values()
                .filter_map(|c| c.key_path.strip_prefix('/'))
                .map(str::to_string),
        );
        paths.sort();
        paths.dedup();
        let running: Vec<&hosts::ObservedContainer> = obs.containers.values().collect();
        let found = read_host_files(
            host,
            h,
            obs.platform,
            ToRead {
                paths: &paths,
                directories,
                running: &running,
                helper_image,
                registries,
            },
        )
        .await?;
        (obs.files, obs.file_meta, obs.windows) = (found.files, found.meta, found.windows);
        Ok::<_, UpError>((h.address.clone(), obs))
    });
    futures::future::join_all(tasks).await.into_iter().collect()
}

/// RKE1 would create a new CA over a running cluster when the state file is lost (§32 pain
/// point 5); rkers refuses unless told to.
pub(super) fn guard_existing_cluster(
    old: Option<&StateFile>,
    observed: &BTreeMap<String, Observed>,
    force: bool,
    state_path: &std::path::Path,
) -> Result<(), UpError> {
    let known_cluster = old.is_some_and(|s| s.current_state.rke_config.is_some());
    if known_cluster || force {
        return Ok(());
    }
    // A first `up` stopped midway (killed, interrupted, a host failed) wrote the state's desired
    // side and started containers: hosts that hold that state's CA are this cluster's, and
    // going on finishes it (fault matrix, scripts/faults, fault 13).
    let state_ca = old
        .and_then(|s| s.desired_state.certificates_bundle.get("kube-ca"))
        .map(|ca| ca.certificate_pem.as_bytes());
    let ours = |o: &Observed| {
        state_ca.is_some_and(|ca| {
            o.files
                .get("ssl/kube-ca.pem")
                .is_some_and(|f| crate::diff::same_file_content("ssl/kube-ca.pem", ca, f))
        })
    };
    let busy: Vec<(String, Vec<String>)> = observed
        .iter()
        .filter(|(_, o)| !ours(o))
        .filter_map(|(host, o)| {
            let names: Vec<&str> = [plan::ETCD, plan::KUBE_APISERVER, plan::KUBELET]
                .into_iter()
                .filter(|n| o.containers.contains_key(*n))
                .collect();
            (!names.is_empty()).then(|| {
                (
                    host.clone(),
                    names.into_iter().map(str::to_string).collect::<Vec<_>>(),
                )
            })
        })
        .collect();
    if busy.is_empty() {
        return Ok(());
    }
    Err(UpError::ExistingCluster {
        state_path: state_path.to_path_buf(),
        busy,
    })
}
