//! Rolling upgrades of the hosts an existing cluster already runs (§17, `upgrade_strategy`).
//!
//! At most `max_unavailable_*` hosts are out of service at once. Each one with something to
//! change is cordoned, drained when `drain` is set, upgraded, waited for until its node is Ready
//! again (and, with a calico, canal or flannel CNI, until its CNI pod is Ready and flannel's NAT
//! chain is back), and uncordoned. Unlike RKE1, a host whose upgrade fails is uncordoned too,
//! so a failed run never leaves nodes cordoned behind it (§32 pain point 18), and only nodes
//! rkers cordoned are ever uncordoned. Once as many hosts failed as the budget allows, the
//! remaining ones are not touched.
//!
//! New hosts, hosts whose kubelet is not running, hosts whose node is missing or NotReady, and
//! every host when the API server cannot be reached are upgraded straight away, in parallel and
//! without cordon: there is nothing to protect on them (RKE1 does the same for NotReady nodes,
//! §17.2 step 2; a node whose kubelet was just removed still reads Ready for up to 40 s).

use crate::checks::guard::GuardError;
use crate::kubeapi::drain::{Cordon, DrainOptions};
use crate::kubeapi::{KubeApi, KubeApiError};
use crate::phases::{PhaseError, Runner};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// RKE1's cap on a rolling upgrade's worker pool.
const MAX_POOL: usize = 50;

/// The number of hosts a `max_unavailable_*` value allows out of service among `hosts`:
/// an integer, or a percentage rounded down; at least 1, at most 50 (§3.8).
pub fn max_unavailable(value: &str, hosts: usize) -> Result<usize, BudgetError> {
    let value = value.trim();
    let bad = |problem| BudgetError {
        value: value.to_string(),
        problem,
    };
    let n = if let Some(percent) = value.strip_suffix('%') {
        let p: usize = percent
            .trim()
            .parse()
            .map_err(|_| bad("is not a percentage"))?;
        if p == 0 || p > 100 {
            return Err(bad("must be between 1% and 100%"));
        }
        hosts * p / 100
    } else {
        let n: i64 = value
            .parse()
            .map_err(|_| bad("is not a number of hosts or a percentage"))?;
        if n <= 0 {
            return Err(bad("must be at least 1"));
        }
        n as usize
    };
    Ok(n.clamp(1, MAX_POOL))
}

/// A `max_unavailable_*` value that is not a budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("\"{value}\" {problem}")]
pub struct BudgetError {
    pub value: String,
    pub problem: &'static str,
}

/// Why one host of a rolling upgrade failed: its own step (`E`, the upgrade it was given), or
/// the cordon, drain, Ready wait, CNI wait and uncordon around it.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError<E> {
    #[error("{0}")]
    Step(E),
    #[error("{0}")]
    Api(#[from] KubeApiError),
    #[error("{0}")]
    Cni(#[from] GuardError),
    /// The budget of failed hosts is used up: this one was left alone.
    #[error(
        "not upgraded: {failed} hosts failed, which uses up the budget of {budget} \
         (upgrade_strategy.max_unavailable_*)"
    )]
    BudgetUsed { failed: usize, budget: usize },
    /// The uncordon after the upgrade failed; `first` is the upgrade's own failure, if any.
    #[error("{}", stays_cordoned(.first.as_deref(), .uncordon))]
    StaysCordoned {
        first: Option<Box<UpgradeError<E>>>,
        uncordon: KubeApiError,
    },
}

fn stays_cordoned<E: std::fmt::Display>(
    first: Option<&UpgradeError<E>>,
    uncordon: &KubeApiError,
) -> String {
    match first {
        None => format!("upgraded, but the node stays cordoned: {uncordon}"),
        Some(first) => format!("{first}; the node stays cordoned: {uncordon}"),
    }
}

/// One host of a plane, as the rolling upgrade sees it.
#[derive(Clone, Debug)]
pub struct UpgradeHost {
    pub address: String,
    /// The node name (`hostname_override` or the host's name).
    pub hostname: String,
    /// Something of this plane changes on the host.
    pub changed: bool,
    /// The host was not part of the cluster before this run.
    pub new: bool,
    /// Its kubelet runs now (so its pods are served and worth protecting).
    pub serving: bool,
}

impl crate::phases::HostName for UpgradeHost {
    fn host_name(&self) -> &str {
        &self.address
    }
}

