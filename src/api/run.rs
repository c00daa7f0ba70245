//! One operation's plumbing: the run lock, the state and kubeconfig in memory seeded from the
//! store, a private scratch directory, the cluster the phases see, cancellation, saving what
//! the run left by compare-and-swap, and the one `result` event.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use super::transport::FactoryLinks;
use super::{ApiError, ClusterInput, Operation, Outcome, StateVersion, StoreError};
use crate::cluster::{Cluster, ClusterError};
use crate::config;
use crate::hosts::{Links, SshOptions};
use crate::output::Reporter;
use crate::state::{ClusterFiles, Loaded, StateFile};

/// One operation that changes the cluster: a run prepared from `op`, `phase` under the
/// cancellation token, what it left saved into the store, and the one `result` event.
pub(super) async fn operate(
    op: &Operation,
    command: &str,
    phase: impl for<'a> FnOnce(
        &'a Run,
        &'a Reporter,
    ) -> futures::future::BoxFuture<'a, Result<(), ApiError>>,
) -> Result<Outcome, ApiError> {
    let prepare = |reporter: &Reporter| Ok((Run::prepare(op, reporter)?, ()));
    operate_with(op, command, false, prepare, |run, (), reporter| {
        phase(run, reporter)
    })
    .await
    .map(|(outcome, (), ())| outcome)
}

/// [`operate`] with the run made by `prepare` (with what else it hands the phase) and the
/// phase's value handed back. A `dry_run` takes no lock and saves nothing: its outcome names
/// the version it loaded.
pub(super) async fn operate_with<P, T>(
    op: &Operation,
    command: &str,
    dry_run: bool,
    prepare: impl FnOnce(&Reporter) -> Result<(Run, P), ApiError>,
    phase: impl for<'a> FnOnce(
        &'a Run,
        &'a P,
        &'a Reporter,
    ) -> futures::future::BoxFuture<'a, Result<T, ApiError>>,
) -> Result<(Outcome, P, T), ApiError> {
    let reporter = Reporter::with_sink(op.events.clone());
    let result = async {
        // Held until the state is saved: one operation at a time on a state file.
        let lock = if dry_run {
            None
        } else {
            op.store.lock_run(command)?
        };
        if let Some(notice) = lock.as_ref().and_then(|l| l.takeover_notice()) {
            reporter.warn(notice);
        }
        let (run, prepared) = prepare(&reporter)?;
        let done = run
            .guard(op, &reporter, phase(&run, &prepared, &reporter))
            .await;
        let outcome = if dry_run {
            let unsaved = Outcome {
                kubeconfig: None,
                state_version: run.loaded.version.clone(),
            };
            done.map(|value| (unsaved, value))
        } else {
            run.finish(op, done)
        };
        drop(lock);
        outcome.map(|(outcome, value)| (outcome, prepared, value))
    }
    .await;
    end(&reporter, result)
}

/// The one `result` event every operation ends with. The error handed back is masked like the
/// events: its text may quote a host's output.
pub(super) fn end<T>(reporter: &Reporter, result: Result<T, ApiError>) -> Result<T, ApiError> {
    // Read before the typed error becomes text: its hosts and causes.
    let report = result
        .as_ref()
        .err()
        .map(|e| crate::error::ErrorReport::of(e).redacted(|t| reporter.redactor().redact(t)));
    let result = result.map_err(|e| match e {
        ApiError::InvalidConfig(m) => ApiError::InvalidConfig(reporter.redactor().redact(&m)),
        ApiError::Failed(m) => ApiError::Failed(reporter.redactor().redact(&m)),
        ApiError::Operation(e) => ApiError::Failed(reporter.redactor().redact(&e.to_string())),
        other => other,
    });
    match &result {
        Ok(_) => reporter.finish_run(0, None),
        Err(e) => reporter.finish_run_with(e.exit_code(), report.as_ref()),
    }
    result
}

pub(super) fn cluster_error(c: ClusterError) -> ApiError {
    if c.is_invalid_config() {
        ApiError::InvalidConfig(c.to_string())
    } else {
        ApiError::Operation(crate::error::Failure::new(c))
    }
}

/// The operation's cluster.yml, read (not yet defaulted).
pub(super) fn input_config(op: &Operation) -> Result<config::Loaded, config::ConfigError> {
    match &op.cluster {
        ClusterInput::Yaml(text) => config::load_str(text, CONFIG_NAME),
        ClusterInput::Config(c) => Ok(config::Loaded {
            config: (**c).clone(),
            warnings: Vec::new(),
            locations: config::Locations::empty(CONFIG_NAME),
        }),
    }
}

/// The name the config is given in messages.
pub(super) const CONFIG_NAME: &str = "cluster.yml";

