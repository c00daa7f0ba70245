//! Bearer-token authentication of every `/v1` request. The server keeps only SHA-256 hashes of
//! the tokens from `--tokens-file` and compares a presented token's hash with each of them in
//! constant time, so neither the tokens nor timing reveal anything.

use sha2::{Digest, Sha256};
use std::path::Path;
use subtle::ConstantTimeEq;

#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    #[error("{path}: cannot read the tokens file: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    #[error(
        "{path}: no token in the tokens file. Remedy: add one token per line (or \
         `sha256:<hex digest>`); blank lines and `#` comments are ignored"
    )]
    Empty { path: String },
}

#[derive(Clone)]
pub struct Tokens {
    hashes: Vec<[u8; 32]>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} hashes)", self.hashes.len())
    }
}

impl Tokens {
    /// One token a line, or `sha256:<64 hex digits>` for a token given by its hash; blank lines
    /// and `#` comments are skipped.
    pub fn from_file(path: &Path) -> Result<Self, TokensError> {
        let shown = path.display().to_string();
        let text = rkers_core::bounded::read_to_string(path, rkers_core::bounded::SECRET).map_err(
            |source| TokensError::Read {
                path: shown.clone(),
                source,
            },
        )?;
        let mut hashes = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let hash = match line.strip_prefix("sha256:") {
                Some(digest) => hex::decode(digest)
                    .ok()
                    .and_then(|d| <[u8; 32]>::try_from(d).ok())
                    .ok_or_else(|| TokensError::Line {
                        path: shown.clone(),
                        line: n + 1,
                        message: "`sha256:` must be followed by 64 hex digits".into(),
                    })?,
                None if line.len() < 16 => {
                    return Err(TokensError::Line {
                        path: shown,
                        line: n + 1,
                        message: "a token must be at least 16 characters long (e.g. \
                                  `openssl rand -hex 32`)"
                            .into(),
                    });
                }
                None => hash(line),
            };
            hashes.push(hash);
        }
        if hashes.is_empty() {
            return Err(TokensError::Empty { path: shown });
        }
        Ok(Tokens { hashes })
    }

    pub fn from_plain(tokens: &[&str]) -> Self {
        Tokens {
            hashes: tokens.iter().map(|t| hash(t)).collect(),
        }
    }

    /// Whether the `Authorization` header's value names a known token. The scheme is matched
    /// without regard to case (`Bearer`, `bearer`; RFC 9110 §11.1). Every stored hash is
    /// compared, whatever matched, so the time taken does not tell which one did.
    pub fn allows(&self, authorization: Option<&str>) -> bool {
        let Some((scheme, token)) = authorization.and_then(|v| v.trim().split_once([' ', '\t']))
        else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return false;
        }
        let presented = hash(token.trim());
        let mut found = subtle::Choice::from(0);
        for h in &self.hashes {
            found |= h.ct_eq(&presented);
        }
        found.into()
    }
}

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_file_takes_tokens_and_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        let second = "0123456789abcdef-second";
        std::fs::write(
            &path,
            format!(
                "# operators\nfirst-token-0123456789\n\nsha256:{}\n",
                hex::encode(hash(second))
            ),
        )
        .unwrap();
        let tokens = Tokens::from_file(&path).unwrap();
        assert!(tokens.allows(Some("Bearer first-token-0123456789")));
        assert!(tokens.allows(Some(&format!("Bearer {second}"))));
        assert!(!tokens.allows(Some("Bearer first-token-012345678")));
        assert!(!tokens.allows(Some("first-token-0123456789")));
        assert!(!tokens.allows(None));
        assert!(!format!("{tokens:?}").contains("first"));
    }

    #[test]
    fn bad_tokens_files_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "# c\nshort\n").unwrap();
        let err = Tokens::from_file(&path).unwrap_err().to_string();
        assert!(err.ends_with("tokens:2: a token must be at least 16 characters long (e.g. `openssl rand -hex 32`)"), "{err}");
        std::fs::write(&path, "# only a comment\n").unwrap();
        assert!(matches!(
            Tokens::from_file(&path),
            Err(TokensError::Empty { .. })
        ));
    }
}
