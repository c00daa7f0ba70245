//! Certificate knowledge the phases share: which containers read which certificate file (so a
//! changed certificate restarts exactly its readers), and certificate expiry as deployed on the
//! hosts (for `cert list` and `up`'s warning).

use crate::output::Reporter;
use crate::phases::files::DesiredFile;
use crate::pki::CertificatePki;
use crate::plan;
use std::collections::{BTreeMap, BTreeSet};
use time::OffsetDateTime;

/// `up` warns about certificates that expire within this many days.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// The containers that read a certificate file under /etc/kubernetes, as RKE1 restarts them
/// when a certificate changes (§22.2 step 6); kubeconfigs count as their component's files.
pub(crate) fn readers_of(relative_path: &str) -> Vec<&'static str> {
    let file = relative_path.trim_start_matches("ssl/");
    let name = file
        .trim_start_matches("kubecfg-")
        .trim_end_matches(".yaml")
        .trim_end_matches(".pem")
        .trim_end_matches("-key");
    match name {
        // etcd trusts it for peers and clients; every kubeconfig names it.
        "kube-ca" => vec![
            plan::ETCD,
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
            plan::KUBELET,
            plan::KUBE_PROXY,
        ],
        "kube-apiserver" | "kube-service-account-token" => {
            vec![plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        }
        "kube-apiserver-requestheader-ca" | "kube-apiserver-proxy-client" => {
            vec![plan::KUBE_APISERVER]
        }
        "kube-controller-manager" => vec![plan::KUBE_CONTROLLER_MANAGER],
        // The provider file has no checksum variable: a new text restarts the apiserver (§23).
        "encryption" => vec![plan::KUBE_APISERVER],
        "kube-scheduler" => vec![plan::KUBE_SCHEDULER],
        "kube-proxy" => vec![plan::KUBE_PROXY],
        // kube-apiserver also uses kube-node as its etcd client certificate, but etcd's client
        // transport reads the file again on every handshake: no restart needed for it.
        "kube-node" => vec![plan::KUBELET],
        "kube-etcd-client" | "kube-etcd-client-ca" => vec![plan::KUBE_APISERVER],
        // Serving certificates (`generate_serving_certificate`): every node holds every node's,
        // only its own is read, but a rotation renews them all together with kube-node anyway.
        n if n.starts_with("kube-kubelet-") => vec![plan::KUBELET],
        n if n.starts_with("kube-etcd-") => vec![plan::ETCD],
        _ => Vec::new(),
    }
}

