//! etcd membership through `etcdctl` inside a healthy member's `etcd` container, whose
//! environment already names the endpoint and the certificates (§14.1); no etcd client library
//! is needed and nothing is dialled from the workstation. Members are joined one at a time, as
//! learners where etcd takes them (§16.3), and removed before their containers go (§16.4).
//! The member report every `up` prints asks etcd's JSON gateway first, from the node as the
//! health check does: one request instead of a container exec, which is most of what a no-op
//! `up` spends on etcd.

use crate::hosts::{Host, HostError};
use std::time::Duration;

/// Why an `etcdctl` call or a membership change failed.
#[derive(Debug, thiserror::Error)]
pub enum EtcdctlError {
    /// The host could not run `docker exec` at all.
    #[error(transparent)]
    Host(Box<HostError>),
    /// etcdctl ran and refused; `stderr` is etcd's own reason.
    #[error("host {host}: etcdctl {args}: {stderr}")]
    Refused {
        host: String,
        args: String,
        stderr: String,
    },
    #[error("no member with peer URL {peer} to promote")]
    NoMember { peer: String },
    /// A learner etcd kept refusing to promote because it had not caught up with the leader.
    #[error("the learner did not catch up with the leader{}", caught_up_reason(.last.as_deref()))]
    LearnerBehind { last: Option<Box<EtcdctlError>> },
    /// A retry loop that ran no attempt (never with the fixed counts used here).
    #[error("etcdctl was not run")]
    NeverTried,
}

fn caught_up_reason(last: Option<&EtcdctlError>) -> String {
    last.map(|e| format!(": {e}")).unwrap_or_default()
}

impl EtcdctlError {
    /// Whether etcd refused with one of these reasons (matched in its stderr: etcdctl has no
    /// machine-readable error codes).
    fn says(&self, reasons: &[&str]) -> bool {
        match self {
            EtcdctlError::Refused { stderr, .. } => reasons.iter().any(|r| stderr.contains(r)),
            _ => false,
        }
    }
}

/// Runs `etcdctl` in the `etcd` container of `host`.
pub async fn etcdctl(host: &Host, args: &[&str]) -> Result<String, EtcdctlError> {
    let quoted: Vec<String> = args
        .iter()
        .map(|a| shell_words::quote(a).into_owned())
        .collect();
    let out = host
        .link()
        .exec(&format!("docker exec etcd etcdctl {}", quoted.join(" ")))
        .await
        .map_err(|e| EtcdctlError::Host(Box::new(e)))?;
    if out.success() {
        Ok(out.stdout_str())
    } else {
        Err(EtcdctlError::Refused {
            host: host.name().to_string(),
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `(id, name, peer urls)` of every member, as one member sees the cluster.
pub async fn member_list(host: &Host) -> Result<Vec<(String, String, String)>, EtcdctlError> {
    let text = etcdctl(host, &["member", "list"]).await?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(", ").collect();
            (f.len() >= 4).then(|| (f[0].to_string(), f[2].to_string(), f[3].to_string()))
        })
        .collect())
}

/// `(id, name, peer urls)` of every member, from etcd's JSON gateway (etcd 3.4 and later) at
/// the address of `health_url` (the member's planned health check), asked from the node with
/// the health check's client certificate. `None` when the gateway does not answer with a
/// member list (etcd 3.3 names its gateway `/v3beta`): the caller asks `etcdctl` instead.
pub async fn member_list_from_gateway(
    host: &Host,
    health_url: &str,
    tls: Option<&crate::phases::health::TlsMaterial>,
) -> Option<Vec<(String, String, String)>> {
    let uri: http::Uri = health_url.parse().ok()?;
    let url = format!(
        "{}://{}/v3/cluster/member/list",
        uri.scheme_str()?,
        uri.authority()?
    );
    let (status, body) = crate::phases::health::post_json(
        host.link().as_ref(),
        &url,
        "{}",
        tls,
        Duration::from_secs(5),
    )
    .await
    .ok()?;
    (status == 200)
        .then(|| members_from_gateway(&body))
        .flatten()
}

/// The gateway's answer, in `etcdctl member list`'s terms: the id in hex (the gateway writes
/// it in decimal, as a string), the name (empty for a member that never started) and the peer
/// URLs joined by commas. `None` for anything that is not a list of at least one member.
fn members_from_gateway(body: &str) -> Option<Vec<(String, String, String)>> {
    #[derive(serde::Deserialize)]
    struct List {
        #[serde(default)]
        members: Vec<Member>,
    }
    #[derive(serde::Deserialize)]
    struct Member {
        #[serde(rename = "ID")]
        id: serde_json::Value,
        #[serde(default)]
        name: String,
        #[serde(rename = "peerURLs", default)]
        peer_urls: Vec<String>,
    }
    let list: List = serde_json::from_str(body).ok()?;
    let members: Option<Vec<_>> = list
        .members
        .into_iter()
        .map(|m| {
            let id = match &m.id {
                serde_json::Value::String(s) => s.parse::<u64>().ok()?,
                serde_json::Value::Number(n) => n.as_u64()?,
                _ => return None,
            };
            Some((format!("{id:x}"), m.name, m.peer_urls.join(",")))
        })
        .collect();
    members.filter(|m| !m.is_empty())
}

/// Whether the members seen through `via` take learners (etcd 3.4 and later): a learner does
/// not count towards quorum until promoted, so a join that fails costs the cluster nothing.
pub async fn supports_learners(via: &Host) -> bool {
    etcdctl(via, &["version"])
        .await
        .is_ok_and(|text| version_takes_learners(&text))
}

/// `etcdctl version`'s output names 3.4 or later.
fn version_takes_learners(text: &str) -> bool {
    text.lines()
        .find_map(|l| l.strip_prefix("etcdctl version: "))
        .and_then(|v| {
            let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next()??))
        })
        .is_some_and(|version| version >= (3, 4))
}

