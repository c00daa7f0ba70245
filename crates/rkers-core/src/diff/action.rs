//! The actions every command takes on a host (`up`, `remove`, the day-2 commands), and their
//! rendering for `--dry-run`. In this order: the [`Action`] vocabulary, the sealed bytes and
//! health probes actions carry, the checks a recreated container must pass before the one it
//! replaces is dropped ([`undo_check`]), each action's dry-run line (`Display`), and the whole
//! dry run ([`render_dry_run`]).

use super::FieldChange;
use serde::Serialize;

/// One change to one host. `--dry-run` prints exactly these, grouped by host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    PullImage {
        image: String,
    },
    /// `spec` is the container exactly as the plan wants it, which the executor creates; it is
    /// not serialized (its environment may hold credentials) and the dry run names its image.
    CreateContainer {
        name: String,
        image: String,
        start: bool,
        #[serde(skip)]
        spec: Box<crate::plan::ContainerSpec>,
    },
    /// `changes` are what differs from the running container, `spec` what replaces it.
    /// `until_node_ready` names the node whose Ready the previous container is kept for
    /// (see [`node_ready_wait`]).
    RecreateContainer {
        name: String,
        #[serde(serialize_with = "changes_as_strings")]
        changes: Vec<FieldChange>,
        start: bool,
        #[serde(skip)]
        spec: Box<crate::plan::ContainerSpec>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        until_node_ready: Option<String>,
    },
    StartContainer {
        name: String,
    },
    /// Never planned: what a failed [`Action::RecreateContainer`] does to undo itself (the new
    /// container did not start, failed its health check, or its node was not Ready again in
    /// time, see [`node_ready_wait`]). The previous container, kept
    /// aside as `old-<name>`, gets its name back and is started again when it ran.
    RestoreContainer {
        name: String,
        start: bool,
    },
    /// `reason` says what asked for it: the files it reads that changed, or Docker reporting
    /// it restarting.
    RestartContainer {
        name: String,
        reason: String,
    },
    RemoveContainer {
        name: String,
        reason: String,
    },
    /// `file` is what is written, never serialized nor shown (keys, certificates); `path` is
    /// where, the file's path relative to its root (`/etc/kubernetes`, or the Windows prefix).
    UploadFile {
        path: String,
        reason: String,
        #[serde(skip)]
        file: Box<crate::files::DesiredFile>,
    },
    RemoveFile {
        path: String,
        reason: String,
    },
    /// A file whose content is right but whose mode or owner is not; nothing restarts.
    SetFileMode {
        path: String,
        /// Permission bits, e.g. `0o600` (`"0600"` in JSON).
        #[serde(serialize_with = "octal")]
        mode: u32,
        uid: u64,
        gid: u64,
        /// What the host has now, e.g. `0644 0:0`.
        was: String,
    },
    /// A voting member (etcd before 3.4, which has no learners).
    AddEtcdMember {
        member: String,
        peer_url: String,
    },
    /// A member that does not count towards quorum until promoted (etcd 3.4+); `rollback` is
    /// what happens when it does not join (it is then not applied as planned).
    AddEtcdLearner {
        member: String,
        peer_url: String,
        rollback: String,
    },
    /// The learner becomes a voting member once it has caught up (after its etcd started).
    PromoteEtcdMember {
        member: String,
        peer_url: String,
    },
    RemoveEtcdMember {
        member: String,
    },
    CleanDirectories {
        paths: Vec<String>,
    },
    DeleteNode {
        node: String,
    },
    /// Windows: host directories a bind or a wins-managed process needs (Windows cannot bind a
    /// missing source).
    CreateDirectories {
        paths: Vec<String>,
    },
    /// Windows: copy `wins.exe` out of `image` onto the host.
    InstallWins {
        image: String,
        path: String,
    },
    /// Windows: register the rancher-wins service (when missing) and start or restart it. A
    /// restart is one step with what makes it safe (windows-wins.md §5.1): the running
    /// wins-managed containers stop, wins restarts, the processes that outlived it are swept
    /// (the same sweep as [`Action::SweepWindowsOrphans`], part of this action) and the
    /// containers the worker plane does not replace start again.
    StartWins {
        register: bool,
        restart: bool,
        reason: String,
        /// A restart's safety (windows-wins.md §5.1), never serialized: the host's
        /// wins-managed containers (stopped first when running, in plan order), those the
        /// worker plane replaces anyway (not started again here), and the image of the sweep
        /// of processes that outlived wins.
        #[serde(skip)]
        containers: Vec<String>,
        #[serde(skip)]
        replaced: Vec<String>,
        #[serde(skip)]
        sweep_image: String,
    },
    /// Windows: before the worker plane has wins start a container's process, stop the
    /// `rancher-wins-*` processes that outlived their wins server (windows-wins.md §5.3), in a
    /// privileged one-shot container of `image` (the sidekick's); planned only when the worker
    /// plane creates, recreates, starts, restarts or removes one of the host's containers.
    SweepWindowsOrphans {
        image: String,
    },
    /// Windows: tear the host down through wins (windows-wins.md §5.3): stop the wins-managed
    /// processes, remove their firewall rules and the flannel HNS network, delete `directories`,
    /// and unregister wins when asked.
    CleanWindowsHost {
        directories: Vec<String>,
        unregister_wins: bool,
        /// The image the teardown's privileged step runs in (the sidekick's).
        #[serde(skip)]
        image: String,
    },
    /// calico/canal: a runtime directory calico-node binds, with the owner and mode it needs
    /// (incidents.md §1).
    EnsureCniDirectory {
        path: String,
        mode: String,
        owner: String,
        /// What the host has now (`missing`, or mode and owner).
        found: String,
        /// The image of the one-shot container that writes calico's directories and entry.
        #[serde(skip)]
        image: String,
    },
    /// calico/canal: the systemd-tmpfiles entry that recreates those directories at boot.
    WriteTmpfilesEntry {
        path: String,
        reason: String,
        #[serde(skip)]
        image: String,
    },
    // other commands' actions (wip-dryrun)
    /// Files written under `dir` in one go (certificates, the encryption provider file, a copy
    /// of the state): `cert rotate`, `encrypt rotate-key`, `etcd snapshot-save`.
    WriteFileSet {
        dir: String,
        files: Vec<crate::files::FileWrite>,
    },
    /// Stop and start a container, then wait until its health check passes (when it has one).
    RestartAndCheck {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        health_url: Option<String>,
        /// The check itself, with the client certificate it presents (never serialized).
        #[serde(skip)]
        check: Option<Box<HealthProbe>>,
    },
    /// Pseudo-host `cluster`: delete the pods matching any of `labels` in every namespace, so
    /// their controllers recreate them (after a CA rotation, §25.2 step 5).
    DeletePods {
        labels: Vec<String>,
    },
    /// One node's CNI pod deleted so its DaemonSet starts a successor there (`doctor --fix
    /// flannel-nat`: the successor writes the node's nat rules again). Keyed by the node's host.
    DeletePod {
        namespace: String,
        name: String,
        node: String,
        reason: String,
    },
    /// Pseudo-host `cluster`: delete one object through its `api_version`, before the control
    /// plane changes (an object of rkers' own addon whose API the target minor stops serving
    /// and whose new rendering leaves it out: once the API is gone it could not be deleted).
    DeleteObject {
        api_version: String,
        kind: String,
        /// Empty for a cluster-scoped object.
        namespace: String,
        name: String,
        reason: String,
    },
    /// Pseudo-host `cluster`: store the state in the cluster's `full-cluster-state` Secret.
    SaveStateSecret {
        reason: String,
    },
    /// Pseudo-host `cluster`: rewrite every Secret so the API server stores it with its first
    /// encryption provider.
    RewriteSecrets {
        reason: String,
    },
    /// Pseudo-host `local`: write the admin kubeconfig on the machine rkers runs on.
    WriteKubeconfig {
        path: String,
        /// The kubeconfig, with the admin's key: never serialized nor shown.
        #[serde(skip)]
        contents: Sealed,
    },
    /// Pseudo-host `local`: delete a file on the machine rkers runs on.
    DeleteLocalFile {
        path: String,
    },
    /// Drop the dangling log links under `dir` (RKE1's `rke-log-cleaner`), in a one-shot
    /// container of `image`.
    CleanLogLinks {
        dir: String,
        image: String,
    },
    /// What [`Action::CleanDirectories`] and [`Action::CleanLogLinks`] do, run by the host's
    /// own shell on a host whose SSH user is root: no helper container, no cleaner image. RKE1
    /// always uses the containers, because its SSH user need only be in the docker group.
    CleanAsRoot {
        paths: Vec<String>,
        /// Where the dangling log links are dropped, when that directory exists.
        log_dir: Option<String>,
    },
    /// Run a one-shot rke-tools container to completion (the etcd snapshot helpers). The spec
    /// is not serialized: its environment may carry S3 keys.
    RunOneShot {
        container: String,
        image: String,
        /// What it does, e.g. `save snapshot s1 as /opt/rke/etcd-snapshots/s1.zip`.
        purpose: String,
        #[serde(skip)]
        spec: Box<crate::container::ContainerSpec>,
    },
    /// `up`, before it changes etcd or the control plane: the etcd snapshot `name` of this
    /// member, taken by `steps` (what `etcd snapshot-save` plans for one member: the state
    /// file beside it, the helper image when missing, the one-shot helper).
    SaveEtcdSnapshot {
        name: String,
        /// Why a snapshot is taken first, e.g. `kube-apiserver is recreated on 10.0.0.1`.
        reason: String,
        steps: Vec<Action>,
    },
    /// Copy the etcd snapshot `path` from host `from` onto this host (same path).
    CopySnapshotFrom {
        from: String,
        path: String,
        image: String,
    },
    /// Pseudo-host `cluster`: bring the cluster back with `up` (after a snapshot restore); the
    /// actions of that `up` are its own, decided once the restored data is in place.
    RunUp {
        reason: String,
    },
    // up's actions (wip-plan)
    /// RKE1's `etcd-fix-perm` before a new etcd container: the data directory `path` exists and
    /// only its owner reads it (a one-shot helper container, or the host's shell).
    FixEtcdPermissions {
        path: String,
        /// A joining member: an etcd container an interrupted run left is removed and the
        /// directory emptied first, since data of an earlier membership would make etcd start
        /// as that removed member, which the cluster refuses.
        #[serde(skip_serializing_if = "std::ops::Not::not", default)]
        empty_first: bool,
        /// Done by the host's own shell: its SSH user is root and Docker runs without SELinux
        /// (whose label only the helper's `:z` bind gives the directory). RKE1 uses a helper
        /// container because its SSH user need only be in the docker group; the helper's
        /// create, start, wait and removal come before etcd starts, a second or more of a new
        /// cluster's critical path.
        #[serde(skip_serializing_if = "std::ops::Not::not", default)]
        in_host_shell: bool,
    },
    /// RKE1's log links (§8.5) for the containers this run creates on a Linux host, in a
    /// one-shot helper container.
    LinkLogs {
        containers: Vec<String>,
        /// The host's Docker root directory, where the logs are.
        docker_root: String,
    },
    /// Pseudo-host `cluster`: encryption was on and is turned off (§23): every Secret is
    /// rewritten in plain text, once the controlplane hosts that run kube-apiserver got an
    /// identity-first provider file and restarted it (their `WriteFileSet` and
    /// `RestartAndCheck`), and before the files step removes the provider file.
    DisableEncryption {
        reason: String,
    },
    /// Pseudo-host `cluster`: RKE1's RBAC objects (§20), server-side applied; `objects` names
    /// what is applied, `reason` why.
    ApplyRbac {
        objects: Vec<String>,
        reason: String,
    },
    /// Pseudo-host `cluster`: a node's labels, annotations and taints (§21); `changes` says
    /// what changes, as read from the node (or why it could not be read).
    SyncNode {
        node: String,
        changes: Vec<String>,
        #[serde(skip)]
        sync: Box<crate::node::NodeSync>,
    },
    /// Pseudo-host `cluster`: an addon's manifest applied (§19): `changed` are the objects that
    /// are created or change, `pruned` those an earlier run deployed that go. The manifest is
    /// not serialized: a user addon may hold Secrets.
    ApplyAddon {
        resource: String,
        changed: Vec<String>,
        pruned: Vec<String>,
        reason: String,
        #[serde(skip)]
        plan: Box<crate::addon::AddonPlan>,
    },
    /// Pseudo-host `cluster`: an addon turned off: what an earlier run deployed under
    /// `resource` is deleted, with RKE1's ConfigMap and deploy Job.
    RemoveAddon {
        resource: String,
        pruned: Vec<String>,
        reason: String,
        #[serde(skip)]
        plan: Box<crate::addon::AddonPlan>,
    },
    // doctor --fix's actions
    /// Pseudo-host `cluster`: delete an admission webhook configuration that blocks pod
    /// creation (`doctor --fix webhooks`, once it is backed up).
    DeleteWebhookConfiguration {
        kind: crate::diff::doctor_fix::Kind,
        name: String,
    },
    /// Pseudo-host `cluster`: create an admission webhook configuration again from the backup
    /// `from` (`doctor --restore-webhooks`); one of that name that exists is kept as it is.
    CreateWebhookConfiguration {
        kind: crate::diff::doctor_fix::Kind,
        name: String,
        from: String,
        #[serde(skip)]
        object: serde_json::Value,
    },
}

