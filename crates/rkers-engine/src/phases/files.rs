//! The files a host keeps under `<prefix>/etc/kubernetes` (certificates, keys, kubeconfigs,
//! admission/audit/cloud configs), read and written as tar archives, so content is copied byte
//! for byte (RKE1's `echo -e` deployer was not, §33.4), unchanged files are not touched, and
//! `--dry-run` knows exactly which files would change. Where the host's SSH user is root, one
//! `tar` in its shell reads or writes them; else one helper container per host bind-mounts
//! the directory and Docker's archive API carries them.

use crate::hosts::{ContainerSpec, DockerClient, HostError, HostLink, ObservedContainer};
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
    let script: Vec<String> = changes.iter().map(mode_change_script).collect();
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

pub(crate) type FilesWithMeta = (BTreeMap<String, Vec<u8>>, BTreeMap<String, FileMeta>);

/// What reading the directory in the host's own shell came to.
#[derive(Debug)]
pub enum ShellRead {
    /// Every regular file, as the Docker path would have read them.
    Read(FilesWithMeta),
    /// The shell's user is not root, so it may not read the keys: Docker reads them.
    NotRoot,
    /// The shell could not read them (no `tar`, a file changing while read, no shell): Docker
    /// reads them.
    Unavailable,
}

/// Exit status of the read script when the shell's user is not root.
const NOT_ROOT: u32 = 3;

/// Whether a host's files may be read and written in its own shell: over SSH (another link's
/// commands are Docker execs themselves, or a dialer's own), and where its shell sees the
/// paths its Docker does.
pub fn host_shell_reaches(link: &dyn HostLink, files_root: &str) -> bool {
    link.ssh().is_some() && shell_sees_docker_paths(files_root)
}

/// Whether the host's shell sees the paths its Docker binds: under the default prefix only. A
/// prefix is chosen for systems whose shell may run in a container of its own (RancherOS's
/// console) and see another filesystem than its Docker does.
pub fn shell_sees_docker_paths(files_root: &str) -> bool {
    files_root == "/etc/kubernetes"
}

/// Uploads, deletions and mode changes under `host_dir` in one script in the host's shell when
/// its user is root, as the helper makes them: the archive extracted as it says (owner, mode),
/// then the deletions, then the modes. Each of them is otherwise a helper container of its own,
/// and Docker's archive upload re-executes dockerd. `false`: nothing was done (the user is not
/// root, or the shell failed: the helper writes them, all of them again).
pub async fn write_in_root_shell(
    link: &dyn HostLink,
    host_dir: &str,
    upload: &[DesiredFile],
    stale: &[String],
    modes: &[ModeChange],
) -> bool {
    let tar = if upload.is_empty() {
        Vec::new()
    } else {
        match build_tar(upload) {
            Ok(tar) => tar,
            Err(_) => return false,
        }
    };
    let script = root_shell_write_script(host_dir, !upload.is_empty(), stale, modes);
    let result = link
        .exec_with_input(&script, "write the cluster files in the host's shell", &tar)
        .await;
    matches!(
        root_shell_outcome(link, result, "the helper writes"),
        RootShell::Ran(_)
    )
}

/// How a script in the host's shell ended.
enum RootShell {
    /// It ran as root and succeeded: its stdout.
    Ran(Vec<u8>),
    NotRoot,
    /// It failed, or never ran: why is logged, with what the caller does instead.
    Failed,
}

fn root_shell_outcome(
    link: &dyn HostLink,
    result: Result<crate::hosts::ExecOutput, HostError>,
    instead: &str,
) -> RootShell {
    match result {
        Ok(out) if out.success() => RootShell::Ran(out.stdout),
        Ok(out) if out.exit_status == Some(NOT_ROOT) => RootShell::NotRoot,
        Ok(out) => {
            tracing::debug!(
                host = link.host(),
                status = ?out.exit_status,
                stderr = %String::from_utf8_lossy(&out.stderr).trim(),
                "a script in the host's shell failed; {instead}"
            );
            RootShell::Failed
        }
        Err(e) => {
            tracing::debug!(host = link.host(), %e, "no shell to run in; {instead}");
            RootShell::Failed
        }
    }
}

