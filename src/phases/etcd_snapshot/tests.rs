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
