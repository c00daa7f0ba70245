//! Apply: the etcd plane, members started in parallel on a new cluster or one at a time when
//! replacing running members, then every member's health reported.

use super::containers::{apply_container, remove_unplanned};
use super::run::{ETCD_PLANE, Run};
use super::{UpError, finish};
use crate::diff::Action;
use crate::phases::{PhaseError, Runner};
use crate::phases::{etcd_membership, reconcile};
use crate::plan;
use std::sync::Arc;

/// The etcd plane: members started (in parallel for a new cluster; one at a time when
/// replacing running members, so quorum holds), then every member's health, all reported.
pub(super) async fn etcd_plane(run: &Arc<Run>, runner: &Runner) -> Result<(), UpError> {
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
            .any(|x| matches!(x, Action::RecreateContainer { name, .. } | Action::RestartContainer { name, .. } if name == plan::ETCD))
    });
    let work = |address: String| {
        let run = run.clone();
        async move {
            let h = run.host_plan(&address);
            let host = run.host(&address);
            remove_unplanned(&run, h, ETCD_PLANE).await?;
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
            Ok::<(), UpError>(())
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

/// The etcd cluster's members as the first answering member lists them: through etcd's JSON
/// gateway where the member's health check says where it listens, else through `etcdctl`.
pub(super) async fn etcd_member_report(run: &Run, etcd_hosts: &[String]) -> Option<String> {
    for address in etcd_hosts {
        let host = run.host(address);
        let gateway = match run
            .host_plan(address)
            .containers
            .get(plan::ETCD)
            .and_then(|c| c.health_check.as_ref())
        {
            Some(check) => {
                let tls = run.exec.health_tls(check);
                etcd_membership::member_list_from_gateway(host, &check.url, tls.as_ref()).await
            }
            None => None,
        };
        let members = match gateway {
            Some(members) => Ok(members),
            None => etcd_membership::member_list(host).await,
        };
        if let Ok(members) = members {
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
