//! Masks secrets in any text before it is shown: PEM private keys wherever they appear, the
//! password of a URL's user info, and every secret value the run registered (registry
//! passwords, S3 keys, inline SSH keys, tokens). An error that quotes an input, whose secrets
//! nobody registered, masks it with [`mask_credentials`].

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
        let mut out = mask_userinfo(&mask_private_key_blocks(text));
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
/// `-` read as `_`): a registry's docker config (base64 of `user:password`), S3 keys, tokens,
/// a kubeconfig's `client-key-data`.
const SECRET_NAME_PARTS: [&str; 9] = [
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "ACCESS_KEY",
    "DOCKER_CONFIG",
    "KEY_DATA",
    "PRIVATE_KEY",
];

/// The text of an error that quotes what an operator wrote (a cluster.yml value, a kubeconfig's
/// lines, a database URL), with what could be a credential masked, as nobody registered it:
/// PEM private keys; a URL's user info (`https://bob:[REDACTED]@reg.local`,
/// `bob:[REDACTED]@reg.local`, `https://[REDACTED]@host` for a token alone); the value after a
/// credential's name, whether `NAME=value` (a variable, a flag, a URL's query parameter), a
/// variable written `NAME value` (`DB_PASSWORD [REDACTED]`), or a YAML line `token: value`.
pub fn mask_credentials(text: &str) -> String {
    let text = mask_userinfo(&mask_private_key_blocks(text));
    text.split_inclusive('\n').map(mask_named_values).collect()
}

/// Characters that end a word quoted in a message.
fn ends_word(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | '(' | ')' | '<' | '>' | ',' | ';' | '[' | ']'
        )
}

/// The password (or the token standing alone after a scheme) of every URL's user info: in a
/// word, the text before the last `@` of its authority (what precedes the first `/` after the
/// scheme). `root@host` and `image@sha256:...` are kept: no password, no scheme.
fn mask_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word_start = 0;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        if !ends_word(c) && i < text.len() {
            continue;
        }
        out.push_str(&mask_word_userinfo(&text[word_start..i]));
        if i < text.len() {
            out.push(c);
        }
        word_start = i + c.len_utf8();
    }
    out
}

fn mask_word_userinfo(word: &str) -> String {
    if !word.contains('@') {
        return word.to_string();
    }
    // `--database=bob:pw@host`: the URL is what follows the last `=` before its first `@`.
    let first_at = word.find('@').unwrap_or(word.len());
    let value_start = word[..first_at].rfind('=').map_or(0, |i| i + 1);
    let (head, url) = word.split_at(value_start);
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return word.to_string();
    };
    let userinfo = &authority[..at];
    let masked = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:{MASK}"),
        None if !scheme.is_empty() && !userinfo.is_empty() => MASK.to_string(),
        None => return word.to_string(),
    };
    format!("{head}{scheme}{masked}{}", &rest[at..])
}

/// Whether a name written before a value (`NAME=`, `NAME value`, `key:`) says the value is a
/// credential: [`is_secret_name`] for an assignment, and for the other forms a name ending with
/// one of the credential parts (`DB_PASSWORD`, `token`, `client-key-data`, not
/// `secrets_encryption_config`).
fn names_a_credential(name: &str, assignment: bool) -> bool {
    if assignment {
        return is_secret_name(name);
    }
    let name = name
        .trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_");
    SECRET_NAME_PARTS.iter().any(|part| name.ends_with(part))
}

