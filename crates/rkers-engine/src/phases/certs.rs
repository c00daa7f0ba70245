//! Certificate knowledge the phases share: certificate expiry as deployed on the hosts (for
//! `cert list` and `up`'s warning), and, from the core, which containers read which certificate
//! file ([`rkers_core::diff::readers`]).

use crate::output::Reporter;
use crate::pki::CertificatePki;
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// `up` warns about certificates that expire within this many days.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// One certificate as a host holds it (or the state describes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertExpiry {
    pub host: String,
    /// The bundle name (`kube-apiserver`, `kube-etcd-10-77-0-11`, ...).
    pub certificate: String,
    pub not_after: OffsetDateTime,
    /// `host` when read from the host's /etc/kubernetes/ssl, `state` from the state file.
    pub source: &'static str,
}

/// The certificate name of a deployed file (`ssl/kube-node.pem` → `kube-node`), or `None` for
/// keys, kubeconfigs and anything outside `ssl/`.
pub(crate) fn certificate_name(relative_path: &str) -> Option<&str> {
    let file = relative_path.strip_prefix("ssl/")?;
    let name = file.strip_suffix(".pem")?;
    (!name.ends_with("-key") && !name.ends_with("-csr") && !name.contains('/')).then_some(name)
}

/// Expiry of every certificate among a host's files under /etc/kubernetes. Files that do not
/// parse as a certificate are skipped (a host may hold unrelated files there).
pub fn deployed_expiry(host: &str, files: &BTreeMap<String, Vec<u8>>) -> Vec<CertExpiry> {
    files
        .iter()
        .filter_map(|(path, contents)| {
            let name = certificate_name(path)?;
            let entry = CertificatePki {
                name: name.to_string(),
                certificate_pem: String::from_utf8_lossy(contents).into_owned(),
                ..Default::default()
            };
            let info = entry.info().ok()?;
            Some(CertExpiry {
                host: host.to_string(),
                certificate: name.to_string(),
                not_after: info.not_after,
                source: "host",
            })
        })
        .collect()
}

/// Expiry of the given bundle entries, as the state describes them.
pub fn state_expiry<'a>(
    host: &str,
    entries: impl IntoIterator<Item = &'a CertificatePki>,
) -> Vec<CertExpiry> {
    entries
        .into_iter()
        .filter(|e| e.has_certificate())
        .filter_map(|e| {
            Some(CertExpiry {
                host: host.to_string(),
                certificate: e.name.clone(),
                not_after: e.info().ok()?.not_after,
                source: "state",
            })
        })
        .collect()
}

/// The certificates that expire before `now + days` (already expired ones included).
pub fn expiring_within(certs: &[CertExpiry], now: OffsetDateTime, days: i64) -> Vec<&CertExpiry> {
    let limit = now + time::Duration::days(days);
    certs.iter().filter(|c| c.not_after <= limit).collect()
}

/// The warning `up` prints for one certificate close to its end.
pub fn expiry_warning(c: &CertExpiry, now: OffsetDateTime) -> String {
    let date = c
        .not_after
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    if c.not_after <= now {
        format!(
            "certificate {} on host {} expired on {date}: run `rkers cert rotate`",
            c.certificate, c.host
        )
    } else {
        format!(
            "certificate {} on host {} expires on {date} (in {} days): run `rkers cert rotate`",
            c.certificate,
            c.host,
            (c.not_after - now).whole_days()
        )
    }
}

/// Warns about every deployed certificate that expires within [`EXPIRY_WARNING_DAYS`].
pub fn warn_expiring<'a>(
    reporter: &Reporter,
    hosts: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, Vec<u8>>)>,
) {
    let now = OffsetDateTime::now_utc();
    for (host, files) in hosts {
        let certs = deployed_expiry(host, files);
        for c in expiring_within(&certs, now, EXPIRY_WARNING_DAYS) {
            reporter.warn(expiry_warning(c, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_names_of_deployed_files() {
        assert_eq!(certificate_name("ssl/kube-node.pem"), Some("kube-node"));
        assert_eq!(certificate_name("ssl/kube-node-key.pem"), None);
        assert_eq!(certificate_name("ssl/kubecfg-kube-node.yaml"), None);
        assert_eq!(certificate_name("audit-policy.yaml"), None);
        assert_eq!(
            certificate_name("ssl/kube-etcd-10-77-0-11.pem"),
            Some("kube-etcd-10-77-0-11")
        );
    }

    fn cert_pem(not_after: OffsetDateTime) -> String {
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).unwrap();
        params.not_before = not_after - time::Duration::days(365);
        params.not_after = not_after;
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn certificates_close_to_expiry_are_warned_about_by_name_host_and_date() {
        let now = OffsetDateTime::now_utc();
        let soon = (now + time::Duration::days(10))
            .replace_nanosecond(0)
            .unwrap();
        let later = now + time::Duration::days(400);
        let files: BTreeMap<String, Vec<u8>> = [
            ("ssl/kube-apiserver.pem".to_string(), cert_pem(soon).into()),
            ("ssl/kube-node.pem".to_string(), cert_pem(later).into()),
            ("ssl/kube-node-key.pem".to_string(), b"not a cert".to_vec()),
            ("ssl/broken.pem".to_string(), b"garbage".to_vec()),
        ]
        .into();
        let certs = deployed_expiry("host1", &files);
        let names: Vec<&str> = certs.iter().map(|c| c.certificate.as_str()).collect();
        assert_eq!(names, ["kube-apiserver", "kube-node"]);
        assert_eq!(certs[0].not_after, soon);
        let expiring = expiring_within(&certs, now, EXPIRY_WARNING_DAYS);
        assert_eq!(expiring.len(), 1);
        let warning = expiry_warning(expiring[0], now);
        assert!(warning.contains("kube-apiserver"), "{warning}");
        assert!(warning.contains("host1"), "{warning}");
        let date = soon
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        assert!(warning.contains(&date), "{warning}");
        assert!(warning.contains("in 9 days") || warning.contains("in 10 days"));
        let expired = CertExpiry {
            not_after: now - time::Duration::days(1),
            ..certs[1].clone()
        };
        assert!(expiry_warning(&expired, now).contains("expired on"));
    }
}
