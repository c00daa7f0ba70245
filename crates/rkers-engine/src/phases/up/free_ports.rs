//! The ports of components `up` is about to create on nodes already in the cluster. RKE1 (and
//! the connect step, §10) checks ports only when hosts or roles are added; a node whose kubelet
//! (or etcd, or kube-apiserver) container was removed gets it recreated, and if another process
//! took the port meanwhile the component cannot bind it while `up` reports success (fault
//! matrix, scripts/faults fault 9b). Such a host's ports are checked here, before anything
//! changes, and a taken port stops the run naming the host, the port and the process.

use super::run::Observed;
use super::{UpError, UpOptions};
use crate::cluster::Cluster;
use crate::hosts::HostPool;
use crate::hosts::ports::{self, CP_LISTENER, ETCD_LISTENER, WORKER_LISTENER};
use crate::plan::{self, ClusterPlan, HostPlan};
use std::collections::BTreeMap;

/// The listeners whose ports must be free on `host`: one per role whose component is planned
/// there but does not run.
pub(super) fn listeners_to_check(host: &HostPlan, observed: &Observed) -> Vec<&'static str> {
    let running = |name: &str| observed.containers.get(name).is_some_and(|c| c.running);
    [
        (host.roles.etcd, plan::ETCD, ETCD_LISTENER),
        (host.roles.controlplane, plan::KUBE_APISERVER, CP_LISTENER),
        (host.roles.worker, plan::KUBELET, WORKER_LISTENER),
    ]
    .into_iter()
    .filter(|(role, component, _)| *role && !running(component))
    .map(|(_, _, listener)| listener)
    .collect()
}

/// Checks every host that would get one of its port-owning components recreated; nothing when
/// the connect step already checked every port, when the checks are disabled, or on a dry run
/// (the check starts containers).
pub(super) async fn check(
    cluster: &Cluster,
    opts: &UpOptions,
    pool: &HostPool,
    cluster_plan: &ClusterPlan,
    observed: &BTreeMap<String, Observed>,
    checked_at_connect: bool,
) -> Result<(), UpError> {
    if checked_at_connect || opts.disable_port_check || opts.dry_run {
        return Ok(());
    }
    let plan = cluster.port_check_plan();
    let mut problems = Vec::new();
    for host in &cluster_plan.hosts {
        // The listener is a Linux container.
        if !cluster_plan.platform(&host.address).runs_linux_helpers() {
            continue;
        }
        let Some(obs) = observed.get(&host.address) else {
            continue;
        };
        for listener in listeners_to_check(host, obs) {
            tracing::debug!(
                host = host.address,
                listener,
                "component missing: ports checked"
            );
            if let Err(e) = ports::check_host_ports_free(
                pool,
                &host.address,
                listener,
                &plan.tools_image,
                &plan.registries,
            )
            .await
            {
                problems.push(e);
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(UpError::PortsInUse(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::ObservedContainer;

    fn with(containers: &[(&str, bool)]) -> Observed {
        let mut obs = Observed::default();
        for (name, running) in containers {
            obs.containers.insert(
                name.to_string(),
                ObservedContainer {
                    running: *running,
                    ..Default::default()
                },
            );
        }
        obs
    }

    /// Fault 9b: a node of the cluster whose kubelet was removed has its kubelet port checked;
    /// one that runs kubelet, or whose roles do not include the component, is left alone.
    #[test]
    fn a_missing_or_stopped_component_has_its_ports_checked() {
        let mut host = super::super::tests::linux_worker();
        host.roles = plan::Roles {
            etcd: true,
            controlplane: false,
            worker: true,
        };
        assert_eq!(
            listeners_to_check(&host, &with(&[(plan::ETCD, true)])),
            [WORKER_LISTENER]
        );
        assert_eq!(
            listeners_to_check(&host, &with(&[(plan::ETCD, true), (plan::KUBELET, false)])),
            [WORKER_LISTENER]
        );
        assert!(
            listeners_to_check(&host, &with(&[(plan::ETCD, true), (plan::KUBELET, true)]))
                .is_empty()
        );
        assert_eq!(
            listeners_to_check(&host, &with(&[(plan::KUBELET, true)])),
            [ETCD_LISTENER]
        );
        host.roles.controlplane = true;
        assert_eq!(
            listeners_to_check(&host, &with(&[(plan::ETCD, true), (plan::KUBELET, true)])),
            [CP_LISTENER]
        );
    }
}
