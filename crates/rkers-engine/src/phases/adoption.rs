//! Adopting a cluster whose state rkers did not write (RKE1 built it, or ran last): the summary
//! `up` prints the first time it meets such a state (what it found, what it will change and
//! why), and the confirmation it needs before it acts.
//!
//! rkers marks the state files it writes ([`crate::state::StateFile::written_by_rkers`]); RKE1
//! drops the mark when it writes the file again, so a cluster RKE1 touched since is summarised
//! again.

use crate::diff::{Action, HostActions};
use serde::Serialize;

/// Asks the operator to confirm the adoption summary they were shown.
pub type ConfirmAdoption = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What `up` found and will do on a cluster it adopts.
#[derive(Clone, Debug, Serialize)]
pub struct Adoption {
    pub state_file: String,
    pub kubernetes_version: String,
    pub hosts: Vec<FoundHost>,
    pub changes: Vec<Change>,
}

/// One host as found: the RKE containers it runs.
#[derive(Clone, Debug, Serialize)]
pub struct FoundHost {
    pub host: String,
    pub containers: Vec<String>,
}

/// One action `up` will take, with why.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub host: String,
    pub action: String,
    pub reason: String,
    /// The action stops, restarts or recreates a container.
    pub restarts_container: bool,
}

impl Adoption {
    pub fn new(
        state_file: &std::path::Path,
        kubernetes_version: &str,
        hosts: Vec<FoundHost>,
        actions: &[HostActions],
    ) -> Self {
        let changes = actions
            .iter()
            .flat_map(|h| {
                h.actions.iter().map(|a| Change {
                    host: h.host.clone(),
                    action: first_line(&a.to_string()),
                    reason: reason(a),
                    restarts_container: restarts_container(a),
                })
            })
            .collect();
        Adoption {
            state_file: state_file.display().to_string(),
            kubernetes_version: kubernetes_version.to_string(),
            hosts,
            changes,
        }
    }

    pub fn restarts(&self) -> usize {
        self.changes.iter().filter(|c| c.restarts_container).count()
    }

    /// The summary as a person reads it before answering.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Adopting a cluster whose state rkers has not written before ({}; written by RKE1 \
             or by rkers before it marked its states).\n",
            self.state_file
        );
        out.push_str(&format!(
            "  found: Kubernetes {} on {} host{}\n",
            self.kubernetes_version,
            self.hosts.len(),
            if self.hosts.len() == 1 { "" } else { "s" }
        ));
        for h in &self.hosts {
            let containers = if h.containers.is_empty() {
                "no RKE containers".to_string()
            } else {
                h.containers.join(", ")
            };
            out.push_str(&format!("    {}: {containers}\n", h.host));
        }
        if self.changes.is_empty() {
            out.push_str("  changes: none; no container is restarted, no file is written\n");
            return out;
        }
        out.push_str(&format!(
            "  changes: {}, of which {} restart or recreate a container\n",
            self.changes.len(),
            self.restarts()
        ));
        for c in &self.changes {
            out.push_str(&format!(
                "    {}: {}\n      why: {}\n",
                c.host, c.action, c.reason
            ));
        }
        out
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

fn restarts_container(action: &Action) -> bool {
    matches!(
        action,
        Action::RecreateContainer { .. }
            | Action::RestartContainer { .. }
            | Action::RemoveContainer { .. }
    )
}

/// Why the action is needed, in the operator's terms: a default of newer RKE releases, the
/// config, or what the host lacks.
fn reason(action: &Action) -> String {
    match action {
        Action::RecreateContainer { changes, .. } => {
            let mut whys: Vec<&str> = changes.iter().filter_map(|c| c.why).collect();
            whys.dedup();
            let unexplained: Vec<String> = changes
                .iter()
                .filter(|c| c.why.is_none())
                .map(|c| c.to_string())
                .collect();
            if unexplained.is_empty() {
                whys.join("; ")
            } else {
                format!(
                    "cluster.yml (or its version's defaults) asks for: {}",
                    unexplained.join("; ")
                )
            }
        }
        Action::UploadFile { reason, .. } if reason.starts_with("new;") => {
            reason.trim_start_matches("new; ").to_string()
        }
        Action::UploadFile { reason, .. } if reason.starts_with("changed;") => {
            reason.trim_start_matches("changed; ").to_string()
        }
        Action::UploadFile { reason, .. } if reason == "new" => "missing on the host".into(),
        Action::UploadFile { .. } => "differs from the state's content".into(),
        Action::RemoveFile { reason, .. } => reason.clone(),
        Action::SetFileMode { .. } => "private keys are for root (or the etcd user) only".into(),
        Action::CreateContainer { .. } => "missing on the host".into(),
        Action::PullImage { .. } => "the image is not on the host".into(),
        Action::StartContainer { .. } => "stopped".into(),
        Action::RestartContainer { reason, .. } => reason.clone(),
        Action::RemoveContainer { reason, .. } => reason.clone(),
        other => first_line(&other.to_string()),
    }
}

