//! The actions of one host: its desired files and containers against what it holds and runs
//! (files, least privilege on keys, images, wins, containers, restarts for changed
//! certificates, containers its roles no longer ask for).

use super::rolling::changes_container;
use super::run::{EARLY_WORKER_PLANE, KNOWN_CONTAINERS, Observed, WORKER_PLANE};
use crate::diff::{self, Action, ContainerView};
use crate::hosts;
use crate::phases::files::{self, DesiredFile};
use crate::plan::{self, HostPlan};
use rkers_core::diff::readers::restart_reasons_under;
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn view(spec: &plan::ContainerSpec) -> ContainerView {
    ContainerView {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        security_opt: spec.security_opt.clone(),
    }
}

pub(super) fn observed_view(c: &hosts::ObservedContainer) -> diff::ObservedContainer {
    diff::ObservedContainer {
        id: c.id.clone(),
        running: c.running,
        restarting: c.restarting,
        config: ContainerView {
            image: c.image.clone(),
            entrypoint: c.entrypoint.clone(),
            cmd: c.cmd.clone(),
            env: c.env.clone(),
            binds: c.binds.clone(),
            security_opt: c.security_opt.clone(),
        },
    }
}

/// Puts one host's actions in the order `up` applies them, which is what the dry run shows:
/// what comes before any change (the pre-change snapshot, stale `old-…` containers), files (every host at once), calico's directories, images; on a new cluster's Linux
/// host (`early_workers`) its [`EARLY_WORKER_PLANE`]; wins; etcd members leaving (their etcd
/// containers with them), then joining; then the containers plane by plane, in the order of
/// `planes` (the host's etcd, control and worker planes) and of each plane's list, a Windows
/// worker's orphan sweep ahead of its worker plane. The sort is stable: actions of one rank
/// keep their order.
pub(crate) fn in_run_order(actions: &mut [Action], early_workers: bool, planes: &[&[&str]]) {
    let container_of = |a: &Action| match a {
        Action::CreateContainer { name, .. }
        | Action::RecreateContainer { name, .. }
        | Action::StartContainer { name }
        | Action::RestartContainer { name, .. }
        | Action::RemoveContainer { name, .. } => Some(name.clone()),
        _ => None,
    };
    let in_planes = |name: &str| {
        planes.iter().enumerate().find_map(|(i, plane)| {
            // 0 is the place before the plane's first container.
            plane
                .iter()
                .position(|n| *n == name)
                .map(|at| (10 + i, at + 1))
        })
    };
    let rank = |a: &Action| -> (usize, usize) {
        match a {
            _ if super::snapshot::before_changes(a) => (0, 0),
            Action::UploadFile { .. }
            | Action::RemoveFile { .. }
            | Action::SetFileMode { .. }
            | Action::CreateDirectories { .. } => (0, 1),
            Action::EnsureCniDirectory { .. } | Action::WriteTmpfilesEntry { .. } => (1, 0),
            Action::PullImage { .. } => (2, 0),
            // A member leaving: its etcd containers and data directory go with it.
            Action::RemoveEtcdMember { .. } | Action::CleanDirectories { .. } => (5, 0),
            Action::AddEtcdMember { .. } | Action::AddEtcdLearner { .. } => (6, 0),
            // Once its etcd runs: planned after that container, which has the same rank.
            Action::PromoteEtcdMember { .. } => in_planes(plan::ETCD).unwrap_or((20, 0)),
            // After every container it links the logs of.
            Action::LinkLogs { .. } => (30, 0),
            // Right before the etcd container it prepares (listed just before it).
            Action::FixEtcdPermissions { .. } => in_planes(plan::ETCD).unwrap_or((20, 0)),
            // Before the worker plane has wins start anything.
            Action::SweepWindowsOrphans { .. } => in_planes(plan::KUBELET)
                .map(|(p, _)| (p, 0))
                .unwrap_or((20, 0)),
            _ => match container_of(a) {
                Some(n) if early_workers && EARLY_WORKER_PLANE.contains(&n.as_str()) => (3, 0),
                // A host leaving etcd loses its etcd containers with its membership.
                Some(n)
                    if matches!(a, Action::RemoveContainer { .. }) && in_planes(&n).is_none() =>
                {
                    (5, 0)
                }
                Some(n) => in_planes(&n).unwrap_or((20, 0)),
                None => (4, 0),
            },
        }
    };
    actions.sort_by_key(rank);
}

