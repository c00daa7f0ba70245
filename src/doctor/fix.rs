//! `rkers doctor --fix CHECK` and `--restore-webhooks`: the safe repairs, each printed before
//! it runs.
//!
//! - `calico-runtime`: on every chosen node whose calico directories or tmpfiles.d entry are
//!   wrong, restore owner and mode and write the entry (a helper container binding exactly those
//!   paths), then delete that node's calico-node pod if it is not ready so it starts now rather
//!   than after its back-off.
//! - `webhooks`: back up the blocking webhook configurations to a file next to the state, delete
//!   them, wake the CNI DaemonSets, wait until their pods run on every node, and say how to
//!   restore. Configurations Kubernetes or rkers' addons install are never touched.

use super::cni::{self, Cni};
use super::probe::{self, ProbeWants};
use super::run::{self, DoctorOptions};
use super::webhooks::{self, Kind};
use super::{Status, basics, calico};
use crate::cluster::Cluster;
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use std::path::PathBuf;
use std::time::Duration;

/// How long `--fix webhooks` waits for the CNI pods.
pub const CNI_WAIT: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FixCheck {
    /// Incident 1: calico's runtime directories and their tmpfiles.d entry.
    #[value(name = "calico-runtime")]
    CalicoRuntime,
    /// Incident 3: webhooks that block pod creation in kube-system or the CNI's namespace.
    #[value(name = "webhooks")]
    Webhooks,
}

/// Where `--fix webhooks` keeps the removed configurations: next to the state file.
pub fn backup_path(cluster: &Cluster) -> PathBuf {
    let state = &cluster.files.state_path;
    let stem = state
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("cluster");
    state.with_file_name(format!("{stem}.webhooks-backup.json"))
}

pub async fn fix(
    cluster: &Cluster,
    check: FixCheck,
    opts: &DoctorOptions,
    reporter: &Reporter,
) -> Result<(), String> {
    match check {
        FixCheck::CalicoRuntime => fix_calico(cluster, opts, reporter).await,
        FixCheck::Webhooks => fix_webhooks(cluster, reporter).await,
    }
}

async fn fix_calico(
    cluster: &Cluster,
    opts: &DoctorOptions,
    reporter: &Reporter,
) -> Result<(), String> {
    let targets = run::select_targets(cluster, &opts.hosts, opts.agent_override)?;
    let (failed, pool) = run::connect(&targets, &opts.ssh).await;
    let mut errors: Vec<String> = failed
        .iter()
        .map(|a| {
            format!(
                "host {}: {}",
                a.target.name,
                a.error.as_ref().map(|e| e.to_string()).unwrap_or_default()
            )
        })
        .collect();
    let api = run::api(cluster).await.ok();
    let image = &cluster.config.system_images.kubernetes;
    let registries = cluster.registry_credentials();
    let wants = ProbeWants {
        calico: true,
        nat: false,
    };
    let mut fixed_nodes = Vec::new();
    for host in pool.hosts() {
        let node = basics::node_name(&cluster.config, host.name());
        let before = match probe::probe(host.docker(), image, &registries, wants).await {
            Ok(s) => calico::evaluate(&node, host.name(), &s),
            Err(e) => {
                errors.push(format!(
                    "host {}: cannot read its calico directories: {e}",
                    host.name()
                ));
                continue;
            }
        };
        if before.status == Status::Ok {
            reporter.info(format!("{node}: {} — nothing to fix", before.summary));
            continue;
        }
        reporter.info(format!("{node}: {}", before.summary));
        for cmd in calico::manual_fix() {
            reporter.info(format!("{node}: running: {cmd}"));
        }
        if let Err(e) = probe::apply_calico_fix(host.docker(), image, &registries).await {
            errors.push(e);
            continue;
        }
        let after = probe::probe(host.docker(), image, &registries, wants)
            .await
            .map(|s| calico::evaluate(&node, host.name(), &s))
            .map_err(|e| e.to_string())?;
        if after.status != Status::Ok {
            errors.push(format!("host {}: still {}", host.name(), after.summary));
            continue;
        }
        reporter.info(format!("{node}: fixed: {}", after.summary));
        fixed_nodes.push(node);
    }
    if let Some(api) = &api
        && !fixed_nodes.is_empty()
    {
        restart_unready_calico(api, &cluster.config.network.plugin, &fixed_nodes, reporter).await;
    }
    pool.close().await;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
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

fn strip_meta(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
        ] {
            m.remove(k);
        }
    }
    v
}

