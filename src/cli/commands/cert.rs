//! `rkers cert rotate` and `rkers cert list`.

use crate::cli::CliError;
use crate::cli::args::{CertCommand, RotatableService};
use crate::cli::commands::up::ssh_options_for;
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::cert_list::{self, ListError, ListOptions};
use crate::phases::cert_rotate::{RotateError, RotateOptions, cert_rotate};
use crate::pki::RotateService;

pub async fn run(
    cluster: &Cluster,
    command: &CertCommand,
    reporter: &Reporter,
) -> Result<(), CliError> {
    match command {
        CertCommand::Rotate {
            connect,
            service,
            rotate_ca,
            dry_run,
            ignore_blocking_webhooks,
            ..
        } => {
            let opts = RotateOptions {
                dry_run: *dry_run,
                services: service.iter().map(|s| rotate_service(*s)).collect(),
                rotate_ca: *rotate_ca,
                agent_override: connect.ssh_agent_auth,
                ssh: ssh_options_for(connect, *dry_run),
                ignore_blocking_webhooks: *ignore_blocking_webhooks,
            };
            cert_rotate(cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    RotateError::Cluster(c) if c.is_invalid_config() => {
                        CliError::InvalidConfig(c.to_string())
                    }
                    other => CliError::failed(other),
                })
        }
        CertCommand::List { connect, .. } => {
            let opts = ListOptions {
                agent_override: connect.ssh_agent_auth,
                ssh: ssh_options_for(connect, true),
            };
            let listing = cert_list::cert_list(cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    ListError::Cluster(c) if c.is_invalid_config() => {
                        CliError::InvalidConfig(c.to_string())
                    }
                    other => CliError::failed(other),
                })?;
            let rows = listing.rows;
            if rows.is_empty() && listing.problems.is_empty() {
                return Err(CliError::Failed(format!(
                    "no certificates found: no host could be read and {} holds none",
                    cluster.files.state_path.display()
                )));
            }
            let now = time::OffsetDateTime::now_utc();
            if reporter.is_json() {
                for r in &rows {
                    super::super::print_out(format_args!("{}\n", cert_list::row_json(r, now)))?;
                }
            } else {
                super::super::print_out(cert_list::render_table(&rows, now))?;
            }
            if !listing.problems.is_empty() {
                return Err(CliError::Failed(format!(
                    "{} certificate(s) could not be shown:\n  - {}",
                    listing.problems.len(),
                    listing.problems.join("\n  - ")
                )));
            }
            Ok(())
        }
        CertCommand::GenerateCsr { cert_dir, .. } => {
            crate::cli::commands::offline::generate_csr(cluster, reporter, cert_dir.as_deref())
        }
    }
}

fn rotate_service(s: RotatableService) -> RotateService {
    match s {
        RotatableService::KubeApiserver => RotateService::KubeApiserver,
        RotatableService::KubeControllerManager => RotateService::KubeControllerManager,
        RotatableService::KubeScheduler => RotateService::KubeScheduler,
        RotatableService::Kubelet => RotateService::Kubelet,
        RotatableService::KubeProxy => RotateService::KubeProxy,
        RotatableService::Etcd => RotateService::Etcd,
    }
}
