//! `~/.ssh/config` support. OpenSSH itself resolves the file (`ssh -G`), so Host patterns,
//! Match blocks, Include and token expansion behave exactly as for `ssh`. Only settings the
//! file actually changes are taken: we compare with `ssh -G -F /dev/null` (pure defaults).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Settings `~/.ssh/config` gives for one host alias.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshConfigHost {
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_files: Vec<PathBuf>,
    /// `ProxyJump` as written: `[user@]host[:port]`, possibly a comma-separated chain.
    pub proxy_jump: Option<String>,
}

/// A parsed `ProxyJump` hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JumpHost {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

/// Resolves `alias` through the ssh config file (`None` = `~/.ssh/config`). Returns `None`
/// when there is no config file, no `ssh` client, or nothing in the file applies.
pub fn resolve(alias: &str, config: Option<&Path>) -> Option<SshConfigHost> {
    let path = match config {
        Some(p) => p.to_owned(),
        None => dirs::home_dir()?.join(".ssh/config"),
    };
    if !path.is_file() {
        return None;
    }
    let with = run_ssh_g(alias, &path)?;
    let without = run_ssh_g(alias, Path::new("/dev/null"))?;
    let changed = |k: &str| -> Option<String> {
        let a = with.get(k)?;
        (Some(a) != without.get(k)).then(|| a.join(" "))
    };
    let host = SshConfigHost {
        hostname: changed("hostname"),
        user: changed("user"),
        port: changed("port").and_then(|p| p.parse().ok()),
        identity_files: match (with.get("identityfile"), without.get("identityfile")) {
            (Some(a), b) if Some(a) != b => a.iter().map(PathBuf::from).collect(),
            _ => Vec::new(),
        },
        proxy_jump: changed("proxyjump").filter(|p| p != "none"),
    };
    (host != SshConfigHost::default()).then_some(host)
}

fn run_ssh_g(alias: &str, config: &Path) -> Option<BTreeMap<String, Vec<String>>> {
    let out = Command::new("ssh")
        .arg("-G")
        .arg("-F")
        .arg(config)
        .arg("--")
        .arg(alias)
        .output()
        .ok()?;
    if !out.status.success() {
        tracing::warn!(
            "ssh -G {alias} failed, ignoring {}: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((k, v)) = line.split_once(' ') {
            map.entry(k.to_owned()).or_default().push(v.to_owned());
        }
    }
    Some(map)
}

/// Parses a `ProxyJump` value into hops, first hop first.
pub fn parse_proxy_jump(value: &str) -> Vec<JumpHost> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|hop| {
            let hop = hop.strip_prefix("ssh://").unwrap_or(hop);
            let (user, rest) = match hop.rsplit_once('@') {
                Some((u, r)) => (Some(u.to_owned()), r),
                None => (None, hop),
            };
            let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
                match inner.split_once(']') {
                    Some((h, p)) => (
                        h.to_owned(),
                        p.strip_prefix(':').and_then(|p| p.parse().ok()),
                    ),
                    None => (inner.to_owned(), None),
                }
            } else {
                match rest.rsplit_once(':') {
                    Some((h, p)) if !h.contains(':') => (h.to_owned(), p.parse().ok()),
                    _ => (rest.to_owned(), None),
                }
            };
            JumpHost { user, host, port }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_jump_forms() {
        assert_eq!(
            parse_proxy_jump("admin@bastion:2222"),
            vec![JumpHost {
                user: Some("admin".into()),
                host: "bastion".into(),
                port: Some(2222)
            }]
        );
        assert_eq!(
            parse_proxy_jump("b1,[fe80::1]:22"),
            vec![
                JumpHost {
                    user: None,
                    host: "b1".into(),
                    port: None
                },
                JumpHost {
                    user: None,
                    host: "fe80::1".into(),
                    port: Some(22)
                }
            ]
        );
    }

    #[test]
    fn resolves_only_what_the_file_sets() {
        if std::process::Command::new("ssh")
            .arg("-V")
            .output()
            .is_err()
        {
            crate::test_skip("no ssh client");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config");
        std::fs::write(
            &cfg,
            "Host node-*\n  HostName 10.77.0.11\n  User rancher\n  Port 2200\n  IdentityFile /keys/id_node\n  ProxyJump jump@bastion:22\nHost other\n  Port 2201\n",
        )
        .unwrap();
        let h = resolve("node-a", Some(&cfg)).expect("matches");
        assert_eq!(h.hostname.as_deref(), Some("10.77.0.11"));
        assert_eq!(h.user.as_deref(), Some("rancher"));
        assert_eq!(h.port, Some(2200));
        assert_eq!(h.identity_files, vec![PathBuf::from("/keys/id_node")]);
        assert_eq!(h.proxy_jump.as_deref(), Some("jump@bastion:22"));
        let o = resolve("other", Some(&cfg)).expect("matches");
        assert_eq!(o.port, Some(2201));
        assert_eq!(o.user, None);
        assert_eq!(o.hostname, None);
        assert!(o.identity_files.is_empty());
        assert_eq!(resolve("unrelated", Some(&cfg)), None);
        assert_eq!(resolve("x", Some(&dir.path().join("missing"))), None);
    }
}
