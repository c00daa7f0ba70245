//! What each planned host runs and holds: containers, images, and its files
//! ([`crate::phases::read_files`]); and the refusal to build a new cluster over one that runs
//! without state.

use super::UpError;
use super::run::{KNOWN_CONTAINERS, Observed};
use crate::hosts::{self, HostPool};
use crate::phases::files::{DesiredFile, shell_sees_docker_paths};
use crate::phases::read_files::{ToRead, read_host_files};
use crate::pki::Bundle;
use crate::plan::{self, ClusterPlan};
use crate::state::StateFile;
use futures::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, BTreeSet};

/// Docker requests one host answers at once while it is observed. A host reached through
/// `docker system dial-stdio` spends one SSH session per request, and sshd allows 10 per
/// connection by default (`MaxSessions`).
const LOOKS_IN_FLIGHT: usize = 6;

/// One thing `observe` asks a host's Docker about.
enum Look {
    Container(String),
    /// An `old-…` container a stopped upgrade left behind.
    Stale(String),
    Image(String),
}

/// What a [`Look`] found.
enum Seen {
    Container(String, Option<Box<hosts::ObservedContainer>>),
    Stale(String, bool),
    /// The image's environment, or `None` when the host lacks it.
    Image(String, Option<Vec<String>>),
}

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
        let mut images: BTreeSet<&str> = h.containers.values().map(|c| c.image.as_str()).collect();
        images.insert(helper_image);
        // Each look is a request of its own over the host's one SSH connection; asked a few at
        // a time instead of one after another, they take a no-op `up` a fraction of the time.
        let mut looks: Vec<Look> = Vec::new();
        for name in KNOWN_CONTAINERS {
            looks.push(Look::Container(name.to_string()));
        }
        looks.extend(super::snapshot::old_names().map(Look::Stale));
        for image in images {
            looks.push(Look::Image(image.to_string()));
        }
        let seen: Vec<Seen> = futures::stream::iter(looks.into_iter().map(|look| async move {
            Ok::<_, UpError>(match look {
                Look::Container(name) => {
                    let found = docker.inspect_container(&name).await?;
                    Seen::Container(name, found.map(Box::new))
                }
                Look::Stale(name) => {
                    let found = docker.inspect_container(&name).await?.is_some();
                    Seen::Stale(name, found)
                }
                Look::Image(image) => {
                    let env = match docker.raw().inspect_image(&image).await {
                        Ok(i) => Some(i.config.and_then(|c| c.env).unwrap_or_default()),
                        Err(_) => None,
                    };
                    Seen::Image(image, env)
                }
            })
        }))
        .buffered(LOOKS_IN_FLIGHT)
        .try_collect()
        .await?;
        for s in seen {
            match s {
                Seen::Container(name, Some(c)) => {
                    obs.containers.insert(name, *c);
                }
                Seen::Stale(name, true) => obs.stale_old.push(name),
                Seen::Image(image, env) => {
                    obs.images.insert(image, env);
                }
                Seen::Container(_, None) | Seen::Stale(_, false) => {}
            }
        }
        // Where a container's new image is not on the host yet, the image it runs now tells
        // which of its variables came from that image (the dry run's env change leaves those
        // out): asked only then, so only on upgrades.
        // By the image's ID, which still names it when its tag has gone.
        let running_images: BTreeMap<String, String> = h
            .containers
            .iter()
            .filter(|(_, spec)| obs.images.get(&spec.image).is_none_or(Option::is_none))
            .filter_map(|(name, _)| obs.containers.get(name))
            .filter(|c| !obs.images.contains_key(&c.image))
            .map(|c| {
                let id = if c.image_id.is_empty() {
                    &c.image
                } else {
                    &c.image_id
                };
                (c.image.clone(), id.clone())
            })
            .collect();
        for (image, id) in running_images {
            let env = match docker.raw().inspect_image(&id).await {
                Ok(i) => Some(i.config.and_then(|c| c.env).unwrap_or_default()),
                Err(_) => None,
            };
            obs.images.insert(image, env);
        }
        // etcd's data directory is made in the host's shell where that shell sees the
        // filesystem its Docker does and labels nothing (no SELinux).
        let needs_root_answer = h.containers.contains_key(plan::ETCD)
            && !obs.containers.contains_key(plan::ETCD)
            && obs.platform.runs_linux_helpers()
            && shell_sees_docker_paths(&obs.platform.files_root(h))
            && !host.facts().selinux;
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
                // One request less on each host's way to its files: the looks above asked.
                helper_present: obs.images.get(helper_image).is_some_and(Option::is_some),
                registries,
            },
        )
        .await?;
        (obs.files, obs.file_meta, obs.windows) = (found.files, found.meta, found.windows);
        if needs_root_answer {
            obs.root_shell = match found.root_shell {
                Some(root) => root,
                None => shell_is_root(host).await,
            };
        }
        Ok::<_, UpError>((h.address.clone(), obs))
    });
    futures::future::join_all(tasks).await.into_iter().collect()
}

/// Whether the host's shell runs as root; a failed look says no (the helper container then
/// does the work, as RKE1's).
async fn shell_is_root(host: &hosts::Host) -> bool {
    match host.link().exec("id -u").await {
        Ok(out) => out.success() && out.stdout_str().trim() == "0",
        Err(e) => {
            tracing::debug!(host = host.name(), %e, "id -u failed: etcd-fix-perm as a container");
            false
        }
    }
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