/// How one group of hosts is upgraded.
pub struct Strategy {
    /// Hosts out of service at once, and failures tolerated before the rest is left alone.
    pub budget: usize,
    /// `Some` when `upgrade_strategy.drain` is set.
    pub drain: Option<DrainOptions>,
    /// How long an upgraded host's node may take to report Ready.
    pub ready_timeout: Duration,
    /// With a calico, canal or flannel CNI: wait for the node's CNI (pod Ready, flannel's NAT
    /// chain back) before the next host (incidents.md §1, §2).
    pub cni_wait: Option<Arc<crate::checks::guard::CniWait>>,
}

/// Upgrades `hosts` with `upgrade(address)`, which brings the host's containers to their
/// planned state. Hosts with nothing to change are still passed to `upgrade` (it checks their
/// health), in parallel and without cordon, as are the hosts there is nothing to protect on.
pub async fn rolling<F, Fut, E>(
    runner: &Runner,
    phase: &str,
    api: Option<&KubeApi>,
    hosts: Vec<UpgradeHost>,
    strategy: &Strategy,
    upgrade: F,
) -> Result<(), PhaseError>
where
    F: Fn(String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), E>> + Send,
    E: std::fmt::Display + Send,
{
    let mut direct = Vec::new();
    let mut guarded = Vec::new();
    for h in hosts {
        let protect = match api {
            Some(api) if h.changed && !h.new && h.serving => node_ready(api, &h.hostname).await,
            _ => false,
        };
        if protect {
            guarded.push(h);
        } else {
            direct.push(h);
        }
    }
    if api.is_none() && guarded.is_empty() && direct.iter().any(|h| h.changed && !h.new) {
        runner.reporter.warn(format!(
            "{phase}: the Kubernetes API cannot be reached: hosts are upgraded without cordon or drain"
        ));
    }
    let upgrade = &upgrade;
    let direct_result = runner
        .for_each_host(phase, "upgrade", direct, |h: UpgradeHost| async move {
            let result = upgrade(h.address.clone()).await.map_err(UpgradeError::Step);
            // A host upgraded straight away may still carry a cordon of an earlier failed run.
            if result.is_ok()
                && let Some(api) = api
                && node_exists(api, &h.hostname).await
            {
                api.uncordon_after_upgrade(&h.hostname).await?;
            }
            result
        })
        .await;
    let Some(api) = api else {
        return direct_result;
    };
    let failures = AtomicUsize::new(0);
    let budget = strategy.budget;
    let gate = Arc::new(Semaphore::new(budget));
    let failures = &failures;
    let guarded_result = runner
        .for_each_host_gated(
            phase,
            "rolling upgrade",
            guarded,
            Some(gate),
            |h: UpgradeHost| async move {
                let failed = failures.load(Ordering::SeqCst);
                if failed >= budget {
                    return Err(UpgradeError::BudgetUsed { failed, budget });
                }
                let result = upgrade_one(api, &h, strategy, upgrade).await;
                if result.is_err() {
                    failures.fetch_add(1, Ordering::SeqCst);
                }
                result
            },
        )
        .await;
    merge(direct_result, guarded_result)
}

/// Cordon, drain, upgrade, wait Ready, uncordon; the uncordon also happens after a failure.
async fn upgrade_one<F, Fut, E>(
    api: &KubeApi,
    h: &UpgradeHost,
    strategy: &Strategy,
    upgrade: &F,
) -> Result<(), UpgradeError<E>>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let cordon = api.cordon_for_upgrade(&h.hostname).await?;
    let mut interrupted = UncordonIfDropped {
        api,
        hostname: &h.hostname,
        armed: cordon == Cordon::ByRkers,
    };
    let result = async {
        if let Some(opts) = &strategy.drain {
            api.drain(&h.hostname, opts).await?;
        }
        upgrade(h.address.clone())
            .await
            .map_err(UpgradeError::Step)?;
        api.wait_node_ready(&h.hostname, strategy.ready_timeout)
            .await?;
        if let Some(w) = &strategy.cni_wait {
            w.wait(api, &h.hostname, &h.address).await?;
        }
        Ok(())
    }
    .await;
    let uncordoned = match cordon {
        Cordon::ByRkers if result.is_err() => uncordon_once_the_api_answers(api, &h.hostname)
            .await
            .map(drop),
        Cordon::ByRkers => api.uncordon_after_upgrade(&h.hostname).await.map(drop),
        Cordon::AlreadyCordoned => Ok(()),
    };
    interrupted.armed = false;
    if let Err(uncordon) = uncordoned {
        return Err(UpgradeError::StaysCordoned {
            first: result.err().map(Box::new),
            uncordon,
        });
    }
    result
}

