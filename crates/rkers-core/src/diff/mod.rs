//! Desired vs observed state of each host, giving the list of actions to take.
//!
//! Containers are compared the way RKE1 compares them (§22.1), so that a cluster RKE1 built is
//! adopted without restarts: image name, entrypoint, command, binds and security options as sets,
//! and the environment as a set after adding the image's own default environment. Fields RKE1
//! does not compare (labels, network and PID mode, privileged, restart policy, user, ports) are
//! not compared here either (§33.16).
//!
//! One deliberate difference (§33.17): RKE1 starts a stopped container without comparing it, so
//! a stopped kube-apiserver with outdated flags comes back outdated. rkers compares stopped
//! containers too and recreates them when they differ. Starting a stopped container never
//! restarts a running one, so adopted clusters are unaffected.

mod action;
pub mod cert_rotation;
mod content;
pub mod doctor_fix;
pub mod encryption;
pub mod key_rotation;
pub mod minor;
pub mod readers;
mod reasons;
pub mod removal;
pub mod removed_apis;
pub mod snapshot;
pub mod up;

pub use action::{
    Action, HealthProbe, HostActions, Sealed, UndoCheck, keep_until_node_ready, kubelet_runs,
    node_ready_wait, render_dry_run, undo_check,
};
pub use content::same_file_content;
pub use reasons::{newer_default_for_change, newer_default_for_file};

use std::collections::BTreeSet;

/// The fields of a container that decide whether it must be recreated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerView {
    pub image: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub binds: Vec<String>,
    pub security_opt: Vec<String>,
}

/// A container as found on a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedContainer {
    pub id: String,
    pub running: bool,
    pub restarting: bool,
    pub config: ContainerView,
}

/// One field that differs, for the dry-run output and the event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldChange {
    pub field: &'static str,
    /// Values only the desired side has.
    pub added: Vec<String>,
    /// Values only the running container has.
    pub removed: Vec<String>,
    /// Why, when the change comes from a default of newer RKE releases rather than cluster.yml.
    pub why: Option<&'static str>,
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:", self.field)?;
        for a in &self.added {
            write!(f, " +{a}")?;
        }
        for r in &self.removed {
            write!(f, " -{r}")?;
        }
        if let Some(why) = self.why {
            write!(f, " ({why})")?;
        }
        Ok(())
    }
}

/// Nothing is "don't care"; the default for every container but etcd.
pub fn nothing(_: &str) -> bool {
    false
}

/// How the desired container compares with what runs on the host. Arguments for which
/// `dont_care` is true are left out of the comparison (etcd's `--initial-cluster*` flags, which
/// RKE1 flips between a member add and the next run while etcd ignores them, §33.6).
///
/// `images` are the default environments of the images involved as the host's Docker reports
/// them; when the desired image is not on the host the container is recreated, as in RKE1 (a
/// new image is needed anyway).
pub fn compare(
    desired: &ContainerView,
    observed: &ContainerView,
    images: ImageEnvs,
    dont_care: fn(&str) -> bool,
) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    if desired.image != observed.image || images.desired.is_none() {
        changes.push(FieldChange {
            field: "image",
            added: vec![desired.image.clone()],
            removed: if desired.image != observed.image {
                vec![observed.image.clone()]
            } else {
                Vec::new()
            },
            why: None,
        });
    }
    let keep = |v: &String| !dont_care(v);
    let mut set_field = |field, want: &[String], have: &[String], want_extra: &[String]| {
        let want: BTreeSet<&String> = want.iter().chain(want_extra).filter(|v| keep(v)).collect();
        let have: BTreeSet<&String> = have.iter().filter(|v| keep(v)).collect();
        if want != have {
            // A credential's value (a registry's docker config, an S3 key) is never shown, old
            // or new: the change says only that it changed.
            let shown = |v: &&String| crate::redact::mask_secret_assignment(v);
            changes.push(FieldChange {
                field,
                added: want.difference(&have).map(shown).collect(),
                removed: have.difference(&want).map(shown).collect(),
                why: None,
            });
        }
    };
    set_field("entrypoint", &desired.entrypoint, &observed.entrypoint, &[]);
    set_field("cmd", &desired.cmd, &observed.cmd, &[]);
    match images.desired {
        Some(image_env) => set_field("env", &desired.env, &observed.env, image_env),
        None => {
            // What the new image brings is known once it is pulled: until then the change shows
            // only the variables set for the container, never the old image's own (its `PATH`)
            // as removed, which the new container gets again from its image.
            let from_image = |v: &&String| {
                !desired.env.contains(v) && images.running.is_none_or(|env| env.contains(v))
            };
            let set: Vec<String> = observed
                .env
                .iter()
                .filter(|v| !from_image(v))
                .cloned()
                .collect();
            set_field("env", &desired.env, &set, &[]);
        }
    }
    set_field("binds", &desired.binds, &observed.binds, &[]);
    let want_sec: BTreeSet<&String> = desired.security_opt.iter().collect();
    let have_sec: BTreeSet<&String> = observed.security_opt.iter().collect();
    let added: Vec<String> = want_sec
        .difference(&have_sec)
        .map(|s| s.to_string())
        .collect();
    let removed: Vec<String> = have_sec
        .difference(&want_sec)
        .map(|s| s.to_string())
        .collect();
    // RKE1 tolerates exactly one difference: `label=disable` present on one side only.
    let only_label_disable = |v: &[String]| v.iter().all(|s| s == "label=disable");
    if !(only_label_disable(&added) && only_label_disable(&removed)) {
        changes.push(FieldChange {
            field: "security_opt",
            added,
            removed,
            why: None,
        });
    }
    changes
}