/// The script of [`write_in_root_shell`]: the archive on stdin when `extract`. `-m`: the
/// host's clock stamps the files, so a clock behind this machine's draws no warning.
fn root_shell_write_script(
    host_dir: &str,
    extract: bool,
    stale: &[String],
    modes: &[ModeChange],
) -> String {
    let dir = shell_words::quote(host_dir);
    let mut steps = vec![format!("mkdir -p {dir}"), format!("cd {dir}")];
    if extract {
        steps.push("tar -xmf -".into());
    }
    if !stale.is_empty() {
        let quoted: Vec<String> = stale
            .iter()
            .map(|p| shell_words::quote(p).into_owned())
            .collect();
        steps.push(format!("rm -f -- {}", quoted.join(" ")));
    }
    steps.extend(modes.iter().map(mode_change_script));
    format!(
        "[ \"$(id -u)\" = 0 ] || exit {NOT_ROOT}; {}",
        steps.join(" && ")
    )
}

fn mode_change_script(c: &ModeChange) -> String {
    let path = shell_words::quote(&c.relative_path).into_owned();
    format!(
        "chown {}:{} -- {path} && chmod {:o} -- {path}",
        c.uid, c.gid, c.mode
    )
}

/// Archives `host_dir` on stdout when the shell's user is root; exits [`NOT_ROOT`] otherwise.
fn root_shell_read_script(host_dir: &str) -> String {
    let dir = shell_words::quote(host_dir);
    format!(
        "[ \"$(id -u)\" = 0 ] || exit {NOT_ROOT}; [ -d {dir} ] || exit 0; cd {dir} && exec tar -cf - ."
    )
}

