use super::*;
use serde_json::json;

fn repair() -> CalicoRepair {
    CalicoRepair {
        mode: 0o755,
        owner: "root:root".into(),
        entry: "/etc/tmpfiles.d/calico.conf".into(),
        image: "rancher/hyperkube:x".into(),
    }
}

fn node(host: &str, healthy: bool, dirs: &[(&str, &str)], entry: Option<&str>) -> CalicoNode {
    CalicoNode {
        host: host.into(),
        node: format!("node-{host}"),
        healthy,
        directories: dirs
            .iter()
            .map(|(p, f)| (p.to_string(), f.to_string()))
            .collect(),
        entry_problem: entry.map(str::to_string),
    }
}

#[test]
fn only_the_broken_nodes_get_the_calico_repair_one_after_the_other() {
    let changes = calico_fix(
        &repair(),
        &[
            node("10.0.0.1", true, &[], None),
            node(
                "10.0.0.2",
                false,
                &[("/var/run/calico", "0700 0:0")],
                Some("no entry"),
            ),
            node("10.0.0.3", false, &[], Some("no entry")),
        ],
    );
    assert_eq!(changes.stages.len(), 1);
    let stage = &changes.stages[0];
    assert_eq!(stage.phase, CalicoStage::Repair);
    assert_eq!(stage.pace, Pace::OneAtATime);
    let hosts: Vec<&str> = stage.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(hosts, ["10.0.0.2", "10.0.0.3"]);
    assert!(matches!(
        &stage.hosts[0].actions[..],
        [
            Action::EnsureCniDirectory { path, mode, found, .. },
            Action::WriteTmpfilesEntry { .. },
        ] if path == "/var/run/calico" && mode == "0755" && found == "0700 0:0"
    ));
    assert!(matches!(
        &stage.hosts[1].actions[..],
        [Action::WriteTmpfilesEntry { reason, .. }] if reason == "no entry"
    ));
}

#[test]
fn healthy_nodes_make_no_change() {
    let changes = calico_fix(&repair(), &[node("10.0.0.1", true, &[], None)]);
    assert!(changes.is_empty());
    assert!(changes.stages.is_empty());
}

#[test]
fn a_failed_node_with_nothing_specific_still_gets_its_entry_written() {
    let changes = calico_fix(&repair(), &[node("10.0.0.1", false, &[], None)]);
    assert!(matches!(
        &changes.stages[0].hosts[0].actions[..],
        [Action::WriteTmpfilesEntry { .. }]
    ));
}

fn blocker(kind: Kind, config: &str, protected: Option<&str>) -> Blocker {
    Blocker {
        kind,
        config: config.into(),
        protected: protected.map(str::to_string),
    }
}

#[test]
fn kubernetes_and_addon_configurations_are_protected() {
    assert_eq!(
        protected("system:foo", false, false).as_deref(),
        Some("installed by Kubernetes")
    );
    assert_eq!(
        protected("x", true, false).as_deref(),
        Some("installed by Kubernetes")
    );
    assert_eq!(
        protected("ingress-nginx-admission", false, false).as_deref(),
        Some("installed by rkers' addons")
    );
    assert_eq!(
        protected("x", false, true).as_deref(),
        Some("installed by rkers' addons")
    );
    assert_eq!(protected("opa-validating", false, false), None);
}

#[test]
fn removable_are_distinct_and_never_protected() {
    let (remove, kept) = removable(&[
        blocker(Kind::Validating, "b", None),
        blocker(Kind::Validating, "b", None),
        blocker(Kind::Mutating, "a", None),
        blocker(
            Kind::Validating,
            "ingress-nginx-admission",
            Some("installed by rkers' addons"),
        ),
    ]);
    assert_eq!(
        remove,
        [
            (Kind::Validating, "b".to_string()),
            (Kind::Mutating, "a".to_string())
        ]
    );
    assert_eq!(
        kept,
        [(
            Kind::Validating,
            "ingress-nginx-admission".to_string(),
            "installed by rkers' addons".to_string()
        )]
    );
}

fn backup() -> BackupFile {
    BackupFile {
        dir: "/work/c".into(),
        name: "cluster.webhooks-backup.json".into(),
    }
}