/// The backup file's items (an empty list when it does not exist).
pub fn read_backup(path: &std::path::Path) -> Result<Vec<serde_json::Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(v["items"].as_array().cloned().unwrap_or_default())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Adds `items` to the backup, keeping what an earlier `--fix` saved (same kind and name:
/// the earlier copy wins, it is the one from before any removal).
pub fn merge_backup(
    existing: Vec<serde_json::Value>,
    items: Vec<serde_json::Value>,
) -> serde_json::Value {
    let key = |v: &serde_json::Value| {
        (
            v["kind"].as_str().unwrap_or("").to_string(),
            v["metadata"]["name"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut all = existing;
    for i in items {
        if !all.iter().any(|e| key(e) == key(&i)) {
            all.push(i);
        }
    }
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": all})
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    f.sync_all()
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

async fn fix_webhooks(cluster: &Cluster, reporter: &Reporter) -> Result<(), String> {
    let api = run::api(cluster).await.map_err(|f| f.summary)?;
    let cni = cni::discover(&api, &cluster.config.network.plugin).await?;
    let check = webhooks::find(&api, &cni.namespaces(), &cni.pod_labels(), None).await?;
    let (remove, kept) = webhooks::removable(&check.blocking);
    for (kind, name, who) in &kept {
        reporter.warn(format!(
            "{}/{name} blocks pod creation but is {who}: not touched; bring its backend back",
            kind.resource()
        ));
    }
    if remove.is_empty() {
        reporter.info("no blocking webhook configuration to remove");
        return if kept.is_empty() {
            Ok(())
        } else {
            Err("only protected webhook configurations block pod creation".into())
        };
    }
    let path = backup_path(cluster);
    let mut items = Vec::new();
    for (kind, name) in &remove {
        let v = match kind {
            Kind::Validating => serde_json::to_value(
                Api::<ValidatingWebhookConfiguration>::all(api.client.clone())
                    .get(name)
                    .await
                    .map_err(|e| api.err(&format!("get {name}"), e).to_string())?,
            ),
            Kind::Mutating => serde_json::to_value(
                Api::<MutatingWebhookConfiguration>::all(api.client.clone())
                    .get(name)
                    .await
                    .map_err(|e| api.err(&format!("get {name}"), e).to_string())?,
            ),
        }
        .map_err(|e| e.to_string())?;
        items.push(strip_meta(v));
    }
    reporter.info(format!(
        "backing up {} to {}",
        remove
            .iter()
            .map(|(k, n)| format!("{}/{n}", k.resource()))
            .collect::<Vec<_>>()
            .join(", "),
        path.display()
    ));
    let merged = merge_backup(read_backup(&path)?, items);
    write_private(
        &path,
        &serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?,
    )?;
    for (kind, name) in &remove {
        reporter.info(format!(
            "running: kubectl delete {}/{name}",
            kind.resource()
        ));
        let r = match kind {
            Kind::Validating => Api::<ValidatingWebhookConfiguration>::all(api.client.clone())
                .delete(name, &DeleteParams::default())
                .await
                .map(drop),
            Kind::Mutating => Api::<MutatingWebhookConfiguration>::all(api.client.clone())
                .delete(name, &DeleteParams::default())
                .await
                .map(drop),
        };
        r.map_err(|e| {
            api.err(&format!("delete {}/{name}", kind.resource()), e)
                .to_string()
        })?;
    }
    nudge_daemonsets(&api, &cni, reporter).await;
    reporter.info(format!(
        "waiting up to {}s until the CNI pods run on every node",
        CNI_WAIT.as_secs()
    ));
    let waited = cni::wait_pods_ready(&api, &cni, &[], CNI_WAIT).await;
    reporter.info(format!(
        "to restore the removed configurations once their backends run again: rkers doctor --restore-webhooks --config {}   (backup: {})",
        cluster.files.config_path.display(),
        path.display()
    ));
    waited
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

/// `--restore-webhooks`: creates every configuration of the backup that does not exist, then
/// renames the backup to `*.restored`.
pub async fn restore_webhooks(cluster: &Cluster, reporter: &Reporter) -> Result<(), String> {
    let path = backup_path(cluster);
    let items = read_backup(&path)?;
    if items.is_empty() {
        return Err(format!(
            "{}: no backup of webhook configurations (nothing was removed by `rkers doctor --fix webhooks`)",
            path.display()
        ));
    }
    let api = run::api(cluster).await.map_err(|f| f.summary)?;
    for item in items {
        let kind = item["kind"].as_str().unwrap_or_default().to_string();
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        reporter.info(format!(
            "running: kubectl create -f - ({kind} {name}, from {})",
            path.display()
        ));
        let r = match kind.as_str() {
            "ValidatingWebhookConfiguration" => {
                let obj: ValidatingWebhookConfiguration = serde_json::from_value(item)
                    .map_err(|e| format!("{}: {kind} {name}: {e}", path.display()))?;
                Api::<ValidatingWebhookConfiguration>::all(api.client.clone())
                    .create(&PostParams::default(), &obj)
                    .await
                    .map(drop)
            }
            "MutatingWebhookConfiguration" => {
                let obj: MutatingWebhookConfiguration = serde_json::from_value(item)
                    .map_err(|e| format!("{}: {kind} {name}: {e}", path.display()))?;
                Api::<MutatingWebhookConfiguration>::all(api.client.clone())
                    .create(&PostParams::default(), &obj)
                    .await
                    .map(drop)
            }
            other => return Err(format!("{}: unexpected kind {other:?}", path.display())),
        };
        match r {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {
                reporter.info(format!("{kind} {name} exists already: kept as it is"))
            }
            Err(e) => return Err(api.err(&format!("create {kind} {name}"), e).to_string()),
        }
    }
    let done = path.with_extension("json.restored");
    std::fs::rename(&path, &done).map_err(|e| format!("{}: {e}", path.display()))?;
    reporter.info(format!(
        "restored; the backup is kept as {}",
        done.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_backup_is_kept_and_new_items_added() {
        let item = |k: &str, n: &str, v: &str| serde_json::json!({"kind": k, "metadata": {"name": n}, "v": v});
        let merged = merge_backup(
            vec![item("ValidatingWebhookConfiguration", "a", "first")],
            vec![
                item("ValidatingWebhookConfiguration", "a", "second"),
                item("MutatingWebhookConfiguration", "a", "m"),
            ],
        );
        let items = merged["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["v"], "first");
        assert_eq!(merged["kind"], "List");
    }

    #[test]
    fn server_fields_are_stripped() {
        let v = strip_meta(
            serde_json::json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "1", "labels": {"x": "y"}}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"metadata": {"name": "a", "labels": {"x": "y"}}})
        );
    }
}
