//! What a minor change breaks, decided from what was observed of the cluster: each use of an
//! API version that a Kubernetes minor stops serving (the table in
//! [`crate::metadata::RemovedApis`]) becomes a finding. Removals up to the target minor refuse
//! the run; removals in later minors are warnings, and so are stale traces of removals the
//! cluster already went through. An object rkers' own addon applied, which the target's
//! rendering of that addon leaves out, is no refusal: rkers deletes it before the control plane
//! changes ([`deletions`]), while its API is still served. The observation itself is
//! the root package's `kubeapi::removed_apis`'s.

use crate::metadata::{RemovedApi, RemovedApis, removed_apis::api_version};
use serde::Serialize;

/// Where a use of an API version was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "seen_in")]
pub enum Seen {
    /// An object of a kind the table removes outright, stored in the cluster.
    Object { object: String },
    /// A manifest `up` applies: a system addon, a user addon, `addons_include`.
    Manifest { addon: String, object: String },
    /// An object's `kubectl.kubernetes.io/last-applied-configuration` annotation.
    LastApplied { object: String },
    /// An object an addon of rkers' own applied on an earlier run (its stored manifest lists
    /// it) and the addon's new rendering leaves out: deleted before the control plane changes.
    AddonLeftover {
        addon: String,
        /// Empty for a cluster-scoped object.
        namespace: String,
        name: String,
    },
    /// The API server's `apiserver_requested_deprecated_apis` (requests since it started).
    Requests {
        /// The API server's own `removed_release` label, where it has one.
        removed_release: Option<String>,
    },
}

/// One use of `apiVersion` + kind (or, for requests, the plural resource).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiUse {
    pub group: String,
    pub version: String,
    /// The kind; for [`Seen::Requests`] the plural resource.
    pub kind: String,
    #[serde(flatten)]
    pub seen: Seen,
}

impl ApiUse {
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// The object it names (`namespace/name` or `name`), when it names one.
    pub fn object(&self) -> Option<String> {
        match &self.seen {
            Seen::Object { object }
            | Seen::Manifest { object, .. }
            | Seen::LastApplied { object } => Some(object.clone()),
            Seen::AddonLeftover {
                namespace, name, ..
            } => Some(if namespace.is_empty() {
                name.clone()
            } else {
                format!("{namespace}/{name}")
            }),
            Seen::Requests { .. } => None,
        }
    }

    /// Where it was seen, as a phrase.
    pub fn describe(&self) -> String {
        match &self.seen {
            Seen::Object { object } => format!("{} {object}", self.kind),
            Seen::Manifest { addon, object } => {
                format!("{} {object} in addon {addon}", self.kind)
            }
            Seen::LastApplied { object } => {
                format!("{} {object} (its last-applied configuration)", self.kind)
            }
            Seen::AddonLeftover { addon, .. } => format!(
                "{} {} of addon {addon}, which its new rendering leaves out",
                self.kind,
                self.object().unwrap_or_default()
            ),
            Seen::Requests { .. } => format!(
                "requests to {} {} since the API server started \
                 (apiserver_requested_deprecated_apis)",
                self.api_version(),
                self.kind
            ),
        }
    }
}

/// How a removal relates to the minor change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Removed at or before the target minor: `up` refuses.
    ByTarget,
    /// Removed in a minor after the target: a warning.
    Later,
    /// Removed before the minor the cluster runs: a stale trace (a last-applied configuration
    /// or request count of a version already gone), a warning.
    Already,
    /// Removed by the target minor, but every use is an object of rkers' own addon that the
    /// run deletes before the control plane changes.
    DeletedFirst,
}

/// One removal the cluster meets, with every use seen of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub when: When,
    pub removal: RemovedApi,
    pub uses: Vec<ApiUse>,
}

impl Finding {
    /// The finding as one line, the same in the dry run and the run.
    pub fn line(&self) -> String {
        let what = format!(
            "{} {} (removed in {})",
            self.removal.api_version(),
            self.removal.kind,
            self.removal.removed_in
        );
        let uses: Vec<String> = self.uses.iter().map(ApiUse::describe).collect();
        let prefix = match self.when {
            When::ByTarget => "removed by the target minor",
            When::Later => "removed in a later minor",
            When::Already => "already removed, stale uses",
            When::DeletedFirst => {
                return format!(
                    "removed by the target minor, deleted before the control plane changes: \
                     {what}: {}",
                    uses.join(", ")
                );
            }
        };
        format!(
            "{prefix}: {what}: {}; fix: {}",
            uses.join(", "),
            self.removal.remedy()
        )
    }
}

