//! Encryption turned off (§23), the controlplane hosts' part: which hosts get the
//! identity-first provider file and restart kube-apiserver with it, decided from the
//! kube-apiservers the plan step found running. The Secrets are then rewritten in plain text
//! through the API (the `cluster` action [`Action::DisableEncryption`], planned only when these
//! are), before the files step removes the provider file.

use super::{Action, HealthProbe};
use crate::files::FileWrite;

/// A controlplane host as the plan step found it.
pub struct ApiserverHost {
    pub address: String,
    /// The host's `/etc/kubernetes` (under its prefix path), where the provider file goes.
    pub dir: String,
    /// Its kube-apiserver container runs.
    pub runs_apiserver: bool,
}

/// The provider file as encryption is turned off: `identity` first, so the API server writes
/// plain text, with the old key kept to read what it encrypted.
pub struct IdentityFirst {
    /// Relative to each host's `dir`.
    pub path: String,
    /// The file (it holds the key: never shown nor serialized).
    pub contents: Vec<u8>,
    /// The name of the key kept.
    pub key: String,
    /// kube-apiserver's health check, waited for after its restart, with the certificates
    /// the running cluster has.
    pub check: HealthProbe,
}

/// Each host's actions, in the order they are taken: the provider file written, then
/// kube-apiserver restarted and waited for. Only hosts where kube-apiserver runs: one that does
/// not serves no Secrets, and starts later with the plan's flags (without the provider file).
/// `None` when it runs nowhere (a removed or half-built cluster): nothing serves the Secrets,
/// so nothing is rewritten and turning encryption off is the files step's alone.
pub fn disable_encryption(
    hosts: &[ApiserverHost],
    file: &IdentityFirst,
) -> Option<Vec<(String, Vec<Action>)>> {
    let running: Vec<&ApiserverHost> = hosts.iter().filter(|h| h.runs_apiserver).collect();
    if running.is_empty() {
        return None;
    }
    let actions = running
        .into_iter()
        .map(|h| {
            let list = vec![
                Action::WriteFileSet {
                    dir: h.dir.clone(),
                    files: vec![FileWrite {
                        path: file.path.clone(),
                        mode: 0o600,
                        reason: format!(
                            "identity first, key {} kept to read what it encrypted",
                            file.key
                        ),
                        contents: file.contents.clone(),
                    }],
                },
                Action::RestartAndCheck {
                    name: crate::plan::KUBE_APISERVER.into(),
                    health_url: Some(file.check.url.clone()),
                    check: Some(Box::new(file.check.clone())),
                },
            ];
            (h.address.clone(), list)
        })
        .collect();
    Some(actions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(address: &str, runs_apiserver: bool) -> ApiserverHost {
        ApiserverHost {
            address: address.into(),
            dir: "/opt/rke/etc/kubernetes".into(),
            runs_apiserver,
        }
    }

    fn file() -> IdentityFirst {
        IdentityFirst {
            path: "ssl/encryption.yaml".into(),
            contents: b"secret: c2VjcmV0".to_vec(),
            key: "key-1".into(),
            check: HealthProbe {
                url: "https://localhost:6443/healthz".into(),
                tls: None,
            },
        }
    }

    #[test]
    fn hosts_that_run_kube_apiserver_write_the_file_then_restart_it() {
        let planned = disable_encryption(
            &[
                host("10.0.0.1", true),
                host("10.0.0.2", false),
                host("10.0.0.3", true),
            ],
            &file(),
        )
        .expect("planned");
        let shown: Vec<(String, Vec<String>)> = planned
            .iter()
            .map(|(h, l)| (h.clone(), l.iter().map(|a| a.to_string()).collect()))
            .collect();
        let expected = vec![
            "write under /opt/rke/etc/kubernetes:\n      ssl/encryption.yaml mode 0600 \
             (identity first, key key-1 kept to read what it encrypted)"
                .to_string(),
            "restart container kube-apiserver and wait until https://localhost:6443/healthz \
             is healthy"
                .to_string(),
        ];
        assert_eq!(
            shown,
            vec![
                ("10.0.0.1".to_string(), expected.clone()),
                ("10.0.0.3".to_string(), expected)
            ]
        );
        // The key travels with the action, never into its JSON.
        let Action::WriteFileSet { files, .. } = &planned[0].1[0] else {
            panic!("{planned:?}")
        };
        assert_eq!(files[0].contents, file().contents);
        let json = serde_json::to_string(&planned[0].1[0]).unwrap();
        assert!(!json.contains("c2VjcmV0"), "{json}");
    }

    #[test]
    fn nothing_when_no_kube_apiserver_runs() {
        assert!(disable_encryption(&[host("10.0.0.1", false)], &file()).is_none());
        assert!(disable_encryption(&[], &file()).is_none());
    }
}
