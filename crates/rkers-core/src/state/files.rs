//! File names derived from the config path (§6), where the state and the admin kubeconfig are
//! kept (on disk, or in memory for the library API), and atomic file replacement.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::bounded::Bound;

/// Where the files that hold a cluster's secrets (the state with every private key, the admin
/// kubeconfig) are read and written.
///
/// The CLI keeps them on disk beside cluster.yml, as RKE1 does. The library API keeps them in
/// this process's memory: its caller's store holds the state, so the keys need never be written
/// to a disk where a killed process would leave them.
#[derive(Debug, Clone, Default)]
pub enum Storage {
    #[default]
    Disk,
    /// The files by path; shared by every clone (the run's cluster, its executors, the caller
    /// that reads what the run left).
    Memory(Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>),
}

impl PartialEq for Storage {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Storage::Disk, Storage::Disk) => true,
            (Storage::Memory(a), Storage::Memory(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Storage {}

impl Storage {
    /// An empty in-memory storage.
    pub fn memory() -> Storage {
        Storage::Memory(Arc::default())
    }

    /// The file at `path`, refused as the disk read would be when larger than `bound`;
    /// `NotFound` when there is none.
    pub fn read(&self, path: &Path, bound: Bound) -> io::Result<Vec<u8>> {
        match self {
            Storage::Disk => crate::bounded::read(path, bound),
            Storage::Memory(files) => {
                let files = files.lock().unwrap_or_else(|p| p.into_inner());
                let bytes = files.get(path).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, "no such file (kept in memory)")
                })?;
                if bytes.len() as u64 > bound.max {
                    return Err(io::Error::new(
                        io::ErrorKind::FileTooLarge,
                        format!(
                            "{} bytes, more than {} ever holds ({} bytes)",
                            bytes.len(),
                            bound.what,
                            bound.max
                        ),
                    ));
                }
                Ok(bytes.clone())
            }
        }
    }

    /// [`Storage::read`] as UTF-8 text.
    pub fn read_to_string(&self, path: &Path, bound: Bound) -> io::Result<String> {
        match self {
            Storage::Disk => crate::bounded::read_to_string(path, bound),
            Storage::Memory(_) => String::from_utf8(self.read(path, bound)?)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        }
    }

    /// Replaces the file at `path` whole, readable by its owner alone (on disk: atomically,
    /// mode 0600, see [`write_atomic`]).
    pub fn write_private(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        match self {
            Storage::Disk => write_atomic(path, bytes, 0o600),
            Storage::Memory(files) => {
                files
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(path.to_path_buf(), bytes.to_vec());
                Ok(())
            }
        }
    }

    /// Deletes the file at `path`; `NotFound` when there is none.
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        match self {
            Storage::Disk => std::fs::remove_file(path),
            Storage::Memory(files) => files
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(path)
                .map(drop)
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    /// Whether a file is at `path`.
    pub fn exists(&self, path: &Path) -> bool {
        match self {
            Storage::Disk => path.exists(),
            Storage::Memory(files) => files
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(path),
        }
    }
}

/// The workstation files RKE1 derives from `--config`, all in the config file's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFiles {
    pub config_path: PathBuf,
    /// `<dir>/<basename without extension>.rkestate`
    pub state_path: PathBuf,
    /// `<dir>/kube_config_<basename with extension>`
    pub kubeconfig_path: PathBuf,
    /// `<dir>/<basename without extension>_certs`
    pub cert_dir: PathBuf,
    /// Where the state and the kubeconfig are read and written (the names above name them in
    /// messages either way).
    pub storage: Storage,
}

impl ClusterFiles {
    pub fn from_config_path(config_path: &Path) -> ClusterFiles {
        let dir = config_path.parent().unwrap_or(Path::new(""));
        let file_name: OsString = config_path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| OsString::from("cluster.yml"));
        let stem = strip_extension(&file_name);

        let mut state_name = stem.clone();
        state_name.push(".rkestate");
        let mut kubeconfig_name = OsString::from("kube_config_");
        kubeconfig_name.push(&file_name);
        let mut cert_dir_name = stem;
        cert_dir_name.push("_certs");

