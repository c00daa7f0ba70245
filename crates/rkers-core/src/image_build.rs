//! `rkers image build`'s decisions, with no I/O: which files of the official Kubernetes server
//! tarball make the image, how a `.sha256`/`.sha512` file is read and judged, the Kubernetes
//! version found in the inputs, the image's tag, labels and Dockerfile, and the `system_images`
//! lines to print. The engine (`src/image_build.rs` of the root package) reads the files, packs
//! the build context and drives Docker.

use indexmap::IndexMap;
use semver::Version;
use sha2::Digest;

/// The binaries RKE's containers start from the one Kubernetes image (spec §14).
pub const REQUIRED_BINARIES: [&str; 5] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubelet",
];
/// Copied when present: kubectl serves the addon jobs' images of some sites and operators in
/// `docker exec`.
pub const OPTIONAL_BINARIES: [&str; 1] = ["kubectl"];
/// Where the official server tarball keeps its binaries.
pub const SERVER_BIN_DIR: &str = "kubernetes/server/bin/";
pub const CRI_DOCKERD: &str = "cri-dockerd";
/// The single-binary name upstream hyperkube images answered to: `hyperkube <component> ...`.
pub const HYPERKUBE_SHIM: &str = "#!/bin/sh\n# hyperkube <component> [flags]: runs the named Kubernetes component.\nexec \"$@\"\n";
/// What the rke-tools entrypoint and the components call inside the image: the wrapper is a bash
/// script; kubelet and kube-proxy program iptables and kubelet mounts volumes.
pub const BASE_TOOLS: [&str; 7] = [
    "bash",
    "iptables",
    "ip6tables",
    "iptables-save",
    "iptables-restore",
    "mount",
    "umount",
];
/// The first Kubernetes minor past RKE1's metadata, whose versions are rkers' own (`-rkers1`).
pub const FIRST_RKERS_MINOR: u64 = 33;
/// The repository of rkers' own Kubernetes image (issue 29's naming shared with the metadata).
pub const RKERS_HYPERKUBE_REPO: &str = "rkers/hyperkube";
const LABEL_PREFIX: &str = "io.rkers.image-build";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageBuildError {
    #[error(
        "{file}: not a Kubernetes server tarball: no entry under {SERVER_BIN_DIR} (its first entries: {first}); give kubernetes-server-linux-<arch>.tar.gz or a directory of the server binaries"
    )]
    NotServerTarball { file: String, first: String },
    #[error(
        "{source_name}: missing {missing} (needed: {}); the official server tarball has them all under {SERVER_BIN_DIR}",
        REQUIRED_BINARIES.join(", ")
    )]
    MissingBinaries {
        source_name: String,
        missing: String,
    },
    #[error(
        "{input}: checksum mismatch: {algo} is {actual}, but {expected_from} says {expected}; the file is damaged or not the one published"
    )]
    ChecksumMismatch {
        input: String,
        algo: DigestAlgo,
        actual: String,
        expected: String,
        expected_from: String,
    },
    #[error("{file}: {reason}")]
    BadChecksumFile { file: String, reason: String },
    #[error(
        "the Kubernetes version could not be read from {source_name} ({detail}); pass --kubernetes-version vX.Y.Z (rkers does not run an input to ask it)"
    )]
    VersionUnknown { source_name: String, detail: String },
    #[error("--kubernetes-version {given} disagrees with {found} read from {source_name}")]
    VersionDisagrees {
        given: String,
        found: String,
        source_name: String,
    },
    #[error("{0}")]
    Tag(String),
    /// A binary that cannot be what the image runs (empty, a link, a script, too large).
    #[error(
        "{source_name}: {binary} {reason}; the image needs the Linux executable itself, as the official server tarball holds it"
    )]
    NotAnExecutable {
        source_name: String,
        binary: String,
        reason: String,
    },
    #[error(
        "{source_name}: {binary} is an executable for {arch}, but {expected_from} is for {expected}; give the inputs of one architecture"
    )]
    WrongArchitecture {
        source_name: String,
        binary: String,
        arch: String,
        expected: String,
        expected_from: String,
    },
}

/// The largest binary taken from an input (kube-apiserver, the largest, is about 100 MiB):
/// a tarball member announcing more is refused before a byte of it is written.
pub const MAX_BINARY_BYTES: u64 = 512 * 1024 * 1024;
/// The largest `kube-apiserver.docker_tag` read (it holds one version).
pub const MAX_TAG_BYTES: u64 = 4096;
/// How many leading bytes of a binary [`elf_arch`] needs.
pub const ELF_HEADER_BYTES: usize = 20;

