//! A host's file actions, gathered and written together (one script in a root shell, else one
//! helper container, or one call of the Windows host agent), each still reported as applied.

use super::*;

impl<'e, 'a> HostExecutor<'e, 'a> {
    /// Writes the file actions gathered so far in one go, each reported as applied.
    pub(super) async fn flush(&self, batch: &mut FileBatch<'_>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.actions.first().copied() else {
            return Ok(());
        };
        let result = self
            .write_batch(&batch)
            .await
            .map_err(|e| self.fail(first, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        for a in &batch.actions {
            self.exec.reporter.applied(self.name, a, error.as_deref());
        }
        result
    }

    /// A batch of file actions in one write, their paths made relative to the files root.
    pub(super) async fn write_batch(&self, batch: &FileBatch<'_>) -> Result<(), ExecFailure> {
        let stale = batch
            .remove
            .iter()
            .map(|p| self.relative(p))
            .collect::<Result<Vec<_>, _>>()?;
        let modes = batch
            .modes
            .iter()
            .map(|m| {
                Ok(files::ModeChange {
                    relative_path: self.relative(&m.relative_path)?,
                    ..m.clone()
                })
            })
            .collect::<Result<Vec<_>, ExecFailure>>()?;
        let root = self.files_root.as_str();
        self.write_files(root, &batch.upload, &batch.directories, &stale, &modes)
            .await
    }

    /// calico's runtime directories and their tmpfiles.d entry, in one helper container
    /// (incidents.md §1), each action reported as applied.
    pub(super) async fn flush_calico(&self, batch: &mut Vec<&Action>) -> Result<(), ExecError> {
        let batch = std::mem::take(batch);
        let Some(first) = batch.first().copied() else {
            return Ok(());
        };
        // The one helper applies every calico action of the host: run once, for the first.
        let result = self.run(first).await.map_err(|e| self.fail(first, e));
        let error = result.as_ref().err().map(|e| e.to_string());
        for a in &batch {
            self.exec.reporter.applied(self.name, a, error.as_deref());
        }
        result
    }

    /// Files under `base` in one write: uploads, deletions, then modes; on Windows through
    /// the host agent, which also creates `directories`.
    pub(super) async fn write_files(
        &self,
        base: &str,
        upload: &[DesiredFile],
        directories: &[String],
        stale: &[String],
        modes: &[files::ModeChange],
    ) -> Result<(), ExecFailure> {
        let host = self.host()?;
        // The file helper is a Linux image: a Windows worker's files go through its host agent.
        if !self.platform().runs_linux_helpers() {
            crate::phases::windows::write_host_files(host, base, directories, upload, stale)
                .await
                .map_err(|e| ExecFailure::Helper(e.to_string()))?;
            return Ok(());
        }
        // Without SELinux only: files the helper writes take their label from its bind, which
        // a root shell's would not.
        if files::host_shell_reaches(host.link().as_ref(), &self.files_root)
            && !host.facts().selinux
            && files::write_in_root_shell(host.link().as_ref(), base, upload, stale, modes).await
        {
            return Ok(());
        }
        let docker = host.docker();
        let image = &self.exec.helper_image;
        files::write_files(docker, base, image, upload).await?;
        files::remove_files(docker, base, image, stale).await?;
        files::set_modes(docker, base, image, modes).await?;
        Ok(())
    }
}

/// A host's file actions, written together (one helper container or one host-agent call).
#[derive(Default)]
pub(super) struct FileBatch<'a> {
    actions: Vec<&'a Action>,
    upload: Vec<DesiredFile>,
    /// Absolute paths, as the actions carry them (the modes' too).
    remove: Vec<String>,
    modes: Vec<files::ModeChange>,
    directories: Vec<String>,
}

impl<'a> FileBatch<'a> {
    /// Takes `action` into the batch when it is a file action.
    pub(super) fn take(&mut self, action: &'a Action) -> bool {
        match action {
            Action::UploadFile { file, .. } => self.upload.push((**file).clone()),
            Action::RemoveFile { path, .. } => self.remove.push(path.clone()),
            Action::SetFileMode {
                path,
                mode,
                uid,
                gid,
                ..
            } => self.modes.push(files::ModeChange {
                relative_path: path.clone(),
                mode: *mode,
                uid: *uid,
                gid: *gid,
            }),
            Action::CreateDirectories { paths } => self.directories.extend(paths.iter().cloned()),
            _ => return false,
        }
        self.actions.push(action);
        true
    }
}
