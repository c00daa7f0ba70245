//! `rkers image build`'s I/O: reads the Kubernetes server tarball (or a directory of its
//! binaries) and the cri-dockerd binary into a work directory, hashes and verifies them, packs
//! the build context [`rkers_core::image_build::plan`] decides, streams it to a Docker engine
//! (a node's, over rkers' own SSH link, or the local one), and pushes the image.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::auth::DockerCredentials;
use bollard::query_parameters::{BuildImageOptions, PushImageOptions};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use indexmap::IndexMap;
pub use rkers_core::image_build::*;

use crate::hosts::docker::{DockerClient, registry_for_image};
use crate::hosts::target::RegistryCredential;

/// A build pushes hundreds of megabytes through one request: Docker's usual request timeout
/// would cut it off.
const BUILD_TIMEOUT: Duration = Duration::from_secs(3600);
const CHUNK: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The inputs are not what the image needs (exit 2: the command line is at fault).
    #[error(transparent)]
    Input(#[from] ImageBuildError),
    #[error("{path}: {detail}")]
    Read { path: String, detail: String },
    #[error("{host}: {what} failed: {detail}")]
    Docker {
        host: String,
        what: String,
        detail: String,
    },
}

impl crate::error::HostContext for EngineError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            EngineError::Docker { host, .. } => vec![host.as_str()],
            _ => Vec::new(),
        }
    }
}

