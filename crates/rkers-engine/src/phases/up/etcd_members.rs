//! Apply: etcd members leaving (before their containers stop, so quorum holds) and joining
//! (as learners when etcd supports them, promoted once caught up, removed again on failure).

use super::UpError;
use super::run::{ETCD_PLANE, Run};
use crate::diff::Action;
use crate::hosts::{Host, HostPool};
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::health;
use crate::phases::{etcd_membership, reconcile};
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
    let members = match etcd_membership::member_list(via).await {
        Ok(m) => m,
        Err(e) => {
            reporter.warn(format!(
                "the etcd members could not be read through {}: {e}",
                via.name()
            ));
            Vec::new()
        }
    };
    let learners = etcd_membership::supports_learners(via).await;
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
                    peer_url: peer_url.clone(),
                    rollback: LEARNER_ROLLBACK.into(),
                },
                Action::PromoteEtcdMember { member, peer_url },
            ]
        } else {
            vec![Action::AddEtcdMember { member, peer_url }]
        };
        out.push((h.address.clone(), actions));
    }
    out
}

/// A joining member's etcd actions: its data directory emptied (an etcd container an
/// interrupted run left removed first) and made private, then its etcd created as `spec`, the
/// container that knows the members up to it, whatever the diff had for its etcd.
/// `in_host_shell`: see [`Action::FixEtcdPermissions`].
pub(super) fn join_with(
    list: &mut Vec<Action>,
    prefix_path: &str,
    spec: &plan::ContainerSpec,
    in_host_shell: bool,
) {
    let etcd_container = |a: &Action| match a {
        Action::CreateContainer { name, .. }
        | Action::RecreateContainer { name, .. }
        | Action::StartContainer { name }
        | Action::RestartContainer { name, .. } => name == plan::ETCD,
        _ => false,
    };
    list.retain(|a| !etcd_container(a) && !matches!(a, Action::FixEtcdPermissions { .. }));
    list.push(Action::FixEtcdPermissions {
        path: plan::join_path(&[prefix_path, "/var/lib/etcd"]),
        empty_first: true,
        in_host_shell,
    });
    list.push(Action::CreateContainer {
        name: plan::ETCD.into(),
        image: spec.image.clone(),
        start: true,
        spec: Box::new(spec.clone()),
    });
}

/// Members leave before their containers stop, one at a time, so the cluster keeps quorum
/// while shrinking (§16.4): each leaving member's planned membership removal, its etcd
/// containers (so a shrinking cluster never waits on a dead peer) and, on a host that stays
/// without the etcd role, its data directory.
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
    for gone in &run.recon.etcd_removed {
        let name = reconcile::member_name(&gone.hostname);
        let step = runner.reporter.host_action(
            "etcd members",
            &gone.address,
            &format!("remove member {name}"),
        );
        let Some(via) = member_host(run, &leaving) else {
            step.fail("no remaining etcd member is reachable");
            phase.fail("no remaining etcd member is reachable");
            return Err(UpError::NoEtcdMember);
        };
        let actions = leaving_member_actions(run, &gone.address);
        let actions: Vec<&Action> = actions.iter().collect();
        let result = run
            .exec
            .on(&gone.address)
            .through(via)
            .apply(&actions)
            .await;
        if let Err(e) = result {
            let detail = e.to_string();
            step.fail(&detail);
            phase.fail(&detail);
            return Err(UpError::EtcdRemove {
                host: gone.address.clone(),
                member: name,
                detail,
            });
        }
        step.ok();
    }
    phase.done();
    Ok(())
}

/// What the etcd step applies for a member leaving from `address`, as the plan lists it: the
/// membership removal, its etcd containers and (a host that stays) its data directory.
pub(super) fn leaving_member_actions(run: &Run, address: &str) -> Vec<Action> {
    let planned = match run.actions.get(address) {
        Some(list) => list.clone(),
        // A host that left the cluster lists its actions with the removed hosts.
        None => run
            .removed
            .iter()
            .find(|r| r.gone.address == address)
            .map(|r| {
                reconcile::removed_host_actions(
                    &r.gone,
                    &r.present,
                    r.reachable.as_ref().map(|(_, c)| c),
                )
            })
            .unwrap_or_default(),
    };
    planned
        .into_iter()
        .filter(|a| match a {
            Action::RemoveEtcdMember { .. } => true,
            Action::RemoveContainer { name, .. } => ETCD_PLANE.contains(&name.as_str()),
            Action::CleanDirectories { .. } => run.actions.contains_key(address),
            _ => false,
        })
        .collect()
}

/// New members join one at a time: announced to the cluster, then started with the partial
/// member list and `--initial-cluster-state=existing` (§16.3), then checked healthy.
pub(super) async fn join_etcd_members(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
    let old_members_exist = member_host(run, &BTreeSet::new()).is_some();
    if run.recon.etcd_added.is_empty() || !old_members_exist {
        return Ok(());
    }
    let phase = runner.reporter.phase("etcd join");
    for address in &run.recon.etcd_added {
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
            // As planned: the membership change (none for a member that has started already,
            // after an interrupted run), its etcd as the join's own container, and a learner's
            // promotion once that etcd runs.
            let planned = &run.actions[address];
            let pick = |f: fn(&Action) -> bool| planned.iter().filter(|a| f(a)).collect::<Vec<_>>();
            let add = pick(|a| {
                matches!(
                    a,
                    Action::AddEtcdMember { .. } | Action::AddEtcdLearner { .. }
                )
            });
            let etcd = pick(|a| match a {
                Action::FixEtcdPermissions { .. } => true,
                Action::CreateContainer { name, .. }
                | Action::RecreateContainer { name, .. }
                | Action::StartContainer { name }
                | Action::RestartContainer { name, .. } => name == plan::ETCD,
                _ => false,
            });
            let promote = pick(|a| matches!(a, Action::PromoteEtcdMember { .. }));
            let learner = matches!(add.first(), Some(Action::AddEtcdLearner { .. }));
            let exec = run.executor(address).through(via);
            exec.apply(&add).await.map_err(|e| e.to_string())?;
            let host = run.pool.get(address).expect("connected host");
            let joined = async {
                exec.apply(&etcd).await.map_err(|e| e.to_string())?;
                exec.apply(&promote).await.map_err(|e| e.to_string())?;
                let check = etcd
                    .iter()
                    .find_map(|a| match a {
                        Action::CreateContainer { spec, .. }
                        | Action::RecreateContainer { spec, .. } => spec.health_check.clone(),
                        _ => None,
                    })
                    .or_else(|| {
                        h.containers
                            .get(plan::ETCD)
                            .and_then(|c| c.health_check.clone())
                    });
                if let Some(check) = check {
                    let tls = run.exec.health_tls(&check);
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
                let undone = async {
                    host.docker()
                        .remove_container(plan::ETCD)
                        .await
                        .map_err(|e| etcd_membership::EtcdctlError::Host(Box::new(e)))?;
                    etcd_membership::remove_member_by_peer(via, &peer).await
                }
                .await;
                // The rollback the plan announced with the learner, reported as it ran.
                let removed = Action::RemoveEtcdMember {
                    member: name.clone(),
                };
                let undo_error = undone.as_ref().err().map(|u| u.to_string());
                run.reporter
                    .applied(address, &removed, undo_error.as_deref());
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
