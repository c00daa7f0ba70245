//! The dry run is the truth: for each command, `<command> --dry-run --output json` and then the
//! command itself with `--output json` on the sandbox; the `planned` events of the first must
//! equal the `applied` events of the second, action for action and in order per host (the host
//! keys include the pseudo-hosts `cluster` and `local`), every applied action succeeded, and
//! the dry run changed nothing on the hosts. A failed `up` whose recreated kube-apiserver is
//! undone applies its dry run up to that recreate, then the undo it promised; so does one
//! whose worker's node stays NotReady after its kubelet's recreate. `up`'s
//! pre-change etcd snapshot is named after the moment of each plan: that time is the one thing
//! left out of the comparison. Actions of different hosts are not compared in order: hosts run
//! in parallel, and the written rule ("What a dry run promises" in
//! docs/src/reference/commands.md) promises no order across hosts beyond the phases.
//!
//! `rollback` after a changed flag is checked the same way as `up`. etcd growing from one
//! member to three and back (e2e_up's cluster does not do it again) also checks every member
//! healthy, the leaving members' containers and node labels gone.
//!
//! One cluster serves the commands that leave it running (`etcd snapshot-save`, `cert rotate
//! --service kubelet`, `encrypt rotate-key`, then `up` turning encryption off); `remove` comes
//! last, in the same test function,
//! so the steps run in this order. nextest runs this binary in the `sandbox` group, in CI's
//! lane A (it is no `e2e_day2_*` test).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS};

/// Per host, the `(action text, action data)` of every event of `kind` (`planned` or
/// `applied`), in output order.
type Actions = BTreeMap<String, Vec<(String, Value)>>;

fn action_events(out: &str, kind: &str) -> Actions {
    let mut by_host: Actions = BTreeMap::new();
    for v in out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == kind)
    {
        let host = v["host"].as_str().expect("an action event names its host");
        let data = serde_json::from_str(&timeless(&v["data"].to_string())).unwrap();
        by_host
            .entry(host.to_string())
            .or_default()
            .push((timeless(v["action"].as_str().unwrap_or_default()), data));
    }
    by_host
}

/// `up`'s pre-change snapshot is named after the moment its plan was made
/// (`rkers-pre-20261127T163600Z`), which differs between a dry run and the run after it: the
/// time is left out of the comparison, nothing else.
fn timeless(text: &str) -> String {
    const PREFIX: &str = "rkers-pre-";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(PREFIX) {
        out.push_str(&rest[..at + PREFIX.len()]);
        rest = &rest[at + PREFIX.len()..];
        let time_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == 'T' || c == 'Z'))
            .unwrap_or(rest.len());
        out.push_str("<time>");
        rest = &rest[time_len..];
    }
    out.push_str(rest);
    out
}

/// Failed `applied` events, as `host: action: error`.
fn failed_actions(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "applied" && v["status"] != "ok")
        .map(|v| format!("{}: {}: {}", v["host"], v["action"], v["error"]))
        .collect()
}

fn show(actions: &Actions) -> String {
    let mut out = String::new();
    for (host, list) in actions {
        out.push_str(&format!("{host}:\n"));
        for (text, _) in list {
            out.push_str(&format!("  - {text}\n"));
        }
    }
    out
}

