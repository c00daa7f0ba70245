//! Step 3's check before a minor change: what the target minor breaks. The manifests `up`
//! applies (system addons, user addons, `addons_include`) and what the cluster shows through
//! its API ([`crate::kubeapi::removed_apis`]) are turned into findings by the pure
//! [`crate::diff::removed_apis::decide`]; the dry run and the run print them alike, and both
//! refuse when the target minor removes a version in use, unless `--ignore-removed-apis`. A step
//! to one of rkers' own minors (data/versions-next.json) first lists its flag and etcd changes.

use super::plan::Planned;
use super::state::Loaded;
use super::{UpError, UpOptions};
use crate::cluster::Cluster;
use crate::diff::minor::MinorStep;
use crate::diff::removed_apis::{ApiUse, Seen, Verdict, decide};
use crate::kubeapi::KubeApi;
use crate::metadata::RemovedApis;
use crate::output::{Event, Reporter, Status};

pub(super) async fn check(
    cluster: &Cluster,
    opts: &UpOptions,
    loaded: &Loaded,
    planned: &Planned,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let MinorStep::Next { from, to } = loaded.minor else {
        return Ok(());
    };
    // Past RKE1's last minor the defaults are rkers' own: say which flags and images the step
    // changes and why, the dry run as the run.
    for reason in
        crate::metadata::next::step_reasons(crate::metadata::next::NextData::embedded(), from, to)
    {
        reporter.info(reason);
    }
    let table = RemovedApis::embedded();
    let mut uses = manifest_uses(&planned.cluster.addons, table)?;
    uses.extend(planned.addon_leftovers.iter().cloned());
    match read_cluster(cluster, table, from.1).await {
        Ok(found) => uses.extend(found),
        Err(e) => reporter.warn(format!(
            "removed APIs: the cluster could not be read ({e}): only the manifests up applies \
             are checked"
        )),
    }
    let verdict = decide(from, to, &uses, table);
    report(&verdict, reporter);
    if !verdict.refuses() {
        return Ok(());
    }
    if opts.ignore_removed_apis {
        reporter.warn(format!(
            "--ignore-removed-apis: going on although {} stops serving API versions the cluster \
             uses",
            verdict.to
        ));
        return Ok(());
    }
    Err(UpError::RemovedApis(verdict))
}

/// The objects rkers' own addons applied on an earlier run (each addon's manifest stored in its
/// ConfigMap) whose API the target minor stops serving and which the addon's new rendering
/// leaves out (no object of that kind, namespace and name at any version): they are deleted
/// before the control plane changes ([`crate::diff::removed_apis::deletions`]). None unless
/// the run moves to the next minor; a cluster whose API cannot be read gives none (the check
/// then says the cluster could not be read).
pub(super) async fn addon_leftovers(
    cluster: &Cluster,
    loaded: &Loaded,
    addons: &[crate::addons::AddonPlan],
) -> Result<Vec<ApiUse>, UpError> {
    let MinorStep::Next { from, to } = loaded.minor else {
        return Ok(Vec::new());
    };
    let table = RemovedApis::embedded();
    let path = &cluster.files.kubeconfig_path;
    let Ok(text) = (cluster.files.storage).read_to_string(path, rkers_core::bounded::KUBECONFIG)
    else {
        return Ok(Vec::new());
    };
    let Ok(api) = KubeApi::from_kubeconfig(&text).await else {
        return Ok(Vec::new());
    };
    let mut leftovers = Vec::new();
    for addon in addons {
        let Ok(Some(stored)) = crate::addons::apply::stored_manifest(&api, addon.resource).await
        else {
            continue;
        };
        // A stored manifest that no longer parses (edited by hand) names nothing.
        let Ok(old) = crate::addons::apply::parse_manifest(addon.resource, &stored) else {
            continue;
        };
        let kept: Vec<crate::addons::apply::ObjectId> = match &addon.manifest {
            Some(m) => crate::addons::apply::parse_manifest(addon.resource, m)?
                .iter()
                .filter_map(crate::addons::apply::ObjectId::of)
                .collect(),
            None => Vec::new(),
        };
        for id in old.iter().filter_map(crate::addons::apply::ObjectId::of) {
            let Some(row) = table.by_kind(&id.api_version, &id.kind) else {
                continue;
            };
            let removed = row.removed_minor();
            let still_rendered = kept
                .iter()
                .any(|k| k.kind == id.kind && k.namespace == id.namespace && k.name == id.name);
            if removed <= from.1 || removed > to.1 || still_rendered {
                continue;
            }
            leftovers.push(ApiUse {
                group: row.group.clone(),
                version: row.version.clone(),
                kind: id.kind.clone(),
                seen: Seen::AddonLeftover {
                    addon: addon.resource.to_string(),
                    namespace: id.namespace.clone(),
                    name: id.name.clone(),
                },
            });
        }
    }
    Ok(leftovers)
}

