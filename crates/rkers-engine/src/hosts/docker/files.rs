//! Files through the archive API: reading a file out of an image, writing a file onto the
//! host byte for byte, and copying a file from one host to another, each with a created
//! (never started) helper container.

use bollard::errors::Error as BollardError;
use bollard::query_parameters::{DownloadFromContainerOptions, UploadToContainerOptions};
use futures::StreamExt;

use super::DockerClient;
use crate::hosts::container::ContainerSpec;
use crate::hosts::error::HostError;

/// How to write a file onto the host.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    /// Image of the helper container (any image; it is created but never started).
    pub helper_image: String,
    /// Unix permission bits of the file.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    /// Extra security options for the helper (e.g. an SELinux label, spec §13).
    pub security_opt: Vec<String>,
}

impl UploadOptions {
    pub fn new(helper_image: impl Into<String>) -> Self {
        UploadOptions {
            helper_image: helper_image.into(),
            mode: 0o600,
            uid: 0,
            gid: 0,
            security_opt: Vec::new(),
        }
    }
}

impl DockerClient {
    /// Reads one file out of `image` (already on the host): the first of `candidates` that
    /// exists, with the path it was found at, or `None` when none does. The container is
    /// created, never started (Windows serves the archive API only for stopped containers),
    /// and removed again.
    pub async fn read_image_file(
        &self,
        name: &str,
        image: &str,
        candidates: &[&str],
    ) -> Result<Option<(String, Vec<u8>)>, HostError> {
        self.remove_container(name).await?;
        let spec = ContainerSpec {
            image: image.to_string(),
            ..Default::default()
        };
        self.create_container(name, &spec).await?;
        let found = async {
            for path in candidates {
                let mut stream = self.docker.download_from_container(
                    name,
                    Some(DownloadFromContainerOptions {
                        path: (*path).to_string(),
                    }),
                );
                let mut tar_bytes = Vec::new();
                let mut missing = false;
                while let Some(chunk) = stream.next().await {
                    match chunk {
                        Ok(b) => tar_bytes.extend_from_slice(&b),
                        Err(BollardError::DockerResponseServerError {
                            status_code: 404, ..
                        }) => {
                            missing = true;
                            break;
                        }
                        Err(e) => return Err(self.cerr(name, &format!("read {path}"), e)),
                    }
                }
                if missing {
                    continue;
                }
                let bad = |e: std::io::Error| HostError::Container {
                    host: self.host.clone(),
                    container: name.to_owned(),
                    detail: format!("read {path}: bad archive: {e}"),
                };
                let mut archive = tar::Archive::new(tar_bytes.as_slice());
                for entry in archive.entries().map_err(bad)? {
                    let mut entry = entry.map_err(bad)?;
                    if entry.header().entry_type() == tar::EntryType::Regular {
                        let mut contents = Vec::new();
                        std::io::Read::read_to_end(&mut entry, &mut contents).map_err(bad)?;
                        return Ok(Some(((*path).to_string(), contents)));
                    }
                }
            }
            Ok(None)
        }
        .await;
        let removed = self.remove_container(name).await;
        let found = found?;
        removed?;
        Ok(found)
    }

    /// Writes `bytes` to `path_on_host` byte for byte: a helper container bind-mounts the
    /// parent directory and the file goes in through the archive API, so no shell ever sees
    /// the content (RKE1's `echo -e` file deployer altered backslashes, spec §13, §33.4).
    pub async fn upload_file(
        &self,
        path_on_host: &str,
        bytes: &[u8],
        opts: &UploadOptions,
    ) -> Result<(), HostError> {
        let (dir, file_name) = match path_on_host.rsplit_once('/') {
            Some((d, f)) if path_on_host.starts_with('/') && !f.is_empty() => {
                (if d.is_empty() { "/" } else { d }, f)
            }
            _ => {
                return Err(HostError::Container {
                    host: self.host.clone(),
                    container: "file upload".into(),
                    detail: format!("{path_on_host:?} is not an absolute file path"),
                });
            }
        };
        // One name per target path: parallel uploads of different files do not collide, and
        // a helper left by an interrupted run is found and replaced.
        use sha2::Digest;
        let path_hash = hex::encode(&sha2::Sha256::digest(path_on_host.as_bytes())[..4]);
        let name = format!("rkers-file-upload-{}-{path_hash}", sanitize(file_name));
        const MOUNT: &str = "/rkers-upload-target";
        let spec = ContainerSpec {
            image: opts.helper_image.clone(),
            cmd: vec!["true".into()],
            binds: vec![format!("{dir}:{MOUNT}")],
            network_mode: Some("none".into()),
            security_opt: opts.security_opt.clone(),
            ..Default::default()
        };
        let tar = tar_one_file(file_name, bytes, opts.mode, opts.uid, opts.gid).map_err(|e| {
            HostError::Container {
                host: self.host.clone(),
                container: name.clone(),
                detail: format!("cannot build the archive: {e}"),
            }
        })?;
        self.remove_container(&name).await?;
        self.create_container(&name, &spec).await?;
        let upload = self
            .docker
            .upload_to_container(
                &name,
                Some(UploadToContainerOptions {
                    path: MOUNT.into(),
                    ..Default::default()
                }),
                bollard::body_full(tar.into()),
            )
            .await
            .map_err(|e| self.cerr(&name, &format!("upload {path_on_host}"), e));
        let removed = self.remove_container(&name).await;
        upload?;
        removed
    }

