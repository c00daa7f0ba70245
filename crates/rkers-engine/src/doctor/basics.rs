//! The checks an on-call engineer makes first: SSH and Docker per host (preflight's connection
//! report), RKE's containers per host with their last log lines when unhealthy, certificate
//! expiry, etcd's health, leader, alarms and database size, and the nodes' Ready conditions.

use super::{Finding, Status, last_lines};
use crate::config::RkeConfig;
use crate::hosts::{Host, HostAttempt};
use crate::phases::certs::{CertExpiry, deployed_expiry};
use crate::plan;
use k8s_openapi::api::core::v1::Node;
use std::sync::Arc;
use time::OffsetDateTime;

/// Warn this many days before a certificate expires.
pub const CERT_WARN_DAYS: i64 = 30;
/// etcd's default `--quota-backend-bytes`.
pub const ETCD_DEFAULT_QUOTA: u64 = 2 * 1024 * 1024 * 1024;

/// The node name of a config node (what Kubernetes calls it).
pub fn node_name(c: &RkeConfig, address: &str) -> String {
    c.nodes
        .iter()
        .find(|n| n.address == address)
        .map(|n| {
            if n.hostname_override.is_empty() {
                n.address.to_lowercase()
            } else {
                n.hostname_override.to_lowercase()
            }
        })
        .unwrap_or_else(|| address.to_string())
}

fn roles(c: &RkeConfig, address: &str) -> Vec<String> {
    c.nodes
        .iter()
        .find(|n| n.address == address)
        .map(|n| n.role.clone())
        .unwrap_or_default()
}

/// SSH and Docker of one host, from the connection attempt.
pub fn connection(c: &RkeConfig, a: &HostAttempt) -> Finding {
    let node = node_name(c, &a.target.name);
    let report = crate::hosts::preflight::host_report(a, &Default::default());
    if !report.ok() {
        return Finding::new("ssh-docker", Status::Fail, Some(&node), report.problems.join("; "))
            .evidence([format!("host {}", a.target.name)])
            .fix([format!("rkers preflight --config <cluster.yml>   (details per host; then repair SSH or Docker on {})", a.target.name)]);
    }
    let docker = report
        .docker
        .as_ref()
        .map(|d| format!("Docker {} ({})", d.facts.docker_version, d.facts.transport))
        .unwrap_or_default();
    Finding::ok(
        "ssh-docker",
        Some(&node),
        format!(
            "SSH as {} ok, {docker}",
            report.ssh.user.as_deref().unwrap_or("?")
        ),
    )
}

/// The containers a host runs for its roles.
pub fn expected_containers(roles: &[String]) -> Vec<&'static str> {
    let has = |r: &str| roles.iter().any(|x| x == r);
    let mut v = Vec::new();
    if has("etcd") {
        v.push(plan::ETCD);
    }
    if has("controlplane") {
        v.extend([
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
        ]);
    } else if !roles.is_empty() {
        v.push(plan::NGINX_PROXY);
    }
    if has("controlplane") || has("worker") || has("etcd") {
        v.extend([plan::KUBELET, plan::KUBE_PROXY]);
    }
    v
}

/// A container that was restarted at least this often and last started within
/// [`CRASH_LOOP_WINDOW`] is crash-looping: Docker's restart backoff (100 ms doubling to a minute)
/// brings a container that exits at once there within seconds.
pub const CRASH_LOOP_RESTARTS: i64 = 3;
pub const CRASH_LOOP_WINDOW: time::Duration = time::Duration::minutes(10);
/// Restarts while the cluster comes up are not a crash loop: kube-controller-manager v1.35 exits
/// until kube-apiserver has bootstrapped its RBAC roles, and restarted 3 times in its first 4 s on
/// a fresh cluster here. A container whose last start came within this long of its creation and
/// that has run since for [`SETTLED`] restarted only while starting.
pub const START_UP: time::Duration = time::Duration::seconds(60);
pub const SETTLED: time::Duration = time::Duration::seconds(30);

