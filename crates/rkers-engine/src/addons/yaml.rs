//! RKE1's `toYaml` template function (RKE's templates package: JSON, then YAML by
//! ghodss/yaml, i.e. yaml.v2): a value as block YAML, keys in yaml.v2's order, sequences inside
//! mappings not indented, lists in lists on the item's line, each scalar in the style yaml.v2
//! picks for it ([`super::goyaml_scalar`]: plain, single- or double-quoted, a literal block).

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

/// A string as yaml.v2 writes it; `indent` is that of a literal block's lines.
fn string_scalar(s: &str, indent: usize) -> String {
    super::goyaml_scalar::string(s, indent)
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
                out.push_str(&string_scalar(k, indent + 2));
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
            for (i, c) in a.iter().enumerate() {
                if i > 0 || !in_seq {
                    out.push_str(&pad);
                }
                out.push_str("- ");
                match c {
                    J::Object(cm) if !cm.is_empty() => emit_yaml(out, c, indent + 2, true),
                    // yaml.v2 writes a list in a list on the item's line: `- - 3`.
                    J::Array(ca) if !ca.is_empty() => emit_yaml(out, c, indent + 2, true),
                    _ => emit_yaml(out, c, indent, false),
                }
            }
        }
        J::String(text) => {
            out.push_str(&string_scalar(text, indent + 2));
            out.push('\n');
        }
        J::Number(n) => {
            out.push_str(&super::goyaml_scalar::number(n));
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

    /// As ghodss/yaml v1.0.0 with yaml.v2 v2.4.0 wrote it (the scalars' own cases are in
    /// goyaml_scalar).
    #[test]
    fn nested_values_are_laid_out_as_yaml_v2_lays_them_out() {
        let v = json!({"z": 1, "a": {"b": [{"c": [1, 2]}, [3, 4], {}], "e": [], "d": {}},
            "nodeSelector": {"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": "true"},
            "n": [1, 2.5], "multi": "a\nb"});
        assert_eq!(
            to_yaml(&v),
            "a:\n  b:\n  - c:\n    - 1\n    - 2\n  - - 3\n    - 4\n  - {}\n  d: {}\n  e: []\nmulti: |-\n  a\n  b\n\"n\":\n- 1\n- 2.5\nnodeSelector:\n  kubernetes.io/os: linux\n  node-role.kubernetes.io/worker: \"true\"\nz: 1"
        );
    }

    #[test]
    fn keys_follow_yaml_v2s_order() {
        let mut keys = vec!["b", "a_b", "aB", "a10", "a9", "A", "_x", "a.b"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["_x", "A", "a.b", "a_b", "a9", "a10", "aB", "b"]);
    }
}
