//! The cluster checks `doctor` reports and the commands run before changing anything: the three
//! CNI incidents of `incidents.md` (calico's runtime directory, flannel's NAT chain, admission
//! webhooks that keep the CNI from starting), CNI readiness, and the probe containers that read
//! and repair a host. They sit below both `doctor` (which renders and fixes what they find) and
//! the commands (`up`, `cert rotate`), which call [`guard`] so that neither imports the other.

pub mod calico;
pub mod cni;
pub mod flannel;
pub mod guard;
pub mod probe;
pub mod selector;
pub mod webhooks;

use serde::Serialize;

/// How bad a finding is. Ordered so that sorting descending puts the worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        })
    }
}

/// One result of one check on one node (or on the cluster).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Machine name of the check, e.g. `calico-runtime`, `flannel-nat`, `webhook`.
    pub check: String,
    pub status: Status,
    /// The node it concerns (node name, as Kubernetes knows it), `None` for the cluster.
    pub node: Option<String>,
    /// One line saying what was found.
    pub summary: String,
    /// What was read: file modes, iptables lines, webhook rules, pod states, log lines.
    pub evidence: Vec<String>,
    /// Commands (or the rkers command) that repair it; empty when nothing is to be done.
    pub fix: Vec<String>,
}

impl Finding {
    pub fn new(
        check: &str,
        status: Status,
        node: Option<&str>,
        summary: impl Into<String>,
    ) -> Self {
        Finding {
            check: check.to_string(),
            status,
            node: node.map(str::to_string),
            summary: summary.into(),
            evidence: Vec::new(),
            fix: Vec::new(),
        }
    }

    pub fn ok(check: &str, node: Option<&str>, summary: impl Into<String>) -> Self {
        Self::new(check, Status::Ok, node, summary)
    }

    pub fn evidence(mut self, lines: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.evidence.extend(lines.into_iter().map(Into::into));
        self
    }

    pub fn fix(mut self, lines: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fix.extend(lines.into_iter().map(Into::into));
        self
    }
}

// In `output`, below `hosts`, so the container errors of `hosts` can quote it too without an
// import circle.
pub use crate::output::last_lines;
