//! `rkers cert rotate` (§25): new certificates into the state, onto the hosts, and the
//! containers that read them restarted.
//!
//! 1. state: the bundle rotated (`pki::rotate_bundle`, §25.1) from the desired state.
//! 2. connect: every host; one unreachable host stops the run before anything changes.
//! 3. plan: per host the certificate files that change and the containers that read them.
//!    `--dry-run` prints these actions and stops.
//! 4. apply: the state is saved with the new bundle as desired (the current state still names
//!    what the containers run with), the files are written, the readers restarted (etcd, then
//!    the control plane, then the workers, each checked healthy), the admin kubeconfig
//!    rewritten, and only then the new bundle becomes the current state. A run stopped anywhere
//!    before that leaves the old bundle as current, so the next `cert rotate` (or `up`) still
//!    restarts every container whose files changed.
//! 5. With `--rotate-ca`, the system pods that cache the CA are deleted so their controllers
//!    recreate them with the new one (§25.2 step 5).

use crate::cluster::{Cluster, ClusterError};
use crate::diff::{Action, HealthProbe, Sealed};
use crate::hosts::{self, HostPool, SshOptions};
use crate::output::Reporter;
use crate::phases::certs::containers_to_restart;
use crate::phases::changeset::{self, Changeset, FileWrite, Pace};
use crate::phases::executor::Executor;
use crate::phases::files;
use crate::phases::health::TlsMaterial;
use crate::phases::up::{
    etc_kubernetes, files_root, host_files, kubernetes_view, kubernetes_view_map,
};
use crate::phases::{PhaseError, Runner};
use crate::pki::{self, RotateService};
use crate::plan::{self, ClusterPlan};
use std::collections::BTreeSet;

