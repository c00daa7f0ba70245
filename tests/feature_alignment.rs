//! The program's own build and the test build compile shared crates with the same features, so
//! that `cargo build`/`cargo install` after `cargo test` reuses what the tests compiled
//! (Cargo.toml's "Not used by the code" dependencies). Without that, a dev-dependency that turns
//! one more feature on in a crate proc-macros build on makes the next plain build compile nearly
//! everything again: 9+ minutes of CI's 45.
//!
//! Reads `cargo tree` (offline, from Cargo.lock), so it needs no network and builds nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `name version` → the feature sets it is built with (one for the build machine's crates, one
/// for the program's, when they differ), for every crate in the tree `edges` selects.
fn features(edges: &str) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--locked",
            "--offline",
            "-p",
            "rkers",
            "--prefix",
            "none",
        ])
        .args(["-e", edges, "-f", "{p} | {f}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -e {edges} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, feats)) = line.split_once(" | ") else {
            continue;
        };
        let mut words = package.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        let feats = feats.trim().trim_end_matches("(*)").trim().to_string();
        found
            .entry(format!("{name} {version}"))
            .or_default()
            .insert(feats);
    }
    found
}

#[test]
fn the_program_and_its_tests_build_shared_crates_with_the_same_features() {
    let program = features("normal,build");
    let tests = features("normal,build,dev");
    assert!(
        program.len() > 100 && tests.len() > program.len(),
        "cargo tree listed too little to compare: {} and {} crates",
        program.len(),
        tests.len()
    );
    let drifted: Vec<String> = program
        .iter()
        .filter_map(|(package, feats)| {
            let in_tests = tests.get(package)?;
            (in_tests != feats)
                .then(|| format!("{package}\n    program: {feats:?}\n    tests:   {in_tests:?}"))
        })
        .collect();
    assert!(
        drifted.is_empty(),
        "the test build turns on features the program's build does not, so `cargo install` \
         after the tests compiles these (and what builds on them) again; add the missing \
         features to Cargo.toml's \"Not used by the code\" dependencies ([build-dependencies] \
         for crates proc-macros use):\n{}",
        drifted.join("\n")
    );
}
