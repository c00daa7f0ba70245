//! Apply: etcd members leaving (before their containers stop, so quorum holds) and joining
//! (as learners when etcd supports them, promoted once caught up, removed again on failure).

use super::UpError;
use super::containers::check_tls;
use super::run::{ETCD_PLANE, Run};
use crate::cluster::Cluster;
use crate::diff::Action;
use crate::hosts::{Host, HostPool};
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::health;
use crate::phases::reconcile;
use crate::plan;
use crate::plan::ClusterPlan;
use std::collections::BTreeSet;
use std::sync::Arc;

pub(super) fn member_host<'a>(run: &'a Run, skip: &BTreeSet<String>) -> Option<&'a Arc<Host>> {
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

/// What the rollback of a learner's failed join does, as the dry run states it.
const LEARNER_ROLLBACK: &str =
    "its etcd container is removed and the learner removed again, the cluster keeps its members";

/// The membership actions of each joining etcd host, read (never changed) through a member
/// that stays: none for a member whose etcd has started already (an interrupted run); else
/// added as a learner and promoted where etcd has learners (3.4+), or added as a voting member.
/// Learners do not count towards quorum until promoted: RKE1 adds voting members, and a join
/// that fails then leaves the cluster without quorum (1 of 2 members up).
pub(super) async fn plan_joins(
    pool: &HostPool,
    plan: &ClusterPlan,
    recon: &reconcile::Changes,
    reporter: &Reporter,
) -> Vec<(String, Vec<Action>)> {
    let added: BTreeSet<&str> = recon.etcd_added.iter().map(String::as_str).collect();
    let Some(via) = plan
        .hosts
        .iter()
        .filter(|h| h.roles.etcd && !added.contains(h.address.as_str()))
        .find_map(|h| pool.get(&h.address))
    else {
        // No member stays to join through: the join step has nothing to do either.
        return Vec::new();
    };
    if added.is_empty() {
        return Vec::new();
    }
    let members = match reconcile::member_list(via).await {
        Ok(m) => m,
        Err(e) => {
            reporter.warn(format!(
                "the etcd members could not be read through {}: {e}",
                via.name()
            ));
            Vec::new()
        }
    };
    let learners = reconcile::supports_learners(via).await;
    let mut out = Vec::new();
    for h in recon
        .etcd_added
        .iter()
        .filter_map(|a| plan.hosts.iter().find(|h| &h.address == a))
    {
        let member = reconcile::member_name(&h.hostname);
        let peer_url = reconcile::peer_url(&h.internal_address);
        // A member that has never started (new, or left unstarted by an interrupted run)
        // starts from an empty data directory: data of an earlier membership would make etcd
        // restart as that removed member, which the cluster refuses.
        let started = members
            .iter()
            .any(|(_, n, urls)| !n.is_empty() && urls.split(',').any(|u| u == peer_url));
        let actions = if started {
            Vec::new()
        } else if learners {
            vec![
                Action::AddEtcdLearner {
                    member: member.clone(),
                    peer_url,
                    rollback: LEARNER_ROLLBACK.into(),
                },
                Action::PromoteEtcdMember { member },
            ]
        } else {
            vec![Action::AddEtcdMember { member, peer_url }]
        };
        out.push((h.address.clone(), actions));
    }
    out
}