/// The containers to restart on one host after its certificates change: the readers of every
/// file whose new contents differ from what the running containers loaded. `loaded` is what the
/// containers were last started with (the files the current state describes), `on_disk` what
/// the host holds now; a file differing from either counts, so a run interrupted after writing
/// files but before restarting still restarts their readers next time.
pub(crate) fn containers_to_restart(
    desired: &[DesiredFile],
    loaded: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> BTreeSet<&'static str> {
    let loaded: BTreeMap<&str, &[u8]> = loaded
        .iter()
        .map(|f| (f.relative_path.as_str(), f.contents.as_slice()))
        .collect();
    // By meaning, not bytes: a file RKE1's deployer wrote with another trailing newline was
    // loaded as it is meant, and restarting its readers would only interrupt them.
    let differs = |f: &DesiredFile, other: &[u8]| {
        !crate::diff::same_file_content(&f.relative_path, &f.contents, other)
    };
    desired
        .iter()
        .filter(|f| {
            let differs_from_loaded = loaded
                .get(f.relative_path.as_str())
                .is_some_and(|c| differs(f, c));
            let differs_on_disk = on_disk.get(&f.relative_path).is_some_and(|c| differs(f, c));
            differs_from_loaded || differs_on_disk
        })
        .flat_map(|f| readers_of(&f.relative_path))
        .collect()
}

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

    fn file(path: &str, contents: &str) -> DesiredFile {
        DesiredFile {
            relative_path: path.into(),
            contents: contents.as_bytes().to_vec(),
            mode: 0o600,
        }
    }

    #[test]
    fn certificate_files_map_to_the_containers_that_read_them() {
        assert_eq!(
            readers_of("ssl/kube-apiserver.pem"),
            [plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        );
        assert_eq!(
            readers_of("ssl/kube-apiserver-key.pem"),
            [plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        );
        assert_eq!(readers_of("ssl/kubecfg-kube-node.yaml"), [plan::KUBELET]);
        assert_eq!(readers_of("ssl/kube-etcd-10-77-0-11.pem"), [plan::ETCD]);
        assert_eq!(
            readers_of("ssl/kube-etcd-client-key.pem"),
            [plan::KUBE_APISERVER]
        );
        assert_eq!(
            readers_of("ssl/kube-kubelet-10-77-0-12-key.pem"),
            [plan::KUBELET]
        );
        assert_eq!(
            readers_of("ssl/kube-apiserver-proxy-client-key.pem"),
            [plan::KUBE_APISERVER]
        );
        assert!(
            readers_of("admission.yaml").is_empty(),
            "checksum env vars cover config files"
        );
    }

    #[test]
    fn only_readers_of_changed_certificates_restart() {
        let desired = [
            file("ssl/kube-node.pem", "new"),
            file("ssl/kube-proxy.pem", "same"),
        ];
        let loaded = [
            file("ssl/kube-node.pem", "old"),
            file("ssl/kube-proxy.pem", "same"),
        ];
        let on_disk: BTreeMap<String, Vec<u8>> = [
            ("ssl/kube-node.pem".to_string(), b"old".to_vec()),
            ("ssl/kube-proxy.pem".to_string(), b"same".to_vec()),
        ]
        .into();
        assert_eq!(
            containers_to_restart(&desired, &loaded, &on_disk),
            BTreeSet::from([plan::KUBELET])
        );
    }

    #[test]
    fn files_written_by_an_interrupted_run_still_restart_their_readers() {
        // The files already hold the new certificate, but the state says the containers were
        // started with the old one.
        let desired = [file("ssl/kube-etcd-10-0-0-1.pem", "new")];
        let loaded = [file("ssl/kube-etcd-10-0-0-1.pem", "old")];
        let on_disk: BTreeMap<String, Vec<u8>> =
            [("ssl/kube-etcd-10-0-0-1.pem".to_string(), b"new".to_vec())].into();
        assert_eq!(
            containers_to_restart(&desired, &loaded, &on_disk),
            BTreeSet::from([plan::ETCD])
        );
        // Nothing differs anywhere: nothing restarts.
        assert!(containers_to_restart(&desired, &desired, &on_disk).is_empty());
    }

    #[test]
    fn a_host_that_differs_from_the_state_restarts_too() {
        // State already current (e.g. a host restored from an old backup): the disk decides.
        let desired = [file("ssl/kube-scheduler.pem", "new")];
        let on_disk: BTreeMap<String, Vec<u8>> =
            [("ssl/kube-scheduler.pem".to_string(), b"stale".to_vec())].into();
        assert_eq!(
            containers_to_restart(&desired, &desired, &on_disk),
            BTreeSet::from([plan::KUBE_SCHEDULER])
        );
    }

    #[test]
    fn files_rke1_rewrote_with_other_trailing_newlines_restart_nothing() {
        // rke-tools' cert-deployer adds a newline to the kubeconfig the state keeps without one.
        let kubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: local";
        let desired = [file("ssl/kubecfg-kube-node.yaml", kubeconfig)];
        let on_disk: BTreeMap<String, Vec<u8>> = [(
            "ssl/kubecfg-kube-node.yaml".to_string(),
            format!("{kubeconfig}\n").into_bytes(),
        )]
        .into();
        assert!(containers_to_restart(&desired, &desired, &on_disk).is_empty());
        let changed: BTreeMap<String, Vec<u8>> = [(
            "ssl/kubecfg-kube-node.yaml".to_string(),
            b"apiVersion: v1\nkind: Config\ncurrent-context: other\n".to_vec(),
        )]
        .into();
        assert_eq!(
            containers_to_restart(&desired, &desired, &changed),
            BTreeSet::from([plan::KUBELET])
        );
    }

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
