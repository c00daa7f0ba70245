//! Reading a host's cluster files, the one place the two platforms differ in how: a Linux
//! host's every file under `<prefix>/etc/kubernetes` with its mode and owner, through its SSH
//! user's shell when that is root, else a container that already binds the directory or else
//! the file helper container; a Windows worker's files asked for by name and its planned
//! directories, through its host agent (the file helper is a Linux image, and a Windows engine
//! runs none). `up` and `cert rotate` read
//! through here; writing has its one place in the executor's file batch.

use crate::hosts::{Host, HostError, ObservedContainer, target::RegistryCredential};
use crate::phases::PhaseError;
use crate::phases::files::{self, FileMeta, ShellRead};
use crate::phases::windows::WindowsObserved;
use crate::plan::{HostPlan, Platform};
use std::collections::BTreeMap;

/// What a host holds of its cluster files.
#[derive(Debug, Default)]
pub struct FilesFound {
    /// By path relative to the platform's files root ([`Platform::files_root`]).
    pub files: BTreeMap<String, Vec<u8>>,
    /// Mode and owner of each file; empty on Windows workers, whose files carry ACLs.
    pub meta: BTreeMap<String, FileMeta>,
    /// A Windows worker's directories and wins, as its host agent found them.
    pub windows: Option<WindowsObserved>,
    /// Whether the host's shell runs as root, when reading the files found out.
    pub root_shell: Option<bool>,
}

/// What to read, and with what.
pub struct ToRead<'a> {
    /// The files asked for, relative to the files root: a Windows worker's agent reads only
    /// these; a Linux host's whole directory is read at once.
    pub paths: &'a [String],
    /// A Windows worker's planned directories, which its agent reports missing.
    pub directories: &'a [String],
    /// The containers the host runs: one that binds the directory reads it with no helper to
    /// create and remove.
    pub running: &'a [&'a ObservedContainer],
    /// The file helper's image, pulled when the host lacks it: writing the files later needs
    /// it too.
    pub helper_image: &'a str,
    /// The caller has just seen the helper's image on the host: no request to look again.
    pub helper_present: bool,
    pub registries: &'a [RegistryCredential],
}

/// Why the files could not be read: the host (its Docker, the helper), or a Windows worker's
/// agent.
#[derive(Debug, thiserror::Error)]
pub enum ReadFilesError {
    #[error("{0}")]
    Host(#[from] Box<HostError>),
    #[error("{0}")]
    Agent(#[from] PhaseError),
}

impl From<HostError> for ReadFilesError {
    fn from(e: HostError) -> Self {
        ReadFilesError::Host(Box::new(e))
    }
}

/// `h`'s files on `host`, read the way `platform` allows.
pub async fn read_host_files(
    host: &Host,
    h: &HostPlan,
    platform: Platform,
    read: ToRead<'_>,
) -> Result<FilesFound, ReadFilesError> {
    if !platform.runs_linux_helpers() {
        let found = crate::phases::windows::observe_host(
            host,
            &h.prefix_path,
            read.directories,
            read.paths,
        )
        .await?;
        return Ok(FilesFound {
            files: found.files.clone(),
            meta: BTreeMap::new(),
            windows: Some(found),
            root_shell: None,
        });
    }
    let docker = host.docker();
    let dir = platform.files_root(h);
    // Writing the files needs the helper's image where the shell cannot write them (or fails
    // to): it is made sure of meanwhile.
    let helper = async {
        if read.helper_present {
            return Ok(());
        }
        docker
            .ensure_image(read.helper_image, read.registries, &mut |_| {})
            .await
            .map(drop)
    };
    let shell = async {
        if files::host_shell_reaches(host.link().as_ref(), &dir) {
            files::read_in_root_shell(host.link().as_ref(), &dir).await
        } else {
            ShellRead::Unavailable
        }
    };
    let (helper, shell) = futures::join!(helper, shell);
    helper?;
    let root_shell = match shell {
        ShellRead::Read((files, meta)) => {
            return Ok(FilesFound {
                files,
                meta,
                windows: None,
                root_shell: Some(true),
            });
        }
        ShellRead::NotRoot => Some(false),
        ShellRead::Unavailable => None,
    };
    let through = match files::reader_of(read.running.iter().copied(), &dir) {
        Some((container, path)) => files::read_through(docker, &container, &path)
            .await
            .inspect_err(|e| tracing::debug!(%e, "reading through {container}; the helper reads"))
            .ok(),
        None => None,
    };
    let (files, meta) = match through {
        Some(found) => found,
        None => files::read_dir_with_meta(docker, &dir, read.helper_image).await?,
    };
    Ok(FilesFound {
        files,
        meta,
        windows: None,
        root_shell,
    })
}