pub(super) fn host_actions(
    h: &HostPlan,
    obs: &Observed,
    desired_files: &[DesiredFile],
    loaded: &[DesiredFile],
) -> Vec<Action> {
    let mut actions = Vec::new();
    let platform = obs.platform;
    let root = platform.files_root(h);
    // What the host agent found of a Windows worker: its missing directories and wins.
    let windows = obs.windows.as_ref();
    if let Some(w) = windows
        && !w.missing_directories.is_empty()
    {
        actions.push(Action::CreateDirectories {
            paths: w.missing_directories.clone(),
        });
    }
    let changed_files = files::changed(desired_files, &obs.files);
    for f in &changed_files {
        let new = !obs.files.contains_key(&f.relative_path);
        let mut reason = if new { "new" } else { "changed" }.to_string();
        if let Some(why) = diff::newer_default_for_file(&f.relative_path, new) {
            reason = format!("{reason}; {why}");
        }
        actions.push(Action::UploadFile {
            path: plan::join_path(&[&root, &f.relative_path]),
            reason,
            file: Box::new((*f).clone()),
        });
    }
    // Files the plan no longer asks for, or asks for empty, are deleted as RKE1's deployer does;
    // a path some container's flags still name was put there by the user and stays.
    let flags_name = |path: &str| {
        h.containers
            .values()
            .any(|c| c.entrypoint.iter().chain(&c.cmd).any(|a| a.contains(path)))
    };
    for path in plan::optional_files(h.roles.controlplane) {
        let planned = h
            .files
            .iter()
            .find(|f| f.container_path == *path)
            .is_some_and(|f| !f.contents.is_empty());
        if let Some(rel) = platform.relative_path(h, path)
            && !planned
            && obs.files.contains_key(rel)
            && !flags_name(path)
        {
            actions.push(Action::RemoveFile {
                path: plan::join_path(&[&root, rel]),
                reason: "no longer configured".into(),
            });
        }
    }
    let uploaded: BTreeSet<&str> = changed_files
        .iter()
        .map(|f| f.relative_path.as_str())
        .collect();
    actions.extend(least_privilege_actions(
        h,
        obs,
        desired_files,
        &uploaded,
        &root,
        flags_name,
    ));
    let mut pulls = BTreeSet::new();
    for spec in h.containers.values() {
        if obs.images.get(&spec.image).is_none_or(|e| e.is_none()) {
            pulls.insert(spec.image.clone());
        }
    }
    actions.extend(pulls.into_iter().map(|image| Action::PullImage { image }));
    // In the order `up` takes them: wins comes out of an image pulled just before.
    if let Some(w) = windows {
        actions.extend(wins_actions(h, w, desired_files, &obs.files));
    }
    for (name, spec) in &h.containers {
        let observed = obs.containers.get(name).map(observed_view);
        let image_env = obs.images.get(&spec.image).cloned().flatten();
        let running_env = observed
            .as_ref()
            .and_then(|o| obs.images.get(&o.config.image).cloned().flatten());
        let images = diff::ImageEnvs {
            desired: image_env.as_deref(),
            running: running_env.as_deref(),
        };
        let dont_care: fn(&str) -> bool = if name == plan::ETCD {
            plan::is_etcd_dont_care_arg
        } else {
            diff::nothing
        };
        if let Some(a) = diff::container_action(
            name,
            spec,
            &view(spec),
            spec.start,
            observed.as_ref(),
            images,
            dont_care,
        ) {
            if name == plan::ETCD && matches!(a, Action::CreateContainer { .. }) {
                // RKE1's etcd-fix-perm: a new etcd starts on a private data directory.
                actions.push(Action::FixEtcdPermissions {
                    path: plan::join_path(&[&h.prefix_path, "/var/lib/etcd"]),
                    empty_first: false,
                    in_host_shell: obs.root_shell,
                });
            }
            actions.push(a);
        }
    }
    // A certificate that changed in place is only read again when its container restarts
    // (§22.2 step 6); containers already being created or recreated need nothing more.
    let touched: BTreeSet<String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateContainer { name, .. }
            | Action::RecreateContainer { name, .. }
            | Action::StartContainer { name } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let restarts =
        restart_reasons_under(platform.kubernetes_dir(), desired_files, loaded, &obs.files);
    for (name, reason) in restarts {
        let running = obs.containers.get(name).is_some_and(|c| c.running);
        if running && h.containers.contains_key(name) && !touched.contains(name) {
            actions.push(Action::RestartContainer {
                name: name.to_string(),
                reason,
            });
        }
    }
    for name in KNOWN_CONTAINERS {
        if obs.containers.contains_key(*name) && !h.containers.contains_key(*name) {
            actions.push(Action::RemoveContainer {
                name: name.to_string(),
                reason: "not planned for this host's roles".into(),
            });
        }
    }
    actions.extend(super::snapshot::stale_old_containers(obs));
    replaced_by_worker_plane(&mut actions);
    // A Windows worker whose worker plane changes: wins is about to start processes, and one
    // that outlived its wins server makes every start fail at wins' rename (windows-wins.md
    // §5.3). A run that changes none of its containers runs no sweep either.
    if platform.runs_under_wins()
        && let Some(sidekick) = h.containers.get(plan::SERVICE_SIDEKICK)
        && actions.iter().any(|a| changes_container(a, WORKER_PLANE))
    {
        actions.push(Action::SweepWindowsOrphans {
            image: sidekick.image.clone(),
        });
    }
    actions
}