pub struct RotateOptions {
    pub dry_run: bool,
    /// `--service`; empty means every service.
    pub services: Vec<RotateService>,
    pub rotate_ca: bool,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
    /// `--ignore-blocking-webhooks`: restart system pods although a webhook blocks them.
    pub ignore_blocking_webhooks: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Phase(#[from] PhaseError),
    #[error("{0}")]
    State(#[from] crate::state::StateError),
    #[error("{0}")]
    Guard(#[from] crate::checks::guard::GuardError),
    #[error("Failed to rotate certificates: can't find old certificates in {}", .0.display())]
    NoCertificates(std::path::PathBuf),
    #[error("Failed to rotate certificates: {0}")]
    Pki(#[source] crate::pki::PkiError),
    /// `names`: the nodes as cluster.yml names them.
    #[error("cannot reach every host ({names}); no certificate was rotated:\n{problems}")]
    Unreachable {
        names: String,
        #[source]
        problems: hosts::HostProblems,
    },
    /// A planned host without a connection: a bug in the step that asked, not in the input.
    #[error("host {host} not connected")]
    NotConnected { host: String },
    #[error("{0}")]
    Host(#[source] Box<hosts::HostError>),
    #[error("{0}")]
    Plan(#[from] crate::plan::PlanError),
    #[error(
        "Failed to restart system pods after the CA rotation: {}",
        .0.iter().map(|(_, e)| e.as_str()).collect::<Vec<_>>().join("; ")
    )]
    Pods(Vec<(String, String)>),
    #[error("[{stage}] {} hosts failed:\n{}", .failures.len(), changeset::list_failures(.failures))]
    Stage {
        stage: String,
        failures: Vec<(String, String)>,
    },
}

impl From<hosts::HostError> for RotateError {
    fn from(e: hosts::HostError) -> Self {
        RotateError::Host(Box::new(e))
    }
}

impl crate::error::HostContext for RotateError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            RotateError::Host(e) => vec![e.host()],
            RotateError::NotConnected { host } => vec![host],
            RotateError::Stage { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            RotateError::Phase(e) => crate::error::HostContext::hosts(e),
            RotateError::Guard(e) => crate::error::HostContext::hosts(e),
            RotateError::Unreachable { problems, .. } => crate::error::HostContext::hosts(problems),
            // Pods are named by pod, not host.
            RotateError::Cluster(_)
            | RotateError::State(_)
            | RotateError::NoCertificates(_)
            | RotateError::Pki(_)
            | RotateError::Plan(_)
            | RotateError::Pods(_) => Vec::new(),
        }
    }
}

/// Labels of the system pods RKE1 deletes after a CA rotation so they pick up the new CA and
/// service-account tokens (§25.2 step 5). RKE1 deletes no token secrets: the controller
/// manager rewrites their `ca.crt` itself once it runs with the new CA.
pub const CA_CACHING_POD_LABELS: &[&str] = &[
    "k8s-app=flannel",
    "k8s-app=canal",
    "name=weave-net",
    "app=ingress-nginx",
    "k8s-app=metrics-server",
    "k8s-app=kube-dns",
    "k8s-app=kube-dns-autoscaler",
    "k8s-app=coredns-autoscaler",
    "app=kube-api-auth",
    "app=cattle-cluster-agent",
    "k8s-app=calico-node",
    "k8s-app=calico-kube-controllers",
];

/// Restart order: etcd first (its clients need it), then the control plane, then the workers.
const RESTART_PLANES: &[(&str, &[&str])] = &[
    ("restart etcd", &[plan::ETCD]),
    (
        "restart control plane",
        &[
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
        ],
    ),
    ("restart worker plane", &[plan::KUBELET, plan::KUBE_PROXY]),
];

pub async fn cert_rotate(
    cluster: &Cluster,
    opts: &RotateOptions,
    reporter: &Reporter,
) -> Result<(), RotateError> {
    let runner = Runner::new(reporter.clone(), opts.ssh.concurrency);
    // incidents.md §3: rotation restarts system components and pods.
    crate::checks::guard::check_webhooks_before_changes(
        cluster,
        opts.ignore_blocking_webhooks,
        opts.dry_run,
        reporter,
    )
    .await?;

    // 1. state
    let phase = reporter.phase("state");
    let old = cluster
        .load_state()?
        .filter(|s| !s.current_state.certificates_bundle.is_empty())
        .ok_or_else(|| RotateError::NoCertificates(cluster.files.state_path.clone()))?;
    let loaded_bundle = old.current_state.certificates_bundle.clone();
    let (mut state, _) = cluster.init_state(Some(&old), None)?;
    let spec = cluster.pki_spec()?;
    let (bundle, changes) = pki::rotate_bundle(
        std::mem::take(&mut state.desired_state.certificates_bundle),
        &spec,
        &opts.services,
        opts.rotate_ca,
    )
    .map_err(RotateError::Pki)?;
    for cert in bundle.values() {
        cluster.redactor.register(&cert.key_pem);
    }
    state.desired_state.certificates_bundle = bundle.clone();
    reporter.info(format!(
        "Rotating certificates: {}",
        changes
            .changed
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    phase.done();

    // 2. connect
    let phase = reporter.phase("connect");
    let targets = cluster.ssh_targets(opts.agent_override);
    let pool = match HostPool::connect(&targets, &opts.ssh).await {
        Ok(pool) => pool,
        Err(problems) => {
            phase.fail(&problems.summary());
            return Err(RotateError::Unreachable {
                names: unreachable_names(cluster, &problems),
                problems,
            });
        }
    };
    phase.done();

    // 3. plan
    let phase = reporter.phase("plan");
    let cluster_plan = build_plan(cluster, &pool, &state.desired_state.encryption_config)?;
    let helper_image = cluster.config.system_images.cert_downloader.clone();
    let registries = cluster.registry_credentials();
    let mut changes = Changeset::default();
    changes.stage(WRITE_STAGE, Pace::Parallel);
    for (title, _) in RESTART_PLANES {
        changes.stage(*title, Pace::Parallel);
    }
    for h in &cluster_plan.hosts {
        let host = pool
            .get(&h.address)
            .ok_or_else(|| RotateError::NotConnected {
                host: h.address.clone(),
            })?;
        let docker = host.docker();
        let windows = cluster_plan.windows.contains_key(&h.address);
        let desired = host_files(h, &bundle, &spec, windows);
        let loaded = host_files(h, &loaded_bundle, &spec, windows);
        let on_disk = if windows {
            // The file helper is a Linux image: a Windows worker is read by the host agent.
            let paths: Vec<String> = desired.iter().map(|f| f.relative_path.clone()).collect();
            super::windows::observe_host(host, &h.prefix_path, &[], &paths)
                .await?
                .files
        } else {
            docker
                .ensure_image(&helper_image, &registries, &mut |_| {})
                .await?;
            files::read_dir(docker, &etc_kubernetes(h), &helper_image).await?
        };
        let changed: Vec<FileWrite> = files::changed(&desired, &on_disk)
            .into_iter()
            .map(|f| FileWrite {
                path: f.relative_path.clone(),
                mode: f.mode,
                reason: if on_disk.contains_key(&f.relative_path) {
                    "changed".into()
                } else {
                    "new".into()
                },
                contents: f.contents.clone(),
            })
            .collect();
        let readers = if windows {
            containers_to_restart(
                &kubernetes_view(&desired),
                &kubernetes_view(&loaded),
                &kubernetes_view_map(&on_disk),
            )
        } else {
            containers_to_restart(&desired, &loaded, &on_disk)
        };
        // A reader that exists but is stopped (a previous run interrupted between its stop and
        // its start) is started the same way.
        let mut running = BTreeSet::new();
        for name in readers {
            if h.containers.get(name).is_some_and(|c| c.start)
                && docker.inspect_container(name).await?.is_some()
            {
                running.insert(name);
            }
        }
        if !changed.is_empty() {
            changes.push(
                WRITE_STAGE,
                Pace::Parallel,
                &h.address,
                Action::WriteFileSet {
                    dir: files_root(h, windows),
                    files: changed,
                },
            );
        }
        for (title, names) in RESTART_PLANES {
            for name in names.iter().filter(|n| running.contains(*n)) {
                let check = h
                    .containers
                    .get(*name)
                    .and_then(|c| c.health_check.as_ref())
                    .map(|check| HealthProbe {
                        url: check.url.clone(),
                        // Checked with the rotated certificates, as the component now has them.
                        tls: check.client_certificate.as_ref().map(|c| TlsMaterial {
                            ca_pem: bundle
                                .get(pki::names::CA_CERT_NAME)
                                .map(|ca| ca.certificate_pem.clone()),
                            client_cert_pem: bundle.get(c).map(|c| c.certificate_pem.clone()),
                            client_key_pem: bundle.get(c).map(|c| c.key_pem.clone()),
                        }),
                    });
                changes.push(
                    *title,
                    Pace::Parallel,
                    &h.address,
                    Action::RestartAndCheck {
                        name: name.to_string(),
                        health_url: check.as_ref().map(|c| c.url.clone()),
                        check: check.map(Box::new),
                    },
                );
            }
        }
    }
    changes.push(
        KUBECONFIG_STAGE,
        Pace::OneAtATime,
        changeset::LOCAL,
        Action::WriteKubeconfig {
            path: cluster.files.kubeconfig_path.display().to_string(),
            contents: Sealed::new(cluster.admin_kubeconfig(&bundle)?.into_bytes()),
        },
    );
    changes.push(
        STATE_SECRET_STAGE,
        Pace::OneAtATime,
        changeset::CLUSTER,
        Action::SaveStateSecret {
            reason: "the rotated certificates".into(),
        },
    );
    if opts.rotate_ca {
        changes.push(
            PODS_STAGE,
            Pace::OneAtATime,
            changeset::CLUSTER,
            Action::DeletePods {
                labels: CA_CACHING_POD_LABELS
                    .iter()
                    .map(|l| l.to_string())
                    .collect(),
            },
        );
    }
    phase.done();

    if opts.dry_run {
        reporter.planned(&changes.planned());
        pool.close().await;
        return Ok(());
    }

    // 4. apply
    let phase = reporter.phase("save state");
    state.save(&cluster.files.state_path)?;
    reporter.info(format!(
        "Successfully Deployed state file at [{}]",
        cluster.files.state_path.display()
    ));
    phase.done();

    // RKE1 restarts every component whatever `--service` says (§33.13, a bug fixed here): only
    // the containers that read a changed file restart, so rotating the kubelet's certificates
    // leaves etcd and the control plane running.
    let exec = Executor::new(reporter, &helper_image, cluster.registry_credentials())
        .with_hosts(pool.hosts())
        .with_kubeconfig(cluster.files.kubeconfig_path.clone());
    for stage in &changes.stages {
        if stage.phase == STATE_SECRET_STAGE {
            // The kubeconfig was written: the new bundle becomes the current state.
            let phase = reporter.phase("current state");
            state.promote_desired_to_current();
            state.save(&cluster.files.state_path)?;
            exec.set_state_json(state.to_json()?);
            phase.done();
        }
        let failures = exec.apply_stage(stage, &runner).await;
        if failures.is_empty() {
            continue;
        }
        if stage.phase == STATE_SECRET_STAGE {
            // As in RKE1, the copy in the cluster is a convenience: failing to write it only warns.
            for (_, e) in failures {
                reporter.warn(format!("Failed to save full state to Kubernetes: {e}"));
            }
            continue;
        }
        pool.close().await;
        return Err(if stage.phase == PODS_STAGE {
            RotateError::Pods(failures)
        } else {
            RotateError::Stage {
                stage: stage.phase.to_string(),
                failures,
            }
        });
    }
    pool.close().await;
    reporter.info("Finished rotating certificates successfully");
    Ok(())
}

const WRITE_STAGE: &str = "certificates";
const KUBECONFIG_STAGE: &str = "admin kubeconfig";
const STATE_SECRET_STAGE: &str = "state secret";
const PODS_STAGE: &str = "system pods";

/// `host3 (10.77.0.13)` for each node whose address the connection problems name.
fn unreachable_names(cluster: &Cluster, problems: &hosts::HostProblems) -> String {
    let text = problems.to_string();
    let names: Vec<String> = cluster
        .config
        .nodes
        .iter()
        .filter(|n| text.contains(&n.address))
        .map(|n| {
            if n.hostname_override.is_empty() || n.hostname_override == n.address {
                n.address.clone()
            } else {
                format!("{} ({})", n.hostname_override, n.address)
            }
        })
        .collect();
    if names.is_empty() {
        "see below".to_string()
    } else {
        names.join(", ")
    }
}

/// The plan `up` would make for these hosts: which containers each host runs, their health
/// checks and the files they get.
fn build_plan(
    cluster: &Cluster,
    pool: &HostPool,
    encryption_config: &str,
) -> Result<ClusterPlan, RotateError> {
    let facts = crate::phases::host_facts(pool);
    let service_options = cluster.service_options()?;
    let windows_options = if facts.values().any(crate::plan::HostFacts::is_windows) {
        Some(cluster.windows_service_options()?)
    } else {
        None
    };
    let default_tools_tag = cluster.default_rke_tools_tag();
    plan::build(&plan::PlanInput {
        config: &cluster.config,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_order_is_etcd_then_control_plane_then_workers() {
        let order: Vec<&str> = RESTART_PLANES
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        assert_eq!(
            order,
            [
                plan::ETCD,
                plan::KUBE_APISERVER,
                plan::KUBE_CONTROLLER_MANAGER,
                plan::KUBE_SCHEDULER,
                plan::KUBELET,
                plan::KUBE_PROXY
            ]
        );
    }

    #[test]
    fn every_container_that_reads_a_certificate_has_a_restart_slot() {
        let slotted: BTreeSet<&str> = RESTART_PLANES
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        for file in [
            "ssl/kube-ca.pem",
            "ssl/kube-apiserver.pem",
            "ssl/kube-node.pem",
            "ssl/kube-proxy.pem",
            "ssl/kube-scheduler.pem",
            "ssl/kube-controller-manager.pem",
            "ssl/kube-etcd-10-0-0-1.pem",
            "ssl/kube-kubelet-10-0-0-1.pem",
            "ssl/kube-apiserver-proxy-client.pem",
        ] {
            for reader in crate::phases::certs::readers_of(file) {
                assert!(slotted.contains(reader), "{reader} of {file}");
            }
        }
    }
}
