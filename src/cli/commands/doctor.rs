//! `rkers doctor`: the report (exit 1 when it holds a failure), `--fix CHECK` and
//! `--restore-webhooks`.

use crate::cli::CliError;
use crate::cli::args::DoctorArgs;
use crate::cluster::Cluster;
use crate::doctor::{self, DoctorOptions};
use crate::output::Reporter;

pub async fn run(
    cluster: &Cluster,
    args: &DoctorArgs,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let opts = DoctorOptions {
        hosts: args.hosts.clone(),
        agent_override: args.connect.ssh_agent_auth,
        ssh: super::up::ssh_options(&args.connect),
    };
    if args.restore_webhooks {
        return doctor::fix::restore_webhooks(cluster, args.dry_run, reporter)
            .await
            .map_err(CliError::failed);
    }
    if let Some(check) = args.fix {
        // An unknown --host is a usage error, before anything is changed.
        doctor::run::select_targets(cluster, &opts.hosts, opts.agent_override)
            .map_err(|e| CliError::InvalidConfig(e.to_string()))?;
        return doctor::fix::fix(cluster, check, &opts, args.dry_run, reporter)
            .await
            .map_err(CliError::failed);
    }
    if args.dry_run {
        return Err(CliError::Usage(
            "`rkers doctor` only reads; --dry-run goes with --fix or --restore-webhooks".into(),
        ));
    }
    doctor::run::select_targets(cluster, &opts.hosts, opts.agent_override)
        .map_err(|e| CliError::InvalidConfig(e.to_string()))?;
    let report = doctor::run_doctor(cluster, &opts)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    if reporter.is_json() {
        super::super::print_out(format_args!("{}\n", report.to_json()))?;
    } else {
        super::super::print_out(report.render_text())?;
    }
    match report.failed() {
        None => Ok(()),
        Some(failed) => Err(CliError::failed(failed)),
    }
}
