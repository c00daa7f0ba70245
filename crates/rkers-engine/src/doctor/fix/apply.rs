//! Step 4: each stage applied by a small applier of its command, because every repair is
//! printed before it runs as the command a user would type, and some of its work follows from
//! what the previous one found (a node probed again after its repair; the CNI pods waited for
//! after the deletions). The actions name what changes; the appliers run them:
//!
//! - calico: each broken node one after the other, its directories and entry written by one
//!   helper container (it writes both, whatever was wrong), the node probed again; then the
//!   not-ready calico-node pods of the nodes fixed are deleted so they start now;
//! - flannel: each broken node one after the other, its flannel pod deleted, then the new pod
//!   Ready and the node's chain back waited for; the first node whose chain does not come back
//!   stops the fix (a flannel that cannot start would only lose more nodes);
//! - webhooks: the backup written (mode 0600, atomically), then each configuration deleted,
//!   the CNI DaemonSets woken and their pods waited for, and how to restore said;
//! - restore: each configuration created again, one that exists kept as it is.

use super::observe::{self, CalicoFound, FlannelFound, WebhooksFound};
use super::{CNI_WAIT, CalicoFix, FixError, FlannelFix, Restore, WebhookFix, backup_path};
use crate::checks::cni::{self, Cni};
use crate::checks::guard::CniWait;
use crate::checks::{calico, probe, webhooks};
use crate::cluster::Cluster;
use crate::diff::Action;
use crate::doctor::run;
use crate::hosts::Host;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::Runner;
use crate::phases::driver::ApplyStage;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use rkers_core::changeset::{CLUSTER, LOCAL, Stage};
use rkers_core::diff::doctor_fix::{CalicoStage, FlannelStage, RestoreStage, WebhookStage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The calico repair: the hosts observe connected, what it found, and the API server when it
/// answers (without it the pods restart after their back-off).
pub(super) struct CalicoRepairer<'c> {
    cluster: &'c Cluster,
    reporter: Reporter,
    hosts: Vec<Arc<Host>>,
    /// Node name and the check's verdict, by address.
    found: BTreeMap<String, (String, String)>,
    api: Option<KubeApi>,
}

pub(super) async fn calico<'c>(command: &CalicoFix<'c>, found: &CalicoFound) -> CalicoRepairer<'c> {
    CalicoRepairer {
        cluster: command.cluster,
        reporter: command.reporter.clone(),
        hosts: found.hosts.clone(),
        found: found
            .probed
            .iter()
            .map(|p| {
                (
                    p.node.host.clone(),
                    (p.node.node.clone(), p.summary.clone()),
                )
            })
            .collect(),
        api: run::api(command.cluster).await.ok(),
    }
}

impl ApplyStage<CalicoStage> for CalicoRepairer<'_> {
    async fn apply_stage(&self, stage: &Stage<CalicoStage>, _: &Runner) -> Vec<(String, String)> {
        let phase = self.reporter.phase(&stage.phase.to_string());
        let mut failed = Vec::new();
        let mut fixed = Vec::new();
        for h in &stage.hosts {
            match self.repair(&h.host).await {
                Ok(node) => fixed.push(node),
                Err(line) => failed.push((h.host.clone(), line)),
            }
        }
        if let Some(api) = &self.api
            && !fixed.is_empty()
        {
            restart_unready_calico(
                api,
                &self.cluster.config.network.plugin,
                &fixed,
                &self.reporter,
            )
            .await;
        }
        end_phase(phase, &failed, stage.hosts.len());
        failed
    }
}