/// Why bytes are not a Linux executable Kubernetes is released for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfProblem {
    #[error("is empty (0 bytes)")]
    Empty,
    #[error("is not an ELF executable{}: it does not start with an ELF header", if *.script { " (a script)" } else { "" })]
    NotElf { script: bool },
    #[error("has an ELF header of unknown byte order {0}")]
    ByteOrder(u8),
    #[error("is an ELF file of type {0}, not an executable (an object file or a core dump)")]
    NotExecutable(u16),
    #[error(
        "is an ELF executable for machine {machine} ({bits} bits, {endian} endian), which Kubernetes is not released for"
    )]
    Machine {
        machine: u16,
        bits: u8,
        endian: &'static str,
    },
}

/// The architecture, as Kubernetes' release files name it (`amd64`, `arm64`...), an ELF
/// executable's header says it runs on; else why the bytes are no such executable. Only the
/// header is read: rkers never runs an input to learn what it is.
pub fn elf_arch(header: &[u8]) -> Result<&'static str, ElfProblem> {
    if header.is_empty() {
        return Err(ElfProblem::Empty);
    }
    if header.len() < ELF_HEADER_BYTES || &header[..4] != b"\x7fELF" {
        return Err(ElfProblem::NotElf {
            script: header.starts_with(b"#!"),
        });
    }
    let little = match header[5] {
        1 => true,
        2 => false,
        other => return Err(ElfProblem::ByteOrder(other)),
    };
    let half = |at: usize| {
        let bytes = [header[at], header[at + 1]];
        if little {
            u16::from_le_bytes(bytes)
        } else {
            u16::from_be_bytes(bytes)
        }
    };
    // ET_EXEC, or ET_DYN for a position-independent executable.
    let kind = half(16);
    if kind != 2 && kind != 3 {
        return Err(ElfProblem::NotExecutable(kind));
    }
    let wide = header[4] == 2;
    Ok(match (half(18), wide, little) {
        (62, true, true) => "amd64",
        (183, true, true) => "arm64",
        (40, false, true) => "arm",
        (3, false, true) => "386",
        (21, true, true) => "ppc64le",
        (22, true, false) => "s390x",
        (243, true, true) => "riscv64",
        (machine, ..) => {
            return Err(ElfProblem::Machine {
                machine,
                bits: if wide { 64 } else { 32 },
                endian: if little { "little" } else { "big" },
            });
        }
    })
}

/// The architecture an input's file name says (`kubernetes-server-linux-arm64.tar.gz`,
/// `cri-dockerd-0.3.15.amd64.tgz`), when it says one.
pub fn arch_in_name(name: &str) -> Option<&'static str> {
    const ARCHES: [&str; 7] = [
        "amd64", "arm64", "ppc64le", "s390x", "riscv64", "386", "arm",
    ];
    let file = name.rsplit('/').next().unwrap_or(name);
    let words: Vec<&str> = file.split(['-', '.', '_']).collect();
    ARCHES.into_iter().find(|a| words.contains(a))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestAlgo {
    Sha256,
    Sha512,
}

impl std::fmt::Display for DigestAlgo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DigestAlgo::Sha256 => "sha256",
            DigestAlgo::Sha512 => "sha512",
        })
    }
}

impl DigestAlgo {
    /// The checksum files looked for beside an input, in this order.
    pub const ALL: [DigestAlgo; 2] = [DigestAlgo::Sha512, DigestAlgo::Sha256];

    pub fn extension(self) -> &'static str {
        match self {
            DigestAlgo::Sha256 => "sha256",
            DigestAlgo::Sha512 => "sha512",
        }
    }
    fn hex_len(self) -> usize {
        match self {
            DigestAlgo::Sha256 => 64,
            DigestAlgo::Sha512 => 128,
        }
    }
    fn from_hex_len(len: usize) -> Option<DigestAlgo> {
        DigestAlgo::ALL.into_iter().find(|a| a.hex_len() == len)
    }
}

/// Both digests of one input, computed in one pass by [`Hasher`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digests {
    pub sha256: String,
    pub sha512: String,
}

impl Digests {
    pub fn get(&self, algo: DigestAlgo) -> &str {
        match algo {
            DigestAlgo::Sha256 => &self.sha256,
            DigestAlgo::Sha512 => &self.sha512,
        }
    }
}

