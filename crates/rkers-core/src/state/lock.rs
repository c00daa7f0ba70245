//! One operator at a time per cluster: the run lock beside the state file.
//!
//! Every command that changes the cluster or writes its state (`up`, `remove`, `cert rotate`,
//! `encrypt rotate-key`, `etcd snapshot-save`/`snapshot-restore`, `util get-state-file`, ...)
//! holds `cluster.rkestate.run.lock` for its whole run: an exclusive `flock` on the file, which
//! names the holder (host, PID, command, start time) in JSON. A second run is refused at once
//! with that name. RKE1 ignores the file.
//!
//! A run that was killed leaves the file but not the `flock` (the kernel drops it with the
//! process): the next run takes the lock over and says whose it was. The holder also renews a
//! lease in the file ([`RENEW_EVERY`]); on a filesystem shared between machines, whose `flock`
//! another machine may not see, a holder on another host is live while its lease is younger
//! than [`LEASE`].
//!
//! The compare-and-swap of [`FileStateStore`](super::FileStateStore) keeps its own short lock
//! (`cluster.rkestate.lock`, held only around a save).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often the holder renews its lease in the file.
pub const RENEW_EVERY: Duration = Duration::from_secs(15);
/// How long a holder on another host counts as live without a renewal.
pub const LEASE: Duration = Duration::from_secs(60);

/// The run lock of the state at `state_path`: `<state>.run.lock`.
pub fn lock_path(state_path: &Path) -> PathBuf {
    let mut name = state_path.as_os_str().to_os_string();
    name.push(".run.lock");
    PathBuf::from(name)
}

/// Who holds (or held) a run lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    /// The command, e.g. `up` or `cert rotate`.
    pub command: String,
    /// RFC 3339, UTC.
    pub started: String,
    /// Unix seconds of the last renewal.
    pub renewed: i64,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`rkers {}` (PID {} on host {}, started {})",
            self.command, self.pid, self.host, self.started
        )
    }
}

impl Holder {
    fn now(command: &str) -> Holder {
        let now = time::OffsetDateTime::now_utc();
        Holder {
            host: this_host(),
            pid: std::process::id(),
            command: command.to_string(),
            started: now
                .replace_nanosecond(0)
                .ok()
                .and_then(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .unwrap_or_default(),
            renewed: now.unix_timestamp(),
        }
    }

    /// Whether the holder may still be running: its process on this host, or its lease when
    /// it runs on another host.
    fn may_be_alive(&self) -> bool {
        if self.host == this_host() {
            return pid_alive(self.pid);
        }
        let age = time::OffsetDateTime::now_utc().unix_timestamp() - self.renewed;
        age < LEASE.as_secs() as i64
    }
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another rkers run is working on this cluster: {} holds {}. Wait for it to end, or stop \
         it; nothing was changed",
        holder_text(.holder.as_ref()),
        .path.display()
    )]
    Held {
        path: PathBuf,
        holder: Option<Holder>,
    },
    #[error("cannot take the cluster's run lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn holder_text(holder: Option<&Holder>) -> String {
    holder.map_or_else(
        || "a run that has not named itself yet".into(),
        Holder::to_string,
    )
}

/// The held run lock; released (the file removed) when dropped.
pub struct RunLock {
    file: File,
    path: PathBuf,
    took_over: Option<Holder>,
    renewer: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl std::fmt::Debug for RunLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLock").field("path", &self.path).finish()
    }
}

impl RunLock {
    /// Takes the run lock of the state at `state_path` for `command`, or says who holds it.
    pub fn acquire(state_path: &Path, command: &str) -> Result<RunLock, LockError> {
        let path = lock_path(state_path);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        // A releasing holder removes the file: a lock taken on a file that is no longer at the
        // path is worth nothing, so that is tried again.
        for _ in 0..10 {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(io)?;
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Err(LockError::Held {
                        holder: read_holder(&mut file),
                        path,
                    });
                }
                return Err(io(e));
            }
            let same = match (file.metadata(), std::fs::metadata(&path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if !same {
                continue;
            }
            let previous = read_holder(&mut file);
            if let Some(p) = &previous
                && p.host != this_host()
                && p.may_be_alive()
            {
                return Err(LockError::Held {
                    holder: previous,
                    path,
                });
            }
            let holder = Holder::now(command);
            write_holder(&mut file, &holder).map_err(io)?;
            let renewer = file.try_clone().ok().map(|f| renew(f, holder));
            return Ok(RunLock {
                file,
                path,
                took_over: previous,
                renewer,
            });
        }
        Err(io(std::io::Error::other(
            "the lock file kept being replaced",
        )))
    }