/// What every scratch directory's name starts with.
const SCRATCH_PREFIX: &str = "rkers-op-";
/// The file in each scratch directory its run holds an exclusive `flock` on: the kernel drops
/// it with the process, so a directory whose lock can be taken outlived its run.
const SCRATCH_OWNER: &str = ".owner.lock";
/// How old a scratch directory without its lock file must be to count as a leftover: younger,
/// its run may be between making the directory and locking.
const SCRATCH_UNLOCKED_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// A run's scratch directory, private to the user (0700), removed when dropped, and locked
/// while its run lives. The state and the kubeconfig are not in it: they stay in memory.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
    /// Dropped after `dir`: the lock lasts until the directory is gone.
    _owner: std::fs::File,
}

impl Scratch {
    pub(crate) fn new(parent: Option<&Path>) -> std::io::Result<Scratch> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mut builder = tempfile::Builder::new();
        builder
            .prefix(SCRATCH_PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700));
        let dir = match parent {
            Some(parent) => builder.tempdir_in(parent),
            None => builder.tempdir(),
        }?;
        let owner = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.path().join(SCRATCH_OWNER))?;
        owner.lock()?;
        Ok(Scratch { dir, _owner: owner })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The scratch directories in `parent` that outlived their run (killed with SIGKILL, or a
/// machine that lost power): this user's `rkers-op-*` directories whose lock no process holds.
pub fn stale_scratch_dirs(parent: &Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut stale = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(SCRATCH_PREFIX));
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !named || !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let leftover = match std::fs::File::open(path.join(SCRATCH_OWNER)) {
            // Taken only to look: dropping the file releases it at once.
            Ok(owner) => owner.try_lock().is_ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age > SCRATCH_UNLOCKED_AGE),
            Err(_) => false,
        };
        if leftover {
            stale.push(path);
        }
    }
    stale
}

/// One run's scratch directory, seeded from the store, and the cluster the phases see.
pub(super) struct Run {
    /// Held for its removal when the run ends (it holds private keys).
    _scratch: Scratch,
    pub(super) cluster: Cluster,
    pub(super) loaded: Loaded,
    /// The state document as it was written into the scratch directory.
    pub(super) seeded: Option<Vec<u8>>,
    pub(super) ssh: SshOptions,
}

impl Run {
    pub(super) fn prepare(op: &Operation, reporter: &Reporter) -> Result<Run, ApiError> {
        let loaded_config = input_config(op).map_err(|e| cluster_error(ClusterError::Config(e)))?;
        Self::prepare_with(op, reporter, |files, state| {
            Cluster::from_loaded_with_state(
                loaded_config,
                op.metadata.clone(),
                files,
                state,
                reporter,
            )
            .map_err(cluster_error)
        })
    }

    /// A run of the cluster `cluster` makes of the scratch directory's files and the stored
    /// state.
    pub(super) fn prepare_with(
        op: &Operation,
        reporter: &Reporter,
        cluster: impl FnOnce(ClusterFiles, Option<&StateFile>) -> Result<Cluster, ApiError>,
    ) -> Result<Run, ApiError> {
        if op.cancel.is_cancelled() {
            return Err(ApiError::Cancelled);
        }
        let scratch = Scratch::new(op.scratch_parent.as_deref())
            .map_err(|e| ApiError::Failed(format!("cannot make a scratch directory: {e}")))?;
        // The state and the admin kubeconfig stay in memory: the store holds the state, and
        // the outcome hands the kubeconfig back, so neither key-holding file touches a disk.
        let files = ClusterFiles::from_config_path(&scratch.path().join(CONFIG_NAME)).in_memory();

        // Read first: a version without published metadata takes its images from the state.
        let loaded = op.store.load()?;
        let mut cluster = cluster(files, loaded.state.as_ref())?;
        // What RKE1 records for a cluster.yml in the current directory: the same every run.
        cluster.recorded_kubeconfig_path = Some(format!("./kube_config_{CONFIG_NAME}"));

        let seeded = match &loaded.state {
            Some(state) => {
                // As stored, without rkers' mark added: a state RKE1 wrote must still be
                // recognised as one to adopt.
                let text = state
                    .to_json()
                    .map_err(|e| ApiError::Store(StoreError::State(e)))?;
                write_private(&cluster.files, &cluster.files.state_path, text.as_bytes())?;
                seed_kubeconfig(state, &cluster.files)?;
                Some(text.into_bytes())
            }
            None => None,
        };
        let mut ssh = op.transport.ssh_options();
        if ssh.known_hosts_path.is_none() {
            ssh.known_hosts_path = Some(scratch.path().join("known_hosts"));
        }
        ssh.links = Links(Some(Arc::new(FactoryLinks(op.transport.clone()))));
        let notices = reporter.clone();
        ssh.notices = crate::hosts::target::NoticeSink::new(move |m| notices.warn(m));
        Ok(Run {
            _scratch: scratch,
            cluster,
            loaded,
            seeded,
            ssh,
        })
    }