/// Bytes an action writes that hold secrets (a kubeconfig with its key): they never reach a
/// dry run, an event or debug output.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Sealed(Vec<u8>);

impl Sealed {
    pub fn new(bytes: Vec<u8>) -> Self {
        Sealed(bytes)
    }
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

/// A health check a restart waits for: the URL, and the TLS material it is reached with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthProbe {
    pub url: String,
    pub tls: Option<crate::health::TlsMaterial>,
}

impl Action {
    /// The container a create or recreate brings up new.
    pub fn new_container(&self) -> Option<&str> {
        match self {
            Action::CreateContainer { name, .. } | Action::RecreateContainer { name, .. } => {
                Some(name)
            }
            _ => None,
        }
    }
}

/// What a recreated container must come through before the container it replaces is dropped
/// (a failure puts the previous one back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UndoCheck<'a> {
    /// The new container answers its health check.
    Healthy(&'a crate::plan::HealthCheck),
    /// The new container answers its health check (when it has one), then the host's node
    /// reports Ready again within the rolling upgrade's wait.
    NodeReady {
        node: &'a str,
        health: Option<&'a crate::plan::HealthCheck>,
    },
}

impl<'a> UndoCheck<'a> {
    /// The health check the new container answers first, if it has one.
    pub fn health(&self) -> Option<&'a crate::plan::HealthCheck> {
        match *self {
            UndoCheck::Healthy(check) => Some(check),
            UndoCheck::NodeReady { health, .. } => health,
        }
    }

    /// Whether the previous container stays aside past the health check, until the node is
    /// Ready again (the rolling upgrade settles it).
    pub fn waits_for_node(&self) -> bool {
        matches!(self, UndoCheck::NodeReady { .. })
    }
}