/// How long an uncordon after a failed upgrade waits for the Kubernetes API: a control plane
/// host's previous kube-apiserver, put back by the failed step's undo, starts serving again
/// some seconds later (measured on the real v1.32.9 binaries: the first try, right after the
/// undo, found no API and left the node cordoned).
const UNCORDON_AFTER_FAILURE: Duration = Duration::from_secs(120);

/// Uncordons the node after its upgrade failed, asking again every 2 s while the API does not
/// answer, for at most [`UNCORDON_AFTER_FAILURE`]; the last error when it never does.
async fn uncordon_once_the_api_answers(
    api: &KubeApi,
    hostname: &str,
) -> Result<bool, KubeApiError> {
    let deadline = tokio::time::Instant::now() + UNCORDON_AFTER_FAILURE;
    loop {
        match api.uncordon_after_upgrade(hostname).await {
            Ok(done) => return Ok(done),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
}

/// A node rkers cordoned, uncordoned when its upgrade is dropped midway (the run was
/// interrupted), as after a failed upgrade.
struct UncordonIfDropped<'a> {
    api: &'a KubeApi,
    hostname: &'a str,
    armed: bool,
}

impl Drop for UncordonIfDropped<'_> {
    fn drop(&mut self) {
        if self.armed {
            let (api, hostname) = (self.api.clone(), self.hostname.to_string());
            crate::phases::interrupt::spawn_undo(async move {
                let _ = api.uncordon_after_upgrade(&hostname).await;
            });
        }
    }
}

async fn node_ready(api: &KubeApi, hostname: &str) -> bool {
    crate::kubeapi::find_node(api, hostname, 1)
        .await
        .is_ok_and(|n| crate::kubeapi::nodes::is_ready(&n))
}

async fn node_exists(api: &KubeApi, hostname: &str) -> bool {
    crate::kubeapi::find_node(api, hostname, 1).await.is_ok()
}

fn merge(a: Result<(), PhaseError>, b: Result<(), PhaseError>) -> Result<(), PhaseError> {
    match (a, b) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (
            Err(PhaseError::Hosts {
                phase,
                mut failures,
            }),
            Err(PhaseError::Hosts { failures: more, .. }),
        ) => {
            failures.extend(more);
            Err(PhaseError::Hosts { phase, failures })
        }
        (Err(e), Err(_)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The uncordon's failure is said after the upgrade's own, or alone after a success.
    #[test]
    fn a_node_left_cordoned_is_said_after_what_failed_first() {
        let gone = || KubeApiError::NodeNotFound("n1".into());
        let alone: UpgradeError<String> = UpgradeError::StaysCordoned {
            first: None,
            uncordon: gone(),
        };
        assert_eq!(
            alone.to_string(),
            "upgraded, but the node stays cordoned: node n1 not found in the cluster"
        );
        let after = UpgradeError::StaysCordoned {
            first: Some(Box::new(UpgradeError::Step("kubelet broke".to_string()))),
            uncordon: gone(),
        };
        assert_eq!(
            after.to_string(),
            "kubelet broke; the node stays cordoned: node n1 not found in the cluster"
        );
        let budget: UpgradeError<String> = UpgradeError::BudgetUsed {
            failed: 2,
            budget: 2,
        };
        assert_eq!(
            budget.to_string(),
            "not upgraded: 2 hosts failed, which uses up the budget of 2 \
             (upgrade_strategy.max_unavailable_*)"
        );
    }

    #[test]
    fn percentages_round_down_but_never_to_zero() {
        assert_eq!(max_unavailable("10%", 3), Ok(1));
        assert_eq!(max_unavailable("10%", 25), Ok(2));
        assert_eq!(max_unavailable("50%", 9), Ok(4));
        assert_eq!(max_unavailable("100%", 4), Ok(4));
    }

    #[test]
    fn counts_are_taken_as_given_up_to_fifty() {
        assert_eq!(max_unavailable("1", 10), Ok(1));
        assert_eq!(max_unavailable("3", 2), Ok(3));
        assert_eq!(max_unavailable("80", 200), Ok(50));
        assert_eq!(max_unavailable("100%", 200), Ok(50));
    }

    #[test]
    fn zero_negative_and_garbage_are_refused() {
        assert!(max_unavailable("0", 3).is_err());
        assert!(max_unavailable("-1", 3).is_err());
        assert!(max_unavailable("0%", 3).is_err());
        assert!(max_unavailable("abc", 3).is_err());
        assert!(max_unavailable("150%", 3).is_err());
    }
}