/// The findings of one minor change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// `vX.Y` the cluster runs and the one it moves to.
    pub from: String,
    pub to: String,
    /// Refusing ones first, then by removal minor.
    pub findings: Vec<Finding>,
}

impl Verdict {
    pub fn refuses(&self) -> bool {
        self.findings.iter().any(|f| f.when == When::ByTarget)
    }

    pub fn refusing(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.when == When::ByTarget)
    }
}

/// Decides what each use means for the move from minor `from` to minor `to` (both `(1, Y)`).
/// A request count the table has no row for is still a finding when the API server names its
/// removal release.
pub fn decide(from: (u64, u64), to: (u64, u64), uses: &[ApiUse], table: &RemovedApis) -> Verdict {
    // The objects the run deletes first: any other trace of them (the object listed, its
    // last-applied configuration) goes with them.
    let deleted: Vec<(&str, String)> = uses
        .iter()
        .filter(|u| matches!(u.seen, Seen::AddonLeftover { .. }))
        .filter_map(|u| Some((u.kind.as_str(), u.object()?)))
        .collect();
    let mut findings: Vec<Finding> = Vec::new();
    for u in uses {
        let Some(removal) = removal_of(u, table) else {
            continue;
        };
        let removed = removal.removed_minor();
        let goes_first = match &u.seen {
            Seen::AddonLeftover { .. } => true,
            Seen::Object { .. } | Seen::LastApplied { .. } => u
                .object()
                .is_some_and(|o| deleted.contains(&(u.kind.as_str(), o))),
            Seen::Manifest { .. } | Seen::Requests { .. } => false,
        };
        let when = if goes_first && removed > from.1 && removed <= to.1 {
            When::DeletedFirst
        } else if removed > to.1 {
            When::Later
        } else if removed <= from.1 && !matches!(u.seen, Seen::Manifest { .. }) {
            // A manifest `up` applies fails on any minor that does not serve it; other traces
            // of a version gone before this cluster's minor do not change with this move.
            When::Already
        } else {
            When::ByTarget
        };
        match findings
            .iter_mut()
            .find(|f| f.when == when && f.removal == removal)
        {
            Some(f) => {
                if !f.uses.contains(u) {
                    f.uses.push(u.clone());
                }
            }
            None => findings.push(Finding {
                when,
                removal,
                uses: vec![u.clone()],
            }),
        }
    }
    findings.sort_by_key(|f| (f.when, f.removal.removed_minor()));
    Verdict {
        from: format!("v{}.{}", from.0, from.1),
        to: format!("v{}.{}", to.0, to.1),
        findings,
    }
}

/// The deletions the run makes before the control plane changes: every object of rkers' own
/// addons whose API the target minor removes and whose new rendering leaves it out (the
/// findings [`When::DeletedFirst`]).
pub fn deletions(verdict: &Verdict) -> Vec<crate::diff::Action> {
    verdict
        .findings
        .iter()
        .filter(|f| f.when == When::DeletedFirst)
        .flat_map(|f| {
            f.uses.iter().filter_map(move |u| match &u.seen {
                Seen::AddonLeftover {
                    addon,
                    namespace,
                    name,
                } => Some(crate::diff::Action::DeleteObject {
                    api_version: u.api_version(),
                    kind: u.kind.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    reason: format!(
                        "{} stops serving {}; addon {addon}'s new rendering leaves it out",
                        f.removal.removed_in,
                        u.api_version()
                    ),
                }),
                _ => None,
            })
        })
        .collect()
}