/// Feeds both digests at once, so an input is read a single time.
#[derive(Default)]
pub struct Hasher {
    sha256: sha2::Sha256,
    sha512: sha2::Sha512,
}

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.sha256.update(bytes);
        self.sha512.update(bytes);
    }
    pub fn finish(self) -> Digests {
        Digests {
            sha256: hex::encode(self.sha256.finalize()),
            sha512: hex::encode(self.sha512.finalize()),
        }
    }
}

impl std::io::Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A checksum an input must match, and where it was said (a file beside it, or a flag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub algo: DigestAlgo,
    pub hex: String,
    pub from: String,
}

/// Reads a checksum given on the command line: `sha256:HEX`, `sha512:HEX`, or a bare HEX whose
/// length says which.
pub fn parse_checksum_flag(flag: &str, value: &str) -> Result<Expected, ImageBuildError> {
    let bad = |reason: String| ImageBuildError::BadChecksumFile {
        file: flag.to_owned(),
        reason,
    };
    let (algo, hex) = match value.split_once(':') {
        Some(("sha256", h)) => (Some(DigestAlgo::Sha256), h),
        Some(("sha512", h)) => (Some(DigestAlgo::Sha512), h),
        Some((other, _)) => {
            return Err(bad(format!(
                "unknown digest {other:?}: use sha256:HEX or sha512:HEX"
            )));
        }
        None => (None, value),
    };
    let hex = checked_hex(hex).map_err(bad)?;
    let algo = match algo {
        Some(a) if a.hex_len() == hex.len() => a,
        Some(a) => {
            return Err(bad(format!(
                "a {a} digest has {} hex digits, this one {}",
                a.hex_len(),
                hex.len()
            )));
        }
        None => DigestAlgo::from_hex_len(hex.len()).ok_or_else(|| {
            bad(format!(
                "{} hex digits is neither a sha256 (64) nor a sha512 (128) digest",
                hex.len()
            ))
        })?,
    };
    Ok(Expected {
        algo,
        hex,
        from: flag.to_owned(),
    })
}

/// Reads a `.sha256`/`.sha512` file: either the bare digest (what dl.k8s.io publishes) or
/// `sha256sum` lines (`HEX  name` / `HEX *name`), of which the one naming `input_name` counts.
pub fn parse_checksum_file(
    file: &str,
    algo: DigestAlgo,
    text: &str,
    input_name: &str,
) -> Result<Expected, ImageBuildError> {
    let bad = |reason: String| ImageBuildError::BadChecksumFile {
        file: file.to_owned(),
        reason,
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let chosen = match lines.as_slice() {
        [] => return Err(bad("it is empty".into())),
        [one] => *one,
        many => many
            .iter()
            .copied()
            .find(|l| {
                l.split_whitespace().nth(1).is_some_and(|n| {
                    n.trim_start_matches('*').rsplit('/').next() == Some(input_name)
                })
            })
            .ok_or_else(|| {
                bad(format!(
                    "none of its {} lines names {input_name}",
                    many.len()
                ))
            })?,
    };
    let mut words = chosen.split_whitespace();
    let hex = checked_hex(words.next().unwrap_or_default()).map_err(&bad)?;
    if let Some(named) = words.next().map(|n| n.trim_start_matches('*'))
        && named.rsplit('/').next() != Some(input_name)
    {
        return Err(bad(format!(
            "it gives the digest of {named}, not of {input_name}"
        )));
    }
    if hex.len() != algo.hex_len() {
        return Err(bad(format!(
            "a {algo} digest has {} hex digits, this one {}",
            algo.hex_len(),
            hex.len()
        )));
    }
    Ok(Expected {
        algo,
        hex,
        from: file.to_owned(),
    })
}

fn checked_hex(text: &str) -> Result<String, String> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("{text:?} is not a hex digest"));
    }
    Ok(text.to_ascii_lowercase())
}

