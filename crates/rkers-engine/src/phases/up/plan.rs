//! Step 3, plan and observe: each host's desired containers and files (pure, from the plan),
//! what each host runs and holds, and the actions between the two, in the order `up` takes
//! them; then the checks that may refuse the run before anything changes (webhooks, adoption).

use super::cluster_actions::{PlannedCluster, log_links, plan_cluster};
use super::connect::Connected;
use super::host_actions::{host_actions, in_run_order};
use super::observe::{guard_existing_cluster, observe};
use super::removed_hosts::observe_removed;
use super::run::{CONTROL_PLANE, ETCD_PLANE, RemovedHost, WORKER_PLANE};
use super::state::Loaded;
use super::{UpError, UpOptions, etc_kubernetes, host_files, kubernetes_view_map};
use crate::cluster::Cluster;
use crate::diff::encryption::ApiserverHost;
use crate::diff::{Action, HostActions};
use crate::hosts::{self, HostPool};
use crate::output::Reporter;
use crate::phases::adoption::Adoption;
use crate::phases::files::DesiredFile;
use crate::phases::reconcile;
use crate::pki::Bundle;
use crate::plan::{self, ClusterPlan};
use std::collections::BTreeMap;

/// Everything the plan step found and decided.
pub(super) struct Planned {
    pub(super) pool: HostPool,
    pub(super) plan: ClusterPlan,
    pub(super) bundle: Bundle,
    /// Each planned host's actions, in the order they are taken.
    pub(super) actions: BTreeMap<String, Vec<Action>>,
    /// What `--dry-run` shows: `actions`, then the hosts that left the cluster.
    pub(super) shown: Vec<HostActions>,
    pub(super) registries: Vec<hosts::target::RegistryCredential>,
    pub(super) helper_image: String,
    pub(super) recon: reconcile::Changes,
    pub(super) removed: Vec<RemovedHost>,
    /// Set when the state was not written by rkers: what adopting the cluster changes.
    pub(super) adoption: Option<Adoption>,
    /// The addons and the actions of the pseudo-host `cluster`.
    pub(super) cluster: PlannedCluster,
    /// Objects of rkers' own addons the run deletes before the control plane changes (their
    /// API goes with the target minor; the addons' new renderings leave them out).
    pub(super) addon_leftovers: Vec<crate::diff::removed_apis::ApiUse>,
    /// The authorization mode is RBAC.
    pub(super) rbac: bool,
}

/// The cluster's plan on the hosts as connected (pure), with etcd's membership as `etcd` says.
pub(super) fn build_plan(
    cluster: &Cluster,
    opts: &UpOptions,
    encryption_config: &str,
    old_current: Option<&crate::config::RkeConfig>,
    facts: &BTreeMap<String, plan::HostFacts>,
    etcd: &plan::EtcdContext,
) -> Result<ClusterPlan, UpError> {
    let config = cluster.settled_config(old_current);
    let service_options = cluster.service_options()?;
    // Only asked for when a Windows host is present: Linux-only clusters need no Windows flags.
    let windows_options = if facts
        .values()
        .any(|f| plan::Platform::of(f) == plan::Platform::Windows)
    {
        Some(cluster.windows_service_options()?)
    } else {
        None
    };
    let default_tools_tag = cluster.default_rke_tools_tag();
    Ok(plan::build(&plan::PlanInput {
        config: &config,
        service_options: &service_options,
        windows_service_options: windows_options.as_ref(),
        host_facts: facts,
        etcd,
        encryption_config: (!encryption_config.is_empty()).then_some(encryption_config),
        default_rke_tools_tag: default_tools_tag.as_deref(),
        dind: opts.dind,
    })?)
}

