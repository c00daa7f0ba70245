//! The one place every action is applied, for every command (`up`, `remove`, `cert rotate`,
//! `encrypt rotate-key`, `etcd snapshot-save`/`snapshot-restore`).
//!
//! An [`Executor`] holds what one command's run shares: its connected hosts, the helper image,
//! registry credentials, the Kubernetes API, the state the state Secret gets. [`Executor::on`]
//! gives the [`HostExecutor`] of one host (or of the pseudo-hosts `cluster` and `local`), whose
//! [`HostExecutor::apply`] takes the actions the diff decided, in the order a phase hands them
//! over, applies each from the fields it carries (container specs, file contents, member URLs)
//! through one exhaustive `match`, and emits one `applied` event per action
//! ([`Reporter::applied`]), so a run can be compared with its dry run action for action.
//!
//! The phases keep the ordering, the rolling budgets, the concurrency and the health gates:
//! they choose which actions run when, and nothing else.

use crate::diff::Action;
use crate::hosts::{self, Host, HostError};
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::changeset::{self, CLUSTER, LOCAL};
use crate::phases::files::{self, DesiredFile};
use crate::phases::{etcd_membership, reconcile};
use crate::plan;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many of a failed replacement's last log lines its error shows.
const UNHEALTHY_LOG_LINES: usize = 10;

/// How often a learner's promotion is tried (once a second) before the join counts as failed.
const PROMOTE_ATTEMPTS: u32 = 45;