/// What one RKE container's state says: `Ok` with a summary, or a status and the problem.
/// `service-sidekick` only lends its volumes: it never runs.
pub fn container_state(
    name: &str,
    o: &crate::hosts::ObservedContainer,
    now: OffsetDateTime,
) -> (Status, String) {
    let restarts = o.restart_count;
    if name == plan::SERVICE_SIDEKICK {
        return (Status::Ok, format!("{name} present ({})", o.status));
    }
    if o.restarting {
        return (
            Status::Fail,
            format!(
                "{name} is restarting (last exit {}, {restarts} restarts)",
                o.exit_code.unwrap_or(-1)
            ),
        );
    }
    if !o.running {
        return (
            Status::Fail,
            format!(
                "{name} is {} (exit {})",
                o.status,
                o.exit_code.unwrap_or(-1)
            ),
        );
    }
    let parse = |t: Option<&str>| {
        t.and_then(|t| {
            OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        })
    };
    let started = parse(o.started_at.as_deref());
    let up_for = started.map(|started| now - started);
    let only_while_starting = match (parse(o.created_at.as_deref()), started, up_for) {
        (Some(created), Some(started), Some(up)) => started - created < START_UP && up >= SETTLED,
        _ => false,
    };
    match up_for {
        Some(up) if restarts >= CRASH_LOOP_RESTARTS && only_while_starting => (
            Status::Ok,
            format!(
                "{name} running for {}s (restarted {restarts} times while starting)",
                up.whole_seconds()
            ),
        ),
        Some(up) if restarts >= CRASH_LOOP_RESTARTS && up < CRASH_LOOP_WINDOW => (
            Status::Fail,
            format!(
                "{name} is crash-looping: restarted {restarts} times, last start {}s ago",
                up.whole_seconds()
            ),
        ),
        _ if restarts >= CRASH_LOOP_RESTARTS => (
            Status::Warn,
            format!("{name} running, but restarted {restarts} times"),
        ),
        _ if restarts > 0 => (Status::Ok, format!("{name} running ({restarts} restarts)")),
        _ => (Status::Ok, format!("{name} running")),
    }
}

/// Each RKE container of one host: running, restarting, crash-looping or exited, with its last
/// log lines when it is not healthy.
pub async fn containers(c: &RkeConfig, host: &Arc<Host>) -> Vec<Finding> {
    let node = node_name(c, host.name());
    let roles = roles(c, host.name());
    let mut names = expected_containers(&roles);
    if roles.iter().any(|r| r == "etcd") && c.services.etcd.snapshot == Some(true) {
        names.insert(1, plan::ETCD_ROLLING_SNAPSHOTS);
    }
    if !roles.is_empty() {
        names.push(plan::SERVICE_SIDEKICK);
    }
    let now = OffsetDateTime::now_utc();
    let mut out = Vec::new();
    for name in names {
        let docker = host.docker();
        match docker.inspect_container(name).await {
            Err(e) => out.push(Finding::new(
                "container",
                Status::Fail,
                Some(&node),
                format!("{name}: cannot inspect: {e}"),
            )),
            Ok(None) => out.push(
                Finding::new(
                    "container",
                    Status::Fail,
                    Some(&node),
                    format!("{name} is missing"),
                )
                .fix(["rkers up --config <cluster.yml>   (creates it again)"]),
            ),
            Ok(Some(o)) => {
                let (status, summary) = container_state(name, &o, now);
                if status == Status::Ok {
                    out.push(Finding::ok("container", Some(&node), summary));
                    continue;
                }
                let logs = docker.logs(name, 10).await.unwrap_or_default();
                let mut evidence = vec![format!(
                    "docker inspect {name}: {} (exit {}), {} restarts, started {}, image {}",
                    o.status,
                    o.exit_code.unwrap_or(-1),
                    o.restart_count,
                    o.started_at.as_deref().unwrap_or("never"),
                    o.image
                )];
                evidence.extend(
                    last_lines(&logs, 5)
                        .into_iter()
                        .map(|l| format!("log: {l}")),
                );
                out.push(
                    Finding::new("container", status, Some(&node), summary)
                        .evidence(evidence)
                        .fix([
                            format!("docker logs --tail 50 {name}   (on {})", host.name()),
                            "rkers up --config <cluster.yml>   (recreates it when its config drifted)"
                                .to_string(),
                        ]),
                );
            }
        }
    }
    out
}