/// Runs `args` as a dry run, then for real (with `real_extra` added, e.g. `--force`), and
/// asserts that what the run applied is what the dry run planned. Returns the plan.
/// Waits until Docker is restarting no container on any host. The dry run and the run read
/// the hosts seconds apart: a component Docker restarts meanwhile (kube-controller-manager,
/// which exits while the API server it talks to is recreated) is planned as a restart by one
/// and found running by the other. Both are right about the moment they looked; the rule this
/// file holds is about a cluster nothing else changes between the two.
fn settled(cluster: &E2e) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let restarting: Vec<String> = HOSTS
            .iter()
            .filter_map(|h| {
                let names = cluster.env.on_host(
                    h,
                    "docker ps --filter status=restarting --format '{{.Names}}'",
                );
                let names = names.split_whitespace().collect::<Vec<_>>().join(" ");
                (!names.is_empty()).then(|| format!("{h}: {names}"))
            })
            .collect();
        if restarting.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "containers still restarting after 90 s: {restarting:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn dry_run_is_the_truth(cluster: &E2e, args: &[&str], real_extra: &[&str]) -> Actions {
    settled(cluster);
    let state_before = std::fs::read(cluster.state_path()).ok();
    let ids_before = cluster.env.container_ids(&HOSTS);
    let t = Instant::now();
    let mut dry_args = args.to_vec();
    dry_args.extend(["--dry-run", "--output", "json"]);
    let (ok, dry) = cluster.rkers(&dry_args);
    assert!(ok, "{dry_args:?} failed:\n{dry}");
    eprintln!("{dry_args:?}: {:.1}s", t.elapsed().as_secs_f64());
    let planned = action_events(&dry, "planned");
    eprintln!("planned:\n{}", show(&planned));
    assert!(
        action_events(&dry, "applied").is_empty(),
        "a dry run applies nothing:\n{dry}"
    );
    assert_eq!(
        std::fs::read(cluster.state_path()).ok(),
        state_before,
        "the dry run changed the state file"
    );
    assert_eq!(
        cluster.env.container_ids(&HOSTS),
        ids_before,
        "the dry run changed containers"
    );

    let t = Instant::now();
    let mut real_args = args.to_vec();
    real_args.extend(real_extra);
    real_args.extend(["--output", "json"]);
    let (ok, real) = cluster.rkers(&real_args);
    assert!(ok, "{real_args:?} failed:\n{real}");
    eprintln!("{real_args:?}: {:.1}s", t.elapsed().as_secs_f64());
    assert_eq!(failed_actions(&real), Vec::<String>::new(), "{real}");
    let applied = action_events(&real, "applied");
    assert_eq!(
        applied,
        planned,
        "{args:?}: applied (left) differs from the dry run (right):\napplied:\n{}\nplanned:\n{}",
        show(&applied),
        show(&planned)
    );
    planned
}