        ClusterFiles {
            config_path: config_path.to_path_buf(),
            state_path: dir.join(state_name),
            kubeconfig_path: dir.join(kubeconfig_name),
            cert_dir: dir.join(cert_dir_name),
            storage: Storage::Disk,
        }
    }

    /// The same names, with the state and the kubeconfig kept in memory.
    pub fn in_memory(self) -> ClusterFiles {
        ClusterFiles {
            storage: Storage::memory(),
            ..self
        }
    }
}

/// Go's `strings.TrimSuffix(name, filepath.Ext(name))`, except that a name that is nothing but an
/// extension (`.rke`) is kept whole instead of becoming empty.
fn strip_extension(file_name: &OsString) -> OsString {
    let text = file_name.to_string_lossy();
    match text.rfind('.') {
        Some(0) | None => file_name.clone(),
        Some(i) => OsString::from(&text[..i]),
    }
}

/// Replaces `path` with `contents` so that readers see either the old or the new file, never a
/// partial one: write a temporary file in the same directory with `mode`, fsync it, rename it
/// over `path`, then fsync the directory so the rename survives a crash.
///
/// When `path` is a symbolic link (a state file kept on another volume, a kubeconfig linked
/// into `~/.kube`) the file it points to is replaced and the link stays.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let path = &through_symlinks(path)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut prefix = OsString::from(".");
    prefix.push(file_name);
    prefix.push(".");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(&dir)?;
    // The umask may have narrowed the mode given at creation.
    tmp.as_file()
        .set_permissions(Permissions::from_mode(mode))?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(&dir)?.sync_all()?;
    Ok(())
}

/// The file a chain of symbolic links ends at (that file need not exist), or `path` itself
/// when it is no link. Relative targets are read from the link's directory, as the kernel does.
fn through_symlinks(path: &Path) -> io::Result<PathBuf> {
    // The kernel's own limit on links followed while resolving one path.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LINKS} symbolic links to follow",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_config_file() {
        let f = ClusterFiles::from_config_path(Path::new("clusters/prod.yaml"));
        assert_eq!(f.state_path, Path::new("clusters/prod.rkestate"));
        assert_eq!(
            f.kubeconfig_path,
            Path::new("clusters/kube_config_prod.yaml")
        );
        assert_eq!(f.cert_dir, Path::new("clusters/prod_certs"));

        let f = ClusterFiles::from_config_path(Path::new("cluster.yml"));
        assert_eq!(f.state_path, Path::new("cluster.rkestate"));
        assert_eq!(f.kubeconfig_path, Path::new("kube_config_cluster.yml"));
        assert_eq!(f.cert_dir, Path::new("cluster_certs"));

        let f = ClusterFiles::from_config_path(Path::new("/etc/rke/my.cluster.yml"));
        assert_eq!(f.state_path, Path::new("/etc/rke/my.cluster.rkestate"));
        assert_eq!(
            f.kubeconfig_path,
            Path::new("/etc/rke/kube_config_my.cluster.yml")
        );

        let f = ClusterFiles::from_config_path(Path::new("noext"));
        assert_eq!(f.state_path, Path::new("noext.rkestate"));
        assert_eq!(f.kubeconfig_path, Path::new("kube_config_noext"));
    }

    #[test]
    fn a_symlinked_file_is_written_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("store")).unwrap();
        let target = dir.path().join("store/cluster.rkestate");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("cluster.rkestate");
        std::os::unix::fs::symlink("store/cluster.rkestate", &link).unwrap();
        // A link to a link, and a link whose target does not exist yet.
        let second = dir.path().join("again.rkestate");
        std::os::unix::fs::symlink(&link, &second).unwrap();
        let dangling = dir.path().join("kube_config_cluster.yml");
        std::os::unix::fs::symlink("store/kubeconfig", &dangling).unwrap();

        write_atomic(&second, b"new", 0o600).unwrap();
        write_atomic(&dangling, b"config", 0o600).unwrap();

        for l in [&link, &second, &dangling] {
            assert!(
                std::fs::symlink_metadata(l)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("store/kubeconfig")).unwrap(),
            "config"
        );
    }

    #[test]
    fn a_symlink_loop_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        assert!(write_atomic(&a, b"x", 0o600).is_err());
    }
}