/// The verdict on one input: `Ok` with what to record, or the mismatch.
pub fn verify(
    input: &str,
    digests: &Digests,
    expected: Option<&Expected>,
) -> Result<Verified, ImageBuildError> {
    let Some(expected) = expected else {
        return Ok(Verified::NotChecked);
    };
    let actual = digests.get(expected.algo);
    if actual != expected.hex {
        return Err(ImageBuildError::ChecksumMismatch {
            input: input.to_owned(),
            algo: expected.algo,
            actual: actual.to_owned(),
            expected: expected.hex.clone(),
            expected_from: expected.from.clone(),
        });
    }
    Ok(Verified::Matched {
        algo: expected.algo,
        from: expected.from.clone(),
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verified {
    NotChecked,
    Matched {
        algo: DigestAlgo,
        from: String,
    },
    /// A directory of binaries: how many had a checksum file beside them (all of which matched).
    Binaries {
        checked: usize,
        of: usize,
    },
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verified::NotChecked => f.write_str("not checked (no .sha256/.sha512 file or flag)"),
            Verified::Matched { algo, from } => write!(f, "{algo} matched {from}"),
            Verified::Binaries { checked, of } => write!(
                f,
                "{checked} of {of} binaries had a .sha256/.sha512 file beside them, and it matched"
            ),
        }
    }
}

/// The binary an entry of the server tarball is, when it is one the image takes.
pub fn server_tarball_binary(entry_path: &str) -> Option<&'static str> {
    let rest = entry_path
        .trim_start_matches("./")
        .strip_prefix(SERVER_BIN_DIR)?;
    REQUIRED_BINARIES
        .into_iter()
        .chain(OPTIONAL_BINARIES)
        .find(|b| *b == rest)
}

/// Whether an entry lies under the tarball's binary directory at all (a server tarball of
/// another layout has none).
pub fn in_server_bin_dir(entry_path: &str) -> bool {
    entry_path
        .trim_start_matches("./")
        .strip_prefix(SERVER_BIN_DIR)
        .is_some_and(|r| !r.is_empty())
}

/// The server tarball's `kube-apiserver.docker_tag`, which holds the release's version (with
/// `+` written `_`, as Docker tags require).
pub fn is_version_tag_entry(entry_path: &str) -> bool {
    entry_path.trim_start_matches("./") == "kubernetes/server/bin/kube-apiserver.docker_tag"
}

/// Which required binaries are absent.
pub fn missing_binaries<'a>(
    present: impl IntoIterator<Item = &'a str> + Clone,
) -> Vec<&'static str> {
    REQUIRED_BINARIES
        .into_iter()
        .filter(|b| !present.clone().into_iter().any(|p| p == *b))
        .collect()
}

/// A version as the tarball's docker_tag (`v1.20.2`, `v1.33.1_abc`) or `--version` output
/// (`Kubernetes v1.20.2`) writes it.
pub fn parse_kubernetes_version(text: &str) -> Option<Version> {
    let word = text
        .split_whitespace()
        .find(|w| w.starts_with('v') && w.len() > 1)?;
    Version::parse(&word[1..].replace('_', "+")).ok()
}

/// The version the image is for: the one read from the inputs, or the flag's when nothing was
/// readable; both must agree.
pub fn settle_version(
    given: Option<&str>,
    found: Option<Version>,
    source_name: &str,
    detail: &str,
) -> Result<Version, ImageBuildError> {
    let given = given
        .map(|g| {
            Version::parse(g.trim_start_matches('v')).map_err(|e| {
                ImageBuildError::Tag(format!("--kubernetes-version {g}: not a version ({e})"))
            })
        })
        .transpose()?;
    match (given, found) {
        (Some(g), Some(f)) if g != f => Err(ImageBuildError::VersionDisagrees {
            given: format!("v{g}"),
            found: format!("v{f}"),
            source_name: source_name.to_owned(),
        }),
        (_, Some(f)) => Ok(f),
        (Some(g), None) => Ok(g),
        (None, None) => Err(ImageBuildError::VersionUnknown {
            source_name: source_name.to_owned(),
            detail: detail.to_owned(),
        }),
    }
}

/// rkers' own version string for an upstream release, and so the tag of its default image.
pub fn rkers_version(version: &Version) -> String {
    format!(
        "v{}.{}.{}-rkers1",
        version.major, version.minor, version.patch
    )
}

/// The image the metadata names for rkers' own versions: `rkers/hyperkube:vX.Y.Z-rkers1`, behind
/// the default private registry. `None` below v1.33, where RKE1's metadata names upstream's
/// images and a made-up name could shadow them.
pub fn default_tag(version: &Version, default_registry: Option<&str>) -> Option<String> {
    if version.major != 1 || version.minor < FIRST_RKERS_MINOR {
        return None;
    }
    let image = format!("{RKERS_HYPERKUBE_REPO}:{}", rkers_version(version));
    Some(match default_registry.map(|r| r.trim_end_matches('/')) {
        Some(r) if !r.is_empty() => format!("{r}/{image}"),
        _ => image,
    })
}