#[test]
fn the_backup_is_written_before_the_deletions() {
    let object = json!({"kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "blocker", "uid": "u", "resourceVersion": "7"}});
    let changes = fix_webhooks(
        &backup(),
        vec![json!({"kind": "MutatingWebhookConfiguration", "metadata": {"name": "old"}})],
        vec![((Kind::Validating, "blocker".into()), object)],
    )
    .unwrap();
    let phases: Vec<WebhookStage> = changes.stages.iter().map(|s| s.phase).collect();
    assert_eq!(phases, [WebhookStage::Backup, WebhookStage::Delete]);
    let Action::WriteFileSet { dir, files } = &changes.stages[0].hosts[0].actions[0] else {
        panic!("not a file write: {:?}", changes.stages[0]);
    };
    assert_eq!(changes.stages[0].hosts[0].host, LOCAL);
    assert_eq!(dir, "/work/c");
    assert_eq!(files[0].mode, 0o600);
    assert_eq!(files[0].reason, "validatingwebhookconfiguration/blocker");
    let written: Value = serde_json::from_slice(&files[0].contents).unwrap();
    let names: Vec<&str> = written["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old", "blocker"]);
    assert!(written["items"][1]["metadata"].get("uid").is_none());
    assert_eq!(changes.stages[1].hosts[0].host, CLUSTER);
    assert_eq!(
        changes.stages[1].hosts[0].actions,
        [Action::DeleteWebhookConfiguration {
            kind: Kind::Validating,
            name: "blocker".into()
        }]
    );
}

#[test]
fn nothing_removable_changes_nothing() {
    let changes = fix_webhooks(&backup(), vec![], vec![]).unwrap();
    assert!(changes.stages.is_empty());
}

#[test]
fn an_earlier_backup_is_kept_and_new_items_added() {
    let item = |k: &str, n: &str, v: &str| json!({"kind": k, "metadata": {"name": n}, "v": v});
    let merged = merge_backup(
        vec![item("ValidatingWebhookConfiguration", "a", "first")],
        vec![
            item("ValidatingWebhookConfiguration", "a", "second"),
            item("MutatingWebhookConfiguration", "a", "m"),
        ],
    );
    let items = merged["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["v"], "first");
    assert_eq!(merged["kind"], "List");
}

#[test]
fn server_fields_are_stripped() {
    let v = strip_meta(
        json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "1", "labels": {"x": "y"}}}),
    );
    assert_eq!(v, json!({"metadata": {"name": "a", "labels": {"x": "y"}}}));
}

#[test]
fn restore_puts_back_every_item_of_the_backup() {
    let items = vec![
        json!({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"}}),
        json!({"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}}),
    ];
    let changes = restore_webhooks("/b.json", items.clone()).unwrap();
    assert_eq!(changes.stages.len(), 1);
    assert_eq!(changes.stages[0].phase, RestoreStage::Create);
    let created: Vec<(Kind, &str, &Value)> = changes.stages[0].hosts[0]
        .actions
        .iter()
        .map(|a| match a {
            Action::CreateWebhookConfiguration {
                kind, name, object, ..
            } => (*kind, name.as_str(), object),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        created,
        [
            (Kind::Validating, "v", &items[0]),
            (Kind::Mutating, "m", &items[1])
        ]
    );
}

#[test]
fn restore_refuses_an_empty_backup_or_an_unknown_kind() {
    assert_eq!(
        restore_webhooks("/b.json", vec![]).unwrap_err(),
        RestoreRefused::NoBackup {
            path: "/b.json".into()
        }
    );
    let err = restore_webhooks(
        "/b.json",
        vec![json!({"kind": "Pod", "metadata": {"name": "p"}})],
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "/b.json: unexpected kind \"Pod\"");
}

fn flannel_node(host: &str, healthy: bool, pod: Option<&str>) -> FlannelNode {
    FlannelNode {
        host: host.into(),
        node: format!("node-{host}"),
        healthy,
        summary: if healthy {
            "nat table has FLANNEL-POSTRTG and POSTROUTING jumps to it".into()
        } else {
            "outbound NAT is broken: the nat table has no FLANNEL-POSTRTG chain".into()
        },
        pod: pod.map(|p| ("kube-system".to_string(), p.to_string())),
    }
}

#[test]
fn only_the_nodes_that_lost_their_chain_get_their_flannel_pod_deleted_one_at_a_time() {
    let nodes = [
        flannel_node("10.0.0.1", true, Some("kube-flannel-a")),
        flannel_node("10.0.0.2", false, Some("kube-flannel-b")),
        flannel_node("10.0.0.3", false, Some("kube-flannel-c")),
    ];
    assert!(flannel_unfixable(&nodes).is_empty());
    let changes = flannel_fix(&nodes);
    assert_eq!(changes.stages.len(), 1);
    let stage = &changes.stages[0];
    assert_eq!(stage.phase, FlannelStage::Restart);
    assert_eq!(stage.pace, Pace::OneAtATime);
    let deleted: Vec<(&str, String)> = stage
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.actions[0].to_string()))
        .collect();
    assert_eq!(deleted.len(), 2);
    assert_eq!(deleted[0].0, "10.0.0.2");
    assert!(
        deleted[0].1.starts_with(
            "delete pod kube-system/kube-flannel-b on node node-10.0.0.2 (outbound NAT is broken"
        ),
        "{}",
        deleted[0].1
    );
    assert_eq!(deleted[1].0, "10.0.0.3");
}

#[test]
fn a_broken_node_without_a_flannel_pod_is_named_not_planned() {
    let nodes = [
        flannel_node("10.0.0.1", false, None),
        flannel_node("10.0.0.2", true, None),
    ];
    assert!(flannel_fix(&nodes).is_empty());
    let unfixable = flannel_unfixable(&nodes);
    assert_eq!(unfixable.len(), 1);
    let (host, line) = &unfixable[0];
    assert_eq!(host, "10.0.0.1");
    assert!(
        line.starts_with("host 10.0.0.1: node node-10.0.0.1: outbound NAT is broken"),
        "{line}"
    );
    assert!(
        line.contains("no flannel or canal pod runs there"),
        "{line}"
    );
}

#[test]
fn nodes_with_their_chain_restart_no_flannel_pod() {
    let nodes = [flannel_node("10.0.0.1", true, Some("kube-flannel-a"))];
    assert!(flannel_fix(&nodes).is_empty() && flannel_unfixable(&nodes).is_empty());
}
