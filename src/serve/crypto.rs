//! Encryption at rest of what the server stores that holds secrets (the cluster.yml, every
//! state version with its private keys, the admin kubeconfig): AES-256-GCM with the key given
//! by `--secret-key-file`, a fresh random nonce per value, and the row's purpose as associated
//! data so a sealed value copied into another cluster's row does not open.

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::path::Path;

const PREFIX: &str = "v1:";
const NONCE_LEN: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "{path}: cannot read the secret key: {source}. Remedy: create it with \
         `head -c 32 /dev/urandom > {path}; chmod 600 {path}`"
    )]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}: the secret key must be exactly 32 bytes (or 64 hex digits), found {found} bytes. \
         Remedy: `head -c 32 /dev/urandom > {path}`"
    )]
    Length { path: String, found: usize },
    #[error(
        "{what}: the stored value does not decrypt with this server's secret key (another \
         --secret-key-file, or the row was altered)"
    )]
    Open { what: String },
}

/// The server's key; never printed (no `Debug` that shows it).
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(<key>)")
    }
}

impl SecretBox {
    pub fn new(key: &[u8; 32]) -> Self {
        SecretBox {
            cipher: Aes256Gcm::new(&(*key).into()),
        }
    }

    /// Reads the key: 32 raw bytes, or 64 hex digits (with an optional trailing newline).
    pub fn from_file(path: &Path) -> Result<Self, SecretError> {
        let shown = path.display().to_string();
        let bytes =
            rkers_core::bounded::read(path, rkers_core::bounded::SECRET).map_err(|source| {
                SecretError::Read {
                    path: shown.clone(),
                    source,
                }
            })?;
        let key: Vec<u8> = match std::str::from_utf8(&bytes).map(str::trim) {
            Ok(text) if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) => {
                hex::decode(text).unwrap_or_default()
            }
            _ => bytes,
        };
        let key: [u8; 32] = key.as_slice().try_into().map_err(|_| SecretError::Length {
            path: shown,
            found: key.len(),
        })?;
        Ok(Self::new(&key))
    }

    /// Encrypts `plain`; `purpose` (e.g. `state:prod`) must be given again to open it.
    pub fn seal(&self, purpose: &str, plain: &[u8]) -> String {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let sealed = self
            .cipher
            .encrypt(
                &nonce.into(),
                Payload {
                    msg: plain,
                    aad: purpose.as_bytes(),
                },
            )
            // Only fails for inputs of gigabytes; a state is kilobytes.
            .expect("AES-GCM encrypts any input below 64 GiB");
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", STANDARD.encode(out))
    }

    pub fn open(&self, purpose: &str, sealed: &str) -> Result<Vec<u8>, SecretError> {
        let fail = || SecretError::Open {
            what: purpose.to_string(),
        };
        let raw = sealed
            .strip_prefix(PREFIX)
            .and_then(|b| STANDARD.decode(b).ok())
            .filter(|raw| raw.len() > NONCE_LEN)
            .ok_or_else(fail)?;
        let (nonce, body) = raw.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| fail())?;
        self.cipher
            .decrypt(
                &nonce.into(),
                Payload {
                    msg: body,
                    aad: purpose.as_bytes(),
                },
            )
            .map_err(|_| fail())
    }

    pub fn open_string(&self, purpose: &str, sealed: &str) -> Result<String, SecretError> {
        String::from_utf8(self.open(purpose, sealed)?).map_err(|_| SecretError::Open {
            what: purpose.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_round_trip_and_hide_the_plaintext() {
        let key = SecretBox::new(&[7; 32]);
        let secret = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecret\n";
        let sealed = key.seal("state:prod", secret.as_bytes());
        assert!(!sealed.contains("PRIVATE KEY"), "{sealed}");
        assert!(!sealed.contains(&STANDARD.encode(secret)), "{sealed}");
        assert_eq!(key.open_string("state:prod", &sealed).unwrap(), secret);
        // Two seals of one value differ (fresh nonce).
        assert_ne!(sealed, key.seal("state:prod", secret.as_bytes()));
    }

    #[test]
    fn a_wrong_key_purpose_or_tampered_value_does_not_open() {
        let key = SecretBox::new(&[7; 32]);
        let sealed = key.seal("state:prod", b"certs");
        assert!(
            SecretBox::new(&[8; 32])
                .open("state:prod", &sealed)
                .is_err()
        );
        let err = key.open("state:dev", &sealed).unwrap_err();
        assert!(err.to_string().contains("state:dev"), "{err}");
        let mut raw = STANDARD.decode(&sealed[3..]).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        assert!(
            key.open("state:prod", &format!("v1:{}", STANDARD.encode(raw)))
                .is_err()
        );
        assert!(key.open("state:prod", "plain text").is_err());
    }

    #[test]
    fn the_key_file_is_32_bytes_or_64_hex_digits() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        std::fs::write(&raw, [1u8; 32]).unwrap();
        let hexed = dir.path().join("hex");
        std::fs::write(&hexed, format!("{}\n", hex::encode([1u8; 32]))).unwrap();
        let a = SecretBox::from_file(&raw).unwrap();
        let b = SecretBox::from_file(&hexed).unwrap();
        assert_eq!(b.open("x", &a.seal("x", b"same key")).unwrap(), b"same key");
        let short = dir.path().join("short");
        std::fs::write(&short, [1u8; 16]).unwrap();
        let err = SecretBox::from_file(&short).unwrap_err().to_string();
        assert!(
            err.contains("exactly 32 bytes") && err.contains("found 16"),
            "{err}"
        );
    }
}
