//! `rkers etcd snapshot-save` and `snapshot-restore` decided (§26): which etcd members take
//! part, the archive names, the S3 target, the one-shot helper containers (`specs`) and the
//! typed stages of each command, from what was observed on the hosts. No I/O: the engine
//! (`rkers::phases::etcd_snapshot`) observes the hosts, runs these stages and checks the
//! restored snapshot's checksums with [`checksums_disagree`].
//!
//! A save runs one stage, every member whose etcd runs one after the other. A restore runs
//! four: the snapshot shared from the first member that has it (without S3), then fetched and
//! restored into the scratch directory on every member while the cluster keeps running, then
//! etcd and the control plane removed and the restored data moved in, then `up`.

mod specs;
#[cfg(test)]
mod tests;

pub use specs::*;

use super::Action;
use crate::changeset::{CLUSTER, Changeset, Pace};
use crate::config::{EtcdService, RkeConfig, S3BackupConfig};
use crate::files::FileWrite;
use crate::plan;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Where snapshots live on the hosts (not prefix-aware, as in RKE1), and the restore scratch.
pub const SNAPSHOT_DIR: &str = "/opt/rke/etcd-snapshots";
pub const RESTORE_DIR: &str = "/opt/rke/etcd-snapshots-restore";
const HELPER: &str = "/opt/rke-tools/rke-etcd-backup";
pub const SNAPSHOT_ONCE: &str = "etcd-snapshot-once";
pub const DOWNLOAD: &str = "etcd-download-backup";
pub const RESTORE: &str = "etcd-restore";
pub const RESTORE_MOVE: &str = "etcd-restore-move";
pub const RESTORE_CLEAN: &str = "etcd-restore-clean";
/// RKE1's `backup_config.timeout` default for one-shot helpers, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// Containers removed before the restored data goes in; `up` recreates them.
pub const REPLACED: &[&str] = &[
    plan::ETCD_ROLLING_SNAPSHOTS,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
    plan::ETCD,
];

/// One etcd member of the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdMember {
    pub address: String,
    pub internal_address: String,
    pub hostname: String,
}

impl EtcdMember {
    pub fn member_name(&self) -> String {
        format!("etcd-{}", self.hostname)
    }
}

/// The etcd hosts of the config, in `nodes` order, named as the plan names them.
pub fn etcd_members(config: &RkeConfig) -> Vec<EtcdMember> {
    let mut out: Vec<EtcdMember> = Vec::new();
    for n in config
        .nodes
        .iter()
        .filter(|n| n.role.iter().any(|r| r == "etcd"))
    {
        if out.iter().any(|m| m.address == n.address) {
            continue;
        }
        out.push(EtcdMember {
            address: n.address.clone(),
            internal_address: if n.internal_address.is_empty() {
                n.address.clone()
            } else {
                n.internal_address.clone()
            },
            hostname: if n.hostname_override.is_empty() {
                n.address.to_lowercase()
            } else {
                n.hostname_override.clone()
            },
        });
    }
    out
}

/// `--initial-cluster` of a restore: every etcd member with its peer URL.
pub fn initial_cluster(members: &[EtcdMember]) -> String {
    members
        .iter()
        .map(|m| {
            format!(
                "{}=https://{}:2380",
                m.member_name(),
                crate::config::url_host(&m.internal_address)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// RKE1's default snapshot name: `rke_etcd_snapshot_<RFC 3339 time>`.
pub fn default_snapshot_name(now: time::OffsetDateTime) -> String {
    let stamp = now
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!("rke_etcd_snapshot_{stamp}")
}

/// A snapshot name that would leave the snapshot directory, or that a host's shell, the
/// helper container's arguments or a file listing would read as more than one name.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid snapshot name {0:?}: a file name is needed, without '/', spaces, control \
     characters or any of {SPECIAL}"
)]
pub struct InvalidSnapshotName(pub String);

/// The characters a snapshot name may not hold besides '/', whitespace and control
/// characters: a shell's special characters.
const SPECIAL: &str = ";&|$`'\"\\<>(){}[]*?!#~";

/// A snapshot name as given on the command line or to the server: a `.zip` extension is
/// dropped (RKE1 only warned, then looked for `<name>.zip.zip`); names that would leave the
/// snapshot directory, or hold whitespace, control characters or a shell's special
/// characters, are refused. Returns the name and an optional warning.
pub fn check_snapshot_name(name: &str) -> Result<(String, Option<String>), InvalidSnapshotName> {
    let (base, warning) = match name.strip_suffix(".zip") {
        Some(b) => (
            b.to_string(),
            Some(format!(
                "snapshot names are given without the .zip extension: using [{b}]"
            )),
        ),
        None => (name.to_string(), None),
    };
    let bad_char = |c: char| c == '/' || c.is_whitespace() || c.is_control() || SPECIAL.contains(c);
    if base.is_empty() || base.contains(bad_char) || base == "." || base == ".." {
        return Err(InvalidSnapshotName(name.to_string()));
    }
    Ok((base, warning))
}

/// The S3 target of a command: the command line's, else the config's `backup_config`.
pub fn effective_s3<'a>(
    etcd: &'a EtcdService,
    from_cli: Option<&'a S3BackupConfig>,
) -> Option<&'a S3BackupConfig> {
    from_cli.or_else(|| {
        etcd.backup_config
            .as_ref()
            .filter(|b| b.enabled != Some(false))
            .and_then(|b| b.s3_backup_config.as_ref())
    })
}

