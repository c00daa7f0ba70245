//! How long a leader-elected control plane component may still lose its lease after the
//! kube-apiserver it talks to stopped.
//!
//! kube-controller-manager and kube-scheduler reach their own host's kube-apiserver. When a run
//! recreates that kube-apiserver, the one holding the lease cannot renew it; if the new API
//! server does not answer (and authorize) within the renew deadline, the component exits by
//! design ("leaderelection lost") and Docker's restart policy starts it again. That happens
//! seconds after the new kube-apiserver answers its health check, so a run that only asked the
//! component once reported success while it was about to restart, and the next plan found it
//! restarting (seen on a real v1.20 control plane, 2026-12-07). The engine waits this window out
//! before it asks such a component for its health.

use super::{ContainerSpec, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER};
use std::time::Duration;

/// Upstream's defaults for both components (`--leader-elect-renew-deadline`,
/// `--leader-elect-retry-period`).
const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// After its API server stopped, the longest a component's lease holder may go on before it
/// gives up: its last renewal came at most one retry period before the stop, and the next
/// attempt gives up after the renew deadline. `None` when the component does not elect a
/// leader (not one of the two, or `--leader-elect=false`).
pub fn lease_loss_window(spec: &ContainerSpec) -> Option<Duration> {
    if spec.name != KUBE_CONTROLLER_MANAGER && spec.name != KUBE_SCHEDULER {
        return None;
    }
    if flag(spec, "leader-elect").is_some_and(|v| v.eq_ignore_ascii_case("false")) {
        return None;
    }
    let duration = |name, default| {
        flag(spec, name)
            .and_then(|v| humantime::parse_duration(v).ok())
            .unwrap_or(default)
    };
    Some(
        duration("leader-elect-renew-deadline", DEFAULT_RENEW_DEADLINE)
            + duration("leader-elect-retry-period", DEFAULT_RETRY_PERIOD),
    )
}

/// The last value of `--name=value` among the container's arguments (the last one wins, as
/// with Go's flag parsing).
fn flag<'s>(spec: &'s ContainerSpec, name: &str) -> Option<&'s str> {
    spec.entrypoint
        .iter()
        .chain(&spec.cmd)
        .rev()
        .find_map(|arg| {
            arg.strip_prefix("--")?
                .strip_prefix(name)?
                .strip_prefix('=')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, args: &[&str]) -> ContainerSpec {
        ContainerSpec {
            name: name.into(),
            entrypoint: ["/opt/rke-tools/entrypoint.sh", name]
                .iter()
                .chain(args)
                .map(|s| s.to_string())
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_two_leader_elected_components_get_upstreams_window() {
        for name in [KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER] {
            assert_eq!(
                lease_loss_window(&spec(name, &["--leader-elect=true", "--v=2"])),
                Some(Duration::from_secs(12)),
                "{name}"
            );
        }
    }

    #[test]
    fn other_components_and_leader_elect_false_have_none() {
        assert_eq!(lease_loss_window(&spec("kube-apiserver", &[])), None);
        assert_eq!(lease_loss_window(&spec("kubelet", &[])), None);
        assert_eq!(
            lease_loss_window(&spec(KUBE_SCHEDULER, &["--leader-elect=false"])),
            None
        );
    }

    #[test]
    fn extra_args_set_the_window_in_gos_duration_syntax() {
        let s = spec(
            KUBE_CONTROLLER_MANAGER,
            &[
                "--leader-elect-renew-deadline=1m0s",
                "--leader-elect-retry-period=500ms",
                "--leader-elect-lease-duration=90s",
            ],
        );
        assert_eq!(lease_loss_window(&s), Some(Duration::from_millis(60_500)));
        // A value Go would refuse starts nothing; the default stands for the wait.
        let s = spec(KUBE_SCHEDULER, &["--leader-elect-retry-period=soon"]);
        assert_eq!(lease_loss_window(&s), Some(Duration::from_secs(12)));
    }

    #[test]
    fn the_last_occurrence_wins_and_a_longer_flag_name_is_not_taken() {
        let s = spec(
            KUBE_SCHEDULER,
            &[
                "--leader-elect-renew-deadline=20s",
                "--leader-elect-renew-deadline=30s",
                "--leader-elect-resource-lock=leases",
            ],
        );
        assert_eq!(lease_loss_window(&s), Some(Duration::from_secs(32)));
    }
}