/// The deletions of [`addon_leftovers`], as the `cluster` actions the run takes first.
pub(super) fn leftover_deletions(
    loaded: &Loaded,
    leftovers: &[ApiUse],
) -> Vec<crate::diff::Action> {
    let MinorStep::Next { from, to } = loaded.minor else {
        return Vec::new();
    };
    crate::diff::removed_apis::deletions(&decide(from, to, leftovers, RemovedApis::embedded()))
}

/// Every object of the addons `up` applies whose `apiVersion` and kind the table names.
fn manifest_uses(
    addons: &[crate::addons::AddonPlan],
    table: &RemovedApis,
) -> Result<Vec<ApiUse>, UpError> {
    let mut uses = Vec::new();
    for addon in addons {
        let Some(manifest) = &addon.manifest else {
            continue;
        };
        for object in crate::addons::apply::parse_manifest(addon.resource, manifest)? {
            let Some(id) = crate::addons::apply::ObjectId::of(&object) else {
                continue;
            };
            let Some(row) = table.by_kind(&id.api_version, &id.kind) else {
                continue;
            };
            uses.push(ApiUse {
                group: row.group.clone(),
                version: row.version.clone(),
                kind: id.kind.clone(),
                seen: Seen::Manifest {
                    addon: addon.resource.to_string(),
                    object: if id.namespace.is_empty() {
                        id.name.clone()
                    } else {
                        format!("{}/{}", id.namespace, id.name)
                    },
                },
            });
        }
    }
    Ok(uses)
}

async fn read_cluster(
    cluster: &Cluster,
    table: &RemovedApis,
    current_minor: u64,
) -> Result<Vec<ApiUse>, String> {
    let path = &cluster.files.kubeconfig_path;
    let text = (cluster.files.storage)
        .read_to_string(path, rkers_core::bounded::KUBECONFIG)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let api = KubeApi::from_kubeconfig(&text)
        .await
        .map_err(|e| e.to_string())?;
    api.removed_api_uses(table, current_minor)
        .await
        .map_err(|e| e.to_string())
}

/// One summary line, then one warning per finding (its details under `data` in JSON).
fn report(verdict: &Verdict, reporter: &Reporter) {
    let mut summary = Event::new(Status::Info);
    summary.phase = Some("removed-apis".into());
    summary.message = Some(if verdict.findings.is_empty() {
        format!(
            "removed APIs: {} → {}: the cluster uses no API version that {} or a later minor \
             removes",
            verdict.from, verdict.to, verdict.to
        )
    } else {
        format!(
            "removed APIs: {} → {}: {} finding(s), {} refusing the upgrade",
            verdict.from,
            verdict.to,
            verdict.findings.len(),
            verdict.refusing().count()
        )
    });
    summary.data = serde_json::to_value(verdict).ok();
    reporter.emit(summary);
    for finding in &verdict.findings {
        let mut e = Event::new(Status::Warning);
        e.phase = Some("removed-apis".into());
        e.message = Some(finding.line());
        e.data = serde_json::to_value(finding).ok();
        reporter.emit(e);
    }
}

/// The refusal's message: what the target removes that the cluster uses, and the way on.
pub(super) fn refusal(verdict: &Verdict) -> String {
    let lines: Vec<String> = verdict
        .refusing()
        .map(|f| format!("  - {}", f.line()))
        .collect();
    format!(
        "refusing to upgrade {} → {}: {} stops serving API versions the cluster uses:\n{}\n\
         Fix each (move the objects and manifests to the version named), or pass \
         --ignore-removed-apis to go on anyway",
        verdict.from,
        verdict.to,
        verdict.to,
        lines.join("\n")
    )
}