/// The tag to build: `--tag` as given, else the default for rkers' versions.
pub fn choose_tag(
    given: Option<&str>,
    version: &Version,
    default_registry: Option<&str>,
) -> Result<String, ImageBuildError> {
    let tag = match given {
        Some(t) => t.to_owned(),
        None => default_tag(version, default_registry).ok_or_else(|| {
            ImageBuildError::Tag(format!(
                "Kubernetes v{version} is a version RKE1's metadata covers (its image is upstream's \
                 rancher/hyperkube): name the image to build with --tag REGISTRY/REPO:TAG"
            ))
        })?,
    };
    check_reference(&tag)?;
    Ok(tag)
}

/// A reference Docker accepts as a tag: a lowercase repository path and an explicit tag.
pub fn check_reference(reference: &str) -> Result<(), ImageBuildError> {
    let bad = |why: &str| ImageBuildError::Tag(format!("--tag {reference:?}: {why}"));
    let (repo, tag) = split_reference(reference);
    let Some(tag) = tag else {
        return Err(bad("give the tag too (REPO:TAG), not only the repository"));
    };
    if tag.is_empty()
        || tag.len() > 128
        || !tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        || tag.starts_with(['.', '-'])
    {
        return Err(bad(
            "the tag may hold letters, digits, '_', '.' and '-' (up to 128)",
        ));
    }
    let path = match repo.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => rest,
        _ => repo,
    };
    if path.is_empty()
        || path.split('/').any(|c| {
            c.is_empty()
                || !c.chars().all(|ch| {
                    ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-')
                })
        })
    {
        return Err(bad(
            "the repository path is lowercase letters, digits and '.', '_', '-' between '/'",
        ));
    }
    Ok(())
}

/// `repo[:tag]`, where a `:` inside the registry host's port is not the tag's.
pub fn split_reference(reference: &str) -> (&str, Option<&str>) {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag)),
        _ => (reference, None),
    }
}

/// One input as the engine found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRecord {
    /// The file or directory as given (its file name goes into the labels).
    pub name: String,
    /// The whole file's digests; `None` for a directory of binaries.
    pub digests: Option<Digests>,
    pub verified: Verified,
}

/// Everything the engine read, for [`plan`] to decide on.
#[derive(Clone, Debug)]
pub struct Request {
    pub kubernetes: InputRecord,
    pub cri_dockerd: InputRecord,
    /// Each binary found with its sha256 (the required ones at least; kubectl when present).
    pub binaries: IndexMap<String, String>,
    pub cri_dockerd_sha256: String,
    pub version: Version,
    pub base: String,
    pub tag: String,
}

/// A file of the build context: a binary the engine copies, or text decided here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContextSource {
    /// A Kubernetes binary by name.
    Binary(String),
    CriDockerd,
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextFile {
    pub path: String,
    pub mode: u32,
    pub source: ContextSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildPlan {
    pub tag: String,
    pub context: Vec<ContextFile>,
    pub labels: IndexMap<String, String>,
}

/// Decides the build context, the Dockerfile and the labels.
pub fn plan(req: &Request) -> BuildPlan {
    let mut context = vec![ContextFile {
        path: "Dockerfile".into(),
        mode: 0o644,
        source: ContextSource::Text(dockerfile(&req.base)),
    }];
    for name in req.binaries.keys() {
        context.push(ContextFile {
            path: format!("bin/{name}"),
            mode: 0o755,
            source: ContextSource::Binary(name.clone()),
        });
    }
    context.push(ContextFile {
        path: format!("bin/{CRI_DOCKERD}"),
        mode: 0o755,
        source: ContextSource::CriDockerd,
    });
    context.push(ContextFile {
        path: "bin/hyperkube".into(),
        mode: 0o755,
        source: ContextSource::Text(HYPERKUBE_SHIM.into()),
    });
    BuildPlan {
        tag: req.tag.clone(),
        context,
        labels: labels(req),
    }
}

fn labels(req: &Request) -> IndexMap<String, String> {
    let mut l = IndexMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(format!("{LABEL_PREFIX}.{k}"), v);
    };
    put("kubernetes-version", format!("v{}", req.version));
    put("base", req.base.clone());
    for (key, input) in [
        ("kubernetes", &req.kubernetes),
        (CRI_DOCKERD, &req.cri_dockerd),
    ] {
        put(&format!("{key}.source"), file_name(&input.name).to_owned());
        if let Some(d) = &input.digests {
            put(&format!("{key}.sha256"), d.sha256.clone());
        }
        put(&format!("{key}.checksum"), input.verified.to_string());
    }
    for (name, sha) in &req.binaries {
        put(&format!("bin.{name}.sha256"), sha.clone());
    }
    put("bin.cri-dockerd.sha256", req.cri_dockerd_sha256.clone());
    l.insert(
        "org.opencontainers.image.version".into(),
        format!("v{}", req.version),
    );
    l
}