/// How often `etcd-rolling-snapshots` takes a snapshot: `backup_config.interval_hours`, else
/// RKE1's older `services.etcd.creation` (a Go duration such as `12h`).
pub fn snapshot_interval(c: &RkeConfig) -> Option<time::Duration> {
    let etcd = &c.services.etcd;
    match &etcd.backup_config {
        Some(b) if b.interval_hours > 0 => Some(time::Duration::hours(b.interval_hours)),
        Some(_) => None,
        None => humantime::parse_duration(&etcd.creation)
            .ok()
            .and_then(|d| time::Duration::try_from(d).ok())
            .filter(|d| d.is_positive()),
    }
}

/// The newest rolling snapshot's age against the interval: a warning past one interval and a
/// half, a failure past two (snapshots stopped). Without any snapshot, a failure once the
/// helper has run for two intervals. `newest` and `started` are times on the host's clock,
/// like `now`.
pub fn snapshot_finding(
    node: &str,
    interval: time::Duration,
    now: OffsetDateTime,
    newest: Option<(OffsetDateTime, &str)>,
    started: Option<OffsetDateTime>,
) -> Finding {
    let hours = |d: time::Duration| format!("{:.1}h", d.as_seconds_f64() / 3600.0);
    let fix = [
        format!(
            "docker logs --tail 50 {}   (on the node)",
            plan::ETCD_ROLLING_SNAPSHOTS
        ),
        "rkers etcd snapshot-save --config <cluster.yml>   (one now)".to_string(),
    ];
    let Some((taken, file)) = newest else {
        let running_for = started.map(|s| now - s).unwrap_or_default();
        if running_for > interval * 2 {
            return Finding::new(
                "etcd-snapshot",
                Status::Fail,
                Some(node),
                format!(
                    "no rolling snapshot in {}, although {} runs for {} with an interval of {}",
                    crate::phases::etcd_snapshot::SNAPSHOT_DIR,
                    plan::ETCD_ROLLING_SNAPSHOTS,
                    hours(running_for),
                    hours(interval)
                ),
            )
            .fix(fix);
        }
        return Finding::ok(
            "etcd-snapshot",
            Some(node),
            format!("no rolling snapshot yet (interval {})", hours(interval)),
        );
    };
    let age = now - taken;
    let status = if age > interval * 2 {
        Status::Fail
    } else if age > interval * 3 / 2 {
        Status::Warn
    } else {
        Status::Ok
    };
    let summary = format!(
        "newest rolling snapshot {file} is {} old (interval {})",
        hours(age),
        hours(interval)
    );
    match status {
        Status::Ok => Finding::ok("etcd-snapshot", Some(node), summary),
        _ => Finding::new("etcd-snapshot", status, Some(node), summary).fix(fix),
    }
}