/// An action that could not be applied, naming the host and the action.
#[derive(Debug, thiserror::Error)]
#[error("host {host}: {action}: {source}")]
pub struct ExecError {
    pub host: String,
    pub action: String,
    #[source]
    pub source: Box<ExecFailure>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecFailure {
    /// Boxed: a host's error is large, and this one travels through every step.
    #[error(transparent)]
    Host(Box<HostError>),
    /// An etcd member operation (etcdctl through a member's etcd container).
    #[error(transparent)]
    Etcd(#[from] etcd_membership::EtcdctlError),
    /// A call to the Kubernetes API.
    #[error("{0}")]
    Api(String),
    /// A one-shot helper container on the host failed (its output is in the message).
    #[error("{0}")]
    Helper(String),
    /// calico's directories and entry could not be written (the helper's output is in it).
    #[error("{0}")]
    CalicoFix(Box<crate::checks::probe::CalicoFixError>),
    /// A restarted component failed its health check. Its text, not its source: the check's
    /// own causes are in the text already.
    #[error("{0}")]
    Health(Box<crate::phases::health::HealthError>),
    /// A file on the machine rkers runs on.
    #[error("{path}: {source}")]
    Local {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `rkers up`, run as the last step of a snapshot restore.
    #[error("{0}")]
    Up(UpFailure),
    /// A replacement container could not be created or started; `restored` is why the
    /// previous container could not be put back (`None`: it runs again under its name).
    #[error("{cause}; {}", restore_outcome(.restored.as_deref()))]
    Replace {
        cause: Box<ExecFailure>,
        restored: Option<Box<ExecFailure>>,
    },
    /// A replacement container started but failed its health check (`cause`, which names the
    /// check); `logs` are its last lines. `restored` is why the previous container could not
    /// be put back (`None`: the host runs what it ran before).
    #[error("{}", unhealthy(.container, .cause, .logs, .restored.as_deref()))]
    Unhealthy {
        container: String,
        cause: Box<crate::phases::health::HealthError>,
        logs: String,
        restored: Option<Box<ExecFailure>>,
    },
    /// The action needs something its command did not give the executor (a connected host,
    /// the API, an etcd member to go through, the state to save): a bug in the command or a
    /// host that could not be reached, never the input.
    #[error("{0}")]
    Missing(String),
}

fn restore_outcome(failed: Option<&ExecFailure>) -> String {
    match failed {
        None => "the previous container was put back under its name".to_string(),
        Some(e) => format!("the previous container could not be put back either: {e}"),
    }
}

fn unhealthy(
    container: &str,
    cause: &crate::phases::health::HealthError,
    logs: &str,
    restored: Option<&ExecFailure>,
) -> String {
    let mut out = format!("the new {container} failed its health check: {cause}");
    if !logs.trim().is_empty() {
        out.push_str(&format!("\n  last log lines of the new {container}:"));
        for line in logs.lines() {
            out.push_str(&format!("\n    {line}"));
        }
    }
    let old = format!("{}{container}", plan::OLD_PREFIX);
    out.push_str(&match restored {
        None => format!(
            "\n  the host was restored: the previous {container} runs again under its name; \
             fix cluster.yml (or what the log names) and run `rkers up` again"
        ),
        Some(e) => format!(
            "\n  the host was NOT restored: the previous {container} could not be put back: {e}\n  \
             remedy: on the host, `docker rm -f {container}; docker rename {old} {container}; \
             docker start {container}` if {old} still exists, else fix cluster.yml and run \
             `rkers up` again"
        ),
    });
    out
}

impl From<HostError> for ExecFailure {
    fn from(e: HostError) -> Self {
        ExecFailure::Host(Box::new(e))
    }
}

/// What one command's run shares while its actions are applied.
pub struct Executor<'a> {
    reporter: Reporter,
    hosts: BTreeMap<String, Arc<Host>>,
    helper_image: String,
    registries: Vec<hosts::target::RegistryCredential>,
    /// Where the API's kubeconfig is, when the API is reached only once it was written.
    kubeconfig: Option<PathBuf>,
    /// Where the files on the machine rkers runs on are read and written (the kubeconfig,
    /// the `local` pseudo-host's actions): the cluster's storage.
    local: crate::state::Storage,
    api: tokio::sync::OnceCell<KubeApi>,
    /// The authorization mode is RBAC: the RBAC objects beyond the job deployer's are applied.
    rbac: bool,
    /// The state JSON the state Secret gets (it holds keys: no action carries it).
    state_json: Mutex<Option<String>>,
    one_shot_timeout: Duration,
    /// What each one-shot container printed, by `host/container`.
    one_shot_logs: Mutex<BTreeMap<String, String>>,
    /// `rkers up` for a snapshot restore's last step.
    up: Option<RunUp<'a>>,
    /// The certificates a recreated container's health check presents (the cluster CA, a
    /// client certificate); without them a check is made without TLS material.
    certificates: crate::pki::Bundle,
    /// Per host, the containers replaced but kept aside as `old-<name>` until the host's node
    /// is Ready, in the order they were replaced, each with whether it ran before.
    kept: Mutex<BTreeMap<String, Vec<(String, bool)>>>,
}

/// Runs `rkers up` (a snapshot restore's last step). Given by the command as a closure: `up`
/// applies its own actions through an executor, and a future cannot contain itself.
pub type RunUp<'a> =
    Box<dyn Fn() -> futures::future::BoxFuture<'a, Result<(), UpFailure>> + Send + Sync + 'a>;

/// What [`RunUp`] fails with: `up`'s own error, whose type the executor cannot name (`up`
/// imports the executor), kept whole for the command that gave the closure.
pub type UpFailure = Box<dyn std::error::Error + Send + Sync>;

impl<'a> Executor<'a> {
    pub fn new(
        reporter: &Reporter,
        helper_image: &str,
        registries: Vec<hosts::target::RegistryCredential>,
    ) -> Self {
        Executor {
            reporter: reporter.clone(),
            hosts: BTreeMap::new(),
            helper_image: helper_image.to_string(),
            registries,
            kubeconfig: None,
            local: crate::state::Storage::Disk,
            api: tokio::sync::OnceCell::new(),
            rbac: true,
            state_json: Mutex::new(None),
            one_shot_timeout: Duration::from_secs(300),
            one_shot_logs: Mutex::new(BTreeMap::new()),
            up: None,
            certificates: crate::pki::Bundle::new(),
            kept: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records `container` on `host` as kept aside until the host's node is Ready.
    fn keep(&self, host: &str, container: &str, was_running: bool) {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(host.to_string())
            .or_default()
            .push((container.to_string(), was_running));
    }

    /// The containers kept aside on `host`, no longer recorded.
    fn take_kept(&self, host: &str) -> Vec<(String, bool)> {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(host)
            .unwrap_or_default()
    }

    /// The certificates health checks present.
    pub fn with_certificates(mut self, bundle: crate::pki::Bundle) -> Self {
        self.certificates = bundle;
        self
    }

    /// The TLS material of a planned health check: the cluster CA, and the client
    /// certificate the check names.
    pub fn health_tls(
        &self,
        check: &plan::HealthCheck,
    ) -> Option<crate::phases::health::TlsMaterial> {
        let bundle = &self.certificates;
        check
            .client_certificate
            .as_ref()
            .map(|c| crate::phases::health::TlsMaterial {
                ca_pem: bundle
                    .get(crate::pki::names::CA_CERT_NAME)
                    .map(|ca| ca.certificate_pem.clone()),
                client_cert_pem: bundle.get(c).map(|c| c.certificate_pem.clone()),
                client_key_pem: bundle.get(c).map(|c| c.key_pem.clone()),
            })
    }

    /// The hosts actions are applied on, by their names.
    pub fn with_hosts<'h>(mut self, hosts: impl IntoIterator<Item = &'h Arc<Host>>) -> Self {
        self.hosts
            .extend(hosts.into_iter().map(|h| (h.name().to_string(), h.clone())));
        self
    }

    /// The API, reached through the cluster's admin kubeconfig when an action first needs
    /// it; local files kept where the cluster keeps them.
    pub fn with_kubeconfig(mut self, files: &crate::state::ClusterFiles) -> Self {
        self.kubeconfig = Some(files.kubeconfig_path.clone());
        self.with_local_storage(files.storage.clone())
    }

    /// The `local` pseudo-host's files read and written through `storage`.
    pub fn with_local_storage(mut self, storage: crate::state::Storage) -> Self {
        self.local = storage;
        self
    }

    pub fn with_api(self, api: KubeApi) -> Self {
        Executor {
            api: tokio::sync::OnceCell::new_with(Some(api)),
            ..self
        }
    }

    pub fn with_rbac(mut self, rbac: bool) -> Self {
        self.rbac = rbac;
        self
    }

    pub fn with_one_shot_timeout(mut self, timeout: Duration) -> Self {
        self.one_shot_timeout = timeout;
        self
    }

    /// What `RunUp` runs.
    pub fn with_up(mut self, up: RunUp<'a>) -> Self {
        self.up = Some(up);
        self
    }

    /// The API client the cluster actions use from now on (the first one given stays).
    pub fn set_api(&self, api: KubeApi) {
        let _ = self.api.set(api);
    }

    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// The state the next `SaveStateSecret` stores.
    pub fn set_state_json(&self, json: String) {
        *self.state_json.lock().unwrap_or_else(|p| p.into_inner()) = Some(json);
    }

    /// What the one-shot `container` printed on `host`, once it ran in this executor.
    pub fn one_shot_log(&self, host: &str, container: &str) -> Option<String> {
        self.one_shot_logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&format!("{host}/{container}"))
            .cloned()
    }

    /// The Kubernetes API: the one given, or reached through the kubeconfig on first use.
    pub async fn api(&self) -> Result<&KubeApi, ExecFailure> {
        self.api
            .get_or_try_init(|| async {
                let path = self.kubeconfig.as_ref().ok_or_else(|| {
                    ExecFailure::Missing("the Kubernetes API is not reachable in this step".into())
                })?;
                let text = (self.local)
                    .read_to_string(path, rkers_core::bounded::KUBECONFIG)
                    .map_err(|source| ExecFailure::Local {
                        path: path.display().to_string(),
                        source,
                    })?;
                KubeApi::from_kubeconfig(&text)
                    .await
                    .map_err(|e| ExecFailure::Api(e.to_string()))
            })
            .await
    }

    /// The executor of the host (or pseudo-host) `name`.
    pub fn on<'e>(&'e self, name: &'e str) -> HostExecutor<'e, 'a> {
        HostExecutor {
            exec: self,
            name,
            host: self.hosts.get(name).map(Arc::as_ref),
            files_root: "/etc/kubernetes".to_string(),
            etcd_via: None,
        }
    }

    /// Applies one stage: each host's actions in order, at the stage's pace; a host stops at
    /// its first failed action. Returns the hosts that failed, with why.
    pub async fn apply_stage<S: std::fmt::Display>(
        &self,
        stage: &rkers_core::changeset::Stage<S>,
        runner: &crate::phases::Runner,
    ) -> Vec<(String, String)> {
        changeset::apply_stage(
            stage,
            runner,
            |host: String, actions: Vec<Action>| async move {
                let refs: Vec<&Action> = actions.iter().collect();
                self.on(&host).apply(&refs).await
            },
        )
        .await
    }
}

mod containers;
mod file_batch;
mod host;

use file_batch::FileBatch;

pub use containers::docker_spec;

/// The executor of one host's actions (or of a pseudo-host's: `cluster`, `local`).
pub struct HostExecutor<'e, 'a> {
    exec: &'e Executor<'a>,
    /// The host as events and errors name it (its address).
    name: &'e str,
    host: Option<&'e Host>,
    /// The directory the host's `up` file actions' paths are under: `/etc/kubernetes`, or
    /// the Windows prefix.
    files_root: String,
    /// An etcd member that stays, for membership changes.
    etcd_via: Option<&'e Host>,
}

impl crate::error::HostContext for ExecError {
    fn hosts(&self) -> Vec<&str> {
        vec![&self.host]
    }
}
