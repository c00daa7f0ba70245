use super::*;
use crate::changeset::Stage;
use crate::config::BackupConfig;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

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
    for bad in [
        "",
        "../x",
        "a/b",
        "..",
        "a\nb",
        "a\tb",
        "a b",
        "a;b",
        "a$(x)",
        "a`x`",
        "../../etc/x",
    ] {
        assert!(check_snapshot_name(bad).is_err(), "{bad}");
    }
    // RKE1's own names pass: its default holds ':' and '-'.
    for good in [
        "rke_etcd_snapshot_2021-01-08T21:16:56Z",
        "rkers-pre-20261127T163600Z",
        "a.b_c+d=e@f",
    ] {
        assert!(check_snapshot_name(good).is_ok(), "{good}");
    }
    // The error shows a control character escaped, never as a second line.
    let e = check_snapshot_name("a\nb").unwrap_err().to_string();
    assert!(!e.contains('\n') && e.contains("\"a\\nb\""), "{e}");
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

fn request<'a>(etcd: &'a EtcdService, s3: Option<&'a S3BackupConfig>) -> SnapshotRequest<'a> {
    SnapshotRequest {
        name: "snap",
        image: "tools:1",
        etcd,
        s3,
    }
}

/// One stage as (phase, [(host, [action kind])]).
type Outline<S> = (S, Vec<(String, Vec<String>)>);

/// Each stage as its [`Outline`].
fn outline<S: Copy>(changes: &Changeset<S>) -> Vec<Outline<S>> {
    changes
        .stages
        .iter()
        .map(|s: &Stage<S>| {
            let hosts = s
                .hosts
                .iter()
                .map(|h| {
                    let kinds = h
                        .actions
                        .iter()
                        .map(|a| match a {
                            Action::RunOneShot { container, .. } => container.clone(),
                            Action::RemoveContainer { name, .. } => format!("rm {name}"),
                            Action::PullImage { image } => format!("pull {image}"),
                            Action::CopySnapshotFrom { from, .. } => format!("copy from {from}"),
                            Action::WriteFileSet { files, .. } => {
                                format!("write {}", files[0].path)
                            }
                            Action::RunUp { .. } => "up".into(),
                            other => format!("{other:?}"),
                        })
                        .collect();
                    (h.host.clone(), kinds)
                })
                .collect();
            (s.phase, hosts)
        })
        .collect()
}

#[test]
fn a_save_runs_on_running_members_only_and_names_the_others_unreached_first() {
    let etcd = EtcdService::default();
    let running = |has_image| MemberFound::Running {
        prefix: "/".into(),
        has_image,
    };
    let found = [
        (member(1), MemberFound::EtcdStopped),
        (member(2), running(false)),
        (member(3), MemberFound::Unreachable("timed out".into())),
        (member(4), running(true)),
    ];
    let changes = save_snapshot(&request(&etcd, None), &found, Some(b"{}"));
    assert_eq!(
        outline(&changes),
        [(
            SaveStage::Snapshot,
            vec![
                (
                    "10.0.0.2".into(),
                    vec![
                        "write snap.rkestate".into(),
                        "pull tools:1".into(),
                        SNAPSHOT_ONCE.into()
                    ]
                ),
                (
                    "10.0.0.4".into(),
                    vec!["write snap.rkestate".into(), SNAPSHOT_ONCE.into()]
                ),
            ]
        )]
    );
    assert_eq!(
        left_out(&found),
        [
            ("10.0.0.3".to_string(), "timed out".to_string()),
            (
                "10.0.0.1".to_string(),
                "etcd is not running on host [10.0.0.1]".to_string()
            ),
        ]
    );
    // Without a state file nothing is written beside the snapshot; with no member left the
    // stage stays, empty, so the command can fail in it.
    let none = save_snapshot(&request(&etcd, None), &found[..1], None);
    assert_eq!(outline(&none), [(SaveStage::Snapshot, vec![])]);
    let s = s3();
    let with_s3 = save_snapshot(&request(&etcd, Some(&s)), &found[3..], None);
    let Action::RunOneShot { purpose, .. } = &with_s3.stages[0].hosts[0].actions[0] else {
        panic!("{with_s3:?}");
    };
    assert_eq!(
        purpose,
        "save snapshot snap as /opt/rke/etcd-snapshots/snap.zip and upload it to s3://snaps/dir/snap.zip at 10.0.0.1:9443"
    );
}

