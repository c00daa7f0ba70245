//! `rkers rollback`: the cluster brought back to what the previous successful `up` applied,
//! from the state file alone (issue 30). Where to go is the core's decision
//! ([`crate::state::rollback_target`]); going there is `up` with that config as the desired
//! one (or `etcd snapshot-restore` of the snapshot taken before the change, then `up`), so the
//! dry run shows exactly what the run does. Afterwards it names the cluster.yml keys that
//! differ from the rolled-back config, so the user can bring the file back in line.

use crate::cli::CliError;
use crate::cli::args::RollbackArgs;
use crate::cluster::Cluster;
use crate::config::{self, KeyDifference, RkeConfig};
use crate::metadata::Catalog;
use crate::output::{Event, Reporter, Status};
use crate::phases::etcd_snapshot::{self, RestoreOptions};
use crate::phases::up::{UpError, UpOptions, up};
use crate::state::{ClusterFiles, StateFile, rollback_target};

pub async fn run(args: &RollbackArgs, reporter: &Reporter) -> Result<(), CliError> {
    let path = &args.config.config;
    let files = ClusterFiles::from_config_path(path);
    let state = StateFile::load(&files.state_path).map_err(CliError::failed)?;
    let target = rollback_target(state.as_ref(), args.restore_snapshot)
        .map_err(|e| CliError::Failed(format!("{}: {e}", files.state_path.display())))?;
    let previous = RkeConfig::from_state_json(&target.previous.rke_config).map_err(|e| {
        CliError::Failed(format!(
            "{}: the recorded previous run's config cannot be read ({e}); run `rkers up` with \
             the old cluster.yml",
            files.state_path.display()
        ))
    })?;
    let catalog = Catalog::load().map_err(|e| CliError::Failed(e.to_string()))?;
    let differences = cluster_yml_differences(path, &previous, &catalog);
    let loaded = config::Loaded {
        config: previous.clone(),
        warnings: Vec::new(),
        locations: config::Locations::empty(&files.state_path.display().to_string()),
    };
    let mut cluster =
        Cluster::from_loaded_with_state(loaded, catalog, files, state.as_ref(), reporter)
            .map_err(|e| CliError::Failed(format!("the recorded previous run's config: {e}")))?;
    // The recorded config is defaulted already, and defaulting it again is not a no-op (RKE1
    // fills `node_drain_input` only into a strategy cluster.yml leaves out): the run applies,
    // and the state records, exactly what ran before, so `up` with the old cluster.yml finds
    // nothing to change.
    cluster.config = previous;
    let _run_lock = crate::cli::lock_cluster("rollback", args.dry_run, &cluster, reporter)?;
    reporter.info(format!(
        "Rolling back to the config the previous successful run replaced (kubernetes_version {})",
        cluster.config.kubernetes_version
    ));
    let opts = up_options(args);
    match &target.restore_snapshot {
        Some(name) => {
            let restore = RestoreOptions {
                name: name.clone(),
                s3: None,
                dry_run: args.dry_run,
                up: UpOptions {
                    dry_run: false,
                    // etcd was just restored from the snapshot and `up` recreates nothing.
                    no_snapshot: true,
                    minor_back_from_snapshot: true,
                    ..opts
                },
            };
            etcd_snapshot::restore(&cluster, &restore, reporter)
                .await
                .map_err(CliError::failed)?;
        }
        None => up(&cluster, &opts, reporter).await.map_err(|e| match e {
            UpError::Cluster(c) if c.is_invalid_config() => CliError::InvalidConfig(c.to_string()),
            other => CliError::failed(other),
        })?,
    }
    report_differences(differences, reporter);
    Ok(())
}

fn up_options(args: &RollbackArgs) -> UpOptions {
    UpOptions {
        dry_run: args.dry_run,
        force: false,
        disable_port_check: args.disable_port_check,
        custom_certs: None,
        agent_override: args.connect.ssh_agent_auth,
        ignore_docker_version_flag: args.connect.ignore_docker_version,
        ssh: super::up::ssh_options_for(&args.connect, args.dry_run),
        // The state is rkers' own: there is no adoption to confirm.
        yes: false,
        confirm: None,
        ignore_blocking_webhooks: args.ignore_blocking_webhooks,
        // Going back within a minor serves the same API versions.
        ignore_removed_apis: false,
        dind: false,
        no_snapshot: args.no_snapshot,
        minor_back_from_snapshot: false,
    }
}

/// The keys where the user's cluster.yml (defaulted as `up` defaults it) differs from the
/// rolled-back config; `Err` says why the file could not be compared.
fn cluster_yml_differences(
    path: &std::path::Path,
    rolled_back: &RkeConfig,
    catalog: &Catalog,
) -> Result<Vec<KeyDifference>, String> {
    let mut current = config::load_file(path).map_err(|e| e.to_string())?.config;
    config::apply_defaults(&mut current, catalog);
    Ok(config::key_differences(&current, rolled_back))
}

/// Tells the user which cluster.yml keys to change back, as one event (its `data` lists them
/// for `--output json`).
fn report_differences(differences: Result<Vec<KeyDifference>, String>, reporter: &Reporter) {
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
