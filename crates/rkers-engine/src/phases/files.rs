//! The files a host keeps under `<prefix>/etc/kubernetes` (certificates, keys, kubeconfigs,
//! admission/audit/cloud configs). One helper container per host bind-mounts the directory;
//! the current files are read and the changed ones written through Docker's archive API, so
//! content is copied byte for byte (RKE1's `echo -e` deployer was not, §33.4), unchanged files
//! are not touched, and `--dry-run` knows exactly which files would change.

use crate::hosts::{ContainerSpec, DockerClient, HostError, ObservedContainer};
use futures::StreamExt;
use std::collections::BTreeMap;

/// Where the directory appears inside the helper container.
const MOUNT: &str = "/etc/kubernetes";
const HELPER: &str = "rkers-file-sync";

pub use rkers_core::files::{DesiredFile, changed};

/// A file's mode and owner as the host's filesystem reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Permission bits only (`0o600`).
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
}

/// Reads every regular file under the host's `<prefix>/etc/kubernetes`.
pub async fn read_dir(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
    Ok(read_dir_with_meta(docker, host_dir, helper_image).await?.0)
}

/// Every regular file under the host's `<prefix>/etc/kubernetes`, with its mode and owner.
pub async fn read_dir_with_meta(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
) -> Result<(BTreeMap<String, Vec<u8>>, BTreeMap<String, FileMeta>), HostError> {
    // Read-only: a dry run reads through this helper and must not be able to change a file.
    with_helper(docker, host_dir, helper_image, true, |docker| async move {
        read_through(&docker, HELPER, MOUNT).await
    })
    .await
}

/// A container the host already has with `host_dir` bind-mounted, and the path it is mounted
/// at: reading the files through it needs no helper container. Creating and removing the helper
/// was most of a no-op `up`'s time on each host (about 0.3 s of dockerd's work, all hosts
/// sharing one machine in the sandbox). Only a mount with nothing else mounted below it
/// qualifies, so the archive holds exactly the directory's files; containers being removed or
/// dead do not.
pub fn reader_of<'a>(
    containers: impl IntoIterator<Item = &'a ObservedContainer>,
    host_dir: &str,
) -> Option<(String, String)> {
    let dir = host_dir.trim_end_matches('/');
    containers
        .into_iter()
        .filter(|c| !matches!(c.status.as_str(), "removing" | "dead"))
        .find_map(|c| {
            let (_, dest) = c
                .mounts
                .iter()
                .find(|(src, dest)| src.trim_end_matches('/') == dir && dest.len() > 1)?;
            let dest = dest.trim_end_matches('/');
            let below = format!("{dest}/");
            let nested = c
                .mounts
                .iter()
                .any(|(_, d)| d.trim_end_matches('/').starts_with(&below));
            (!nested).then(|| (c.name.clone(), dest.to_string()))
        })
}

/// Every regular file under `path` in `container` (the helper, or a container [`reader_of`]
/// found), with its mode and owner, through Docker's archive API.
pub async fn read_through(
    docker: &DockerClient,
    container: &str,
    path: &str,
) -> Result<FilesWithMeta, HostError> {
    let mut stream = docker.raw().download_from_container(
        container,
        Some(bollard::query_parameters::DownloadFromContainerOptions {
            path: format!("{path}/."),
        }),
    );
    let err = |detail: String| HostError::Container {
        host: docker.host().to_string(),
        container: container.into(),
        detail,
    };
    let mut tar_bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(b) => tar_bytes.extend_from_slice(&b),
            Err(e) => return Err(err(format!("read {path}: {e}"))),
        }
    }
    parse_tar(&tar_bytes).map_err(|e| err(format!("read {path}: {e}")))
}

/// Writes the given files (creating directories as needed) in one archive.
pub async fn write_files(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
    files: &[DesiredFile],
) -> Result<(), HostError> {
    if files.is_empty() {
        return Ok(());
    }
    let tar = build_tar(files).map_err(|e| HostError::Container {
        host: docker.host().to_string(),
        container: HELPER.into(),
        detail: format!("cannot build the archive: {e}"),
    })?;
    with_helper(docker, host_dir, helper_image, false, |docker| async move {
        docker
            .raw()
            .upload_to_container(
                HELPER,
                Some(bollard::query_parameters::UploadToContainerOptions {
                    path: MOUNT.into(),
                    ..Default::default()
                }),
                bollard::body_full(tar.into()),
            )
            .await
            .map_err(|e| HostError::Container {
                host: docker.host().to_string(),
                container: HELPER.into(),
                detail: format!("write {MOUNT}: {e}"),
            })
    })
    .await
}