/// The rolling snapshots' times on an etcd host, read over SSH with the host's clock: the
/// host's `now`, then `<mtime> <file>` per rolling snapshot (`*_etcd.zip`).
pub async fn etcd_snapshots(c: &RkeConfig, host: &Arc<Host>) -> Option<Finding> {
    let interval = snapshot_interval(c)?;
    let node = node_name(c, host.name());
    let script = format!(
        "date +%s; for f in {}/*_etcd.zip; do [ -f \"$f\" ] && echo \"$(date -r \"$f\" +%s) ${{f##*/}}\"; done; true",
        crate::phases::etcd_snapshot::SNAPSHOT_DIR
    );
    let read = host.link().exec(&script).await;
    let output = match read {
        Ok(o) if o.success() => o.stdout_str(),
        Ok(o) => {
            return Some(Finding::new(
                "etcd-snapshot",
                Status::Warn,
                Some(&node),
                format!(
                    "cannot list the snapshots: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            ));
        }
        Err(e) => {
            return Some(Finding::new(
                "etcd-snapshot",
                Status::Warn,
                Some(&node),
                format!("cannot list the snapshots: {e}"),
            ));
        }
    };
    let at = |epoch: &str| {
        epoch
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|e| OffsetDateTime::from_unix_timestamp(e).ok())
    };
    let mut lines = output.lines();
    let now = lines.next().and_then(at)?;
    let newest = lines
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(t, f)| Some((at(t)?, f)))
        .max_by_key(|(t, _)| *t);
    let started = match host
        .docker()
        .inspect_container(plan::ETCD_ROLLING_SNAPSHOTS)
        .await
    {
        Ok(Some(o)) => o.started_at.as_deref().and_then(|t| {
            OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        }),
        _ => None,
    };
    Some(snapshot_finding(&node, interval, now, newest, started))
}

/// Certificate expiry: warn under [`CERT_WARN_DAYS`], fail when expired. One finding per host
/// (the worst certificate decides), listing every certificate that needs attention.
pub fn certificates(node: &str, certs: &[CertExpiry], now: OffsetDateTime) -> Finding {
    if certs.is_empty() {
        return Finding::new(
            "certificate",
            Status::Warn,
            Some(node),
            "no certificate found under /etc/kubernetes/ssl",
        );
    }
    let expired: Vec<&CertExpiry> = certs.iter().filter(|c| c.not_after <= now).collect();
    let soon: Vec<&CertExpiry> = crate::phases::certs::expiring_within(certs, now, CERT_WARN_DAYS)
        .into_iter()
        .filter(|c| c.not_after > now)
        .collect();
    let first = certs.iter().map(|c| c.not_after).min().expect("not empty");
    let date = |t: OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    let evidence: Vec<String> = expired
        .iter()
        .chain(&soon)
        .map(|c| {
            format!(
                "{}: notAfter {} ({} days)",
                c.certificate,
                date(c.not_after),
                (c.not_after - now).whole_days()
            )
        })
        .collect();
    let fix = ["rkers cert rotate --config <cluster.yml>"];
    if !expired.is_empty() {
        Finding::new(
            "certificate",
            Status::Fail,
            Some(node),
            format!("{} certificate(s) expired", expired.len()),
        )
        .evidence(evidence)
        .fix(fix)
    } else if !soon.is_empty() {
        Finding::new(
            "certificate",
            Status::Warn,
            Some(node),
            format!(
                "{} certificate(s) expire within {CERT_WARN_DAYS} days",
                soon.len()
            ),
        )
        .evidence(evidence)
        .fix(fix)
    } else {
        Finding::ok(
            "certificate",
            Some(node),
            format!(
                "{} certificates, the first expires {} ({} days)",
                certs.len(),
                date(first),
                (first - now).whole_days()
            ),
        )
    }
}

/// Reads a host's certificates from /etc/kubernetes (the helper `cert list` uses).
pub async fn host_certificates(
    c: &RkeConfig,
    host: &Arc<Host>,
) -> Result<Vec<CertExpiry>, crate::hosts::HostError> {
    let prefix = plan::host_prefix_path(&c.prefix_path, &host.facts().operating_system);
    let dir = plan::join_path(&[&prefix, "/etc/kubernetes"]);
    let image = &c.system_images.cert_downloader;
    host.docker().ensure_image(image, &[], &mut |_| {}).await?;
    let files = crate::phases::files::read_dir(host.docker(), &dir, image).await?;
    Ok(deployed_expiry(host.name(), &files))
}

/// One member's `etcdctl endpoint status -w json` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdStatus {
    pub endpoint: String,
    pub member_id: u64,
    pub leader: u64,
    pub db_size: u64,
}

/// One of its own file's: the caller turns a failure into the finding's text.
fn parse_endpoint_status(json: &str) -> Result<Vec<EtcdStatus>, String> {
    let v: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("etcdctl endpoint status: {e}"))?;
    let arr = v
        .as_array()
        .ok_or("etcdctl endpoint status: not a JSON array")?;
    Ok(arr
        .iter()
        .map(|e| {
            let st = &e["Status"];
            EtcdStatus {
                endpoint: e["Endpoint"].as_str().unwrap_or_default().to_string(),
                member_id: st["header"]["member_id"].as_u64().unwrap_or(0),
                leader: st["leader"].as_u64().unwrap_or(0),
                db_size: st["dbSize"].as_u64().unwrap_or(0),
            }
        })
        .collect())
}