fn read_err(path: &Path, detail: impl std::fmt::Display) -> EngineError {
    EngineError::Read {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

/// What the user gave.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub kubernetes: PathBuf,
    pub cri_dockerd: PathBuf,
    pub kubernetes_checksum: Option<String>,
    pub cri_dockerd_checksum: Option<String>,
    pub kubernetes_version: Option<String>,
    pub base: String,
    pub tag: Option<String>,
}

/// The inputs read, verified and decided on; the work directory holds what the tarball gave.
pub struct Prepared {
    pub plan: BuildPlan,
    pub request: Request,
    binaries: IndexMap<String, PathBuf>,
    cri_dockerd: PathBuf,
    _work: tempfile::TempDir,
}

/// Reads every input (blocking: call it off the async runtime), verifies the checksums and
/// decides the image.
pub fn prepare(inputs: &Inputs, default_registry: Option<&str>) -> Result<Prepared, EngineError> {
    let work = tempfile::Builder::new()
        .prefix("rkers-image-build-")
        .tempdir()
        .map_err(|e| {
            read_err(
                &std::env::temp_dir(),
                format!("cannot make a work directory: {e}"),
            )
        })?;
    let kube = read_kubernetes(
        &inputs.kubernetes,
        inputs.kubernetes_checksum.as_deref(),
        work.path(),
    )?;
    let (cri, cri_path) = read_cri_dockerd(
        &inputs.cri_dockerd,
        inputs.cri_dockerd_checksum.as_deref(),
        work.path(),
    )?;
    let mut binaries = IndexMap::new();
    let mut sums = IndexMap::new();
    for (name, (path, sha256)) in kube.binaries {
        sums.insert(name.clone(), sha256);
        binaries.insert(name, path);
    }
    let source_name = kube.record.name.clone();
    let arch = check_executables(&source_name, &inputs.kubernetes, &binaries)?;
    check_cri_dockerd(&inputs.cri_dockerd, &cri_path, arch, &source_name)?;
    // Only the input's own record of its version: running its kube-apiserver here to ask would
    // execute an unverified download on the operator's machine.
    let (found, detail) = match kube.tag_version {
        Some(v) => (Some(v), String::new()),
        None => (None, "it has no kube-apiserver.docker_tag".to_string()),
    };
    let version = settle_version(
        inputs.kubernetes_version.as_deref(),
        found,
        &source_name,
        &detail,
    )?;
    let tag = choose_tag(inputs.tag.as_deref(), &version, default_registry)?;
    let request = Request {
        kubernetes: kube.record,
        cri_dockerd: cri.0,
        binaries: sums,
        cri_dockerd_sha256: cri.1,
        version,
        base: inputs.base.clone(),
        tag,
    };
    Ok(Prepared {
        plan: plan(&request),
        request,
        binaries,
        cri_dockerd: cri_path,
        _work: work,
    })
}

struct KubernetesInput {
    record: InputRecord,
    /// name → (file, sha256)
    binaries: IndexMap<String, (PathBuf, String)>,
    tag_version: Option<semver::Version>,
}

fn file_digests(path: &Path) -> Result<Digests, EngineError> {
    let mut file = File::open(path).map_err(|e| read_err(path, e))?;
    let mut hasher = Hasher::default();
    std::io::copy(&mut file, &mut hasher).map_err(|e| read_err(path, e))?;
    Ok(hasher.finish())
}

/// The checksum an input must match: the flag's, else a `.sha512`/`.sha256` file beside it.
fn expected_for(path: &Path, flag: (&str, Option<&str>)) -> Result<Option<Expected>, EngineError> {
    if let (name, Some(value)) = flag {
        return Ok(Some(parse_checksum_flag(name, value)?));
    }
    let input_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for algo in DigestAlgo::ALL {
        let mut beside = path.as_os_str().to_owned();
        beside.push(format!(".{}", algo.extension()));
        let beside = PathBuf::from(beside);
        if beside.is_file() {
            let text = rkers_core::bounded::read_to_string(&beside, rkers_core::bounded::CHECKSUM)
                .map_err(|e| read_err(&beside, e))?;
            let shown = beside.display().to_string();
            return Ok(Some(parse_checksum_file(&shown, algo, &text, &input_name)?));
        }
    }
    Ok(None)
}

fn read_kubernetes(
    path: &Path,
    checksum_flag: Option<&str>,
    work: &Path,
) -> Result<KubernetesInput, EngineError> {
    let meta = std::fs::metadata(path).map_err(|e| read_err(path, e))?;
    if meta.is_dir() {
        return read_kubernetes_dir(path, checksum_flag);
    }
    let expected = expected_for(path, ("--kubernetes-checksum", checksum_flag))?;
    let digests = file_digests(path)?;
    // Verified before anything from it is unpacked.
    let verified = verify(&path.display().to_string(), &digests, expected.as_ref())?;
    let file = File::open(path).map_err(|e| read_err(path, e))?;
    let mut archive =
        tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)));
    let not_tar = |e: std::io::Error| {
        read_err(
            path,
            format!(
                "not a gzip-compressed tar ({e}); give kubernetes-server-linux-<arch>.tar.gz or a directory of the server binaries"
            ),
        )
    };
    let bin_dir = work.join("bin");
    std::fs::create_dir_all(&bin_dir).map_err(|e| read_err(&bin_dir, e))?;
    let mut first = Vec::new();
    let mut any_server_bin = false;
    let mut tag_version = None;
    let mut binaries = IndexMap::new();
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let name = entry
            .path()
            .map_err(not_tar)?
            .to_string_lossy()
            .into_owned();
        if first.len() < 3 {
            first.push(name.clone());
        }
        any_server_bin |= in_server_bin_dir(&name);
        let kind = entry.header().entry_type();
        if is_version_tag_entry(&name) && kind.is_file() {
            let mut text = String::new();
            entry
                .by_ref()
                .take(MAX_TAG_BYTES)
                .read_to_string(&mut text)
                .map_err(not_tar)?;
            tag_version = parse_kubernetes_version(&text);
        } else if let Some(bin) = server_tarball_binary(&name) {
            let refuse = |reason: String| ImageBuildError::NotAnExecutable {
                source_name: path.display().to_string(),
                binary: name.clone(),
                reason,
            };
            // A link member has no bytes of its own: copied, it was an empty binary.
            if !kind.is_file() {
                return Err(
                    refuse(format!("is a {} member, not a file", member_kind(kind))).into(),
                );
            }
            let size = entry.header().size().map_err(not_tar)?;
            if size > MAX_BINARY_BYTES {
                return Err(refuse(format!(
                    "is {size} bytes, more than any Kubernetes binary ({MAX_BINARY_BYTES} at most)"
                ))
                .into());
            }
            let dest = bin_dir.join(bin);
            let mut out = File::create(&dest).map_err(|e| read_err(&dest, e))?;
            let mut tee = TeeHasher {
                out: &mut out,
                hasher: Hasher::default(),
            };
            // The header's size is what the tar reader reads; the bound holds whatever it says.
            std::io::copy(&mut entry.by_ref().take(MAX_BINARY_BYTES), &mut tee).map_err(not_tar)?;
            let sha256 = tee.hasher.finish().sha256;
            make_executable(&dest)?;
            binaries.insert(bin.to_owned(), (dest, sha256));
        }
    }
    let shown = path.display().to_string();
    if !any_server_bin {
        return Err(ImageBuildError::NotServerTarball {
            file: shown,
            first: if first.is_empty() {
                "none".into()
            } else {
                first.join(", ")
            },
        }
        .into());
    }
    check_complete(&shown, &binaries)?;
    Ok(KubernetesInput {
        record: InputRecord {
            name: shown,
            digests: Some(digests),
            verified,
        },
        binaries,
        tag_version,
    })
}