    /// Copies the file `path_on_host` of this host into the directory `dir_on_target` of
    /// `target`, keeping its name and mode. The bytes stream from one host's archive API to the
    /// other's through rkers, with a created (never started) helper container on each side, so
    /// a large file (an etcd snapshot) is never held in memory. `Ok(false)`: no such file here.
    pub async fn copy_file_to(
        &self,
        path_on_host: &str,
        target: &DockerClient,
        dir_on_target: &str,
        helper_image: &str,
    ) -> Result<bool, HostError> {
        let Some((dir, file_name)) = path_on_host
            .rsplit_once('/')
            .filter(|(_, f)| path_on_host.starts_with('/') && !f.is_empty())
        else {
            return Err(HostError::Container {
                host: self.host.clone(),
                container: "file copy".into(),
                detail: format!("{path_on_host:?} is not an absolute file path"),
            });
        };
        const SOURCE: &str = "/rkers-copy-source";
        const TARGET: &str = "/rkers-copy-target";
        let helper = |bind: String| ContainerSpec {
            image: helper_image.to_string(),
            cmd: vec!["true".into()],
            binds: vec![bind],
            network_mode: Some("none".into()),
            ..Default::default()
        };
        let name = format!("rkers-file-copy-{}", sanitize(file_name));
        let dir = if dir.is_empty() { "/" } else { dir };
        self.remove_container(&name).await?;
        self.create_container(&name, &helper(format!("{dir}:{SOURCE}:ro")))
            .await?;
        target.remove_container(&name).await?;
        if let Err(e) = target
            .create_container(&name, &helper(format!("{dir_on_target}:{TARGET}")))
            .await
        {
            let _ = self.remove_container(&name).await;
            return Err(e);
        }
        let copied = async {
            let mut tar = self.docker.download_from_container(
                &name,
                Some(DownloadFromContainerOptions {
                    path: format!("{SOURCE}/{file_name}"),
                }),
            );
            let first = match tar.next().await {
                None => return Ok(false),
                Some(Err(BollardError::DockerResponseServerError {
                    status_code: 404, ..
                })) => return Ok(false),
                Some(Err(e)) => return Err(self.cerr(&name, &format!("read {path_on_host}"), e)),
                Some(Ok(chunk)) => chunk,
            };
            let rest = tar.map(|r| r.map_err(std::io::Error::other));
            let body = futures::stream::once(async move { Ok(first) }).chain(rest);
            target
                .docker
                .upload_to_container(
                    &name,
                    Some(UploadToContainerOptions {
                        path: TARGET.into(),
                        ..Default::default()
                    }),
                    bollard::body_try_stream(body),
                )
                .await
                .map_err(|e| {
                    target.cerr(
                        &name,
                        &format!("write {dir_on_target}/{file_name} from host {}", self.host),
                        e,
                    )
                })?;
            Ok(true)
        }
        .await;
        let removed_here = self.remove_container(&name).await;
        let removed_there = target.remove_container(&name).await;
        let copied = copied?;
        removed_here?;
        removed_there?;
        Ok(copied)
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn tar_one_file(
    name: &str,
    bytes: &[u8],
    mode: u32,
    uid: u64,
    gid: u64,
) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    header.set_uid(uid);
    header.set_gid(gid);
    header.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    );
    header.set_entry_type(tar::EntryType::Regular);
    builder.append_data(&mut header, name, bytes)?;
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tar_holds_exact_bytes_and_mode() {
        let data = b"a\\nb\\t\x00\xff end";
        let tar = tar_one_file("f.conf", data, 0o640, 0, 0).unwrap();
        let mut ar = tar::Archive::new(&tar[..]);
        let mut e = ar.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(e.header().mode().unwrap(), 0o640);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut got).unwrap();
        assert_eq!(got, data);
    }
}