/// Alarms from `etcdctl alarm list` (`memberID:... alarm:NOSPACE`).
pub fn parse_alarms(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split("alarm:").nth(1).map(|a| a.trim().to_string()))
        .filter(|a| !a.is_empty() && a != "NONE")
        .collect()
}

/// Judges one member from what etcdctl printed.
pub fn etcd_finding(
    node: &str,
    health: Result<String, String>,
    status: Result<Vec<EtcdStatus>, String>,
    alarms: &[String],
    quota: u64,
) -> Finding {
    let mut evidence = Vec::new();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    match &health {
        Ok(t) => evidence.extend(
            last_lines(t, 2)
                .into_iter()
                .map(|l| format!("endpoint health: {l}")),
        ),
        Err(e) => problems.push(format!("unhealthy: {e}")),
    }
    let mut summary_bits = Vec::new();
    match &status {
        Ok(list) => {
            for s in list {
                evidence.push(format!(
                    "endpoint status {}: member {:x}, leader {:x}, dbSize {} bytes",
                    s.endpoint, s.member_id, s.leader, s.db_size
                ));
                if s.leader == 0 {
                    problems.push("no leader".into());
                } else {
                    summary_bits.push(if s.leader == s.member_id {
                        "leader".to_string()
                    } else {
                        format!("leader {:x}", s.leader)
                    });
                }
                let pct = s.db_size as f64 * 100.0 / quota.max(1) as f64;
                summary_bits.push(format!(
                    "db {:.1} MiB of {:.0} MiB quota ({pct:.0}%)",
                    s.db_size as f64 / 1048576.0,
                    quota as f64 / 1048576.0
                ));
                if pct >= 95.0 {
                    problems.push(format!("database at {pct:.0}% of its quota"));
                } else if pct >= 80.0 {
                    warnings.push(format!("database at {pct:.0}% of its quota"));
                }
            }
        }
        Err(e) => problems.push(e.clone()),
    }
    for a in alarms {
        evidence.push(format!("alarm: {a}"));
        problems.push(format!("alarm {a} raised (writes refused)"));
    }
    let fix_space = vec![
        "docker exec etcd etcdctl compact <rev>; docker exec etcd etcdctl defrag; docker exec etcd etcdctl alarm disarm".to_string(),
        "or raise services.etcd.extra_args.quota-backend-bytes, then rkers up".to_string(),
    ];
    if !problems.is_empty() {
        let space = problems
            .iter()
            .any(|p| p.contains("NOSPACE") || p.contains("quota"));
        let mut f =
            Finding::new("etcd", Status::Fail, Some(node), problems.join("; ")).evidence(evidence);
        f = if space {
            f.fix(fix_space)
        } else {
            f.fix(["docker logs --tail 50 etcd   (on the node); rkers up to recreate a member that drifted"])
        };
        return f;
    }
    if !warnings.is_empty() {
        return Finding::new(
            "etcd",
            Status::Warn,
            Some(node),
            format!("{}; {}", warnings.join("; "), summary_bits.join(", ")),
        )
        .evidence(evidence)
        .fix(fix_space);
    }
    Finding::ok(
        "etcd",
        Some(node),
        format!("healthy, {}", summary_bits.join(", ")),
    )
    .evidence(evidence)
}

/// Health, status and alarms of the etcd member on `host`.
pub async fn etcd(c: &RkeConfig, host: &Arc<Host>) -> Finding {
    let node = node_name(c, host.name());
    let quota = c
        .services
        .etcd
        .extra_args
        .get("quota-backend-bytes")
        .and_then(|q| q.parse().ok())
        .unwrap_or(ETCD_DEFAULT_QUOTA);
    // The finding shows etcd's words; the typed error only decides how they are phrased.
    let health = crate::phases::etcd_membership::etcdctl(host, &["endpoint", "health"])
        .await
        .map_err(|e| e.to_string());
    let status =
        crate::phases::etcd_membership::etcdctl(host, &["endpoint", "status", "--write-out=json"])
            .await
            .map_err(|e| e.to_string())
            .and_then(|t| parse_endpoint_status(&t));
    let alarms = crate::phases::etcd_membership::etcdctl(host, &["alarm", "list"])
        .await
        .map(|t| parse_alarms(&t))
        .unwrap_or_default();
    etcd_finding(&node, health, status, &alarms, quota)
}

