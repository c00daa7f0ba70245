//! Every `§` reference in the source names a section of a document inside the repository
//! (docs/README.md says which document a reference means).

use std::collections::BTreeSet;
use std::path::Path;

/// Section numbers a document has: its numbered headings (`## 12. ...`, `### 11.4 ...`), and
/// `N.K` for item K of a numbered list inside section N.
fn sections(doc: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut current = String::new();
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix('#') {
            let title = heading.trim_start_matches('#').trim();
            let number: String = title
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.').to_string();
            if !number.is_empty() {
                if !number.contains('.') {
                    current = number.clone();
                }
                found.insert(number);
            }
        } else if !current.is_empty() {
            let item: String = line.chars().take_while(|c| c.is_ascii_digit()).collect();
            if !item.is_empty() && line[item.len()..].starts_with(". ") {
                found.insert(format!("{current}.{item}"));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(document, section)` of every reference in `text`.
fn references(text: &str) -> Vec<(&'static str, String)> {
    let mut refs = Vec::new();
    for (i, _) in text.match_indices('§') {
        let after = &text[i + '§'.len_utf8()..];
        let number: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.').to_string();
        if number.is_empty() {
            continue;
        }
        // `windows-wins.md §5.1, §5.3` and a reference wrapped onto the next comment line
        // both belong to the document named just before them.
        let before = &text[..i];
        let window: String = before
            .chars()
            .rev()
            .take(40)
            .collect::<String>()
            .chars()
            .rev()
            .collect();
        let window = window.split(['(', ';']).next_back().unwrap_or_default();
        let named = |doc: &str| {
            window
                .rsplit_once(doc)
                .is_some_and(|(_, rest)| !rest.contains("spec") && !rest.contains("RKE"))
        };
        let doc = ["windows-wins.md", "incidents.md"]
            .into_iter()
            .find(|d| named(d))
            .unwrap_or("rke1-reference.md");
        refs.push((doc, number));
    }
    refs
}

#[test]
fn every_section_reference_in_the_source_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs: Vec<(&str, BTreeSet<String>)> =
        ["rke1-reference.md", "windows-wins.md", "incidents.md"]
            .into_iter()
            .map(|d| {
                let text = std::fs::read_to_string(root.join("docs/spec").join(d)).unwrap();
                (d, sections(&text))
            })
            .collect();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates"), &mut files);
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (doc, section) in references(&text) {
            checked += 1;
            let known = &docs.iter().find(|(d, _)| *d == doc).unwrap().1;
            if !known.contains(&section) {
                missing.push(format!(
                    "{}: {doc} §{section}",
                    file.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} references found: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "references to missing sections:\n{}",
        missing.join("\n")
    );
}

#[test]
fn sections_and_list_items_are_found() {
    let doc = "## 33. Bugs\n1. first\n17. seventeenth\n### 33.2 not a list\n## 4. Next\n";
    let s = sections(doc);
    for want in ["33", "33.1", "33.17", "33.2", "4"] {
        assert!(s.contains(want), "{want} in {s:?}");
    }
    assert!(!s.contains("4.1"));
    assert_eq!(
        references(
            "(windows-wins.md §5.1, §5.3); RKE1 does it too (§22.1; windows-wins.md, spec §28); \
             incidents.md §3"
        ),
        [
            ("windows-wins.md", "5.1".to_string()),
            ("windows-wins.md", "5.3".to_string()),
            ("rke1-reference.md", "22.1".to_string()),
            ("rke1-reference.md", "28".to_string()),
            ("incidents.md", "3".to_string())
        ]
    );
}