fn restore_member(n: u8, has_image: bool, has_file_image: bool) -> RestoreMember {
    RestoreMember {
        member: member(n),
        prefix: "/".into(),
        has_image,
        has_file_image,
    }
}

#[test]
fn a_restore_shares_the_first_copy_restores_everywhere_then_replaces_and_ups() {
    let etcd = EtcdService::default();
    let found = RestoreFound {
        members: vec![
            restore_member(1, true, true),
            restore_member(2, false, false),
        ],
        local_copy: Some(("10.0.0.1".into(), "/opt/rke/etcd-snapshots/snap.zip".into())),
        replaced: vec![
            (
                "10.0.0.1".into(),
                vec!["etcd".into(), "kube-apiserver".into()],
            ),
            ("10.0.0.9".into(), vec!["kubelet".into()]),
        ],
    };
    let changes = restore_snapshot(&request(&etcd, None), "files:1", &found).unwrap();
    let h = |n: u8| format!("10.0.0.{n}");
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        outline(&changes),
        [
            (
                RestoreStage::Share,
                vec![(h(2), v(&["pull files:1", "copy from 10.0.0.1"]))]
            ),
            (
                RestoreStage::Prepare,
                vec![(h(1), v(&[RESTORE])), (h(2), v(&["pull tools:1", RESTORE]))]
            ),
            (
                RestoreStage::Replace,
                vec![
                    // In the order of `REPLACED`, whatever order the host lists them in.
                    (h(1), v(&["rm kube-apiserver", "rm etcd", RESTORE_MOVE])),
                    (h(2), v(&[RESTORE_MOVE]))
                ]
            ),
            (RestoreStage::Up, vec![("cluster".into(), v(&["up"]))]),
        ]
    );
    assert_eq!(shared_from(&changes), Some("10.0.0.1"));

    let missing = RestoreFound {
        local_copy: None,
        ..found.clone()
    };
    let e = restore_snapshot(&request(&etcd, None), "files:1", &missing).unwrap_err();
    assert!(e.to_string().contains("snap.zip"), "{e}");

    // From S3 every member downloads; nothing is shared.
    let s = s3();
    let changes = restore_snapshot(&request(&etcd, Some(&s)), "files:1", &missing).unwrap();
    assert!(changes.stages[0].hosts.is_empty(), "{changes:?}");
    assert_eq!(outline(&changes)[1].1[0], (h(1), v(&[DOWNLOAD, RESTORE])));
    assert_eq!(shared_from(&changes), None);
}

#[test]
fn restored_checksums_must_agree() {
    assert_eq!(restore_checksum("x\n sha256 abc \n"), Some("abc".into()));
    assert_eq!(restore_checksum("nothing"), None);
    let mut sums = BTreeMap::from([("a".to_string(), "1".to_string())]);
    sums.insert("b".into(), "1".into());
    assert_eq!(checksums_disagree(&sums), None);
    sums.insert("c".into(), "2".into());
    let (host, why) = checksums_disagree(&sums).unwrap();
    assert_eq!(host, "all etcd hosts");
    assert!(why.contains("\"c\": \"2\""), "{why}");
}

#[test]
fn the_helper_timeout_is_the_configs_else_rke1s() {
    let mut etcd = EtcdService::default();
    assert_eq!(helper_timeout_secs(&etcd), 300);
    etcd.backup_config = Some(BackupConfig {
        timeout: 60,
        ..Default::default()
    });
    assert_eq!(helper_timeout_secs(&etcd), 60);
}
