//! Rewrites the one shape of valid OpenSSH private key that the `ssh-key` crate cannot read.
//!
//! OpenSSH stores an ECDSA private scalar as an `mpint`, which drops leading zero bytes, so
//! about one key in 256 that `ssh-keygen -t ecdsa` makes has a scalar one byte short.
//! `ssh-key` 0.7.0-rc.11 (pinned by russh) wants the curve's full width and fails with
//! "length invalid". The key is valid, so rkers pads the scalar back to full width and decodes
//! again; everything else in the file is kept byte for byte. Encrypted keys cannot be rewritten
//! before decryption, which happens inside the crate: the caller names the remedy instead.

const MAGIC: &[u8] = b"openssh-key-v1\0";

/// The key with its ECDSA scalar padded to the curve's width, when it is an unencrypted
/// OpenSSH ECDSA key whose scalar is short; `None` for any other key.
pub(crate) fn pad_short_ecdsa_scalar(text: &str) -> Option<String> {
    let pem = pem::parse(text.trim()).ok()?;
    if pem.tag() != "OPENSSH PRIVATE KEY" {
        return None;
    }
    let blob = pem.contents();
    let mut r = Reader::new(blob.strip_prefix(MAGIC)?);
    let cipher = r.string()?;
    let kdf = r.string()?;
    let kdf_options = r.string()?;
    let count = r.u32()?;
    if cipher != b"none" || count != 1 {
        return None;
    }
    let public = r.string()?;
    let private = r.string()?;

    let mut p = Reader::new(private);
    let check1 = p.u32()?;
    let check2 = p.u32()?;
    let key_type = p.string()?;
    let curve = p.string()?;
    let point = p.string()?;
    let scalar = p.string()?;
    let comment = p.string()?;
    let width = match curve {
        b"nistp256" => 32,
        b"nistp384" => 48,
        b"nistp521" => 66,
        _ => return None,
    };
    if !key_type.starts_with(b"ecdsa-sha2-") || scalar.len() >= width || scalar.is_empty() {
        return None;
    }

    let mut padded = vec![0u8; width - scalar.len()];
    padded.extend_from_slice(scalar);
    let mut block = Vec::new();
    block.extend_from_slice(&check1.to_be_bytes());
    block.extend_from_slice(&check2.to_be_bytes());
    for field in [key_type, curve, point, &padded, comment] {
        put_string(&mut block, field);
    }
    // Unencrypted keys pad the block to a multiple of 8 with 1, 2, 3, ...
    let mut next = 1u8;
    while block.len() % 8 != 0 {
        block.push(next);
        next += 1;
    }

    let mut out = MAGIC.to_vec();
    for field in [cipher, kdf, kdf_options] {
        put_string(&mut out, field);
    }
    out.extend_from_slice(&count.to_be_bytes());
    put_string(&mut out, public);
    put_string(&mut out, &block);
    let config = pem::EncodeConfig::new()
        .set_line_ending(pem::LineEnding::LF)
        .set_line_wrap(70);
    Some(pem::encode_config(
        &pem::Pem::new("OPENSSH PRIVATE KEY", out),
        config,
    ))
}

fn put_string(out: &mut Vec<u8>, field: &[u8]) {
    out.extend_from_slice(&(field.len() as u32).to_be_bytes());
    out.extend_from_slice(field);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_be_bytes(*head))
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        if self.0.len() < len {
            return None;
        }
        let (field, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generates ECDSA keys until ssh-keygen makes one with a short scalar (one in 256).
    fn short_scalar_key(dir: &std::path::Path) -> Option<String> {
        for i in 0..4000 {
            let path = dir.join(format!("k{i}"));
            let ok = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ecdsa", "-N", "", "-C", "short", "-f"])
                .arg(&path)
                .status()
                .ok()?
                .success();
            assert!(ok);
            let text = std::fs::read_to_string(&path).unwrap();
            if russh::keys::decode_secret_key(&text, None).is_err() {
                return Some(text);
            }
        }
        None
    }

    #[test]
    fn a_short_scalar_is_padded_and_the_key_keeps_its_public_half() {
        if std::process::Command::new("ssh-keygen")
            .arg("-?")
            .output()
            .is_err()
        {
            crate::test_skip("no ssh-keygen");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let text = short_scalar_key(dir.path()).expect("a short-scalar key within 4000 tries");
        let fixed = pad_short_ecdsa_scalar(&text).expect("rewritten");
        let key = russh::keys::decode_secret_key(&fixed, None).expect("decodes after padding");
        // The public half (and so the fingerprint servers check) is the file's own.
        let public = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| {
                p.extension().is_none()
                    && std::fs::read_to_string(p).ok().as_deref() == Some(text.as_str())
            })
            .map(|p| std::fs::read_to_string(p.with_extension("pub")).unwrap())
            .unwrap();
        assert_eq!(
            key.public_key().to_openssh().unwrap().split(' ').nth(1),
            public.split(' ').nth(1)
        );
        assert_eq!(key.public_key().comment().to_string(), "short");
    }

    #[test]
    fn other_keys_are_left_alone() {
        assert_eq!(pad_short_ecdsa_scalar("not a key"), None);
        assert_eq!(
            pad_short_ecdsa_scalar(
                "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
            ),
            None
        );
    }
}