impl CalicoRepairer<'_> {
    /// Repairs one node, saying each command before it runs: the node's name once it is
    /// fixed, else the failure's line.
    async fn repair(&self, address: &str) -> Result<String, String> {
        let host = self
            .hosts
            .iter()
            .find(|h| h.name() == address)
            .ok_or_else(|| format!("host {address}: not connected"))?;
        let (node, summary) = self.found.get(address).cloned().unwrap_or_default();
        self.reporter.info(format!("{node}: {summary}"));
        for cmd in calico::manual_fix() {
            self.reporter.info(format!("{node}: running: {cmd}"));
        }
        probe::apply_calico_fix(
            host.docker(),
            &self.cluster.config.system_images.kubernetes,
            &self.cluster.registry_credentials(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let after = observe::probe_host(self.cluster, host)
            .await
            .map_err(|e| e.to_string())?;
        if !after.node.healthy {
            return Err(format!("host {address}: still {}", after.summary));
        }
        self.reporter
            .info(format!("{node}: fixed: {}", after.summary));
        Ok(node)
    }
}

/// Ends a per-node stage's phase: done, or failed with how many of its `nodes` were not fixed.
fn end_phase(phase: crate::output::PhaseGuard, failed: &[(String, String)], nodes: usize) {
    if failed.is_empty() {
        phase.done();
    } else {
        phase.fail(&format!("{} of {nodes} nodes not fixed", failed.len()));
    }
}

/// Deletes the not-ready calico-node pods of `nodes`, so their DaemonSet starts them again now.
async fn restart_unready_calico(
    api: &KubeApi,
    plugin: &str,
    nodes: &[String],
    reporter: &Reporter,
) {
    let Ok(cni) = cni::discover(api, plugin).await else {
        return;
    };
    for ds in cni.daemonsets.iter().filter(|d| d.calico) {
        let by_node = cni::pods_by_node(api, ds).await;
        for node in nodes {
            for p in by_node.get(node).into_iter().flatten() {
                let name = p.metadata.name.clone().unwrap_or_default();
                // Its back-off may have ended while the directories were fixed: then the pod
                // already runs again and deleting it would only interrupt it.
                if cni::pod_ready(p) {
                    reporter.info(format!(
                        "{node}: pod {}/{name} is ready again: nothing to restart",
                        ds.namespace
                    ));
                    continue;
                }
                reporter.info(format!("{node}: running: kubectl -n {} delete pod {name}   (restarts now instead of after its back-off)", ds.namespace));
                let pods: Api<Pod> = Api::namespaced(api.client.clone(), &ds.namespace);
                if let Err(e) = pods.delete(&name, &DeleteParams::default()).await {
                    reporter.warn(format!("{node}: cannot delete pod {name}: {e}"));
                }
            }
        }
    }
}

/// The flannel repair: the API server, the hosts observe connected (their nat tables are read
/// again after each deletion), and the wait `up` runs after each node of a rolling upgrade.
pub(super) struct FlannelRestarter<'c> {
    api: KubeApi,
    reporter: Reporter,
    hosts: BTreeMap<String, Arc<Host>>,
    wait: Arc<CniWait>,
    cluster: &'c Cluster,
}

pub(super) fn flannel<'c>(command: &FlannelFix<'c>, found: FlannelFound) -> FlannelRestarter<'c> {
    FlannelRestarter {
        wait: CniWait::for_cluster(command.cluster, found.hosts.iter()),
        api: found.api,
        reporter: command.reporter.clone(),
        hosts: found
            .hosts
            .into_iter()
            .map(|h| (h.name().to_string(), h))
            .collect(),
        cluster: command.cluster,
    }
}

impl ApplyStage<FlannelStage> for FlannelRestarter<'_> {
    async fn apply_stage(&self, stage: &Stage<FlannelStage>, _: &Runner) -> Vec<(String, String)> {
        let phase = self.reporter.phase(&stage.phase.to_string());
        let mut failed: Vec<(String, String)> = Vec::new();
        for h in &stage.hosts {
            if let Some((stopped_at, _)) = failed.first() {
                failed.push((
                    h.host.clone(),
                    format!(
                        "host {}: not tried: the fix stopped at host {stopped_at}",
                        h.host
                    ),
                ));
                continue;
            }
            for action in &h.actions {
                if let Err(line) = self.restart(&h.host, action).await {
                    failed.push((h.host.clone(), line));
                    break;
                }
            }
        }
        end_phase(phase, &failed, stage.hosts.len());
        failed
    }
}

impl FlannelRestarter<'_> {
    /// Deletes one node's flannel pod, saying it first, and waits until the node's new pod is
    /// Ready and its chain is back: why not, naming the host, else `Ok`.
    async fn restart(&self, address: &str, action: &Action) -> Result<(), String> {
        let Action::DeletePod {
            namespace,
            name,
            node,
            reason,
        } = action
        else {
            return Ok(());
        };
        let host = self
            .hosts
            .get(address)
            .ok_or_else(|| format!("host {address}: not connected"))?;
        self.reporter.info(format!("{node}: {reason}"));
        self.reporter.info(format!(
            "{node}: running: kubectl -n {namespace} delete pod {name}"
        ));
        let started = std::time::Instant::now();
        crate::kubeapi::delete_pod(&self.api, namespace, name)
            .await
            .map_err(|e| format!("host {address}: {e}"))?;
        self.wait
            .wait(&self.api, node, address)
            .await
            .map_err(|e| e.to_string())?;
        let after = observe::nat_finding(self.cluster, host, node)
            .await
            .map_err(|e| e.to_string())?;
        self.reporter.info(format!(
            "{node}: fixed in {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            after.summary
        ));
        Ok(())
    }
}

/// The webhook removal: the API server and CNI observe found, and what the last line names.
pub(super) struct WebhookRemover {
    api: KubeApi,
    cni: Cni,
    reporter: Reporter,
    config_path: PathBuf,
    backup: PathBuf,
}

pub(super) fn webhooks(command: &WebhookFix<'_>, found: &WebhooksFound) -> WebhookRemover {
    WebhookRemover {
        api: found.api.clone(),
        cni: found.cni.clone(),
        reporter: command.reporter.clone(),
        config_path: command.cluster.files.config_path.clone(),
        backup: backup_path(command.cluster),
    }
}

