//! Invalid configs: each file in tests/invalid_configs/ starts with one or more
//! `# expect: <line>:<col>: <message substring>` lines, and loading + defaulting + validating
//! it must report exactly those problems (same position, message containing the text).

#[path = "fixtures/config/catalog.rs"]
mod catalog;

use std::path::Path;

use rkers::config::{self, ConfigError, Diagnostic};

struct Expectation {
    line: u64,
    column: u64,
    text: String,
}

fn expectations(src: &str, file: &str) -> Vec<Expectation> {
    src.lines()
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("# expect:"))
        .map(|rest| {
            let mut parts = rest.trim().splitn(3, ':');
            let line = parts.next().and_then(|s| s.trim().parse().ok());
            let column = parts.next().and_then(|s| s.trim().parse().ok());
            let text = parts.next().map(|s| s.trim().to_string());
            match (line, column, text) {
                (Some(line), Some(column), Some(text)) if !text.is_empty() => {
                    Expectation { line, column, text }
                }
                _ => panic!("{file}: malformed expectation `# expect:{rest}`"),
            }
        })
        .collect()
}

/// Everything rkers reports for a config, as `rkers up` would before touching any host.
fn problems(src: &str, file: &str) -> (Vec<Diagnostic>, i32) {
    let catalog = catalog::catalog();
    match config::load_str(src, file) {
        Err(e) => (e.diagnostics(), e.exit_code()),
        Ok(mut loaded) => {
            config::apply_defaults(&mut loaded.config, &catalog);
            let found = config::validate(&loaded.config, &catalog, &loaded.locations);
            let code = ConfigError::Invalid(found.clone()).exit_code();
            (found, code)
        }
    }
}

#[test]
fn every_invalid_config_reports_its_problems_at_the_right_place() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/invalid_configs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    files.sort();
    assert!(files.len() >= 25, "only {} invalid configs", files.len());

    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(path).unwrap();
        if std::env::var_os("DUMP_DIAGNOSTICS").is_some() {
            for d in problems(&src, &name).0 {
                eprintln!("{d}");
            }
            continue;
        }
        let expected = expectations(&src, &name);
        assert!(!expected.is_empty(), "{name}: no `# expect:` line");
        let (found, exit_code) = problems(&src, &name);
        if found.is_empty() {
            failures.push(format!("{name}: no problem reported"));
            continue;
        }
        assert_eq!(exit_code, 2, "{name}: invalid config must exit with 2");
        for e in &expected {
            let hit = found.iter().any(|d| {
                d.line == e.line && d.column == e.column && d.to_string().contains(&e.text)
            });
            if !hit {
                failures.push(format!(
                    "{name}: expected {}:{}: {} — got {:?}",
                    e.line,
                    e.column,
                    e.text,
                    found.iter().map(|d| d.to_string()).collect::<Vec<_>>()
                ));
            }
        }
        for d in &found {
            let expected_here = expected.iter().any(|e| {
                d.line == e.line && d.column == e.column && d.to_string().contains(&e.text)
            });
            if !expected_here {
                failures.push(format!("{name}: unexpected diagnostic {d}"));
            }
        }
        for d in &found {
            assert!(
                d.to_string()
                    .starts_with(&format!("{name}:{}:{}: ", d.line, d.column))
            );
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn all_problems_are_reported_in_one_error() {
    let src =
        "nodes:\n  - address: a\n    role: [boss]\n  - address: a\n    user: u\n    role: [etcd]\n";
    let (found, _) = problems(src, "cluster.yml");
    let text = ConfigError::Invalid(found.clone()).to_string();
    assert!(found.len() >= 4, "{text}");
    assert!(
        text.contains("cluster.yml:2:5: nodes[0]: node has no `user`"),
        "{text}"
    );
    assert!(
        text.contains("cluster.yml:3:12: nodes[0].role[0]: unknown role \"boss\""),
        "{text}"
    );
    assert!(
        text.contains(
            "cluster.yml:4:5: nodes[1].address: duplicate address \"a\" (also at line 2)"
        ),
        "{text}"
    );
    assert!(text.contains("at least one controlplane host"), "{text}");
}

#[test]
fn prepare_returns_invalid_with_exit_code_2_and_warns_about_deprecations() {
    let catalog = catalog::catalog();
    let bad = config::load_str("nodes: []\n", "c.yml").unwrap();
    let err = config::prepare(bad, &catalog).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        matches!(err, ConfigError::Invalid(ref d) if d.len() == 2),
        "{err}"
    );

    let src = "kubernetes_version: v1.20.15-rancher2-2\nnodes: [{address: a, user: u, role: [etcd, controlplane]}]\n\
               network: {plugin: weave}\nservices:\n  kube-controller:\n    service_cluster_ip_range: 10.53.0.0/16\n";
    let ok = config::prepare(config::load_str(src, "c.yml").unwrap(), &catalog).unwrap();
    let shown: Vec<String> = ok.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        shown,
        vec![
            "c.yml:6:5: services.kube-controller.service_cluster_ip_range: kube-api and kube-controller have different service_cluster_ip_range values"
        ]
    );
}
