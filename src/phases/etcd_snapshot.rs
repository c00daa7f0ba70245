//! etcd snapshots (§26): `rkers etcd snapshot-save` and `snapshot-restore`.
//!
//! Both drive the rke-tools helper `rke-etcd-backup` in one-shot containers on the etcd hosts,
//! as RKE1 does, so the archives are RKE1's: `/opt/rke/etcd-snapshots/<name>.zip` holding
//! `/backup/<name>` (the etcd snapshot) and `/etc/kubernetes/<name>.rkestate` (the cluster state).
//! S3 transfers happen inside that helper too: the rolling-snapshot container must upload by
//! itself while rkers is not running, so the one S3 implementation lives there and the one-shot
//! commands reuse it. The S3 keys reach the helper only through its environment (base64, as
//! RKE1); they are registered with the output redactor and never appear in rkers' messages.
//!
//! Restore differs from RKE1 in its order, to keep a bad snapshot from costing the cluster: every
//! etcd host first fetches and unpacks the snapshot and runs `etcdctl snapshot restore` into the
//! scratch directory while the cluster keeps running; only when that worked everywhere (and the
//! snapshot is the same on every host) are etcd and the control plane removed, the restored data
//! moved into place and the cluster brought back by `up`'s own flow. RKE1 cleaned every node
//! (kubelets included) before finding out whether the snapshot restores; the worker plane is
//! kept here, its kubelets reconnect to the restored API.

use crate::cluster::{Cluster, ClusterError};
use crate::config::{EtcdService, RkeConfig, S3BackupConfig};
use crate::diff::Action;
use crate::hosts::{self, ContainerSpec, Host, HostPool, SshOptions};
use crate::output::{Redactor, Reporter};
use crate::phases::changeset::{self, Changeset, FileWrite, Pace};
use crate::phases::executor::Executor;
use crate::phases::up::{UpError, UpOptions};
use crate::plan;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where snapshots live on the hosts (not prefix-aware, as in RKE1), and the restore scratch.
pub const SNAPSHOT_DIR: &str = "/opt/rke/etcd-snapshots";
pub const RESTORE_DIR: &str = "/opt/rke/etcd-snapshots-restore";
const HELPER: &str = "/opt/rke-tools/rke-etcd-backup";
const SNAPSHOT_ONCE: &str = "etcd-snapshot-once";
const DOWNLOAD: &str = "etcd-download-backup";
const RESTORE: &str = "etcd-restore";
const RESTORE_MOVE: &str = "etcd-restore-move";
const RESTORE_CLEAN: &str = "etcd-restore-clean";
/// RKE1's `backup_config.timeout` default for one-shot helpers.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Containers removed before the restored data goes in; `up` recreates them.
const REPLACED: &[&str] = &[
    plan::ETCD_ROLLING_SNAPSHOTS,
    plan::KUBE_APISERVER,
    plan::KUBE_CONTROLLER_MANAGER,
    plan::KUBE_SCHEDULER,
    plan::ETCD,
];

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Invalid(String),
    /// Hosts that cannot be reached stop a restore before anything changes.
    #[error("{}", .0.to_string().trim_end())]
    Unreachable(#[from] crate::hosts::HostProblems),
    #[error("{0}")]
    Host(#[source] Box<crate::hosts::HostError>),
    #[error("[etcd] snapshot {name} was not saved on any etcd host:\n{}", listed(.failures))]
    NotSaved {
        name: String,
        failures: Vec<(String, String)>,
    },
    /// The restore could not be planned; `detail` names the host.
    #[error("[etcd] cannot restore snapshot {name}; the cluster was left as it was: {detail}")]
    RestorePlan { name: String, detail: String },
    #[error(
        "[etcd] cannot restore snapshot {name}; the cluster was left as it was:\n{}",
        changeset::list_failures(.failures)
    )]
    RestoreAborted {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] restoring snapshot {name} failed after etcd was stopped:\n{}\nrun `rkers etcd snapshot-restore` again or `rkers up`",
        changeset::list_failures(.failures)
    )]
    RestoreFailed {
        name: String,
        failures: Vec<(String, String)>,
    },
    #[error(
        "[etcd] snapshot {name} was restored into etcd, but bringing the cluster back failed: {cause}\nrun `rkers up` to finish"
    )]
    Up {
        name: String,
        #[source]
        cause: UpError,
    },
}

impl From<crate::hosts::HostError> for SnapshotError {
    fn from(e: crate::hosts::HostError) -> Self {
        SnapshotError::Host(Box::new(e))
    }
}

impl crate::error::HostContext for SnapshotError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            SnapshotError::Host(e) => vec![e.host()],
            SnapshotError::NotSaved { failures, .. }
            | SnapshotError::RestoreAborted { failures, .. }
            | SnapshotError::RestoreFailed { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            SnapshotError::Unreachable(e) => crate::error::HostContext::hosts(e),
            SnapshotError::Up { cause, .. } => crate::error::HostContext::hosts(cause),
            SnapshotError::Cluster(_)
            | SnapshotError::Invalid(_)
            | SnapshotError::RestorePlan { .. } => Vec::new(),
        }
    }
}

