//! The steps of `rkers up`, in the order they apply (§9), decided from whether the cluster
//! already runs: a new cluster starts its kubelets early and its etcd and control plane all at
//! once, and records its state once the API answers; an existing one is upgraded host by host
//! within `upgrade_strategy`'s budgets and records its state only once its workers ran the
//! change healthy. The actions each step applies on each host are decided with the plan (the
//! dry run lists them per host, in the order each host applies them); a step's stage carries
//! none of them, only its place in the order: a step selects its own from the plan's.

use crate::changeset::{Changeset, Pace};
use std::fmt;

/// One step of `up`; `Display` is its phase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpStep {
    /// The etcd snapshot a change to etcd or the control plane takes, and the `old-…`
    /// containers an interrupted run left.
    BeforeChanges,
    /// Encryption turned off: Secrets back to plain text while the cluster runs as it was.
    DisableEncryption,
    /// Certificates and files on every host, and the admin kubeconfig.
    Files,
    /// Every image a host's containers need.
    Images,
    /// A new cluster's kubelets, started while etcd and the control plane come up.
    EarlyKubelets,
    /// Windows workers' directories and wins.
    Wins,
    /// etcd members that leave.
    EtcdMembersLeave,
    /// etcd members that join, one at a time.
    EtcdMembersJoin,
    /// A new cluster's etcd and control plane containers, all started at once.
    StartEtcdAndControlPlane,
    EtcdPlane,
    /// A new cluster's control plane, all hosts at once, and its RBAC (what [`UpStep::Authz`]
    /// does) as soon as the first control plane host's API server answers: kubelets, started
    /// early, register their nodes only once RBAC lets them and back off up to 7 s between
    /// attempts, so RBAC must not wait for the other components' health checks.
    ControlPlaneAndAuthz,
    /// An existing cluster's control plane, host by host.
    UpgradeControlPlane,
    /// RBAC, the API the later steps use (an existing cluster's; a new one's comes with
    /// [`UpStep::ControlPlaneAndAuthz`]).
    Authz,
    /// Secrets rewritten under a new encryption key.
    RewriteSecrets,
    /// The desired state recorded as the current one (file and Secret).
    SaveState,
    /// A new cluster's early kubelets done and their nodes registered.
    NodeRegistration,
    /// A new cluster's worker plane, all hosts at once.
    WorkerPlane,
    /// An existing cluster's worker plane, host by host.
    UpgradeWorkerPlane,
    /// Node labels and taints.
    Nodes,
    /// Hosts that left the cluster.
    RemovedHosts,
    LogLinks,
    Addons,
    /// The state this run replaced kept for `rkers rollback`.
    FinishState,
}

impl fmt::Display for UpStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UpStep::BeforeChanges => "before changes",
            UpStep::DisableEncryption => "disable encryption",
            UpStep::Files => "certificates and files",
            UpStep::Images => "images",
            UpStep::EarlyKubelets => "kubelets on etcd and control plane hosts",
            UpStep::Wins => "wins",
            UpStep::EtcdMembersLeave => "etcd members",
            UpStep::EtcdMembersJoin => "etcd join",
            UpStep::StartEtcdAndControlPlane => "etcd and control plane started",
            UpStep::EtcdPlane => "etcd plane",
            UpStep::ControlPlaneAndAuthz | UpStep::UpgradeControlPlane => "control plane",
            UpStep::Authz => "authz",
            UpStep::RewriteSecrets => "rewrite secrets",
            UpStep::SaveState => "save state",
            UpStep::NodeRegistration => "node registration",
            UpStep::WorkerPlane | UpStep::UpgradeWorkerPlane => "worker plane",
            UpStep::Nodes => "nodes",
            UpStep::RemovedHosts => "removed hosts",
            UpStep::LogLinks => "log links",
            UpStep::Addons => "addons",
            UpStep::FinishState => "finish state",
        })
    }
}

