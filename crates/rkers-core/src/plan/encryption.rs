//! The secrets encryption provider file (§23): rendering RKE1's generated and custom
//! `EncryptionConfiguration` texts, generating keys, and reading the keys back from a text.
//! Pure: no I/O beyond the random source.

use serde::Deserialize;

/// Where the provider file lives on controlplane hosts.
pub const ENCRYPTION_PROVIDER_PATH: &str = "/etc/kubernetes/ssl/encryption.yaml";

const HEADER: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";

/// One `aescbc` key. Debug never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey {
    pub name: String,
    pub secret: String,
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncryptionKey")
            .field("name", &self.name)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EncryptionError {
    #[error("encryption provider configuration: {0}")]
    Invalid(String),
}

impl EncryptionKey {
    /// A new key as RKE1 makes them: name `key-<5 random characters>` (norman's GenerateName),
    /// secret the URL-safe base64 of the uppercase hex of 16 random bytes, i.e. 32 ASCII bytes
    /// once decoded: an AES-256 key.
    pub fn generate() -> EncryptionKey {
        use base64::Engine;
        use rand::Rng;
        let mut rng = rand::rng();
        let bytes: [u8; 16] = rng.random();
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let suffix: String = (0..5)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect();
        EncryptionKey {
            name: format!("key-{suffix}"),
            secret: base64::engine::general_purpose::URL_SAFE
                .encode(hex::encode_upper(bytes).as_bytes()),
        }
    }
}

/// RKE1's generated provider file: `aescbc` with `keys` in order (the first encrypts, all
/// decrypt), then `identity` so Secrets written before encryption stay readable.
pub fn render_provider(keys: &[EncryptionKey]) -> String {
    let mut out = String::from(HEADER);
    out.push_str("resources:\n- resources:\n  - secrets\n  providers:\n  - aescbc:\n      keys:");
    for k in keys {
        out.push_str(&format!(
            "\n      - name: {}\n        secret: {}",
            k.name, k.secret
        ));
    }
    out.push_str("\n  - identity: {}");
    out
}

/// The provider file used while turning encryption off: `identity` first, so every rewrite
/// stores plaintext, with the old key still there to read what is encrypted.
pub fn render_disabled(key: &EncryptionKey) -> String {
    format!(
        "{HEADER}resources:\n- resources:\n  - secrets\n  providers:\n  - identity: {{}}\n  - aescbc:\n      keys:\n      - name: {}\n        secret: {}",
        key.name, key.secret
    )
}

/// The user's `custom_config`, rendered as RKE1 does (YAML of the config, header prepended).
/// `apiVersion` and `kind` of the custom config are dropped from the body: the header already
/// carries them and a second copy would be a duplicate key.
pub fn render_custom(custom: &serde_json::Value) -> Result<String, EncryptionError> {
    let mut body = custom.clone();
    let map = body
        .as_object_mut()
        .ok_or_else(|| EncryptionError::Invalid("custom_config must be a mapping".into()))?;
    map.remove("apiVersion");
    map.remove("kind");
    let resources = map.get("resources").and_then(|r| r.as_array());
    if resources.is_none_or(|r| r.is_empty()) {
        return Err(EncryptionError::Invalid(
            "custom_config has no `resources` list".into(),
        ));
    }
    Ok(format!("{HEADER}{}", super::goyaml::to_go_yaml(&body)))
}

#[derive(Deserialize)]
struct FileModel {
    #[serde(default)]
    resources: Vec<ResourceModel>,
}

#[derive(Deserialize)]
struct ResourceModel {
    #[serde(default)]
    providers: Vec<ProviderModel>,
}

#[derive(Deserialize)]
struct ProviderModel {
    aescbc: Option<AescbcModel>,
}

#[derive(Deserialize)]
struct AescbcModel {
    #[serde(default)]
    keys: Vec<KeyModel>,
}