/// The action texts of `host`.
fn texts<'a>(plan: &'a Actions, host: &str) -> Vec<&'a str> {
    plan.get(host)
        .map(|l| l.iter().map(|(t, _)| t.as_str()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn other_commands_apply_exactly_their_dry_run() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    let started = Instant::now();
    cluster.standard().await;
    eprintln!("standard: {:.1}s", started.elapsed().as_secs_f64());
    let (h1, h2, h3) = (sb.ip(1), sb.ip(2), sb.ip(3));

    // etcd snapshot-save: host1 (the one etcd host) gets the state copy and the one-shot
    // snapshot helper; the archive is there afterwards.
    let plan = dry_run_is_the_truth(
        &cluster,
        &["etcd", "snapshot-save", "--name", "truth-1"],
        &[],
    );
    assert_eq!(plan.keys().collect::<Vec<_>>(), [&h1], "{}", show(&plan));
    let actions = texts(&plan, &h1);
    assert!(
        actions[0].contains("truth-1.rkestate")
            && actions
                .last()
                .unwrap()
                .starts_with("save snapshot truth-1 as /opt/rke/etcd-snapshots/truth-1.zip"),
        "{actions:?}"
    );
    sb.on_host("host1", "test -s /opt/rke/etcd-snapshots/truth-1.zip");

    // cert rotate --service kubelet: per host the kubelet's files written, then only the
    // kubelet restarted; the admin kubeconfig and the state Secret follow.
    let plan = dry_run_is_the_truth(&cluster, &["cert", "rotate", "--service", "kubelet"], &[]);
    for h in [&h1, &h2, &h3] {
        let actions = texts(&plan, h);
        assert_eq!(actions.len(), 2, "{h}: {actions:?}");
        assert!(
            actions[0].starts_with("write under /etc/kubernetes:"),
            "{actions:?}"
        );
        assert!(
            actions[1].starts_with("restart container kubelet"),
            "{actions:?}"
        );
    }
    assert_eq!(texts(&plan, "local").len(), 1, "{}", show(&plan));
    assert_eq!(
        texts(&plan, "cluster"),
        ["save the state in Secret kube-system/full-cluster-state (the rotated certificates)"]
    );

    // encrypt rotate-key on a cluster with encryption on: host1 (the one controlplane host)
    // writes the provider file and restarts kube-apiserver twice; the cluster rewrites every
    // Secret in between.
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    secrets_encryption_config:\n      enabled: true\n",
        )
    });
    cluster.up();
    let plan = dry_run_is_the_truth(&cluster, &["encrypt", "rotate-key"], &[]);
    let actions = texts(&plan, &h1);
    let restarts = actions
        .iter()
        .filter(|a| a.starts_with("restart container kube-apiserver"))
        .count();
    assert_eq!(restarts, 2, "{actions:?}");
    assert!(
        texts(&plan, "cluster")
            .iter()
            .any(|a| a.starts_with("rewrite every Secret")),
        "{}",
        show(&plan)
    );
    assert!(!plan.contains_key(&h2), "{}", show(&plan));

    // Encryption turned off through `up`: host1 (the one controlplane host) first writes the
    // identity-first provider file and restarts kube-apiserver with it, the cluster rewrites
    // every Secret in plain text, and only then does host1 drop the provider file and
    // recreate kube-apiserver without it. Before all of it, since kube-apiserver is recreated,
    // host1 (the etcd host) takes an etcd snapshot.
    cluster.reset_config(3);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    let actions = texts(&plan, &h1);
    assert!(
        actions[0]
            .starts_with("take etcd snapshot rkers-pre-<time> first (kube-apiserver recreated on "),
        "{}",
        show(&plan)
    );
    let actions = &actions[1..];
    assert!(
        actions.len() > 3
            && actions[0].starts_with(
                "write under /etc/kubernetes:\n      ssl/encryption.yaml mode 0600 (identity \
                 first, key "
            )
            && actions[1]
                == "restart container kube-apiserver and wait until \
                    https://localhost:6443/healthz is healthy",
        "{}",
        show(&plan)
    );
    let removed = actions
        .iter()
        .position(|a| *a == "remove /etc/kubernetes/ssl/encryption.yaml (no longer configured)");
    let recreated = actions
        .iter()
        .position(|a| a.starts_with("recreate container kube-apiserver"));
    assert!(
        matches!((removed, recreated), (Some(r), Some(c)) if 1 < r && r < c),
        "{}",
        show(&plan)
    );
    assert_eq!(
        texts(&plan, "cluster").first().copied(),
        Some(
            "rewrite every Secret in plain text (secrets_encryption_config is off in cluster.yml)"
        ),
        "{}",
        show(&plan)
    );
    for h in [&h2, &h3] {
        assert!(
            !texts(&plan, h).iter().any(|a| a.contains("encryption")),
            "{h}: {}",
            show(&plan)
        );
    }
    sb.on_host("host1", "test ! -e /etc/kubernetes/ssl/encryption.yaml");

    // remove, last: every host loses its containers, the local files go.
    let plan = dry_run_is_the_truth(&cluster, &["remove"], &["--force"]);
    for h in [&h1, &h2, &h3] {
        assert!(
            texts(&plan, h)
                .iter()
                .any(|a| a.starts_with("remove container kubelet")),
            "{h}: {}",
            show(&plan)
        );
    }
    assert!(
        texts(&plan, "local")
            .iter()
            .any(|a| a.ends_with("cluster.rkestate")),
        "{}",
        show(&plan)
    );
    for h in HOSTS {
        assert_eq!(
            sb.container_names(h)
                .iter()
                .filter(|n| !n.starts_with("k8s_"))
                .count(),
            0,
            "{h}: {:?}",
            sb.container_names(h)
        );
    }
    assert!(!cluster.state_path().exists());

    // A cold up of the standard cluster on the hosts `remove` left clean: the dry run plans
    // every file, image and container of a new cluster, and the run applies exactly that.
    // (Standard, so the tests after this one start from it.)
    cluster.reset_config(3);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    for h in [&h1, &h2, &h3] {
        for container in ["kubelet", "kube-proxy"] {
            assert!(
                texts(&plan, h)
                    .iter()
                    .any(|a| a.starts_with("create")
                        && a.contains(&format!(" container {container} ("))),
                "{h}: {}",
                show(&plan)
            );
        }
    }
    assert!(
        texts(&plan, &h1)
            .iter()
            .any(|a| a.starts_with("create") && a.contains(" container etcd (")),
        "{}",
        show(&plan)
    );
    // The cluster's part: nothing can be read yet, so RBAC, the state Secret, every node and
    // every addon are planned, in the order they are applied; and each host links the logs
    // of the containers it created, last.
    let cluster_plan = texts(&plan, "cluster");
    assert!(
        cluster_plan[0].starts_with("apply ServiceAccount kube-system/rke-job-deployer")
            && cluster_plan[1]
                == "save the state in Secret kube-system/full-cluster-state (new cluster)",
        "{}",
        show(&plan)
    );
    let synced = cluster_plan
        .iter()
        .filter(|a| a.starts_with("sync node ") && a.ends_with(": new cluster"))
        .count();
    assert_eq!(synced, 3, "{}", show(&plan));
    for h in [&h1, &h2, &h3] {
        let last = texts(&plan, h).last().copied().unwrap_or_default();
        assert!(
            last.starts_with("link the logs of ") && last.contains("kubelet"),
            "{h}: {}",
            show(&plan)
        );
    }
}