/// `up`'s steps for a cluster that already runs (`existing`) or a new one, in order. Each
/// step's hosts are paced by the step itself (all at once, one at a time, or within
/// `upgrade_strategy`'s budgets), so every stage is declared parallel.
pub fn up_steps(existing: bool) -> Changeset<UpStep> {
    use UpStep::*;
    let steps: &[UpStep] = if existing {
        &[
            BeforeChanges,
            DisableEncryption,
            Files,
            Images,
            Wins,
            EtcdMembersLeave,
            EtcdMembersJoin,
            EtcdPlane,
            UpgradeControlPlane,
            Authz,
            RewriteSecrets,
            // Unlike RKE1 (§9), after the workers: a worker whose change failed (and was put
            // back) leaves the state of the last healthy run.
            UpgradeWorkerPlane,
            SaveState,
            Nodes,
            RemovedHosts,
            LogLinks,
            Addons,
            FinishState,
        ]
    } else {
        &[
            BeforeChanges,
            DisableEncryption,
            Files,
            Images,
            EarlyKubelets,
            Wins,
            EtcdMembersLeave,
            EtcdMembersJoin,
            StartEtcdAndControlPlane,
            EtcdPlane,
            ControlPlaneAndAuthz,
            RewriteSecrets,
            SaveState,
            NodeRegistration,
            WorkerPlane,
            Nodes,
            RemovedHosts,
            LogLinks,
            Addons,
            FinishState,
        ]
    };
    let mut changes = Changeset::default();
    for step in steps {
        changes.stage(*step, Pace::Parallel);
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(existing: bool) -> Vec<UpStep> {
        up_steps(existing)
            .stages
            .into_iter()
            .map(|s| s.phase)
            .collect()
    }

    fn before(steps: &[UpStep], a: UpStep, b: UpStep) -> bool {
        let at = |s| steps.iter().position(|x| *x == s);
        matches!((at(a), at(b)), (Some(a), Some(b)) if a < b)
    }

    #[test]
    fn an_existing_cluster_records_its_state_after_its_workers() {
        let steps = order(true);
        assert!(before(
            &steps,
            UpStep::UpgradeWorkerPlane,
            UpStep::SaveState
        ));
        assert!(before(&steps, UpStep::UpgradeControlPlane, UpStep::Authz));
        for new_only in [
            UpStep::EarlyKubelets,
            UpStep::StartEtcdAndControlPlane,
            UpStep::ControlPlaneAndAuthz,
            UpStep::NodeRegistration,
            UpStep::WorkerPlane,
        ] {
            assert!(!steps.contains(&new_only), "{new_only:?}");
        }
    }

    #[test]
    fn a_new_cluster_records_its_state_once_the_api_answers_and_starts_kubelets_early() {
        let steps = order(false);
        assert!(before(
            &steps,
            UpStep::ControlPlaneAndAuthz,
            UpStep::SaveState
        ));
        assert!(before(
            &steps,
            UpStep::ControlPlaneAndAuthz,
            UpStep::RewriteSecrets
        ));
        assert!(!steps.contains(&UpStep::Authz));
        assert!(before(&steps, UpStep::SaveState, UpStep::WorkerPlane));
        assert!(before(&steps, UpStep::Images, UpStep::EarlyKubelets));
        assert!(before(&steps, UpStep::EarlyKubelets, UpStep::EtcdPlane));
        assert!(before(
            &steps,
            UpStep::NodeRegistration,
            UpStep::WorkerPlane
        ));
        assert!(!steps.contains(&UpStep::UpgradeControlPlane));
        assert!(!steps.contains(&UpStep::UpgradeWorkerPlane));
    }

    #[test]
    fn both_begin_with_the_snapshot_and_end_keeping_the_replaced_state() {
        for existing in [true, false] {
            let steps = order(existing);
            assert_eq!(steps.first(), Some(&UpStep::BeforeChanges));
            assert_eq!(steps.last(), Some(&UpStep::FinishState));
            assert!(before(&steps, UpStep::Files, UpStep::EtcdPlane));
            assert!(before(&steps, UpStep::Addons, UpStep::FinishState));
        }
    }
}
