//! What `up` does to prevent the three incidents, with the doctor's own checks:
//!
//! 1. calico/canal clusters: every node gets calico's runtime directories (root:root 0755) and
//!    the tmpfiles.d entry that recreates them at boot, as plan actions `--dry-run` shows; a
//!    later run reports and repairs drift.
//! 2. before an existing cluster's system pods are created or restarted, the webhook check:
//!    a blocking webhook stops `up` with its names and the fix, unless
//!    `--ignore-blocking-webhooks`.
//! 3. rolling upgrades of calico, flannel and canal clusters (by cluster.yml or by the CNI's
//!    DaemonSets): after each node, its CNI pod must be Ready again (and, with flannel, its
//!    `FLANNEL-POSTRTG` chain back) before the next.

use super::cni::{self, Cni};
use super::probe::{self, ProbeWants};
use super::{calico, flannel, webhooks};
use crate::cluster::Cluster;
use crate::diff::{Action, HostActions};
use crate::hosts::{Host, HostPool};
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a guard stopped `up` or `cert rotate`; each names the host or the webhooks and the fix.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("host {host}: cannot read calico's directories: {source}")]
    CalicoProbe {
        host: String,
        #[source]
        source: Box<crate::hosts::HostError>,
    },
    /// The helper's own message names the host and its output.
    #[error("{detail}")]
    CalicoFix { host: String, detail: String },
    #[error("{}", refusal(.blocking))]
    BlockingWebhooks { blocking: Vec<webhooks::Blocking> },
    /// A node's CNI not back after its upgrade; `why` is what is still missing.
    #[error(
        "node {hostname}: its CNI did not come back within {secs}s after the upgrade ({why}); \
         the rolling upgrade stops here so no other node loses its network"
    )]
    CniNotBack {
        host: String,
        hostname: String,
        secs: u64,
        why: String,
    },
}

impl crate::error::HostContext for GuardError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            GuardError::CalicoProbe { host, .. }
            | GuardError::CalicoFix { host, .. }
            | GuardError::CniNotBack { host, .. } => vec![host],
            GuardError::BlockingWebhooks { .. } => Vec::new(),
        }
    }
}

fn linux(h: &Host) -> bool {
    h.platform().runs_linux_helpers()
}

/// The actions that bring calico's directories and tmpfiles.d entry to what calico-node needs,
/// per host (only hosts with something to do). Empty unless the cluster runs calico or canal.
pub async fn calico_actions(
    cluster: &Cluster,
    pool: &HostPool,
) -> Result<BTreeMap<String, Vec<Action>>, GuardError> {
    let (is_calico, _) = cni::families_of_plugin(&cluster.config.network.plugin);
    let mut out = BTreeMap::new();
    if !is_calico {
        return Ok(out);
    }
    let image = &cluster.config.system_images.kubernetes;
    let registries = cluster.registry_credentials();
    // Every host's probe (a one-shot container each) at once: one after the other, planning
    // grew by a container run per host.
    let probes = pool.hosts().filter(|h| linux(h)).map(|host| {
        let registries = &registries;
        async move {
            let sections = probe::probe(
                host.docker(),
                image,
                registries,
                ProbeWants {
                    calico: true,
                    nat: false,
                },
            )
            .await
            .map_err(|source| GuardError::CalicoProbe {
                host: host.name().to_string(),
                source: Box::new(source),
            })?;
            Ok::<_, GuardError>((host, sections))
        }
    });
    for probed in futures::future::join_all(probes).await {
        let (host, sections) = probed?;
        let mut actions = Vec::new();
        for (d, found) in calico::wrong_directories(&sections) {
            actions.push(Action::EnsureCniDirectory {
                path: d.to_string(),
                mode: format!("{:04o}", calico::WANT_MODE),
                owner: "root:root".into(),
                found,
                image: image.clone(),
            });
        }
        let entries = calico::tmpfiles_lines(&sections);
        if let Some(reason) = calico::DIRECTORIES
            .iter()
            .find_map(|d| calico::entry_problem(&entries, d))
        {
            actions.push(Action::WriteTmpfilesEntry {
                path: calico::TMPFILES_ENTRY.into(),
                reason,
                image: image.clone(),
            });
        }
        if !actions.is_empty() {
            out.insert(host.name().to_string(), actions);
        }
    }
    Ok(out)
}

/// Adds `extra` to a host's actions and to what `--dry-run` shows for it.
pub fn append(
    actions: &mut BTreeMap<String, Vec<Action>>,
    shown: &mut [HostActions],
    address: &str,
    extra: Vec<Action>,
) {
    if let Some(list) = actions.get_mut(address) {
        list.extend(extra.iter().cloned());
    }
    if let Some(h) = shown.iter_mut().find(|h| h.host == address) {
        h.actions.extend(extra);
    }
}

/// The refusal text for blocking webhooks.
pub fn refusal(blocking: &[webhooks::Blocking]) -> String {
    let mut s = String::from(
        "refusing to go on: admission webhooks with failurePolicy Fail block pod creation in the \
         namespaces the cluster's system pods run in, and their backends do not answer; restarting \
         system pods now would leave them (and the CNI) unable to start:\n",
    );
    for b in blocking {
        s.push_str(&format!(
            "  - {} (webhook {}) covers {}: {}\n",
            b.object(),
            b.view.webhook,
            b.namespaces.join(", "),
            b.why
        ));
    }
    s.push_str(
        "fix: `rkers doctor --fix webhooks` (backs them up next to the state, removes them, waits for the \
         CNI pods; `rkers doctor --restore-webhooks` puts them back), then run `rkers up` again; \
         or pass --ignore-blocking-webhooks to go on anyway",
    );
    s
}

