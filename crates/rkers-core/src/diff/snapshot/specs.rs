//! The one-shot rke-tools helper containers of snapshot save and restore, as RKE1 runs them:
//! pure, decided from the config and the member alone.

use super::{EtcdMember, HELPER, RESTORE_DIR, SNAPSHOT_DIR};
use crate::config::{EtcdService, S3BackupConfig};
use crate::container::{ContainerSpec, RestartPolicy};
use crate::plan;

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
        restart_policy: Some(RestartPolicy::No),
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
        let (flags, s3_env) = plan::s3_backup_flags(s3);
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
    let (flags, s3_env) = plan::s3_backup_flags(s3);
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
        restart_policy: Some(RestartPolicy::No),
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
        restart_policy: Some(RestartPolicy::No),
        ..Default::default()
    }
}

/// Removes the restore scratch directory again after a failed restore.
pub fn restore_clean_spec(image: &str) -> ContainerSpec {
    ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![format!("rm -rf {RESTORE_DIR}")],
        binds: vec!["/opt/rke/:/opt/rke/".into()],
        network_mode: Some("none".into()),
        ..Default::default()
    }
}
