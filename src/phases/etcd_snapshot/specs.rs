//! The one-shot helper containers of snapshot save and restore, and the names and S3 settings
//! they take: pure, decided from the config alone.

use super::*;

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

pub(super) fn restore_clean_spec(image: &str) -> ContainerSpec {
    ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![format!("rm -rf {RESTORE_DIR}")],
        binds: vec!["/opt/rke/:/opt/rke/".into()],
        network_mode: Some("none".into()),
        ..Default::default()
    }
}
