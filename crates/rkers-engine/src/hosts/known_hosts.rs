//! OpenSSH `known_hosts` files: reading (plain and hashed `|1|` host names, `[host]:port`,
//! wildcard and negated patterns, `@revoked` and `@cert-authority` markers), deciding whether
//! a server key is known, changed or new, and appending new entries in OpenSSH's format.
//!
//! russh's own helpers compare exact host strings only, hence this module.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{KeyInit, Mac};
use russh::keys::{HashAlg, PublicKey};

#[derive(Debug, thiserror::Error)]
pub enum KnownHostsError {
    #[error("cannot read known_hosts file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot record the host key in {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One usable line of a known_hosts file.
#[derive(Clone, Debug)]
struct Entry {
    line: usize,
    marker: Marker,
    patterns: HostPatterns,
    key: PublicKey,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    None,
    CertAuthority,
    Revoked,
}

#[derive(Clone, Debug)]
enum HostPatterns {
    /// `|1|base64(salt)|base64(hmac_sha1(salt, name))`
    Hashed { salt: Vec<u8>, hash: Vec<u8> },
    /// Comma-separated patterns; `!` negates, `*` and `?` are wildcards.
    Plain(Vec<String>),
}

/// The verdict about a server key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKeyStatus {
    /// The key is recorded for this host (file and line).
    Known { path: PathBuf, line: usize },
    /// The host is not recorded with a key of this type.
    Unknown,
    /// The host is recorded with a different key of the same type.
    Changed {
        path: PathBuf,
        line: usize,
        /// SHA256 fingerprint of the recorded key.
        old_fingerprint: String,
    },
    /// The key is listed as `@revoked`.
    Revoked { path: PathBuf, line: usize },
}

/// The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise.
pub fn lookup_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_owned()
    } else {
        format!("[{host}]:{port}")
    }
}

/// `SHA256:...` as OpenSSH prints it.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// A parsed known_hosts file. Lines that do not parse are skipped, as OpenSSH does.
#[derive(Clone, Debug)]
pub struct KnownHosts {
    path: PathBuf,
    entries: Vec<Entry>,
}

impl KnownHosts {
    /// Reads `path`; a missing file is an empty list.
    pub fn load(path: &Path) -> Result<Self, KnownHostsError> {
        let text = match rkers_core::bounded::read_to_string(path, rkers_core::bounded::KNOWN_HOSTS)
        {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(KnownHostsError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Ok(Self::parse(path, &text))
    }

    pub fn parse(path: &Path, text: &str) -> Self {
        let entries = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| parse_line(i + 1, l))
            .collect();
        KnownHosts {
            path: path.to_owned(),
            entries,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Decides about `key` offered by `host:port`. `aliases` are further names the host is
    /// known by (e.g. the HostName behind an ssh_config alias) and are checked too.
    pub fn check(&self, names: &[String], key: &PublicKey) -> HostKeyStatus {
        let matching: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| names.iter().any(|n| e.patterns.matches(n)))
            .collect();
        for e in &matching {
            if e.marker == Marker::Revoked && e.key.key_data() == key.key_data() {
                return HostKeyStatus::Revoked {
                    path: self.path.clone(),
                    line: e.line,
                };
            }
        }
        if let Some(e) = matching
            .iter()
            .find(|e| e.marker == Marker::None && e.key.key_data() == key.key_data())
        {
            return HostKeyStatus::Known {
                path: self.path.clone(),
                line: e.line,
            };
        }
        if let Some(e) = matching
            .iter()
            .find(|e| e.marker == Marker::None && e.key.algorithm() == key.algorithm())
        {
            return HostKeyStatus::Changed {
                path: self.path.clone(),
                line: e.line,
                old_fingerprint: fingerprint(&e.key),
            };
        }
        HostKeyStatus::Unknown
    }
}

/// Serialises appends from hosts connecting in parallel.
static APPEND_LOCK: Mutex<()> = Mutex::new(());

/// Appends `name keytype base64` to `path`, creating the file (0600) and its directory (0700)
/// when missing.
pub fn append(path: &Path, name: &str, key: &PublicKey) -> Result<(), KnownHostsError> {
    let _guard = APPEND_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let werr = |source| KnownHostsError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).map_err(werr)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut file = opts.open(path).map_err(werr)?;
    // A file without a trailing newline would glue our entry to its last line.
    let len = file.metadata().map_err(werr)?.len();
    let mut line = String::new();
    if len > 0 {
        let text =
            rkers_core::bounded::read(path, rkers_core::bounded::KNOWN_HOSTS).map_err(werr)?;
        if text.last() != Some(&b'\n') {
            line.push('\n');
        }
    }
    use russh::keys::PublicKeyBase64;
    let openssh = format!("{} {}", key.algorithm().as_str(), key.public_key_base64());
    line.push_str(&format!("{name} {openssh}\n"));
    file.write_all(line.as_bytes()).map_err(werr)
}

fn parse_line(line_no: usize, line: &str) -> Option<Entry> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split_whitespace();
    let mut first = fields.next()?;
    let marker = match first {
        "@cert-authority" => Marker::CertAuthority,
        "@revoked" => Marker::Revoked,
        m if m.starts_with('@') => return None,
        _ => Marker::None,
    };
    if marker != Marker::None {
        first = fields.next()?;
    }
    let patterns = parse_patterns(first)?;
    let _key_type = fields.next()?;
    let blob = fields.next()?;
    let key = russh::keys::parse_public_key_base64(blob).ok()?;
    Some(Entry {
        line: line_no,
        marker,
        patterns,
        key,
    })
}