/// One line with the value after each credential's name masked (see [`mask_credentials`]).
fn mask_named_values(line: &str) -> String {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    loop {
        // The next name: a run of name characters.
        let Some(start) = rest.find(is_name_char) else {
            out.push_str(rest);
            return out;
        };
        let len = rest[start..]
            .find(|c: char| !is_name_char(c))
            .unwrap_or(rest.len() - start);
        let name = &rest[start..start + len];
        let after = &rest[start + len..];
        out.push_str(&rest[..start + len]);
        // `NAME=value`: to the end of the value (a space, a quote, `&` or `;`).
        if let Some(value) = after.strip_prefix('=')
            && names_a_credential(name, true)
            && value.starts_with(|c: char| !ends_word(c) && c != '&')
        {
            let end = value
                .find(|c: char| ends_word(c) || c == '&')
                .unwrap_or(value.len());
            out.push('=');
            out.push_str(MASK);
            rest = &value[end..];
            continue;
        }
        // `key: value` (YAML, with no word before it on its line: after a snippet's gutter or
        // a list's `-`), or `NAME value` (a variable's name in capitals): the rest of the line, or of
        // the quoted text.
        let yaml_value = after
            .strip_prefix(": ")
            .filter(|_| out[..out.len() - len].chars().all(|c| !c.is_alphabetic()));
        let env_value = after.strip_prefix(' ').filter(|_| {
            name.chars().any(|c| c.is_ascii_uppercase())
                && !name.chars().any(|c| c.is_ascii_lowercase())
        });
        if let Some(value) = yaml_value.or(env_value)
            && names_a_credential(name, false)
            && value.starts_with(|c: char| !c.is_whitespace())
        {
            let quoted = out[..out.len() - len].ends_with(['"', '\'', '`']);
            let end = if quoted {
                value.find(['"', '\'', '`', '\n']).unwrap_or(value.len())
            } else {
                value.find(['\r', '\n']).unwrap_or(value.len())
            };
            out.push_str(&after[..after.len() - value.len()]);
            out.push_str(MASK);
            rest = &value[end..];
            continue;
        }
        rest = after;
        if rest.is_empty() {
            return out;
        }
        // Past the character that ended the name.
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
}

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

    /// Issue 50: an error quoting an input masks what could be a credential in it, whatever
    /// the input: a URL's user info with or without a scheme, a variable without `=`, a
    /// kubeconfig's lines in a parser's snippet, a query parameter.
    #[test]
    fn errors_quoting_inputs_mask_what_could_be_a_credential() {
        for (text, shown) in [
            (
                "registry url \"https://bob:pw@reg.local\" has a scheme",
                "registry url \"https://bob:[REDACTED]@reg.local\" has a scheme",
            ),
            (
                "registry url \"bob:p@ss@reg.local/x\" bad",
                "registry url \"bob:[REDACTED]@reg.local/x\" bad",
            ),
            (
                "cannot clone https://ghp_abc123@github.com/o/r",
                "cannot clone https://[REDACTED]@github.com/o/r",
            ),
            (
                "--database=postgres://u:hunter2@db/x?user=u&password=pw&sslmode=require",
                "--database=postgres://u:[REDACTED]@db/x?user=u&password=[REDACTED]&sslmode=require",
            ),
            (
                "database postgres://u:pw@db/x?sslmode=require: cannot connect",
                "database postgres://u:[REDACTED]@db/x?sslmode=require: cannot connect",
            ),
            (
                "\"DB_PASSWORD s3cret\" is not NAME=value",
                "\"DB_PASSWORD [REDACTED]\" is not NAME=value",
            ),
            ("\"DB_PASSWORD=s3cret\" x", "\"DB_PASSWORD=[REDACTED]\" x"),
            (
                " 5 |     token: abcdef.0123456789\n 6 |     client-key-data: LS0tLS1CRUdJTi\n 7 |   - name: x\n",
                " 5 |     token: [REDACTED]\n 6 |     client-key-data: [REDACTED]\n 7 |   - name: x\n",
            ),
        ] {
            assert_eq!(mask_credentials(text), shown, "{text}");
        }
        // What is no credential is kept.
        for text in [
            "ssh root@10.0.0.1:22 refused",
            "image rancher/rke-tools@sha256:abcd and reg.local:5000/x@sha256:ef",
            "secrets_encryption_config: enabled needs a key",
            "the registry password is empty",
            "--token-auth-file is set",
        ] {
            assert_eq!(mask_credentials(text), text);
        }
    }

    #[test]
    fn redact_masks_a_urls_password_nobody_registered() {
        let r = Redactor::default();
        assert_eq!(
            r.redact("pull from https://bob:pw@reg.local/x failed"),
            "pull from https://bob:[REDACTED]@reg.local/x failed"
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
