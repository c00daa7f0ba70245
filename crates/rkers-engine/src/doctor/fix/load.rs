//! Step 1, before any host or API call: what each command works on. `--fix calico-runtime`
//! and `--fix flannel-nat` refuse an unknown `--host` here; the webhook commands need only the backup's path.

use super::{CalicoFix, FixError, FlannelFix, Restore, WebhookFix, backup_path};
use crate::cluster::Cluster;
use crate::doctor::run::{DoctorOptions, select_targets};
use crate::output::Reporter;

pub(super) fn calico<'c>(
    cluster: &'c Cluster,
    opts: &'c DoctorOptions,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<CalicoFix<'c>, FixError> {
    let targets = select_targets(cluster, &opts.hosts, opts.agent_override)?;
    Ok(CalicoFix {
        cluster,
        opts,
        reporter: reporter.clone(),
        dry_run,
        targets,
        healthy: Vec::new(),
        failures: Vec::new(),
    })
}

pub(super) fn flannel<'c>(
    cluster: &'c Cluster,
    opts: &'c DoctorOptions,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<FlannelFix<'c>, FixError> {
    let targets = select_targets(cluster, &opts.hosts, opts.agent_override)?;
    Ok(FlannelFix {
        cluster,
        opts,
        reporter: reporter.clone(),
        dry_run,
        targets,
        healthy: Vec::new(),
        nodes: Vec::new(),
        failures: Vec::new(),
    })
}

pub(super) fn webhooks<'c>(cluster: &'c Cluster, reporter: &Reporter) -> WebhookFix<'c> {
    WebhookFix {
        cluster,
        reporter: reporter.clone(),
        kept: Vec::new(),
        nothing: false,
    }
}

pub(super) fn restore<'c>(cluster: &'c Cluster, reporter: &Reporter) -> Restore<'c> {
    Restore {
        cluster,
        reporter: reporter.clone(),
        path: backup_path(cluster),
    }
}
