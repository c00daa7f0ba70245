//! `rkers etcd snapshot-save` and `rkers etcd snapshot-restore`.

use crate::cli::CliError;
use crate::cli::args::{EtcdCommand, S3Args};
use crate::cluster::Cluster;
use crate::config::S3BackupConfig;
use crate::output::Reporter;
use crate::phases::etcd_snapshot::{
    self, RestoreOptions, SaveOptions, SnapshotError, check_snapshot_name,
};
use crate::phases::up::{UpError, UpOptions};

fn cli_error(e: SnapshotError) -> CliError {
    match e {
        SnapshotError::Invalid(m) => CliError::InvalidConfig(m),
        SnapshotError::Cluster(c) if c.is_invalid_config() => {
            CliError::InvalidConfig(c.to_string())
        }
        SnapshotError::Up {
            cause: UpError::Cluster(c),
            ..
        } if c.is_invalid_config() => CliError::InvalidConfig(c.to_string()),
        other => CliError::failed(other),
    }
}

pub async fn run(
    cluster: &Cluster,
    command: &EtcdCommand,
    reporter: &Reporter,
) -> Result<(), CliError> {
    match command {
        EtcdCommand::SnapshotSave {
            connect,
            name,
            s3,
            dry_run,
            ..
        } => {
            let name = match name {
                Some(n) => n.clone(),
                None => {
                    let n = etcd_snapshot::default_snapshot_name(time::OffsetDateTime::now_utc());
                    reporter.warn(format!(
                        "Name of the snapshot is not specified, using [{n}]"
                    ));
                    n
                }
            };
            let (name, warning) = check_snapshot_name(&name).map_err(cli_error)?;
            if let Some(w) = warning {
                reporter.warn(w);
            }
            let s3 = s3_from_args(s3).map_err(cli_error)?;
            let opts = SaveOptions {
                name,
                s3,
                ssh: super::up::ssh_options_for(connect, *dry_run),
                agent_override: connect.ssh_agent_auth,
                dry_run: *dry_run,
            };
            etcd_snapshot::save(cluster, &opts, reporter)
                .await
                .map_err(cli_error)
        }
        EtcdCommand::SnapshotRestore {
            connect,
            name,
            s3,
            cert_dir,
            custom_certs,
            use_local_state,
            dry_run,
            ..
        } => {
            let Some(name) = name else {
                return Err(CliError::InvalidConfig(
                    "you must specify the snapshot name to restore (--name)".into(),
                ));
            };
            let (name, warning) = check_snapshot_name(name).map_err(cli_error)?;
            if let Some(w) = warning {
                reporter.warn(w);
            }
            if !use_local_state {
                tracing::debug!(
                    "the state inside the snapshot archive is not read: the local state file is used"
                );
            }
            let s3 = s3_from_args(s3).map_err(cli_error)?;
            let opts = RestoreOptions {
                name,
                s3,
                dry_run: *dry_run,
                up: UpOptions {
                    dry_run: false,
                    force: false,
                    disable_port_check: true,
                    custom_certs: custom_certs.then(|| {
                        cert_dir
                            .clone()
                            .unwrap_or_else(|| cluster.files.cert_dir.clone())
                    }),
                    agent_override: connect.ssh_agent_auth,
                    ignore_docker_version_flag: connect.ignore_docker_version,
                    ssh: super::up::ssh_options_for(connect, *dry_run),
                    // A restore rebuilds etcd and the control plane by the operator's explicit
                    // request; there is nothing left to confirm about adopting the cluster.
                    yes: true,
                    confirm: None,
                    // The API server is down while the data is restored, so the check skips.
                    ignore_blocking_webhooks: false,
                    // Without an API server only addon manifests are checked; they must be
                    // fixed before a minor change like for `up`.
                    ignore_removed_apis: false,
                    // `etcd snapshot-restore` has no `--dind`.
                    dind: false,
                    // etcd was just restored from a snapshot, and `up` recreates nothing.
                    no_snapshot: true,
                    node_ready_timeout: None,
                    minor_back_from_snapshot: false,
                },
            };
            etcd_snapshot::restore(cluster, &opts, reporter)
                .await
                .map_err(cli_error)
        }
    }
}

/// The `backup_config.s3backupconfig` the command line asks for (RKE1's `setOptionsFromCLI`):
/// `None` without `--s3`. The CA file is read and embedded as `custom_ca`.
fn s3_from_args(args: &S3Args) -> Result<Option<S3BackupConfig>, SnapshotError> {
    if !args.s3 {
        return Ok(None);
    }
    let custom_ca = match &args.s3_endpoint_ca {
        Some(path) => rkers_core::bounded::read_to_string(path, rkers_core::bounded::CERTIFICATE)
            .map_err(|e| {
            SnapshotError::Invalid(format!("--s3-endpoint-ca {}: {e}", path.display()))
        })?,
        None => String::new(),
    };
    let s3 = S3BackupConfig {
        access_key: args.access_key.clone().unwrap_or_default(),
        secret_key: args.secret_key.clone().unwrap_or_default(),
        bucket_name: args.bucket_name.clone().unwrap_or_default(),
        region: args.region.clone().unwrap_or_default(),
        endpoint: args.s3_endpoint.clone(),
        custom_ca,
        folder: args.folder.clone().unwrap_or_default(),
    };
    if s3.bucket_name.is_empty() {
        return Err(SnapshotError::Invalid(
            "--s3 needs --bucket-name".to_string(),
        ));
    }
    Ok(Some(s3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_needs_a_bucket_and_nothing_without_s3() {
        let mut args = S3Args {
            s3: true,
            s3_endpoint: "e".into(),
            s3_endpoint_ca: None,
            access_key: None,
            secret_key: None,
            bucket_name: None,
            region: None,
            folder: None,
        };
        assert!(
            s3_from_args(&args)
                .unwrap_err()
                .to_string()
                .contains("--bucket-name")
        );
        args.bucket_name = Some("snaps".into());
        assert_eq!(s3_from_args(&args).unwrap().unwrap().bucket_name, "snaps");
        args.s3 = false;
        assert!(s3_from_args(&args).unwrap().is_none());
    }
}
