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
use crate::phases::reconcile;
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
    #[error("{0}")]
    Etcd(String),
    /// A call to the Kubernetes API.
    #[error("{0}")]
    Api(String),
    /// A one-shot helper container on the host failed (its output is in the message).
    #[error("{0}")]
    Helper(String),
    /// A file on the machine rkers runs on.
    #[error("{path}: {source}")]
    Local {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `rkers up`, run as the last step of a snapshot restore.
    #[error("{0}")]
    Up(String),
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
        cause: String,
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

fn unhealthy(container: &str, cause: &str, logs: &str, restored: Option<&ExecFailure>) -> String {
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
}

/// Runs `rkers up` (a snapshot restore's last step). Given by the command as a closure: `up`
/// applies its own actions through an executor, and a future cannot contain itself.
pub type RunUp<'a> =
    Box<dyn Fn() -> futures::future::BoxFuture<'a, Result<(), String>> + Send + Sync + 'a>;

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
            api: tokio::sync::OnceCell::new(),
            rbac: true,
            state_json: Mutex::new(None),
            one_shot_timeout: Duration::from_secs(300),
            one_shot_logs: Mutex::new(BTreeMap::new()),
            up: None,
            certificates: crate::pki::Bundle::new(),
        }
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

    /// The API, reached through this kubeconfig when an action first needs it.
    pub fn with_kubeconfig(mut self, path: PathBuf) -> Self {
        self.kubeconfig = Some(path);
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
                let text = std::fs::read_to_string(path).map_err(|source| ExecFailure::Local {
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
    pub async fn apply_stage(
        &self,
        stage: &changeset::Stage,
        runner: &crate::phases::Runner,
    ) -> Vec<(String, String)> {
        changeset::apply_stage(
            stage,
            runner,
            |host: String, actions: Vec<Action>| async move {
                let refs: Vec<&Action> = actions.iter().collect();
                self.on(&host).apply(&refs).await.map_err(|e| e.to_string())
            },
        )
        .await
    }
}

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

impl<'e, 'a> HostExecutor<'e, 'a> {
    /// The same host, its etcd membership changes made through `via`.
    pub fn through(self, via: &'e Host) -> Self {
        HostExecutor {
            etcd_via: Some(via),
            ..self
        }
    }

    /// The same host, its file actions' paths under `root`.
    pub fn files_under(self, root: String) -> Self {
        HostExecutor {
            files_root: root,
            ..self
        }
    }

    /// The same actions applied as `host`'s, when the host is not among the executor's
    /// (a host that left the cluster).
    pub fn as_host(self, host: &'e Host) -> Self {
        HostExecutor {
            host: Some(host),
            ..self
        }
    }

    fn host(&self) -> Result<&'e Host, ExecFailure> {
        self.host.ok_or_else(|| {
            ExecFailure::Missing(match self.name {
                CLUSTER | LOCAL => format!("the pseudo-host {} runs no containers", self.name),
                name => format!("host {name} is not connected"),
            })
        })
    }

    /// `path` relative to the host's files root.
    fn relative(&self, path: &str) -> Result<String, ExecFailure> {
        path.strip_prefix(self.files_root.as_str())
            .map(|r| r.trim_start_matches('/').to_string())
            .ok_or_else(|| ExecFailure::Missing(format!("{path} is not under {}", self.files_root)))
    }

    fn windows(&self) -> bool {
        self.host.is_some_and(|h| h.facts().is_windows())
    }

    fn via(&self) -> Result<&Host, ExecFailure> {
        self.etcd_via
            .ok_or_else(|| ExecFailure::Missing("no remaining etcd member is reachable".into()))
    }

    fn fail(&self, action: &Action, source: impl Into<ExecFailure>) -> ExecError {
        ExecError {
            host: self.name.to_string(),
            action: action.to_string(),
            source: Box::new(source.into()),
        }
    }

    /// Applies `actions` in order; the file actions among them go to the host in one write
    /// (one helper container, or one host-agent call on Windows), applied where the first of
    /// them stands. Stops at the first failure, which is reported as that action's event.
    pub async fn apply<'x>(&self, actions: &[&'x Action]) -> Result<(), ExecError> {
        let mut files: FileBatch<'x> = FileBatch::default();
        let mut calico: Vec<&'x Action> = Vec::new();
        for &action in actions {
            if files.take(action) {
                continue;
            }
            if matches!(
                action,
                Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. }
            ) {
                // One helper writes every directory and the entry.
                calico.push(action);
                continue;
            }
            // Files written so far go first: what follows may read them.
            self.flush(&mut files).await?;
            self.flush_calico(&mut calico).await?;
            let result = self.run(action).await;
            self.report(action, result)?;
        }
        self.flush(&mut files).await?;
        self.flush_calico(&mut calico).await
    }

    /// Applies one action without reporting it, for a phase that runs several at once and
    /// reports them in their planned order ([`HostExecutor::report`]). The one `match` over
    /// every action there is.
    pub async fn run(&self, action: &Action) -> Result<(), ExecFailure> {
        let exec = self.exec;
        let api_failed = |e: &dyn std::fmt::Display| ExecFailure::Api(e.to_string());
        match action {
            // `apply` gathers these and writes them together; one alone is written the same way.
            Action::UploadFile { .. }
            | Action::RemoveFile { .. }
            | Action::SetFileMode { .. }
            | Action::CreateDirectories { .. } => {
                let mut batch = FileBatch::default();
                batch.take(action);
                self.write_batch(&batch).await
            }
            Action::EnsureCniDirectory { image, .. } | Action::WriteTmpfilesEntry { image, .. } => {
                crate::checks::probe::apply_calico_fix(
                    self.host()?.docker(),
                    image,
                    &exec.registries,
                )
                .await
                .map_err(ExecFailure::Helper)
            }
            Action::PullImage { image } => self
                .host()?
                .docker()
                .ensure_image(image, &exec.registries, &mut |_| {})
                .await
                .map(drop)
                .map_err(ExecFailure::from),
            Action::CreateContainer {
                name, start, spec, ..
            } => self.create(name, spec, *start).await,
            Action::RecreateContainer {
                name, start, spec, ..
            } => self.recreate(name, spec, *start).await,
            Action::RestoreContainer { name, start } => self.restore(name, *start).await,
            Action::StartContainer { name } => self
                .host()?
                .docker()
                .start_container(name)
                .await
                .map_err(ExecFailure::from),
            Action::RestartContainer { name } => {
                let docker = self.host()?.docker();
                docker.stop_container(name).await?;
                docker.start_container(name).await?;
                Ok(())
            }
            Action::RestartAndCheck { name, check, .. } => {
                let host = self.host()?;
                host.docker().stop_container(name).await?;
                host.docker().start_container(name).await?;
                match check {
                    Some(check) => crate::phases::health::wait_component(
                        host,
                        name,
                        &check.url,
                        check.tls.as_ref(),
                    )
                    .await
                    .map_err(ExecFailure::Helper),
                    None => Ok(()),
                }
            }
            Action::RemoveContainer { name, .. } => self
                .host()?
                .docker()
                .remove_container(name)
                .await
                .map_err(ExecFailure::from),
            Action::CleanDirectories { paths } => {
                reconcile::clean_directories(self.host()?, &exec.helper_image, paths)
                    .await
                    .map_err(ExecFailure::Helper)
            }
            Action::RemoveEtcdMember { member } => reconcile::remove_member(self.via()?, member)
                .await
                .map_err(ExecFailure::Etcd),
            Action::AddEtcdMember { member, peer_url } => {
                reconcile::add_member(self.via()?, member, peer_url, false)
                    .await
                    .map_err(ExecFailure::Etcd)
            }
            Action::AddEtcdLearner {
                member, peer_url, ..
            } => reconcile::add_member(self.via()?, member, peer_url, true)
                .await
                .map_err(ExecFailure::Etcd),
            // Once the learner's etcd runs and has caught up: retried for that long.
            Action::PromoteEtcdMember { peer_url, .. } => {
                reconcile::promote_member(self.via()?, peer_url, PROMOTE_ATTEMPTS)
                    .await
                    .map_err(ExecFailure::Etcd)
            }
            Action::FixEtcdPermissions { path, empty_first } => {
                self.fix_etcd_permissions(path, *empty_first).await
            }
            Action::DeleteNode { node } => exec
                .api()
                .await?
                .delete_node(node)
                .await
                .map_err(|e| api_failed(&e)),
            Action::InstallWins { image, .. } => {
                crate::phases::windows::install_wins(self.host()?, image)
                    .await
                    .map(drop)
                    .map_err(|e| ExecFailure::Helper(e.to_string()))
            }
            Action::StartWins {
                restart,
                containers,
                replaced,
                sweep_image,
                ..
            } => {
                let step = crate::phases::windows::WinsStep {
                    install_from: None,
                    start: Some(*restart),
                    containers: containers.clone(),
                    replaced: replaced.clone(),
                    sweep_image: sweep_image.clone(),
                    settle: crate::phases::windows::WINS_SETTLE,
                };
                let done = crate::phases::windows::start_wins_safely(self.host()?, *restart, &step)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))?;
                tracing::info!(
                    host = self.name,
                    service = ?done.service_changes,
                    restarted = ?done.restarted_containers,
                    swept = ?done.sweep.stopped,
                    "wins is ready"
                );
                Ok(())
            }
            Action::SweepWindowsOrphans { image } => {
                let host = self.host()?;
                let swept = crate::phases::windows::sweep_orphans(host, image)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))?;
                if !swept.stopped.is_empty() {
                    tracing::warn!(host = host.name(), stopped = ?swept.stopped, "stopped wins-managed processes that outlived their wins server");
                }
                Ok(())
            }
            Action::CleanWindowsHost {
                unregister_wins,
                image,
                ..
            } => {
                // The plan refuses every Windows prefix but c:/ (the Linux prefix rule would
                // give `/`).
                let steps = plan::remove_plan_windows(plan::WINDOWS_PREFIX_PATH, *unregister_wins);
                crate::phases::windows::remove_windows_host(self.host()?, &steps, image)
                    .await
                    .map_err(|e| ExecFailure::Helper(e.to_string()))
            }
            Action::WriteFileSet { dir, files } => {
                let files = changeset::desired_files(files);
                self.write_files(dir, &files, &[], &[], &[]).await
            }
            Action::DeletePods { labels } => {
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                let deleted = crate::kubeapi::delete_pods_by_labels(exec.api().await?, &labels)
                    .await
                    .map_err(|e| api_failed(&e))?;
                exec.reporter.info(format!(
                    "Deleted {deleted} system pods so they restart with the new CA"
                ));
                Ok(())
            }
            Action::SaveStateSecret { .. } => {
                let json = exec
                    .state_json
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .ok_or_else(|| ExecFailure::Missing("the state to save is not ready".into()))?;
                exec.api()
                    .await?
                    .save_state_secret(&json)
                    .await
                    .map_err(|e| api_failed(&e))
            }
            // Turning encryption off rewrites them once the controlplane hosts applied their
            // part (an identity-first provider file, kube-apiserver restarted).
            Action::RewriteSecrets { .. } | Action::DisableEncryption { .. } => {
                crate::phases::encryption::rewrite_secrets(exec.api().await?, &exec.reporter)
                    .await
                    .map(drop)
                    .map_err(|e| api_failed(&e))
            }
            Action::WriteKubeconfig { path, contents } => {
                crate::state::write_atomic(std::path::Path::new(path), contents.bytes(), 0o600)
                    .map_err(|source| ExecFailure::Local {
                        path: path.clone(),
                        source,
                    })?;
                exec.reporter.info(format!(
                    "Successfully Deployed local admin kubeconfig at [{path}]"
                ));
                Ok(())
            }
            Action::DeleteLocalFile { path } => match std::fs::remove_file(path) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    Err(ExecFailure::Local {
                        path: path.clone(),
                        source,
                    })
                }
                _ => Ok(()),
            },
            Action::CleanLogLinks { dir, image } => {
                crate::phases::log_links::clean_log_links(self.host()?, image, dir)
                    .await
                    .map_err(ExecFailure::Helper)
            }
            Action::RunOneShot {
                container, spec, ..
            } => {
                let logs = self
                    .host()?
                    .docker()
                    .run_to_success(container, spec, exec.one_shot_timeout)
                    .await?;
                exec.one_shot_logs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(format!("{}/{container}", self.name), logs);
                Ok(())
            }
            // The steps `etcd snapshot-save` takes for one member, as one action of `up`.
            Action::SaveEtcdSnapshot { steps, .. } => {
                for step in steps {
                    Box::pin(self.run(step)).await?;
                }
                Ok(())
            }
            Action::CopySnapshotFrom { from, path, image } => {
                let source = exec
                    .hosts
                    .get(from)
                    .ok_or_else(|| ExecFailure::Missing(format!("host {from} is not connected")))?;
                let (dir, _) = path.rsplit_once('/').unwrap_or(("/", ""));
                let copied = source
                    .docker()
                    .copy_file_to(path, self.host()?.docker(), dir, image)
                    .await?;
                if copied {
                    Ok(())
                } else {
                    Err(ExecFailure::Missing(format!(
                        "{path} is gone from host {from}"
                    )))
                }
            }
            Action::RunUp { .. } => {
                let up = exec.up.as_ref().ok_or_else(|| {
                    ExecFailure::Missing("this command does not run `rkers up`".into())
                })?;
                up().await.map_err(ExecFailure::Up)
            }
            Action::LinkLogs {
                containers,
                docker_root,
            } => crate::phases::log_links::link_logs(
                self.host()?,
                &exec.helper_image,
                docker_root,
                containers,
            )
            .await
            .map_err(ExecFailure::Helper),
            Action::ApplyRbac { .. } => exec
                .api()
                .await?
                .apply_authz(exec.rbac)
                .await
                .map_err(|e| api_failed(&e)),
            Action::SyncNode { sync, .. } => {
                let api = exec.api().await?;
                // A node planned before its kubelet registered: wait for it.
                crate::kubeapi::find_node(api, &sync.hostname, 60)
                    .await
                    .map_err(|e| api_failed(&e))?;
                crate::kubeapi::sync_node(api, sync)
                    .await
                    .map(drop)
                    .map_err(|e| api_failed(&e))
            }
            Action::ApplyAddon { plan, .. } | Action::RemoveAddon { plan, .. } => {
                crate::phases::addons::apply_one(exec.api().await?, plan, &exec.reporter)
                    .await
                    .map_err(|e| api_failed(&e))
            }
        }
    }

    /// Reports one applied action, and turns its failure into the executor's error.
    pub fn report(
        &self,
        action: &Action,
        result: Result<(), ExecFailure>,
    ) -> Result<(), ExecError> {
        let result = result.map_err(|e| self.fail(action, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        self.exec
            .reporter
            .applied(self.name, action, error.as_deref());
        result
    }

    /// Writes the file actions gathered so far in one go, each reported as applied.
    async fn flush(&self, batch: &mut FileBatch<'_>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.actions.first().copied() else {
            return Ok(());
        };
        let result = self
            .write_batch(&batch)
            .await
            .map_err(|e| self.fail(first, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        for a in &batch.actions {
            self.exec.reporter.applied(self.name, a, error.as_deref());
        }
        result
    }

    /// A batch of file actions in one write, their paths made relative to the files root.
    async fn write_batch(&self, batch: &FileBatch<'_>) -> Result<(), ExecFailure> {
        let stale = batch
            .remove
            .iter()
            .map(|p| self.relative(p))
            .collect::<Result<Vec<_>, _>>()?;
        let modes = batch
            .modes
            .iter()
            .map(|m| {
                Ok(files::ModeChange {
                    relative_path: self.relative(&m.relative_path)?,
                    ..m.clone()
                })
            })
            .collect::<Result<Vec<_>, ExecFailure>>()?;
        let root = self.files_root.as_str();
        self.write_files(root, &batch.upload, &batch.directories, &stale, &modes)
            .await
    }

    /// calico's runtime directories and their tmpfiles.d entry, in one helper container
    /// (incidents.md §1), each action reported as applied.
    async fn flush_calico(&self, batch: &mut Vec<&Action>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.first().copied() else {
            return Ok(());
        };
        // The one helper applies every calico action of the host: run once, for the first.
        let result = self.run(first).await.map_err(|e| self.fail(first, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        for a in &batch {
            self.exec.reporter.applied(self.name, a, error.as_deref());
        }
        result
    }

    async fn create(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        docker.remove_container(name).await?;
        create_and_start(docker, name, spec, start).await
    }

    /// RKE1's rolling replace (§22.1): the old container is kept aside as `old-<name>` until
    /// the new one runs and, when it has a health check, passes it. When the new one cannot be
    /// created or started, or fails its check, the old one is put back under its name and
    /// started again (reported as a [`Action::RestoreContainer`] of its own), so the host
    /// keeps the component it had, and the failure names the cause (with the failed
    /// container's last log lines).
    async fn recreate(
        &self,
        name: &str,
        spec: &plan::ContainerSpec,
        start: bool,
    ) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        let old = format!("{}{name}", plan::OLD_PREFIX);
        docker.remove_container(&old).await?;
        let was_running = docker
            .inspect_container(name)
            .await?
            .is_some_and(|c| c.running || c.restarting);
        docker.stop_container(name).await?;
        docker.rename_container(name, &old).await?;
        if let Err(failed) = create_and_start(docker, name, spec, start).await {
            let undone = self.restore_reported(name, was_running).await;
            return Err(ExecFailure::Replace {
                cause: Box::new(failed),
                restored: undone.err().map(Box::new),
            });
        }
        if let Some(check) = crate::diff::undo_check(start, spec) {
            let tls = self.exec.health_tls(check);
            let host = self.host()?;
            if let Err(cause) =
                crate::phases::health::wait_component(host, name, &check.url, tls.as_ref()).await
            {
                let logs = docker
                    .logs(name, UNHEALTHY_LOG_LINES)
                    .await
                    .unwrap_or_default();
                let undone = self.restore_reported(name, was_running).await;
                return Err(ExecFailure::Unhealthy {
                    container: name.to_string(),
                    cause,
                    logs,
                    restored: undone.err().map(Box::new),
                });
            }
        }
        docker.remove_container(&old).await?;
        Ok(())
    }

    /// [`Self::restore`], reported as the applied [`Action::RestoreContainer`] it is.
    async fn restore_reported(&self, name: &str, start: bool) -> Result<(), ExecFailure> {
        let restore = Action::RestoreContainer {
            name: name.to_string(),
            start,
        };
        let undone = self.restore(name, start).await;
        self.exec.reporter.applied(
            self.name,
            &restore,
            undone.as_ref().err().map(|e| e.to_string()).as_deref(),
        );
        undone
    }

    /// Puts `old-<name>` back as `<name>` (a half-made replacement removed first), started
    /// again when it ran before.
    async fn restore(&self, name: &str, start: bool) -> Result<(), ExecFailure> {
        let docker = self.host()?.docker();
        let old = format!("{}{name}", plan::OLD_PREFIX);
        if docker.inspect_container(&old).await?.is_none() {
            return Err(ExecFailure::Missing(format!(
                "no {old} container to put back"
            )));
        }
        docker.remove_container(name).await?;
        docker.rename_container(&old, name).await?;
        if start {
            docker.start_container(name).await?;
        }
        Ok(())
    }

    /// RKE1's etcd-fix-perm: the data directory exists and only its owner reads it; for a
    /// joining member, emptied first with no etcd container left to write into it.
    async fn fix_etcd_permissions(&self, path: &str, empty_first: bool) -> Result<(), ExecFailure> {
        let host = self.host()?;
        if empty_first {
            host.docker().remove_container(plan::ETCD).await?;
            reconcile::clean_directories(host, &self.exec.helper_image, &[path.to_string()])
                .await
                .map_err(ExecFailure::Helper)?;
        }
        let spec = hosts::ContainerSpec {
            image: self.exec.helper_image.clone(),
            entrypoint: vec!["/bin/sh".into(), "-c".into()],
            cmd: vec!["mkdir -p /var/lib/rancher/etcd && chmod 700 /var/lib/rancher/etcd".into()],
            binds: vec![format!("{path}:/var/lib/rancher/etcd:z")],
            ..Default::default()
        };
        host.docker()
            .run_to_success("etcd-fix-perm", &spec, Duration::from_secs(120))
            .await
            .map(drop)
            .map_err(ExecFailure::from)
    }

    /// Files under `base` in one write: uploads, deletions, then modes; on Windows through
    /// the host agent, which also creates `directories`.
    async fn write_files(
        &self,
        base: &str,
        upload: &[DesiredFile],
        directories: &[String],
        stale: &[String],
        modes: &[files::ModeChange],
    ) -> Result<(), ExecFailure> {
        let host = self.host()?;
        if self.windows() {
            crate::phases::windows::write_host_files(host, base, directories, upload, stale)
                .await
                .map_err(|e| ExecFailure::Helper(e.to_string()))?;
            return Ok(());
        }
        let docker = host.docker();
        let image = &self.exec.helper_image;
        files::write_files(docker, base, image, upload).await?;
        files::remove_files(docker, base, image, stale).await?;
        files::set_modes(docker, base, image, modes).await?;
        Ok(())
    }
}

/// Creates the planned container `name`, and starts it when it is one that runs.
async fn create_and_start(
    docker: &hosts::DockerClient,
    name: &str,
    spec: &plan::ContainerSpec,
    start: bool,
) -> Result<(), ExecFailure> {
    docker.create_container(name, &docker_spec(spec)).await?;
    if start {
        docker.start_container(name).await?;
    }
    Ok(())
}

/// A host's file actions, written together (one helper container or one host-agent call).
#[derive(Default)]
struct FileBatch<'a> {
    actions: Vec<&'a Action>,
    upload: Vec<DesiredFile>,
    /// Absolute paths, as the actions carry them (the modes' too).
    remove: Vec<String>,
    modes: Vec<files::ModeChange>,
    directories: Vec<String>,
}

impl<'a> FileBatch<'a> {
    /// Takes `action` into the batch when it is a file action.
    fn take(&mut self, action: &'a Action) -> bool {
        match action {
            Action::UploadFile { file, .. } => self.upload.push((**file).clone()),
            Action::RemoveFile { path, .. } => self.remove.push(path.clone()),
            Action::SetFileMode {
                path,
                mode,
                uid,
                gid,
                ..
            } => self.modes.push(files::ModeChange {
                relative_path: path.clone(),
                mode: *mode,
                uid: *uid,
                gid: *gid,
            }),
            Action::CreateDirectories { paths } => self.directories.extend(paths.iter().cloned()),
            _ => return false,
        }
        self.actions.push(action);
        true
    }
}

/// Converts the plan's container (RKE1's process model) into what Docker is asked to create.
pub fn docker_spec(spec: &plan::ContainerSpec) -> hosts::ContainerSpec {
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

impl crate::error::HostContext for ExecError {
    fn hosts(&self) -> Vec<&str> {
        vec![&self.host]
    }
}
