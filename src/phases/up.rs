//! `rkers up`: RKE1's workflow (§9) as a sequence of phases over one SSH connection per host.
//!
//! 1. state: certificates generated or reconciled; the desired state is written before any host
//!    is touched (§9.1).
//! 2. connect: every host at once; any host that cannot be reached stops the run before anything
//!    changes, with every host's problem listed (RKE1 silently dropped them, §33.18).
//! 3. plan and observe: the desired containers and files of each host (pure), compared with what
//!    each host runs and holds; the result is the list of actions `--dry-run` prints.
//! 4. apply: files and certificates, images, etcd plane, control plane, RBAC, current state,
//!    worker plane, node labels and taints, in RKE1's order, hosts in parallel where safe.

use crate::cluster::{Cluster, ClusterError};
use crate::config::RkeConfig;
use crate::diff::{self, Action, ContainerView, HostActions};
use crate::hosts::{self, Host, HostPool, SshOptions};
use crate::kubeapi::drain::DrainOptions;
use crate::kubeapi::{KubeApi, NodeSync, TaintSpec};
use crate::output::Reporter;
use crate::phases::certs::containers_to_restart;
use crate::phases::files::{self, DesiredFile};
use crate::phases::health::{self, TlsMaterial};
use crate::phases::reconcile::{self, OldHost};
use crate::phases::{PhaseError, Runner, upgrade};
use crate::pki::{self, Bundle};
use crate::plan::{self, ClusterPlan, HostPlan};
use crate::state::StateFile;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub struct UpOptions {
    pub dry_run: bool,
    pub force: bool,
    pub disable_port_check: bool,
    pub custom_certs: Option<PathBuf>,
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    /// `--ignore-docker-version` given on the command line; otherwise the config's value counts.
    pub ignore_docker_version_flag: bool,
    pub ssh: SshOptions,
    /// `--yes`: adopt a cluster whose state rkers did not write without asking.
    pub yes: bool,
    /// Asks the operator to confirm the adoption summary it is shown; `None` when nobody can be
    /// asked (no terminal), and then only `yes` adopts.
    pub confirm: Option<crate::phases::adoption::ConfirmAdoption>,
    /// `--ignore-blocking-webhooks`: go on although a webhook blocks system pods.
    pub ignore_blocking_webhooks: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UpError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Phase(#[from] PhaseError),
    #[error("{0}")]
    Adoption(#[from] crate::phases::adoption::AdoptionRefused),
    #[error("{0}")]
    Other(String),
}

fn other(e: impl std::fmt::Display) -> UpError {
    UpError::Other(e.to_string())
}

/// Containers RKE1 may have left on a host that the plan does not ask for there.
const KNOWN_CONTAINERS: &[&str] = &[
    plan::ETCD,
    plan::ETCD_ROLLING_SNAPSHOTS,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
    plan::KUBELET,
    plan::KUBE_PROXY,
    plan::NGINX_PROXY,
    plan::SERVICE_SIDEKICK,
];
const ETCD_PLANE: &[&str] = &[plan::ETCD, plan::ETCD_ROLLING_SNAPSHOTS];
const CONTROL_PLANE: &[&str] = &[
    plan::SERVICE_SIDEKICK,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
];
const WORKER_PLANE: &[&str] = &[
    plan::NGINX_PROXY,
    plan::SERVICE_SIDEKICK,
    plan::KUBELET,
    plan::KUBE_PROXY,
];

/// What one host runs and holds, as far as `up` compares it.
#[derive(Default)]
struct Observed {
    containers: BTreeMap<String, hosts::ObservedContainer>,
    files: BTreeMap<String, Vec<u8>>,
    /// Mode and owner of each file in `files`; empty on Windows workers, whose files carry ACLs.
    file_meta: BTreeMap<String, files::FileMeta>,
    /// Image → its default environment when the host has it.
    images: BTreeMap<String, Option<Vec<String>>>,
    /// Windows workers: directories and wins as found (`files` holds their files).
    windows: Option<super::windows::WindowsObserved>,
}

/// A host that left the cluster, as `up` found it.
struct RemovedHost {
    gone: OldHost,
    /// The connection and how to clean the host; `None` when it cannot be reached: only its
    /// node is deleted.
    reachable: Option<(Arc<Host>, reconcile::HostCleanup)>,
    /// The containers it still runs.
    present: Vec<String>,
}

/// Everything the apply phases need, shared by the host tasks.
struct Run {
    pool: HostPool,
    plan: ClusterPlan,
    bundle: Bundle,
    files: BTreeMap<String, Vec<DesiredFile>>,
    actions: BTreeMap<String, Vec<Action>>,
    registries: Vec<hosts::target::RegistryCredential>,
    helper_image: String,
    recon: reconcile::Changes,
    /// Hosts that left the cluster.
    removed: Vec<RemovedHost>,
    /// New etcd members started by the join step; the etcd plane leaves their etcd alone.
    joined: std::sync::Mutex<BTreeSet<String>>,
    /// `address/container` of every container brought to its planned state in this run: a
    /// control plane host's worker components are upgraded with its control plane (§17.2), and
    /// the worker plane must not apply them a second time.
    /// The early worker plane and the control plane both bring up service-sidekick on a new
    /// cluster's control plane hosts: the later caller waits for the first one's result.
    applied: std::sync::Mutex<BTreeMap<String, Arc<tokio::sync::OnceCell<()>>>>,
    service_options: plan::ServiceOptions,
    windows_service_options: Option<plan::ServiceOptions>,
    facts: BTreeMap<String, plan::HostFacts>,
    encryption_config: Option<String>,
    default_tools_tag: Option<String>,
}

impl Run {
    fn host_plan(&self, address: &str) -> &HostPlan {
        self.plan
            .hosts
            .iter()
            .find(|h| h.address == address)
            .expect("planned host")
    }

    fn host(&self, address: &str) -> &Arc<Host> {
        self.pool.get(address).expect("connected host")
    }
}

pub async fn up(cluster: &Cluster, opts: &UpOptions, reporter: &Reporter) -> Result<(), UpError> {
    let runner = Runner::new(reporter.clone(), opts.ssh.concurrency);

    // 1. state
    let phase = reporter.phase("state");
    let old = cluster.load_state()?;
    let old_current = old
        .as_ref()
        .and_then(|s| s.current_state.rke_config.as_ref())
        .map(RkeConfig::from_state_json)
        .transpose()
        .map_err(|e| {
            other(format!(
                "{}: currentState.rkeConfig: {e}",
                cluster.files.state_path.display()
            ))
        })?;
    // The new state is saved once the run is known to go ahead (after the adoption question
    // and the check for a running cluster without state) and before any host changes.
    let (state, changes) = cluster.init_state(old.as_ref(), opts.custom_certs.as_deref())?;
    tracing::debug!(changed = ?changes.changed, removed = ?changes.removed, "certificates");
    phase.done();

    // 2. connect
    let phase = reporter.phase("connect");
    let targets = cluster.ssh_targets(opts.agent_override);
    let pool = match HostPool::connect(&targets, &opts.ssh).await {
        Ok(pool) => pool,
        Err(problems) => {
            phase.fail(&problems.summary());
            return Err(UpError::Other(problems.to_string().trim_end().to_string()));
        }
    };
    check_docker_versions(cluster, &pool, opts, reporter)?;
    let recon =
        reconcile::changes(old_current.as_ref(), &cluster.config).map_err(UpError::Other)?;
    let hosts_added = match &old_current {
        None => true,
        Some(old) => cluster.config.nodes.iter().any(|n| {
            !old.nodes
                .iter()
                .any(|o| o.address == n.address && n.role.iter().all(|r| o.role.contains(r)))
        }),
    };
    if opts.disable_port_check || opts.dry_run {
        // The checks start listener containers; a dry run changes nothing.
    } else if !hosts_added {
        tracing::debug!("no host or role added: port checks skipped, as RKE1 does (§10)");
    } else {
        port_checks(cluster, &pool, reporter).await?;
    }
    let removed_pool = connect_removed(old_current.as_ref(), &recon, opts, reporter).await;
    phase.done();

    // 3. plan and observe
    let phase = reporter.phase("plan");
    let facts: BTreeMap<String, plan::HostFacts> = pool
        .hosts()
        .map(|h| {
            let f = h.facts();
            (
                h.name().to_string(),
                plan::HostFacts {
                    os_type: f.os_type.clone(),
                    operating_system: f.operating_system.clone(),
                    docker_root_dir: f.docker_root_dir.clone(),
                    selinux_enabled: f.selinux,
                    arch: f.arch.clone(),
                    cgroup_driver: f.cgroup_driver.clone(),
                },
            )
        })
        .collect();
    let windows_problems = plan::validate_windows(&cluster.config, &facts);
    if !windows_problems.is_empty() {
        let message = format!(
            "Windows hosts cannot be used as configured:\n  - {}",
            windows_problems.join("\n  - ")
        );
        phase.fail(&message);
        return Err(UpError::Other(message));
    }
    let service_options = cluster.service_options()?;
    // Only asked for when a Windows host is present: Linux-only clusters need no Windows flags.
    let windows_options = if facts.values().any(|f| f.os_type == "windows") {
        Some(cluster.windows_service_options()?)
    } else {
        None
    };
    let default_tools_tag = cluster.default_rke_tools_tag();
    let etcd = plan::EtcdContext::fresh();
    let cluster_plan = plan::build(&plan::PlanInput {
        config: &cluster.config,
        service_options: &service_options,
        windows_service_options: windows_options.as_ref(),
        host_facts: &facts,
        etcd: &etcd,
        encryption_config: (!state.desired_state.encryption_config.is_empty())
            .then_some(state.desired_state.encryption_config.as_str()),
        default_rke_tools_tag: default_tools_tag.as_deref(),
    })
    .map_err(other)?;
    let spec = cluster.pki_spec()?;
    let bundle = state.desired_state.certificates_bundle.clone();
    let desired_files: BTreeMap<String, Vec<DesiredFile>> = cluster_plan
        .hosts
        .iter()
        .map(|h| {
            let windows = cluster_plan.windows.contains_key(&h.address);
            (h.address.clone(), host_files(h, &bundle, &spec, windows))
        })
        .collect();
    let helper_image = cluster.config.system_images.cert_downloader.clone();
    let registries = cluster.registry_credentials();
    let observed = observe(
        &pool,
        &cluster_plan,
        &bundle,
        &desired_files,
        &helper_image,
        &registries,
    )
    .await?;
    let expiry_view: Vec<(&str, BTreeMap<String, Vec<u8>>)> = observed
        .iter()
        .map(|(a, o)| {
            let files = if o.windows.is_some() {
                kubernetes_view_map(&o.files)
            } else {
                o.files.clone()
            };
            (a.as_str(), files)
        })
        .collect();
    crate::phases::certs::warn_expiring(reporter, expiry_view.iter().map(|(a, f)| (*a, f)));
    guard_existing_cluster(
        old.as_ref(),
        &observed,
        opts.force,
        &cluster.files.state_path,
    )?;
    let mut all_actions = Vec::new();
    let mut actions = BTreeMap::new();
    for host_plan in &cluster_plan.hosts {
        let obs = &observed[&host_plan.address];
        // What the containers were started with: a run stopped after writing files but before
        // restarting their readers (e.g. `cert rotate`) still restarts them now.
        let windows = cluster_plan.windows.contains_key(&host_plan.address);
        let loaded = old.as_ref().map_or_else(Vec::new, |s| {
            host_files(
                host_plan,
                &s.current_state.certificates_bundle,
                &spec,
                windows,
            )
        });
        let list = host_actions(host_plan, obs, &desired_files[&host_plan.address], &loaded);
        all_actions.push(HostActions {
            host: host_plan.address.clone(),
            actions: list.clone(),
        });
        actions.insert(host_plan.address.clone(), list);
    }
    for a in &recon.etcd_added {
        if let (Some(list), Some(h)) = (
            actions.get_mut(a),
            cluster_plan.hosts.iter().find(|h| &h.address == a),
        ) {
            let add = Action::AddEtcdMember {
                member: reconcile::member_name(&h.hostname),
                peer_url: reconcile::peer_url(&h.internal_address),
            };
            list.insert(0, add.clone());
            if let Some(shown) = all_actions.iter_mut().find(|x| &x.host == a) {
                shown.actions.insert(0, add);
            }
        }
    }
    for gone in &recon.etcd_removed {
        if let Some(list) = actions.get_mut(&gone.address) {
            let remove = Action::RemoveEtcdMember {
                member: reconcile::member_name(&gone.hostname),
            };
            list.insert(0, remove.clone());
            if let Some(shown) = all_actions.iter_mut().find(|x| x.host == gone.address) {
                shown.actions.insert(0, remove);
            }
        }
    }
    // calico/canal: the runtime directories and their tmpfiles.d entry (incidents.md §1).
    let calico = crate::doctor::guard::calico_actions(cluster, &pool)
        .await
        .map_err(other)?;
    for (address, extra) in calico {
        crate::doctor::guard::append(&mut actions, &mut all_actions, &address, extra);
    }
    let mut removed = Vec::new();
    let old_sidekick = old_current
        .as_ref()
        .map(|c| c.system_images.kubernetes_services_sidecar.clone())
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| {
            cluster
                .config
                .system_images
                .kubernetes_services_sidecar
                .clone()
        });
    for gone in &recon.removed_hosts {
        let host = removed_pool
            .as_ref()
            .and_then(|p| p.get(&gone.address))
            .cloned();
        let reachable = host.map(|h| {
            let prefix = old_current
                .as_ref()
                .map(|c| c.prefix_path.as_str())
                .unwrap_or_default();
            let prefix = plan::host_prefix_path(prefix, &h.facts().operating_system);
            let cleanup = reconcile::HostCleanup::for_host(
                &h.facts().os_type,
                &prefix,
                gone.etcd,
                &old_sidekick,
            );
            (h, cleanup)
        });
        let mut present = Vec::new();
        if let Some((host, cleanup)) = &reachable {
            for name in cleanup.containers(KNOWN_CONTAINERS) {
                if host
                    .docker()
                    .inspect_container(name)
                    .await
                    .map_err(other)?
                    .is_some()
                {
                    present.push(name.to_string());
                }
            }
        }
        all_actions.push(HostActions {
            host: gone.address.clone(),
            actions: reconcile::removed_host_actions(
                gone,
                &present,
                reachable.as_ref().map(|(_, c)| c),
            ),
        });
        removed.push(RemovedHost {
            gone: gone.clone(),
            reachable,
            present,
        });
    }
    let adoption = old
        .as_ref()
        .filter(|s| !s.current_state.is_empty() && !s.written_by_rkers())
        .map(|_| {
            let found = cluster_plan
                .hosts
                .iter()
                .map(|h| crate::phases::adoption::FoundHost {
                    host: h.address.clone(),
                    containers: observed[&h.address].containers.keys().cloned().collect(),
                })
                .collect();
            crate::phases::adoption::Adoption::new(
                &cluster.files.state_path,
                &cluster.config.kubernetes_version,
                found,
                &all_actions,
            )
        });
    phase.done();
    if old_current.is_some() {
        // incidents.md §3: never restart system pods into a webhook that refuses them.
        crate::doctor::guard::check_webhooks_before_changes(
            cluster,
            opts.ignore_blocking_webhooks,
            opts.dry_run,
            reporter,
        )
        .await
        .map_err(UpError::Other)?;
    }
    if let Some(adoption) = &adoption {
        let mut event = crate::output::Event::new(crate::output::Status::Info);
        event.phase = Some("adoption".into());
        event.message = Some(format!(
            "adopting a cluster whose state rkers did not write: {} change(s), {} restart or \
             recreate a container",
            adoption.changes.len(),
            adoption.restarts()
        ));
        event.data = serde_json::to_value(adoption).ok();
        reporter.emit(event);
        if !reporter.is_json() {
            eprint!("{}", adoption.render());
        }
        if !opts.dry_run {
            crate::phases::adoption::confirm(adoption, opts.yes, opts.confirm.as_deref())?;
        }
    }

    if opts.dry_run {
        if reporter.is_json() {
            for h in &all_actions {
                println!("{}", serde_json::to_string(h).map_err(other)?);
            }
        } else {
            print!("{}", diff::render_dry_run(&all_actions));
            if let Some(old) = &old_current {
                for line in rolling_summary(cluster, old, &cluster_plan, &actions) {
                    println!("{line}");
                }
            }
        }
        crate::phases::addons::dry_run_addons(cluster, reporter)
            .await
            .map_err(other)?;
        pool.close().await;
        return Ok(());
    }

    // Written only now, once no check refused the run and the adoption (if any) is confirmed,
    // and still before any host changes (§9.1): a run that refuses leaves the state file as it
    // was.
    save_desired_state(cluster, &state, reporter)?;

    let run = Arc::new(Run {
        pool,
        plan: cluster_plan,
        bundle,
        files: desired_files,
        actions,
        registries,
        helper_image,
        recon,
        removed,
        joined: Default::default(),
        applied: Default::default(),
        service_options,
        windows_service_options: windows_options,
        facts,
        encryption_config: (!state.desired_state.encryption_config.is_empty())
            .then(|| state.desired_state.encryption_config.clone()),
        default_tools_tag,
    });

    // 4. apply
    apply_files(&run, &runner).await?;
    crate::doctor::guard::apply_calico_actions(cluster, &run.pool, &run.actions, reporter)
        .await
        .map_err(other)?;
    cluster
        .write_admin_kubeconfig(&run.bundle, reporter)
        .map_err(other)?;
    // A new cluster's kubelets start while etcd and the control plane come up
    // (early_worker_plane); worker-only hosts pull their images there too. The set's task is
    // aborted when `up` returns early.
    let (early_hosts, worker_only) = match &old_current {
        None => early_worker_hosts(&run),
        Some(_) => (Vec::new(), Vec::new()),
    };
    // Every container below needs its image: the planes start once their hosts have them.
    // etcd and control plane hosts pull first, so they never queue behind the workers at a
    // registry.
    pull_images(&run, &runner, &worker_only).await?;
    let mut early_workers = tokio::task::JoinSet::new();
    if !early_hosts.is_empty() {
        // A budget of its own: hosts waiting for kubelet must not hold back etcd.
        let early_runner = Runner::new(reporter.clone(), opts.ssh.concurrency);
        early_workers.spawn(early_worker_plane(
            run.clone(),
            early_runner,
            early_hosts.clone(),
            worker_only,
        ));
    }
    prepare_windows(&run, &runner).await?;
    if let Some(old) = old.as_ref().filter(|o| {
        !o.current_state.encryption_config.is_empty()
            && state.desired_state.encryption_config.is_empty()
    }) {
        let phase = reporter.phase("disable encryption");
        let r = crate::phases::encryption::disable(cluster, old, &run.pool, reporter).await;
        finish(
            phase,
            r.map_err(|e| PhaseError::Phase {
                phase: "disable encryption".into(),
                message: e,
            }),
        )?;
    }
    // The waits that remain on a new cluster: kube-apiserver exits when etcd does not answer,
    // so the control plane waits for the etcd plane; RBAC and the state Secret need the API.
    remove_etcd_members(&run, &runner).await?;
    join_etcd_members(cluster, &run, &runner).await?;
    etcd_plane(&run, &runner).await?;
    // An existing cluster is upgraded host by host within `upgrade_strategy`'s budgets, through
    // the API server it already has; a new one comes up all at once (§17.1).
    let upgrade_api = match &old_current {
        Some(_) => {
            let kubeconfig =
                std::fs::read_to_string(&cluster.files.kubeconfig_path).map_err(other)?;
            KubeApi::from_kubeconfig(&kubeconfig).await.ok()
        }
        None => None,
    };
    if let Some(old) = &old_current {
        upgrade_control_plane(cluster, old, &run, &runner, upgrade_api.as_ref()).await?;
    } else {
        plane(&run, &runner, "control plane", CONTROL_PLANE, |h| {
            h.roles.controlplane
        })
        .await?;
    }

    let phase = reporter.phase("authz");
    let kubeconfig = std::fs::read_to_string(&cluster.files.kubeconfig_path).map_err(other)?;
    let api = KubeApi::from_kubeconfig(&kubeconfig).await.map_err(other)?;
    let rbac =
        cluster.config.authorization.mode.is_empty() || cluster.config.authorization.mode == "rbac";
    api.apply_authz(rbac).await.map_err(other)?;
    phase.done();
    let applied = old
        .as_ref()
        .map(|o| o.current_state.encryption_config.as_str());
    if !state.desired_state.encryption_config.is_empty()
        && applied != Some(state.desired_state.encryption_config.as_str())
    {
        // Encryption newly on, or a different provider: Secrets stored before are rewritten
        // with the provider now first (§23).
        let phase = reporter.phase("rewrite secrets");
        let r = crate::phases::encryption::rewrite_secrets(&api, reporter).await;
        finish(
            phase,
            r.map(|_| ()).map_err(|e| PhaseError::Phase {
                phase: "rewrite secrets".into(),
                message: e,
            }),
        )?;
    }

    // RKE1's order (§9): the state is recorded once the control plane answers, before the
    // worker plane; on a new cluster the kubelets already run, only kube-proxy waits for it.
    let phase = reporter.phase("save state");
    let mut state = state;
    state.promote_desired_to_current();
    state.save(&cluster.files.state_path).map_err(other)?;
    api.save_state_secret(&state.to_json().map_err(other)?)
        .await
        .map_err(other)?;
    phase.done();

    if let Some(old) = &old_current {
        upgrade_worker_plane(cluster, old, &run, &runner, Some(&api)).await?;
    } else {
        if let Some(early) = early_workers.join_next().await {
            early.map_err(other)??;
            // kube-proxy v1.20 looks its Node up once it starts and backs off 1, 2, 4, 8 s
            // while it is missing: the kubelets started early register theirs any moment now,
            // and waiting for that here, 4 times a second, saves kube-proxy's coarse retries.
            // Bounded: kube-proxy still retries by itself after.
            let hostnames: Vec<String> = early_hosts
                .iter()
                .map(|a| run.host_plan(a).hostname.clone())
                .collect();
            let phase = reporter.phase("node registration");
            let missing =
                crate::kubeapi::nodes::wait_registered(&api, &hostnames, Duration::from_secs(30))
                    .await;
            if !missing.is_empty() {
                tracing::debug!(?missing, "nodes not registered yet; kube-proxy will retry");
            }
            phase.done();
        }
        // kube-proxy everywhere, and the worker components of etcd and control plane hosts.
        plane(&run, &runner, "worker plane", WORKER_PLANE, |_| true).await?;
    }
    sync_nodes(cluster, old_current.as_ref(), &run, &api, &runner).await?;
    remove_hosts(&run, &api, &runner).await?;
    link_logs(&run, &runner).await?;
    crate::phases::addons::deploy_addons(cluster, &api, reporter)
        .await
        .map_err(other)?;
    run.pool.close().await;
    reporter.info("Finished building Kubernetes cluster successfully");
    Ok(())
}

fn check_docker_versions(
    cluster: &Cluster,
    pool: &HostPool,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let ignore =
        opts.ignore_docker_version_flag || cluster.config.ignore_docker_version.unwrap_or(false);
    let minor = crate::metadata::K8sVersion::parse(&cluster.config.kubernetes_version)
        .map(|v| v.docker_key())
        .unwrap_or_default();
    let supported = cluster.catalog.docker_versions(&minor);
    let mut problems = Vec::new();
    for host in pool.hosts() {
        let version = &host.facts().docker_version;
        match hosts::check_docker_version(version, &supported, ignore) {
            hosts::DockerVersionCheck::Unsupported { supported } => problems.push(format!(
                "Unsupported Docker version found [{version}] on host [{}], supported versions are [{supported}] (set ignore_docker_version: true or pass --ignore-docker-version to go ahead)",
                host.name()
            )),
            hosts::DockerVersionCheck::NewerThanKnown { newest_known } => reporter.warn(format!(
                "host {}: Docker {version} is newer than the newest version known for Kubernetes {minor} ({newest_known}); going ahead",
                host.name()
            )),
            _ => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(UpError::Other(problems.join("\n")))
    }
}

/// The certificates, keys and kubeconfigs a host gets (§11.1, §12), plus the plan's files,
/// by path relative to [`files_root`]. On a Windows worker the plan's own kubeconfigs (Windows
/// certificate paths) replace the ones the PKI renders for Linux.
pub(crate) fn host_files(
    h: &HostPlan,
    bundle: &Bundle,
    spec: &pki::PkiSpec,
    windows: bool,
) -> Vec<DesiredFile> {
    let mut out: Vec<DesiredFile> = Vec::new();
    let rel = |p: &str| {
        if windows {
            p.strip_prefix(h.prefix_path.as_str())
                .or_else(|| p.strip_prefix('/'))
                .map(str::to_string)
        } else {
            p.strip_prefix("/etc/kubernetes/").map(str::to_string)
        }
    };
    let mut add = |file: DesiredFile| match out
        .iter_mut()
        .find(|f| f.relative_path == file.relative_path)
    {
        Some(existing) => *existing = file,
        None => out.push(file),
    };
    if let Some(pki_host) = spec.hosts.iter().find(|p| p.address == h.address) {
        for cert in pki::certs_for_host(bundle, spec, pki_host) {
            for (path, contents) in [
                (&cert.path, &cert.certificate_pem),
                (&cert.key_path, &cert.key_pem),
                (&cert.config_path, &cert.config),
            ] {
                if let (Some(rel), false) = (rel(path), contents.is_empty()) {
                    add(DesiredFile {
                        relative_path: rel,
                        contents: contents.as_bytes().to_vec(),
                        mode: 0o600,
                    });
                }
            }
        }
    }
    for f in &h.files {
        if f.remove_when_empty && f.contents.is_empty() {
            continue;
        }
        if let Some(rel) = rel(&f.container_path) {
            add(DesiredFile {
                relative_path: rel,
                contents: f.contents.as_bytes().to_vec(),
                mode: f.mode,
            });
        }
    }
    out
}

/// The directory a host's files are kept relative to: `<prefix>/etc/kubernetes` on Linux; the
/// drive root on a Windows worker, whose plan also writes CNI, flannel, nginx and wins files.
pub(crate) fn files_root(h: &HostPlan, windows: bool) -> String {
    if windows {
        h.prefix_path.clone()
    } else {
        etc_kubernetes(h)
    }
}

/// A Windows worker's files seen as Linux keeps them (relative to `etc/kubernetes`), for the
/// rules keyed on those paths: which containers read a file, certificate expiry.
pub(crate) fn kubernetes_view(files: &[DesiredFile]) -> Vec<DesiredFile> {
    files
        .iter()
        .filter_map(|f| {
            Some(DesiredFile {
                relative_path: f.relative_path.strip_prefix("etc/kubernetes/")?.to_string(),
                ..f.clone()
            })
        })
        .collect()
}

pub(crate) fn kubernetes_view_map(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .filter_map(|(rel, c)| Some((rel.strip_prefix("etc/kubernetes/")?.to_string(), c.clone())))
        .collect()
}

pub(crate) fn etc_kubernetes(h: &HostPlan) -> String {
    plan::join_path(&[&h.prefix_path, "/etc/kubernetes"])
}

async fn observe(
    pool: &HostPool,
    cluster_plan: &ClusterPlan,
    bundle: &Bundle,
    desired_files: &BTreeMap<String, Vec<DesiredFile>>,
    helper_image: &str,
    registries: &[hosts::target::RegistryCredential],
) -> Result<BTreeMap<String, Observed>, UpError> {
    let tasks = cluster_plan.hosts.iter().map(|h| async move {
        let host = pool
            .get(&h.address)
            .ok_or_else(|| other(format!("host {} not connected", h.address)))?;
        let docker = host.docker();
        let mut obs = Observed::default();
        for name in KNOWN_CONTAINERS {
            if let Some(c) = docker.inspect_container(name).await.map_err(other)? {
                obs.containers.insert(name.to_string(), c);
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
        if let Some(setup) = cluster_plan.windows.get(&h.address) {
            // The file helper is a Linux image: a Windows worker is read by the host agent.
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
            // Keys an older run or RKE1 may have left there, for the least-privilege clean-up.
            paths.extend(
                bundle
                    .values()
                    .filter_map(|c| c.key_path.strip_prefix('/'))
                    .map(str::to_string),
            );
            paths.sort();
            paths.dedup();
            let found =
                super::windows::observe_host(host, &h.prefix_path, &setup.directories, &paths)
                    .await
                    .map_err(other)?;
            obs.files = found.files.clone();
            obs.windows = Some(found);
            return Ok((h.address.clone(), obs));
        }
        // Reading the files needs the helper image on the host.
        docker
            .ensure_image(helper_image, registries, &mut |_| {})
            .await
            .map_err(other)?;
        (obs.files, obs.file_meta) =
            files::read_dir_with_meta(docker, &etc_kubernetes(h), helper_image)
                .await
                .map_err(other)?;
        Ok::<_, UpError>((h.address.clone(), obs))
    });
    futures::future::join_all(tasks).await.into_iter().collect()
}

fn save_desired_state(
    cluster: &Cluster,
    state: &StateFile,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let path = &cluster.files.state_path;
    let backup = state.save(path).map_err(other)?;
    let kept = crate::state::backup_note(backup.as_deref());
    reporter.info(format!(
        "Successfully Deployed state file at [{}]{kept}",
        path.display()
    ));
    Ok(())
}

/// RKE1 would create a new CA over a running cluster when the state file is lost (§32 pain
/// point 5); rkers refuses unless told to.
fn guard_existing_cluster(
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
        .map(|ca| ca.certificate_pem.trim());
    let ours = |o: &Observed| {
        state_ca.is_some_and(|ca| {
            o.files
                .get("ssl/kube-ca.pem")
                .is_some_and(|f| String::from_utf8_lossy(f).trim() == ca)
        })
    };
    let busy: Vec<String> = observed
        .iter()
        .filter(|(_, o)| !ours(o))
        .filter_map(|(host, o)| {
            let names: Vec<&str> = [plan::ETCD, plan::KUBE_APISERVER, plan::KUBELET]
                .into_iter()
                .filter(|n| o.containers.contains_key(*n))
                .collect();
            (!names.is_empty()).then(|| format!("{host} ({})", names.join(", ")))
        })
        .collect();
    if busy.is_empty() {
        return Ok(());
    }
    Err(UpError::Other(format!(
        "hosts already run Kubernetes containers but there is no cluster state at {}: {}. \
         Running `up` now would issue new certificates and break that cluster; nothing was \
         written. Recover the state (`rkers util get-state-file`, or a backup \
         <state>.<time>.bak next to it), or pass --force to build a new cluster over it.",
        state_path.display(),
        busy.join("; ")
    )))
}

fn view(spec: &plan::ContainerSpec) -> ContainerView {
    ContainerView {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        security_opt: spec.security_opt.clone(),
    }
}

fn observed_view(c: &hosts::ObservedContainer) -> diff::ObservedContainer {
    diff::ObservedContainer {
        id: c.id.clone(),
        running: c.running,
        restarting: c.restarting,
        config: ContainerView {
            image: c.image.clone(),
            entrypoint: c.entrypoint.clone(),
            cmd: c.cmd.clone(),
            env: c.env.clone(),
            binds: c.binds.clone(),
            security_opt: c.security_opt.clone(),
        },
    }
}

fn host_actions(
    h: &HostPlan,
    obs: &Observed,
    desired_files: &[DesiredFile],
    loaded: &[DesiredFile],
) -> Vec<Action> {
    let mut actions = Vec::new();
    let windows = obs.windows.as_ref();
    let root = files_root(h, windows.is_some());
    if let Some(w) = windows
        && !w.missing_directories.is_empty()
    {
        actions.push(Action::CreateDirectories {
            paths: w.missing_directories.clone(),
        });
    }
    let changed_files = files::changed(desired_files, &obs.files);
    for f in &changed_files {
        let new = !obs.files.contains_key(&f.relative_path);
        let mut reason = if new { "new" } else { "changed" }.to_string();
        if let Some(why) = diff::newer_default_for_file(&f.relative_path, new) {
            reason = format!("{reason}; {why}");
        }
        actions.push(Action::UploadFile {
            path: plan::join_path(&[&root, &f.relative_path]),
            reason,
        });
    }
    // Files the plan no longer asks for, or asks for empty, are deleted as RKE1's deployer does;
    // a path some container's flags still name was put there by the user and stays.
    let flags_name = |path: &str| {
        h.containers
            .values()
            .any(|c| c.entrypoint.iter().chain(&c.cmd).any(|a| a.contains(path)))
    };
    for path in plan::optional_files(h.roles.controlplane) {
        let planned = h
            .files
            .iter()
            .find(|f| f.container_path == *path)
            .is_some_and(|f| !f.contents.is_empty());
        let rel = if windows.is_some() {
            path.strip_prefix('/')
        } else {
            path.strip_prefix("/etc/kubernetes/")
        };
        if let Some(rel) = rel
            && !planned
            && obs.files.contains_key(rel)
            && !flags_name(path)
        {
            actions.push(Action::RemoveFile {
                path: plan::join_path(&[&root, rel]),
                reason: "no longer configured".into(),
            });
        }
    }
    let uploaded: BTreeSet<&str> = changed_files
        .iter()
        .map(|f| f.relative_path.as_str())
        .collect();
    actions.extend(least_privilege_actions(
        h,
        obs,
        desired_files,
        &uploaded,
        &root,
        flags_name,
    ));
    let mut pulls = BTreeSet::new();
    for spec in h.containers.values() {
        if obs.images.get(&spec.image).is_none_or(|e| e.is_none()) {
            pulls.insert(spec.image.clone());
        }
    }
    actions.extend(pulls.into_iter().map(|image| Action::PullImage { image }));
    // In the order `up` takes them: wins comes out of an image pulled just before.
    if let Some(w) = windows {
        actions.extend(wins_actions(h, w, desired_files, &obs.files));
    }
    for (name, spec) in &h.containers {
        let observed = obs.containers.get(name).map(observed_view);
        let image_env = obs.images.get(&spec.image).cloned().flatten();
        let dont_care: fn(&str) -> bool = if name == plan::ETCD {
            plan::is_etcd_dont_care_arg
        } else {
            diff::nothing
        };
        if let Some(a) = diff::container_action(
            name,
            &view(spec),
            spec.start,
            observed.as_ref(),
            image_env.as_deref(),
            dont_care,
        ) {
            actions.push(a);
        }
    }
    // A certificate that changed in place is only read again when its container restarts
    // (§22.2 step 6); containers already being created or recreated need nothing more.
    let touched: BTreeSet<String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateContainer { name, .. }
            | Action::RecreateContainer { name, .. }
            | Action::StartContainer { name } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let restarts: BTreeSet<&str> = if windows.is_some() {
        containers_to_restart(
            &kubernetes_view(desired_files),
            &kubernetes_view(loaded),
            &kubernetes_view_map(&obs.files),
        )
    } else {
        containers_to_restart(desired_files, loaded, &obs.files)
    };
    for name in restarts {
        let running = obs.containers.get(name).is_some_and(|c| c.running);
        if running && h.containers.contains_key(name) && !touched.contains(name) {
            actions.push(Action::RestartContainer {
                name: name.to_string(),
            });
        }
    }
    for name in KNOWN_CONTAINERS {
        if obs.containers.contains_key(*name) && !h.containers.contains_key(*name) {
            actions.push(Action::RemoveContainer {
                name: name.to_string(),
                reason: "not planned for this host's roles".into(),
            });
        }
    }
    actions
}

/// Least privilege on the host's files (issue 21): private keys none of the host's containers
/// read are deleted (RKE1 and rkers before it gave every node every node's kubelet pair and
/// every etcd node every member's pair), and the planned files that must be private get their
/// mode and owner. Neither restarts anything: the content the containers read stays the same.
/// A key some container's flags name was put there by the user and stays.
fn least_privilege_actions(
    h: &HostPlan,
    obs: &Observed,
    desired_files: &[DesiredFile],
    // The files this run uploads: they get the planned mode from the archive, owned by root.
    uploaded: &BTreeSet<&str>,
    root: &str,
    flags_name: impl Fn(&str) -> bool,
) -> Vec<Action> {
    let windows = obs.windows.is_some();
    // Paths as Linux keeps them, relative to /etc/kubernetes.
    let view = |rel: &str| -> Option<String> {
        if windows {
            rel.strip_prefix("etc/kubernetes/").map(str::to_string)
        } else {
            Some(rel.to_string())
        }
    };
    let desired: BTreeSet<&str> = desired_files
        .iter()
        .map(|f| f.relative_path.as_str())
        .collect();
    let mut actions = Vec::new();
    for rel in obs.files.keys() {
        let Some(linux_path) = view(rel) else {
            continue;
        };
        if plan::permissions::is_private_key(&linux_path)
            && !desired.contains(rel.as_str())
            && !flags_name(&format!("/etc/kubernetes/{linux_path}"))
        {
            actions.push(Action::RemoveFile {
                path: plan::join_path(&[root, rel]),
                reason: "private key no container on this host reads".into(),
            });
        }
    }
    if windows {
        // Windows files are protected by their ACL, set when they are written.
        return actions;
    }
    let etcd_user =
        plan::permissions::etcd_user(h.containers.get(plan::ETCD).and_then(|c| c.user.as_deref()));
    for f in desired_files {
        let Some(want) = plan::permissions::required(&f.relative_path, etcd_user) else {
            continue;
        };
        // An uploaded file gets the planned mode from the archive, owned by root.
        let have = if uploaded.contains(f.relative_path.as_str()) {
            Some(files::FileMeta {
                mode: f.mode,
                uid: 0,
                gid: 0,
            })
        } else {
            obs.file_meta.get(&f.relative_path).copied()
        };
        let Some(have) = have else {
            continue;
        };
        if (have.mode, have.uid, have.gid) != (want.mode, want.uid, want.gid) {
            actions.push(Action::SetFileMode {
                path: plan::join_path(&[root, &f.relative_path]),
                mode: want.mode,
                uid: want.uid,
                gid: want.gid,
                was: format!("{:04o} {}:{}", have.mode, have.uid, have.gid),
            });
        }
    }
    actions
}

/// What a Windows worker needs of wins: the binary, the service registered and running, and a
/// restart when its config (the process whitelist) changes.
fn wins_actions(
    h: &HostPlan,
    w: &super::windows::WindowsObserved,
    desired_files: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if !w.wins.exe_present
        && let Some(sidekick) = h.containers.get(plan::SERVICE_SIDEKICK)
    {
        actions.push(Action::InstallWins {
            image: sidekick.image.clone(),
            path: super::windows::wins_exe_path(),
        });
    }
    let config = plan::WINS_CONFIG_PATH
        .strip_prefix(h.prefix_path.as_str())
        .unwrap_or(plan::WINS_CONFIG_PATH);
    let config_changes = desired_files.iter().any(|f| {
        f.relative_path == config
            && !on_disk
                .get(config)
                .is_some_and(|c| diff::same_file_content(config, &f.contents, c))
    });
    let start = if !w.wins.registered() {
        Some((true, false, "not registered yet".to_string()))
    } else if config_changes && w.wins.running() {
        Some((false, true, "its config changes".to_string()))
    } else if !w.wins.running() {
        Some((false, false, format!("it is {}", w.wins.service)))
    } else {
        None
    };
    if let Some((register, restart, reason)) = start {
        actions.push(Action::StartWins {
            register,
            restart,
            reason,
        });
    }
    actions
}

async fn apply_files(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let phase = runner.reporter.phase("certificates and files");
    let hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| {
            run.actions[&h.address].iter().any(|a| {
                matches!(
                    a,
                    Action::UploadFile { .. }
                        | Action::RemoveFile { .. }
                        | Action::SetFileMode { .. }
                        | Action::CreateDirectories { .. }
                )
            })
        })
        .map(|h| h.address.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host(
            "certificates and files",
            "write files",
            hosts,
            move |address| {
                let run = r.clone();
                async move {
                    let h = run.host_plan(&address);
                    let host = run.host(&address);
                    let wanted: BTreeSet<String> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::UploadFile { path, .. } => Some(path.clone()),
                            _ => None,
                        })
                        .collect();
                    let windows = run.plan.windows.contains_key(&address);
                    let base = files_root(h, windows);
                    let files: Vec<DesiredFile> = run.files[&address]
                        .iter()
                        .filter(|f| wanted.contains(&plan::join_path(&[&base, &f.relative_path])))
                        .cloned()
                        .collect();
                    let stale: Vec<String> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::RemoveFile { path, .. } => path
                                .strip_prefix(base.as_str())
                                .map(|r| r.trim_start_matches('/').to_string()),
                            _ => None,
                        })
                        .collect();
                    if windows {
                        let directories: Vec<String> = run.actions[&address]
                            .iter()
                            .filter_map(|a| match a {
                                Action::CreateDirectories { paths } => Some(paths.clone()),
                                _ => None,
                            })
                            .flatten()
                            .collect();
                        return super::windows::write_host_files(
                            host,
                            &base,
                            &directories,
                            &files,
                            &stale,
                        )
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string());
                    }
                    let modes: Vec<files::ModeChange> = run.actions[&address]
                        .iter()
                        .filter_map(|a| match a {
                            Action::SetFileMode {
                                path,
                                mode,
                                uid,
                                gid,
                                ..
                            } => Some(files::ModeChange {
                                relative_path: path
                                    .strip_prefix(base.as_str())?
                                    .trim_start_matches('/')
                                    .to_string(),
                                mode: *mode,
                                uid: *uid,
                                gid: *gid,
                            }),
                            _ => None,
                        })
                        .collect();
                    files::write_files(host.docker(), &base, &run.helper_image, &files)
                        .await
                        .map_err(|e| e.to_string())?;
                    files::remove_files(host.docker(), &base, &run.helper_image, &stale)
                        .await
                        .map_err(|e| e.to_string())?;
                    files::set_modes(host.docker(), &base, &run.helper_image, &modes)
                        .await
                        .map_err(|e| e.to_string())
                }
            },
        )
        .await;
    finish(phase, result)
}

