//! What the apply steps share: the run (plan, connections, actions), what was observed of
//! each host, and the container groups each plane brings up.

use super::files_root;
use super::plan::Planned;
use crate::diff::Action;
use crate::hosts::{self, Host, HostPool};
use crate::output::Reporter;
use crate::phases::executor::HostExecutor;
use crate::phases::files::{self, DesiredFile};
use crate::phases::reconcile::{self, OldHost};
use crate::pki::Bundle;
use crate::plan::{self, ClusterPlan, HostPlan};
use crate::state::StateFile;
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
    pub(super) containers: BTreeMap<String, hosts::ObservedContainer>,
    pub(super) files: BTreeMap<String, Vec<u8>>,
    /// Mode and owner of each file in `files`; empty on Windows workers, whose files carry ACLs.
    pub(super) file_meta: BTreeMap<String, files::FileMeta>,
    /// Image → its default environment when the host has it.
    pub(super) images: BTreeMap<String, Option<Vec<String>>>,
    /// Windows workers: directories and wins as found (`files` holds their files).
    pub(super) windows: Option<crate::phases::windows::WindowsObserved>,
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
    pub(super) files: BTreeMap<String, Vec<DesiredFile>>,
    pub(super) actions: BTreeMap<String, Vec<Action>>,
    pub(super) registries: Vec<hosts::target::RegistryCredential>,
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
    pub(super) service_options: plan::ServiceOptions,
    pub(super) windows_service_options: Option<plan::ServiceOptions>,
    pub(super) facts: BTreeMap<String, plan::HostFacts>,
    pub(super) encryption_config: Option<String>,
    pub(super) default_tools_tag: Option<String>,
    /// Where the executor reports each action it applied.
    pub(super) reporter: Reporter,
    /// The actions of the pseudo-host `cluster`, in the order they are applied.
    pub(super) cluster_actions: Vec<Action>,
    /// Every addon of the run, in RKE1's order.
    pub(super) addons: Vec<crate::addons::AddonPlan>,
    pub(super) rbac: bool,
}

impl Run {
    pub(super) fn new(planned: Planned, state: &StateFile, reporter: &Reporter) -> Self {
        Run {
            pool: planned.pool,
            plan: planned.plan,
            bundle: planned.bundle,
            files: planned.files,
            actions: planned.actions,
            registries: planned.registries,
            helper_image: planned.helper_image,
            recon: planned.recon,
            removed: planned.removed,
            joined: Default::default(),
            applied: Default::default(),
            service_options: planned.service_options,
            windows_service_options: planned.windows_service_options,
            facts: planned.facts,
            encryption_config: (!state.desired_state.encryption_config.is_empty())
                .then(|| state.desired_state.encryption_config.clone()),
            default_tools_tag: planned.default_tools_tag,
            reporter: reporter.clone(),
            cluster_actions: planned.cluster.actions,
            addons: planned.cluster.addons,
            rbac: planned.rbac,
        }
    }

    /// The executor of the `cluster` actions; `state_json` is what the state Secret gets.
    pub(super) fn cluster_executor<'a>(
        &'a self,
        api: &'a crate::kubeapi::KubeApi,
        state_json: Option<&'a str>,
    ) -> crate::phases::cluster_executor::ClusterExecutor<'a> {
        crate::phases::cluster_executor::ClusterExecutor {
            api,
            reporter: &self.reporter,
            rbac: self.rbac,
            state_json,
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
    pub(super) fn executor(&self, address: &str) -> HostExecutor<'_> {
        self.executor_for(address, &self.host_plan(address).containers)
    }

    /// The executor of one planned host's actions, with the containers of a plan other than
    /// the run's (an etcd member joining with a partial member list).
    pub(super) fn executor_for<'a>(
        &'a self,
        address: &str,
        containers: &'a indexmap::IndexMap<String, plan::ContainerSpec>,
    ) -> HostExecutor<'a> {
        let h = self.host_plan(address);
        let windows = self.plan.windows.contains_key(address);
        HostExecutor {
            host: self.host(address),
            reporter: &self.reporter,
            helper_image: &self.helper_image,
            registries: &self.registries,
            files_root: files_root(h, windows),
            files: self
                .files
                .get(address)
                .map(Vec::as_slice)
                .unwrap_or_default(),
            windows,
            containers,
            etcd_via: None,
            health_tls: None,
        }
    }

    pub(super) fn host(&self, address: &str) -> &Arc<Host> {
        self.pool.get(address).expect("connected host")
    }
}