/// `s3://bucket/folder/name.zip at endpoint`.
pub fn s3_location(s3: &S3BackupConfig, name: &str) -> String {
    let folder = if s3.folder.is_empty() {
        String::new()
    } else {
        format!("{}/", s3.folder.trim_end_matches('/'))
    };
    format!(
        "s3://{}/{folder}{name}.zip at {}",
        s3.bucket_name, s3.endpoint
    )
}

/// The one-shot helpers' timeout: `backup_config.timeout`, else RKE1's default.
pub fn helper_timeout_secs(etcd: &EtcdService) -> u64 {
    etcd.backup_config
        .as_ref()
        .filter(|b| b.timeout > 0)
        .map_or(DEFAULT_TIMEOUT_SECS, |b| b.timeout as u64)
}

/// What both commands are asked for: the snapshot, the helper image, the etcd service's
/// settings and the S3 target (when there is one).
#[derive(Clone, Copy)]
pub struct SnapshotRequest<'a> {
    pub name: &'a str,
    pub image: &'a str,
    pub etcd: &'a EtcdService,
    pub s3: Option<&'a S3BackupConfig>,
}

/// The one stage of a save; `Display` is its phase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveStage {
    /// Every member whose etcd runs, one after the other, each to its end.
    Snapshot,
}

impl fmt::Display for SaveStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("etcd snapshot")
    }
}

/// What was found of one member before a save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberFound {
    /// The host could not be reached; why.
    Unreachable(String),
    /// Its etcd container is missing or stopped.
    EtcdStopped,
    /// Its etcd runs: the host's prefix path and whether it has the helper image.
    Running { prefix: String, has_image: bool },
}

/// What saving snapshot `name` takes on one member whose etcd runs (§26.1 step 3): the state
/// file `state` put beside the snapshot (when there is one), the helper image when the host
/// lacks it, and the one-shot helper that takes, zips and (with S3) uploads the snapshot.
pub fn member_snapshot(
    request: &SnapshotRequest<'_>,
    member: &EtcdMember,
    prefix: &str,
    has_image: bool,
    state: Option<&[u8]>,
) -> Vec<Action> {
    let SnapshotRequest {
        name,
        image,
        etcd,
        s3,
    } = *request;
    let zip = format!("{SNAPSHOT_DIR}/{name}.zip");
    let purpose = match s3 {
        Some(s3) => format!(
            "save snapshot {name} as {zip} and upload it to {}",
            s3_location(s3, name)
        ),
        None => format!("save snapshot {name} as {zip}"),
    };
    let mut steps = Vec::new();
    if let Some(state) = state {
        steps.push(Action::WriteFileSet {
            dir: plan::join_path(&[prefix, "/etc/kubernetes"]),
            files: vec![FileWrite {
                path: format!("{name}.rkestate"),
                mode: 0o600,
                reason: "the cluster state, zipped with the snapshot".into(),
                contents: state.to_vec(),
            }],
        });
    }
    if !has_image {
        steps.push(Action::PullImage {
            image: image.to_string(),
        });
    }
    steps.push(Action::RunOneShot {
        container: SNAPSHOT_ONCE.into(),
        image: image.to_string(),
        purpose,
        spec: Box::new(snapshot_once_spec(image, name, member, prefix, etcd, s3)),
    });
    steps
}

