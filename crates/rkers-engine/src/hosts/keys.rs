//! Key material for SSH authentication: private keys (inline or from a file, ed25519, RSA,
//! ECDSA, passphrase-protected), OpenSSH user certificates, and the ssh-agent.
//!
//! Keys are loaded lazily and at most once per run: all nodes usually share one key, so a
//! passphrase is asked for once (on a TTY) and the decoded key is reused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use russh::keys::{Certificate, PrivateKey};
use sha2::{Digest, Sha256};

use super::error::HostError;
use super::target::{Secret, SshAuth};

/// One way to prove who we are, in the order they are tried.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // few values, built once per host
pub(crate) enum AuthMethod {
    Key {
        /// Where the key came from, for messages (`ssh_key` or a path); never the key itself.
        source_name: String,
        key: Arc<PrivateKey>,
        cert: Option<Certificate>,
    },
    Agent,
    /// A configured key that could not be used (kept so failures can say so).
    Skipped {
        reason: String,
    },
}

impl std::fmt::Debug for AuthMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthMethod::Key {
                source_name, cert, ..
            } => write!(f, "Key({source_name}, cert: {})", cert.is_some()),
            AuthMethod::Agent => f.write_str("Agent"),
            AuthMethod::Skipped { reason } => write!(f, "Skipped({reason})"),
        }
    }
}

/// What the key loader may do besides reading files.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyLoadOptions {
    /// Prompt on the terminal for passphrases.
    pub prompt: bool,
    /// A passphrase given by the caller, tried before prompting.
    pub passphrase: Option<Secret>,
    /// The run's decoded keys.
    pub cache: KeyCache,
}

/// Decoded keys by source, shared by the hosts of one run (one [`super::SshOptions`] and its
/// clones): a passphrase is asked once per run, and two runs in one process (the library API)
/// never share a key or keep one that changed on disk.
#[derive(Clone, Default)]
pub struct KeyCache(Arc<Mutex<HashMap<String, Arc<PrivateKey>>>>);

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|c| c.len()).unwrap_or(0);
        write!(f, "KeyCache({n} keys)")
    }
}

pub(crate) fn agent_socket() -> Option<PathBuf> {
    std::env::var_os("SSH_AUTH_SOCK")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
}

/// Expands a leading `~/` with `$HOME`, as RKE1 does for `ssh_key_path`.
pub fn expand_tilde(path: &Path) -> PathBuf {
    match path.to_str().and_then(|s| s.strip_prefix("~/")) {
        Some(rest) => dirs::home_dir()
            .map(|h| h.join(rest))
            .unwrap_or_else(|| path.to_owned()),
        None => path.to_owned(),
    }
}