/// Every regular file under `host_dir` with its mode and owner, through one `tar` in the host's
/// shell when its user is root. Docker's archive API re-executes dockerd for each read (most of
/// a no-op `up`'s work on a host), and a new host has no container to read through, so it took
/// a helper container's create and removal besides. A directory not made yet reads as empty,
/// as it does through the helper.
pub async fn read_in_root_shell(link: &dyn HostLink, host_dir: &str) -> ShellRead {
    let result = link.exec(&root_shell_read_script(host_dir)).await;
    match root_shell_outcome(link, result, "Docker reads") {
        RootShell::Ran(stdout) => match parse_tar(&stdout) {
            Ok(found) => ShellRead::Read(found),
            Err(e) => {
                tracing::debug!(host = link.host(), %e, "the shell's archive does not parse; Docker reads");
                ShellRead::Unavailable
            }
        },
        RootShell::NotRoot => ShellRead::NotRoot,
        RootShell::Failed => ShellRead::Unavailable,
    }
}

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

    fn sh(script: String) -> std::process::Output {
        std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    /// The write script with nothing to write: it only makes the directory.
    fn write_nothing(dir: &std::path::Path) -> std::process::Output {
        sh(root_shell_write_script(
            dir.to_str().unwrap(),
            false,
            &[],
            &[],
        ))
    }

    fn run_read_script(dir: &std::path::Path) -> std::process::Output {
        sh(root_shell_read_script(dir.to_str().unwrap()))
    }

    /// The write script with the host's own `sh` and `tar`, read back with the read script:
    /// uploads replace what is there with their owner and mode, then the deletions and mode
    /// changes, in a directory made on the way.
    #[test]
    fn the_root_shell_writes_what_the_helper_would() {
        use std::io::Write;
        // SAFETY: getuid has no preconditions and cannot fail.
        if unsafe { libc::getuid() } != 0 {
            // Not root: the script changes nothing and says so.
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("k");
            let out = write_nothing(&dir);
            assert_eq!(out.status.code(), Some(NOT_ROOT as i32));
            assert!(!dir.exists());
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/kubernetes");
        std::fs::create_dir_all(dir.join("ssl")).unwrap();
        std::fs::write(dir.join("ssl/kube-ca.pem"), b"old").unwrap();
        std::fs::write(dir.join("stale.yaml"), b"x").unwrap();
        std::fs::write(dir.join("keep.yaml"), b"keep").unwrap();
        let upload = [
            DesiredFile {
                relative_path: "ssl/kube-ca.pem".into(),
                contents: b"new".to_vec(),
                mode: 0o644,
            },
            DesiredFile {
                relative_path: "ssl/deep/kube-node-key.pem".into(),
                contents: b"key\x00".to_vec(),
                mode: 0o600,
            },
        ];
        let modes = [ModeChange {
            relative_path: "keep.yaml".into(),
            mode: 0o640,
            uid: 0,
            gid: 0,
        }];
        let script = root_shell_write_script(
            dir.to_str().unwrap(),
            true,
            &["stale.yaml".to_string()],
            &modes,
        );
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&build_tar(&upload).unwrap())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let (files, meta) = parse_tar(&run_read_script(&dir).stdout).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["keep.yaml", "ssl/deep/kube-node-key.pem", "ssl/kube-ca.pem"]
        );
        assert_eq!(files["ssl/kube-ca.pem"], b"new");
        assert_eq!(files["ssl/deep/kube-node-key.pem"], b"key\x00");
        assert_eq!(files["keep.yaml"], b"keep");
        assert_eq!(meta["ssl/kube-ca.pem"].mode, 0o644);
        assert_eq!(meta["ssl/deep/kube-node-key.pem"].mode, 0o600);
        assert_eq!(meta["keep.yaml"].mode, 0o640);
        // Into a directory not made yet, with nothing to extract.
        let fresh = root.path().join("fresh dir");
        let out = write_nothing(&fresh);
        assert!(out.status.success() && fresh.is_dir(), "{out:?}");
    }

    /// The script with the host's own `sh` and `tar`, its archive read as Docker's is.
    #[test]
    fn the_root_shell_reads_every_regular_file_with_its_mode_and_owner() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc kubernetes");
        std::fs::create_dir_all(dir.join("ssl")).unwrap();
        std::fs::write(dir.join("ssl/kube-ca.pem"), b"ca\n").unwrap();
        std::fs::write(dir.join("ssl/kube-ca-key.pem"), b"key\x00\xff").unwrap();
        std::fs::write(dir.join("audit.yaml"), b"").unwrap();
        std::fs::set_permissions(
            dir.join("ssl/kube-ca-key.pem"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::fs::set_permissions(
            dir.join("ssl/kube-ca.pem"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::os::unix::fs::symlink("ssl/kube-ca.pem", dir.join("link.pem")).unwrap();
        let out = run_read_script(&dir);
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        if uid != 0 {
            assert_eq!(out.status.code(), Some(NOT_ROOT as i32), "{out:?}");
            return;
        }
        assert!(out.status.success(), "{out:?}");
        let (files, meta) = parse_tar(&out.stdout).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["audit.yaml", "ssl/kube-ca-key.pem", "ssl/kube-ca.pem"]
        );
        assert_eq!(files["ssl/kube-ca-key.pem"], b"key\x00\xff");
        assert_eq!(files["audit.yaml"], b"");
        assert_eq!(meta["ssl/kube-ca-key.pem"].mode, 0o600);
        assert_eq!(meta["ssl/kube-ca.pem"].mode, 0o644);
        assert_eq!(
            (meta["ssl/kube-ca.pem"].uid, meta["ssl/kube-ca.pem"].gid),
            (0, 0)
        );
        // A directory not made yet holds no files, as through the helper.
        let out = run_read_script(&root.path().join("missing"));
        assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
        assert!(parse_tar(&out.stdout).unwrap().0.is_empty());
    }

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