/// `up` on an unchanged cluster: nothing planned, nothing applied, on the hosts and in the
/// cluster (its RBAC, state Secret, nodes and addons were read and found as planned).
#[tokio::test(flavor = "multi_thread")]
async fn up_no_op_applies_exactly_its_dry_run() {
    let Some(cluster) = E2e::new() else { return };
    cluster.standard().await;
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    assert!(plan.values().all(|l| l.is_empty()), "{}", show(&plan));
}

/// `up` after one kube-api flag changed: kube-apiserver recreated, as planned.
#[tokio::test(flavor = "multi_thread")]
async fn up_with_one_changed_flag_applies_exactly_its_dry_run() {
    let Some(cluster) = E2e::new() else { return };
    cluster.standard().await;
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    extra_args:\n      audit-log-maxage: \"7\"\n",
        )
    });
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    let h1 = cluster.env.ip(1);
    assert!(
        texts(&plan, &h1)
            .iter()
            .any(|a| a.starts_with("recreate container kube-apiserver")),
        "{}",
        show(&plan)
    );
    // The cluster was read: only the state, which holds the new flag, changes there.
    assert_eq!(
        texts(&plan, "cluster"),
        ["save the state in Secret kube-system/full-cluster-state (the state changed)"],
        "{}",
        show(&plan)
    );
    // `rollback` back to the config before the flag: planned like `up`, applied as planned,
    // the same recreate the other way (after the pre-change snapshot it takes for it).
    let plan = dry_run_is_the_truth(&cluster, &["rollback"], &[]);
    assert!(
        texts(&plan, &h1)
            .iter()
            .any(|a| a.starts_with("recreate container kube-apiserver")
                && a.contains("audit-log-maxage")),
        "{}",
        show(&plan)
    );

    // A user addon added, then turned off: applied, then pruned, through the cluster's
    // actions, and nothing else changes in the cluster.
    cluster.reset_config(3);
    cluster.edit(|t| {
        format!(
            "{t}addons: |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: truth\n    \
             namespace: default\n  data:\n    a: b\n"
        )
    });
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    assert_eq!(
        texts(&plan, "cluster"),
        [
            "save the state in Secret kube-system/full-cluster-state (the state changed)",
            "apply addon rke-user-addon (not deployed yet)\n      apply ConfigMap default/truth"
        ],
        "{}",
        show(&plan)
    );
    cluster.reset_config(3);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    assert_eq!(
        texts(&plan, "cluster"),
        [
            "save the state in Secret kube-system/full-cluster-state (the state changed)",
            "remove addon rke-user-addon (turned off)\n      prune ConfigMap default/truth"
        ],
        "{}",
        show(&plan)
    );

    // Back to the standard config for the tests that follow.
    cluster.standard().await;
}