/// The methods to try for `auth`, given identity files from `~/.ssh/config` as a fallback.
///
/// With `agent_auth` the agent comes first. Otherwise the configured key comes first and the
/// agent is appended when `SSH_AUTH_SOCK` is set, so encrypted or missing keys still work
/// when the agent holds them (spec §32 pain point 20). A key that cannot be loaded is an error
/// only when no agent is there to fall back on.
pub(crate) fn auth_methods(
    host: &str,
    auth: &SshAuth,
    config_identity_files: &[PathBuf],
    opts: &KeyLoadOptions,
) -> Result<Vec<AuthMethod>, HostError> {
    let agent = auth.agent_auth || agent_socket().is_some();
    if auth.agent_auth && agent_socket().is_none() {
        return Err(HostError::NoAuthMethod {
            host: host.to_owned(),
            detail: "ssh_agent_auth is set but SSH_AUTH_SOCK is not: start ssh-agent and ssh-add the key".into(),
        });
    }
    let mut methods = Vec::new();
    if auth.agent_auth {
        methods.push(AuthMethod::Agent);
    }
    let cert = load_certificate(host, auth)?;
    let configured: Vec<(String, KeySource)> =
        if let Some(k) = auth.ssh_key.as_ref().filter(|k| !k.is_empty()) {
            vec![("ssh_key".to_owned(), KeySource::Inline(k.clone()))]
        } else if let Some(p) = &auth.ssh_key_path {
            let p = expand_tilde(p);
            vec![(p.display().to_string(), KeySource::File(p))]
        } else {
            config_identity_files
                .iter()
                .map(|p| expand_tilde(p))
                .filter(|p| p.exists())
                .map(|p| (p.display().to_string(), KeySource::File(p)))
                .collect()
        };
    let mut first_error = None;
    for (source_name, source) in configured {
        match load_key_cached(host, &source_name, &source, opts, agent) {
            Ok(key) => methods.push(AuthMethod::Key {
                source_name,
                key,
                cert: cert.clone(),
            }),
            Err(e) if agent => {
                tracing::debug!(
                    host,
                    "skipping key {source_name}, the agent will be tried: {e}"
                );
                let reason = match &e {
                    HostError::KeyEncrypted { .. } => {
                        format!("key {source_name}: passphrase-protected, left to the agent")
                    }
                    HostError::KeyUnusable { detail, .. } => format!("key {source_name}: {detail}"),
                    other => other.to_string(),
                };
                methods.push(AuthMethod::Skipped { reason });
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    if agent && !auth.agent_auth {
        methods.push(AuthMethod::Agent);
    }
    if !methods
        .iter()
        .any(|m| !matches!(m, AuthMethod::Skipped { .. }))
    {
        return Err(first_error.unwrap_or_else(|| HostError::NoAuthMethod {
            host: host.to_owned(),
            detail: "no ssh_key, ssh_key_path or IdentityFile is configured and no ssh-agent is running (SSH_AUTH_SOCK unset)".into(),
        }));
    }
    Ok(methods)
}

#[derive(Clone)]
enum KeySource {
    Inline(Secret),
    File(PathBuf),
}

impl KeySource {
    fn cache_key(&self) -> String {
        match self {
            KeySource::Inline(s) => format!("inline:{}", hex::encode(Sha256::digest(s.expose()))),
            KeySource::File(p) => format!("file:{}", p.display()),
        }
    }
}

fn load_key_cached(
    host: &str,
    source_name: &str,
    source: &KeySource,
    opts: &KeyLoadOptions,
    agent_available: bool,
) -> Result<Arc<PrivateKey>, HostError> {
    // Held across the prompt so parallel hosts wait for the one answer instead of asking again.
    let mut cache = opts.cache.0.lock().unwrap_or_else(|p| p.into_inner());
    let id = source.cache_key();
    if let Some(k) = cache.get(&id) {
        return Ok(k.clone());
    }
    let text = match source {
        KeySource::Inline(s) => s.expose().to_owned(),
        KeySource::File(p) => rkers_core::bounded::read_to_string(p, rkers_core::bounded::SSH_KEY)
            .map_err(|e| HostError::KeyUnusable {
                host: host.to_owned(),
                source_name: source_name.to_owned(),
                detail: format!("cannot read the file: {e}"),
            })?,
    };
    let key = decode_key(host, source_name, &text, opts, agent_available)?;
    let key = Arc::new(key);
    cache.insert(id, key.clone());
    Ok(key)
}

fn decode_key(
    host: &str,
    source_name: &str,
    text: &str,
    opts: &KeyLoadOptions,
    agent_available: bool,
) -> Result<PrivateKey, HostError> {
    let unusable = |detail: String| HostError::KeyUnusable {
        host: host.to_owned(),
        source_name: source_name.to_owned(),
        detail,
    };
    match russh::keys::decode_secret_key(text, None) {
        Ok(k) => return Ok(k),
        Err(russh::keys::Error::KeyIsEncrypted) => {}
        Err(e) => {
            if let Some(k) = super::key_repair::pad_short_ecdsa_scalar(text)
                .and_then(|fixed| russh::keys::decode_secret_key(&fixed, None).ok())
            {
                return Ok(k);
            }
            return Err(unusable(format!(
                "not a valid private key (OpenSSH, PEM or PKCS#8 expected): {e}"
            )));
        }
    }
    if let Some(p) = &opts.passphrase {
        match russh::keys::decode_secret_key(text, Some(p.expose())) {
            Ok(k) => return Ok(k),
            Err(e) if !opts.prompt => {
                return Err(unusable(format!(
                    "the given passphrase does not decrypt it ({e}){}",
                    short_scalar_hint(text, &e)
                )));
            }
            Err(_) => {}
        }
    }
    if opts.prompt && !agent_available {
        for attempt in 1..=3 {
            let term = console::Term::stderr();
            let _ = term.write_str(&format!("Passphrase for SSH key {source_name}: "));
            let pass = term
                .read_secure_line()
                .map_err(|e| unusable(format!("cannot read the passphrase: {e}")))?;
            match russh::keys::decode_secret_key(text, Some(&pass)) {
                Ok(k) => return Ok(k),
                Err(_) if attempt < 3 => {
                    let _ = term.write_line("Wrong passphrase, try again.");
                }
                Err(e) => {
                    return Err(unusable(format!(
                        "wrong passphrase ({e}){}",
                        short_scalar_hint(text, &e)
                    )));
                }
            }
        }
    }
    Err(HostError::KeyEncrypted {
        host: host.to_owned(),
        source_name: source_name.to_owned(),
    })
}

/// For an encrypted ECDSA key that fails with a length error: the key may be one of the
/// valid keys `ssh-key` cannot read (see `key_repair`), which rkers can only repair unencrypted.
fn short_scalar_hint(text: &str, e: &russh::keys::Error) -> &'static str {
    let length_error = matches!(
        e,
        russh::keys::Error::SshKey(russh::keys::ssh_key::Error::Encoding(
            russh::keys::ssh_key::encoding::Error::Length
        ))
    );
    if length_error && text.contains("OPENSSH PRIVATE KEY") {
        "; if the passphrase is right, this is an ECDSA key whose private scalar has a leading \
         zero, which the SSH library cannot decrypt: load it into ssh-agent (agent_auth: true), \
         or remove its passphrase (ssh-keygen -p -N '' -f KEY)"
    } else {
        ""
    }
}

fn load_certificate(host: &str, auth: &SshAuth) -> Result<Option<Certificate>, HostError> {
    let (name, text) =
        if let Some(c) = auth.ssh_cert.as_ref().filter(|c| !c.trim().is_empty()) {
            ("ssh_cert".to_owned(), c.clone())
        } else if let Some(p) = &auth.ssh_cert_path {
            let p = expand_tilde(p);
            let text = rkers_core::bounded::read_to_string(&p, rkers_core::bounded::SSH_KEY)
                .map_err(|e| HostError::KeyUnusable {
                    host: host.to_owned(),
                    source_name: p.display().to_string(),
                    detail: format!("cannot read the certificate: {e}"),
                })?;
            (p.display().to_string(), text)
        } else {
            return Ok(None);
        };
    Certificate::from_openssh(text.trim())
        .map(Some)
        .map_err(|e| HostError::KeyUnusable {
            host: host.to_owned(),
            source_name: name,
            detail: format!("not an OpenSSH certificate: {e}"),
        })
}

/// Human description of a key for "methods tried" lists: type and SHA256 fingerprint.
pub(crate) fn describe_key(key: &PrivateKey) -> String {
    format!(
        "{} {}",
        key.algorithm().as_str(),
        key.public_key().fingerprint(russh::keys::HashAlg::Sha256)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keygen(dir: &Path, name: &str, kind: &str, pass: &str) -> PathBuf {
        let path = dir.join(name);
        let st = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", kind, "-N", pass, "-C", "test", "-f"])
            .arg(&path)
            .status()
            .expect("ssh-keygen runs");
        assert!(st.success());
        path
    }

    fn no_agent() -> KeyLoadOptions {
        KeyLoadOptions::default()
    }

    #[test]
    fn loads_ed25519_rsa_ecdsa_from_file_and_inline() {
        if which("ssh-keygen").is_none() {
            crate::test_skip("ssh-keygen not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        for kind in ["ed25519", "rsa", "ecdsa"] {
            let path = keygen(dir.path(), kind, kind, "");
            let auth = SshAuth {
                ssh_key_path: Some(path.clone()),
                ..Default::default()
            };
            let m = auth_methods("h", &auth, &[], &no_agent()).unwrap();
            let AuthMethod::Key {
                key, source_name, ..
            } = &m[0]
            else {
                panic!("expected a key first, got {m:?}");
            };
            assert_eq!(source_name, &path.display().to_string());
            assert!(describe_key(key).contains("SHA256:"));
            let inline = SshAuth {
                ssh_key: Some(Secret::new(std::fs::read_to_string(&path).unwrap())),
                ssh_key_path: Some("/does/not/exist".into()),
                ..Default::default()
            };
            let m = auth_methods("h", &inline, &[], &no_agent()).unwrap();
            assert!(
                matches!(&m[0], AuthMethod::Key { source_name, .. } if source_name == "ssh_key")
            );
        }
    }

    #[test]
    fn encrypted_key_without_tty_or_agent_suggests_the_agent() {
        if which("ssh-keygen").is_none() || agent_socket().is_some() {
            crate::test_skip("needs ssh-keygen and no SSH_AUTH_SOCK");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = keygen(dir.path(), "enc", "ed25519", "sekrit-pass");
        let auth = SshAuth {
            ssh_key_path: Some(path.clone()),
            ..Default::default()
        };
        let err = auth_methods("node1", &auth, &[], &no_agent()).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), "key-encrypted");
        assert!(
            msg.contains("node1") && msg.contains("ssh-agent") && msg.contains("ssh_agent_auth"),
            "{msg}"
        );
        assert!(!msg.contains("sekrit"));
        // With the passphrase given it decodes.
        let opts = KeyLoadOptions {
            prompt: false,
            passphrase: Some(Secret::new("sekrit-pass")),
            ..Default::default()
        };
        let m = auth_methods("node1", &auth, &[], &opts).unwrap();
        assert!(matches!(&m[0], AuthMethod::Key { .. }));
    }

    #[test]
    fn missing_key_file_and_garbage_key_name_the_host_and_source() {
        if agent_socket().is_some() {
            crate::test_skip("SSH_AUTH_SOCK is set");
            return;
        }
        let auth = SshAuth {
            ssh_key_path: Some("/nonexistent/id_x".into()),
            ..Default::default()
        };
        let msg = auth_methods("n2", &auth, &[], &no_agent())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("n2") && msg.contains("/nonexistent/id_x") && msg.contains("cannot read"),
            "{msg}"
        );
        let auth = SshAuth {
            ssh_key: Some(Secret::new("not a key at all")),
            ..Default::default()
        };
        let msg = auth_methods("n3", &auth, &[], &no_agent())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("n3")
                && msg.contains("ssh_key")
                && msg.contains("not a valid private key"),
            "{msg}"
        );
        assert!(!msg.contains("not a key at all"));
        let msg = auth_methods("n4", &SshAuth::default(), &[], &no_agent())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("no ssh_key"), "{msg}");
    }

    #[test]
    fn certificate_is_attached_to_the_key() {
        if which("ssh-keygen").is_none() {
            crate::test_skip("ssh-keygen not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let ca = keygen(dir.path(), "ca", "ed25519", "");
        let user = keygen(dir.path(), "user", "ed25519", "");
        let st = std::process::Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(&ca)
            .args(["-I", "test", "-n", "root", "-V", "+1h"])
            .arg(user.with_extension("pub"))
            .status()
            .unwrap();
        assert!(st.success());
        let auth = SshAuth {
            ssh_key_path: Some(user.clone()),
            ssh_cert_path: Some(dir.path().join("user-cert.pub")),
            ..Default::default()
        };
        let m = auth_methods("h", &auth, &[], &no_agent()).unwrap();
        assert!(matches!(&m[0], AuthMethod::Key { cert: Some(_), .. }));
    }

    pub(crate) fn which(bin: &str) -> Option<PathBuf> {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(bin))
                .find(|p| p.exists())
        })
    }
}