/// Runs the webhook check on an existing cluster before `up` changes it. Refuses (an error)
/// when a webhook blocks system pods, unless `ignore`; in a dry run it only warns. An API that
/// cannot be reached is no reason to refuse: `up` may be what brings it back.
pub async fn check_webhooks_before_changes(
    cluster: &Cluster,
    ignore: bool,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), GuardError> {
    let Ok(text) = cluster.files.storage.read_to_string(
        &cluster.files.kubeconfig_path,
        rkers_core::bounded::KUBECONFIG,
    ) else {
        return Ok(());
    };
    let Ok(api) = KubeApi::from_kubeconfig(&text).await else {
        return Ok(());
    };
    if api.server_version().await.is_err() {
        tracing::debug!("webhook check skipped: the API server does not answer");
        return Ok(());
    }
    let cni = cni::discover(&api, &cluster.config.network.plugin)
        .await
        .unwrap_or_default();
    let check = match webhooks::find(&api, &cni.namespaces(), &cni.pod_labels(), None).await {
        Ok(c) => c,
        Err(e) => {
            reporter.warn(format!("cannot check admission webhooks: {e}"));
            return Ok(());
        }
    };
    if check.blocking.is_empty() {
        return Ok(());
    }
    if dry_run || ignore {
        let text = refusal(&check.blocking);
        reporter.warn(if ignore {
            format!(
                "--ignore-blocking-webhooks: going on although {}",
                text.trim_start_matches("refusing to go on: ")
            )
        } else {
            text
        });
        return Ok(());
    }
    Err(GuardError::BlockingWebhooks {
        blocking: check.blocking,
    })
}

/// The wait after each node of a rolling upgrade: its CNI pod Ready, and with flannel its
/// `FLANNEL-POSTRTG` chain back in the nat table.
pub struct CniWait {
    hosts: BTreeMap<String, Arc<Host>>,
    plugin: String,
    image: String,
    registries: Vec<crate::hosts::RegistryCredential>,
    pub timeout: Duration,
}

/// How long a node's CNI may take to come back after its upgrade.
pub const CNI_READY_AFTER_UPGRADE: Duration = Duration::from_secs(180);

impl CniWait {
    /// The wait for a cluster. Which CNI runs is looked up after each node (cluster.yml's
    /// plugin, or DaemonSets with calico's or flannel's labels, e.g. a CNI the user deployed
    /// with `network.plugin: none`); with neither, the wait returns at once.
    pub fn for_cluster<'a>(
        cluster: &Cluster,
        hosts: impl Iterator<Item = &'a Arc<Host>>,
    ) -> Arc<CniWait> {
        Arc::new(CniWait {
            hosts: hosts.map(|h| (h.name().to_string(), h.clone())).collect(),
            plugin: cluster.config.network.plugin.clone(),
            image: cluster.config.system_images.kubernetes.clone(),
            registries: cluster.registry_credentials(),
            timeout: CNI_READY_AFTER_UPGRADE,
        })
    }

    /// What is still missing on the node, or `None` when its CNI is back.
    async fn missing(
        &self,
        api: &KubeApi,
        cni: &Cni,
        hostname: &str,
        address: &str,
    ) -> Option<String> {
        if let Err(e) =
            cni::wait_pods_ready(api, cni, &[hostname.to_string()], Duration::ZERO).await
        {
            return Some(e.to_string());
        }
        if cni.flannel
            && let Some(host) = self.hosts.get(address)
        {
            let sections = match probe::probe(
                host.docker(),
                &self.image,
                &self.registries,
                ProbeWants {
                    calico: false,
                    nat: true,
                },
            )
            .await
            {
                Ok(s) => s,
                Err(e) => return Some(format!("cannot read the nat table: {e}")),
            };
            let f = flannel::evaluate(hostname, address, &sections, None);
            if f.status != super::Status::Ok {
                return Some(f.summary);
            }
        }
        None
    }

    pub async fn wait(
        &self,
        api: &KubeApi,
        hostname: &str,
        address: &str,
    ) -> Result<(), GuardError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let cni = cni::discover(api, &self.plugin).await.unwrap_or_default();
            let Some(why) = self.missing(api, &cni, hostname, address).await else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                return Err(GuardError::CniNotBack {
                    host: address.to_string(),
                    hostname: hostname.to_string(),
                    secs: self.timeout.as_secs(),
                    why,
                });
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_each_webhook_and_the_ways_out() {
        let view = webhooks::views_validating(
            &k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some("gatekeeper".into()),
                    ..Default::default()
                },
                webhooks: Some(vec![
                    k8s_openapi::api::admissionregistration::v1::ValidatingWebhook {
                        name: "check.gatekeeper.sh".into(),
                        ..Default::default()
                    },
                ]),
            },
        )
        .remove(0);
        let text = refusal(&[webhooks::Blocking {
            view,
            namespaces: vec!["kube-system".into()],
            why: "service gk/gk:443 has no ready endpoints (0 not ready)".into(),
            events: vec![],
        }]);
        assert!(text.contains("validatingwebhookconfiguration/gatekeeper (webhook check.gatekeeper.sh) covers kube-system"));
        assert!(
            text.contains("rkers doctor --fix webhooks")
                && text.contains("--ignore-blocking-webhooks")
        );
    }
}