/// One line per host that failed.
fn listed(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(h, e)| format!("  - host {h}: {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

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

/// A snapshot name as given on the command line: a `.zip` extension is dropped (RKE1 only
/// warned, then looked for `<name>.zip.zip`); names that would leave the snapshot directory
/// are refused. Returns the name and an optional warning.
pub fn check_snapshot_name(name: &str) -> Result<(String, Option<String>), SnapshotError> {
    let (base, warning) = match name.strip_suffix(".zip") {
        Some(b) => (
            b.to_string(),
            Some(format!(
                "snapshot names are given without the .zip extension: using [{b}]"
            )),
        ),
        None => (name.to_string(), None),
    };
    if base.is_empty() || base.contains('/') || base == "." || base == ".." {
        return Err(SnapshotError::Invalid(format!(
            "invalid snapshot name {name:?}: a file name without '/' is needed"
        )));
    }
    Ok((base, warning))
}

/// Masks the S3 secret (and its base64 form, which the helper's environment carries) in every
/// message rkers prints from now on.
pub fn register_s3_secrets(s3: &S3BackupConfig, redactor: &Redactor) {
    for secret in [&s3.secret_key, &STANDARD.encode(&s3.secret_key)] {
        redactor.register(secret);
    }
}

/// The helper's S3 flags and environment (RKE1's `configS3BackupImgCmd` minus the interval).
pub fn s3_flags(s3: &S3BackupConfig) -> (Vec<String>, Vec<String>) {
    plan::s3_backup_flags(s3)
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

fn ssl(name: &str) -> String {
    format!("/etc/kubernetes/ssl/{name}")
}

fn kubernetes_bind(prefix: &str) -> String {
    format!(
        "{}:/etc/kubernetes",
        plan::join_path(&[prefix, "/etc/kubernetes"])
    )
}

/// A one-shot rke-tools helper as RKE1 runs them: host network, the snapshot directory as
/// `/backup` and the host's `/etc/kubernetes`.
fn backup_helper(image: &str, cmd: Vec<String>, env: Vec<String>, prefix: &str) -> ContainerSpec {
    ContainerSpec {
        image: image.to_string(),
        cmd,
        env,
        binds: vec![format!("{SNAPSHOT_DIR}/:/backup"), kubernetes_bind(prefix)],
        network_mode: Some("host".into()),
        restart_policy: Some(hosts::RestartPolicy::No),
        ..Default::default()
    }
}

/// `etcd-snapshot-once` (§26.1 step 3): one snapshot of the local member, zipped with the state
/// file deployed beside it, uploaded when S3 is configured.
pub fn snapshot_once_spec(
    image: &str,
    name: &str,
    member: &EtcdMember,
    prefix: &str,
    etcd: &EtcdService,
    s3: Option<&S3BackupConfig>,
) -> ContainerSpec {
    let mut cmd = vec![
        HELPER.to_string(),
        "etcd-backup".into(),
        "save".into(),
        "--cacert".into(),
        ssl("kube-ca.pem"),
        "--cert".into(),
        ssl("kube-node.pem"),
        "--key".into(),
        ssl("kube-node-key.pem"),
        "--name".into(),
        name.to_string(),
        format!(
            "--endpoints={}:2379",
            crate::config::url_host(&member.internal_address)
        ),
        "--once".into(),
    ];
    let mut env = etcd.extra_env.clone();
    if let Some(b) = etcd
        .backup_config
        .as_ref()
        .filter(|b| b.enabled != Some(false))
    {
        cmd.push(format!("--creation={}h", b.interval_hours));
        cmd.push(format!("--retention={}h", b.retention * b.interval_hours));
    }
    if let Some(s3) = s3 {
        let (flags, s3_env) = s3_flags(s3);
        cmd.extend(flags);
        env.extend(s3_env);
    }
    backup_helper(image, cmd, env, prefix)
}

/// `etcd-download-backup` from S3 (§26.3 step 6): fetches `<folder>/<name>[.zip]` into the
/// snapshot directory and unpacks it.
pub fn s3_download_spec(
    image: &str,
    name: &str,
    prefix: &str,
    etcd: &EtcdService,
    s3: &S3BackupConfig,
) -> ContainerSpec {
    let (flags, s3_env) = s3_flags(s3);
    let mut cmd = vec![
        HELPER.to_string(),
        "etcd-backup".into(),
        "download".into(),
        "--name".into(),
        name.to_string(),
    ];
    cmd.extend(flags);
    let mut env = etcd.extra_env.clone();
    env.extend(s3_env);
    backup_helper(image, cmd, env, prefix)
}

/// `etcd-restore`, first half: unpacks the snapshot, prints its SHA-256 (compared across hosts
/// like RKE1's md5 checksum checker) and restores it into the scratch directory. Nothing the
/// running cluster uses is touched; a failure removes the scratch directory again.
pub fn restore_prepare_spec(
    image: &str,
    name: &str,
    member: &EtcdMember,
    initial_cluster: &str,
    etcd: &EtcdService,
) -> ContainerSpec {
    let q = |s: &str| shell_words::quote(s).into_owned();
    let snapshot = format!("/backup/{name}");
    let script = format!(
        "set -e\n\
         rm -rf {scratch}\n\
         {HELPER} etcd-backup extract --name {qname}\n\
         echo \"sha256 $(sha256sum {snap} | cut -d' ' -f1)\"\n\
         if ! etcdctl snapshot restore {snap} --data-dir={scratch}/ --name={member} \
         --initial-cluster={cluster} --initial-cluster-token=etcd-cluster-1 \
         --initial-advertise-peer-urls={peer_url}; then\n\
           rm -rf {scratch}\n  exit 1\nfi\n\
         [ -f {snap}.zip ] && rm -f {snap}\n\
         exit 0",
        scratch = RESTORE_DIR,
        qname = q(name),
        snap = q(&snapshot),
        member = q(&member.member_name()),
        cluster = q(initial_cluster),
        // Every value from cluster.yml is quoted: none may reach the shell as code.
        peer_url = q(&format!(
            "https://{}:2380",
            crate::config::url_host(&member.internal_address)
        )),
    );
    let mut env = vec!["ETCDCTL_API=3".to_string()];
    env.extend(etcd.extra_env.iter().cloned());
    ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![script],
        env,
        binds: vec![
            "/opt/rke/:/opt/rke/".into(),
            format!("{SNAPSHOT_DIR}/:/backup"),
        ],
        network_mode: Some("host".into()),
        restart_policy: Some(hosts::RestartPolicy::No),
        ..Default::default()
    }
}

/// `etcd-restore`, second half (etcd stopped): the restored member directory replaces the data
/// directory's.
pub fn restore_move_spec(image: &str, prefix: &str) -> ContainerSpec {
    let script = format!(
        "set -e\n\
         [ -d {RESTORE_DIR}/member ] || {{ echo 'no restored data in {RESTORE_DIR}'; exit 1; }}\n\
         rm -rf /var/lib/rancher/etcd/member\n\
         mv {RESTORE_DIR}/member /var/lib/rancher/etcd/member\n\
         rm -rf {RESTORE_DIR}"
    );
    ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![script],
        binds: vec![
            "/opt/rke/:/opt/rke/".into(),
            format!(
                "{}:/var/lib/rancher/etcd",
                plan::join_path(&[prefix, "/var/lib/etcd"])
            ),
        ],
        network_mode: Some("none".into()),
        restart_policy: Some(hosts::RestartPolicy::No),
        ..Default::default()
    }
}

fn restore_clean_spec(image: &str) -> ContainerSpec {
    ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![format!("rm -rf {RESTORE_DIR}")],
        binds: vec!["/opt/rke/:/opt/rke/".into()],
        network_mode: Some("none".into()),
        ..Default::default()
    }
}

