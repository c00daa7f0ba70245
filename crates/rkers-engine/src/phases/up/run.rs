//! What the apply steps share: the run (plan, connections, actions), what was observed of
//! each host, and the container groups each plane brings up.

use super::plan::Planned;
use crate::diff::Action;
use crate::hosts::{self, Host, HostPool};
use crate::output::Reporter;
use crate::phases::executor::{Executor, HostExecutor};
use crate::phases::files;
use crate::phases::reconcile::{self, OldHost};
use crate::pki::Bundle;
use crate::plan::{self, ClusterPlan, HostPlan};
use crate::state::ClusterFiles;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Containers RKE1 may have left on a host that the plan does not ask for there.
pub(super) const KNOWN_CONTAINERS: &[&str] = &[
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

pub(super) const ETCD_PLANE: &[&str] = &[plan::ETCD, plan::ETCD_ROLLING_SNAPSHOTS];

pub(super) const CONTROL_PLANE: &[&str] = &[
    plan::SERVICE_SIDEKICK,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
];

/// What a new cluster starts on each Linux host before its etcd and control plane (the early
/// worker plane): kubelet retries the API server by itself.
pub(super) const EARLY_WORKER_PLANE: &[&str] =
    &[plan::NGINX_PROXY, plan::SERVICE_SIDEKICK, plan::KUBELET];

pub(super) const WORKER_PLANE: &[&str] = &[
    plan::NGINX_PROXY,
    plan::SERVICE_SIDEKICK,
    plan::KUBELET,
    plan::KUBE_PROXY,
];

/// What one host runs and holds, as far as `up` compares it.
#[derive(Default)]
pub(super) struct Observed {
    /// The platform the plan was built for on the host: what the decisions ask instead of the OS.
    pub(super) platform: crate::plan::Platform,
    pub(super) containers: BTreeMap<String, hosts::ObservedContainer>,
    pub(super) files: BTreeMap<String, Vec<u8>>,
    /// Mode and owner of each file in `files`; empty on Windows workers, whose files carry ACLs.
    pub(super) file_meta: BTreeMap<String, files::FileMeta>,
    /// Image → its default environment when the host has it.
    pub(super) images: BTreeMap<String, Option<Vec<String>>>,
    /// Windows workers: directories and wins as found (`files` holds their files).
    pub(super) windows: Option<crate::phases::windows::WindowsObserved>,
    /// `old-…` containers an interrupted replacement left.
    pub(super) stale_old: Vec<String>,
    /// The host's SSH user is root and its Docker runs without SELinux: a new etcd's data
    /// directory is made private by the host's shell, not a helper container. Asked only of
    /// hosts that get a new etcd.
    pub(super) root_shell: bool,
}

/// A host that left the cluster, as `up` found it.
pub(super) struct RemovedHost {
    pub(super) gone: OldHost,
    /// The connection and how to clean the host; `None` when it cannot be reached: only its
    /// node is deleted.
    pub(super) reachable: Option<(Arc<Host>, reconcile::HostCleanup)>,
    /// The containers it still runs.
    pub(super) present: Vec<String>,
}

/// Everything the apply phases need, shared by the host tasks.
pub(super) struct Run {
    pub(super) pool: HostPool,
    pub(super) plan: ClusterPlan,
    pub(super) bundle: Bundle,
    pub(super) actions: BTreeMap<String, Vec<Action>>,
    pub(super) helper_image: String,
    pub(super) recon: reconcile::Changes,
    /// Hosts that left the cluster.
    pub(super) removed: Vec<RemovedHost>,
    /// New etcd members started by the join step; the etcd plane leaves their etcd alone.
    pub(super) joined: std::sync::Mutex<BTreeSet<String>>,
    /// `address/container/step` of every container started (`started`) or started and found
    /// healthy (`healthy`) in this run: a control plane host's worker components are upgraded
    /// with its control plane (§17.2), and the worker plane must not apply them a second time.
    /// The early worker plane and the control plane both bring up service-sidekick on a new
    /// cluster's control plane hosts: the later caller waits for the first one's result.
    pub(super) applied: std::sync::Mutex<BTreeMap<String, Arc<tokio::sync::OnceCell<()>>>>,
    /// When this run started each host's recreated or restarted kube-apiserver: the leader
    /// elections it served may still be lost until [`plan::lease_loss_window`] after that.
    pub(super) api_server_restarted: std::sync::Mutex<BTreeMap<String, tokio::time::Instant>>,
    /// Where the executor reports each action it applied.
    pub(super) reporter: Reporter,
    /// The actions of the pseudo-host `cluster`, in the order they are applied.
    pub(super) cluster_actions: Vec<Action>,
    /// Every addon of the run, in RKE1's order.
    pub(super) addons: Vec<crate::addons::AddonPlan>,
    /// Applies every action of the run: the planned hosts', the hosts' that left, `cluster`'s.
    pub(super) exec: Executor<'static>,
    /// How long an upgraded host's node may take to be Ready again (`--node-ready-timeout`).
    pub(super) node_ready_timeout: std::time::Duration,
}

impl Run {
    pub(super) fn new(planned: Planned, local: &ClusterFiles, reporter: &Reporter) -> Self {
        let exec = Executor::new(reporter, &planned.helper_image, planned.registries.clone())
            .with_hosts(planned.pool.hosts())
            .with_hosts(
                planned
                    .removed
                    .iter()
                    .filter_map(|r| r.reachable.as_ref().map(|(h, _)| h)),
            )
            .with_kubeconfig(local)
            .with_rbac(planned.rbac)
            .with_certificates(planned.bundle.clone());
        Run {
            exec,
            pool: planned.pool,
            plan: planned.plan,
            bundle: planned.bundle,
            actions: planned.actions,
            helper_image: planned.helper_image,
            recon: planned.recon,
            removed: planned.removed,
            joined: Default::default(),
            applied: Default::default(),
            api_server_restarted: Default::default(),
            reporter: reporter.clone(),
            cluster_actions: planned.cluster.actions,
            addons: planned.cluster.addons,
            node_ready_timeout: super::rolling::NODE_READY_AFTER_UPGRADE,
        }
    }

    /// The planned `cluster` actions `pick` selects, in order.
    pub(super) fn cluster_actions_where(&self, pick: fn(&Action) -> bool) -> Vec<&Action> {
        self.cluster_actions.iter().filter(|a| pick(a)).collect()
    }

    pub(super) fn host_plan(&self, address: &str) -> &HostPlan {
        self.plan
            .hosts
            .iter()
            .find(|h| h.address == address)
            .expect("planned host")
    }

    /// The executor of one planned host's actions.
    pub(super) fn executor(&self, address: &str) -> HostExecutor<'_, 'static> {
        let h = self.host_plan(address);
        let root = self.plan.platform(address).files_root(h);
        self.exec.on(&h.address).files_under(root)
    }

    /// The executor of the `cluster` actions.
    pub(super) fn cluster_executor(&self) -> HostExecutor<'_, 'static> {
        self.exec.on(crate::phases::changeset::CLUSTER)
    }

    pub(super) fn host(&self, address: &str) -> &Arc<Host> {
        self.pool.get(address).expect("connected host")
    }
}
