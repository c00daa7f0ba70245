//! `rkers etcd snapshot-save` (§26.1), and the per-member steps `up` reuses for its pre-run
//! snapshot.

use super::*;

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