fn removal_of(u: &ApiUse, table: &RemovedApis) -> Option<RemovedApi> {
    match &u.seen {
        Seen::Requests { removed_release } => table
            .by_resource(&u.group, &u.version, &u.kind)
            .cloned()
            .or_else(|| {
                let release = removed_release.as_deref().filter(|r| !r.is_empty())?;
                Some(RemovedApi {
                    removed_in: format!("v{}", release.trim_start_matches('v')),
                    group: u.group.clone(),
                    version: u.version.clone(),
                    kind: u.kind.clone(),
                    resource: u.kind.clone(),
                    replacement: None,
                    fix: Some(
                        "move the clients that request it to a version the target serves".into(),
                    ),
                    source: "the API server's apiserver_requested_deprecated_apis".into(),
                    scan_objects: false,
                })
            }),
        _ => table.by_kind(&u.api_version(), &u.kind).cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> &'static RemovedApis {
        RemovedApis::embedded()
    }

    fn use_of(api_version: &str, kind: &str, seen: Seen) -> ApiUse {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        ApiUse {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            seen,
        }
    }

    fn object(name: &str) -> Seen {
        Seen::Object {
            object: name.into(),
        }
    }

    fn last_applied(name: &str) -> Seen {
        Seen::LastApplied {
            object: name.into(),
        }
    }

    fn manifest(addon: &str, name: &str) -> Seen {
        Seen::Manifest {
            addon: addon.into(),
            object: name.into(),
        }
    }

    fn requests() -> Seen {
        Seen::Requests {
            removed_release: None,
        }
    }

    /// Found on a real v1.24 cluster going to v1.25: flannel's template before v1.25 makes a
    /// PodSecurityPolicy, v1.25's does not. rkers' own leftover is deleted first and refuses
    /// nothing (the object as listed included); the operator's own still refuses.
    #[test]
    fn an_addons_own_leftover_is_deleted_first_and_refuses_nothing() {
        let psp = "policy/v1beta1";
        let leftover = Seen::AddonLeftover {
            addon: "rke-network-plugin".into(),
            namespace: String::new(),
            name: "psp.flannel.unprivileged".into(),
        };
        let uses = vec![
            use_of(psp, "PodSecurityPolicy", leftover),
            use_of(psp, "PodSecurityPolicy", object("psp.flannel.unprivileged")),
        ];
        let verdict = decide((1, 24), (1, 25), &uses, table());
        assert!(!verdict.refuses(), "{verdict:?}");
        assert_eq!(verdict.findings.len(), 1, "{verdict:?}");
        assert_eq!(verdict.findings[0].when, When::DeletedFirst);
        assert!(
            verdict.findings[0]
                .line()
                .starts_with("removed by the target minor, deleted before the control plane"),
            "{}",
            verdict.findings[0].line()
        );
        assert_eq!(
            deletions(&verdict),
            vec![crate::diff::Action::DeleteObject {
                api_version: psp.into(),
                kind: "PodSecurityPolicy".into(),
                namespace: String::new(),
                name: "psp.flannel.unprivileged".into(),
                reason: "v1.25 stops serving policy/v1beta1; addon rke-network-plugin's new \
                         rendering leaves it out"
                    .into(),
            }]
        );

        let mut with_theirs = uses.clone();
        with_theirs.push(use_of(psp, "PodSecurityPolicy", object("restricted")));
        let verdict = decide((1, 24), (1, 25), &with_theirs, table());
        assert!(verdict.refuses());
        let refusing: Vec<String> = verdict.refusing().map(Finding::line).collect();
        assert!(
            refusing.len() == 1
                && refusing[0].contains("PodSecurityPolicy restricted")
                && !refusing[0].contains("psp.flannel.unprivileged"),
            "{refusing:?}"
        );
        assert_eq!(deletions(&verdict).len(), 1);

        // Not the target's removal (v1.23 to v1.24): an ordinary later warning, nothing deleted.
        let verdict = decide((1, 23), (1, 24), &uses, table());
        assert!(!verdict.refuses());
        assert!(deletions(&verdict).is_empty(), "{verdict:?}");
    }

    /// What the sandbox's v1.20 cluster holds in the end-to-end test.
    fn sandbox_uses() -> Vec<ApiUse> {
        vec![
            use_of("policy/v1beta1", "PodSecurityPolicy", object("restricted")),
            use_of(
                "extensions/v1beta1",
                "Ingress",
                last_applied("default/legacy"),
            ),
            use_of(
                "extensions/v1beta1",
                "ingresses",
                Seen::Requests {
                    removed_release: Some("1.22".into()),
                },
            ),
            use_of(
                "batch/v1beta1",
                "CronJob",
                manifest("user-addon", "default/tick"),
            ),
            use_of(
                "networking.k8s.io/v1",
                "Ingress",
                last_applied("default/new"),
            ),
            use_of(
                "apps/v1",
                "Deployment",
                manifest("user-addon", "default/web"),
            ),
        ]
    }

    /// (from, to, expected `(when, apiVersion kind)` in order).
    type Case = ((u64, u64), (u64, u64), Vec<(When, &'static str)>);

    #[test]
    fn removals_by_the_target_refuse_and_later_ones_warn() {
        let cases: Vec<Case> = vec![
            (
                (1, 20),
                (1, 21),
                vec![
                    (When::Later, "extensions/v1beta1 Ingress"),
                    (When::Later, "policy/v1beta1 PodSecurityPolicy"),
                    (When::Later, "batch/v1beta1 CronJob"),
                ],
            ),
            (
                (1, 21),
                (1, 22),
                vec![
                    (When::ByTarget, "extensions/v1beta1 Ingress"),
                    (When::Later, "policy/v1beta1 PodSecurityPolicy"),
                    (When::Later, "batch/v1beta1 CronJob"),
                ],
            ),
            (
                (1, 24),
                (1, 25),
                vec![
                    (When::ByTarget, "policy/v1beta1 PodSecurityPolicy"),
                    (When::ByTarget, "batch/v1beta1 CronJob"),
                    (When::Already, "extensions/v1beta1 Ingress"),
                ],
            ),
            (
                (1, 25),
                (1, 26),
                vec![
                    // The user addon would still be applied with a version the cluster no longer
                    // serves: that refuses on every minor after its removal.
                    (When::ByTarget, "batch/v1beta1 CronJob"),
                    (When::Already, "extensions/v1beta1 Ingress"),
                    (When::Already, "policy/v1beta1 PodSecurityPolicy"),
                ],
            ),
        ];
        for (from, to, want) in cases {
            let verdict = decide(from, to, &sandbox_uses(), table());
            let got: Vec<(When, String)> = verdict
                .findings
                .iter()
                .map(|f| {
                    (
                        f.when,
                        format!("{} {}", f.removal.api_version(), f.removal.kind),
                    )
                })
                .collect();
            let want: Vec<(When, String)> =
                want.into_iter().map(|(w, s)| (w, s.to_string())).collect();
            assert_eq!(got, want, "{from:?} → {to:?}");
            assert_eq!(
                verdict.refuses(),
                want.iter().any(|(w, _)| *w == When::ByTarget)
            );
        }
    }

    #[test]
    fn one_finding_names_every_use_of_its_removal() {
        let verdict = decide((1, 21), (1, 22), &sandbox_uses(), table());
        let ingress = verdict.refusing().next().unwrap();
        assert_eq!(ingress.uses.len(), 2, "{ingress:?}");
        let line = ingress.line();
        assert!(
            line.starts_with(
                "removed by the target minor: extensions/v1beta1 Ingress (removed in v1.22)"
            ),
            "{line}"
        );
        assert!(
            line.contains("Ingress default/legacy (its last-applied configuration)"),
            "{line}"
        );
        assert!(
            line.contains("requests to extensions/v1beta1 ingresses"),
            "{line}"
        );
        assert!(
            line.ends_with("fix: use networking.k8s.io/v1 Ingress"),
            "{line}"
        );
        let psp = &verdict.findings[1];
        assert!(
            psp.line().contains("PodSecurityPolicy restricted"),
            "{}",
            psp.line()
        );
        assert!(
            psp.line().contains("Pod Security Admission"),
            "{}",
            psp.line()
        );
    }

    #[test]
    fn flowcontrol_versions_go_at_their_own_minors() {
        let uses: Vec<ApiUse> = ["v1beta1", "v1beta2", "v1beta3"]
            .iter()
            .map(|v| {
                use_of(
                    &format!("flowcontrol.apiserver.k8s.io/{v}"),
                    "FlowSchema",
                    manifest("user-addon", "fs"),
                )
            })
            .collect();
        for (to, refusing) in [
            (25, 0),
            (26, 1),
            (28, 1),
            (29, 2),
            (31, 2),
            (32, 3),
            (33, 3),
        ] {
            let verdict = decide((1, to - 1), (1, to), &uses, table());
            assert_eq!(verdict.refusing().count(), refusing, "v1.{to}");
            assert_eq!(verdict.findings.len(), 3);
        }
    }

    #[test]
    fn request_counts_fall_back_to_the_api_servers_removal_release() {
        let unknown = use_of(
            "example.io/v1beta1",
            "widgets",
            Seen::Requests {
                removed_release: Some("1.23".into()),
            },
        );
        let verdict = decide((1, 22), (1, 23), std::slice::from_ref(&unknown), table());
        assert!(verdict.refuses());
        assert_eq!(verdict.findings[0].removal.removed_in, "v1.23");
        // Without a release label and a row, a request count says nothing.
        let silent = ApiUse {
            seen: requests(),
            ..unknown
        };
        assert!(
            decide((1, 22), (1, 23), &[silent], table())
                .findings
                .is_empty()
        );
        // Served versions are never findings.
        assert!(
            decide(
                (1, 20),
                (1, 21),
                &[use_of("apps/v1", "Deployment", requests())],
                table()
            )
            .findings
            .is_empty()
        );
    }
}