/// The default environments of the images a container comparison involves, as far as the host
/// has them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageEnvs<'a> {
    /// The desired image's, or `None` when the host lacks it (it is pulled first).
    pub desired: Option<&'a [String]>,
    /// The image the container runs now, when the desired one is missing: its variables in the
    /// running container came from it, not from the container's settings. `None` when unknown
    /// (then every variable not set for the new container is taken to be the image's).
    pub running: Option<&'a [String]>,
}

impl<'a> ImageEnvs<'a> {
    /// The desired image is on the host, with this environment.
    pub fn present(env: &'a [String]) -> ImageEnvs<'a> {
        ImageEnvs {
            desired: Some(env),
            running: None,
        }
    }
}

/// The action that brings one container to its desired state, or `None` when it is in it.
pub fn container_action(
    name: &str,
    spec: &crate::plan::ContainerSpec,
    desired: &ContainerView,
    start: bool,
    observed: Option<&ObservedContainer>,
    images: ImageEnvs,
    dont_care: fn(&str) -> bool,
) -> Option<Action> {
    let Some(observed) = observed else {
        return Some(Action::CreateContainer {
            name: name.to_string(),
            image: desired.image.clone(),
            start,
            spec: Box::new(spec.clone()),
        });
    };
    let mut changes = compare(desired, &observed.config, images, dont_care);
    for change in &mut changes {
        change.why = newer_default_for_change(name, change);
    }
    if !changes.is_empty() {
        return Some(Action::RecreateContainer {
            name: name.to_string(),
            changes,
            start,
            spec: Box::new(spec.clone()),
            until_node_ready: None,
        });
    }
    if start && !observed.running {
        return Some(Action::StartContainer {
            name: name.to_string(),
        });
    }
    if start && observed.restarting {
        return Some(Action::RestartContainer {
            name: name.to_string(),
            reason: "Docker reports it restarting".into(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn kubelet() -> ContainerView {
        ContainerView {
            image: "rancher/hyperkube:v1.31.1-rancher1".into(),
            entrypoint: strings(&[
                "/opt/rke-tools/entrypoint.sh",
                "kubelet",
                "--v=2",
                "--address=0.0.0.0",
            ]),
            cmd: vec![],
            env: strings(&["RKE_KUBELET_DOCKER_FILE=/var/lib/kubelet/config.json"]),
            binds: strings(&[
                "/etc/kubernetes:/etc/kubernetes",
                "/var/run:/var/run:rw,rprivate",
            ]),
            security_opt: vec![],
        }
    }

    #[test]
    fn a_changed_registry_password_is_shown_only_as_changed() {
        let mut desired = kubelet();
        desired
            .env
            .push("RKE_KUBELET_DOCKER_CONFIG=bmV3OnBhc3N3b3Jk".into());
        desired.cmd.push("--registry-password=new-secret".into());
        let mut observed = kubelet();
        observed
            .env
            .push("RKE_KUBELET_DOCKER_CONFIG=b2xkOnBhc3N3b3Jk".into());
        observed.cmd.push("--registry-password=old-secret".into());
        let changes = compare(&desired, &observed, ImageEnvs::present(&[]), nothing);
        let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
        let text = shown.join("\n");
        for secret in [
            "bmV3OnBhc3N3b3Jk",
            "b2xkOnBhc3N3b3Jk",
            "new-secret",
            "old-secret",
        ] {
            assert!(!text.contains(secret), "{secret} shown in {text}");
        }
        assert!(
            text.contains(
                "env: +RKE_KUBELET_DOCKER_CONFIG=[REDACTED] -RKE_KUBELET_DOCKER_CONFIG=[REDACTED]"
            ),
            "{text}"
        );
        assert!(
            text.contains("cmd: +--registry-password=[REDACTED]"),
            "{text}"
        );
    }

    #[test]
    fn order_of_flags_binds_and_env_does_not_matter() {
        let desired = kubelet();
        let mut observed = kubelet();
        observed.entrypoint.swap(2, 3);
        observed.binds.reverse();
        observed.env.insert(0, "PATH=/usr/bin".into());
        let image_env = strings(&["PATH=/usr/bin"]);
        assert!(compare(&desired, &observed, ImageEnvs::present(&image_env), nothing).is_empty());
    }

    #[test]
    fn image_env_counts_as_desired() {
        let desired = kubelet();
        let mut observed = kubelet();
        observed.env.push("PATH=/usr/bin".into());
        let changes = compare(&desired, &observed, ImageEnvs::present(&[]), nothing);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].field, "env");
        assert_eq!(changes[0].removed, ["PATH=/usr/bin"]);
    }

    #[test]
    fn changed_flag_is_reported_with_both_values() {
        let desired = kubelet();
        let mut observed = kubelet();
        observed.entrypoint[2] = "--v=4".into();
        let changes = compare(&desired, &observed, ImageEnvs::present(&[]), nothing);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].to_string(), "entrypoint: +--v=2 ---v=4");
    }

    #[test]
    fn missing_image_on_host_means_recreate() {
        let changes = compare(&kubelet(), &kubelet(), ImageEnvs::default(), nothing);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].field, "image");
    }

    /// An upgrade whose image is not on the host yet: the old image's `PATH` is not shown as
    /// removed (the new container gets the new image's), a variable the container no longer
    /// sets is, and one it newly sets is shown as added.
    #[test]
    fn with_the_new_image_missing_the_env_change_is_the_containers_own() {
        let mut desired = kubelet();
        desired.image = "rancher/hyperkube:v1.33.5".into();
        desired.env.push("RKE_NEW=1".into());
        let mut observed = kubelet();
        observed.env.push("PATH=/old/image/path".into());
        observed.env.push("RKE_GONE=1".into());
        let old_image = strings(&["PATH=/old/image/path"]);
        let images = ImageEnvs {
            desired: None,
            running: Some(&old_image),
        };
        let changes: Vec<String> = compare(&desired, &observed, images, nothing)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            changes,
            [
                format!("image: +rancher/hyperkube:v1.33.5 -{}", kubelet().image),
                "env: +RKE_NEW=1 -RKE_GONE=1".to_string()
            ]
        );
        // The old image's environment unknown too: only what the container newly sets.
        let unknown = ImageEnvs::default();
        let changes: Vec<String> = compare(&desired, &observed, unknown, nothing)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(changes[1], "env: +RKE_NEW=1");
    }

    #[test]
    fn label_disable_alone_is_not_a_difference() {
        let desired = kubelet();
        let mut observed = kubelet();
        observed.security_opt.push("label=disable".into());
        assert!(compare(&desired, &observed, ImageEnvs::present(&[]), nothing).is_empty());
        observed
            .security_opt
            .push("label=type:rke_container_t".into());
        assert_eq!(
            compare(&desired, &observed, ImageEnvs::present(&[]), nothing).len(),
            1
        );
    }

    #[test]
    fn etcd_initial_cluster_flags_are_dont_care() {
        let mut desired = kubelet();
        desired.cmd = strings(&[
            "/usr/local/bin/etcd",
            "--initial-cluster=etcd-a=https://a:2380",
            "--initial-cluster-state=new",
        ]);
        let mut observed = desired.clone();
        observed.cmd = strings(&[
            "/usr/local/bin/etcd",
            "--initial-cluster=etcd-a=https://a:2380,etcd-b=https://b:2380",
            "--initial-cluster-state=existing",
        ]);
        assert!(
            compare(
                &desired,
                &observed,
                ImageEnvs::present(&[]),
                crate::plan::is_etcd_dont_care_arg
            )
            .is_empty()
        );
        assert_eq!(
            compare(&desired, &observed, ImageEnvs::present(&[]), nothing).len(),
            1
        );
    }

    #[test]
    fn stopped_container_with_changed_config_is_recreated_not_started() {
        let desired = kubelet();
        let mut cfg = kubelet();
        cfg.entrypoint.push("--old-flag=1".into());
        let observed = ObservedContainer {
            id: "abc".into(),
            running: false,
            restarting: false,
            config: cfg,
        };
        let action = container_action(
            "kubelet",
            &Default::default(),
            &desired,
            true,
            Some(&observed),
            ImageEnvs::present(&[]),
            nothing,
        );
        assert!(
            matches!(action, Some(Action::RecreateContainer { .. })),
            "{action:?}"
        );
    }

    #[test]
    fn stopped_unchanged_container_is_started_and_running_one_left_alone() {
        let desired = kubelet();
        let mut observed = ObservedContainer {
            id: "abc".into(),
            running: false,
            restarting: false,
            config: kubelet(),
        };
        let action = container_action(
            "kubelet",
            &Default::default(),
            &desired,
            true,
            Some(&observed),
            ImageEnvs::present(&[]),
            nothing,
        );
        assert!(
            matches!(action, Some(Action::StartContainer { .. })),
            "{action:?}"
        );
        observed.running = true;
        assert_eq!(
            container_action(
                "kubelet",
                &Default::default(),
                &desired,
                true,
                Some(&observed),
                ImageEnvs::present(&[]),
                nothing
            ),
            None
        );
    }

    #[test]
    fn created_only_sidekick_is_not_started() {
        let desired = kubelet();
        let observed = ObservedContainer {
            id: "abc".into(),
            running: false,
            restarting: false,
            config: kubelet(),
        };
        assert_eq!(
            container_action(
                "service-sidekick",
                &Default::default(),
                &desired,
                false,
                Some(&observed),
                ImageEnvs::present(&[]),
                nothing
            ),
            None
        );
    }
}