/// Each node's Ready condition, with reason and message when it is not Ready.
pub fn nodes(list: &[Node]) -> Vec<Finding> {
    list.iter()
        .map(|n| {
            let name = super::cni::node_name(n);
            match super::cni::ready_condition(n) {
                Some((s, _, _)) if s == "True" => Finding::ok("node", Some(&name), "Ready"),
                Some((s, reason, message)) => Finding::new(
                    "node",
                    Status::Fail,
                    Some(&name),
                    format!("NotReady ({reason})"),
                )
                .evidence([format!("condition Ready={s} {reason}: {message}")])
                .fix([format!(
                    "kubectl describe node {name}; docker logs --tail 50 kubelet   (on the node)"
                )]),
                None => Finding::new(
                    "node",
                    Status::Fail,
                    Some(&name),
                    "no Ready condition reported",
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn cert(name: &str, t: OffsetDateTime) -> CertExpiry {
        CertExpiry {
            host: "h".into(),
            certificate: name.into(),
            not_after: t,
            source: "host",
        }
    }

    #[test]
    fn certificates_warn_within_30_days_and_fail_when_expired() {
        let now = datetime!(2026-01-01 0:00 UTC);
        let far = cert("kube-node", datetime!(2030-01-01 0:00 UTC));
        let soon = cert("kube-apiserver", datetime!(2026-01-20 0:00 UTC));
        let gone = cert("kube-proxy", datetime!(2025-12-01 0:00 UTC));
        assert_eq!(
            certificates("h", std::slice::from_ref(&far), now).status,
            Status::Ok
        );
        let f = certificates("h", &[far.clone(), soon.clone()], now);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.evidence[0].starts_with("kube-apiserver: notAfter 2026-01-20"),
            "{:?}",
            f.evidence
        );
        let f = certificates("h", &[far, soon, gone], now);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.evidence.len(), 2);
        assert!(f.fix[0].contains("rkers cert rotate"));
    }

    #[test]
    fn etcd_status_json_and_alarms_parse() {
        let json = r#"[{"Endpoint":"https://10.0.0.1:2379","Status":{"header":{"cluster_id":1,"member_id":42,"revision":9,"raft_term":2},"version":"3.4.23","dbSize":20480,"leader":42,"raftIndex":10,"raftTerm":2}}]"#;
        let st = parse_endpoint_status(json).unwrap();
        assert_eq!(
            st,
            vec![EtcdStatus {
                endpoint: "https://10.0.0.1:2379".into(),
                member_id: 42,
                leader: 42,
                db_size: 20480
            }]
        );
        assert_eq!(parse_alarms("memberID:42 alarm:NOSPACE\n"), ["NOSPACE"]);
        assert!(parse_alarms("").is_empty());
        let ok = etcd_finding(
            "h",
            Ok("https://10.0.0.1:2379 is healthy".into()),
            Ok(st.clone()),
            &[],
            ETCD_DEFAULT_QUOTA,
        );
        assert_eq!(ok.status, Status::Ok);
        assert!(ok.summary.contains("leader"));
        let full = etcd_finding(
            "h",
            Ok(String::new()),
            Ok(st.clone()),
            &["NOSPACE".into()],
            ETCD_DEFAULT_QUOTA,
        );
        assert_eq!(full.status, Status::Fail);
        assert!(full.fix[0].contains("alarm disarm"));
        let big = etcd_finding("h", Ok(String::new()), Ok(st), &[], 24000);
        assert_eq!(big.status, Status::Warn, "{big:?}");
        let mut leaderless = parse_endpoint_status(json).unwrap();
        leaderless[0].leader = 0;
        assert_eq!(
            etcd_finding(
                "h",
                Ok(String::new()),
                Ok(leaderless),
                &[],
                ETCD_DEFAULT_QUOTA
            )
            .status,
            Status::Fail
        );
    }

    #[test]
    fn roles_give_the_expected_containers() {
        let r =
            |v: &[&str]| expected_containers(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(r(&["worker"]), ["nginx-proxy", "kubelet", "kube-proxy"]);
        assert_eq!(
            r(&["etcd", "controlplane", "worker"]),
            [
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
                "kubelet",
                "kube-proxy"
            ]
        );
    }

    fn observed(
        running: bool,
        restarting: bool,
        restarts: i64,
        started: &str,
    ) -> crate::hosts::ObservedContainer {
        crate::hosts::ObservedContainer {
            running,
            restarting,
            status: if running { "running" } else { "exited" }.into(),
            exit_code: Some(1),
            restart_count: restarts,
            started_at: Some(started.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_crash_looping_container_fails_one_that_restarted_at_bootstrap_does_not() {
        let now = time::macros::datetime!(2026-11-27 12:00 UTC);
        let state = |o| container_state("etcd-rolling-snapshots", &o, now).0;
        assert_eq!(
            state(observed(true, true, 7, "2026-11-27T11:59:50Z")),
            Status::Fail
        );
        // Running at this instant, but started 20 s ago after 5 restarts.
        assert_eq!(
            state(observed(true, false, 5, "2026-11-27T11:59:40.123456789Z")),
            Status::Fail
        );
        assert_eq!(
            state(observed(true, false, 5, "2026-11-27T10:00:00Z")),
            Status::Warn
        );
        assert_eq!(
            state(observed(true, false, 1, "2026-11-27T11:59:40Z")),
            Status::Ok
        );
        assert_eq!(
            state(observed(true, false, 0, "2026-11-27T11:59:40Z")),
            Status::Ok
        );
        assert_eq!(
            state(observed(false, false, 0, "2026-11-27T11:59:40Z")),
            Status::Fail
        );
        // Restarted 3 times within 4 s of its creation (kube-controller-manager before the RBAC
        // roles exist), running since: not a crash loop, unless it has not run long since.
        let at_start = |started: &str| crate::hosts::ObservedContainer {
            created_at: Some("2026-11-27T11:58:00Z".into()),
            ..observed(true, false, 3, started)
        };
        assert_eq!(state(at_start("2026-11-27T11:58:04Z")), Status::Ok);
        assert_eq!(state(at_start("2026-11-27T11:59:45Z")), Status::Fail);
        let just_started = crate::hosts::ObservedContainer {
            created_at: Some("2026-11-27T11:59:40Z".into()),
            ..observed(true, false, 3, "2026-11-27T11:59:50Z")
        };
        assert_eq!(state(just_started), Status::Fail, "up only 10 s");
        let sidekick = container_state(plan::SERVICE_SIDEKICK, &observed(false, false, 0, ""), now);
        assert_eq!(sidekick.0, Status::Ok);
    }

    #[test]
    fn the_newest_snapshot_is_judged_against_the_interval() {
        let now = time::macros::datetime!(2026-11-27 12:00 UTC);
        let interval = time::Duration::hours(12);
        let at = |h: i64| Some((now - time::Duration::hours(h), "x_etcd.zip"));
        let status = |newest, started| snapshot_finding("n", interval, now, newest, started).status;
        assert_eq!(status(at(1), None), Status::Ok);
        assert_eq!(status(at(20), None), Status::Warn);
        assert_eq!(status(at(30), None), Status::Fail);
        assert_eq!(
            status(None, Some(now - time::Duration::hours(2))),
            Status::Ok
        );
        assert_eq!(
            status(None, Some(now - time::Duration::hours(25))),
            Status::Fail
        );

        let mut c = RkeConfig::default();
        c.services.etcd.creation = "6h".into();
        assert_eq!(snapshot_interval(&c), Some(time::Duration::hours(6)));
        c.services.etcd.backup_config = Some(Default::default());
        assert_eq!(snapshot_interval(&c), None);
        c.services
            .etcd
            .backup_config
            .as_mut()
            .unwrap()
            .interval_hours = 3;
        assert_eq!(snapshot_interval(&c), Some(time::Duration::hours(3)));
    }
}