impl std::fmt::Display for UndoCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndoCheck::Healthy(check) => write!(f, "{} answers", check.url),
            UndoCheck::NodeReady {
                node,
                health: Some(check),
            } => write!(f, "{} answers and node {node} is Ready", check.url),
            UndoCheck::NodeReady { node, health: None } => write!(f, "node {node} is Ready"),
        }
    }
}

/// What a recreated container must come through before the one it replaces is dropped: only a
/// new container that runs is checked; its health check, then its node's Ready when the plan
/// keeps it until then (`until_node_ready`, from [`node_ready_wait`]).
pub fn undo_check<'a>(
    start: bool,
    spec: &'a crate::plan::ContainerSpec,
    until_node_ready: Option<&'a str>,
) -> Option<UndoCheck<'a>> {
    if !start {
        return None;
    }
    let health = spec.health_check.as_ref();
    match until_node_ready {
        Some(node) => Some(UndoCheck::NodeReady { node, health }),
        None => health.map(UndoCheck::Healthy),
    }
}

/// The node whose Ready a recreated `container` on `host` is kept for: the worker plane's
/// rolling upgrade waits for a worker host's node to be Ready again after its kubelet or
/// kube-proxy changed, and a node that does not come back must get the containers it ran
/// before. Only for hosts that were in the cluster (`existing`) with a kubelet that runs
/// (`kubelet_runs`): a host that served no pods has nothing to come back to. Control plane hosts
/// are upgraded with their control plane, whose own undo ends with its health checks.
pub fn node_ready_wait<'a>(
    container: &str,
    host: &'a crate::plan::HostPlan,
    existing: bool,
    kubelet_runs: bool,
) -> Option<&'a str> {
    let worker_plane = [crate::plan::KUBELET, crate::plan::KUBE_PROXY].contains(&container);
    (worker_plane && existing && kubelet_runs && !host.roles.controlplane)
        .then_some(host.hostname.as_str())
}