/// The answer to "adopt this cluster?". `ask` is the interactive question, `None` when nobody
/// can answer (no terminal).
pub fn confirm(
    adoption: &Adoption,
    yes: bool,
    ask: Option<&(dyn Fn(&str) -> bool + Send + Sync)>,
) -> Result<(), AdoptionRefused> {
    if yes {
        return Ok(());
    }
    match ask {
        None => Err(AdoptionRefused::NoTerminal),
        Some(ask) if ask(&adoption.render()) => Ok(()),
        Some(_) => Err(AdoptionRefused::Declined),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AdoptionRefused {
    #[error(
        "this cluster's state was not written by rkers, and adopting it needs a confirmation, \
         but standard input is not a terminal: read the summary above (or run `rkers up \
         --dry-run`), then run `rkers up --yes`; nothing was changed"
    )]
    NoTerminal,
    #[error("adoption declined: nothing was changed")]
    Declined,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::FieldChange;

    fn actions() -> Vec<HostActions> {
        vec![HostActions {
            host: "10.0.0.1".into(),
            actions: vec![
                Action::RecreateContainer {
                    name: "kube-apiserver".into(),
                    changes: vec![FieldChange {
                        field: "entrypoint",
                        added: vec![
                            "--admission-control-config-file=/etc/kubernetes/admission.yaml".into(),
                        ],
                        removed: vec![],
                        why: Some("default of newer RKE releases: admission"),
                    }],
                    start: true,
                    spec: Box::default(),
                    until_node_ready: None,
                },
                Action::RemoveFile {
                    path: "/etc/kubernetes/ssl/kube-kubelet-10-0-0-2-key.pem".into(),
                    reason: "private key no container on this host reads".into(),
                },
            ],
        }]
    }

    #[test]
    fn every_change_carries_its_reason_and_restarts_are_counted() {
        let a = Adoption::new(
            std::path::Path::new("cluster.rkestate"),
            "v1.20.15-rancher2-2",
            vec![FoundHost {
                host: "10.0.0.1".into(),
                containers: vec!["etcd".into(), "kube-apiserver".into()],
            }],
            &actions(),
        );
        assert_eq!(a.restarts(), 1);
        assert_eq!(
            a.changes[0].reason,
            "default of newer RKE releases: admission"
        );
        assert_eq!(
            a.changes[1].reason,
            "private key no container on this host reads"
        );
        let text = a.render();
        assert!(text.contains("changes: 2, of which 1 restart"), "{text}");
        assert!(text.contains("10.0.0.1: etcd, kube-apiserver"), "{text}");
    }

    #[test]
    fn a_config_change_is_named_as_such() {
        let action = Action::RecreateContainer {
            name: "kubelet".into(),
            changes: vec![FieldChange {
                field: "entrypoint",
                added: vec!["--v=4".into()],
                removed: vec!["--v=2".into()],
                why: None,
            }],
            start: true,
            spec: Box::default(),
            until_node_ready: None,
        };
        assert!(reason(&action).starts_with("cluster.yml"));
    }

    #[test]
    fn without_a_terminal_only_yes_adopts() {
        let a = Adoption::new(std::path::Path::new("s"), "v1", vec![], &[]);
        assert!(matches!(
            confirm(&a, false, None),
            Err(AdoptionRefused::NoTerminal)
        ));
        assert!(confirm(&a, true, None).is_ok());
        let no = |_: &str| false;
        assert!(matches!(
            confirm(&a, false, Some(&no)),
            Err(AdoptionRefused::Declined)
        ));
        let yes = |_: &str| true;
        assert!(confirm(&a, false, Some(&yes)).is_ok());
    }
}