/// A directory of the server binaries: the binaries themselves, or an unpacked tarball
/// (`kubernetes/server/bin` below it). Each binary's own `.sha256`/`.sha512` file, as dl.k8s.io
/// publishes them, is checked when present.
fn read_kubernetes_dir(
    dir: &Path,
    checksum_flag: Option<&str>,
) -> Result<KubernetesInput, EngineError> {
    if checksum_flag.is_some() {
        return Err(read_err(
            dir,
            "--kubernetes-checksum applies to a tarball; put each binary's .sha256/.sha512 file beside it instead",
        ));
    }
    let bin_dir = [
        dir.join(SERVER_BIN_DIR),
        dir.join("server/bin"),
        dir.to_path_buf(),
    ]
    .into_iter()
    .find(|d| d.join("kube-apiserver").is_file())
    .unwrap_or_else(|| dir.to_path_buf());
    let mut binaries = IndexMap::new();
    let mut checked = Vec::new();
    for bin in REQUIRED_BINARIES.into_iter().chain(OPTIONAL_BINARIES) {
        let path = bin_dir.join(bin);
        if !path.is_file() {
            continue;
        }
        let digests = file_digests(&path)?;
        let expected = expected_for(&path, ("", None))?;
        if let Verified::Matched { from, .. } =
            verify(&path.display().to_string(), &digests, expected.as_ref())?
        {
            checked.push(from);
        }
        binaries.insert(bin.to_owned(), (path, digests.sha256));
    }
    let shown = bin_dir.display().to_string();
    check_complete(&shown, &binaries)?;
    let tag_version = rkers_core::bounded::read_to_string(
        &bin_dir.join("kube-apiserver.docker_tag"),
        rkers_core::bounded::TEXT,
    )
    .ok()
    .and_then(|t| parse_kubernetes_version(&t));
    Ok(KubernetesInput {
        record: InputRecord {
            name: shown,
            digests: None,
            verified: Verified::Binaries {
                checked: checked.len(),
                of: binaries.len(),
            },
        },
        binaries,
        tag_version,
    })
}

fn check_complete(
    shown: &str,
    binaries: &IndexMap<String, (PathBuf, String)>,
) -> Result<(), ImageBuildError> {
    let missing = missing_binaries(binaries.keys().map(String::as_str));
    if missing.is_empty() {
        return Ok(());
    }
    Err(ImageBuildError::MissingBinaries {
        source_name: shown.to_owned(),
        missing: missing.join(", "),
    })
}

/// What a tar member that is not a file is, for the refusal.
fn member_kind(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Directory => "directory",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "FIFO",
        _ => "special",
    }
}

/// The first bytes of a file, enough for its ELF header.
fn head(path: &Path) -> Result<Vec<u8>, EngineError> {
    let mut bytes = Vec::with_capacity(64);
    File::open(path)
        .and_then(|f| f.take(64).read_to_end(&mut bytes))
        .map_err(|e| read_err(path, e))?;
    Ok(bytes)
}

/// Every Kubernetes binary is a Linux executable, all of one architecture: the one the
/// input's name says (`kubernetes-server-linux-arm64.tar.gz`), else kube-apiserver's. Returns
/// it. Read from the ELF headers only.
fn check_executables(
    source_name: &str,
    input: &Path,
    binaries: &IndexMap<String, PathBuf>,
) -> Result<&'static str, EngineError> {
    let named = arch_in_name(&input.display().to_string());
    let mut expected: Option<(&'static str, String)> =
        named.map(|a| (a, input.display().to_string()));
    for (name, path) in binaries {
        let arch = elf_arch(&head(path)?).map_err(|e| ImageBuildError::NotAnExecutable {
            source_name: source_name.to_owned(),
            binary: name.clone(),
            reason: e.to_string(),
        })?;
        match &expected {
            Some((want, from)) if *want != arch => {
                return Err(ImageBuildError::WrongArchitecture {
                    source_name: source_name.to_owned(),
                    binary: name.clone(),
                    arch: arch.into(),
                    expected: (*want).into(),
                    expected_from: from.clone(),
                }
                .into());
            }
            Some(_) => {}
            None => expected = Some((arch, name.clone())),
        }
    }
    Ok(expected.map_or("amd64", |(a, _)| a))
}

