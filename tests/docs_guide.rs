//! The user guide (docs/src, an mdBook), the README and cluster.example.yml against the program
//! they describe: every `rkers ...` command they quote exists with the flags it shows, every page
//! is in the book's SUMMARY.md, and every relative link (with its `#anchor`) leads somewhere.

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Markdown page of the guide, sorted.
fn guide_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&root().join("docs/src"), &mut pages);
    pages.sort();
    assert!(pages.len() >= 10, "only {} pages in docs/src", pages.len());
    pages
}

/// The documents whose quoted commands and links are checked, as (name, text).
fn documents() -> Vec<(String, PathBuf, String)> {
    let mut files: Vec<PathBuf> = ["cluster.example.yml", "README.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    files.extend(guide_pages());
    files
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(root()).unwrap().display().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            (name, path, text)
        })
        .collect()
}

/// The `rkers ...` commands a document quotes: inline code spans, and the lines of indented or
/// fenced code blocks (their `# comments` cut off).
fn quoted_commands(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|quoted| quoted.strip_prefix("rkers "))
        .map(str::to_string)
        .collect();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let code = if fenced {
            line.trim_start()
        } else if let Some(indented) = line.strip_prefix("    ") {
            indented.trim_start()
        } else {
            continue;
        };
        if let Some(rest) = code.strip_prefix("rkers ") {
            found.push(rest.split(" #").next().unwrap_or(rest).to_string());
        }
    }
    found
}

/// Every `rkers ...` command cluster.example.yml, the README and the guide quote uses
/// subcommands and flags that exist.
#[test]
fn commands_quoted_in_the_example_readme_and_guide_exist() {
    let mut checked = 0;
    let mut commands_seen = 0;
    for (name, _, text) in documents() {
        for rest in quoted_commands(&text) {
            let words: Vec<&str> = rest.split_whitespace().collect();
            // The subcommands are the words before the first flag: a flag's value
            // (`--name before-upgrade`) is no subcommand.
            let commands: Vec<&str> = words
                .iter()
                .take_while(|w| {
                    !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                })
                .copied()
                .collect();
            let flags: Vec<&str> = words
                .iter()
                .map(|w| w.trim_start_matches('['))
                .filter(|w| w.starts_with("--"))
                .map(|w| w.split(['=', ']', '.', '|']).next().unwrap())
                .collect();
            let out = Command::cargo_bin("rkers")
                .unwrap()
                .args(&commands)
                .arg("--help")
                .output()
                .unwrap();
            let help = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{name}: `rkers {rest}`: {help}");
            commands_seen += 1;
            for flag in flags {
                let exact = help.match_indices(flag).any(|(i, _)| {
                    !help[i + flag.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '-')
                });
                assert!(exact, "{name}: `rkers {rest}`: no {flag} in\n{help}");
                checked += 1;
            }
        }
    }
    assert!(
        commands_seen >= 40 && checked >= 40,
        "only {commands_seen} commands and {checked} flags checked"
    );
}

/// mdBook's id of a heading: lowercase letters, digits, `-` and `_`, spaces as `-`.
fn heading_id(title: &str) -> String {
    title
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut ids = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            ids.insert(heading_id(line.trim_start_matches('#').trim()));
        }
    }
    ids
}

/// The targets of a document's Markdown links `[text](target)`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            continue;
        }
        let outside_code: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for part in outside_code.split("](").skip(1) {
            if let Some(end) = part.find(')') {
                found.push(part[..end].to_string());
            }
        }
    }
    found
}

/// Every relative link of the README and the guide names a file that exists and, with
/// `#anchor`, a heading of that page.
#[test]
fn relative_links_of_the_readme_and_guide_resolve() {
    let mut checked = 0;
    for (name, path, text) in documents() {
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let page = if file.is_empty() {
                path.clone()
            } else {
                path.parent().unwrap().join(file)
            };
            assert!(
                page.exists(),
                "{name}: link to {target}: {} is missing",
                page.display()
            );
            if let Some(anchor) = anchor {
                let ids = anchors(&std::fs::read_to_string(&page).unwrap());
                assert!(
                    ids.contains(anchor),
                    "{name}: link to {target}: no heading with id {anchor} (ids: {ids:?})"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links checked");
}

/// SUMMARY.md lists every page of docs/src, and every page it lists exists.
#[test]
fn the_summary_lists_every_page() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary).iter().map(|l| src.join(l)).collect();
    for page in &listed {
        assert!(
            page.exists(),
            "SUMMARY.md lists {}, which is missing",
            page.display()
        );
    }
    for page in guide_pages() {
        if page.ends_with("SUMMARY.md") {
            continue;
        }
        assert!(
            listed.contains(&page),
            "SUMMARY.md does not list {}",
            page.display()
        );
    }
}

/// The user-facing pages carry no issue numbers and no developer paths into src/.
#[test]
fn user_pages_speak_to_users() {
    for page in guide_pages() {
        if page.components().any(|c| c.as_os_str() == "contributing") {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        let lower = text.to_lowercase();
        for word in ["(issue ", "issue #", "`src/"] {
            assert!(!lower.contains(word), "{}: mentions {word}", page.display());
        }
    }
}
