//! Records what the binary is built from, for `rkers --version` and `rkers version --client`:
//! the git commit (RKERS_GIT_COMMIT) and the build date (RKERS_BUILD_DATE, UTC).
//!
//! The commit comes from, in order: the RKERS_GIT_COMMIT environment variable (a build from an
//! exported tree), `git rev-parse HEAD` in a checkout, the `.cargo_vcs_info.json` that
//! `cargo package` writes into a crate (so `cargo install` from crates.io knows it), else
//! `unknown`. The date is SOURCE_DATE_EPOCH when set (reproducible builds: scripts/release sets
//! it to the commit's time), else the time this script ran. The script runs again only when the
//! commit changes, not on every edit, so that the crate is not recompiled for nothing.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RKERS_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = std::env::var("RKERS_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .or_else(packaged_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=RKERS_GIT_COMMIT={}", commit.trim());
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
    println!("cargo:rustc-env=RKERS_BUILD_DATE={}", rfc3339_utc(epoch));
}

/// HEAD of the checkout this crate is in, and the files whose change means a new commit.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = Path::new(&git_dir);
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            // A worktree keeps its HEAD apart but its branches in the common directory.
            let common = git(&["rev-parse", "--git-common-dir"])
                .map(|c| git_dir.join(c))
                .unwrap_or_else(|| git_dir.to_path_buf());
            for dir in [git_dir, common.as_path()] {
                let reference = dir.join(&branch);
                if reference.exists() {
                    println!("cargo:rerun-if-changed={}", reference.display());
                }
                if dir.join("packed-refs").exists() {
                    println!(
                        "cargo:rerun-if-changed={}",
                        dir.join("packed-refs").display()
                    );
                }
            }
        }
    }
    Some(commit)
}

/// The commit `cargo package` recorded: `{"git": {"sha1": "<hex>"}, ...}`.
fn packaged_commit() -> Option<String> {
    let text = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let after = text.split("\"sha1\"").nth(1)?;
    let value = after.split('"').nth(1)?;
    value
        .chars()
        .all(|c| c.is_ascii_hexdigit())
        .then(|| value.to_string())
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the epoch (proleptic Gregorian calendar).
fn rfc3339_utc(epoch: u64) -> String {
    let days = (epoch / 86_400) as i64;
    let secs = epoch % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}