/// Deletes files under the host's `<prefix>/etc/kubernetes`: those whose planned content became
/// empty (RKE1's file deployer removes those too, §13) and private keys the host's containers
/// do not read.
pub async fn remove_files(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
    relative_paths: &[String],
) -> Result<(), HostError> {
    if relative_paths.is_empty() {
        return Ok(());
    }
    let quoted: Vec<String> = relative_paths
        .iter()
        .map(|p| shell_words::quote(p).into_owned())
        .collect();
    run_in_dir(
        docker,
        host_dir,
        helper_image,
        "rkers-file-remove",
        &format!("rm -f -- {}", quoted.join(" ")),
    )
    .await
}

/// A file whose mode or owner must change, its content staying as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeChange {
    pub relative_path: String,
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
}

/// Sets the mode and owner of files under the host's `<prefix>/etc/kubernetes`.
pub async fn set_modes(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
    changes: &[ModeChange],
) -> Result<(), HostError> {
    if changes.is_empty() {
        return Ok(());
    }
    let script: Vec<String> = changes
        .iter()
        .map(|c| {
            let path = shell_words::quote(&c.relative_path).into_owned();
            format!(
                "chown {}:{} -- {path} && chmod {:o} -- {path}",
                c.uid, c.gid, c.mode
            )
        })
        .collect();
    run_in_dir(
        docker,
        host_dir,
        helper_image,
        "rkers-file-mode",
        &script.join(" && "),
    )
    .await
}

/// Runs a shell script in a one-shot helper container whose working directory is the host's
/// `<prefix>/etc/kubernetes`, with no network.
async fn run_in_dir(
    docker: &DockerClient,
    host_dir: &str,
    helper_image: &str,
    name: &str,
    script: &str,
) -> Result<(), HostError> {
    let spec = ContainerSpec {
        image: helper_image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![format!("cd {MOUNT} && {script}")],
        binds: vec![format!("{host_dir}:{MOUNT}")],
        network_mode: Some("none".into()),
        ..Default::default()
    };
    docker
        .run_to_success(name, &spec, std::time::Duration::from_secs(60))
        .await
        .map(drop)
}

async fn with_helper<T, F, Fut>(
    docker: &DockerClient,
    host_dir: &str,
    image: &str,
    read_only: bool,
    f: F,
) -> Result<T, HostError>
where
    F: FnOnce(DockerClient) -> Fut,
    Fut: std::future::Future<Output = Result<T, HostError>>,
{
    let spec = ContainerSpec {
        image: image.to_string(),
        cmd: vec!["true".into()],
        binds: vec![if read_only {
            format!("{host_dir}:{MOUNT}:ro")
        } else {
            format!("{host_dir}:{MOUNT}")
        }],
        network_mode: Some("none".into()),
        ..Default::default()
    };
    // A helper left by an interrupted run would block the name (§32 pain point 19).
    docker.remove_container(HELPER).await?;
    docker.create_container(HELPER, &spec).await?;
    let result = f(docker.clone()).await;
    let removed = docker.remove_container(HELPER).await;
    let value = result?;
    removed?;
    Ok(value)
}

type FilesWithMeta = (BTreeMap<String, Vec<u8>>, BTreeMap<String, FileMeta>);

fn parse_tar(bytes: &[u8]) -> std::io::Result<FilesWithMeta> {
    let mut files = BTreeMap::new();
    let mut meta = BTreeMap::new();
    let mut archive = tar::Archive::new(bytes);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = entry.path()?.to_string_lossy().into_owned();
        // Docker names entries after the requested path's last component (`./...`).
        let rel = path
            .trim_start_matches("./")
            .trim_start_matches('.')
            .trim_start_matches('/')
            .to_string();
        let header = entry.header();
        // An unreadable field counts as wrong, so the file gets its mode and owner set again.
        let file_meta = FileMeta {
            mode: header.mode().unwrap_or(0) & 0o7777,
            uid: header.uid().unwrap_or(u64::MAX),
            gid: header.gid().unwrap_or(u64::MAX),
        };
        let mut contents = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut contents)?;
        meta.insert(rel.clone(), file_meta);
        files.insert(rel, contents);
    }
    Ok((files, meta))
}