/// Sets `until_node_ready` on the host's recreates that [`node_ready_wait`] keeps until its
/// node is Ready.
pub fn keep_until_node_ready(actions: &mut [Action], host: &crate::plan::HostPlan, existing: bool) {
    let runs = kubelet_runs(actions);
    for action in actions {
        if let Action::RecreateContainer {
            name,
            until_node_ready,
            ..
        } = action
        {
            *until_node_ready = node_ready_wait(name, host, existing, runs).map(str::to_string);
        }
    }
}

/// Whether the host's kubelet runs before these actions: one the actions create or start does
/// not.
pub fn kubelet_runs(actions: &[Action]) -> bool {
    !actions.iter().any(|a| {
        matches!(a, Action::CreateContainer { name, .. } | Action::StartContainer { name } if name == crate::plan::KUBELET)
    })
}

fn octal<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

fn changes_as_strings<S: serde::Serializer>(c: &[FieldChange], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(c.iter().map(|c| c.to_string()))
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::PullImage { image } => write!(f, "pull image {image}"),
            Action::CreateContainer {
                name, image, start, ..
            } => {
                let verb = if *start { "create and start" } else { "create" };
                write!(f, "{verb} container {name} ({image})")
            }
            Action::RecreateContainer {
                name,
                changes,
                start,
                spec,
                until_node_ready,
            } => {
                write!(f, "recreate container {name}")?;
                for c in changes {
                    write!(f, "\n      {c}")?;
                }
                if let Some(check) = undo_check(*start, spec, until_node_ready.as_deref()) {
                    write!(
                        f,
                        "\n      keep {name} as {}{name} until {check}",
                        crate::plan::OLD_PREFIX,
                    )?;
                }
                Ok(())
            }
            Action::StartContainer { name } => write!(f, "start stopped container {name}"),
            Action::RestoreContainer { name, start } => {
                let verb = if *start {
                    "put back and start"
                } else {
                    "put back"
                };
                write!(
                    f,
                    "{verb} the previous container {name} (from {}{name}: its replacement failed)",
                    crate::plan::OLD_PREFIX
                )
            }
            Action::RestartContainer { name, reason } => {
                write!(f, "restart container {name} ({reason})")
            }
            Action::RemoveContainer { name, reason } => {
                write!(f, "remove container {name} ({reason})")
            }
            Action::UploadFile { path, reason, .. } => write!(f, "upload {path} ({reason})"),
            Action::RemoveFile { path, reason } => write!(f, "remove {path} ({reason})"),
            Action::SetFileMode {
                path,
                mode,
                uid,
                gid,
                was,
            } => write!(
                f,
                "set {path} to mode {mode:04o} owner {uid}:{gid} (was {was})"
            ),
            Action::AddEtcdMember { member, peer_url } => {
                write!(f, "add etcd member {member} ({peer_url})")
            }
            Action::AddEtcdLearner {
                member,
                peer_url,
                rollback,
            } => write!(
                f,
                "add etcd member {member} ({peer_url}) as a learner; if it does not join: \
                 {rollback}"
            ),
            Action::PromoteEtcdMember { member, .. } => write!(
                f,
                "promote etcd learner {member} to a voting member once it has caught up"
            ),
            Action::RemoveEtcdMember { member } => write!(f, "remove etcd member {member}"),
            Action::CleanDirectories { paths } => write!(f, "clean {}", paths.join(", ")),
            Action::DeleteNode { node } => write!(f, "delete node {node}"),
            Action::CreateDirectories { paths } => {
                write!(f, "create directories {}", paths.join(", "))
            }
            Action::InstallWins { image, path } => {
                write!(f, "install wins at {path} (copied from {image})")
            }
            Action::StartWins {
                register,
                restart,
                reason,
                ..
            } => {
                let verb = match (register, restart) {
                    (true, _) => "register and start",
                    (false, true) => "restart",
                    (false, false) => "start",
                };
                write!(f, "{verb} the rancher-wins service ({reason})")
            }
            Action::SweepWindowsOrphans { image } => write!(
                f,
                "through wins: stop the rancher-wins-* processes that outlived their wins \
                 server ({image})"
            ),
            Action::CleanWindowsHost {
                directories,
                unregister_wins,
                ..
            } => {
                write!(
                    f,
                    "through wins: stop the rancher-wins-* processes, remove their firewall \
                     rules and the flannel HNS network, delete {}",
                    directories.join(", ")
                )?;
                if *unregister_wins {
                    write!(f, ", unregister the rancher-wins service")?;
                }
                Ok(())
            }
            Action::EnsureCniDirectory {
                path,
                mode,
                owner,
                found,
                ..
            } => write!(f, "ensure directory {path} {owner} {mode} (found: {found})"),
            Action::WriteTmpfilesEntry { path, reason, .. } => {
                write!(f, "write {path} ({reason})")
            }
            // other commands' actions (wip-dryrun)
            Action::WriteFileSet { dir, files } => {
                write!(f, "write under {dir}:")?;
                for file in files {
                    write!(
                        f,
                        "\n      {} mode {:04o} ({})",
                        file.path, file.mode, file.reason
                    )?;
                }
                Ok(())
            }
            Action::RestartAndCheck {
                name, health_url, ..
            } => {
                write!(f, "restart container {name}")?;
                if let Some(url) = health_url {
                    write!(f, " and wait until {url} is healthy")?;
                }
                Ok(())
            }
            Action::DeletePods { labels } => write!(
                f,
                "delete the pods labelled {} in every namespace",
                labels.join(", ")
            ),
            Action::DeleteObject {
                api_version,
                kind,
                namespace,
                name,
                reason,
            } => {
                let object = if namespace.is_empty() {
                    name.clone()
                } else {
                    format!("{namespace}/{name}")
                };
                write!(f, "delete {kind} {object} ({api_version}): {reason}")
            }
            Action::SaveStateSecret { reason } => write!(
                f,
                "save the state in Secret kube-system/full-cluster-state ({reason})"
            ),
            Action::RewriteSecrets { reason } => write!(f, "rewrite every Secret ({reason})"),
            Action::WriteKubeconfig { path, .. } => write!(f, "write the admin kubeconfig {path}"),
            Action::DeleteLocalFile { path } => write!(f, "delete {path}"),
            Action::CleanLogLinks { dir, image } => {
                write!(f, "remove the dangling log links under {dir} ({image})")
            }
            Action::CleanAsRoot { paths, log_dir } => {
                let mut work = Vec::new();
                if !paths.is_empty() {
                    work.push(format!("clean {}", paths.join(", ")));
                }
                if let Some(dir) = log_dir {
                    work.push(format!("remove the dangling log links under {dir}"));
                }
                write!(f, "{} (as root, in the host's shell)", work.join(" and "))
            }
            Action::RunOneShot {
                container,
                image,
                purpose,
                ..
            } => write!(f, "{purpose} (one-shot container {container}, {image})"),
            Action::SaveEtcdSnapshot {
                name,
                reason,
                steps,
            } => {
                write!(f, "take etcd snapshot {name} first ({reason}):")?;
                for step in steps {
                    let step = step.to_string().replace('\n', "\n  ");
                    write!(f, "\n      {step}")?;
                }
                Ok(())
            }
            Action::CopySnapshotFrom { from, path, .. } => {
                write!(f, "copy {path} from host {from}")
            }
            Action::RunUp { reason } => write!(f, "run `rkers up` ({reason})"),
            // up's actions (wip-plan)
            Action::FixEtcdPermissions {
                path,
                empty_first,
                in_host_shell,
            } => {
                if *empty_first {
                    write!(
                        f,
                        "remove the etcd container an earlier run left, if any, empty {path}, "
                    )?;
                }
                let how = if *in_host_shell {
                    "as root, in the host's shell"
                } else {
                    "etcd-fix-perm"
                };
                write!(f, "create {path} and make it private to its owner ({how})")
            }
            Action::LinkLogs { containers, .. } => {
                write!(f, "link the logs of {}", containers.join(", "))
            }
            Action::DisableEncryption { reason } => {
                write!(f, "rewrite every Secret in plain text ({reason})")
            }
            Action::ApplyRbac { objects, reason } => {
                write!(f, "apply {} ({reason})", objects.join(", "))
            }
            Action::SyncNode { node, changes, .. } => {
                write!(f, "sync node {node}: {}", changes.join(", "))
            }
            Action::ApplyAddon {
                resource,
                changed,
                pruned,
                reason,
                ..
            } => {
                write!(f, "apply addon {resource} ({reason})")?;
                for id in changed {
                    write!(f, "\n      apply {id}")?;
                }
                for id in pruned {
                    write!(f, "\n      prune {id}")?;
                }
                Ok(())
            }
            Action::RemoveAddon {
                resource,
                pruned,
                reason,
                ..
            } => {
                write!(f, "remove addon {resource} ({reason})")?;
                for id in pruned {
                    write!(f, "\n      prune {id}")?;
                }
                Ok(())
            }
            Action::DeleteWebhookConfiguration { kind, name } => {
                write!(f, "delete {}/{name}", kind.resource())
            }
            Action::DeletePod {
                namespace,
                name,
                node,
                reason,
            } => write!(f, "delete pod {namespace}/{name} on node {node} ({reason})"),
            Action::CreateWebhookConfiguration {
                kind, name, from, ..
            } => write!(
                f,
                "create {}/{name} from {from} (kept as it is if it exists)",
                kind.resource()
            ),
        }
    }
}