/// `rkers etcd snapshot-save` (§26.1): every member whose etcd runs saves the snapshot, one
/// after the other. The stage is declared even when no member can: the command then fails.
pub fn save_snapshot(
    request: &SnapshotRequest<'_>,
    found: &[(EtcdMember, MemberFound)],
    state: Option<&[u8]>,
) -> Changeset<SaveStage> {
    let mut changes = Changeset::default();
    changes.stage(SaveStage::Snapshot, Pace::OneAtATime);
    for (member, found) in found {
        if let MemberFound::Running { prefix, has_image } = found {
            for action in member_snapshot(request, member, prefix, *has_image, state) {
                changes.push(
                    SaveStage::Snapshot,
                    Pace::OneAtATime,
                    &member.address,
                    action,
                );
            }
        }
    }
    changes
}

/// The members a save leaves out, with why: those not reached first, then those whose etcd
/// is not running, each in config order.
pub fn left_out(found: &[(EtcdMember, MemberFound)]) -> Vec<(String, String)> {
    let unreachable = found.iter().filter_map(|(m, f)| match f {
        MemberFound::Unreachable(cause) => Some((m.address.clone(), cause.clone())),
        _ => None,
    });
    let stopped = found.iter().filter_map(|(m, f)| match f {
        MemberFound::EtcdStopped => Some((
            m.address.clone(),
            format!("etcd is not running on host [{}]", m.address),
        )),
        _ => None,
    });
    unreachable.chain(stopped).collect()
}

/// The stages of a restore, in the order they run; `Display` is the phase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreStage {
    /// The snapshot copied from the first member that has it to the others (without S3).
    Share,
    /// Fetched (with S3) and restored into the scratch directory on every member, while the
    /// cluster runs; the snapshot's checksums must agree.
    Prepare,
    /// etcd and the control plane removed everywhere, the restored data moved in.
    Replace,
    /// `up`, on the restored data.
    Up,
}

impl fmt::Display for RestoreStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RestoreStage::Share => "etcd restore: share snapshot",
            RestoreStage::Prepare => "etcd restore: prepare",
            RestoreStage::Replace => "etcd restore: replace data",
            RestoreStage::Up => "etcd restore: up",
        })
    }
}

/// What was found of one member before a restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreMember {
    pub member: EtcdMember,
    pub prefix: String,
    /// Whether it has the helper image.
    pub has_image: bool,
    /// Whether it has the image that copies files between hosts (asked only when the
    /// snapshot is shared).
    pub has_file_image: bool,
}

/// What a restore decides from: every member, the first member's copy of the snapshot (when
/// one is shared), and the replaced containers each connected host has, in the pool's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreFound {
    pub members: Vec<RestoreMember>,
    /// The first member with the snapshot, and its path there.
    pub local_copy: Option<(String, String)>,
    pub replaced: Vec<(String, Vec<String>)>,
}

/// Whether a restore shares a local snapshot between the members (no S3, several members).
pub fn shares_local_copy(s3: Option<&S3BackupConfig>, members: usize) -> bool {
    s3.is_none() && members > 1
}

/// Where a member may hold snapshot `name`, in the order they are looked for.
pub fn snapshot_paths(name: &str) -> [String; 2] {
    [
        format!("{SNAPSHOT_DIR}/{name}.zip"),
        format!("{SNAPSHOT_DIR}/{name}"),
    ]
}

/// No member has the snapshot to share.
#[derive(Debug, thiserror::Error)]
#[error(
    "snapshot {0} is on no etcd host (looked for {SNAPSHOT_DIR}/{0}.zip and {SNAPSHOT_DIR}/{0})"
)]
pub struct SnapshotNotFound(pub String);

