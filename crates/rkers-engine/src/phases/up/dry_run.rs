//! `up --dry-run`: the actions the plan step decided, and how an existing cluster would be
//! rolled; nothing on the hosts changes.

use super::plan::Planned;
use super::rolling::rolling_summary;
use super::state::Loaded;
use crate::cluster::Cluster;
use crate::output::Reporter;

pub(super) fn show(cluster: &Cluster, loaded: &Loaded, planned: &Planned, reporter: &Reporter) {
    // The changeset as every command shows it (text, or one `planned` event per action).
    reporter.planned(&planned.shown);
    if reporter.prints_text()
        && let Some(old) = &loaded.old_current
    {
        for line in rolling_summary(cluster, old, &planned.plan, &planned.actions) {
            crate::output::stdout_text(format_args!("{line}\n"));
        }
    }
}