/// Members leave before their containers stop, one at a time, so the cluster keeps quorum
/// while shrinking (§16.4).
pub(super) async fn remove_etcd_members(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
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
            result = Err(UpError::NoEtcdMember);
            break;
        };
        match reconcile::remove_member(via, &name).await {
            Ok(()) => {
                let removed = Action::RemoveEtcdMember {
                    member: name.clone(),
                };
                run.reporter.applied(&gone.address, &removed, None);
                step.ok()
            }
            Err(e) => {
                step.fail(&e);
                result = Err(UpError::EtcdRemove {
                    host: via.name().to_string(),
                    member: name.clone(),
                    detail: e,
                });
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
            // Reported as applied where the plan lists them (a host that stays in the cluster).
            let planned = run.actions.get(&gone.address);
            let listed =
                |a: &dyn Fn(&Action) -> bool| planned.and_then(|l| l.iter().find(|x| a(x)));
            for c in ETCD_PLANE {
                let result = host.docker().remove_container(c).await;
                if let Some(action) =
                    listed(&|a| matches!(a, Action::RemoveContainer { name, .. } if name == c))
                {
                    let error = result.as_ref().err().map(|e| e.to_string());
                    run.reporter
                        .applied(&gone.address, action, error.as_deref());
                }
                result?;
            }
            // A host that stays in the cluster without the etcd role keeps no member data: were
            // it made an etcd host again, its etcd would restart as the removed member and be
            // refused ("the member has been permanently removed"). Hosts that leave the cluster
            // are cleaned with the rest of their directories.
            if let Some(action @ Action::CleanDirectories { paths }) =
                listed(&|a| matches!(a, Action::CleanDirectories { .. }))
            {
                let result = reconcile::clean_directories(&host, &run.helper_image, paths).await;
                run.reporter.applied(
                    &gone.address,
                    action,
                    result.as_ref().err().map(String::as_str),
                );
                result.map_err(|detail| UpError::CleanDirectories {
                    host: gone.address.clone(),
                    detail,
                })?;
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
pub(super) async fn join_etcd_members(
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
            // As planned (`plan_joins`): no membership action for a member that has started
            // already (an interrupted run); a learner is promoted once its etcd runs.
            let planned = &run.actions[address];
            let add = planned.iter().find(|a| {
                matches!(
                    a,
                    Action::AddEtcdMember { .. } | Action::AddEtcdLearner { .. }
                )
            });
            let promote = planned
                .iter()
                .find(|a| matches!(a, Action::PromoteEtcdMember { .. }));
            let learner = matches!(add, Some(Action::AddEtcdLearner { .. }));
            let started = add.is_none();
            if let Some(add) = add {
                let added = reconcile::add_member(via, &name, &peer, learner).await;
                run.reporter
                    .applied(address, add, added.as_ref().err().map(String::as_str));
                added?;
            }
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
            // The member's etcd as planned (its data directory's permissions, the container),
            // started with the join's member list.
            let data = plan::join_path(&[&hp.prefix_path, "/var/lib/etcd"]);
            let mut steps: Vec<Action> = run.actions[address]
                .iter()
                .filter(|a| match a {
                    Action::FixEtcdPermissions { .. } => true,
                    Action::CreateContainer { name, .. } | Action::RecreateContainer { name, .. } => {
                        name == plan::ETCD
                    }
                    _ => false,
                })
                .cloned()
                .collect();
            if !steps.iter().any(|a| matches!(a, Action::FixEtcdPermissions { .. })) {
                steps.insert(0, Action::FixEtcdPermissions { path: data });
            }
            if steps.len() == 1 {
                // Left by an interrupted run in its planned state: started again as a member.
                steps.push(Action::CreateContainer {
                    name: plan::ETCD.into(),
                    image: spec.image.clone(),
                    start: true,
                });
            }
            let steps: Vec<&Action> = steps.iter().collect();
            run.executor_for(address, &hp.containers)
                .apply(&steps)
                .await
                .map_err(|e| e.to_string())?;
            if learner {
                let promoted = reconcile::promote_member(via, &peer, 45).await;
                if let Some(promote) = promote {
                    run.reporter
                        .applied(address, promote, promoted.as_ref().err().map(String::as_str));
                }
                promoted?;
            }
            if let Some(check) = &spec.health_check {
                let tls = check_tls(run, check);
                health::wait_healthy(
                    host.link().as_ref(),
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
                // The rollback the plan announced with the learner, reported as it ran.
                let removed = Action::RemoveEtcdMember {
                    member: name.clone(),
                };
                run.reporter
                    .applied(address, &removed, undone.as_ref().err().map(String::as_str));
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
                return Err(UpError::EtcdJoin {
                    host: address.clone(),
                    member: name,
                    detail: e,
                });
            }
        }
    }
    phase.done();
    Ok(())
}
