//! `rkers etcd snapshot-restore` (§26.3), in the safer order of the module's doc: every etcd
//! host restores into the scratch directory before anything running is touched.

use super::*;

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