fn finish(phase: crate::output::PhaseGuard, result: Result<(), PhaseError>) -> Result<(), UpError> {
    match result {
        Ok(()) => {
            phase.done();
            Ok(())
        }
        Err(e) => {
            phase.fail(&e.to_string());
            Err(e.into())
        }
    }
}

/// The images of every host but `elsewhere` (pulled by the early worker plane), all at once.
async fn pull_images(run: &Arc<Run>, runner: &Runner, elsewhere: &[String]) -> Result<(), UpError> {
    let phase = runner.reporter.phase("images");
    let hosts: Vec<String> = run
        .actions
        .iter()
        .filter(|(h, _)| !elsewhere.contains(h))
        .filter(|(_, a)| a.iter().any(|a| matches!(a, Action::PullImage { .. })))
        .map(|(h, _)| h.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host("images", "pull images", hosts, move |address| {
            let run = r.clone();
            async move { pull_host_images(&run, &address).await }
        })
        .await;
    finish(phase, result)
}

/// Every image one host lacks, all asked for at once: `ensure_image` waits for a turn at the
/// image's registry (hosts::pulls), which is the only cap.
async fn pull_host_images(run: &Run, address: &str) -> Result<(), String> {
    let host = run.host(address);
    let pulls = run.actions[address].iter().filter_map(|a| match a {
        Action::PullImage { image } => Some(async move {
            host.docker()
                .ensure_image(image, &run.registries, &mut |_| {})
                .await
                .map_err(|e| e.to_string())
        }),
        _ => None,
    });
    let failed: Vec<String> = futures::future::join_all(pulls)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// Converts the plan's container (RKE1's process model) into what Docker is asked to create.
fn docker_spec(spec: &plan::ContainerSpec) -> hosts::ContainerSpec {
    hosts::ContainerSpec {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        network_mode: spec.network_mode.clone(),
        pid_mode: spec.pid_mode.clone(),
        privileged: spec.privileged,
        restart_policy: match spec.restart_policy.as_deref() {
            Some("always") => Some(hosts::RestartPolicy::Always),
            Some("on-failure") => Some(hosts::RestartPolicy::OnFailure),
            Some("unless-stopped") => Some(hosts::RestartPolicy::UnlessStopped),
            _ => None,
        },
        volumes_from: spec.volumes_from.clone(),
        labels: spec.labels.clone(),
        security_opt: spec.security_opt.clone(),
        user: spec.user.clone(),
        ports: spec
            .port_bindings
            .iter()
            .map(|p| hosts::PortBinding {
                host_ip: p.host_ip.clone(),
                host_port: p.host_port,
                container_port: p.container_port,
                protocol: p.protocol.clone(),
            })
            .collect(),
        ..Default::default()
    }
}

/// Brings one container to its planned state, then checks its health; once per run (a
/// concurrent caller waits for the first one, and tries again when that one failed).
async fn apply_container(run: &Run, host: &Host, h: &HostPlan, name: &str) -> Result<(), String> {
    let once = run
        .applied
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(format!("{}/{name}", h.address))
        .or_default()
        .clone();
    once.get_or_try_init(|| apply_container_once(run, host, h, name))
        .await
        .map(|_| ())
}

async fn apply_container_once(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    name: &str,
) -> Result<(), String> {
    let spec = &h.containers[name];
    let docker = host.docker();
    let action = run.actions[&h.address].iter().find(|a| match a {
        Action::CreateContainer { name: n, .. }
        | Action::RecreateContainer { name: n, .. }
        | Action::StartContainer { name: n }
        | Action::RestartContainer { name: n } => n == name,
        _ => false,
    });
    let err = |e: hosts::HostError| e.to_string();
    match action {
        Some(Action::CreateContainer { .. }) => {
            if name == plan::ETCD {
                fix_etcd_permissions(run, host, h).await?;
            }
            docker.remove_container(name).await.map_err(err)?;
            docker
                .create_container(name, &docker_spec(spec))
                .await
                .map_err(err)?;
            if spec.start {
                docker.start_container(name).await.map_err(err)?;
            }
        }
        Some(Action::RecreateContainer { .. }) => {
            // RKE1's rolling replace (§22.1): the old container is kept aside until the new one
            // exists, so a failed create leaves something to fall back to.
            let old = format!("old-{name}");
            docker.remove_container(&old).await.map_err(err)?;
            docker.stop_container(name).await.map_err(err)?;
            docker.rename_container(name, &old).await.map_err(err)?;
            docker
                .create_container(name, &docker_spec(spec))
                .await
                .map_err(err)?;
            if spec.start {
                docker.start_container(name).await.map_err(err)?;
            }
            docker.remove_container(&old).await.map_err(err)?;
        }
        Some(Action::StartContainer { .. }) => docker.start_container(name).await.map_err(err)?,
        Some(Action::RestartContainer { .. }) => {
            docker.stop_container(name).await.map_err(err)?;
            docker.start_container(name).await.map_err(err)?;
        }
        _ => {}
    }
    if spec.start
        && let Some(check) = &spec.health_check
    {
        let tls = check_tls(run, check);
        let attempts = if name == plan::ETCD { 18 } else { 24 };
        let accept = |body: &str| name != plan::ETCD || health::etcd_body_healthy(body);
        if let Err(e) =
            health::wait_healthy(host.ssh(), &check.url, tls.as_ref(), attempts, accept).await
        {
            let logs = docker.logs(name, 5).await.unwrap_or_default();
            let last = logs.lines().last().unwrap_or("").trim();
            return Err(format!(
                "{name}: Failed to verify healthcheck: {e}, log: {last}"
            ));
        }
    }
    Ok(())
}

async fn fix_etcd_permissions(run: &Run, host: &Host, h: &HostPlan) -> Result<(), String> {
    let data_dir = plan::join_path(&[&h.prefix_path, "/var/lib/etcd"]);
    let spec = hosts::ContainerSpec {
        image: run.helper_image.clone(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec!["mkdir -p /var/lib/rancher/etcd && chmod 700 /var/lib/rancher/etcd".into()],
        binds: vec![format!("{data_dir}:/var/lib/rancher/etcd:z")],
        ..Default::default()
    };
    host.docker()
        .run_to_success("etcd-fix-perm", &spec, Duration::from_secs(120))
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

async fn remove_unplanned(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    names: &[&str],
) -> Result<(), String> {
    for a in &run.actions[&h.address] {
        if let Action::RemoveContainer { name, .. } = a
            && names.contains(&name.as_str())
        {
            host.docker()
                .remove_container(name)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The etcd plane: members started (in parallel for a new cluster; one at a time when
/// replacing running members, so quorum holds), then every member's health, all reported.
async fn etcd_plane(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let phase = runner.reporter.phase("etcd plane");
    let etcd_hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.roles.etcd)
        .map(|h| h.address.clone())
        .collect();
    let replacing = etcd_hosts.iter().any(|a| {
        run.actions[a]
            .iter()
            .any(|x| matches!(x, Action::RecreateContainer { name, .. } | Action::RestartContainer { name } if name == plan::ETCD))
    });
    let work = |address: String| {
        let run = run.clone();
        async move {
            let h = run.host_plan(&address);
            let host = run.host(&address);
            remove_unplanned(&run, host, h, ETCD_PLANE).await?;
            if run.recon.etcd_removed.iter().any(|g| g.address == address) {
                // A member that left keeps no data behind: a later re-join must start empty.
                let data = plan::join_path(&[&h.prefix_path, "/var/lib/etcd"]);
                reconcile::clean_directories(host, &run.helper_image, &[data]).await?;
            }
            let joined = run
                .joined
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&address);
            for name in ETCD_PLANE {
                if h.containers.contains_key(*name) && !(joined && *name == plan::ETCD) {
                    apply_container(&run, host, h, name).await?;
                }
            }
            Ok(())
        }
    };
    let result = if replacing {
        let mut result = Ok(());
        for address in etcd_hosts.clone() {
            result = runner
                .for_each_host("etcd plane", "etcd", [address], &work)
                .await;
            if result.is_err() {
                break;
            }
        }
        result
    } else {
        runner
            .for_each_host("etcd plane", "etcd", etcd_hosts.clone(), &work)
            .await
    };
    let members = etcd_member_report(run, &etcd_hosts).await;
    match (&result, members) {
        (Ok(()), Some(report)) => runner.reporter.info(report),
        (Err(PhaseError::Hosts { phase: p, failures }), Some(report)) => {
            // §33.19: RKE1 stops at the first healthy member; rkers names every member and the
            // error of each unhealthy one.
            let failures = failures.clone();
            let p = p.clone();
            return finish(
                phase,
                Err(PhaseError::Hosts {
                    phase: p,
                    failures: failures
                        .into_iter()
                        .chain([("members".to_string(), report)])
                        .collect(),
                }),
            );
        }
        _ => {}
    }
    finish(phase, result)
}

/// The etcd cluster's members as the first answering member lists them.
async fn etcd_member_report(run: &Run, etcd_hosts: &[String]) -> Option<String> {
    for address in etcd_hosts {
        if let Ok(members) = reconcile::member_list(run.host(address)).await {
            let names: Vec<String> = members
                .iter()
                .map(|(_, name, peer)| format!("{name} ({peer})"))
                .collect();
            return Some(format!(
                "etcd cluster has {} members: {}",
                members.len(),
                names.join(", ")
            ));
        }
    }
    None
}

/// A plane of non-etcd components on the hosts `select` picks, all hosts in parallel.
async fn plane(
    run: &Arc<Run>,
    runner: &Runner,
    title: &'static str,
    names: &'static [&'static str],
    select: fn(&HostPlan) -> bool,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase(title);
    let hosts: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| select(h))
        .map(|h| h.address.clone())
        .collect();
    let r = run.clone();
    let result = runner
        .for_each_host(title, title, hosts, move |address| {
            let run = r.clone();
            async move { apply_plane_on(&run, &address, names).await }
        })
        .await;
    finish(phase, result)
}

/// A new cluster's Linux hosts start nginx-proxy, service-sidekick and kubelet while etcd and
/// the control plane come up: these need only the host's own files (written by now) and images
/// (worker-only hosts pull theirs here, the others have them already). nginx-proxy forwards to
/// the control plane whenever it listens, and kubelet retries the API server by itself and
/// registers its node as soon as it answers, so none of them waits for the control plane's
/// health checks. On a control plane host service-sidekick is shared with the control plane,
/// whichever comes first makes it ([`apply_container`]).
/// kube-proxy still waits for the worker plane proper: v1.20 reads its node IP from its Node
/// object at start, retrying for about a minute and then keeping 127.0.0.1 for good, so it
/// needs the API server answering and the node registered. Windows workers keep the usual
/// order: their orphan sweep must run before anything of theirs starts.
/// Returns the hosts, and those of them with no etcd or control plane role.
fn early_worker_hosts(run: &Run) -> (Vec<String>, Vec<String>) {
    let linux: Vec<&HostPlan> = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.containers.contains_key(plan::KUBELET))
        .filter(|h| !run.plan.windows.contains_key(&h.address))
        .collect();
    let worker_only = linux
        .iter()
        .filter(|h| !h.roles.controlplane && !h.roles.etcd)
        .map(|h| h.address.clone())
        .collect();
    (
        linux.iter().map(|h| h.address.clone()).collect(),
        worker_only,
    )
}

/// [`early_worker_hosts`]: images where asked, then nginx-proxy, service-sidekick and kubelet.
async fn early_worker_plane(
    run: Arc<Run>,
    runner: Runner,
    hosts: Vec<String>,
    pull: Vec<String>,
) -> Result<(), UpError> {
    const FIRST: &[&str] = &[plan::NGINX_PROXY, plan::SERVICE_SIDEKICK, plan::KUBELET];
    let title = "kubelets";
    let phase = runner.reporter.phase(title);
    let r = run.clone();
    let pull = Arc::new(pull);
    let result = runner
        .for_each_host(
            title,
            "kubelet before the control plane",
            hosts,
            move |address| {
                let (run, pull) = (r.clone(), pull.clone());
                async move {
                    if pull.contains(&address) {
                        pull_host_images(&run, &address).await?;
                    }
                    apply_plane_on(&run, &address, FIRST).await
                }
            },
        )
        .await;
    finish(phase, result)
}

/// Brings `names` on one host to their planned state, unplanned ones removed first.
async fn apply_plane_on(run: &Run, address: &str, names: &[&str]) -> Result<(), String> {
    let h = run.host_plan(address);
    let host = run.host(address);
    remove_unplanned(run, host, h, names).await?;
    // Only when wins is about to start something: a run that changes nothing on the host
    // touches none of its containers, the sweep's one-shot included.
    if names == WORKER_PLANE
        && run.plan.windows.contains_key(address)
        && plane_changes(run, address, WORKER_PLANE)
    {
        sweep_windows_orphans(host, h).await?;
    }
    for name in names {
        if h.containers.contains_key(*name) {
            apply_container(run, host, h, name).await?;
        }
    }
    Ok(())
}

/// Installs, registers and (re)starts wins on the Windows workers that need it, after their
/// files (the wins config among them) are written and their images pulled (`wins.exe` comes
/// out of the sidekick's image). A restart first stops the wins-managed containers and waits
/// for wins to stop their processes, then sweeps what outlived it and starts them again:
/// restarting wins under running processes is what leaves a node in the "Access is denied"
/// loop (windows-wins.md §5.1).
async fn prepare_windows(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let hosts: Vec<String> = run
        .plan
        .windows
        .keys()
        .filter(|a| {
            run.actions[*a]
                .iter()
                .any(|x| matches!(x, Action::InstallWins { .. } | Action::StartWins { .. }))
        })
        .cloned()
        .collect();
    if hosts.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("wins");
    let r = run.clone();
    let result = runner
        .for_each_host("wins", "install and start wins", hosts, move |address| {
            let run = r.clone();
            async move { prepare_windows_host(&run, &address).await }
        })
        .await;
    finish(phase, result)
}

async fn prepare_windows_host(run: &Run, address: &str) -> Result<(), String> {
    let h = run.host_plan(address);
    let actions = &run.actions[address];
    let step = super::windows::WinsStep {
        install_from: actions.iter().find_map(|a| match a {
            Action::InstallWins { image, .. } => Some(image.clone()),
            _ => None,
        }),
        start: actions.iter().find_map(|a| match a {
            Action::StartWins { restart, .. } => Some(*restart),
            _ => None,
        }),
        containers: h.containers.keys().cloned().collect(),
        // The worker plane creates or recreates these itself.
        replaced: actions
            .iter()
            .filter_map(|a| match a {
                Action::CreateContainer { name, .. } | Action::RecreateContainer { name, .. } => {
                    Some(name.clone())
                }
                _ => None,
            })
            .collect(),
        sweep_image: h
            .containers
            .get(plan::SERVICE_SIDEKICK)
            .map(|c| c.image.clone())
            .unwrap_or_default(),
        settle: super::windows::WINS_SETTLE,
    };
    let done = super::windows::prepare_host(run.host(address), &step)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(
        host = address,
        installed_from = ?done.installed_from,
        service = ?done.service_changes,
        restarted = ?done.restarted_containers,
        swept = ?done.sweep.stopped,
        "wins is ready"
    );
    Ok(())
}

/// Before wins starts anything on a Windows worker, processes that outlived their wins server
/// must go, or every start fails at wins' rename (windows-wins.md §5.3).
async fn sweep_windows_orphans(host: &Host, h: &HostPlan) -> Result<(), String> {
    let Some(sidekick) = h.containers.get(plan::SERVICE_SIDEKICK) else {
        return Ok(());
    };
    let swept = super::windows::sweep_orphans(host, &sidekick.image)
        .await
        .map_err(|e| e.to_string())?;
    if !swept.stopped.is_empty() {
        tracing::warn!(host = host.name(), stopped = ?swept.stopped, "stopped wins-managed processes that outlived their wins server");
    }
    Ok(())
}

/// Whether any of `names` changes on the host in this run.
fn plane_changes(run: &Run, address: &str, names: &[&str]) -> bool {
    run.actions[address]
        .iter()
        .any(|a| changes_container(a, names))
}

/// Whether the action creates, changes or removes one of the containers `names`.
fn changes_container(action: &Action, names: &[&str]) -> bool {
    match action {
        Action::CreateContainer { name, .. }
        | Action::RecreateContainer { name, .. }
        | Action::StartContainer { name }
        | Action::RestartContainer { name }
        | Action::RemoveContainer { name, .. } => names.contains(&name.as_str()),
        _ => false,
    }
}

fn upgrade_hosts(
    run: &Run,
    old: &RkeConfig,
    names: &[&str],
    select: impl Fn(&HostPlan) -> bool,
) -> Vec<upgrade::UpgradeHost> {
    run.plan
        .hosts
        .iter()
        .filter(|h| select(h))
        .map(|h| upgrade::UpgradeHost {
            address: h.address.clone(),
            hostname: h.hostname.clone(),
            changed: plane_changes(run, &h.address, names),
            new: !old.nodes.iter().any(|n| n.address == h.address),
            serving: kubelet_runs(run, &h.address),
        })
        .collect()
}

/// Whether the host's kubelet runs now: one that is missing or stopped serves no pods, so
/// the host is already out of service and its upgrade costs nothing of the budget, whatever the
/// node's (possibly stale) Ready condition says.
fn kubelet_runs(run: &Run, address: &str) -> bool {
    !run.actions[address].iter().any(|a| {
        matches!(a, Action::CreateContainer { name, .. } | Action::StartContainer { name } if name == plan::KUBELET)
    })
}

fn upgrade_strategy(
    cluster: &Cluster,
    budget_of: fn(&crate::config::NodeUpgradeStrategy) -> &str,
    hosts: usize,
) -> Result<upgrade::Strategy, UpError> {
    let configured = cluster.config.upgrade_strategy.clone().unwrap_or_default();
    let value = budget_of(&configured);
    let budget = upgrade::max_unavailable(if value.is_empty() { "1" } else { value }, hosts)
        .map_err(|e| other(format!("upgrade_strategy: {e}")))?;
    let drain = configured.drain.unwrap_or(false).then(|| {
        let input = configured.node_drain_input.clone().unwrap_or_default();
        let defaults = DrainOptions::default();
        DrainOptions {
            force: input.force,
            ignore_daemonsets: input
                .ignore_daemonsets
                .unwrap_or(defaults.ignore_daemonsets),
            delete_emptydir_data: input.delete_local_data,
            grace_period: (input.grace_period >= 0).then_some(input.grace_period),
            timeout: if input.timeout > 0 {
                Duration::from_secs(input.timeout as u64)
            } else {
                defaults.timeout
            },
        }
    });
    Ok(upgrade::Strategy {
        budget,
        drain,
        ready_timeout: NODE_READY_AFTER_UPGRADE,
        cni_wait: None,
    })
}

/// How `up` would roll the changes out over an existing cluster, for `--dry-run`.
fn rolling_summary(
    cluster: &Cluster,
    old: &RkeConfig,
    cluster_plan: &ClusterPlan,
    actions: &BTreeMap<String, Vec<Action>>,
) -> Vec<String> {
    let strategy = cluster.config.upgrade_strategy.clone().unwrap_or_default();
    let changed = |h: &HostPlan, names: &[&str]| {
        old.nodes.iter().any(|n| n.address == h.address)
            && actions[&h.address]
                .iter()
                .any(|a| changes_container(a, names))
    };
    let both: Vec<&str> = CONTROL_PLANE.iter().chain(WORKER_PLANE).copied().collect();
    let how = if strategy.drain == Some(true) {
        "cordoned and drained"
    } else {
        "cordoned"
    };
    let mut lines = Vec::new();
    let cp: Vec<&str> = cluster_plan
        .hosts
        .iter()
        .filter(|h| h.roles.controlplane && changed(h, &both))
        .map(|h| h.hostname.as_str())
        .collect();
    if !cp.is_empty() {
        lines.push(format!(
            "rolling upgrade of control plane hosts, {} at a time (max_unavailable_controlplane), each {how} first: {}",
            strategy.max_unavailable_controlplane,
            cp.join(", ")
        ));
    }
    let workers: Vec<&str> = cluster_plan
        .hosts
        .iter()
        .filter(|h| !h.roles.controlplane && changed(h, WORKER_PLANE))
        .map(|h| h.hostname.as_str())
        .collect();
    if !workers.is_empty() {
        lines.push(format!(
            "rolling upgrade of workers, {} at a time (max_unavailable_worker; hosts with etcd one at a time), each {how} first: {}",
            strategy.max_unavailable_worker,
            workers.join(", ")
        ));
    }
    lines
}

/// How long an upgraded host's node may take to report Ready again.
const NODE_READY_AFTER_UPGRADE: Duration = Duration::from_secs(180);

/// §17.2: control plane hosts, `max_unavailable_controlplane` at a time, each with its worker
/// components too.
async fn upgrade_control_plane(
    cluster: &Cluster,
    old: &RkeConfig,
    run: &Arc<Run>,
    runner: &Runner,
    api: Option<&KubeApi>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("control plane");
    let both: Vec<&str> = CONTROL_PLANE.iter().chain(WORKER_PLANE).copied().collect();
    let hosts = upgrade_hosts(run, old, &both, |h| h.roles.controlplane);
    let mut strategy = upgrade_strategy(cluster, |s| &s.max_unavailable_controlplane, hosts.len())?;
    strategy.cni_wait = Some(crate::doctor::guard::CniWait::for_cluster(
        cluster,
        run.pool.hosts(),
    ));
    let result = upgrade::rolling(runner, "control plane", api, hosts, &strategy, |address| {
        let run = run.clone();
        async move {
            apply_plane_on(&run, &address, CONTROL_PLANE).await?;
            apply_plane_on(&run, &address, WORKER_PLANE).await
        }
    })
    .await;
    finish(phase, result)
}

/// §17.3: the other hosts' worker components; hosts with etcd one at a time first, then the
/// worker-only hosts `max_unavailable_worker` at a time.
async fn upgrade_worker_plane(
    cluster: &Cluster,
    old: &RkeConfig,
    run: &Arc<Run>,
    runner: &Runner,
    api: Option<&KubeApi>,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("worker plane");
    let apply = |address: String| {
        let run = run.clone();
        async move { apply_plane_on(&run, &address, WORKER_PLANE).await }
    };
    let etcd_hosts = upgrade_hosts(run, old, WORKER_PLANE, |h| {
        !h.roles.controlplane && h.roles.etcd
    });
    let mut one_at_a_time = upgrade_strategy(cluster, |s| &s.max_unavailable_worker, 1)?;
    one_at_a_time.budget = 1;
    one_at_a_time.cni_wait = Some(crate::doctor::guard::CniWait::for_cluster(
        cluster,
        run.pool.hosts(),
    ));
    let result = upgrade::rolling(
        runner,
        "worker plane",
        api,
        etcd_hosts,
        &one_at_a_time,
        apply,
    )
    .await;
    if result.is_err() {
        return finish(phase, result);
    }
    let workers = upgrade_hosts(run, old, WORKER_PLANE, |h| {
        !h.roles.controlplane && !h.roles.etcd
    });
    let mut strategy = upgrade_strategy(cluster, |s| &s.max_unavailable_worker, workers.len())?;
    strategy.cni_wait = one_at_a_time.cni_wait.clone();
    let result = upgrade::rolling(runner, "worker plane", api, workers, &strategy, apply).await;
    finish(phase, result)
}

/// RKE1's log links for the containers created in this run (§8.5), Linux hosts only.
async fn link_logs(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let created: Vec<(String, Vec<String>)> = run
        .plan
        .hosts
        .iter()
        .filter(|h| {
            run.facts
                .get(&h.address)
                .is_none_or(|f| f.os_type != "windows")
        })
        .map(|h| {
            let names = run.actions[&h.address]
                .iter()
                .filter_map(|a| match a {
                    Action::CreateContainer { name, .. }
                    | Action::RecreateContainer { name, .. } => Some(name.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>();
            (h.address.clone(), names)
        })
        .filter(|(_, names)| !names.is_empty())
        .collect();
    if created.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("log links");
    let r = run.clone();
    let result = runner
        .for_each_host(
            "log links",
            "link logs",
            created.into_iter().map(|(a, names)| NamedLinks(a, names)),
            move |NamedLinks(address, names)| {
                let run = r.clone();
                async move {
                    let root = run
                        .facts
                        .get(&address)
                        .map(|f| f.docker_root_dir.clone())
                        .unwrap_or_default();
                    crate::phases::log_links::link_logs(
                        run.host(&address),
                        &run.helper_image,
                        &root,
                        &names,
                    )
                    .await
                }
            },
        )
        .await;
    finish(phase, result)
}

struct NamedLinks(String, Vec<String>);

impl crate::phases::HostName for NamedLinks {
    fn host_name(&self) -> &str {
        &self.0
    }
}

fn taints_of(cfg: Option<&RkeConfig>, address: &str) -> Vec<TaintSpec> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| {
            n.taints
                .iter()
                .map(|t| TaintSpec::new(&t.key, &t.value, &t.effect))
                .collect()
        })
        .unwrap_or_default()
}

fn labels_of(cfg: Option<&RkeConfig>, address: &str) -> BTreeMap<String, String> {
    cfg.and_then(|c| c.nodes.iter().find(|n| n.address == address))
        .map(|n| n.labels.clone())
        .unwrap_or_default()
}

/// Node labels, annotations and taints (§21), once every kubelet has registered its node.
async fn sync_nodes(
    cluster: &Cluster,
    old: Option<&RkeConfig>,
    run: &Arc<Run>,
    api: &KubeApi,
    runner: &Runner,
) -> Result<(), UpError> {
    let phase = runner.reporter.phase("nodes");
    let syncs: Vec<NodeSync> = run
        .plan
        .hosts
        .iter()
        .map(|h| {
            let roles: BTreeSet<String> = [
                ("etcd", h.roles.etcd),
                ("controlplane", h.roles.controlplane),
                ("worker", h.roles.worker),
            ]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(r, _)| r.to_string())
            .collect();
            NodeSync::for_host(
                &h.hostname,
                &h.address,
                &h.internal_address,
                &roles,
                &labels_of(Some(&cluster.config), &h.address),
                &labels_of(old, &h.address),
                &taints_of(Some(&cluster.config), &h.address),
                &taints_of(old, &h.address),
            )
        })
        .collect();
    let api = api.clone();
    let result = runner
        .for_each_host(
            "nodes",
            "labels and taints",
            syncs.into_iter().map(NamedSync),
            move |s| {
                let api = api.clone();
                async move {
                    crate::kubeapi::find_node(&api, &s.0.hostname, 60)
                        .await
                        .map_err(|e| e.to_string())?;
                    crate::kubeapi::sync_node(&api, &s.0)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            },
        )
        .await;
    finish(phase, result)
}

struct NamedSync(NodeSync);

impl crate::phases::HostName for NamedSync {
    fn host_name(&self) -> &str {
        &self.0.address
    }
}

/// Connects to the hosts that left the cluster, to clean them; one that cannot be reached is
/// reported and its node is still deleted.
async fn connect_removed(
    old: Option<&RkeConfig>,
    recon: &reconcile::Changes,
    opts: &UpOptions,
    reporter: &Reporter,
) -> Option<HostPool> {
    let old = old?;
    let gone: BTreeSet<&str> = recon
        .removed_hosts
        .iter()
        .map(|h| h.address.as_str())
        .collect();
    if gone.is_empty() {
        return None;
    }
    let targets: Vec<_> = crate::cluster::targets::ssh_targets_for(old, opts.agent_override)
        .into_iter()
        .filter(|t| gone.contains(t.address.as_str()))
        .collect();
    let mut usable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &opts.ssh).await {
        match &attempt.error {
            Some(e) => reporter.warn(format!(
                "host {} left the cluster but cannot be reached to clean it ({e}); its node is deleted all the same",
                attempt.target.address
            )),
            None => usable.push(attempt),
        }
    }
    HostPool::from_attempts(usable, opts.ssh.concurrency)
        .await
        .ok()
}

fn member_host<'a>(run: &'a Run, skip: &BTreeSet<String>) -> Option<&'a Arc<Host>> {
    // A member that was already in the cluster before this run and stays in it.
    let added: BTreeSet<&str> = run.recon.etcd_added.iter().map(String::as_str).collect();
    run.plan
        .hosts
        .iter()
        .filter(|h| {
            h.roles.etcd && !added.contains(h.address.as_str()) && !skip.contains(&h.address)
        })
        .find_map(|h| run.pool.get(&h.address))
}

/// Members leave before their containers stop, one at a time, so the cluster keeps quorum
/// while shrinking (§16.4).
async fn remove_etcd_members(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    if run.recon.etcd_removed.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("etcd members");
    let leaving: BTreeSet<String> = run
        .recon
        .etcd_removed
        .iter()
        .map(|h| h.address.clone())
        .collect();
    let mut result = Ok(());
    for gone in &run.recon.etcd_removed {
        let name = reconcile::member_name(&gone.hostname);
        let step = runner.reporter.host_action(
            "etcd members",
            &gone.address,
            &format!("remove member {name}"),
        );
        let Some(via) = member_host(run, &leaving) else {
            step.fail("no remaining etcd member is reachable");
            result = Err(UpError::Other(
                "no remaining etcd member to remove members through".into(),
            ));
            break;
        };
        match reconcile::remove_member(via, &name).await {
            Ok(()) => step.ok(),
            Err(e) => {
                step.fail(&e);
                result = Err(UpError::Other(e));
                break;
            }
        }
        // The member's container goes now, so a shrinking cluster never waits on a dead peer.
        let host = run.pool.get(&gone.address).cloned().or_else(|| {
            run.removed
                .iter()
                .find(|r| r.gone.address == gone.address)
                .and_then(|r| r.reachable.as_ref().map(|(h, _)| h.clone()))
        });
        if let Some(host) = host {
            for c in ETCD_PLANE {
                host.docker().remove_container(c).await.map_err(other)?;
            }
            // A host that stays in the cluster without the etcd role keeps no member data: were
            // it made an etcd host again, its etcd would restart as the removed member and be
            // refused ("the member has been permanently removed"). Hosts that leave the cluster
            // are cleaned with the rest of their directories.
            if let Some(h) = run.plan.hosts.iter().find(|h| h.address == gone.address) {
                let data = plan::join_path(&[&h.prefix_path, "/var/lib/etcd"]);
                reconcile::clean_directories(&host, &run.helper_image, &[data])
                    .await
                    .map_err(other)?;
            }
        }
    }
    match result {
        Ok(()) => {
            phase.done();
            Ok(())
        }
        Err(e) => {
            phase.fail(&e.to_string());
            Err(e)
        }
    }
}

/// New members join one at a time: announced to the cluster, then started with the partial
/// member list and `--initial-cluster-state=existing` (§16.3), then checked healthy.
async fn join_etcd_members(
    cluster: &Cluster,
    run: &Arc<Run>,
    runner: &Runner,
) -> Result<(), UpError> {
    let old_members_exist = member_host(run, &BTreeSet::new()).is_some();
    if run.recon.etcd_added.is_empty() || !old_members_exist {
        return Ok(());
    }
    let phase = runner.reporter.phase("etcd join");
    let order: Vec<String> = run
        .plan
        .hosts
        .iter()
        .filter(|h| h.roles.etcd)
        .map(|h| h.address.clone())
        .collect();
    for (i, address) in run.recon.etcd_added.iter().enumerate() {
        let h = run
            .plan
            .hosts
            .iter()
            .find(|h| &h.address == address)
            .expect("planned host");
        let name = reconcile::member_name(&h.hostname);
        let step = runner
            .reporter
            .host_action("etcd join", address, &format!("add member {name}"));
        let result = async {
            let via = member_host(run, &BTreeSet::new()).ok_or("no etcd member to join through")?;
            let peer = reconcile::peer_url(&h.internal_address);
            // A member that has never started (new, or left unstarted by an interrupted run)
            // starts from an empty data directory: data of an earlier membership would make
            // etcd restart as that removed member, which the cluster refuses ("the member has
            // been permanently removed from the cluster").
            let started = reconcile::member_list(via)
                .await?
                .iter()
                .any(|(_, n, urls)| !n.is_empty() && urls.split(',').any(|u| u == peer));
            // Learners (etcd 3.4+) do not count towards quorum until promoted: RKE1 adds voting
            // members, and a join that fails then leaves the cluster without quorum (1 of 2
            // members up). The member is promoted once it has caught up, and removed again when
            // its join fails.
            let learner = !started && reconcile::supports_learners(via).await;
            reconcile::add_member(via, &name, &peer, learner).await?;
            let joined = async {
            let pending: BTreeSet<String> = run.recon.etcd_added[i + 1..].iter().cloned().collect();
            let ctx = plan::EtcdContext::while_adding(&order, &pending);
            let joining = plan::build(&plan::PlanInput {
                config: &cluster.config,
                service_options: &run.service_options,
                windows_service_options: run.windows_service_options.as_ref(),
                host_facts: &run.facts,
                etcd: &ctx,
                encryption_config: run.encryption_config.as_deref(),
                default_rke_tools_tag: run.default_tools_tag.as_deref(),
            })
            .map_err(|e| e.to_string())?;
            let hp = joining
                .hosts
                .iter()
                .find(|x| &x.address == address)
                .expect("planned host");
            let host = run.pool.get(address).expect("connected host");
            let spec = &hp.containers[plan::ETCD];
            if !started {
                host.docker()
                    .remove_container(plan::ETCD)
                    .await
                    .map_err(|e| e.to_string())?;
                let data = plan::join_path(&[&hp.prefix_path, "/var/lib/etcd"]);
                reconcile::clean_directories(host, &run.helper_image, &[data]).await?;
            }
            fix_etcd_permissions(run, host, hp).await?;
            host.docker()
                .remove_container(plan::ETCD)
                .await
                .map_err(|e| e.to_string())?;
            host.docker()
                .create_container(plan::ETCD, &docker_spec(spec))
                .await
                .map_err(|e| e.to_string())?;
            host.docker()
                .start_container(plan::ETCD)
                .await
                .map_err(|e| e.to_string())?;
            if learner {
                reconcile::promote_member(via, &peer, 45).await?;
            }
            if let Some(check) = &spec.health_check {
                let tls = check_tls(run, check);
                health::wait_healthy(
                    host.ssh(),
                    &check.url,
                    tls.as_ref(),
                    30,
                    health::etcd_body_healthy,
                )
                .await
                .map_err(|e| format!("{name} did not become healthy after joining: {e}"))?;
            }
            Ok::<(), String>(())
            }
            .await;
            if let Err(e) = joined {
                if !learner {
                    return Err(e);
                }
                let host = run.pool.get(address).expect("connected host");
                let undone = async {
                    host.docker()
                        .remove_container(plan::ETCD)
                        .await
                        .map_err(|e| e.to_string())?;
                    reconcile::remove_member_by_peer(via, &peer).await
                }
                .await;
                return Err(match undone {
                    Ok(()) => format!("{e}\n(the learner was removed again: the cluster keeps its members and quorum)"),
                    Err(u) => format!("{e}\n(removing the learner again failed too: {u})"),
                });
            }
            run.joined
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(address.clone());
            Ok::<(), String>(())
        }
        .await;
        match result {
            Ok(()) => step.ok(),
            Err(e) => {
                step.fail(&e);
                phase.fail(&e);
                return Err(UpError::Other(format!(
                    "[etcd] Failed to add etcd member {name}: {e}"
                )));
            }
        }
    }
    phase.done();
    Ok(())
}

fn check_tls(run: &Run, check: &plan::HealthCheck) -> Option<TlsMaterial> {
    check.client_certificate.as_ref().map(|c| TlsMaterial {
        ca_pem: run
            .bundle
            .get(pki::names::CA_CERT_NAME)
            .map(|ca| ca.certificate_pem.clone()),
        client_cert_pem: run.bundle.get(c).map(|c| c.certificate_pem.clone()),
        client_key_pem: run.bundle.get(c).map(|c| c.key_pem.clone()),
    })
}

/// Hosts that left: their components stop first (so no kubelet re-registers the node), then the
/// directories RKE1 cleans are emptied, then the node object is deleted.
async fn remove_hosts(run: &Arc<Run>, api: &KubeApi, runner: &Runner) -> Result<(), UpError> {
    if run.removed.is_empty() {
        return Ok(());
    }
    let phase = runner.reporter.phase("removed hosts");
    let addresses: Vec<String> = run.removed.iter().map(|r| r.gone.address.clone()).collect();
    let r = run.clone();
    let api = api.clone();
    let result = runner
        .for_each_host("removed hosts", "clean up", addresses, move |address| {
            let run = r.clone();
            let api = api.clone();
            async move {
                let removed = run
                    .removed
                    .iter()
                    .find(|r| r.gone.address == address)
                    .expect("removed host");
                if let Some((host, cleanup)) = &removed.reachable {
                    clean_removed_host(&run, host, cleanup, &removed.present).await?;
                }
                let gone = &removed.gone;
                api.delete_node(&gone.hostname)
                    .await
                    .map_err(|e| e.to_string())
            }
        })
        .await;
    finish(phase, result)
}

/// Takes the containers off a host that left the cluster and cleans it: RKE1's directory
/// cleaner on Linux; on a Windows worker the teardown of `rkers remove`, through wins.
async fn clean_removed_host(
    run: &Run,
    host: &Host,
    cleanup: &reconcile::HostCleanup,
    present: &[String],
) -> Result<(), String> {
    match cleanup {
        // Removes the Windows worker's containers itself, before the host script.
        reconcile::HostCleanup::Windows { plan, image } => {
            super::windows::remove_windows_host(host, plan, image)
                .await
                .map_err(|e| e.to_string())
        }
        reconcile::HostCleanup::Linux { directories } => {
            for name in present {
                host.docker()
                    .remove_container(name)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            reconcile::clean_directories(host, &run.helper_image, directories).await
        }
    }
}

/// RKE1's port checks between roles (§10), through listener and checker containers on the
/// hosts themselves; every host's unreachable ports are listed together.
async fn port_checks(
    cluster: &Cluster,
    pool: &HostPool,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let mut plan = cluster.port_check_plan();
    // The listeners and probes are Linux containers: Windows workers are left out (and said so).
    let windows: Vec<String> = pool
        .hosts()
        .filter(|h| h.facts().os_type == "windows")
        .map(|h| h.name().to_string())
        .collect();
    if !windows.is_empty() {
        plan.without_hosts(&windows);
        reporter.warn(format!(
            "port checks skip the Windows hosts {}: their probes are Linux containers",
            windows.join(", ")
        ));
    }
    let step = reporter.host_action("connect", "all hosts", "port checks between roles");
    let failures = crate::hosts::ports::check_cluster_ports(pool, &plan)
        .await
        .map_err(other)?;
    if failures.is_empty() {
        step.ok();
        return Ok(());
    }
    let text = failures
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    step.fail(&text);
    Err(UpError::Other(format!(
        "{text}\n(skip with --disable-port-check)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fault 13 of scripts/faults: a first `up` killed after it started containers is finished
    /// by the next `up`, since the hosts hold the CA its state holds; other CAs stay refused.
    #[test]
    fn a_first_up_stopped_midway_is_finished_but_a_foreign_cluster_is_refused() {
        let mut state = StateFile::default();
        state.desired_state.certificates_bundle.insert(
            "kube-ca".into(),
            crate::pki::CertificatePki {
                certificate_pem: "-----BEGIN CERTIFICATE-----\nOURS\n-----END CERTIFICATE-----\n"
                    .into(),
                ..Default::default()
            },
        );
        let host = |ca: &str| {
            let mut o = Observed::default();
            o.containers
                .insert(plan::KUBELET.into(), hosts::ObservedContainer::default());
            o.files.insert(
                "ssl/kube-ca.pem".into(),
                format!("-----BEGIN CERTIFICATE-----\n{ca}\n-----END CERTIFICATE-----")
                    .into_bytes(),
            );
            o
        };
        let path = std::path::Path::new("cluster.rkestate");
        let ours = BTreeMap::from([("10.0.0.1".to_string(), host("OURS"))]);
        assert!(guard_existing_cluster(Some(&state), &ours, false, path).is_ok());
        let foreign = BTreeMap::from([
            ("10.0.0.1".to_string(), host("OURS")),
            ("10.0.0.2".to_string(), host("THEIRS")),
        ]);
        let err = guard_existing_cluster(Some(&state), &foreign, false, path)
            .err()
            .expect("a host with another CA is refused");
        assert!(err.to_string().contains("10.0.0.2 (kubelet)"), "{err}");
        assert!(!err.to_string().contains("10.0.0.1"), "{err}");
        assert!(guard_existing_cluster(None, &ours, false, path).is_err());
    }
    use crate::phases::windows::WindowsObserved;
    use crate::plan::WinsStatus;

    fn windows_worker() -> HostPlan {
        let sidekick = plan::ContainerSpec {
            name: plan::SERVICE_SIDEKICK.into(),
            image: "rancher/rke-tools:v0.1.89-windows".into(),
            start: true,
            ..Default::default()
        };
        HostPlan {
            address: "10.0.0.9".into(),
            internal_address: "10.0.0.9".into(),
            hostname: "win1".into(),
            roles: plan::Roles {
                worker: true,
                ..Default::default()
            },
            prefix_path: "c:/".into(),
            containers: [(plan::SERVICE_SIDEKICK.to_string(), sidekick)]
                .into_iter()
                .collect(),
            files: Vec::new(),
            certificate_names: Vec::new(),
            port_checks: Vec::new(),
        }
    }

    fn file(rel: &str, contents: &str) -> DesiredFile {
        DesiredFile {
            relative_path: rel.into(),
            contents: contents.as_bytes().to_vec(),
            mode: 0o600,
        }
    }

    fn running_wins() -> WinsStatus {
        WinsStatus {
            exe_present: true,
            service: "running".into(),
            pipe: true,
        }
    }

    fn observed(files: &[DesiredFile], missing: &[&str], wins: WinsStatus) -> Observed {
        let on_disk: BTreeMap<String, Vec<u8>> = files
            .iter()
            .map(|f| (f.relative_path.clone(), f.contents.clone()))
            .collect();
        Observed {
            files: on_disk.clone(),
            windows: Some(WindowsObserved {
                files: on_disk,
                missing_directories: missing.iter().map(|d| d.to_string()).collect(),
                wins,
            }),
            ..Default::default()
        }
    }

    fn desired() -> Vec<DesiredFile> {
        vec![
            file("etc/kubernetes/ssl/kube-node.pem", "cert"),
            file("etc/rancher/wins/config", "white_list: {}\n"),
        ]
    }

    fn linux_worker() -> HostPlan {
        HostPlan {
            address: "10.0.0.2".into(),
            internal_address: "10.0.0.2".into(),
            hostname: "w2".into(),
            roles: plan::Roles {
                worker: true,
                ..Default::default()
            },
            prefix_path: "/".into(),
            containers: Default::default(),
            files: Vec::new(),
            certificate_names: Vec::new(),
            port_checks: Vec::new(),
        }
    }

    fn linux_observed(files: &[(&str, &str, u32)]) -> Observed {
        Observed {
            files: files
                .iter()
                .map(|(p, c, _)| (p.to_string(), c.as_bytes().to_vec()))
                .collect(),
            file_meta: files
                .iter()
                .map(|(p, _, mode)| {
                    let meta = files::FileMeta {
                        mode: *mode,
                        uid: 0,
                        gid: 0,
                    };
                    (p.to_string(), meta)
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn keys_a_host_does_not_read_are_removed_and_key_modes_fixed_without_restarts() {
        let h = linux_worker();
        let desired = vec![
            file("ssl/kube-node.pem", "cert"),
            file("ssl/kube-node-key.pem", "key"),
        ];
        let obs = linux_observed(&[
            ("ssl/kube-node.pem", "cert", 0o644),
            ("ssl/kube-node-key.pem", "key", 0o644),
            // RKE1's full set: another node's kubelet serving pair and an etcd member's key.
            ("ssl/kube-kubelet-10-0-0-3.pem", "cert", 0o644),
            ("ssl/kube-kubelet-10-0-0-3-key.pem", "key", 0o644),
            ("ssl/kube-etcd-10-0-0-1-key.pem", "key", 0o600),
        ]);
        let shown: Vec<String> = host_actions(&h, &obs, &desired, &desired)
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(
            shown,
            [
                "remove /etc/kubernetes/ssl/kube-etcd-10-0-0-1-key.pem (private key no container \
                 on this host reads)",
                "remove /etc/kubernetes/ssl/kube-kubelet-10-0-0-3-key.pem (private key no \
                 container on this host reads)",
                "set /etc/kubernetes/ssl/kube-node-key.pem to mode 0600 owner 0:0 (was 0644 0:0)",
            ]
        );
    }

    #[test]
    fn a_key_some_container_flag_names_stays() {
        let mut h = linux_worker();
        h.containers.insert(
            plan::KUBELET.into(),
            plan::ContainerSpec {
                entrypoint: vec![
                    "--tls-private-key-file=/etc/kubernetes/ssl/my-kube-x-key.pem".into(),
                ],
                ..Default::default()
            },
        );
        let obs = linux_observed(&[("ssl/kube-x-key.pem", "key", 0o600)]);
        let mut h2 = h.clone();
        h2.containers.get_mut(plan::KUBELET).unwrap().entrypoint =
            vec!["--tls-private-key-file=/etc/kubernetes/ssl/kube-x-key.pem".into()];
        let removes = |h: &HostPlan| {
            host_actions(h, &obs, &[], &[])
                .iter()
                .filter(|a| matches!(a, Action::RemoveFile { .. }))
                .count()
        };
        assert_eq!(removes(&h), 1);
        assert_eq!(removes(&h2), 0);
    }

    #[test]
    fn an_uploaded_key_for_a_custom_etcd_user_is_chowned_after_the_upload() {
        let mut h = linux_worker();
        h.roles.etcd = true;
        h.containers.insert(
            plan::ETCD.into(),
            plan::ContainerSpec {
                user: Some("1001:1001".into()),
                ..Default::default()
            },
        );
        let desired = vec![file("ssl/kube-etcd-10-0-0-2-key.pem", "key")];
        let shown: Vec<String> = host_actions(&h, &linux_observed(&[]), &desired, &[])
            .iter()
            .filter(|a| !matches!(a, Action::CreateContainer { .. } | Action::PullImage { .. }))
            .map(|a| a.to_string())
            .collect();
        assert_eq!(
            shown,
            [
                "upload /etc/kubernetes/ssl/kube-etcd-10-0-0-2-key.pem (new)",
                "set /etc/kubernetes/ssl/kube-etcd-10-0-0-2-key.pem to mode 0600 owner \
                 1001:1001 (was 0600 0:0)",
            ]
        );
    }

    #[test]
    fn a_fresh_windows_worker_gets_directories_files_and_wins() {
        let h = windows_worker();
        let obs = observed(
            &[],
            &["c:/etc/kubernetes/ssl", "c:/run"],
            WinsStatus::default(),
        );
        let actions = host_actions(&h, &obs, &desired(), &[]);
        let shown: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            shown[..6],
            [
                "create directories c:/etc/kubernetes/ssl, c:/run",
                "upload c:/etc/kubernetes/ssl/kube-node.pem (new)",
                "upload c:/etc/rancher/wins/config (new)",
                // wins comes out of the sidekick's image, pulled first.
                "pull image rancher/rke-tools:v0.1.89-windows",
                "install wins at c:/etc/rancher/wins/wins.exe (copied from rancher/rke-tools:v0.1.89-windows)",
                "register and start the rancher-wins service (not registered yet)",
            ],
            "{shown:#?}"
        );
    }

    #[test]
    fn a_windows_worker_in_its_planned_state_needs_no_host_step() {
        let h = windows_worker();
        let obs = observed(&desired(), &[], running_wins());
        let actions = host_actions(&h, &obs, &desired(), &desired());
        assert!(
            !actions.iter().any(|a| matches!(
                a,
                Action::CreateDirectories { .. }
                    | Action::UploadFile { .. }
                    | Action::InstallWins { .. }
                    | Action::StartWins { .. }
            )),
            "{actions:?}"
        );
    }

    #[test]
    fn wins_restarts_only_for_a_config_change_and_starts_when_stopped() {
        let h = windows_worker();
        let mut old = desired();
        old[1].contents = b"white_list: {old}\n".to_vec();
        let obs = observed(&old, &[], running_wins());
        let actions = wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files);
        assert_eq!(
            actions,
            [Action::StartWins {
                register: false,
                restart: true,
                reason: "its config changes".into()
            }]
        );
        // A changed certificate alone does not touch wins.
        let mut old = desired();
        old[0].contents = b"old cert".to_vec();
        let obs = observed(&old, &[], running_wins());
        assert!(wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files).is_empty());

        let stopped = WinsStatus {
            service: "stopped".into(),
            pipe: false,
            ..running_wins()
        };
        let obs = observed(&desired(), &[], stopped);
        assert_eq!(
            wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files),
            [Action::StartWins {
                register: false,
                restart: false,
                reason: "it is stopped".into()
            }]
        );
    }

    #[test]
    fn windows_files_are_kept_from_the_drive_root_and_linux_files_under_etc_kubernetes() {
        let mut h = windows_worker();
        h.files.push(plan::FileSpec {
            path: "c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml".into(),
            container_path: "c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml".into(),
            contents: "windows kubeconfig".into(),
            mode: 0o600,
            checksum_env: None,
            remove_when_empty: true,
        });
        h.files.push(plan::FileSpec {
            path: "c:/etc/rancher/wins/config".into(),
            container_path: "c:/etc/rancher/wins/config".into(),
            contents: "wins".into(),
            mode: 0o600,
            checksum_env: None,
            remove_when_empty: true,
        });
        let files = host_files(&h, &Bundle::default(), &pki::PkiSpec::default(), true);
        let rels: Vec<&str> = files.iter().map(|f| f.relative_path.as_str()).collect();
        assert_eq!(
            rels,
            [
                "etc/kubernetes/ssl/kubecfg-kube-node.yaml",
                "etc/rancher/wins/config"
            ]
        );
        assert_eq!(files_root(&h, true), "c:/");
        // Restart rules and expiry read the Linux-relative view.
        let view = kubernetes_view(&files);
        assert_eq!(view.len(), 1);
        assert_eq!(view[0].relative_path, "ssl/kubecfg-kube-node.yaml");
        // The same plan read as Linux keeps nothing outside /etc/kubernetes.
        assert!(host_files(&h, &Bundle::default(), &pki::PkiSpec::default(), false).is_empty());
    }
}
