//! File names derived from the config path (§6) and atomic file replacement.

use std::ffi::OsString;
use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
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
}