fn file_name(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// The image: the base the user names, the binaries on PATH, and a first check that the base has
/// what RKE's containers call and that the binaries run on it (a wrong architecture or a base
/// without a shell fails here, not on the cluster).
pub fn dockerfile(base: &str) -> String {
    let tools = BASE_TOOLS.join(" ");
    format!(
        "# rkers image build: the Kubernetes image RKE's containers run\n\
         FROM {base}\n\
         COPY bin/ /usr/local/bin/\n\
         ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         RUN for tool in {tools}; do \\\n\
         \x20     command -v \"$tool\" >/dev/null || {{ echo \"rkers image build: the base image {base} has no $tool on PATH; RKE's containers need: {tools}\" >&2; exit 1; }}; \\\n\
         \x20   done \\\n\
         \x20&& kube-apiserver --version && kubelet --version\n"
    )
}

/// What to put in cluster.yml to run the image.
pub fn system_images_lines(tag: &str) -> String {
    format!("system_images:\n  kubernetes: {tag}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digests(bytes: &[u8]) -> Digests {
        let mut h = Hasher::default();
        h.update(bytes);
        h.finish()
    }

    #[test]
    fn tarball_entries_map_to_binaries() {
        assert_eq!(
            server_tarball_binary("kubernetes/server/bin/kubelet"),
            Some("kubelet")
        );
        assert_eq!(
            server_tarball_binary("./kubernetes/server/bin/kubectl"),
            Some("kubectl")
        );
        assert_eq!(
            server_tarball_binary("kubernetes/server/bin/kube-apiserver.tar"),
            None
        );
        assert_eq!(server_tarball_binary("kubernetes/client/bin/kubelet"), None);
        assert!(in_server_bin_dir("kubernetes/server/bin/mounter"));
        assert!(!in_server_bin_dir("kubernetes/server/bin/"));
        assert!(is_version_tag_entry(
            "kubernetes/server/bin/kube-apiserver.docker_tag"
        ));
    }

    #[test]
    fn missing_binaries_are_named() {
        assert_eq!(
            missing_binaries(["kube-apiserver", "kubelet", "kube-proxy", "kubectl"]),
            vec!["kube-controller-manager", "kube-scheduler"]
        );
        assert!(missing_binaries(REQUIRED_BINARIES).is_empty());
        let e = ImageBuildError::MissingBinaries {
            source_name: "k.tar.gz".into(),
            missing: "kubelet".into(),
        };
        assert!(e.to_string().starts_with("k.tar.gz: missing kubelet"));
    }

    #[test]
    fn checksum_files_in_both_forms() {
        let d = digests(b"abc");
        let bare = parse_checksum_file(
            "k.sha256",
            DigestAlgo::Sha256,
            &format!("{}\n", d.sha256),
            "k",
        )
        .unwrap();
        assert_eq!(bare.hex, d.sha256);
        let sums = format!(
            "{}  other.tar.gz\n{} *k.tar.gz\n",
            "0".repeat(128),
            d.sha512.to_uppercase()
        );
        let listed =
            parse_checksum_file("SUMS.sha512", DigestAlgo::Sha512, &sums, "k.tar.gz").unwrap();
        assert_eq!(listed.hex, d.sha512);
        assert!(matches!(
            verify("k.tar.gz", &d, Some(&listed)),
            Ok(Verified::Matched {
                algo: DigestAlgo::Sha512,
                ..
            })
        ));
    }

    #[test]
    fn bad_checksum_files_are_refused_with_the_reason() {
        let short = parse_checksum_file("k.sha256", DigestAlgo::Sha256, "abcd", "k").unwrap_err();
        assert!(
            short.to_string().contains("64 hex digits, this one 4"),
            "{short}"
        );
        let other = parse_checksum_file(
            "k.sha256",
            DigestAlgo::Sha256,
            &format!("{}  j.tar.gz", "a".repeat(64)),
            "k.tar.gz",
        )
        .unwrap_err();
        assert!(other.to_string().contains("not of k.tar.gz"), "{other}");
        let empty = parse_checksum_file("k.sha256", DigestAlgo::Sha256, "\n", "k").unwrap_err();
        assert!(empty.to_string().contains("empty"));
        assert!(parse_checksum_file("k.sha256", DigestAlgo::Sha256, "xyz", "k").is_err());
    }

    #[test]
    fn a_mismatch_names_the_input_and_both_digests() {
        let d = digests(b"abc");
        let wrong = parse_checksum_flag(
            "--kubernetes-checksum",
            &format!("sha256:{}", "1".repeat(64)),
        )
        .unwrap();
        let e = verify("kubernetes-server-linux-amd64.tar.gz", &d, Some(&wrong)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("kubernetes-server-linux-amd64.tar.gz: checksum mismatch: sha256 is "),
            "{text}"
        );
        assert!(
            text.contains(&d.sha256)
                && text.contains(&"1".repeat(64))
                && text.contains("--kubernetes-checksum")
        );
        assert_eq!(verify("x", &d, None), Ok(Verified::NotChecked));
    }

    #[test]
    fn checksum_flags() {
        assert_eq!(
            parse_checksum_flag("f", &"a".repeat(128)).unwrap().algo,
            DigestAlgo::Sha512
        );
        assert_eq!(
            parse_checksum_flag("f", &"A".repeat(64)).unwrap().hex,
            "a".repeat(64)
        );
        assert!(parse_checksum_flag("f", &format!("sha512:{}", "a".repeat(64))).is_err());
        assert!(parse_checksum_flag("f", &format!("md5:{}", "a".repeat(32))).is_err());
        assert!(parse_checksum_flag("f", "abc").is_err());
    }

    #[test]
    fn versions_from_tags_and_output() {
        let v = |s: &str| parse_kubernetes_version(s).map(|v| v.to_string());
        assert_eq!(v("Kubernetes v1.20.2\n").as_deref(), Some("1.20.2"));
        assert_eq!(v("v1.33.1\n").as_deref(), Some("1.33.1"));
        assert_eq!(v("v1.34.0-rc.1_abc").as_deref(), Some("1.34.0-rc.1+abc"));
        assert_eq!(v("garbage"), None);
        let found = Version::new(1, 20, 2);
        assert_eq!(
            settle_version(None, Some(found.clone()), "t", "").unwrap(),
            found
        );
        assert_eq!(
            settle_version(Some("v1.20.2"), Some(found.clone()), "t", "").unwrap(),
            found
        );
        assert!(matches!(
            settle_version(Some("v1.21.0"), Some(found), "t", ""),
            Err(ImageBuildError::VersionDisagrees { .. })
        ));
        assert_eq!(
            settle_version(Some("1.33.0"), None, "t", "").unwrap(),
            Version::new(1, 33, 0)
        );
        let e = settle_version(None, None, "dir", "kube-apiserver --version failed").unwrap_err();
        assert!(e.to_string().contains("--kubernetes-version"));
    }

    /// The first bytes of an ELF executable: class, byte order, type, machine.
    pub(crate) fn elf(wide: bool, little: bool, kind: u16, machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([if wide { 2 } else { 1 }, if little { 1 } else { 2 }, 1]);
        h.resize(16, 0);
        let half = |v: u16| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        h.extend(half(kind));
        h.extend(half(machine));
        h.resize(64, 0);
        h
    }

    /// Issue 50: a 0-byte kubelet, a script or a binary of another architecture passed as a
    /// complete input; the header says which is which, without running anything.
    #[test]
    fn elf_headers_say_the_architecture_and_anything_else_is_refused() {
        assert_eq!(elf_arch(&elf(true, true, 2, 62)), Ok("amd64"));
        assert_eq!(elf_arch(&elf(true, true, 3, 183)), Ok("arm64"));
        assert_eq!(elf_arch(&elf(false, true, 2, 40)), Ok("arm"));
        assert_eq!(elf_arch(&elf(true, true, 3, 21)), Ok("ppc64le"));
        assert_eq!(elf_arch(&elf(true, false, 2, 22)), Ok("s390x"));
        let refused = |bytes: &[u8]| elf_arch(bytes).unwrap_err().to_string();
        assert!(refused(b"").contains("empty"));
        assert!(refused(b"#!/bin/sh\necho v1.33.0\n").contains("(a script)"));
        assert!(refused(b"\x7fELF").contains("not an ELF executable"));
        assert!(refused(&elf(true, true, 1, 62)).contains("not an executable"));
        assert!(refused(&elf(true, true, 2, 9999)).contains("machine 9999"));
        // x86-64's number in a 32-bit header is no Kubernetes target either.
        assert!(refused(&elf(false, true, 2, 62)).contains("machine 62"));
    }

    #[test]
    fn the_architecture_in_an_input_name() {
        assert_eq!(
            arch_in_name("/tmp/kubernetes-server-linux-arm64.tar.gz"),
            Some("arm64")
        );
        assert_eq!(arch_in_name("cri-dockerd-0.3.15.amd64.tgz"), Some("amd64"));
        assert_eq!(
            arch_in_name("kubernetes-server-linux-arm.tar.gz"),
            Some("arm")
        );
        assert_eq!(arch_in_name("/work/armada/cri-dockerd"), None);
        assert_eq!(arch_in_name("bins"), None);
    }

    #[test]
    fn default_tag_only_for_rkers_versions() {
        let v133 = Version::new(1, 33, 4);
        assert_eq!(
            choose_tag(None, &v133, Some("reg.example:5000/")).unwrap(),
            "reg.example:5000/rkers/hyperkube:v1.33.4-rkers1"
        );
        assert_eq!(
            choose_tag(None, &v133, None).unwrap(),
            "rkers/hyperkube:v1.33.4-rkers1"
        );
        let v120 = Version::new(1, 20, 2);
        let e = choose_tag(None, &v120, Some("r")).unwrap_err();
        assert!(e.to_string().contains("--tag"), "{e}");
        assert_eq!(
            choose_tag(Some("10.0.0.1:5000/me/kube:v1.20.2-x"), &v120, None).unwrap(),
            "10.0.0.1:5000/me/kube:v1.20.2-x"
        );
        for bad in [
            "10.0.0.1:5000/me/kube",
            "Me/kube:v1",
            "me//kube:v1",
            "me/kube:-x",
            "me/kube:a b",
        ] {
            assert!(check_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plan_puts_binaries_on_path_and_records_the_inputs() {
        let kube = InputRecord {
            name: "/tmp/in/kubernetes-server-linux-amd64.tar.gz".into(),
            digests: Some(digests(b"tarball")),
            verified: Verified::Matched {
                algo: DigestAlgo::Sha512,
                from: "kubernetes-server-linux-amd64.tar.gz.sha512".into(),
            },
        };
        let cri = InputRecord {
            name: "/tmp/in/cri-dockerd".into(),
            digests: Some(digests(b"cri")),
            verified: Verified::NotChecked,
        };
        let binaries: IndexMap<String, String> = REQUIRED_BINARIES
            .iter()
            .map(|b| (b.to_string(), format!("sha-{b}")))
            .collect();
        let req = Request {
            kubernetes: kube,
            cri_dockerd: cri,
            binaries,
            cri_dockerd_sha256: digests(b"cri").sha256,
            version: Version::new(1, 33, 1),
            base: "reg/base:1".into(),
            tag: "reg/rkers/hyperkube:v1.33.1-rkers1".into(),
        };
        let p = plan(&req);
        let paths: Vec<&str> = p.context.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "Dockerfile",
                "bin/kube-apiserver",
                "bin/kube-controller-manager",
                "bin/kube-scheduler",
                "bin/kube-proxy",
                "bin/kubelet",
                "bin/cri-dockerd",
                "bin/hyperkube"
            ]
        );
        assert!(p.context[1..].iter().all(|f| f.mode == 0o755));
        let ContextSource::Text(df) = &p.context[0].source else {
            panic!("Dockerfile is text")
        };
        assert!(
            df.contains("FROM reg/base:1\nCOPY bin/ /usr/local/bin/\n"),
            "{df}"
        );
        for tool in BASE_TOOLS {
            assert!(df.contains(tool), "{tool}");
        }
        let l = &p.labels;
        assert_eq!(l["io.rkers.image-build.kubernetes-version"], "v1.33.1");
        assert_eq!(
            l["io.rkers.image-build.kubernetes.source"],
            "kubernetes-server-linux-amd64.tar.gz"
        );
        assert_eq!(
            l["io.rkers.image-build.kubernetes.sha256"],
            digests(b"tarball").sha256
        );
        assert_eq!(
            l["io.rkers.image-build.kubernetes.checksum"],
            "sha512 matched kubernetes-server-linux-amd64.tar.gz.sha512"
        );
        assert!(l["io.rkers.image-build.cri-dockerd.checksum"].starts_with("not checked"));
        assert_eq!(l["io.rkers.image-build.bin.kubelet.sha256"], "sha-kubelet");
        assert_eq!(
            l["io.rkers.image-build.bin.cri-dockerd.sha256"],
            digests(b"cri").sha256
        );
        assert_eq!(
            system_images_lines(&p.tag),
            "system_images:\n  kubernetes: reg/rkers/hyperkube:v1.33.1-rkers1\n"
        );
    }
}
