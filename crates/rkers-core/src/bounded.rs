//! Reading a file an operator named (`--config`, `ssh_key_path`, a certificate, a kubeconfig,
//! an addon include, the state, `--secret-key-file`): only a regular file, and never more than
//! a file of its kind ever holds. `/dev/zero` would be read until memory runs out, a FIFO with
//! no writer would block for ever; both are refused at once, as is a file larger than its
//! bound. The error is an [`std::io::Error`] (kind `InvalidInput` or `FileTooLarge`) whose text
//! says why and what to give instead; callers name the file before it, as for any read error.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a file is and the most it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The kind of file, as the refusal names it ("an SSH private key").
    pub what: &'static str,
    /// Its largest size, in bytes.
    pub max: u64,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// A cluster.yml (inline addons included): 16 MiB.
pub const CONFIG: Bound = Bound {
    what: "a cluster.yml",
    max: 16 * MIB,
};
/// An SSH private key or certificate (an RSA key of 16384 bits is 12 KiB): 1 MiB.
pub const SSH_KEY: Bound = Bound {
    what: "an SSH key",
    max: MIB,
};
/// A certificate or private key in PEM (a chain of a few certificates): 1 MiB.
pub const CERTIFICATE: Bound = Bound {
    what: "a certificate or key",
    max: MIB,
};
/// A kubeconfig: 16 MiB.
pub const KUBECONFIG: Bound = Bound {
    what: "a kubeconfig",
    max: 16 * MIB,
};
/// A state file (every certificate and key of a large cluster, its config twice): 256 MiB.
pub const STATE: Bound = Bound {
    what: "a state file",
    max: 256 * MIB,
};
/// An addon manifest included from a file (CRDs included): 64 MiB.
pub const ADDON: Bound = Bound {
    what: "an addon manifest",
    max: 64 * MIB,
};
/// A key or token file of the server (`--secret-key-file`, `--tokens-file`): 1 MiB.
pub const SECRET: Bound = Bound {
    what: "a key or token file",
    max: MIB,
};
/// A known_hosts file (one line per host key): 64 MiB.
pub const KNOWN_HOSTS: Bound = Bound {
    what: "a known_hosts file",
    max: 64 * MIB,
};
/// A checksum file beside a download (`.sha256`, `.sha512`): 1 MiB.
pub const CHECKSUM: Bound = Bound {
    what: "a checksum file",
    max: MIB,
};
/// A metadata file (`RKERS_METADATA_FILE`, a local `RANCHER_METADATA_URL`): KDM's `data.json`
/// is about 14 MiB; 128 MiB.
pub const METADATA: Bound = Bound {
    what: "a metadata file",
    max: 128 * MIB,
};
/// Any other small text file an operator names (a backup of webhooks): 64 MiB.
pub const TEXT: Bound = Bound {
    what: "a text file",
    max: 64 * MIB,
};

/// The file's bytes, when it is a regular file no larger than `bound`.
pub fn read(path: &Path, bound: Bound) -> std::io::Result<Vec<u8>> {
    // O_NONBLOCK: opening a FIFO waits for a writer otherwise; the type is checked next.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let is = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "some other kind of file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "is {is}, not a regular file: give the path of {}",
                bound.what
            ),
        ));
    }
    let too_large = |size: String| {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "is {size}, larger than {} ever is (at most {} bytes): give the right file",
                bound.what, bound.max
            ),
        )
    };
    if meta.len() > bound.max {
        return Err(too_large(format!("{} bytes", meta.len())));
    }
    // The file may grow while it is read: never more than the bound.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(bound.max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound.max {
        return Err(too_large("still growing".to_string()));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, bound: Bound) -> std::io::Result<String> {
    String::from_utf8(read(path, bound)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "byte {} is not UTF-8: {} is text",
                e.utf8_error().valid_up_to(),
                bound.what
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bound = Bound {
        what: "a test file",
        max: 16,
    };

    #[test]
    fn a_regular_file_within_its_bound_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "0123456789abcdef").unwrap();
        assert_eq!(read_to_string(&path, SMALL).unwrap(), "0123456789abcdef");
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for (path, is) in [
            (Path::new("/dev/zero"), "a character device"),
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
        ] {
            // A FIFO without a writer would block for ever: the test would hang, not fail.
            let e = read(path, SMALL).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{path:?}");
            let text = e.to_string();
            assert!(text.contains(is), "{path:?}: {text}");
            assert!(text.contains("give the path of a test file"), "{text}");
        }
    }

    #[test]
    fn a_file_larger_than_its_kind_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, [b'x'; 17]).unwrap();
        let e = read(&path, SMALL).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(
            e.to_string()
                .contains("17 bytes, larger than a test file ever is"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_keeps_its_kind() {
        let e = read(Path::new("/nonexistent/x"), SMALL).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
