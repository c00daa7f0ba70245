//! Masks secrets in any text before it is shown: PEM private keys wherever they appear, and every
//! secret value the run registered (registry passwords, S3 keys, inline SSH keys, tokens).

use std::sync::{Arc, OnceLock, RwLock};

const MASK: &str = "[REDACTED]";
/// A secret shorter than this is masked only where it stands alone (not inside a longer word),
/// so a short password never shows, yet does not mask every word that contains it.
const MIN_SECRET_LEN: usize = 6;

#[derive(Default)]
pub struct Redactor {
    secrets: RwLock<Vec<String>>,
}

impl Redactor {
    /// The command line's redactor: one command per process, so one set of secrets. An
    /// operation of the library API has its own (see `Reporter::with_sink`).
    pub fn global() -> &'static Arc<Redactor> {
        static GLOBAL: OnceLock<Arc<Redactor>> = OnceLock::new();
        GLOBAL.get_or_init(Default::default)
    }

    /// Remembers a secret value so it is masked wherever it shows up later.
    pub fn register(&self, secret: &str) {
        let secret = secret.trim();
        if secret.is_empty() {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(|p| p.into_inner());
        if !secrets.iter().any(|s| s == secret) {
            secrets.push(secret.to_string());
            // Longest first, so a secret containing another is masked whole.
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = mask_private_key_blocks(text);
        let secrets = self.secrets.read().unwrap_or_else(|p| p.into_inner());
        for secret in secrets.iter() {
            if !out.contains(secret.as_str()) {
                continue;
            }
            out = if secret.len() >= MIN_SECRET_LEN {
                out.replace(secret.as_str(), MASK)
            } else {
                replace_standalone(&out, secret)
            };
        }
        out
    }
}

/// Parts of a variable or flag name that say its value is a credential (compared without case,
/// `-` read as `_`): a registry's docker config (base64 of `user:password`), S3 keys, tokens.
const SECRET_NAME_PARTS: [&str; 7] = [
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "ACCESS_KEY",
    "DOCKER_CONFIG",
];

/// Whether an environment variable or command-line flag of this name carries a credential.
pub fn is_secret_name(name: &str) -> bool {
    let name = name
        .trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_");
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// `NAME=value` (an environment entry) or `--name=value` (a flag) with the value masked when
/// the name carries a credential: a diff of such an entry then says only that it changed.
pub fn mask_secret_assignment(entry: &str) -> String {
    match entry.split_once('=') {
        Some((name, value)) if !value.is_empty() && is_secret_name(name) => {
            format!("{name}={MASK}")
        }
        _ => entry.to_string(),
    }
}

/// Replaces the occurrences of `needle` not directly preceded or followed by a letter or digit.
fn replace_standalone(text: &str, needle: &str) -> String {
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(needle) {
        if i < last {
            continue;
        }
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        if is_word(before) || is_word(after) {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str(MASK);
        last = i + needle.len();
    }
    out.push_str(&text[last..]);
    out
}

/// Masks through the global redactor.
pub fn redact(text: &str) -> String {
    Redactor::global().redact(text)
}

/// Replaces the body of every `-----BEGIN ... PRIVATE KEY-----` block (to its END line, or to the
/// end of the text when the block is cut off).
fn mask_private_key_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let header_end = rest[start + 11..].find("-----").map(|i| start + 11 + i + 5);
        let Some(header_end) = header_end else { break };
        let label = &rest[start + 11..header_end - 5];
        out.push_str(&rest[..start]);
        if !label.contains("PRIVATE KEY") {
            out.push_str(&rest[start..header_end]);
            rest = &rest[header_end..];
            continue;
        }
        let end_marker = format!("-----END {label}-----");
        out.push_str(&format!("-----BEGIN {label}-----{MASK}"));
        match rest[header_end..].find(&end_marker) {
            Some(i) => {
                out.push_str(&end_marker);
                rest = &rest[header_end + i + end_marker.len()..];
            }
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_key_blocks_are_masked_certificates_kept() {
        let text = "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- cert: -----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        let out = mask_private_key_blocks(text);
        assert!(!out.contains("MIIEabc"), "{out}");
        assert!(
            out.contains("-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----")
        );
        assert!(out.contains("MIIB"), "certificates are public: {out}");
    }

    #[test]
    fn truncated_key_block_is_masked_to_the_end() {
        let out =
            mask_private_key_blocks("oops -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt");
        assert_eq!(out, "oops -----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]");
    }

    #[test]
    fn registered_secrets_are_masked_longest_first() {
        let r = Redactor::default();
        r.register("hunter2hunter2");
        r.register("hunter2hunter2-and-more");
        let out = r.redact("a hunter2hunter2-and-more b hunter2hunter2 c abc");
        assert_eq!(out, "a [REDACTED] b [REDACTED] c abc");
    }

    #[test]
    fn short_secrets_are_masked_where_they_stand_alone() {
        let r = Redactor::default();
        r.register("pw1");
        r.register("x");
        let out = r.redact("password pw1, login=pw1; pw12 apw1 x-ray ox \"x\"");
        assert_eq!(
            out,
            "password [REDACTED], login=[REDACTED]; pw12 apw1 [REDACTED]-ray ox \"[REDACTED]\""
        );
    }

    #[test]
    fn assignments_of_credentials_are_masked_by_name() {
        for entry in [
            "RKE_KUBELET_DOCKER_CONFIG=eyJhdXRocyI6e319",
            "S3_SECRET_KEY=c2VjcmV0",
            "--db-password=hunter2",
            "--bootstrap-token=abc.def",
        ] {
            let masked = mask_secret_assignment(entry);
            let name = entry.split_once('=').unwrap().0;
            assert_eq!(masked, format!("{name}=[REDACTED]"));
        }
        for entry in [
            "PATH=/usr/bin",
            "--v=2",
            "RKE_KUBELET_DOCKER_FILE=/var/lib/kubelet/config.json",
        ] {
            assert_eq!(mask_secret_assignment(entry), entry);
        }
    }
}