/// The image RKE1 runs its backup helpers with: the alpine (rke-tools) image, with the default
/// Kubernetes version's tag when it is `rancher/rke-tools` (§14.2, §33.9).
pub fn backup_image(cluster: &Cluster) -> String {
    plan::default_rke_tools(
        &cluster.config.system_images.alpine,
        cluster.default_rke_tools_tag().as_deref(),
    )
}

fn timeout_of(etcd: &EtcdService) -> Duration {
    etcd.backup_config
        .as_ref()
        .filter(|b| b.timeout > 0)
        .map_or(DEFAULT_TIMEOUT, |b| Duration::from_secs(b.timeout as u64))
}

fn prefix_of(cluster: &Cluster, host: &Host) -> String {
    plan::host_prefix_path(&cluster.config.prefix_path, &host.facts().operating_system)
}

/// Runs a one-shot helper; a non-zero exit is an error carrying its last log lines.
async fn run_helper(
    host: &Host,
    container: &str,
    spec: &ContainerSpec,
    image_registries: &[hosts::target::RegistryCredential],
    timeout: Duration,
) -> Result<String, String> {
    host.docker()
        .ensure_image(&spec.image, image_registries, &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    host.docker()
        .run_to_success(container, spec, timeout)
        .await
        .map_err(|e| e.to_string())
}

pub struct SaveOptions {
    pub name: String,
    pub s3: Option<S3BackupConfig>,
    pub ssh: SshOptions,
    pub agent_override: bool,
    pub dry_run: bool,
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

/// The executor of a snapshot command's actions: uploads and copies with `cert_downloader`,
/// the one-shot containers with the etcd service's timeout.
fn executor<'a>(cluster: &Cluster, pool: &HostPool, reporter: &Reporter) -> Executor<'a> {
    Executor::new(
        reporter,
        &cluster.config.system_images.cert_downloader,
        cluster.registry_credentials(),
    )
    .with_hosts(pool.hosts())
    .with_one_shot_timeout(timeout_of(&cluster.config.services.etcd))
}

/// The checksum `etcd-restore` printed on `host`.
fn restore_digest(exec: &Executor<'_>, host: &str) -> Option<String> {
    exec.one_shot_log(host, RESTORE)?
        .lines()
        .find_map(|l| l.trim().strip_prefix("sha256 ").map(str::to_string))
}

/// Adds `PullImage` for `image` on `host` when the host does not have it.
async fn pull_if_missing(
    changes: &mut Changeset,
    stage: &str,
    host: &Host,
    image: &str,
) -> Result<(), crate::hosts::HostError> {
    if !host.docker().image_exists(image).await? {
        changes.push(
            stage,
            Pace::OneAtATime,
            host.name(),
            Action::PullImage {
                image: image.to_string(),
            },
        );
    }
    Ok(())
}

const SAVE_STAGE: &str = "etcd snapshot";

/// What saving snapshot `name` takes on one member whose etcd runs (§26.1 step 3): the state
/// file `state` put beside the snapshot (when there is one), the helper image when the host
/// lacks it, and the one-shot helper that takes, zips and (with S3) uploads the snapshot.
pub async fn member_snapshot_steps(
    cluster: &Cluster,
    host: &Host,
    member: &EtcdMember,
    name: &str,
    state: Option<&[u8]>,
    s3: Option<&S3BackupConfig>,
) -> Result<Vec<Action>, crate::hosts::HostError> {
    let image = backup_image(cluster);
    let etcd = &cluster.config.services.etcd;
    let zip = format!("{SNAPSHOT_DIR}/{name}.zip");
    let purpose = match s3 {
        Some(s3) => format!(
            "save snapshot {name} as {zip} and upload it to {}",
            s3_location(s3, name)
        ),
        None => format!("save snapshot {name} as {zip}"),
    };
    let prefix = prefix_of(cluster, host);
    let mut steps = Vec::new();
    if let Some(state) = state {
        steps.push(Action::WriteFileSet {
            dir: plan::join_path(&[&prefix, "/etc/kubernetes"]),
            files: vec![FileWrite {
                path: format!("{name}.rkestate"),
                mode: 0o600,
                reason: "the cluster state, zipped with the snapshot".into(),
                contents: state.to_vec(),
            }],
        });
    }
    if !host.docker().image_exists(&image).await? {
        steps.push(Action::PullImage {
            image: image.clone(),
        });
    }
    steps.push(Action::RunOneShot {
        container: SNAPSHOT_ONCE.into(),
        image: image.clone(),
        purpose,
        spec: Box::new(snapshot_once_spec(&image, name, member, &prefix, etcd, s3)),
    });
    Ok(steps)
}

/// `rkers etcd snapshot-save` (§26.1): on every etcd host, one after the other, the local state
/// file is put beside the snapshot and `etcd-snapshot-once` takes, zips and (with S3) uploads it.
/// Hosts that cannot be reached, whose etcd is not running, or that fail are named; the command
/// fails only when no host saved the snapshot, as RKE1's did.
pub async fn save(
    cluster: &Cluster,
    opts: &SaveOptions,
    reporter: &Reporter,
) -> Result<(), SnapshotError> {
    let name = &opts.name;
    let members = etcd_members(&cluster.config);
    if members.is_empty() {
        return Err(SnapshotError::Invalid(
            "the config has no etcd host to take a snapshot on".into(),
        ));
    }
    let s3 = effective_s3(&cluster.config.services.etcd, opts.s3.as_ref());
    if let Some(s3) = s3 {
        register_s3_secrets(s3, &cluster.redactor);
    }
    let phase = reporter.phase("plan");
    let state = std::fs::read(&cluster.files.state_path).ok();
    if state.is_none() {
        reporter.warn(format!(
            "{} not found: the snapshot is saved without the cluster state file",
            cluster.files.state_path.display()
        ));
    }
    let targets: Vec<_> = cluster
        .ssh_targets(opts.agent_override)
        .into_iter()
        .filter(|t| members.iter().any(|m| m.address == t.address))
        .collect();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut reachable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &opts.ssh).await {
        match &attempt.error {
            Some(e) => failures.push((attempt.target.address.clone(), e.to_string())),
            None => reachable.push(attempt),
        }
    }
    let pool = HostPool::from_attempts(reachable, opts.ssh.concurrency).await?;
    let mut changes = Changeset::default();
    for member in &members {
        let Some(host) = pool.get(&member.address) else {
            continue;
        };
        let running = host
            .docker()
            .inspect_container(plan::ETCD)
            .await?
            .is_some_and(|c| c.running);
        if !running {
            failures.push((
                member.address.clone(),
                format!("etcd is not running on host [{}]", member.address),
            ));
            continue;
        }
        for action in
            member_snapshot_steps(cluster, host, member, name, state.as_deref(), s3).await?
        {
            changes.push(SAVE_STAGE, Pace::OneAtATime, &member.address, action);
        }
    }
    phase.done();
    if opts.dry_run {
        if !failures.is_empty() {
            reporter.warn(format!(
                "[etcd] snapshot {name} would be missing on {} of {} etcd hosts:\n{}",
                failures.len(),
                members.len(),
                listed(&failures)
            ));
        }
        reporter.planned(&changes.planned());
        pool.close().await;
        return Ok(());
    }

    let phase = reporter.phase(SAVE_STAGE);
    reporter.info(format!("Starting saving snapshot [{name}] on etcd hosts"));
    let exec = executor(cluster, &pool, reporter);
    let mut saved = 0;
    // One host after the other, each to its end whatever the others did.
    for h in changes.stages.iter().flat_map(|s| &s.hosts) {
        let step = reporter.host_action(SAVE_STAGE, &h.host, "save snapshot");
        let actions: Vec<&Action> = h.actions.iter().collect();
        let result = exec
            .on(&h.host)
            .apply(&actions)
            .await
            .map_err(|e| e.to_string());
        match result {
            Ok(()) => {
                saved += 1;
                step.ok();
            }
            Err(e) => {
                step.fail(&e);
                failures.push((h.host.clone(), e));
            }
        }
    }
    pool.close().await;
    if saved == 0 {
        let e = SnapshotError::NotSaved {
            name: name.to_string(),
            failures,
        };
        phase.fail(&e.to_string());
        return Err(e);
    }
    if !failures.is_empty() {
        reporter.warn(format!(
            "[etcd] snapshot {name} is missing on {} of {} etcd hosts:\n{}",
            failures.len(),
            members.len(),
            listed(&failures)
        ));
    }
    phase.done();
    let verb = if s3.is_some() {
        "saving/uploading"
    } else {
        "saving"
    };
    reporter.info(format!(
        "Finished {verb} snapshot [{name}] on {saved} of {} etcd hosts",
        members.len()
    ));
    Ok(())
}

pub struct RestoreOptions {
    pub name: String,
    pub s3: Option<S3BackupConfig>,
    pub up: UpOptions,
    pub dry_run: bool,
}

const SHARE_STAGE: &str = "etcd restore: share snapshot";
const PREPARE_STAGE: &str = "etcd restore: prepare";
const REPLACE_STAGE: &str = "etcd restore: replace data";
const UP_STAGE: &str = "etcd restore: up";

/// `rkers etcd snapshot-restore --name N` (§26.3, in the safer order of this module's doc).
/// The local state file provides the certificates: the state stored in the archive is not read.
pub async fn restore(
    cluster: &Cluster,
    opts: &RestoreOptions,
    reporter: &Reporter,
) -> Result<(), SnapshotError> {
    let name = &opts.name;
    let members = etcd_members(&cluster.config);
    if members.is_empty() {
        return Err(SnapshotError::Invalid(
            "the config has no etcd host to restore a snapshot on".into(),
        ));
    }
    if cluster.load_state()?.is_none() {
        return Err(SnapshotError::Invalid(format!(
            "{} not found: restoring needs the cluster's state file (its certificates)",
            cluster.files.state_path.display()
        )));
    }
    let s3 = effective_s3(&cluster.config.services.etcd, opts.s3.as_ref());
    if let Some(s3) = s3 {
        register_s3_secrets(s3, &cluster.redactor);
    }
    let image = backup_image(cluster);
    reporter.info(format!("Restoring etcd snapshot {name}"));

    let phase = reporter.phase("plan");
    let targets = cluster.ssh_targets(opts.up.agent_override);
    let pool = match HostPool::connect(&targets, &opts.up.ssh).await {
        Ok(p) => p,
        Err(problems) => {
            phase.fail(&problems.summary());
            return Err(problems.into());
        }
    };
    let planned = plan_restore(cluster, &pool, &members, name, s3, &image).await;
    let changes = match planned {
        Ok(c) => c,
        Err(detail) => {
            pool.close().await;
            let e = SnapshotError::RestorePlan {
                name: name.clone(),
                detail,
            };
            phase.fail(&e.to_string());
            return Err(e);
        }
    };
    phase.done();
    let source = changes.stages.iter().flat_map(|s| &s.hosts).find_map(|h| {
        h.actions.iter().find_map(|a| match a {
            Action::CopySnapshotFrom { from, .. } => Some(from.clone()),
            _ => None,
        })
    });
    if let Some(source) = source {
        reporter.info(format!(
            "using the snapshot [{name}] of host {source} on every etcd host"
        ));
    }
    if opts.dry_run {
        reporter.planned(&changes.planned());
        pool.close().await;
        return Ok(());
    }

    let runner = crate::phases::Runner::new(reporter.clone(), opts.up.ssh.concurrency);
    let up_opts = &opts.up;
    // `up`'s error as it is, for the command's own; the executor reports its text.
    let up_failure: std::sync::Mutex<Option<UpError>> = Default::default();
    let up_failed = &up_failure;
    let exec = executor(cluster, &pool, reporter).with_up(Box::new(move || {
        Box::pin(async move {
            crate::phases::up::up(cluster, up_opts, reporter)
                .await
                .map_err(|e| {
                    let text = e.to_string();
                    *up_failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    text
                })
        })
    }));
    for stage in &changes.stages {
        if stage.phase == UP_STAGE {
            // `up` connects to the hosts itself.
            pool.close().await;
        }
        let mut failures = exec.apply_stage(stage, &runner).await;
        if stage.phase == UP_STAGE {
            if !failures.is_empty() {
                let taken = up_failure.lock().unwrap_or_else(|p| p.into_inner()).take();
                return Err(match taken {
                    Some(cause) => SnapshotError::Up {
                        name: name.clone(),
                        cause,
                    },
                    // The executor found no `up` to run: etcd was stopped already.
                    None => SnapshotError::RestoreFailed {
                        name: name.clone(),
                        failures,
                    },
                });
            }
            continue;
        }
        if stage.phase == PREPARE_STAGE && failures.is_empty() {
            let digests: BTreeMap<String, String> = stage
                .hosts
                .iter()
                .map(|h| {
                    let digest = restore_digest(&exec, &h.host)
                        .unwrap_or_else(|| format!("none ({RESTORE} printed no checksum)"));
                    (h.host.clone(), digest)
                })
                .collect();
            let distinct: std::collections::BTreeSet<&String> = digests.values().collect();
            if distinct.len() > 1 {
                failures.push((
                    "all etcd hosts".into(),
                    format!("the snapshot differs between hosts (sha256 per host: {digests:?})"),
                ));
            }
        }
        if failures.is_empty() {
            continue;
        }
        if stage.phase == REPLACE_STAGE {
            pool.close().await;
            return Err(SnapshotError::RestoreFailed {
                name: name.clone(),
                failures,
            });
        }
        // Nothing the cluster runs on was touched yet: the scratch directories go again (a
        // rollback outside the changeset, only on failure).
        for member in &members {
            if let Some(host) = pool.get(&member.address) {
                let _ = run_helper(
                    host,
                    RESTORE_CLEAN,
                    &restore_clean_spec(&image),
                    &cluster.registry_credentials(),
                    DEFAULT_TIMEOUT,
                )
                .await;
            }
        }
        pool.close().await;
        return Err(SnapshotError::RestoreAborted {
            name: name.clone(),
            failures,
        });
    }
    reporter.info(format!(
        "Finished restoring snapshot [{name}] on all etcd hosts"
    ));
    Ok(())
}

/// The changeset of a restore: the snapshot shared from the first etcd host that has it
/// (without S3), fetched (with S3) and restored into the scratch directory on every etcd host;
/// then etcd and the control plane removed everywhere, the restored data moved in, and `up`.
async fn plan_restore(
    cluster: &Cluster,
    pool: &HostPool,
    members: &[EtcdMember],
    name: &str,
    s3: Option<&S3BackupConfig>,
    image: &str,
) -> Result<Changeset, String> {
    let etcd = &cluster.config.services.etcd;
    let initial = initial_cluster(members);
    let file_image = &cluster.config.system_images.cert_downloader;
    let mut changes = Changeset::default();
    changes.stage(SHARE_STAGE, Pace::OneAtATime);
    changes.stage(PREPARE_STAGE, Pace::OneAtATime);
    let hosts: Vec<&Arc<Host>> = members
        .iter()
        .map(|m| {
            pool.get(&m.address)
                .ok_or_else(|| format!("host {} is not connected", m.address))
        })
        .collect::<Result<_, _>>()?;
    if s3.is_none() && members.len() > 1 {
        let (source, path) = find_local_snapshot(&hosts, name).await?;
        for target in hosts.iter().filter(|h| h.name() != source) {
            pull_if_missing(&mut changes, SHARE_STAGE, target, file_image)
                .await
                .map_err(|e| e.to_string())?;
            changes.push(
                SHARE_STAGE,
                Pace::OneAtATime,
                target.name(),
                Action::CopySnapshotFrom {
                    from: source.clone(),
                    path: path.clone(),
                    image: file_image.clone(),
                },
            );
        }
    }
    for (member, host) in members.iter().zip(&hosts) {
        pull_if_missing(&mut changes, PREPARE_STAGE, host, image)
            .await
            .map_err(|e| e.to_string())?;
        let prefix = prefix_of(cluster, host);
        if let Some(s3) = s3 {
            changes.push(
                PREPARE_STAGE,
                Pace::OneAtATime,
                &member.address,
                Action::RunOneShot {
                    container: DOWNLOAD.into(),
                    image: image.to_string(),
                    purpose: format!(
                        "download snapshot {name} from {} into {SNAPSHOT_DIR}",
                        s3_location(s3, name)
                    ),
                    spec: Box::new(s3_download_spec(image, name, &prefix, etcd, s3)),
                },
            );
        }
        changes.push(PREPARE_STAGE, Pace::OneAtATime, &member.address, Action::RunOneShot {
            container: RESTORE.into(),
            image: image.to_string(),
            purpose: format!(
                "restore snapshot {name} into {RESTORE_DIR} while the cluster runs, and print its sha256"
            ),
            spec: Box::new(restore_prepare_spec(image, name, member, &initial, etcd)),
        });
    }
    for host in pool.hosts() {
        for c in REPLACED {
            if host
                .docker()
                .inspect_container(c)
                .await
                .map_err(|e| e.to_string())?
                .is_some()
            {
                changes.push(
                    REPLACE_STAGE,
                    Pace::Parallel,
                    host.name(),
                    Action::RemoveContainer {
                        name: c.to_string(),
                        reason: "replaced on the restored data".into(),
                    },
                );
            }
        }
    }
    for host in &hosts {
        let prefix = prefix_of(cluster, host);
        changes.push(
            REPLACE_STAGE,
            Pace::Parallel,
            host.name(),
            Action::RunOneShot {
                container: RESTORE_MOVE.into(),
                image: image.to_string(),
                purpose: format!(
                    "move the restored data into {}",
                    plan::join_path(&[&prefix, "/var/lib/etcd"])
                ),
                spec: Box::new(restore_move_spec(image, &prefix)),
            },
        );
    }
    changes.push(
        UP_STAGE,
        Pace::OneAtATime,
        changeset::CLUSTER,
        Action::RunUp {
            reason: "bring etcd and the control plane back on the restored data".into(),
        },
    );
    Ok(changes)
}

/// The first etcd host with the snapshot (`<name>.zip`, else `<name>`), asked over SSH.
async fn find_local_snapshot(hosts: &[&Arc<Host>], name: &str) -> Result<(String, String), String> {
    for host in hosts {
        for candidate in [format!("{name}.zip"), name.to_string()] {
            let path = format!("{SNAPSHOT_DIR}/{candidate}");
            let out = host
                .link()
                .exec(&format!(
                    "test -f {} && echo yes; true",
                    shell_words::quote(&path)
                ))
                .await
                .map_err(|e| format!("host {}: {e}", host.name()))?;
            if out.stdout_str().trim() == "yes" {
                return Ok((host.name().to_string(), path));
            }
        }
    }
    Err(format!(
        "snapshot {name} is on no etcd host (looked for {SNAPSHOT_DIR}/{name}.zip and {SNAPSHOT_DIR}/{name})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BackupConfig;

    fn member(n: u8) -> EtcdMember {
        EtcdMember {
            address: format!("10.0.0.{n}"),
            internal_address: format!("192.168.0.{n}"),
            hostname: format!("node{n}"),
        }
    }

    fn s3() -> S3BackupConfig {
        S3BackupConfig {
            access_key: "AK".into(),
            secret_key: "very-secret-key".into(),
            bucket_name: "snaps".into(),
            region: "eu-1".into(),
            endpoint: "10.0.0.1:9443".into(),
            custom_ca: "PEM".into(),
            folder: "dir".into(),
        }
    }

    #[test]
    fn default_names_are_rke1s() {
        let t = time::macros::datetime!(2021-01-08 21:16:56.123 UTC);
        assert_eq!(
            default_snapshot_name(t),
            "rke_etcd_snapshot_2021-01-08T21:16:56Z"
        );
    }

    #[test]
    fn names_drop_zip_and_refuse_paths() {
        assert_eq!(check_snapshot_name("snap").unwrap(), ("snap".into(), None));
        let (n, w) = check_snapshot_name("snap.zip").unwrap();
        assert_eq!(n, "snap");
        assert!(w.unwrap().contains("without the .zip"));
        for bad in ["", "../x", "a/b", ".."] {
            assert!(check_snapshot_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn initial_cluster_lists_every_member_by_internal_address() {
        assert_eq!(
            initial_cluster(&[member(1), member(2)]),
            "etcd-node1=https://192.168.0.1:2380,etcd-node2=https://192.168.0.2:2380"
        );
    }

    #[test]
    fn snapshot_once_is_rke1s_command_line() {
        let mut etcd = EtcdService {
            extra_env: vec!["A=1".into()],
            ..Default::default()
        };
        let spec = snapshot_once_spec("tools:1", "snap", &member(1), "/", &etcd, None);
        assert_eq!(
            spec.cmd,
            [
                "/opt/rke-tools/rke-etcd-backup",
                "etcd-backup",
                "save",
                "--cacert",
                "/etc/kubernetes/ssl/kube-ca.pem",
                "--cert",
                "/etc/kubernetes/ssl/kube-node.pem",
                "--key",
                "/etc/kubernetes/ssl/kube-node-key.pem",
                "--name",
                "snap",
                "--endpoints=192.168.0.1:2379",
                "--once"
            ]
        );
        assert_eq!(spec.env, ["A=1"]);
        assert_eq!(
            spec.binds,
            [
                "/opt/rke/etcd-snapshots/:/backup",
                "/etc/kubernetes:/etc/kubernetes"
            ]
        );
        assert_eq!(spec.network_mode.as_deref(), Some("host"));

        etcd.backup_config = Some(BackupConfig {
            interval_hours: 6,
            retention: 4,
            ..Default::default()
        });
        let s3 = s3();
        let spec = snapshot_once_spec("tools:1", "snap", &member(1), "/opt/x", &etcd, Some(&s3));
        let tail: Vec<&str> = spec.cmd[13..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--creation=6h",
                "--retention=24h",
                "--s3-backup=true",
                "--s3-endpoint=10.0.0.1:9443",
                "--s3-bucketName=snaps",
                "--s3-region=eu-1",
                "--s3-endpoint-ca=UEVN",
                "--s3-folder=dir",
            ]
        );
        assert!(spec.env.contains(&"S3_ACCESS_KEY=QUs=".to_string()));
        assert!(spec.env.contains(&format!(
            "S3_SECRET_KEY={}",
            STANDARD.encode("very-secret-key")
        )));
        assert!(
            !spec.cmd.iter().any(|a| a.contains("very-secret-key")),
            "the secret goes through the environment only"
        );
        assert_eq!(spec.binds[1], "/opt/x/etc/kubernetes:/etc/kubernetes");
    }

    #[test]
    fn download_and_restore_command_lines() {
        let etcd = EtcdService::default();
        let spec = s3_download_spec("tools:1", "snap", "/", &etcd, &s3());
        assert_eq!(
            spec.cmd[..5],
            [
                "/opt/rke-tools/rke-etcd-backup",
                "etcd-backup",
                "download",
                "--name",
                "snap"
            ]
        );
        assert!(spec.cmd.contains(&"--s3-backup=true".to_string()));

        let spec = restore_prepare_spec(
            "tools:1",
            "snap x",
            &member(2),
            &initial_cluster(&[member(1), member(2)]),
            &etcd,
        );
        let script = &spec.cmd[0];
        assert!(
            script.contains("etcd-backup extract --name 'snap x'"),
            "{script}"
        );
        assert!(
            script.contains(
                "etcdctl snapshot restore '/backup/snap x' --data-dir=/opt/rke/etcd-snapshots-restore/ --name=etcd-node2 --initial-cluster='etcd-node1=https://192.168.0.1:2380,etcd-node2=https://192.168.0.2:2380' --initial-cluster-token=etcd-cluster-1 --initial-advertise-peer-urls=https://192.168.0.2:2380"
            ),
            "{script}"
        );
        assert!(spec.env.contains(&"ETCDCTL_API=3".to_string()));

        let spec = restore_move_spec("tools:1", "/opt/x");
        assert!(
            spec.binds
                .contains(&"/opt/x/var/lib/etcd:/var/lib/rancher/etcd".to_string())
        );
        assert!(
            spec.cmd[0]
                .contains("mv /opt/rke/etcd-snapshots-restore/member /var/lib/rancher/etcd/member")
        );
    }

    #[test]
    fn cli_s3_wins_over_the_config_and_needs_a_bucket() {
        let mut etcd = EtcdService::default();
        assert!(effective_s3(&etcd, None).is_none());
        etcd.backup_config = Some(BackupConfig {
            s3_backup_config: Some(s3()),
            ..Default::default()
        });
        assert_eq!(effective_s3(&etcd, None).unwrap().bucket_name, "snaps");
        let cli = S3BackupConfig {
            bucket_name: "other".into(),
            ..Default::default()
        };
        assert_eq!(
            effective_s3(&etcd, Some(&cli)).unwrap().bucket_name,
            "other"
        );
    }

    #[test]
    fn the_secret_is_masked_in_messages() {
        let s = s3();
        register_s3_secrets(&s, Redactor::global());
        let shown = crate::output::redact(&format!(
            "env S3_SECRET_KEY={} and {}",
            STANDARD.encode(&s.secret_key),
            s.secret_key
        ));
        assert!(!shown.contains("very-secret-key"), "{shown}");
        assert!(
            !shown.contains(&STANDARD.encode("very-secret-key")),
            "{shown}"
        );
    }
}