/// `rkers etcd snapshot-restore` (§26.3, in the safer order of the module's doc).
pub fn restore_snapshot(
    request: &SnapshotRequest<'_>,
    file_image: &str,
    found: &RestoreFound,
) -> Result<Changeset<RestoreStage>, SnapshotNotFound> {
    let SnapshotRequest {
        name,
        image,
        etcd,
        s3,
    } = *request;
    let members: Vec<EtcdMember> = found.members.iter().map(|m| m.member.clone()).collect();
    let initial = initial_cluster(&members);
    let mut changes = Changeset::default();
    changes.stage(RestoreStage::Share, Pace::OneAtATime);
    changes.stage(RestoreStage::Prepare, Pace::OneAtATime);
    if shares_local_copy(s3, members.len()) {
        let (source, path) = found
            .local_copy
            .clone()
            .ok_or_else(|| SnapshotNotFound(name.to_string()))?;
        for target in found.members.iter().filter(|m| m.member.address != source) {
            let host = &target.member.address;
            if !target.has_file_image {
                changes.push(
                    RestoreStage::Share,
                    Pace::OneAtATime,
                    host,
                    pull(file_image),
                );
            }
            changes.push(
                RestoreStage::Share,
                Pace::OneAtATime,
                host,
                Action::CopySnapshotFrom {
                    from: source.clone(),
                    path: path.clone(),
                    image: file_image.to_string(),
                },
            );
        }
    }
    for m in &found.members {
        let host = &m.member.address;
        if !m.has_image {
            changes.push(RestoreStage::Prepare, Pace::OneAtATime, host, pull(image));
        }
        if let Some(s3) = s3 {
            changes.push(
                RestoreStage::Prepare,
                Pace::OneAtATime,
                host,
                Action::RunOneShot {
                    container: DOWNLOAD.into(),
                    image: image.to_string(),
                    purpose: format!(
                        "download snapshot {name} from {} into {SNAPSHOT_DIR}",
                        s3_location(s3, name)
                    ),
                    spec: Box::new(s3_download_spec(image, name, &m.prefix, etcd, s3)),
                },
            );
        }
        changes.push(RestoreStage::Prepare, Pace::OneAtATime, host, Action::RunOneShot {
            container: RESTORE.into(),
            image: image.to_string(),
            purpose: format!(
                "restore snapshot {name} into {RESTORE_DIR} while the cluster runs, and print its sha256"
            ),
            spec: Box::new(restore_prepare_spec(image, name, &m.member, &initial, etcd)),
        });
    }
    for (host, containers) in &found.replaced {
        for c in REPLACED
            .iter()
            .filter(|c| containers.iter().any(|p| p == *c))
        {
            changes.push(
                RestoreStage::Replace,
                Pace::Parallel,
                host,
                Action::RemoveContainer {
                    name: c.to_string(),
                    reason: "replaced on the restored data".into(),
                },
            );
        }
    }
    for m in &found.members {
        changes.push(
            RestoreStage::Replace,
            Pace::Parallel,
            &m.member.address,
            Action::RunOneShot {
                container: RESTORE_MOVE.into(),
                image: image.to_string(),
                purpose: format!(
                    "move the restored data into {}",
                    plan::join_path(&[&m.prefix, "/var/lib/etcd"])
                ),
                spec: Box::new(restore_move_spec(image, &m.prefix)),
            },
        );
    }
    changes.push(
        RestoreStage::Up,
        Pace::OneAtATime,
        CLUSTER,
        Action::RunUp {
            reason: "bring etcd and the control plane back on the restored data".into(),
        },
    );
    Ok(changes)
}

fn pull(image: &str) -> Action {
    Action::PullImage {
        image: image.to_string(),
    }
}

/// The member whose copy of the snapshot a restore shares, if it shares one.
pub fn shared_from(changes: &Changeset<RestoreStage>) -> Option<&str> {
    changes.stages.iter().flat_map(|s| &s.hosts).find_map(|h| {
        h.actions.iter().find_map(|a| match a {
            Action::CopySnapshotFrom { from, .. } => Some(from.as_str()),
            _ => None,
        })
    })
}

/// The checksum `etcd-restore` printed in its log.
pub fn restore_checksum(log: &str) -> Option<String> {
    log.lines()
        .find_map(|l| l.trim().strip_prefix("sha256 ").map(str::to_string))
}

/// The failure when the members restored different snapshots (sha256 per host).
pub fn checksums_disagree(per_host: &BTreeMap<String, String>) -> Option<(String, String)> {
    let distinct: BTreeSet<&String> = per_host.values().collect();
    (distinct.len() > 1).then(|| {
        (
            "all etcd hosts".to_string(),
            format!("the snapshot differs between hosts (sha256 per host: {per_host:?})"),
        )
    })
}
