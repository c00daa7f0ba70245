//! `rkers rollback` as the command line and the library API both run it (issue 30), so the two
//! cannot drift: the state's previous run made the cluster a run applies ([`prepare`]; whether
//! it may go back is the core's [`rollback_target`]), then applied ([`run`]: `up` with that
//! config, or `etcd snapshot-restore` of the snapshot taken before the change and then `up`),
//! and afterwards the cluster.yml keys that differ from the rolled-back config, as one event
//! ([`report_differences`]), so the user can bring the file back in line.

use crate::cluster::{Cluster, ClusterError};
use crate::config::{self, ConfigError, KeyDifference, RkeConfig};
use crate::diff::HostActions;
use crate::metadata::Catalog;
use crate::output::{Event, Reporter, Status};
use crate::phases::etcd_snapshot::{self, RestoreOptions, SnapshotError};
use crate::phases::up::{self, UpError, UpOptions};
use crate::state::{ClusterFiles, RollbackRefused, StateFile, rollback_target};

/// A rollback ready to run: the cluster with the previous run's config as its desired one.
pub struct Rollback {
    pub cluster: Cluster,
    /// The snapshot restored before the containers (`--restore-snapshot`).
    pub restore_snapshot: Option<String>,
}

/// Why a rollback cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    /// No state, no previous run recorded, or a minor crossed back without the snapshot.
    #[error(transparent)]
    Refused(#[from] RollbackRefused),
    #[error(
        "the recorded previous run's config cannot be read ({0}); run `rkers up` with the old \
         cluster.yml"
    )]
    UnreadableConfig(String),
    #[error("the recorded previous run's config: {0}")]
    InvalidConfig(ClusterError),
}

impl RollbackError {
    /// Whether the message is about what the state file holds (the CLI names the file first).
    pub fn is_about_the_state(&self) -> bool {
        !matches!(self, RollbackError::InvalidConfig(_))
    }
}

/// Why a rollback that was prepared failed: the restore's error or `up`'s, as they are.
#[derive(Debug, thiserror::Error)]
pub enum RollbackRunError {
    #[error(transparent)]
    Restore(SnapshotError),
    #[error(transparent)]
    Up(UpError),
}

/// The cluster a rollback applies, from the state alone: the previous successful run's config,
/// exactly as recorded. `state_name` names the state in messages about the recorded config.
pub fn prepare(
    state: Option<&StateFile>,
    restore_snapshot: bool,
    files: ClusterFiles,
    catalog: Catalog,
    state_name: &str,
    reporter: &Reporter,
) -> Result<Rollback, RollbackError> {
    let target = rollback_target(state, restore_snapshot)?;
    let previous = RkeConfig::from_state_json(&target.previous.rke_config)
        .map_err(|e| RollbackError::UnreadableConfig(e.to_string()))?;
    let loaded = config::Loaded {
        config: previous.clone(),
        warnings: Vec::new(),
        locations: config::Locations::empty(state_name),
    };
    let mut cluster = Cluster::from_loaded_with_state(loaded, catalog, files, state, reporter)
        .map_err(RollbackError::InvalidConfig)?;
    // The recorded config is defaulted already, and defaulting it again is not a no-op (RKE1
    // fills `node_drain_input` only into a strategy cluster.yml leaves out): the run applies,
    // and the state records, exactly what ran before, so `up` with the old cluster.yml finds
    // nothing to change.
    cluster.config = previous;
    Ok(Rollback {
        cluster,
        restore_snapshot: target.restore_snapshot,
    })
}

