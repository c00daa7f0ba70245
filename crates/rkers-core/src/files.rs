//! Files the actions write: a host's files under `/etc/kubernetes` ([`DesiredFile`]) and the
//! files of a `WriteFileSet` action ([`FileWrite`]). Their contents are keys and certificates:
//! never in debug output, never serialized.

use serde::Serialize;
use std::collections::BTreeMap;

/// A file under `/etc/kubernetes`, by its path relative to that directory.
#[derive(Clone, PartialEq, Eq)]
pub struct DesiredFile {
    pub relative_path: String,
    pub contents: Vec<u8>,
    pub mode: u32,
}

impl std::fmt::Debug for DesiredFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Contents are keys and certificates: never in debug output.
        write!(
            f,
            "DesiredFile({}, {} bytes, {:o})",
            self.relative_path,
            self.contents.len(),
            self.mode
        )
    }
}

/// One file of an [`Action::WriteFileSet`](crate::diff::Action::WriteFileSet). Its contents (keys, certificates) are never
/// serialized nor shown; freshly generated contents differ between a dry run and the run, so
/// the action names the file, its mode and why, not a hash.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct FileWrite {
    /// Relative to the action's `dir`.
    pub path: String,
    #[serde(serialize_with = "octal")]
    pub mode: u32,
    pub reason: String,
    #[serde(skip)]
    pub contents: Vec<u8>,
}

/// The files of a `WriteFileSet`, as the file writers take them.
pub fn desired_files(files: &[FileWrite]) -> Vec<DesiredFile> {
    files
        .iter()
        .map(|f| DesiredFile {
            relative_path: f.path.clone(),
            contents: f.contents.clone(),
            mode: f.mode,
        })
        .collect()
}

/// The files whose contents differ from what the host has (or that it lacks), by what the
/// files mean ([`crate::diff::same_file_content`]).
pub fn changed<'a>(
    desired: &'a [DesiredFile],
    current: &BTreeMap<String, Vec<u8>>,
) -> Vec<&'a DesiredFile> {
    desired
        .iter()
        .filter(|f| {
            !current.get(&f.relative_path).is_some_and(|on_host| {
                crate::diff::same_file_content(&f.relative_path, &f.contents, on_host)
            })
        })
        .collect()
}

fn octal<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

impl std::fmt::Debug for FileWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Contents are keys and certificates: never in debug output.
        f.debug_struct("FileWrite")
            .field("path", &self.path)
            .field("mode", &format_args!("{:04o}", self.mode))
            .field("reason", &self.reason)
            .field("contents", &format_args!("<{} bytes>", self.contents.len()))
            .finish()
    }
}