/// cri-dockerd is a Linux executable of the Kubernetes binaries' architecture.
fn check_cri_dockerd(
    input: &Path,
    binary: &Path,
    arch: &'static str,
    kubernetes: &str,
) -> Result<(), EngineError> {
    let shown = input.display().to_string();
    let found = elf_arch(&head(binary)?).map_err(|e| ImageBuildError::NotAnExecutable {
        source_name: shown.clone(),
        binary: CRI_DOCKERD.into(),
        reason: e.to_string(),
    })?;
    if found != arch {
        return Err(ImageBuildError::WrongArchitecture {
            source_name: shown,
            binary: CRI_DOCKERD.into(),
            arch: found.into(),
            expected: arch.into(),
            expected_from: kubernetes.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// Unpacked binaries are copied into the image with mode 0755 (checked there by the build's
/// `kube-apiserver --version`, which runs in the image, not here).
fn make_executable(path: &Path) -> Result<(), EngineError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| read_err(path, e))
}

struct TeeHasher<'a> {
    out: &'a mut File,
    hasher: Hasher,
}

impl Write for TeeHasher<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The cri-dockerd binary, or the release archive (`cri-dockerd-<v>.<arch>.tgz`) holding it.
/// Returns the record, the binary's sha256 and where the binary is.
fn read_cri_dockerd(
    path: &Path,
    checksum_flag: Option<&str>,
    work: &Path,
) -> Result<((InputRecord, String), PathBuf), EngineError> {
    if !path.is_file() {
        return Err(read_err(
            path,
            "no such file (give the cri-dockerd binary or its release .tgz)",
        ));
    }
    let expected = expected_for(path, ("--cri-dockerd-checksum", checksum_flag))?;
    let digests = file_digests(path)?;
    let shown = path.display().to_string();
    let verified = verify(&shown, &digests, expected.as_ref())?;
    let mut magic = [0u8; 2];
    File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .map_err(|e| read_err(path, e))?;
    let binary = if magic == [0x1f, 0x8b] {
        extract_cri_dockerd(path, work)?
    } else {
        path.to_path_buf()
    };
    let sha256 = if binary == path {
        digests.sha256.clone()
    } else {
        file_digests(&binary)?.sha256
    };
    Ok((
        (
            InputRecord {
                name: shown,
                digests: Some(digests),
                verified,
            },
            sha256,
        ),
        binary,
    ))
}

fn extract_cri_dockerd(path: &Path, work: &Path) -> Result<PathBuf, EngineError> {
    let file = File::open(path).map_err(|e| read_err(path, e))?;
    let mut archive =
        tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)));
    let bad = |e: std::io::Error| read_err(path, format!("not a readable .tgz ({e})"));
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let is_it = entry
            .path()
            .map_err(bad)?
            .file_name()
            .is_some_and(|n| n == CRI_DOCKERD);
        if is_it && entry.header().entry_type().is_file() {
            let size = entry.header().size().map_err(bad)?;
            if size > MAX_BINARY_BYTES {
                return Err(read_err(
                    path,
                    format!("its {CRI_DOCKERD} is {size} bytes, more than {MAX_BINARY_BYTES}"),
                ));
            }
            let dest = work.join(CRI_DOCKERD);
            let mut out = File::create(&dest).map_err(|e| read_err(&dest, e))?;
            std::io::copy(&mut entry.by_ref().take(MAX_BINARY_BYTES), &mut out).map_err(bad)?;
            make_executable(&dest)?;
            return Ok(dest);
        }
    }
    Err(read_err(
        path,
        format!("the archive holds no {CRI_DOCKERD} file"),
    ))
}