pub(super) async fn plan(
    cluster: &Cluster,
    opts: &UpOptions,
    loaded: &Loaded,
    connected: Connected,
    reporter: &Reporter,
) -> Result<Planned, UpError> {
    let Connected {
        pool,
        recon,
        removed_pool,
        ports_checked,
        prefetched,
    } = connected;
    let (old, old_current, state) = (&loaded.old, &loaded.old_current, &loaded.state);
    let encryption = state.desired_state.encryption_config.as_str();
    let facts = crate::phases::host_facts(&pool);
    let windows_problems = plan::validate_windows(&cluster.config, &facts);
    if !windows_problems.is_empty() {
        return Err(UpError::Windows {
            problems: windows_problems,
        });
    }
    let etcd = plan::EtcdContext::fresh();
    let cluster_plan = build_plan(
        cluster,
        opts,
        encryption,
        old_current.as_deref(),
        &facts,
        &etcd,
    )?;
    let spec = cluster.pki_spec()?;
    let bundle = state.desired_state.certificates_bundle.clone();
    let desired_files: BTreeMap<String, Vec<DesiredFile>> = cluster_plan
        .hosts
        .iter()
        .map(|h| {
            let platform = cluster_plan.platform(&h.address);
            (h.address.clone(), host_files(h, &bundle, &spec, platform))
        })
        .collect();
    let helper_image = cluster.config.system_images.cert_downloader.clone();
    let registries = cluster.registry_credentials();
    let mut observed = observe(
        &pool,
        &cluster_plan,
        &bundle,
        &desired_files,
        &helper_image,
        &registries,
    )
    .await?;
    // The images the connect step pulled during the port checks were missing when the run found
    // the host: the plan pulls them (at once now), as the dry run said it would.
    for (address, images) in &prefetched {
        if let Some(obs) = observed.get_mut(address) {
            for image in images {
                obs.images.insert(image.clone(), None);
            }
        }
    }
    let expiry_view: Vec<(&str, BTreeMap<String, Vec<u8>>)> = observed
        .iter()
        .map(|(a, o)| (a.as_str(), kubernetes_view_map(o.platform, &o.files)))
        .collect();
    crate::phases::certs::warn_expiring(reporter, expiry_view.iter().map(|(a, f)| (*a, f)));
    guard_existing_cluster(
        old.as_ref(),
        &observed,
        opts.force,
        &cluster.files.state_path,
    )?;
    super::free_ports::check(
        cluster,
        opts,
        &pool,
        &cluster_plan,
        &observed,
        ports_checked,
    )
    .await?;
    let mut all_actions = Vec::new();
    let mut actions = BTreeMap::new();
    for host_plan in &cluster_plan.hosts {
        let obs = &observed[&host_plan.address];
        // What the containers were started with: a run stopped after writing files but before
        // restarting their readers (e.g. `cert rotate`) still restarts them now.
        let platform = cluster_plan.platform(&host_plan.address);
        let loaded = old.as_ref().map_or_else(Vec::new, |s| {
            host_files(
                host_plan,
                &s.current_state.certificates_bundle,
                &spec,
                platform,
            )
        });
        let mut list = host_actions(host_plan, obs, &desired_files[&host_plan.address], &loaded);
        // Windows workers keep the health-check undo: their containers run under wins.
        let existing = !platform.runs_under_wins()
            && old_current
                .as_ref()
                .is_some_and(|o| o.nodes.iter().any(|n| n.address == host_plan.address));
        crate::diff::keep_until_node_ready(&mut list, host_plan, existing);
        all_actions.push(HostActions {
            host: host_plan.address.clone(),
            actions: list.clone(),
        });
        actions.insert(host_plan.address.clone(), list);
    }
    // Joining etcd members: added (as learners and promoted once their etcd runs, where etcd
    // has learners), decided from the members read through one that stays.
    let joins = super::etcd_members::plan_joins(&pool, &cluster_plan, &recon, reporter).await;
    let etcd_order: Vec<String> = cluster_plan
        .hosts
        .iter()
        .filter(|h| h.roles.etcd)
        .map(|h| h.address.clone())
        .collect();
    for (a, membership) in joins {
        if let Some(list) = actions.get_mut(&a) {
            if !membership.is_empty() {
                // The etcd it starts knows the members up to itself (§16.3): that container,
                // not the final plan's, is what its create carries.
                let at = recon.etcd_added.iter().position(|x| *x == a).unwrap_or(0);
                let pending = recon.etcd_added[at + 1..].iter().cloned().collect();
                let joining_etcd = plan::EtcdContext::while_adding(&etcd_order, &pending);
                let joining = build_plan(
                    cluster,
                    opts,
                    encryption,
                    old_current.as_deref(),
                    &facts,
                    &joining_etcd,
                )?;
                if let Some(h) = joining.hosts.iter().find(|h| h.address == a)
                    && let Some(spec) = h.containers.get(plan::ETCD)
                {
                    let root_shell = observed.get(&a).is_some_and(|o| o.root_shell);
                    super::etcd_members::join_with(list, &h.prefix_path, spec, root_shell);
                }
            }
            for action in membership {
                match action {
                    Action::PromoteEtcdMember { .. } => list.push(action),
                    _ => list.insert(0, action),
                }
            }
            if let Some(shown) = all_actions.iter_mut().find(|x| x.host == a) {
                shown.actions = list.clone();
            }
        }
    }
    for gone in &recon.etcd_removed {
        if let Some(list) = actions.get_mut(&gone.address) {
            list.insert(
                0,
                Action::RemoveEtcdMember {
                    member: reconcile::member_name(&gone.hostname),
                },
            );
            // The host stays without the etcd role: its member data goes with its membership,
            // or an etcd made there again would start as the removed member and be refused.
            if let Some(h) = cluster_plan
                .hosts
                .iter()
                .find(|h| h.address == gone.address)
            {
                list.push(Action::CleanDirectories {
                    paths: vec![plan::join_path(&[&h.prefix_path, "/var/lib/etcd"])],
                });
            }
            if let Some(shown) = all_actions.iter_mut().find(|x| x.host == gone.address) {
                shown.actions = list.clone();
            }
        }
    }
    // calico/canal: the runtime directories and their tmpfiles.d entry (incidents.md §1).
    let calico = crate::checks::guard::calico_actions(cluster, &pool).await?;
    for (address, extra) in calico {
        crate::checks::guard::append(&mut actions, &mut all_actions, &address, extra);
    }
    // Each host's list in the order the run applies it, which is what the dry run shows.
    for shown in all_actions.iter_mut() {
        if let Some(list) = actions.get_mut(&shown.host) {
            let Some(h) = cluster_plan.hosts.iter().find(|h| h.address == shown.host) else {
                continue;
            };
            let early_workers = old_current.is_none()
                && !cluster_plan.platform(&h.address).runs_under_wins()
                && h.containers.contains_key(plan::KUBELET);
            let mut planes: Vec<&[&str]> = Vec::new();
            if h.roles.etcd {
                planes.push(ETCD_PLANE);
            }
            if h.roles.controlplane {
                planes.push(CONTROL_PLANE);
            }
            planes.push(WORKER_PLANE);
            in_run_order(list, early_workers, &planes);
            shown.actions = list.clone();
        }
    }
    let disabling = plan_disable_encryption(
        loaded,
        &cluster_plan,
        &observed,
        &mut actions,
        &mut all_actions,
        reporter,
    )?;
    let removed = observe_removed(
        cluster,
        old_current.as_deref(),
        &recon,
        removed_pool.as_ref(),
        &mut all_actions,
    )
    .await?;
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
            Adoption::new(
                &cluster.files.state_path,
                &cluster.config.kubernetes_version,
                found,
                &all_actions,
            )
        });
    // Before any change: the etcd snapshot, when etcd or the control plane changes.
    super::snapshot::plan_snapshot(
        cluster,
        opts.no_snapshot,
        old_current.as_ref().map(|c| c.kubernetes_version.as_str()),
        &pool,
        &observed,
        &mut actions,
        &mut all_actions,
        reporter,
    )
    .await?;
    // Each Linux host's log links follow from its created containers: its last action.
    for shown in all_actions.iter_mut() {
        let platform = cluster_plan.platform(&shown.host);
        if let Some(list) = actions.get_mut(&shown.host)
            && let Some(links) = log_links(list, platform, facts.get(&shown.host))
        {
            list.push(links.clone());
            shown.actions.push(links);
        }
    }
    let mut cluster_planned =
        plan_cluster(cluster, loaded, &cluster_plan, disabling, reporter).await?;
    // Objects of rkers' own addons that the target minor's API and the addons' new renderings
    // both drop: deleted first, while their API is still served.
    let addon_leftovers =
        super::removed_apis::addon_leftovers(cluster, loaded, &cluster_planned.addons).await?;
    cluster_planned.actions.splice(
        0..0,
        super::removed_apis::leftover_deletions(loaded, &addon_leftovers),
    );
    if !cluster_planned.actions.is_empty() {
        all_actions.push(HostActions {
            host: crate::phases::changeset::CLUSTER.to_string(),
            actions: cluster_planned.actions.clone(),
        });
    }
    Ok(Planned {
        cluster: cluster_planned,
        addon_leftovers,
        rbac: super::cluster_actions::rbac(cluster),
        pool,
        plan: cluster_plan,
        bundle,
        actions,
        shown: all_actions,
        registries,
        helper_image,
        recon,
        removed,
        adoption,
    })
}

