//! The layering the code's layout promises (docs/src/contributing/layout.md), read from the
//! code's own imports: the engine's and the root package's top-level modules import each other
//! without a circle, so each can be read, tested and moved on top of the ones below it; the pure
//! core's `[dependencies]` hold no async runtime, network, Docker, Kubernetes or database crate,
//! and the engine's no server, database or command-line completion crate. Cargo refuses a
//! circle between crates (the engine cannot name `cli`, `api` or `serve`); this test refuses one
//! between a crate's modules, which the compiler allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` with the `.rs` files it is made of (test files left out:
/// a module's tests may use anything).
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            collect(&path, &mut files);
            out.insert(name, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !matches!(name.as_str(), "lib" | "main")
        {
            out.insert(name, vec![path]);
        }
    }
    out
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .contains("tests")
        {
            files.push(path);
        }
    }
}

/// The top-level modules `text` names through `crate::`, as `crate::a::…` or `crate::{a, b::…}`.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        // `rkers_core::…` and the like are other crates, not this one's modules.
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            // Top-level names of the group only: depth 0 between commas.
            let mut depth = 0;
            let mut start = 0;
            let inner = &group[..end];
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(ident(inner[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            names.insert(ident(inner[start..].trim()));
        } else {
            names.insert(ident(rest));
        }
    }
    names.remove("");
    names
}

/// Strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let lw = self.low[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w.as_str()) {
                    let iw = self.index[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_modules_import_each_other_without_a_circle() {
    // The root package names the engine's modules through its re-exports (`crate::phases`),
    // so the two crates' modules are one graph.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let engine = modules(&root.join("crates/rkers-engine/src"));
    assert!(engine.len() > 10, "{engine:?}");
    let mut modules = modules(&root.join("src"));
    assert!(modules.contains_key("cli"), "{modules:?}");
    modules.extend(engine);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Which file makes each edge, for the failure message.
    let mut through: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    for (name, files) in &modules {
        let edges = graph.entry(name.clone()).or_default();
        for file in files {
            let text = std::fs::read_to_string(file).unwrap();
            for used in crate_paths(&text) {
                if used != *name && modules.contains_key(&used) {
                    through
                        .entry((name.clone(), used.clone()))
                        .or_insert_with(|| file.clone());
                    edges.insert(used);
                }
            }
        }
    }
    let found = circles(&graph);
    let explain: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = through
                .iter()
                .filter(|((a, b), _)| c.contains(a) && c.contains(b))
                .map(|((a, b), f)| format!("{a} -> {b} ({})", f.display()))
                .collect();
            format!("{c:?}: {}", edges.join("; "))
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", explain.join("\n"));
    // The layers the layout names, checked the way round that matters.
    for (low, high) in [
        ("hosts", "phases"),
        ("checks", "doctor"),
        ("checks", "phases"),
        ("kubeapi", "phases"),
        ("phases", "cli"),
        ("phases", "api"),
    ] {
        assert!(
            !graph[low].contains(high),
            "{low} imports {high}, above it ({})",
            through[&(low.to_string(), high.to_string())].display()
        );
    }
}

#[test]
fn the_detector_sees_a_circle_and_grouped_imports() {
    assert_eq!(
        crate_paths(
            "use crate::{hosts::Host, output::{self, Reporter}};\nlet x = crate::cli::run;"
        ),
        BTreeSet::from(["cli".to_string(), "hosts".into(), "output".into()])
    );
    assert!(crate_paths("use rkers_core::diff::Action;").is_empty());
    let graph = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(
        circles(&graph),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// The names of the crates a manifest's `[dependencies]` table lists.
fn dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let deps = text
        .split("\n[dependencies]")
        .nth(1)
        .unwrap_or_else(|| panic!("{} has a [dependencies] table", manifest.display()));
    let deps = deps.split("\n[").next().unwrap_or(deps);
    deps.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split(['=', '.', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_core_depends_on_no_runtime_network_or_cluster_crate() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/rkers-core/Cargo.toml");
    let names = dependencies(&manifest);
    assert!(names.iter().any(|n| n == "serde"), "{names:?}");
    for forbidden in [
        "tokio",
        "futures",
        "russh",
        "bollard",
        "hyper",
        "hyper-util",
        "kube",
        "k8s-openapi",
        "reqwest",
        "axum",
        "sqlx",
        "rkers-engine",
    ] {
        assert!(
            !names.iter().any(|n| n == forbidden),
            "rkers-core depends on {forbidden} ({})",
            manifest.display()
        );
    }
}

#[test]
fn the_engine_depends_on_no_server_database_or_completion_crate() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/rkers-engine/Cargo.toml");
    let names = dependencies(&manifest);
    assert!(names.iter().any(|n| n == "russh"), "{names:?}");
    for forbidden in [
        "axum",
        "sqlx",
        "aes-gcm",
        "tracing-subscriber",
        "clap_complete",
        "clap_mangen",
        "rkers",
    ] {
        assert!(
            !names.iter().any(|n| n == forbidden),
            "rkers-engine depends on {forbidden} ({})",
            manifest.display()
        );
    }
}

/// The public functions of `text` (any `pub`, `pub(crate)`, `pub(super)`) whose error is a bare
/// `String`, by name.
fn public_string_errors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pub") {
        let decl = &rest[at..];
        rest = &rest[at + 3..];
        let after_vis = match decl[3..].trim_start() {
            s if s.starts_with('(') => s.split_once(')').map_or("", |(_, r)| r).trim_start(),
            s => s,
        };
        let after_async = after_vis
            .strip_prefix("async ")
            .unwrap_or(after_vis)
            .trim_start();
        let Some(sig) = after_async.strip_prefix("fn ") else {
            continue;
        };
        let end = sig.find(['{', ';']).unwrap_or(sig.len());
        let compact: String = sig[..end]
            .split_whitespace()
            .take_while(|word| *word != "where")
            .collect();
        if let Some((_, ret)) = compact.rsplit_once("->")
            && ret.starts_with("Result<")
            && ret.ends_with(",String>")
        {
            out.push(
                compact
                    .split(['(', '<'])
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    out
}

#[test]
fn no_public_function_fails_with_a_bare_string() {
    // Errors keep their type up to the command (issue 28): a caller can match on them, and the
    // final event finds the failed hosts in them. A file's private helpers may still use text.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for src in ["src", "crates/rkers-core/src", "crates/rkers-engine/src"] {
        collect(&root.join(src), &mut files);
    }
    assert!(files.len() > 100, "{}", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            public_string_errors(&text)
                .into_iter()
                .map(move |name| format!("{}: {name}", f.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "public functions failing with a String:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_string_error_finder_sees_each_visibility() {
    let text = "pub fn a() -> Result<(), String> {}\n\
                pub(crate) async fn b(x: u8)\n    -> Result<Vec<u8>, String>\nwhere T: X {}\n\
                fn private() -> Result<(), String> {}\n\
                pub fn typed() -> Result<(), Error> {}\n\
                pub(super) fn c() -> Result<BTreeMap<String, String>, String>;";
    assert_eq!(public_string_errors(text), ["a", "b", "c"]);
}
