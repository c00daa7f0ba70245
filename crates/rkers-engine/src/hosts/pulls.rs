//! The cap on image pulls per registry, shared by every pull of the process: `up` starts the
//! pulls of every host at once, and at most [`PULLS_PER_REGISTRY`] of them talk to the same
//! registry at a time, whichever hosts they are for. Thirty hosts pulling the same images from
//! one private registry would otherwise open thirty times Docker's three layer downloads at
//! once against it, and the registry (often a small mirror next to the cluster) is what gives way.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Pulls one registry serves at once. Each pull is itself up to three layer downloads (Docker's
/// `max-concurrent-downloads`), so a registry sees at most about 18 blob transfers from one
/// run; hosts whose turn has not come wait in the order they asked (the semaphore is fair).
pub const PULLS_PER_REGISTRY: usize = 6;

/// The registry host an image is pulled from: its first path component when that names a host
/// (has a dot or a port, or is `localhost`), else Docker Hub.
pub fn registry_host(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            first
        }
        _ => "docker.io",
    }
}

/// One fair semaphore per registry host.
pub struct PullGate {
    limit: usize,
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
}

static GLOBAL: LazyLock<PullGate> = LazyLock::new(|| PullGate::new(PULLS_PER_REGISTRY));

impl PullGate {
    pub fn new(limit: usize) -> Self {
        PullGate {
            limit: limit.max(1),
            gates: Mutex::new(HashMap::new()),
        }
    }

    /// The gate every pull of this process goes through.
    pub fn global() -> &'static PullGate {
        &GLOBAL
    }

    /// Waits for a turn at `image`'s registry; the turn lasts as long as the permit.
    pub async fn permit(&self, image: &str) -> OwnedSemaphorePermit {
        let gate = self
            .gates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(registry_host(image).to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.limit)))
            .clone();
        gate.acquire_owned().await.expect("pull gate never closed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn images_map_to_their_registry_host() {
        assert_eq!(registry_host("rancher/rke-tools:v0.1.89"), "docker.io");
        assert_eq!(registry_host("alpine"), "docker.io");
        assert_eq!(
            registry_host("10.77.0.1:5000/rkers/etcd:v3"),
            "10.77.0.1:5000"
        );
        assert_eq!(registry_host("quay.io/coreos/flannel:v0.15"), "quay.io");
        assert_eq!(registry_host("localhost/pause:3.2"), "localhost");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_registry_is_capped_on_its_own() {
        let gate = Arc::new(PullGate::new(2));
        let busy: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let peak: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let pulls = (0..12).map(|i| {
            let (gate, busy, peak) = (gate.clone(), busy.clone(), peak.clone());
            let (r, image) = if i % 2 == 0 {
                (0, format!("reg.example:5000/img{i}:v1"))
            } else {
                (1, format!("rancher/img{i}:v1"))
            };
            tokio::spawn(async move {
                let _turn = gate.permit(&image).await;
                let now = busy[r].fetch_add(1, Ordering::SeqCst) + 1;
                peak[r].fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                busy[r].fetch_sub(1, Ordering::SeqCst);
            })
        });
        for p in futures::future::join_all(pulls).await {
            p.unwrap();
        }
        // Both registries ran two pulls at a time, never more, and independently.
        assert_eq!(peak[0].load(Ordering::SeqCst), 2);
        assert_eq!(peak[1].load(Ordering::SeqCst), 2);
    }
}
