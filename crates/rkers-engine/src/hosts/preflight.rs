//! `rkers preflight`: connect to every host and report per host SSH (method, host key),
//! Docker (version, API range, OS, cgroup driver, SELinux, whether the cluster's runtime can
//! drive it) and RKE1's port checks between roles. Also the first phase of `up`: on success the
//! opened [`HostPool`] is handed back for the rest of the run.

use serde::Serialize;

use super::facts::{HostFacts, docker_api_check};
use super::pool::{HostAttempt, HostPool};
use super::ports::{PortCheckFailure, PortCheckPlan, check_cluster_ports};
use super::ssh::HostKeyVerdict;
use super::target::{SshOptions, SshTarget};
use crate::metadata::docker_api::{DockerApiCheck, RuntimeClient, Verdict};

/// What to check besides reachability.
#[derive(Clone, Debug, Default)]
pub struct PreflightOptions {
    /// The cluster's container runtime, whose Engine API each host's Docker is checked
    /// against; `None` checks nothing.
    pub runtime: Option<RuntimeClient>,
    /// `ignore_docker_version` from cluster.yml (or the flag, when given).
    pub ignore_docker_version: bool,
    /// Port checks between roles; `None` skips them.
    pub port_checks: Option<PortCheckPlan>,
    /// The cluster's Kubernetes version when its kubelet refuses cgroup v1 hosts.
    pub refuse_cgroup_v1: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SshReport {
    pub ok: bool,
    /// `address:port` dialled.
    pub address: Option<String>,
    pub user: Option<String>,
    pub method: Option<String>,
    pub host_key: Option<HostKeyVerdict>,
    pub host_key_fingerprint: Option<String>,
    pub via_bastion: Option<String>,
    /// The server's identification string (Win32-OpenSSH selects the Windows Docker transport).
    pub server_id: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DockerReport {
    #[serde(flatten)]
    pub facts: HostFacts,
    /// Whether the cluster's runtime and this Docker share an Engine API version.
    pub api_check: Option<DockerApiCheck>,
    /// Set when a fallback transport is in use.
    pub transport_note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    pub host: String,
    pub ssh: SshReport,
    pub docker: Option<DockerReport>,
    /// Machine-readable kind of the blocking problem (`auth-failed`, ...).
    pub problem_kind: Option<String>,
    /// Blocking problems; a host with any is not usable.
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

impl HostReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PortCheckReport {
    pub ran: bool,
    pub skipped_reason: Option<String>,
    pub failures: Vec<PortCheckFailure>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PreflightReport {
    pub hosts: Vec<HostReport>,
    pub port_checks: PortCheckReport,
}

impl PreflightReport {
    /// No host has a problem and the port checks found nothing.
    pub fn ok(&self) -> bool {
        self.hosts.iter().all(HostReport::ok)
            && self.port_checks.failures.is_empty()
            && self.port_checks.error.is_none()
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.insert("ok".into(), serde_json::Value::Bool(self.ok()));
        }
        v
    }

    /// A table for terminals, followed by each problem and warning in full.
    pub fn render_table(&self) -> String {
        let header = [
            "HOST",
            "SSH",
            "HOST KEY",
            "DOCKER",
            "TRANSPORT",
            "API",
            "OS",
            "CGROUP",
            "SELINUX",
            "VERDICT",
        ];
        let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
        for h in &self.hosts {
            let ssh = if h.ssh.ok {
                h.ssh
                    .method
                    .as_deref()
                    .map(short_method)
                    .unwrap_or("ok")
                    .to_owned()
            } else {
                "FAILED".into()
            };
            let key = h
                .ssh
                .host_key
                .as_ref()
                .map(|k| match k {
                    HostKeyVerdict::Known => "known",
                    HostKeyVerdict::Recorded => "recorded",
                    HostKeyVerdict::AcceptedNotRecorded => "new, not recorded",
                    HostKeyVerdict::NotChecked => "not checked",
                })
                .unwrap_or("-")
                .to_owned();
            let (ver, transport, api, os, cg, se) = match &h.docker {
                Some(d) => (
                    d.facts.docker_version.clone(),
                    d.facts.transport.to_string(),
                    engine_api_range(&d.facts),
                    d.facts.operating_system.clone(),
                    format!("{} v{}", d.facts.cgroup_driver, d.facts.cgroup_version),
                    if d.facts.selinux {
                        "enabled"
                    } else {
                        "disabled"
                    }
                    .to_owned(),
                ),
                None => (
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ),
            };
            let verdict = if !h.ok() {
                "PROBLEM"
            } else if !h.warnings.is_empty() {
                "ok (warnings)"
            } else {
                "ok"
            };
            rows.push(vec![
                h.host.clone(),
                ssh,
                key,
                ver,
                transport,
                api,
                os,
                cg,
                se,
                verdict.into(),
            ]);
        }
        let widths: Vec<usize> = (0..header.len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for r in &rows {
            let line: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        for h in &self.hosts {
            if let Some(c) = h.docker.as_ref().and_then(|d| d.api_check.as_ref()) {
                out.push_str(&format!("\nDocker API {}: {}", h.host, api_check_line(c)));
            }
        }
        for h in &self.hosts {
            for p in &h.problems {
                out.push_str(&format!("\nPROBLEM {p}"));
            }
            for w in &h.warnings {
                out.push_str(&format!("\nwarning host {}: {w}", h.host));
            }
        }
        let pc = &self.port_checks;
        out.push_str("\n\nPort checks: ");
        if let Some(reason) = &pc.skipped_reason {
            out.push_str(&format!("skipped ({reason})"));
        } else if let Some(e) = &pc.error {
            out.push_str(&format!("could not run: {e}"));
        } else if pc.failures.is_empty() {
            out.push_str("all ports reachable");
        } else {
            for f in &pc.failures {
                out.push_str(&format!("\nPROBLEM {f}"));
            }
        }
        out.push('\n');
        out
    }
}

/// `1.12-1.41`: the API versions a daemon accepts (only the newest when it does not say).
fn engine_api_range(f: &HostFacts) -> String {
    match (
        f.engine_min_api_version.as_str(),
        f.engine_api_version.as_str(),
    ) {
        ("", "") => f.api_version.clone(),
        ("", max) => max.to_owned(),
        (min, max) => format!("{min}-{max}"),
    }
}

/// One line of the API check: who speaks what, and the outcome.
fn api_check_line(c: &DockerApiCheck) -> String {
    let speaks = c
        .runtime_api
        .map_or(String::new(), |v| format!(" speaks ≤ {v}"));
    match &c.verdict {
        Verdict::Works => format!(
            "{}{speaks}: works at {}",
            c.runtime,
            c.spoken_api.map(|v| v.to_string()).unwrap_or_default()
        ),
        Verdict::Refused { reason, .. } => format!("refused: {reason}"),
        Verdict::Ignored { reason, .. } => format!("ignored: {reason}"),
        Verdict::Unknown { note } => format!("not checked: {note}"),
    }
}

fn short_method(m: &str) -> &str {
    if m.starts_with("ssh-agent") {
        "agent"
    } else if m.contains("with certificate") {
        "certificate"
    } else {
        "key"
    }
}

pub fn host_report(a: &HostAttempt, opts: &PreflightOptions) -> HostReport {
    let ssh = match (&a.ssh, &a.link) {
        // A plugged link: reached, with none of SSH's facts.
        (None, Some(l)) => SshReport {
            ok: true,
            address: Some(l.addr().to_owned()),
            user: Some(l.user().to_owned()),
            method: None,
            host_key: None,
            host_key_fingerprint: None,
            via_bastion: None,
            server_id: None,
        },
        (Some(s), _) => SshReport {
            ok: true,
            address: Some(s.addr().to_owned()),
            user: Some(s.user().to_owned()),
            method: Some(s.auth_method().to_owned()),
            host_key: Some(s.host_key_verdict().clone()),
            host_key_fingerprint: Some(s.host_key_fingerprint().to_owned())
                .filter(|f| !f.is_empty()),
            via_bastion: s.via_bastion().map(str::to_owned),
            server_id: Some(s.server_id().to_owned()).filter(|i| !i.is_empty()),
        },
        (None, None) => SshReport {
            ok: false,
            address: None,
            user: None,
            method: None,
            host_key: None,
            host_key_fingerprint: None,
            via_bastion: None,
            server_id: None,
        },
    };
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut problem_kind = None;
    if let Some(e) = &a.error {
        problems.push(e.to_string());
        problem_kind = Some(e.kind().to_owned());
    }
    let docker = match (&a.docker, &a.facts) {
        (Some(d), Some(f)) => {
            let api_check = opts.runtime.as_ref().map(|runtime| {
                let (check, refusal) =
                    docker_api_check(&a.target.name, f, runtime, opts.ignore_docker_version);
                if let Some(e) = refusal {
                    problem_kind.get_or_insert_with(|| e.kind().to_owned());
                    problems.push(e.to_string());
                }
                warnings.extend(check.all_warnings());
                check
            });
            if let Some(version) = &opts.refuse_cgroup_v1
                && let Some(e) = super::facts::cgroup_v1_check(&a.target.name, f, true, version)
            {
                problem_kind.get_or_insert_with(|| e.kind().to_owned());
                problems.push(e.to_string());
            }
            if let Some(n) = d.transport_note() {
                warnings.push(n.to_owned());
            }
            if f.os_type != "linux" && f.os_type != "windows" {
                warnings.push(format!(
                    "OS type {} is not supported (Linux, and Windows for workers)",
                    f.os_type
                ));
            }
            Some(DockerReport {
                facts: f.clone(),
                api_check,
                transport_note: d.transport_note().map(str::to_owned),
            })
        }
        _ => None,
    };
    HostReport {
        host: a.target.name.clone(),
        ssh,
        docker,
        problem_kind,
        problems,
        warnings,
    }
}

/// Connects to every host, checks it, and runs the port checks when every host is usable.
/// Returns the report and, when every host is usable, the open pool.
pub async fn run(
    targets: &[SshTarget],
    options: &SshOptions,
    opts: &PreflightOptions,
) -> (PreflightReport, Option<HostPool>) {
    let attempts = HostPool::connect_each(targets, options).await;
    let hosts: Vec<HostReport> = attempts.iter().map(|a| host_report(a, opts)).collect();
    let all_ok = hosts.iter().all(HostReport::ok);
    let mut port_checks = PortCheckReport {
        ran: false,
        skipped_reason: None,
        failures: Vec::new(),
        error: None,
    };
    if !all_ok {
        port_checks.skipped_reason = Some("not every host is usable".into());
        // Close what was opened; nothing else runs.
        let _ = HostPool::from_attempts(attempts, options.concurrency).await;
        return (PreflightReport { hosts, port_checks }, None);
    }
    let pool = match HostPool::from_attempts(attempts, options.concurrency).await {
        Ok(p) => p,
        Err(problems) => {
            port_checks.error = Some(problems.to_string());
            return (PreflightReport { hosts, port_checks }, None);
        }
    };
    match &opts.port_checks {
        None => port_checks.skipped_reason = Some("not requested".into()),
        Some(plan) => {
            port_checks.ran = true;
            match check_cluster_ports(&pool, plan).await {
                Ok(f) => port_checks.failures = f,
                Err(e) => port_checks.error = Some(e.to_string()),
            }
        }
    }
    (PreflightReport { hosts, port_checks }, Some(pool))
}

/// The problems of a report, as the error `preflight` fails with.
pub fn problems(report: &PreflightReport) -> PreflightFailed {
    PreflightFailed {
        problems: report
            .hosts
            .iter()
            .flat_map(|h| h.problems.iter().map(|p| (Some(h.host.clone()), p.clone())))
            .chain(
                report
                    .port_checks
                    .failures
                    .iter()
                    .map(|f| (Some(f.host.clone()), f.to_string())),
            )
            .chain(report.port_checks.error.iter().map(|e| (None, e.clone())))
            .collect(),
    }
}

/// The problems a preflight found, each with its host (`None` for a port check round that
/// failed as a whole), one per line.
#[derive(Debug, thiserror::Error)]
#[error("{}", .problems.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>().join("\n"))]
pub struct PreflightFailed {
    pub problems: Vec<(Option<String>, String)>,
}

impl crate::error::HostContext for PreflightFailed {
    fn hosts(&self) -> Vec<&str> {
        self.problems
            .iter()
            .filter_map(|(h, _)| h.as_deref())
            .collect()
    }
}