fn build_tar(files: &[DesiredFile]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut dirs = std::collections::BTreeSet::new();
    for f in files {
        let mut parent = std::path::Path::new(&f.relative_path).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            dirs.insert(p.to_string_lossy().into_owned());
            parent = p.parent();
        }
    }
    for d in &dirs {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(0);
        header.set_mtime(now);
        builder.append_data(&mut header, format!("{d}/"), std::io::empty())?;
    }
    for f in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(f.contents.len() as u64);
        header.set_mode(f.mode);
        // Docker extracts as the archive says: every file rkers writes belongs to root.
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(now);
        builder.append_data(&mut header, &f.relative_path, f.contents.as_slice())?;
    }
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, status: &str, mounts: &[(&str, &str)]) -> ObservedContainer {
        ObservedContainer {
            name: name.into(),
            status: status.into(),
            mounts: mounts
                .iter()
                .map(|(s, d)| (s.to_string(), d.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_files_are_read_through_a_container_binding_exactly_that_directory() {
        let sidekick = container(
            "service-sidekick",
            "created",
            &[("/var/lib/docker/volumes/x/_data", "/opt/rke-tools")],
        );
        let other_prefix = container(
            "etcd",
            "running",
            &[("/opt/rke/etc/kubernetes", "/etc/kubernetes")],
        );
        let nested = container(
            "kube-apiserver",
            "running",
            &[
                ("/etc/kubernetes", "/etc/kubernetes"),
                ("/srv/audit", "/etc/kubernetes/audit"),
            ],
        );
        let dying = container(
            "kube-proxy",
            "removing",
            &[("/etc/kubernetes", "/etc/kubernetes")],
        );
        let kubelet = container("kubelet", "running", &[("/etc/kubernetes/", "/host/k8s/")]);
        assert_eq!(
            reader_of(
                [&sidekick, &other_prefix, &nested, &dying, &kubelet],
                "/etc/kubernetes"
            ),
            Some(("kubelet".to_string(), "/host/k8s".to_string()))
        );
        assert_eq!(
            reader_of(
                [&sidekick, &other_prefix, &nested, &dying],
                "/etc/kubernetes"
            ),
            None
        );
        assert_eq!(
            reader_of([&sidekick, &other_prefix], "/opt/rke/etc/kubernetes"),
            Some(("etcd".to_string(), "/etc/kubernetes".to_string()))
        );
        // The host's root bound at the container's root would archive everything.
        let root = container("x", "running", &[("/etc/kubernetes", "/")]);
        assert_eq!(reader_of([&root], "/etc/kubernetes"), None);
    }

    #[test]
    fn tar_round_trip_keeps_bytes_and_nested_paths() {
        let files = vec![
            DesiredFile {
                relative_path: "ssl/kube-ca.pem".into(),
                contents: b"a\\nb\0c".to_vec(),
                mode: 0o600,
            },
            DesiredFile {
                relative_path: "admission.yaml".into(),
                contents: b"x: 1\n".to_vec(),
                mode: 0o600,
            },
        ];
        let tar = build_tar(&files).unwrap();
        let (back, meta) = parse_tar(&tar).unwrap();
        assert_eq!(meta["ssl/kube-ca.pem"].mode, 0o600);
        assert_eq!(meta["ssl/kube-ca.pem"].uid, 0);
        assert_eq!(back["ssl/kube-ca.pem"], b"a\\nb\0c");
        assert_eq!(back["admission.yaml"], b"x: 1\n");
    }

    #[test]
    fn only_missing_or_different_files_change() {
        let files = vec![
            DesiredFile {
                relative_path: "a".into(),
                contents: b"1".to_vec(),
                mode: 0o600,
            },
            DesiredFile {
                relative_path: "b".into(),
                contents: b"2".to_vec(),
                mode: 0o600,
            },
            DesiredFile {
                relative_path: "c".into(),
                contents: b"3".to_vec(),
                mode: 0o600,
            },
        ];
        let current: BTreeMap<String, Vec<u8>> = [
            ("a".to_string(), b"1".to_vec()),
            ("b".to_string(), b"old".to_vec()),
        ]
        .into();
        let names: Vec<_> = changed(&files, &current)
            .iter()
            .map(|f| f.relative_path.as_str())
            .collect();
        assert_eq!(names, ["b", "c"]);
    }
}