#[derive(Deserialize)]
struct KeyModel {
    name: String,
    secret: String,
}

/// The `aescbc` keys of the first resource's first `aescbc` provider, in order: the first one
/// is the key new writes use when `aescbc` is the first provider.
pub fn aescbc_keys(text: &str) -> Result<Vec<EncryptionKey>, EncryptionError> {
    let model: FileModel =
        serde_saphyr::from_str(text).map_err(|e| EncryptionError::Invalid(e.to_string()))?;
    let keys = model
        .resources
        .first()
        .and_then(|r| r.providers.iter().find_map(|p| p.aescbc.as_ref()))
        .map(|a| {
            a.keys
                .iter()
                .map(|k| EncryptionKey {
                    name: k.name.clone(),
                    secret: k.secret.clone(),
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if keys.is_empty() {
        return Err(EncryptionError::Invalid("no aescbc key found".into()));
    }
    Ok(keys)
}

/// Whether `aescbc` is the provider that encrypts new writes (first in the list).
pub fn encrypts_with_aescbc(text: &str) -> bool {
    serde_saphyr::from_str::<FileModel>(text)
        .ok()
        .and_then(|m| m.resources.into_iter().next())
        .and_then(|r| r.providers.into_iter().next())
        .is_some_and(|p| p.aescbc.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: &str) -> EncryptionKey {
        EncryptionKey {
            name: format!("key-{n}"),
            secret: format!("secret-{n}"),
        }
    }

    #[test]
    fn generated_provider_matches_rke1s_template() {
        let text = render_provider(&[key("a")]);
        assert_eq!(
            text,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n  - secrets\n  providers:\n  - aescbc:\n      keys:\n      - name: key-a\n        secret: secret-a\n  - identity: {}"
        );
        let two = render_provider(&[key("new"), key("old")]);
        assert!(two.contains(
            "      keys:\n      - name: key-new\n        secret: secret-new\n      - name: key-old\n        secret: secret-old\n  - identity: {}"
        ));
        assert_eq!(aescbc_keys(&two).unwrap(), [key("new"), key("old")]);
        assert!(encrypts_with_aescbc(&two));
    }

    #[test]
    fn disabled_provider_puts_identity_first_and_keeps_the_key() {
        let text = render_disabled(&key("a"));
        assert!(text.contains("  providers:\n  - identity: {}\n  - aescbc:"));
        assert!(!encrypts_with_aescbc(&text));
        assert_eq!(aescbc_keys(&text).unwrap(), [key("a")]);
    }

    #[test]
    fn generated_keys_are_aes256_and_unique() {
        use base64::Engine;
        let a = EncryptionKey::generate();
        let b = EncryptionKey::generate();
        assert_ne!(a, b);
        assert!(
            a.name.starts_with("key-") && a.name.len() == 9,
            "{}",
            a.name
        );
        let raw = base64::engine::general_purpose::URL_SAFE
            .decode(&a.secret)
            .unwrap();
        assert_eq!(raw.len(), 32);
        assert!(
            raw.iter()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        );
        assert!(!format!("{a:?}").contains(&a.secret));
    }

    #[test]
    fn custom_config_is_rendered_with_the_header_once() {
        let custom = serde_json::json!({
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "EncryptionConfiguration",
            "resources": [{
                "resources": ["secrets"],
                "providers": [
                    {"aesgcm": {"keys": [{"name": "k1", "secret": "c2VjcmV0"}]}},
                    {"identity": {}}
                ]
            }]
        });
        let text = render_custom(&custom).unwrap();
        assert_eq!(
            text,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- providers:\n  - aesgcm:\n      keys:\n      - name: k1\n        secret: c2VjcmV0\n  - identity: {}\n  resources:\n  - secrets\n"
        );
        assert_eq!(text.matches("kind:").count(), 1);
        assert!(render_custom(&serde_json::json!({"kind": "x"})).is_err());
        assert!(aescbc_keys(&text).is_err());
    }
}