/// The actions for one host, in the order they are taken.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostActions {
    pub host: String,
    pub actions: Vec<Action>,
}

/// The text `--dry-run` prints, for every command: every host, and under it every action, or
/// "no changes". Besides host addresses, two pseudo-hosts hold what no host does: `cluster`
/// (calls to the Kubernetes API: the state Secret, Secret rewrites, pod deletions, and handing
/// over to `up`) and `local` (files on the machine rkers runs on: the admin kubeconfig, the
/// state file and its backups).
pub fn render_dry_run(hosts: &[HostActions]) -> String {
    let mut out = String::new();
    let total: usize = hosts.iter().map(|h| h.actions.len()).sum();
    for h in hosts {
        out.push_str(&format!("{}:\n", h.host));
        if h.actions.is_empty() {
            out.push_str("    no changes\n");
        }
        for a in &h.actions {
            out.push_str(&format!("  - {a}\n"));
        }
    }
    out.push_str(&format!(
        "{total} action{} on {} host{}\n",
        if total == 1 { "" } else { "s" },
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_lists_every_host_and_action() {
        let hosts = vec![
            HostActions {
                host: "10.0.0.1".into(),
                actions: vec![
                    Action::PullImage {
                        image: "rancher/hyperkube:v1".into(),
                    },
                    Action::RecreateContainer {
                        name: "kube-apiserver".into(),
                        changes: vec![FieldChange {
                            field: "entrypoint",
                            added: vec!["--v=4".into()],
                            removed: vec!["--v=2".into()],
                            why: None,
                        }],
                        start: true,
                        spec: Box::default(),
                        until_node_ready: None,
                    },
                ],
            },
            HostActions {
                host: "10.0.0.2".into(),
                actions: vec![],
            },
        ];
        let text = render_dry_run(&hosts);
        assert_eq!(
            text,
            "10.0.0.1:\n  - pull image rancher/hyperkube:v1\n  - recreate container kube-apiserver\n      entrypoint: +--v=4 ---v=2\n10.0.0.2:\n    no changes\n2 actions on 2 hosts\n"
        );
    }

    #[test]
    fn calico_runtime_actions_render_what_they_change() {
        let dir = Action::EnsureCniDirectory {
            path: "/var/run/calico".into(),
            mode: "0755".into(),
            owner: "root:root".into(),
            found: "0700 0:0".into(),
            image: "img".into(),
        };
        assert_eq!(
            dir.to_string(),
            "ensure directory /var/run/calico root:root 0755 (found: 0700 0:0)"
        );
        let entry = Action::WriteTmpfilesEntry {
            path: "/etc/tmpfiles.d/calico.conf".into(),
            reason: "no tmpfiles.d entry creates /var/run/calico".into(),
            image: "img".into(),
        };
        assert_eq!(
            entry.to_string(),
            "write /etc/tmpfiles.d/calico.conf (no tmpfiles.d entry creates /var/run/calico)"
        );
        assert_eq!(
            serde_json::to_value(&entry).unwrap()["action"],
            "write_tmpfiles_entry"
        );
    }

    fn host(controlplane: bool) -> crate::plan::HostPlan {
        crate::plan::HostPlan {
            address: "10.0.0.2".into(),
            internal_address: "10.0.0.2".into(),
            hostname: "worker-2".into(),
            roles: crate::plan::Roles {
                etcd: false,
                controlplane,
                worker: true,
            },
            prefix_path: String::new(),
            containers: Default::default(),
            files: vec![],
            certificate_names: vec![],
            port_checks: vec![],
        }
    }

    fn recreate(name: &str) -> Action {
        Action::RecreateContainer {
            name: name.into(),
            changes: vec![],
            start: true,
            spec: Box::new(crate::plan::ContainerSpec {
                health_check: Some(crate::plan::HealthCheck {
                    url: "http://localhost:10248/healthz".into(),
                    client_certificate: None,
                }),
                start: true,
                ..Default::default()
            }),
            until_node_ready: None,
        }
    }

    fn kept_until(actions: &[Action]) -> Vec<Option<String>> {
        actions
            .iter()
            .map(|a| match a {
                Action::RecreateContainer {
                    until_node_ready, ..
                } => until_node_ready.clone(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_running_workers_kubelet_and_kube_proxy_are_kept_until_its_node_is_ready() {
        let mut actions = vec![
            recreate("nginx-proxy"),
            recreate("kubelet"),
            recreate("kube-proxy"),
        ];
        keep_until_node_ready(&mut actions, &host(false), true);
        let node = Some("worker-2".to_string());
        assert_eq!(kept_until(&actions), vec![None, node.clone(), node]);
        assert_eq!(
            actions[1].to_string(),
            "recreate container kubelet\n      keep kubelet as old-kubelet until \
             http://localhost:10248/healthz answers and node worker-2 is Ready"
        );
        assert_eq!(
            actions[0].to_string(),
            "recreate container nginx-proxy\n      keep nginx-proxy as old-nginx-proxy until \
             http://localhost:10248/healthz answers"
        );
        assert_eq!(
            serde_json::to_value(&actions[1]).unwrap()["until_node_ready"],
            "worker-2"
        );
        assert!(
            serde_json::to_value(&actions[0])
                .unwrap()
                .get("until_node_ready")
                .is_none()
        );
    }

    #[test]
    fn only_a_serving_worker_of_the_cluster_waits_for_its_node() {
        // A new host, a control plane host (its control plane's undo ends with its checks),
        // and a host whose kubelet is started by this run have no Ready to come back to.
        for (h, existing) in [(host(false), false), (host(true), true)] {
            let mut actions = vec![recreate("kubelet")];
            keep_until_node_ready(&mut actions, &h, existing);
            assert_eq!(kept_until(&actions), vec![None]);
        }
        let mut actions = vec![
            Action::StartContainer {
                name: "kubelet".into(),
            },
            recreate("kube-proxy"),
        ];
        keep_until_node_ready(&mut actions, &host(false), true);
        assert_eq!(kept_until(&actions), vec![None, None]);
    }

    #[test]
    fn a_container_that_does_not_run_is_not_checked() {
        let spec = crate::plan::ContainerSpec::default();
        assert_eq!(undo_check(false, &spec, Some("n")), None);
        assert_eq!(undo_check(true, &spec, None), None);
        let check = undo_check(true, &spec, Some("n")).unwrap();
        assert_eq!(check.to_string(), "node n is Ready");
        assert!(check.waits_for_node());
        assert_eq!(check.health(), None);
    }

    #[test]
    fn the_health_check_comes_first_whatever_else_the_undo_waits_for() {
        let spec = crate::plan::ContainerSpec {
            health_check: Some(crate::plan::HealthCheck {
                url: "http://localhost:10248/healthz".into(),
                client_certificate: None,
            }),
            ..Default::default()
        };
        let healthy = undo_check(true, &spec, None).unwrap();
        assert_eq!(healthy.health(), spec.health_check.as_ref());
        assert!(!healthy.waits_for_node());
        let ready = undo_check(true, &spec, Some("n")).unwrap();
        assert_eq!(ready.health(), spec.health_check.as_ref());
        assert!(ready.waits_for_node());
    }

    #[test]
    fn actions_serialize_with_a_tag() {
        let v = serde_json::to_value(Action::RemoveEtcdMember {
            member: "etcd-host3".into(),
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"action": "remove_etcd_member", "member": "etcd-host3"})
        );
    }
}