/// `up` whose new kube-apiserver fails its health check (an unknown flag): what it applied is
/// its dry run up to that recreate, which failed, then the undo the recreate's "keep … until"
/// promised (the previous container put back), and nothing after it.
#[tokio::test(flavor = "multi_thread")]
async fn up_undoing_a_failed_recreate_applies_its_dry_run_and_the_undo() {
    let Some(cluster) = E2e::new() else { return };
    cluster.standard().await;
    let h1 = cluster.env.ip(1);
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  kube-api:\n    extra_args:\n      no-such-flag: \"1\"\n",
        )
    });
    let (ok, dry) = cluster.rkers(&["up", "--dry-run", "--output", "json"]);
    assert!(ok, "{dry}");
    let planned = action_events(&dry, "planned");
    let (ok, real) = cluster.rkers(&["up", "--output", "json"]);
    assert!(
        !ok,
        "up must fail with an unknown kube-apiserver flag:\n{real}"
    );
    let applied = action_events(&real, "applied");
    let plan = &planned[&h1];
    let recreate = plan
        .iter()
        .position(|(t, _)| t.starts_with("recreate container kube-apiserver"))
        .unwrap_or_else(|| panic!("{}", show(&planned)));
    assert!(
        plan[recreate].0.ends_with(
            "keep kube-apiserver as old-kube-apiserver until https://localhost:6443/healthz answers"
        ),
        "{}",
        show(&planned)
    );
    // The undo is reported as it happens, inside the recreate, whose failure is reported once
    // it returns: the restore's event comes first.
    let mut expected = plan[..recreate].to_vec();
    expected.push((
        "put back and start the previous container kube-apiserver (from old-kube-apiserver: its \
         replacement failed)"
            .to_string(),
        serde_json::json!({"action": "restore_container", "name": "kube-apiserver", "start": true}),
    ));
    expected.push(plan[recreate].clone());
    assert_eq!(
        applied[&h1],
        expected,
        "applied (left) differs from the dry run and its undo (right):\n{}",
        show(&applied)
    );
    // Only the recreate failed; the other hosts and the cluster were not touched.
    let failed = failed_actions(&real);
    assert!(
        failed.len() == 1 && failed[0].contains("recreate container kube-apiserver"),
        "{failed:?}"
    );
    assert_eq!(
        applied.keys().collect::<Vec<_>>(),
        [&h1],
        "{}",
        show(&applied)
    );

    // Back to the standard config for the tests that follow.
    cluster.standard().await;
}

/// `up` whose worker's new kubelet runs but whose node stays NotReady (see
/// `only_host1_keeps_its_cni_config`): host1 applies its dry run, the failing worker its
/// kubelet's recreate, then, once `--node-ready-timeout` passed, the undo the recreate's
/// "keep … until … node … is Ready" promised; the other worker and the cluster nothing.
#[tokio::test(flavor = "multi_thread")]
async fn up_undoing_a_worker_whose_node_stays_not_ready_applies_its_dry_run_and_the_undo() {
    let Some(cluster) = E2e::new() else { return };
    cluster.standard().await;
    cluster.only_host1_keeps_its_cni_config();
    let (ok, dry) = cluster.rkers(&["up", "--dry-run", "--output", "json"]);
    assert!(ok, "{dry}");
    let planned = action_events(&dry, "planned");
    let (ok, real) = cluster.rkers(&["up", "--node-ready-timeout", "20", "--output", "json"]);
    assert!(
        !ok,
        "up must fail when a worker's node stays NotReady:\n{real}"
    );
    let applied = action_events(&real, "applied");
    assert_eq!(failed_actions(&real), Vec::<String>::new(), "{real}");
    let h1 = cluster.env.ip(1);
    let failed = applied
        .keys()
        .find(|h| **h != h1)
        .unwrap_or_else(|| panic!("no worker applied anything:\n{}", show(&applied)))
        .clone();
    assert_eq!(
        applied.keys().collect::<Vec<_>>(),
        [&h1, &failed],
        "only host1 and one worker are touched:\n{}",
        show(&applied)
    );
    // host1 (its control plane went through) applied its dry run but what comes after the
    // worker plane.
    let h1_applied = &applied[&h1];
    assert!(
        !h1_applied.is_empty() && planned[&h1].starts_with(h1_applied),
        "host1: applied (left) is no beginning of the dry run (right):\n{}\n{}",
        show(&applied),
        show(&planned)
    );
    let plan = &planned[&failed];
    let recreate = plan
        .iter()
        .position(|(t, _)| t.starts_with("recreate container kubelet"))
        .unwrap_or_else(|| panic!("{}", show(&planned)));
    let node = if failed == cluster.env.ip(2) {
        "host2"
    } else {
        "host3"
    };
    assert!(
        plan[recreate].0.ends_with(&format!(
            "keep kubelet as old-kubelet until http://localhost:10248/healthz answers and node \
             {node} is Ready"
        )),
        "{}",
        show(&planned)
    );
    let mut expected = plan[..=recreate].to_vec();
    expected.push((
        "put back and start the previous container kubelet (from old-kubelet: its replacement \
         failed)"
            .to_string(),
        serde_json::json!({"action": "restore_container", "name": "kubelet", "start": true}),
    ));
    assert_eq!(
        applied[&failed],
        expected,
        "applied (left) differs from the dry run and its undo (right):\n{}",
        show(&applied)
    );

    // Back to the standard config for the tests that follow.
    cluster.standard().await;
    cluster.env.on_host("host1", "rm -rf /etc/cni/net.d-host1");
}

