//! `rkers doctor`: a read-only health report of a running cluster, aimed at the three CNI
//! incidents of `incidents.md` (calico's runtime directory after a reboot, flannel's outbound
//! NAT chain, admission webhooks that keep the CNI from starting) plus the basics an on-call
//! engineer checks first (SSH and Docker, RKE containers, certificates, etcd, node conditions).
//!
//! Every check yields [`Finding`]s: a status, the node it concerns, the evidence it read and the
//! fix as commands. `--fix CHECK` applies the safe fixes (see [`fix`]); `up` runs the same
//! checks, from [`crate::checks`], to prevent the incidents.

pub mod basics;
pub mod fix;
pub mod run;

// The checks live below both `doctor` and the commands that run them before changing anything.
pub use crate::checks::{
    Finding, Status, calico, cni, flannel, guard, last_lines, probe, selector, webhooks,
};

pub use run::{DoctorOptions, run_doctor};

use serde::Serialize;

/// Everything one `doctor` run found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

/// A report with failures: each failed check with the node it concerns (`None` for the
/// cluster). The report itself, printed before, says what was found and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error(
    "doctor found {} failure{}: {}",
    .failed.len(),
    if .failed.len() == 1 { "" } else { "s" },
    .failed.iter().map(|(node, check)| match node {
        Some(n) => format!("{check} on {n}"),
        None => check.clone(),
    }).collect::<Vec<_>>().join(", ")
)]
pub struct DoctorFailed {
    pub failed: Vec<(Option<String>, String)>,
}

impl crate::error::HostContext for DoctorFailed {
    fn hosts(&self) -> Vec<&str> {
        self.failed
            .iter()
            .filter_map(|(n, _)| n.as_deref())
            .collect()
    }
}

/// Counts per status, as the summary line and the JSON `summary` object show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
}

impl Report {
    pub fn push(&mut self, f: Finding) {
        self.findings.push(f);
    }

    pub fn extend(&mut self, f: impl IntoIterator<Item = Finding>) {
        self.findings.extend(f);
    }

    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for f in &self.findings {
            match f.status {
                Status::Ok => s.ok += 1,
                Status::Warn => s.warn += 1,
                Status::Fail => s.fail += 1,
            }
        }
        s
    }

    /// The failures, as the error the command ends with; `None` when there is none.
    pub fn failed(&self) -> Option<DoctorFailed> {
        let failed: Vec<(Option<String>, String)> = self
            .findings
            .iter()
            .filter(|f| f.status == Status::Fail)
            .map(|f| (f.node.clone(), f.check.clone()))
            .collect();
        (!failed.is_empty()).then_some(DoctorFailed { failed })
    }

    /// 0 without a failure, 1 with one (warnings do not fail the command).
    pub fn exit_code(&self) -> u8 {
        u8::from(self.summary().fail > 0)
    }

    /// Worst first; within a status by check, then node, so related findings stay together.
    pub fn sorted(&self) -> Vec<&Finding> {
        let mut v: Vec<&Finding> = self.findings.iter().collect();
        v.sort_by(|a, b| {
            b.status
                .cmp(&a.status)
                .then_with(|| a.check.cmp(&b.check))
                .then_with(|| a.node.cmp(&b.node))
        });
        v
    }

    /// The text a person reads: one line per finding, worst first; under a finding that is not
    /// ok its evidence and fix; a one-line summary at the end.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for f in self.sorted() {
            out.push_str(&format!(
                "{:<4}  {:<16}  {:<14}  {}\n",
                f.status.to_string(),
                f.check,
                f.node.as_deref().unwrap_or("cluster"),
                f.summary
            ));
            if f.status == Status::Ok {
                continue;
            }
            for e in &f.evidence {
                for (i, line) in e.lines().enumerate() {
                    let lead = if i == 0 { "      | " } else { "      |   " };
                    out.push_str(&format!("{lead}{line}\n"));
                }
            }
            for fx in &f.fix {
                out.push_str(&format!("      fix: {fx}\n"));
            }
        }
        let s = self.summary();
        out.push_str(&format!(
            "doctor: {} failure{}, {} warning{}, {} ok{}\n",
            s.fail,
            if s.fail == 1 { "" } else { "s" },
            s.warn,
            if s.warn == 1 { "" } else { "s" },
            s.ok,
            if s.fail > 0 { " (exit 1)" } else { "" }
        ));
        out
    }

    /// The JSON tools read (schema in the README): `findings` worst first, `summary`, `exit_code`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "findings": self.sorted(),
            "summary": self.summary(),
            "exit_code": self.exit_code(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_first_with_fix_under_it_and_a_summary() {
        let mut r = Report::default();
        r.push(Finding::ok("ssh", Some("host1"), "reachable"));
        r.push(
            Finding::new("calico-runtime", Status::Fail, Some("host2"), "bad mode")
                .evidence(["/var/run/calico 700 root:root"])
                .fix(["rkers doctor --fix calico-runtime"]),
        );
        r.push(Finding::new(
            "flannel-image",
            Status::Warn,
            None,
            "old flannel",
        ));
        let text = r.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("FAIL") && lines[0].contains("host2"),
            "{text}"
        );
        assert_eq!(lines[1], "      | /var/run/calico 700 root:root");
        assert_eq!(lines[2], "      fix: rkers doctor --fix calico-runtime");
        assert!(lines[3].starts_with("warn") && lines[3].contains("cluster"));
        assert!(lines[4].starts_with("ok"));
        assert_eq!(
            lines.last().unwrap(),
            &"doctor: 1 failure, 1 warning, 1 ok (exit 1)"
        );
        assert_eq!(r.exit_code(), 1);
        let j = r.to_json();
        assert_eq!(j["summary"]["fail"], 1);
        assert_eq!(j["findings"][0]["status"], "fail");
        assert_eq!(j["findings"][0]["node"], "host2");
        assert_eq!(j["findings"][2]["status"], "ok");
        assert_eq!(j["exit_code"], 1);
    }

    #[test]
    fn warnings_alone_exit_zero() {
        let mut r = Report::default();
        r.push(Finding::new(
            "certificate",
            Status::Warn,
            Some("h"),
            "expires soon",
        ));
        assert_eq!(r.exit_code(), 0);
        assert!(
            r.render_text()
                .ends_with("doctor: 0 failures, 1 warning, 0 ok\n")
        );
    }
}