    /// Runs a phase until it ends or the operation is cancelled. On cancellation the phase is
    /// dropped after the reporter knows, so every step it leaves unfinished reports
    /// `interrupted`.
    pub(super) async fn guard<T>(
        &self,
        op: &Operation,
        reporter: &Reporter,
        phase: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let mut phase = Box::pin(phase);
        let finished = tokio::select! {
            biased;
            r = &mut phase => Some(r),
            _ = op.cancel.cancelled() => None,
        };
        match finished {
            Some(r) => r,
            None => {
                reporter.mark_interrupted();
                drop(phase);
                Err(ApiError::Cancelled)
            }
        }
    }

    /// Saves what the phase left in the scratch directory into the store (also after a
    /// failure or cancellation: the state records certificates already on hosts), then
    /// returns the phase's result and value.
    pub(super) fn finish<T>(
        self,
        op: &Operation,
        done: Result<T, ApiError>,
    ) -> Result<(Outcome, T), ApiError> {
        let saved = self.save_state(op);
        let value = done?;
        let state_version = saved?;
        let kubeconfig = match self.cluster.files.storage.read_to_string(
            &self.cluster.files.kubeconfig_path,
            rkers_core::bounded::KUBECONFIG,
        ) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ApiError::Failed(format!(
                    "cannot read the admin kubeconfig the run wrote: {e}"
                )));
            }
        };
        Ok((
            Outcome {
                kubeconfig,
                state_version,
            },
            value,
        ))
    }

    fn save_state(&self, op: &Operation) -> Result<StateVersion, ApiError> {
        let path = &self.cluster.files.state_path;
        let bytes = match (self.cluster.files.storage).read(path, rkers_core::bounded::STATE) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ApiError::Failed(format!(
                    "cannot read the state the run wrote ({e}); the store was not changed"
                )));
            }
        };
        let expected = &self.loaded.version;
        match (bytes, &self.seeded) {
            (Some(now), Some(before)) if &now == before => Ok(expected.clone()),
            (Some(now), _) => {
                // A state that does not read back whole is never saved over the stored one.
                let text = String::from_utf8(now).map_err(|_| {
                    ApiError::Failed(
                        "the state the run wrote is not UTF-8; the store was not changed".into(),
                    )
                })?;
                let state = StateFile::from_json(&text, Path::new(CONFIG_STATE_NAME))
                    .map_err(|e| ApiError::Store(StoreError::State(e)))?;
                // Rewritten with the same content (a run that changed nothing): no new version.
                if self.loaded.state.as_ref() == Some(&state) {
                    return Ok(expected.clone());
                }
                Ok(op.store.save(&state, expected)?)
            }
            (None, Some(_)) => Ok(op.store.delete(expected)?),
            (None, None) => Ok(expected.clone()),
        }
    }
}

/// The state's name in messages.
pub(super) const CONFIG_STATE_NAME: &str = "cluster.rkestate";

pub(super) fn write_private(
    files: &ClusterFiles,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ApiError> {
    (files.storage)
        .write_private(path, bytes)
        .map_err(|e| ApiError::Failed(format!("cannot write {}: {e}", path.display())))
}

/// The admin kubeconfig the state records, where the phases that talk to the API server of an
/// existing cluster look for it.
pub(super) fn seed_kubeconfig(state: &StateFile, files: &ClusterFiles) -> Result<(), ApiError> {
    let admin = state
        .current_state
        .certificates_bundle
        .get("kube-admin")
        .or_else(|| state.desired_state.certificates_bundle.get("kube-admin"));
    match admin {
        Some(cert) if !cert.config.is_empty() => {
            write_private(files, &files.kubeconfig_path, cert.config.as_bytes())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scratch directories were 0755 and, after a kill -9, stayed with the state and the
    /// kubeconfig in them; now they are 0700 and one no process holds is found as a leftover.
    #[test]
    fn a_scratch_directory_is_private_and_found_once_its_run_is_gone() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let live = Scratch::new(Some(parent.path())).unwrap();
        let mode = std::fs::metadata(live.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(
            stale_scratch_dirs(parent.path()),
            Vec::<std::path::PathBuf>::new()
        );

        // What a killed run leaves: the directory, and no process holding its lock.
        let killed = Scratch::new(Some(parent.path())).unwrap();
        let Scratch { dir, _owner } = killed;
        let left = dir.keep();
        drop(_owner);
        assert_eq!(stale_scratch_dirs(parent.path()), vec![left.clone()]);

        // A directory just made, not yet locked, and other names are left alone.
        std::fs::create_dir(parent.path().join("rkers-op-new")).unwrap();
        std::fs::create_dir(parent.path().join("other")).unwrap();
        assert_eq!(stale_scratch_dirs(parent.path()), vec![left]);
        drop(live);
    }
}