fn parse_patterns(field: &str) -> Option<HostPatterns> {
    if let Some(rest) = field.strip_prefix("|1|") {
        let (salt, hash) = rest.split_once('|')?;
        return Some(HostPatterns::Hashed {
            salt: B64.decode(salt).ok()?,
            hash: B64.decode(hash).ok()?,
        });
    }
    Some(HostPatterns::Plain(
        field.split(',').map(|p| p.to_ascii_lowercase()).collect(),
    ))
}

impl HostPatterns {
    fn matches(&self, name: &str) -> bool {
        match self {
            HostPatterns::Hashed { salt, hash } => {
                let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(salt) else {
                    return false;
                };
                mac.update(name.as_bytes());
                mac.verify_slice(hash).is_ok()
            }
            HostPatterns::Plain(patterns) => {
                let name = name.to_ascii_lowercase();
                let mut matched = false;
                for p in patterns {
                    if let Some(neg) = p.strip_prefix('!') {
                        if wildcard_match(neg, &name) {
                            return false;
                        }
                    } else if wildcard_match(p, &name) {
                        matched = true;
                    }
                }
                matched
            }
        }
    }
}

/// OpenSSH's `match_pattern`: `*` any run, `?` one character.
pub(crate) fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut star_t) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            star_t = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            star_t += 1;
            ti = star_t;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: `--known-hosts` naming a device or a FIFO read until memory ran out or blocked
    /// for ever; it is refused at once, naming the file.
    #[test]
    fn a_known_hosts_that_is_no_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        for path in [Path::new("/dev/zero"), fifo.as_path()] {
            let Err(e) = KnownHosts::load(path) else {
                panic!("{path:?} was read as a known_hosts file");
            };
            let text = e.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains("not a regular file"), "{text}");
        }
    }

    const ED1: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ";
    const ED2: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOeqKfxPGmuuvwXgggx5Ue0s0o0qTyFOmo4u8XeeKUsZ";

    fn key(b64: &str) -> PublicKey {
        russh::keys::parse_public_key_base64(b64).unwrap()
    }

    fn other_ed25519() -> PublicKey {
        key(ED2)
    }

    fn names(h: &str, port: u16) -> Vec<String> {
        vec![lookup_name(h, port)]
    }

    #[test]
    fn plain_port_and_patterns() {
        let text = format!(
            "# comment\n\
             10.0.0.1 ssh-ed25519 {ED1}\n\
             [10.0.0.2]:2222 ssh-ed25519 {ED1}\n\
             *.example.com,!bad.example.com ssh-ed25519 {ED1}\n\
             garbage line\n"
        );
        let kh = KnownHosts::parse(Path::new("kh"), &text);
        let k = key(ED1);
        assert_eq!(
            kh.check(&names("10.0.0.1", 22), &k),
            HostKeyStatus::Known {
                path: "kh".into(),
                line: 2
            }
        );
        assert_eq!(
            kh.check(&names("10.0.0.1", 2222), &k),
            HostKeyStatus::Unknown
        );
        assert!(matches!(
            kh.check(&names("10.0.0.2", 2222), &k),
            HostKeyStatus::Known { line: 3, .. }
        ));
        assert!(matches!(
            kh.check(&names("a.EXAMPLE.com", 22), &k),
            HostKeyStatus::Known { line: 4, .. }
        ));
        assert_eq!(
            kh.check(&names("bad.example.com", 22), &k),
            HostKeyStatus::Unknown
        );
    }

    #[test]
    fn changed_key_reports_old_fingerprint() {
        let text = format!("10.0.0.1 ssh-ed25519 {ED1}\n");
        let kh = KnownHosts::parse(Path::new("kh"), &text);
        let new = other_ed25519();
        match kh.check(&names("10.0.0.1", 22), &new) {
            HostKeyStatus::Changed {
                line,
                old_fingerprint,
                ..
            } => {
                assert_eq!(line, 1);
                assert_eq!(old_fingerprint, fingerprint(&key(ED1)));
                assert!(old_fingerprint.starts_with("SHA256:"));
            }
            other => panic!("expected Changed, got {other:?}"),
        }
    }

    #[test]
    fn hashed_entry_written_by_ssh_keygen_matches() {
        // ssh-keygen -H turns a plain entry into |1|salt|hash; compute one the same way.
        let salt = [7u8; 20];
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).unwrap();
        mac.update(b"[10.77.0.11]:22");
        let hash = mac.finalize().into_bytes();
        let text = format!(
            "|1|{}|{} ssh-ed25519 {ED1}\n",
            B64.encode(salt),
            B64.encode(hash)
        );
        let kh = KnownHosts::parse(Path::new("kh"), &text);
        assert!(matches!(
            kh.check(&["[10.77.0.11]:22".into()], &key(ED1)),
            HostKeyStatus::Known { line: 1, .. }
        ));
        assert_eq!(
            kh.check(&["10.77.0.12".into()], &key(ED1)),
            HostKeyStatus::Unknown
        );
    }

    #[test]
    fn revoked_and_cert_authority_markers() {
        let text =
            format!("@revoked * ssh-ed25519 {ED1}\n@cert-authority *.corp ssh-ed25519 {ED1}\n");
        let kh = KnownHosts::parse(Path::new("kh"), &text);
        assert!(matches!(
            kh.check(&names("any", 22), &key(ED1)),
            HostKeyStatus::Revoked { line: 1, .. }
        ));
        // A CA line never counts as a plain host key.
        let kh = KnownHosts::parse(
            Path::new("kh"),
            &format!("@cert-authority h ssh-ed25519 {ED1}\n"),
        );
        assert_eq!(kh.check(&names("h", 22), &key(ED1)), HostKeyStatus::Unknown);
    }

    #[test]
    fn append_then_known_and_readable_by_ssh_keygen_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/known_hosts");
        let k = other_ed25519();
        append(&path, "[127.0.0.1]:2222", &k).unwrap();
        append(&path, "10.0.0.9", &key(ED1)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("[127.0.0.1]:2222 ssh-ed25519 AAAA"),
            "{first}"
        );
        assert_eq!(first.split(' ').count(), 3, "no comment: {first}");
        let kh = KnownHosts::load(&path).unwrap();
        assert!(matches!(
            kh.check(&names("127.0.0.1", 2222), &k),
            HostKeyStatus::Known { line: 1, .. }
        ));
        assert!(matches!(
            kh.check(&names("10.0.0.9", 22), &key(ED1)),
            HostKeyStatus::Known { line: 2, .. }
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", "x"));
        assert!(wildcard_match("10.77.0.*", "10.77.0.11"));
        assert!(wildcard_match("h?st", "host"));
        assert!(!wildcard_match("h?st", "hoost"));
        assert!(!wildcard_match("a*b", "acbd"));
    }
}
