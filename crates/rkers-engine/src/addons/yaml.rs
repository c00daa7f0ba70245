//! RKE1's `toYaml` template function (RKE's templates package: JSON, then YAML by
//! ghodss/yaml, i.e. yaml.v2): a value as block YAML, keys in yaml.v2's order, sequences inside
//! mappings not indented, a string plain where yaml.v2 leaves it plain. Where yaml.v2 would
//! pick another style (single quotes, literal blocks, folding) the string is double-quoted
//! instead: the same value, other bytes.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// `v` with every object's keys in byte order (Go's encoding/json order).
pub(crate) fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let b: BTreeMap<String, serde_json::Value> =
                m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            serde_json::Value::Object(b.into_iter().collect())
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

/// RKE1's `toYaml`: the value as block YAML, without the final newline.
pub fn to_yaml(v: &serde_json::Value) -> String {
    let mut out = String::new();
    emit_yaml(&mut out, v, 0, false);
    out.trim_end_matches('\n').to_string()
}

/// yaml.v2's order of mapping keys: at the first differing character, two letters compare as
/// characters, a non-letter comes before a letter, and runs of digits compare as numbers.
fn key_order(a: &str, b: &str) -> Ordering {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    let (x, y) = (a[i], b[i]);
    match (x.is_alphabetic(), y.is_alphabetic()) {
        (true, true) => return x.cmp(&y),
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    let run = |s: &[char]| {
        let digits: String = s[i..].iter().take_while(|c| c.is_ascii_digit()).collect();
        (digits.parse::<u128>().unwrap_or(0), digits.len())
    };
    let ((an, al), (bn, bl)) = (run(&a), run(&b));
    an.cmp(&bn).then(al.cmp(&bl)).then(x.cmp(&y))
}

/// A string as yaml.v2 writes it when that is plain, else double-quoted.
fn string_scalar(s: &str) -> String {
    if plain(s) {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// Whether yaml.v2 writes `s` plain: only characters no YAML indicator uses, no indicator
/// first, and not a text that reads back as a bool, null, number or date. Conservative: a
/// string this refuses may be plain in yaml.v2 too (then only the bytes differ).
fn plain(s: &str) -> bool {
    const OTHER_TYPES: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
    ];
    let Some(first) = s.chars().next() else {
        return false;
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/-+=%@".contains(c);
    if !s.chars().all(allowed) || "-+.%@=".contains(first) || OTHER_TYPES.contains(&s) {
        return false;
    }
    // A digit first: a number, a date or a base-60 value may read back as such; a percentage
    // (`20%`, a rolling update's maxUnavailable) cannot.
    !first.is_ascii_digit()
        || (s.ends_with('%') && s[..s.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

fn emit_yaml(out: &mut String, v: &serde_json::Value, indent: usize, in_seq: bool) {
    use serde_json::Value as J;
    let pad = " ".repeat(indent);
    match v {
        J::Object(m) if m.is_empty() => out.push_str("{}\n"),
        J::Array(a) if a.is_empty() => out.push_str("[]\n"),
        J::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|(a, _), (b, _)| key_order(a, b));
            for (i, (k, c)) in entries.into_iter().enumerate() {
                if i > 0 || !in_seq {
                    out.push_str(&pad);
                }
                out.push_str(&string_scalar(k));
                out.push(':');
                match c {
                    J::Object(cm) if !cm.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent + 2, false);
                    }
                    J::Array(ca) if !ca.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent, false);
                    }
                    _ => {
                        out.push(' ');
                        emit_yaml(out, c, indent, false);
                    }
                }
            }
        }
        J::Array(a) => {
            for c in a {
                out.push_str(&pad);
                out.push_str("- ");
                match c {
                    J::Object(cm) if !cm.is_empty() => emit_yaml(out, c, indent + 2, true),
                    J::Array(ca) if !ca.is_empty() => {
                        out.push('\n');
                        emit_yaml(out, c, indent + 2, false);
                    }
                    _ => emit_yaml(out, c, indent, false),
                }
            }
        }
        J::String(text) => {
            out.push_str(&string_scalar(text));
            out.push('\n');
        }
        scalar => {
            out.push_str(&serde_json::to_string(scalar).unwrap_or_default());
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn to_yaml_matches_yaml_v2_block_style() {
        let v = json!([{"key": "a", "operator": "Exists", "tolerationSeconds": 30}]);
        assert_eq!(
            to_yaml(&v),
            "- key: a\n  operator: Exists\n  tolerationSeconds: 30"
        );
        let v = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "20%"}});
        assert_eq!(
            to_yaml(&v),
            "rollingUpdate:\n  maxUnavailable: 20%\ntype: RollingUpdate"
        );
        let v = json!({"a": {}, "b": [], "c": null, "d": true});
        assert_eq!(to_yaml(&v), "a: {}\nb: []\nc: null\nd: true");
    }

    /// As yaml.v2 v2.4.0 writes them (checked with it).
    #[test]
    fn strings_yaml_v2_quotes_are_quoted_and_plain_ones_plain() {
        let quoted = [
            "true",
            "no",
            "Off",
            "null",
            "",
            "1",
            "1.5",
            "0x1f",
            "2024-01-02",
            "1e3",
            "~",
        ];
        for s in quoted {
            assert_eq!(string_scalar(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
        for s in [
            "NoSchedule",
            "node.kubernetes.io/unreachable",
            "50%",
            "v1.2.3",
            "a-b_c",
            "x=y",
        ] {
            assert_eq!(string_scalar(s), s, "{s:?}");
        }
        // yaml.v2 writes these plain (`-a`, `a b`) or single-quoted (`'a: b'`, `'%x'`); rkers
        // double-quotes them: the same strings, other bytes.
        for s in ["-a", "a b", "a: b", "%x"] {
            assert_eq!(string_scalar(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn keys_follow_yaml_v2s_order() {
        let mut keys = vec!["b", "a_b", "aB", "a10", "a9", "A", "_x", "a.b"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["_x", "A", "a.b", "a_b", "a9", "a10", "aB", "b"]);
    }
}