/// Goes back (`cluster` as [`prepare`] made it): `up` with the previous config (its dry run with `opts.dry_run`), or the snapshot
/// restored first. A dry run without a snapshot to restore hands back the per-host actions it
/// showed.
pub async fn run(
    cluster: &Cluster,
    restore_snapshot: Option<&str>,
    opts: UpOptions,
    reporter: &Reporter,
) -> Result<Option<Vec<HostActions>>, RollbackRunError> {
    reporter.info(format!(
        "Rolling back to the config the previous successful run replaced (kubernetes_version {})",
        cluster.config.kubernetes_version
    ));
    match restore_snapshot {
        Some(name) => {
            let restore = RestoreOptions {
                name: name.to_string(),
                s3: None,
                dry_run: opts.dry_run,
                up: UpOptions {
                    dry_run: false,
                    // etcd was just restored from the snapshot and `up` recreates nothing.
                    no_snapshot: true,
                    minor_back_from_snapshot: true,
                    ..opts
                },
            };
            etcd_snapshot::restore(cluster, &restore, reporter)
                .await
                .map_err(RollbackRunError::Restore)?;
            Ok(None)
        }
        None if opts.dry_run => up::plan_actions(cluster, &opts, reporter)
            .await
            .map(Some)
            .map_err(RollbackRunError::Up),
        None => up::up(cluster, &opts, reporter)
            .await
            .map(|()| None)
            .map_err(RollbackRunError::Up),
    }
}

/// The keys where the user's cluster.yml (`current` as read, defaulted and settled here as the
/// next `up` would, with the rolled-back config as the state's) differs from the rolled-back
/// config; `Err` is why the file could not be read, so could not be compared.
pub fn cluster_yml_differences(
    current: Result<RkeConfig, ConfigError>,
    rolled_back: &Cluster,
) -> Result<Vec<KeyDifference>, ConfigError> {
    let mut current = current?;
    config::apply_defaults(&mut current, &rolled_back.catalog);
    config::settle_br_netfilter(&mut current, Some(&rolled_back.config));
    // A recorded config from before the key existed reads as the `up` after this settles it.
    let mut back = rolled_back.config.clone();
    config::settle_br_netfilter(&mut back, Some(&rolled_back.config));
    Ok(config::key_differences(&current, &back))
}

/// Tells the user which cluster.yml keys to change back, as one event (its `data` lists them
/// for `--output json`).
pub fn report_differences(
    differences: &Result<Vec<KeyDifference>, ConfigError>,
    reporter: &Reporter,
) {
    let differences = match differences {
        Ok(d) => d,
        Err(why) => {
            reporter.warn(format!(
                "cluster.yml could not be compared with the rolled-back config ({why}); make \
                 sure it matches before the next `rkers up`, or that run undoes the rollback"
            ));
            return;
        }
    };
    if differences.is_empty() {
        reporter.info("cluster.yml matches the rolled-back config");
        return;
    }
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".into());
    let lines: Vec<String> = differences
        .iter()
        .map(|d| {
            format!(
                "  {}: {} in cluster.yml, {} rolled back",
                d.key,
                shown(&d.left),
                shown(&d.right)
            )
        })
        .collect();
    let mut event = Event::new(Status::Warning);
    event.phase = Some("rollback".into());
    event.message = Some(format!(
        "cluster.yml differs from the rolled-back config at {} key(s); change them back, or \
         the next `rkers up` undoes the rollback:\n{}",
        differences.len(),
        lines.join("\n")
    ));
    event.data = Some(serde_json::json!({ "cluster_yml_differs": differences }));
    reporter.emit(event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_cluster_yml_that_cannot_be_read_is_warned_about_with_its_file_and_cause() {
        let seen: Arc<Mutex<Vec<Event>>> = Default::default();
        let into = seen.clone();
        let reporter = Reporter::with_sink(Arc::new(move |e| into.lock().unwrap().push(e)));
        let unread = Err(ConfigError::Io {
            file: "cluster.yml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        });
        report_differences(&unread, &reporter);
        let events = seen.lock().unwrap();
        let messages: Vec<&str> = events.iter().filter_map(|e| e.message.as_deref()).collect();
        assert_eq!(
            messages,
            [
                "cluster.yml could not be compared with the rolled-back config (cluster.yml: \
                 cannot read: gone); make sure it matches before the next `rkers up`, or that \
                 run undoes the rollback"
            ]
        );
        assert!(events.iter().all(|e| e.status == Status::Warning));
    }
}