/// Packs the build context into a tar stream, fed chunk by chunk to the request body.
fn context_stream(prepared: &Prepared) -> futures::channel::mpsc::Receiver<std::io::Result<Bytes>> {
    let (tx, rx) = futures::channel::mpsc::channel(4);
    let files: Vec<(ContextFile, Option<PathBuf>)> = prepared
        .plan
        .context
        .iter()
        .map(|f| {
            let path = match &f.source {
                ContextSource::Binary(name) => prepared.binaries.get(name).cloned(),
                ContextSource::CriDockerd => Some(prepared.cri_dockerd.clone()),
                ContextSource::Text(_) => None,
            };
            (f.clone(), path)
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut sink = ChannelWriter {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
        };
        let result = write_context(&mut sink, &files).and_then(|()| sink.flush());
        if let Err(e) = result {
            let mut tx = tx;
            let _ = futures::executor::block_on(tx.send(Err(e)));
        }
    });
    rx
}

fn write_context(
    out: &mut impl Write,
    files: &[(ContextFile, Option<PathBuf>)],
) -> std::io::Result<()> {
    let mut builder = tar::Builder::new(out);
    for (file, path) in files {
        let mut header = tar::Header::new_gnu();
        header.set_mode(file.mode);
        header.set_mtime(0);
        match (&file.source, path) {
            (ContextSource::Text(text), _) => {
                header.set_size(text.len() as u64);
                header.set_cksum();
                builder.append_data(&mut header, &file.path, text.as_bytes())?;
            }
            (_, Some(path)) => {
                let f = File::open(path)?;
                header.set_size(f.metadata()?.len());
                header.set_cksum();
                builder.append_data(&mut header, &file.path, f)?;
            }
            (_, None) => {
                return Err(std::io::Error::other(format!(
                    "no file for {} in the build context",
                    file.path
                )));
            }
        }
    }
    builder.into_inner()?.flush()
}

struct ChannelWriter {
    tx: futures::channel::mpsc::Sender<std::io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        futures::executor::block_on(self.tx.send(Ok(chunk)))
            .map_err(|_| std::io::Error::other("Docker stopped reading the build context"))
    }
}

fn credentials(r: &RegistryCredential) -> DockerCredentials {
    DockerCredentials {
        username: Some(r.user.clone()),
        password: Some(r.password.expose().to_owned()),
        serveraddress: Some(r.url.clone()),
        ..Default::default()
    }
}

/// Builds the image on `docker`'s engine, tagged as planned; `progress` gets each line the
/// build prints. Returns the image's id.
pub async fn build(
    docker: &DockerClient,
    prepared: &Prepared,
    registries: &[RegistryCredential],
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, EngineError> {
    let host = docker.host().to_owned();
    let engine = docker.raw().clone().with_timeout(BUILD_TIMEOUT);
    let labels: HashMap<String, String> = prepared
        .plan
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let options = BuildImageOptions {
        t: Some(prepared.plan.tag.clone()),
        rm: true,
        forcerm: true,
        labels: Some(labels),
        ..Default::default()
    };
    // The base image may come from a private registry.
    let auth: HashMap<String, DockerCredentials> = registries
        .iter()
        .map(|r| (r.url.clone(), credentials(r)))
        .collect();
    let body = bollard::body_try_stream(context_stream(prepared));
    let mut stream = engine.build_image(options, Some(auth), Some(body));
    let mut tail: Vec<String> = Vec::new();
    let mut id = None;
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| EngineError::Docker {
            host: host.clone(),
            what: format!("building {}", prepared.plan.tag),
            detail: e.to_string(),
        })?;
        if let Some(line) = info.stream.as_deref() {
            for l in line.lines().filter(|l| !l.trim().is_empty()) {
                progress(l);
                tail.push(l.to_owned());
            }
            if tail.len() > 12 {
                tail.drain(..tail.len() - 12);
            }
        }
        if let Some(message) = info.error_detail.and_then(|d| d.message) {
            return Err(EngineError::Docker {
                host,
                what: format!(
                    "building {} from {}",
                    prepared.plan.tag, prepared.request.base
                ),
                detail: format!(
                    "{message}; the build's last lines:\n  {}",
                    tail.join("\n  ")
                ),
            });
        }
        if let Some(aux) = info.aux.and_then(|a| a.id) {
            id = Some(aux);
        }
    }
    match id {
        Some(id) => Ok(id),
        None => docker
            .raw()
            .inspect_image(&prepared.plan.tag)
            .await
            .ok()
            .and_then(|i| i.id)
            .ok_or_else(|| EngineError::Docker {
                host,
                what: format!("building {}", prepared.plan.tag),
                detail: format!(
                    "the engine reported no image; its last lines:\n  {}",
                    tail.join("\n  ")
                ),
            }),
    }
}

