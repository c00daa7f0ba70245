//! The one-minor rule: Kubernetes supports moving a control plane one minor at a time, up only.
//! Decides, from the version the cluster runs (its state) and cluster.yml's, whether `up` may
//! go ahead and, when it may not, the path to take.

use crate::metadata::K8sVersion;

/// What a run does to the cluster's minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinorStep {
    /// Same minor (a patch or `-rancher` release change, or nothing).
    Same,
    /// To the next minor: the only move across minors Kubernetes supports.
    Next { from: (u64, u64), to: (u64, u64) },
}

/// A version move the control plane cannot make in one run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MinorStepError {
    #[error(
        "kubernetes_version {target} is {skipped} minors ahead of {current}, which the cluster \
         runs: Kubernetes upgrades the control plane one minor at a time. Take the path {}: set \
         kubernetes_version to each version in turn and run `rkers up` once per minor",
        path.join(" → ")
    )]
    Skip {
        current: String,
        target: String,
        skipped: u64,
        /// Each minor on the way: the newest known version of it, or `vX.Y`.
        path: Vec<String>,
    },
    #[error(
        "kubernetes_version {target} is older than {current}, which the cluster runs: \
         Kubernetes does not support moving a control plane back to an older minor (etcd holds \
         objects in the newer API server's storage versions, which the older one may not read). \
         Keep kubernetes_version at a v{}.{} version, or bring the cluster back with `rkers etcd \
         snapshot-restore` from a snapshot taken before the upgrade",
        current_minor.0, current_minor.1
    )]
    Downgrade {
        current: String,
        target: String,
        current_minor: (u64, u64),
    },
}

/// Whether the cluster may move from `current` (its state's version) to `target`
/// (cluster.yml's). `known` are the versions the metadata knows, to name a version of each
/// minor on the path.
pub fn minor_step(
    current: &K8sVersion,
    target: &K8sVersion,
    known: &[String],
) -> Result<MinorStep, MinorStepError> {
    let from = (current.major(), current.minor());
    let to = (target.major(), target.minor());
    if from == to {
        return Ok(MinorStep::Same);
    }
    if to < from {
        return Err(MinorStepError::Downgrade {
            current: current.to_string(),
            target: target.to_string(),
            current_minor: from,
        });
    }
    if from.0 == to.0 && to.1 == from.1 + 1 {
        return Ok(MinorStep::Next { from, to });
    }
    // Kubernetes has had one major; across majors only the end points are named.
    let mut path = vec![current.to_string()];
    if from.0 == to.0 {
        for minor in from.1 + 1..to.1 {
            path.push(
                newest_of_minor(known, from.0, minor).unwrap_or(format!("v{}.{minor}", from.0)),
            );
        }
    }
    path.push(target.to_string());
    Err(MinorStepError::Skip {
        current: current.to_string(),
        target: target.to_string(),
        skipped: if from.0 == to.0 { to.1 - from.1 } else { 0 },
        path,
    })
}

/// The newest of `known` in minor `major.minor`.
fn newest_of_minor(known: &[String], major: u64, minor: u64) -> Option<String> {
    known
        .iter()
        .filter_map(|v| K8sVersion::parse(v).ok())
        .filter(|v| v.major() == major && v.minor() == minor)
        .max()
        .map(|v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> K8sVersion {
        K8sVersion::parse(s).unwrap()
    }

    fn known() -> Vec<String> {
        [
            "v1.21.14-rancher1-1",
            "v1.21.9-rancher1-1",
            "v1.22.17-rancher1-2",
            "v1.29.4-rancher1-1",
            "v1.29.10-rancher1-1",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn same_minor_and_next_minor_go_ahead() {
        let step = |a, b| minor_step(&v(a), &v(b), &known());
        assert_eq!(
            step("v1.20.15-rancher2-2", "v1.20.15-rancher2-3"),
            Ok(MinorStep::Same)
        );
        // A patch downgrade within the minor is not this rule's business.
        assert_eq!(
            step("v1.20.15-rancher2-2", "v1.20.9-rancher1-1"),
            Ok(MinorStep::Same)
        );
        assert_eq!(
            step("v1.20.15-rancher2-2", "v1.21.9-rancher1-1"),
            Ok(MinorStep::Next {
                from: (1, 20),
                to: (1, 21)
            })
        );
    }

    #[test]
    fn skipping_a_minor_is_refused_with_the_path() {
        let e = minor_step(
            &v("v1.20.15-rancher2-2"),
            &v("v1.22.17-rancher1-2"),
            &known(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            MinorStepError::Skip {
                current: "v1.20.15-rancher2-2".into(),
                target: "v1.22.17-rancher1-2".into(),
                skipped: 2,
                path: vec![
                    "v1.20.15-rancher2-2".into(),
                    "v1.21.14-rancher1-1".into(),
                    "v1.22.17-rancher1-2".into()
                ],
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("v1.20.15-rancher2-2 → v1.21.14-rancher1-1 → v1.22.17-rancher1-2"),
            "{text}"
        );
        assert!(text.contains("once per minor"), "{text}");
        // A minor the metadata does not know is named by its number.
        let e = minor_step(&v("v1.28.15-rancher1-1"), &v("v1.30.14-rancher1-1"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v1.28.15-rancher1-1 → v1.29 → v1.30.14-rancher1-1"),
            "{e}"
        );
        // The newest patch of an intermediate minor is the one named.
        let e = minor_step(
            &v("v1.28.15-rancher1-1"),
            &v("v1.30.14-rancher1-1"),
            &known(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("→ v1.29.10-rancher1-1 →"), "{e}");
    }

    #[test]
    fn moving_back_a_minor_is_refused_with_the_reason() {
        for target in ["v1.20.15-rancher2-2", "v1.19.16-rancher1-1"] {
            let e = minor_step(&v("v1.21.14-rancher1-1"), &v(target), &known()).unwrap_err();
            assert!(matches!(e, MinorStepError::Downgrade { .. }), "{e:?}");
            let text = e.to_string();
            assert!(text.contains("older minor"), "{text}");
            assert!(
                text.contains("Keep kubernetes_version at a v1.21 version"),
                "{text}"
            );
        }
    }
}