impl ApplyStage<WebhookStage> for WebhookRemover {
    async fn apply_stage(&self, stage: &Stage<WebhookStage>, _: &Runner) -> Vec<(String, String)> {
        let phase = self.reporter.phase(&stage.phase.to_string());
        let outcome = match stage.phase {
            WebhookStage::Backup => self.back_up(stage).map_err(|e| (LOCAL, e)),
            WebhookStage::Delete => self.delete(stage).await.map_err(|e| (CLUSTER, e)),
        };
        match outcome {
            Ok(()) => {
                phase.done();
                Vec::new()
            }
            Err((host, why)) => {
                phase.fail(&why);
                vec![(host.to_string(), why)]
            }
        }
    }
}

impl WebhookRemover {
    fn back_up(&self, stage: &Stage<WebhookStage>) -> Result<(), String> {
        for action in stage.hosts.iter().flat_map(|h| &h.actions) {
            let Action::WriteFileSet { dir, files } = action else {
                continue;
            };
            for file in files {
                let path = Path::new(dir).join(&file.path);
                self.reporter
                    .info(format!("backing up {} to {}", file.reason, path.display()));
                write_private(&path, &file.contents)?;
            }
        }
        Ok(())
    }

    async fn delete(&self, stage: &Stage<WebhookStage>) -> Result<(), String> {
        for action in stage.hosts.iter().flat_map(|h| &h.actions) {
            let Action::DeleteWebhookConfiguration { kind, name } = action else {
                continue;
            };
            self.reporter.info(format!(
                "running: kubectl delete {}/{name}",
                kind.resource()
            ));
            webhooks::delete_config(&self.api, *kind, name)
                .await
                .map_err(|e| e.to_string())?;
        }
        nudge_daemonsets(&self.api, &self.cni, &self.reporter).await;
        self.reporter.info(format!(
            "waiting up to {}s until the CNI pods run on every node",
            CNI_WAIT.as_secs()
        ));
        let waited = cni::wait_pods_ready(&self.api, &self.cni, &[], CNI_WAIT)
            .await
            .map_err(|e| e.to_string());
        self.reporter.info(format!(
            "to restore the removed configurations once their backends run again: rkers doctor --restore-webhooks --config {}   (backup: {})",
            self.config_path.display(),
            self.backup.display()
        ));
        waited
    }
}

/// Writes `contents` to `path` readable by its owner only, through a temporary file so an
/// interrupted write leaves the earlier backup whole.
fn write_private(path: &Path, contents: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    fn at(p: &Path) -> impl Fn(std::io::Error) -> String + '_ {
        move |e| format!("{}: {e}", p.display())
    }
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(at(&tmp))?;
    f.write_all(contents).map_err(at(&tmp))?;
    f.sync_all().map_err(at(&tmp))?;
    std::fs::rename(&tmp, path).map_err(at(path))
}

/// Touches each CNI DaemonSet's metadata so its controller retries pod creation now rather than
/// after the back-off it reached while the webhook refused it. The pod template is not changed,
/// so no running pod restarts.
async fn nudge_daemonsets(api: &KubeApi, cni: &Cni, reporter: &Reporter) {
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp().to_string();
    for ds in &cni.daemonsets {
        let dss: Api<DaemonSet> = Api::namespaced(api.client.clone(), &ds.namespace);
        let patch =
            serde_json::json!({"metadata": {"annotations": {"rkers.io/doctor-retry": stamp}}});
        reporter.info(format!("running: kubectl -n {} annotate daemonset {} rkers.io/doctor-retry={stamp} --overwrite   (retries pod creation now)", ds.namespace, ds.name));
        if let Err(e) = dss
            .patch(&ds.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            reporter.warn(format!(
                "cannot annotate daemonset {}/{}: {e}",
                ds.namespace, ds.name
            ));
        }
    }
}

/// The restore: the API server, reached once there is something to restore.
pub(super) struct Restorer {
    api: KubeApi,
    reporter: Reporter,
}

pub(super) async fn restorer(command: &Restore<'_>) -> Result<Restorer, FixError> {
    let api = run::api(command.cluster)
        .await
        .map_err(|f| FixError::NoApi(f.summary))?;
    Ok(Restorer {
        api,
        reporter: command.reporter.clone(),
    })
}

impl ApplyStage<RestoreStage> for Restorer {
    async fn apply_stage(&self, stage: &Stage<RestoreStage>, _: &Runner) -> Vec<(String, String)> {
        let phase = self.reporter.phase(&stage.phase.to_string());
        for action in stage.hosts.iter().flat_map(|h| &h.actions) {
            let Action::CreateWebhookConfiguration {
                kind,
                name,
                from,
                object,
            } = action
            else {
                continue;
            };
            let kind_name = kind.kind();
            self.reporter.info(format!(
                "running: kubectl create -f - ({kind_name} {name}, from {from})"
            ));
            match webhooks::create_config(&self.api, *kind, name, object).await {
                Ok(true) => {}
                Ok(false) => self
                    .reporter
                    .info(format!("{kind_name} {name} exists already: kept as it is")),
                Err(e) => {
                    let why = e.to_string();
                    phase.fail(&why);
                    return vec![(CLUSTER.to_string(), why)];
                }
            }
        }
        phase.done();
        Vec::new()
    }
}