/// Least privilege on the host's files (issue 21): private keys none of the host's containers
/// read are deleted (RKE1 and rkers before it gave every node every node's kubelet pair and
/// every etcd node every member's pair), and the planned files that must be private get their
/// mode and owner. Neither restarts anything: the content the containers read stays the same.
/// A key some container's flags name was put there by the user and stays.
pub(super) fn least_privilege_actions(
    h: &HostPlan,
    obs: &Observed,
    desired_files: &[DesiredFile],
    // The files this run uploads: they get the planned mode from the archive, owned by root.
    uploaded: &BTreeSet<&str>,
    root: &str,
    flags_name: impl Fn(&str) -> bool,
) -> Vec<Action> {
    let platform = obs.platform;
    // Paths as Linux keeps them, relative to /etc/kubernetes.
    let view = |rel: &str| platform.kubernetes_path(rel).map(str::to_string);
    let desired: BTreeSet<&str> = desired_files
        .iter()
        .map(|f| f.relative_path.as_str())
        .collect();
    let mut actions = Vec::new();
    for rel in obs.files.keys() {
        let Some(linux_path) = view(rel) else {
            continue;
        };
        if plan::permissions::is_private_key(&linux_path)
            && !desired.contains(rel.as_str())
            && !flags_name(&format!("/etc/kubernetes/{linux_path}"))
        {
            actions.push(Action::RemoveFile {
                path: plan::join_path(&[root, rel]),
                reason: "private key no container on this host reads".into(),
            });
        }
    }
    if !platform.sets_file_modes() {
        // Windows files are protected by their ACL, set when they are written.
        return actions;
    }
    let etcd_user =
        plan::permissions::etcd_user(h.containers.get(plan::ETCD).and_then(|c| c.user.as_deref()));
    for f in desired_files {
        let Some(want) = plan::permissions::required(&f.relative_path, etcd_user) else {
            continue;
        };
        // An uploaded file gets the planned mode from the archive, owned by root.
        let have = if uploaded.contains(f.relative_path.as_str()) {
            Some(files::FileMeta {
                mode: f.mode,
                uid: 0,
                gid: 0,
            })
        } else {
            obs.file_meta.get(&f.relative_path).copied()
        };
        let Some(have) = have else {
            continue;
        };
        if (have.mode, have.uid, have.gid) != (want.mode, want.uid, want.gid) {
            actions.push(Action::SetFileMode {
                path: plan::join_path(&[root, &f.relative_path]),
                mode: want.mode,
                uid: want.uid,
                gid: want.gid,
                was: format!("{:04o} {}:{}", have.mode, have.uid, have.gid),
            });
        }
    }
    actions
}

/// What a Windows worker needs of wins: the binary, the service registered and running, and a
/// restart when its config (the process whitelist) changes.
pub(super) fn wins_actions(
    h: &HostPlan,
    w: &crate::phases::windows::WindowsObserved,
    desired_files: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if !w.wins.exe_present
        && let Some(sidekick) = h.containers.get(plan::SERVICE_SIDEKICK)
    {
        actions.push(Action::InstallWins {
            image: sidekick.image.clone(),
            path: crate::phases::windows::wins_exe_path(),
        });
    }
    let config = plan::WINS_CONFIG_PATH
        .strip_prefix(h.prefix_path.as_str())
        .unwrap_or(plan::WINS_CONFIG_PATH);
    let config_changes = desired_files.iter().any(|f| {
        f.relative_path == config
            && !on_disk
                .get(config)
                .is_some_and(|c| diff::same_file_content(config, &f.contents, c))
    });
    let start = if !w.wins.registered() {
        Some((true, false, "not registered yet".to_string()))
    } else if config_changes && w.wins.running() {
        Some((false, true, "its config changes".to_string()))
    } else if !w.wins.running() {
        Some((false, false, format!("it is {}", w.wins.service)))
    } else {
        None
    };
    if let Some((register, restart, reason)) = start {
        actions.push(Action::StartWins {
            register,
            restart,
            reason,
            containers: h.containers.keys().cloned().collect(),
            // Filled in once the containers' actions are known ([`replaced_by_worker_plane`]).
            replaced: Vec::new(),
            sweep_image: h
                .containers
                .get(plan::SERVICE_SIDEKICK)
                .map(|c| c.image.clone())
                .unwrap_or_default(),
        });
    }
    actions
}

/// A wins restart leaves stopped the containers the worker plane creates or recreates anyway.
fn replaced_by_worker_plane(actions: &mut [Action]) {
    let replaced: Vec<String> = actions
        .iter()
        .filter_map(Action::new_container)
        .map(str::to_string)
        .collect();
    for a in actions.iter_mut() {
        if let Action::StartWins { replaced: r, .. } = a {
            *r = replaced.clone();
        }
    }
}