/// Pushes the built tag with the credentials of its registry from `private_registries`.
pub async fn push(
    docker: &DockerClient,
    tag: &str,
    registries: &[RegistryCredential],
) -> Result<(), EngineError> {
    let (repo, version) = split_reference(tag);
    let creds = registry_for_image(tag, registries).map(credentials);
    let engine = docker.raw().clone().with_timeout(BUILD_TIMEOUT);
    let mut stream = engine.push_image(
        repo,
        Some(PushImageOptions {
            tag: version.map(str::to_owned),
            ..Default::default()
        }),
        creds,
    );
    let fail = |detail: String| EngineError::Docker {
        host: docker.host().to_owned(),
        what: format!("pushing {tag}"),
        detail,
    };
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| fail(e.to_string()))?;
        if let Some(message) = info.error_detail.and_then(|d| d.message) {
            return Err(fail(message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_tarball(path: &Path, entries: &[(&str, &[u8])]) {
        let gz =
            flate2::write::GzEncoder::new(File::create(path).unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
    }

    /// An ELF header of a Linux executable for `machine` (62: x86-64, 183: arm64), then `text`.
    fn exe_for(machine: u16, text: &str) -> Vec<u8> {
        let mut h = b"\x7fELF\x02\x01\x01".to_vec();
        h.resize(16, 0);
        h.extend(2u16.to_le_bytes());
        h.extend(machine.to_le_bytes());
        h.resize(64, 0);
        h.extend(text.as_bytes());
        h
    }

    fn exe(text: &str) -> Vec<u8> {
        exe_for(62, text)
    }

    fn server_entries() -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = REQUIRED_BINARIES
            .iter()
            .map(|b| {
                (
                    format!("kubernetes/server/bin/{b}"),
                    exe(&format!("bin {b}")),
                )
            })
            .collect();
        v.push((
            "kubernetes/server/bin/kube-apiserver.docker_tag".into(),
            b"v1.33.2\n".to_vec(),
        ));
        v
    }

    fn inputs(dir: &Path, kube: &Path) -> Inputs {
        let cri = dir.join("cri-dockerd");
        std::fs::write(&cri, exe("cri")).unwrap();
        Inputs {
            kubernetes: kube.to_path_buf(),
            cri_dockerd: cri,
            kubernetes_checksum: None,
            cri_dockerd_checksum: None,
            kubernetes_version: None,
            base: "base:1".into(),
            tag: None,
        }
    }

    fn tarball(dir: &Path, entries: &[(String, Vec<u8>)]) -> PathBuf {
        let path = dir.join("kubernetes-server-linux-amd64.tar.gz");
        let refs: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        write_tarball(&path, &refs);
        path
    }

    #[test]
    fn a_server_tarball_becomes_a_plan_with_its_verified_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let kube = tarball(dir.path(), &server_entries());
        let sha = file_digests(&kube).unwrap().sha512;
        std::fs::write(
            dir.path()
                .join("kubernetes-server-linux-amd64.tar.gz.sha512"),
            format!("{sha}  kubernetes-server-linux-amd64.tar.gz\n"),
        )
        .unwrap();
        let p = prepare(&inputs(dir.path(), &kube), Some("reg:5000")).unwrap();
        assert_eq!(p.plan.tag, "reg:5000/rkers/hyperkube:v1.33.2-rkers1");
        assert!(
            p.plan.labels["io.rkers.image-build.kubernetes.checksum"]
                .starts_with("sha512 matched "),
            "{:?}",
            p.plan.labels
        );
        // The context holds the bytes of the tarball's binaries.
        let mut context = Vec::new();
        let files: Vec<_> = p
            .plan
            .context
            .iter()
            .map(|f| {
                let path = match &f.source {
                    ContextSource::Binary(n) => Some(p.binaries[n].clone()),
                    ContextSource::CriDockerd => Some(p.cri_dockerd.clone()),
                    ContextSource::Text(_) => None,
                };
                (f.clone(), path)
            })
            .collect();
        write_context(&mut context, &files).unwrap();
        let mut archive = tar::Archive::new(context.as_slice());
        let mut seen = IndexMap::new();
        for e in archive.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut s = String::new();
            e.read_to_string(&mut s).unwrap();
            seen.insert(name, s);
        }
        assert!(seen["bin/kubelet"].ends_with("bin kubelet"));
        assert!(seen["bin/cri-dockerd"].ends_with("cri"));
        assert!(seen["Dockerfile"].starts_with("# rkers image build"));
    }

    #[test]
    fn a_checksum_mismatch_stops_before_unpacking() {
        let dir = tempfile::tempdir().unwrap();
        let kube = tarball(dir.path(), &server_entries());
        std::fs::write(
            dir.path()
                .join("kubernetes-server-linux-amd64.tar.gz.sha256"),
            "0".repeat(64),
        )
        .unwrap();
        let e = prepare(&inputs(dir.path(), &kube), None).err().unwrap();
        assert!(
            matches!(
                e,
                EngineError::Input(ImageBuildError::ChecksumMismatch { .. })
            ),
            "{e}"
        );
        assert!(e.to_string().contains(".tar.gz.sha256 says 000"), "{e}");
    }

    #[test]
    fn something_else_or_an_incomplete_tarball_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = tarball(dir.path(), &[("etcd-v3.5/etcd".into(), b"x".to_vec())]);
        let e = prepare(&inputs(dir.path(), &other), None).err().unwrap();
        assert!(
            e.to_string().contains("not a Kubernetes server tarball"),
            "{e}"
        );
        assert!(e.to_string().contains("etcd-v3.5/etcd"), "{e}");

        let mut partial = server_entries();
        partial.retain(|(n, _)| !n.ends_with("/kubelet"));
        let kube = tarball(dir.path(), &partial);
        let e = prepare(&inputs(dir.path(), &kube), None).err().unwrap();
        assert!(e.to_string().contains("missing kubelet"), "{e}");

        let plain = dir.path().join("notes.txt");
        std::fs::write(&plain, "hello").unwrap();
        let e = prepare(&inputs(dir.path(), &plain), None).err().unwrap();
        assert!(e.to_string().contains("not a gzip-compressed tar"), "{e}");
    }

    #[test]
    fn a_directory_checks_each_binarys_file_and_needs_a_tag_below_v1_33() {
        let dir = tempfile::tempdir().unwrap();
        let bins = dir.path().join("bins");
        std::fs::create_dir(&bins).unwrap();
        for b in REQUIRED_BINARIES {
            std::fs::write(bins.join(b), exe(&format!("bin {b}"))).unwrap();
        }
        std::fs::write(bins.join("kube-apiserver.docker_tag"), "v1.20.2").unwrap();
        let mut i = inputs(dir.path(), &bins);
        let e = prepare(&i, None).err().unwrap();
        assert!(e.to_string().contains("--tag"), "{e}");
        i.tag = Some("reg:5000/me/kube:v1.20.2-x".into());
        let p = prepare(&i, None).unwrap();
        assert!(p.plan.labels["io.rkers.image-build.kubernetes.checksum"].contains("0 of 5"));
        std::fs::write(bins.join("kubelet.sha256"), "1".repeat(64)).unwrap();
        let e = prepare(&i, None).err().unwrap();
        assert!(e.to_string().contains("kubelet: checksum mismatch"), "{e}");
    }

    fn refused(dir: &Path, entries: &[(String, Vec<u8>)]) -> String {
        let kube = tarball(dir, entries);
        prepare(&inputs(dir, &kube), None)
            .err()
            .unwrap()
            .to_string()
    }

    /// Issue 50: with no docker_tag and no checksum, the tarball's own `kube-apiserver
    /// --version` ran here (as root) to learn the version. A script that says a version and
    /// leaves a mark is refused now, and the mark is never made.
    #[test]
    fn an_input_is_never_run_and_the_version_comes_from_its_tag_or_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let mut entries = server_entries();
        entries.retain(|(n, _)| !n.ends_with(".docker_tag"));
        let script = format!(
            "#!/bin/sh\ntouch {}\necho Kubernetes v1.33.9\n",
            mark.display()
        );
        let mut scripted = entries.clone();
        scripted[0].1 = script.into_bytes();
        let e = refused(dir.path(), &scripted);
        assert!(
            e.contains("kube-apiserver is not an ELF executable (a script)"),
            "{e}"
        );
        assert!(!mark.exists(), "the input was run");

        // Executables without a docker_tag: the version is the flag's.
        let e = refused(dir.path(), &entries);
        assert!(
            e.contains("no kube-apiserver.docker_tag") && e.contains("--kubernetes-version"),
            "{e}"
        );
        let kube = tarball(dir.path(), &entries);
        let mut i = inputs(dir.path(), &kube);
        i.kubernetes_version = Some("v1.33.4".into());
        assert_eq!(
            prepare(&i, None).unwrap().request.version.to_string(),
            "1.33.4"
        );
    }

    /// A 0-byte kubelet, or a link member the copy made 0 bytes, passed as complete.
    #[test]
    fn empty_binaries_and_link_members_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut entries = server_entries();
        let kubelet = entries
            .iter()
            .position(|(n, _)| n.ends_with("/kubelet"))
            .unwrap();
        entries[kubelet].1.clear();
        let e = refused(dir.path(), &entries);
        assert!(e.contains(": kubelet is empty (0 bytes)"), "{e}");

        for (kind, said) in [
            (tar::EntryType::Symlink, "symbolic link"),
            (tar::EntryType::Link, "hard link"),
        ] {
            let path = dir.path().join("kubernetes-server-linux-amd64.tar.gz");
            let gz = flate2::write::GzEncoder::new(
                File::create(&path).unwrap(),
                flate2::Compression::fast(),
            );
            let mut b = tar::Builder::new(gz);
            for (name, data) in server_entries() {
                let mut h = tar::Header::new_gnu();
                h.set_mode(0o755);
                if name.ends_with("/kubelet") {
                    h.set_entry_type(kind);
                    h.set_size(0);
                    b.append_link(&mut h, &name, "kubernetes/server/bin/kube-proxy")
                        .unwrap();
                } else {
                    h.set_size(data.len() as u64);
                    h.set_cksum();
                    b.append_data(&mut h, &name, data.as_slice()).unwrap();
                }
            }
            b.into_inner().unwrap().finish().unwrap();
            let e = prepare(&inputs(dir.path(), &path), None)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(&format!("kubelet is a {said} member")), "{e}");
        }
    }

    #[test]
    fn binaries_of_another_architecture_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut entries = server_entries();
        let kubelet = entries
            .iter()
            .position(|(n, _)| n.ends_with("/kubelet"))
            .unwrap();
        entries[kubelet].1 = exe_for(183, "arm kubelet");
        let e = refused(dir.path(), &entries);
        assert!(
            e.contains("kubelet is an executable for arm64, but")
                && e.contains("kubernetes-server-linux-amd64.tar.gz is for amd64"),
            "{e}"
        );

        let kube = tarball(dir.path(), &server_entries());
        let i = inputs(dir.path(), &kube);
        std::fs::write(&i.cri_dockerd, exe_for(183, "cri")).unwrap();
        let e = prepare(&i, None).err().unwrap().to_string();
        assert!(e.contains("cri-dockerd is an executable for arm64"), "{e}");
        std::fs::write(&i.cri_dockerd, "#!/bin/sh\n").unwrap();
        let e = prepare(&i, None).err().unwrap().to_string();
        assert!(e.contains("cri-dockerd is not an ELF executable"), "{e}");
    }

    /// A member announcing more than any binary is refused from its header, before its bytes.
    #[test]
    fn a_member_larger_than_any_binary_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubernetes-server-linux-amd64.tar.gz");
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut h = tar::Header::new_gnu();
        h.set_path("kubernetes/server/bin/kube-apiserver").unwrap();
        h.set_mode(0o755);
        h.set_size(MAX_BINARY_BYTES + 1);
        h.set_cksum();
        gz.write_all(h.as_bytes()).unwrap();
        gz.write_all(&[0u8; 1024]).unwrap();
        gz.finish().unwrap();
        let e = prepare(&inputs(dir.path(), &path), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("more than any Kubernetes binary"), "{e}");
    }
}