/// Encryption on in the state the cluster runs and off in cluster.yml (§23): each
/// controlplane host that runs kube-apiserver first gets the identity-first provider file and
/// restarts kube-apiserver with it, before anything else the host does (the files step then
/// removes the provider file). Returns whether that is planned, and with it the rewrite of
/// every Secret; when no kube-apiserver runs, nothing serves the Secrets and the dry run says
/// so as the run does.
fn plan_disable_encryption(
    loaded: &Loaded,
    cluster_plan: &ClusterPlan,
    observed: &BTreeMap<String, super::run::Observed>,
    actions: &mut BTreeMap<String, Vec<Action>>,
    all_actions: &mut [HostActions],
    reporter: &Reporter,
) -> Result<bool, UpError> {
    let (Some(applied), Some(old)) = (
        super::cluster_actions::encryption_turned_off(loaded),
        loaded.old.as_ref(),
    ) else {
        return Ok(false);
    };
    let file =
        crate::phases::encryption::identity_first(applied, old).map_err(UpError::EncryptionOff)?;
    let hosts: Vec<ApiserverHost> = cluster_plan
        .hosts
        .iter()
        .filter(|h| h.roles.controlplane)
        .map(|h| ApiserverHost {
            address: h.address.clone(),
            dir: etc_kubernetes(h),
            runs_apiserver: observed[&h.address]
                .containers
                .get(plan::KUBE_APISERVER)
                .is_some_and(|c| c.running),
        })
        .collect();
    let Some(per_host) = crate::diff::encryption::disable_encryption(&hosts, &file) else {
        reporter.warn(
            "no kube-apiserver runs: Secrets are not rewritten before encryption is turned off",
        );
        return Ok(false);
    };
    for (address, first) in per_host {
        if let Some(list) = actions.get_mut(&address) {
            list.splice(0..0, first);
            if let Some(shown) = all_actions.iter_mut().find(|x| x.host == address) {
                shown.actions = list.clone();
            }
        }
    }
    Ok(true)
}

/// The checks that may still refuse the run before anything changes: a webhook that would
/// refuse the system pods (incidents.md §3), API versions a minor change removes, and the
/// operator's confirmation of an adoption.
pub(super) async fn confirm(
    cluster: &Cluster,
    opts: &UpOptions,
    loaded: &Loaded,
    planned: &Planned,
    reporter: &Reporter,
) -> Result<(), UpError> {
    if loaded.old_current.is_some() {
        crate::checks::guard::check_webhooks_before_changes(
            cluster,
            opts.ignore_blocking_webhooks,
            opts.dry_run,
            reporter,
        )
        .await?;
    }
    super::removed_apis::check(cluster, opts, loaded, planned, reporter).await?;
    let Some(adoption) = &planned.adoption else {
        return Ok(());
    };
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
    if reporter.prints_text() {
        eprint!("{}", adoption.render());
    }
    if !opts.dry_run {
        crate::phases::adoption::confirm(adoption, opts.yes, opts.confirm.as_deref())?;
    }
    Ok(())
}