    /// The run that held the lock before and ended without releasing it (it was killed).
    pub fn took_over(&self) -> Option<&Holder> {
        self.took_over.as_ref()
    }

    /// The notice for a lock taken over, if it was.
    pub fn takeover_notice(&self) -> Option<String> {
        self.took_over.as_ref().map(|h| {
            let why = if h.host == this_host() && !pid_alive(h.pid) {
                "its process is gone"
            } else {
                "it no longer holds the lock"
            };
            format!(
                "took over the cluster's run lock {} from {h}, which ended without releasing it \
                 ({why}): what it was doing may be unfinished, and this run goes on from there",
                self.path.display()
            )
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.renewer.take() {
            drop(stop);
            let _ = thread.join();
        }
        // Removed while still held, and only if it is still this file.
        if let (Ok(a), Ok(b)) = (self.file.metadata(), std::fs::metadata(&self.path))
            && a.dev() == b.dev()
            && a.ino() == b.ino()
        {
            let _ = std::fs::remove_file(&self.path);
        }
        // Closing the file releases the flock.
    }
}

/// A live holder of the run lock of the state at `state_path`, without taking or touching
/// it (for dry runs, which never wait for the lock).
pub fn current_holder(state_path: &Path) -> Option<Holder> {
    let mut file = File::open(lock_path(state_path)).ok()?;
    read_holder(&mut file).filter(Holder::may_be_alive)
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

fn write_holder(file: &mut File, holder: &Holder) -> std::io::Result<()> {
    let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(format!("{text}\n").as_bytes())?;
    file.sync_data()
}

/// Renews the lease every [`RENEW_EVERY`] until the sender is dropped.
fn renew(mut file: File, mut holder: Holder) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(RENEW_EVERY) {
            holder.renewed = time::OffsetDateTime::now_utc().unix_timestamp();
            let _ = write_holder(&mut file, &holder);
        }
    });
    (stop, thread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_is_refused_naming_the_holder_and_the_lock_goes_with_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("cluster.rkestate");
        let first = RunLock::acquire(&state, "up").unwrap();
        assert!(first.took_over().is_none());
        let err = RunLock::acquire(&state, "remove").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`rkers up`")
                && text.contains(&format!("PID {}", std::process::id()))
                && text.contains(&this_host())
                && text.contains("cluster.rkestate.run.lock"),
            "{text}"
        );
        assert_eq!(current_holder(&state).unwrap().command, "up");
        let mode = std::fs::metadata(lock_path(&state)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(first);
        assert!(!lock_path(&state).exists());
        assert!(current_holder(&state).is_none());
        let again = RunLock::acquire(&state, "remove").unwrap();
        assert!(again.took_over().is_none());
    }

    #[test]
    fn a_lock_left_by_a_dead_process_is_taken_over_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("cluster.rkestate");
        // What a killed run leaves: the file naming it, no flock. A child that has exited is
        // a PID that is surely not running.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let mut dead = Holder::now("cert rotate");
        dead.pid = child.id();
        std::fs::write(lock_path(&state), serde_json::to_string(&dead).unwrap()).unwrap();
        assert!(
            current_holder(&state).is_none(),
            "a dead holder is not live"
        );
        let lock = RunLock::acquire(&state, "up").unwrap();
        assert_eq!(lock.took_over(), Some(&dead));
        let notice = lock.takeover_notice().unwrap();
        assert!(
            notice.contains("`rkers cert rotate`") && notice.contains("its process is gone"),
            "{notice}"
        );
    }

    #[test]
    fn a_holder_on_another_host_counts_while_its_lease_is_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("cluster.rkestate");
        let mut other = Holder::now("up");
        other.host = format!("{}-elsewhere", this_host());
        std::fs::write(lock_path(&state), serde_json::to_string(&other).unwrap()).unwrap();
        let err = RunLock::acquire(&state, "up").unwrap_err();
        assert!(err.to_string().contains("-elsewhere"), "{err}");
        other.renewed -= LEASE.as_secs() as i64 + 1;
        std::fs::write(lock_path(&state), serde_json::to_string(&other).unwrap()).unwrap();
        let lock = RunLock::acquire(&state, "up").unwrap();
        assert_eq!(lock.took_over(), Some(&other));
    }
}
