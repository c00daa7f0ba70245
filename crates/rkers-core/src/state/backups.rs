//! The copies of earlier states kept next to the state file.
//!
//! Every run that replaces a state file first keeps the file as it found it as
//! `<name>.rkestate.<UTC time>.bak` (mode 0600, written atomically), once per run and state file,
//! so a run that writes the state twice does not push older runs out; at most [`MAX_BACKUPS`]
//! are kept, the oldest pruned. RKE1 keeps no backups; earlier rkers versions kept one
//! `<name>.rkestate.bak`, which is listed but never pruned.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{BACKUP_SUFFIX, STATE_FILE_MODE, write_atomic};

/// Timestamped backups kept per state file.
pub const MAX_BACKUPS: usize = 5;

/// State files this process already backed up: only the state a run started from is kept.
static BACKED_UP: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// `cluster.rkestate` → `cluster.rkestate.20261124T102053.123456789Z.bak`.
pub fn timestamped_backup_path(state_path: &Path, at: time::OffsetDateTime) -> PathBuf {
    let at = at.to_offset(time::UtcOffset::UTC);
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:09}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.nanosecond()
    );
    let mut name = state_path.as_os_str().to_os_string();
    name.push(format!(".{stamp}{BACKUP_SUFFIX}"));
    PathBuf::from(name)
}

/// Every backup of `state_path` on disk: the legacy `<name>.bak` first when present, then the
/// timestamped ones, oldest first. `rkers remove` deletes exactly these.
pub fn list_backups(state_path: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = match state_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(state_name) = state_path.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let legacy = format!("{state_name}{BACKUP_SUFFIX}");
    let mut has_legacy = false;
    let mut stamped = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == legacy {
            has_legacy = true;
        } else if let Some(stamp) = name
            .strip_prefix(state_name)
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|r| r.strip_suffix(BACKUP_SUFFIX))
            && is_stamp(stamp)
        {
            stamped.push(name.to_string());
        }
    }
    // Fixed-width stamps: the names sort in time order.
    stamped.sort();
    let mut all = Vec::new();
    if has_legacy {
        all.push(dir.join(legacy));
    }
    all.extend(stamped.into_iter().map(|n| dir.join(n)));
    Ok(all)
}

fn is_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 26
        && b[8] == b'T'
        && b[15] == b'.'
        && b[25] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 8 | 15 | 25) || c.is_ascii_digit())
}

/// Keeps `previous` (the state file's current contents) as a new timestamped backup, unless this
/// process already kept one for this file or the newest backup already holds the same bytes,
/// then prunes the oldest beyond [`MAX_BACKUPS`]. Returns the backup that holds `previous`.
/// With `once_per_process` false (a state store, which saves once per operation and may serve
/// many operations in one process) every replaced state is kept.
pub(super) fn keep(
    state_path: &Path,
    previous: &[u8],
    once_per_process: bool,
) -> io::Result<Option<PathBuf>> {
    let key = std::path::absolute(state_path).unwrap_or_else(|_| state_path.to_path_buf());
    let mut backed_up = BACKED_UP.lock().unwrap_or_else(|p| p.into_inner());
    let mut unused = BTreeSet::new();
    let done = if once_per_process {
        &mut *backed_up
    } else {
        &mut unused
    };
    if done.contains(&key) {
        return Ok(None);
    }
    let legacy = super::backup_path(state_path);
    let existing = list_backups(state_path)?;
    let newest = existing.iter().rev().find(|p| **p != legacy);
    if let Some(newest) = newest
        && std::fs::read(newest).is_ok_and(|b| b == previous)
    {
        done.insert(key);
        return Ok(Some(newest.clone()));
    }
    let path = timestamped_backup_path(state_path, time::OffsetDateTime::now_utc());
    write_atomic(&path, previous, STATE_FILE_MODE)?;
    done.insert(key);
    prune(state_path)?;
    Ok(Some(path))
}

/// Deletes the oldest timestamped backups beyond [`MAX_BACKUPS`].
fn prune(state_path: &Path) -> io::Result<()> {
    let legacy = super::backup_path(state_path);
    let stamped: Vec<PathBuf> = list_backups(state_path)?
        .into_iter()
        .filter(|p| *p != legacy)
        .collect();
    let excess = stamped.len().saturating_sub(MAX_BACKUPS);
    for old in &stamped[..excess] {
        match std::fs::remove_file(old) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Forgets which state files this process backed up, so a test can play several runs.
#[doc(hidden)]
pub fn reset_for_tests() {
    BACKED_UP.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_names_sort_in_time_order_and_are_recognised() {
        let t1 = time::macros::datetime!(2026-11-24 09:05:03.000000007 UTC);
        let t2 = time::macros::datetime!(2026-11-24 10:00:00 UTC);
        let a = timestamped_backup_path(Path::new("/x/cluster.rkestate"), t1);
        let b = timestamped_backup_path(Path::new("/x/cluster.rkestate"), t2);
        assert_eq!(
            a,
            Path::new("/x/cluster.rkestate.20261124T090503.000000007Z.bak")
        );
        assert!(a < b);
        let stamp = a
            .to_str()
            .unwrap()
            .strip_prefix("/x/cluster.rkestate.")
            .unwrap()
            .strip_suffix(".bak")
            .unwrap();
        assert!(is_stamp(stamp));
        assert!(!is_stamp("20261124T090503Z"));
        assert!(!is_stamp("2026112xT090503.000000007Z"));
    }

    #[test]
    fn lists_legacy_and_stamped_backups_of_this_state_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("cluster.rkestate");
        for name in [
            "cluster.rkestate",
            "cluster.rkestate.bak",
            "cluster.rkestate.20261124T100000.000000000Z.bak",
            "cluster.rkestate.20261123T100000.000000000Z.bak",
            "other.rkestate.20261123T100000.000000000Z.bak",
            "cluster.rkestate.notastamp.bak",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let names: Vec<String> = list_backups(&state)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "cluster.rkestate.bak",
                "cluster.rkestate.20261123T100000.000000000Z.bak",
                "cluster.rkestate.20261124T100000.000000000Z.bak",
            ]
        );
    }
}
