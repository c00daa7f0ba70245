//! Step 1, under its own phase: every host connected at once. A host that cannot be reached
//! is warned about and recorded as not cleaned; the others are.

use super::{Remove, RemoveError};
use crate::hosts::HostPool;
use crate::phases::driver::Links;

pub(super) async fn reachable_hosts(
    command: &mut Remove<'_>,
    links: &mut Links,
) -> Result<HostPool, RemoveError> {
    let reporter = &command.reporter;
    let phase = reporter.phase("connect");
    let targets = command.cluster.ssh_targets(command.opts.agent_override);
    let mut usable = Vec::new();
    for attempt in HostPool::connect_each(&targets, &command.opts.ssh).await {
        match &attempt.error {
            Some(e) => {
                let address = &attempt.target.address;
                let text = e.to_string();
                // The error names the host already; the final list names it once.
                let cause = text
                    .strip_prefix(&format!("host {address}: "))
                    .unwrap_or(&text)
                    .to_string();
                reporter.warn(format!(
                    "host {address} cannot be reached and is not cleaned: {cause}"
                ));
                command.failures.push((address.clone(), cause));
            }
            None => usable.push(attempt),
        }
    }
    let pool = HostPool::from_attempts(usable, command.opts.ssh.concurrency).await?;
    links.keep(pool.hosts());
    phase.done();
    Ok(pool)
}
