//! `rkers preflight`: connect to every host and report SSH, Docker and the ports between roles,
//! changing nothing on any host but the short-lived port-check containers.

use crate::cli::CliError;
use crate::cli::args::PreflightArgs;
use crate::cluster::Cluster;
use crate::hosts::preflight::{self, PreflightOptions};
use crate::output::Reporter;

pub async fn run(
    cluster: &Cluster,
    args: &PreflightArgs,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let c = &cluster.config;
    let port_checks = (!args.disable_port_check).then(|| cluster.port_check_plan());
    let opts = PreflightOptions {
        runtime: Some(cluster.runtime_client()),
        ignore_docker_version: args.connect.ignore_docker_version
            || c.ignore_docker_version.unwrap_or(false),
        port_checks,
        refuse_cgroup_v1: crate::plan::kubelet_refuses_cgroup_v1(c)
            .then(|| c.kubernetes_version.clone()),
    };
    let targets = cluster.ssh_targets(args.connect.ssh_agent_auth);
    let (report, pool) = preflight::run(
        &targets,
        &super::up::ssh_options_for(&args.connect, true),
        &opts,
    )
    .await;
    if let Some(pool) = pool {
        pool.close().await;
    }
    if reporter.is_json() {
        super::super::print_out(format_args!("{}\n", report.to_json()))?;
    } else {
        super::super::print_out(report.render_table())?;
    }
    if report.ok() {
        Ok(())
    } else {
        Err(CliError::failed(preflight::problems(&report)))
    }
}
