//! `rkers cert list`: every certificate each host holds and when it expires, read from the
//! host's /etc/kubernetes/ssl; a host that cannot be reached (or lacks a file) is described
//! from the state file instead, and the row says so.

use crate::cluster::{Cluster, ClusterError};
use crate::hosts::{HostPool, SshOptions};
use crate::output::Reporter;
use crate::phases::certs::{CertExpiry, deployed_expiry, state_expiry};
use crate::phases::files;
use crate::pki;
use std::collections::BTreeMap;

pub struct ListOptions {
    /// `--ssh-agent-auth`.
    pub agent_override: bool,
    pub ssh: SshOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
}

/// The host name `cert list` gives the admin kubeconfig's certificate, which no node holds.
pub const LOCAL: &str = "local";

/// What `cert list` found: the rows, and the certificates it could not show.
pub struct Listing {
    pub rows: Vec<CertExpiry>,
    /// `<host>: <certificate>: <why>` for a CA that is missing or broken, and for a certificate
    /// the state holds but that neither the host nor the state gives in a readable form.
    pub problems: Vec<String>,
}

/// One row per certificate per host (plus `kube-admin` for [`LOCAL`]), hosts in config order,
/// certificates by name.
pub async fn cert_list(
    cluster: &Cluster,
    opts: &ListOptions,
    reporter: &Reporter,
) -> Result<Listing, ListError> {
    let state = cluster.load_state()?;
    let bundle = state
        .map(|s| {
            if s.current_state.certificates_bundle.is_empty() {
                s.desired_state.certificates_bundle
            } else {
                s.current_state.certificates_bundle
            }
        })
        .unwrap_or_default();
    let spec = cluster.pki_spec()?;
    let helper_image = cluster.config.system_images.cert_downloader.clone();
    let registries = cluster.registry_credentials();

    let attempts =
        HostPool::connect_each(&cluster.ssh_targets(opts.agent_override), &opts.ssh).await;
    let mut deployed: BTreeMap<String, Vec<CertExpiry>> = BTreeMap::new();
    for attempt in &attempts {
        let host = attempt.target.name.clone();
        let Some(docker) = attempt.docker.as_ref().filter(|_| attempt.error.is_none()) else {
            let why = attempt
                .error
                .as_ref()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "not connected".into());
            reporter.warn(format!(
                "host {host}: {why}; its certificates are shown from the state file"
            ));
            continue;
        };
        let os = attempt
            .facts
            .as_ref()
            .map(|f| f.operating_system.as_str())
            .unwrap_or_default();
        let prefix = crate::plan::host_prefix_path(&cluster.config.prefix_path, os);
        let dir = crate::plan::join_path(&[&prefix, "/etc/kubernetes"]);
        let read = async {
            docker
                .ensure_image(&helper_image, &registries, &mut |_| {})
                .await?;
            files::read_dir(docker, &dir, &helper_image).await
        };
        match read.await {
            Ok(f) => {
                deployed.insert(host, deployed_expiry(&attempt.target.name, &f));
            }
            Err(e) => reporter.warn(format!(
                "host {host}: cannot read {dir}: {e}; its certificates are shown from the state file"
            )),
        }
    }
    for attempt in &attempts {
        if let Some(l) = &attempt.link {
            l.close().await;
        }
    }

    let state_path = cluster.files.state_path.display().to_string();
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for host in &spec.hosts {
        let wanted = pki::cert_names_for_host(&spec, host);
        let on_host = deployed.get(&host.address);
        for name in &wanted {
            match on_host.and_then(|d| d.iter().find(|c| &c.certificate == name)) {
                Some(c) => rows.push(c.clone()),
                None => {
                    if on_host.is_some() && name == pki::names::CA_CERT_NAME {
                        reporter.warn(format!(
                            "host {}: its {name} certificate is missing or does not parse; \
                             shown from the state file",
                            host.address
                        ));
                    }
                    let from_state = state_expiry(&host.address, bundle.get(name));
                    if from_state.is_empty()
                        && let Some(why) = unreadable(name, bundle.get(name), &state_path)
                    {
                        problems.push(format!("{}: {name}: {why}", host.address));
                    }
                    rows.extend(from_state);
                }
            }
        }
    }
    rows.extend(state_expiry(
        LOCAL,
        bundle.get(pki::names::KUBE_ADMIN_CERT_NAME),
    ));
    Ok(Listing { rows, problems })
}

/// Why a certificate neither the host nor the state could show matters: the CA always does;
/// other names only when the state holds an entry that does not parse (optional certificates,
/// such as the external etcd pair, are simply absent).
fn unreadable(name: &str, entry: Option<&pki::CertificatePki>, state_path: &str) -> Option<String> {
    let is_ca = name == pki::names::CA_CERT_NAME;
    match entry.filter(|e| e.has_certificate()) {
        None if is_ca => Some(format!(
            "the CA certificate is missing: not readable on the host and not in {state_path}"
        )),
        None => None,
        Some(e) => e
            .info()
            .err()
            .map(|err| format!("not readable on the host, and broken in {state_path}: {err}")),
    }
}

/// The table `cert list` prints.
pub fn render_table(rows: &[CertExpiry], now: time::OffsetDateTime) -> String {
    let header = ["HOST", "CERTIFICATE", "EXPIRES", "DAYS LEFT", "SOURCE"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.host.clone(),
                r.certificate.clone(),
                rfc3339(r.not_after),
                (r.not_after - now).whole_days().to_string(),
                r.source.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cols: [&str; 5]| {
        let mut s = String::new();
        for (i, (c, w)) in cols.iter().zip(widths).enumerate() {
            if i + 1 == cols.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    for row in &cells {
        out.push_str(&line([&row[0], &row[1], &row[2], &row[3], &row[4]]));
    }
    out
}

/// One JSON object per row, as `--output json` prints them.
pub fn row_json(r: &CertExpiry, now: time::OffsetDateTime) -> serde_json::Value {
    serde_json::json!({
        "host": r.host,
        "certificate": r.certificate,
        "not_after": rfc3339(r.not_after),
        "days_left": (r.not_after - now).whole_days(),
        "source": r.source,
    })
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

crate::error::about_no_host!(ListError);

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn row(host: &str, name: &str, source: &'static str) -> CertExpiry {
        CertExpiry {
            host: host.into(),
            certificate: name.into(),
            not_after: datetime!(2036-01-02 03:04:05 UTC),
            source,
        }
    }

    #[test]
    fn table_has_a_header_and_aligned_columns() {
        let now = datetime!(2026-01-02 03:04:05 UTC);
        let rows = [
            row("10.0.0.1", "kube-apiserver", "host"),
            row("local", "kube-admin", "state"),
        ];
        let table = render_table(&rows, now);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("HOST"));
        assert!(lines[1].contains("kube-apiserver") && lines[1].contains("2036-01-02T03:04:05Z"));
        assert!(lines[1].contains("3652"), "{table}");
        let col = lines[0].find("CERTIFICATE").unwrap();
        assert_eq!(&lines[2][col..col + 10], "kube-admin");
    }

    #[test]
    fn json_rows_carry_every_field() {
        let now = datetime!(2036-01-01 03:04:05 UTC);
        let v = row_json(&row("10.0.0.1", "kube-node", "state"), now);
        assert_eq!(v["host"], "10.0.0.1");
        assert_eq!(v["certificate"], "kube-node");
        assert_eq!(v["not_after"], "2036-01-02T03:04:05Z");
        assert_eq!(v["days_left"], 1);
        assert_eq!(v["source"], "state");
    }
}