/// A host leaving and coming back, and etcd going from 1 member to 3 and back to 1: each `up`
/// applies exactly its dry run, etcd membership included.
#[tokio::test(flavor = "multi_thread")]
async fn up_with_hosts_and_etcd_members_coming_and_going_applies_exactly_its_dry_run() {
    let Some(cluster) = E2e::new() else { return };
    let api = cluster.standard().await;
    let (h1, h2, h3) = (cluster.env.ip(1), cluster.env.ip(2), cluster.env.ip(3));
    let has = |plan: &Actions, host: &str, prefix: &str| {
        texts(plan, host).iter().any(|a| a.starts_with(prefix))
    };

    // host3 leaves: its containers go.
    cluster.edit(|t| t.replace(&support::e2e::node_entry(t, &h3), ""));
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    assert!(
        has(&plan, &h3, "remove container kubelet"),
        "{}",
        show(&plan)
    );

    // host3 comes back: files and containers again.
    cluster.reset_config(3);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    assert!(
        has(&plan, &h3, "upload /etc/kubernetes/ssl/kube-node.pem"),
        "{}",
        show(&plan)
    );
    assert!(
        has(&plan, &h3, "create and start container kubelet"),
        "{}",
        show(&plan)
    );
    // Its node went with it: labelled and tainted once its kubelet registers it again.
    assert!(
        has(&plan, "cluster", "sync node host3: not registered yet"),
        "{}",
        show(&plan)
    );

    // etcd from 1 member to 3: host2 and host3 join.
    let etcd_on_workers = |t: &str| {
        let mut out = t.to_string();
        for ip in [&h2, &h3] {
            let entry = support::e2e::node_entry(t, ip);
            out = out.replace(
                &entry,
                &entry.replace("role: [worker]", "role: [etcd, worker]"),
            );
        }
        out
    };
    cluster.edit(etcd_on_workers);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    for h in [&h2, &h3] {
        assert!(has(&plan, h, "add etcd member"), "{h}: {}", show(&plan));
        assert!(
            has(&plan, h, "create and start container etcd "),
            "{h}: {}",
            show(&plan)
        );
    }
    assert_eq!(support::e2e::etcd_members(&cluster.env, "host1").len(), 3);
    for h in HOSTS {
        let health = cluster
            .env
            .on_host(h, "docker exec etcd etcdctl endpoint health 2>&1");
        assert!(health.contains("is healthy"), "{h}: {health}");
    }

    // And back to 1: host2 and host3 leave etcd.
    cluster.reset_config(3);
    let plan = dry_run_is_the_truth(&cluster, &["up"], &[]);
    for h in [&h2, &h3] {
        assert!(has(&plan, h, "remove etcd member"), "{h}: {}", show(&plan));
    }
    assert!(!has(&plan, &h1, "remove etcd member"), "{}", show(&plan));
    assert_eq!(
        support::e2e::etcd_members(&cluster.env, "host1"),
        ["etcd-host1"]
    );
    assert!(
        !cluster
            .env
            .container_names("host2")
            .iter()
            .any(|n| n == "etcd")
    );
    support::e2e::wait_nodes_ready(&api, &HOSTS, std::time::Duration::from_secs(60)).await;
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(api.client.clone());
    let labels = nodes.get("host2").await.unwrap().metadata.labels;
    assert!(
        !labels
            .unwrap_or_default()
            .contains_key("node-role.kubernetes.io/etcd"),
        "host2 keeps the etcd role label"
    );
}