/// `(id, is learner)` of the member whose peer URLs include `peer`.
async fn member_by_peer(via: &Host, peer: &str) -> Result<Option<(String, bool)>, EtcdctlError> {
    let text = etcdctl(via, &["member", "list"]).await?;
    Ok(find_member(&text, peer))
}

/// In `etcdctl member list` output (`id, status, name, peer urls, client urls, is learner`).
fn find_member(text: &str, peer: &str) -> Option<(String, bool)> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(", ").collect();
        (f.len() >= 4 && f[3].split(',').any(|u| u == peer)).then(|| {
            (
                f[0].to_string(),
                f.get(5).is_some_and(|x| x.trim() == "true"),
            )
        })
    })
}

/// Promotes the learner at `peer` to a voting member. etcd refuses until the learner has caught
/// up with the leader, so this retries those refusals for up to `attempts` × 2 s: a learner
/// that never catches up is reported, not promoted.
pub async fn promote_member(via: &Host, peer: &str, attempts: u32) -> Result<(), EtcdctlError> {
    let mut last = None;
    for _ in 0..attempts {
        let Some((id, learner)) = member_by_peer(via, peer).await? else {
            return Err(EtcdctlError::NoMember {
                peer: peer.to_string(),
            });
        };
        if !learner {
            return Ok(());
        }
        match etcdctl(via, &["member", "promote", &id]).await {
            Ok(_) => return Ok(()),
            Err(e) if e.says(&["in sync", "not ready", "no leader"]) => {
                last = Some(Box::new(e));
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(EtcdctlError::LearnerBehind { last })
}

/// Removes the member at `peer`, if listed: undoes a join that failed.
pub async fn remove_member_by_peer(via: &Host, peer: &str) -> Result<(), EtcdctlError> {
    match member_by_peer(via, peer).await? {
        Some((id, _)) => {
            let args = ["member", "remove", id.as_str()];
            retry_transient(|| etcdctl(via, &args)).await
        }
        None => Ok(()),
    }
}

/// Adds a member unless its peer URL is already listed (a re-run after an interrupted add); as a
/// learner when `learner` is set.
pub async fn add_member(
    via: &Host,
    name: &str,
    peer: &str,
    learner: bool,
) -> Result<(), EtcdctlError> {
    let members = member_list(via).await?;
    if members
        .iter()
        .any(|(_, _, urls)| urls.split(',').any(|u| u == peer))
    {
        return Ok(());
    }
    // etcd refuses a new member until its leader has been connected to every current member
    // for its health interval (5 s); right after the previous join that is not yet so. RKE1
    // sleeps 10 s; waiting for exactly these refusals is faster and cannot be too short.
    let peer_flag = format!("--peer-urls={peer}");
    let mut args = vec!["member", "add", name, peer_flag.as_str()];
    if learner {
        args.push("--learner");
    }
    retry_transient(|| etcdctl(via, &args)).await
}

/// Membership changes briefly leave etcd without a leader (removing the leader forces an
/// election) or not yet fully connected; these refusals pass within seconds, so they are
/// retried for up to 40 s. Any other error is returned at once.
async fn retry_transient<F, Fut>(op: F) -> Result<(), EtcdctlError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<String, EtcdctlError>>,
{
    const TRANSIENT: &[&str] = &[
        "unhealthy cluster",
        "not enough started members",
        "context deadline exceeded",
        "leader changed",
        "no leader",
        "timed out",
    ];
    let mut last = None;
    for _ in 0..20 {
        match op().await {
            Ok(_) => return Ok(()),
            Err(e) if e.says(TRANSIENT) => {
                last = Some(e);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(EtcdctlError::NeverTried))
}

/// Removes a member by name; one already gone is fine.
pub async fn remove_member(via: &Host, name: &str) -> Result<(), EtcdctlError> {
    let members = member_list(via).await?;
    match members.iter().find(|(_, n, _)| n == name) {
        Some((id, _, _)) => {
            let args = ["member", "remove", id.as_str()];
            match retry_transient(|| etcdctl(via, &args)).await {
                // An earlier attempt may have succeeded with its answer lost.
                Err(e) if e.says(&["member not found"]) => Ok(()),
                other => other,
            }
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateways_member_list_reads_as_etcdctls() {
        let body = r#"{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","raft_term":"2"},
            "members":[{"ID":"10276657743932975437","name":"etcd-host1","peerURLs":["https://10.77.20.11:2380"],"clientURLs":["https://10.77.20.11:2379"]},
            {"ID":"1311","peerURLs":["https://10.77.20.12:2380","https://[fd00::12]:2380"],"isLearner":true}]}"#;
        assert_eq!(
            members_from_gateway(body),
            Some(vec![
                (
                    "8e9e05c52164694d".to_string(),
                    "etcd-host1".to_string(),
                    "https://10.77.20.11:2380".to_string()
                ),
                (
                    "51f".to_string(),
                    String::new(),
                    "https://10.77.20.12:2380,https://[fd00::12]:2380".to_string()
                ),
            ])
        );
        // No list, a list of none, an id that is no number: etcdctl is asked instead.
        assert_eq!(members_from_gateway(r#"{"header":{}}"#), None);
        assert_eq!(members_from_gateway(r#"{"members":[]}"#), None);
        assert_eq!(
            members_from_gateway(r#"{"members":[{"ID":"x1","name":"a"}]}"#),
            None
        );
        assert_eq!(members_from_gateway("404 page not found"), None);
    }

    #[test]
    fn learners_from_etcd_3_4() {
        assert!(version_takes_learners(
            "etcdctl version: 3.4.23\nAPI version: 3.4\n"
        ));
        assert!(version_takes_learners(
            "etcdctl version: 3.5.9\nAPI version: 3.5\n"
        ));
        assert!(!version_takes_learners(
            "etcdctl version: 3.3.15\nAPI version: 3.3\n"
        ));
        assert!(!version_takes_learners("something else"));
    }

    #[test]
    fn members_are_found_by_peer_url_with_their_learner_flag() {
        let list = "bc5ece7b5c706b43, started, etcd-host1, https://10.0.0.1:2380, https://10.0.0.1:2379, false\n\
                    995993af49089bd3, unstarted, , https://10.0.0.2:2380, , true\n";
        assert_eq!(
            find_member(list, "https://10.0.0.2:2380"),
            Some(("995993af49089bd3".into(), true))
        );
        assert_eq!(
            find_member(list, "https://10.0.0.1:2380"),
            Some(("bc5ece7b5c706b43".into(), false))
        );
        assert_eq!(find_member(list, "https://10.0.0.3:2380"), None);
    }

    #[test]
    fn only_etcds_own_refusals_count_as_its_reasons() {
        let refused = EtcdctlError::Refused {
            host: "10.0.0.1".into(),
            args: "member remove 1".into(),
            stderr: "Error: etcdserver: unhealthy cluster".into(),
        };
        assert!(refused.says(&["unhealthy cluster"]));
        assert!(!refused.says(&["member not found"]));
        let none = EtcdctlError::NoMember {
            peer: "unhealthy cluster".into(),
        };
        assert!(!none.says(&["unhealthy cluster"]));
        assert_eq!(
            refused.to_string(),
            "host 10.0.0.1: etcdctl member remove 1: Error: etcdserver: unhealthy cluster"
        );
    }
}
