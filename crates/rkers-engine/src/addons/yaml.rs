//! RKE1's `toYaml` template function (RKE's templates package: JSON, then YAML by
//! ghodss/yaml): a value as block YAML with sorted keys, sequences inside mappings not indented.
//! The objects are yaml.v2's; the text quotes every key and string, where yaml.v2 quotes only
//! what would otherwise read as another type.

use std::collections::BTreeMap;

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

/// RKE1's `toYaml`: the value as JSON, re-emitted as block YAML with sorted keys (yaml.v2
/// style: sequences inside mappings are not indented), without the final newline.
pub fn to_yaml(v: &serde_json::Value) -> String {
    let mut out = String::new();
    emit_yaml(&mut out, &sorted(v.clone()), 0, false);
    out.trim_end_matches('\n').to_string()
}

fn emit_yaml(out: &mut String, v: &serde_json::Value, indent: usize, in_seq: bool) {
    use serde_json::Value as J;
    let pad = " ".repeat(indent);
    match v {
        J::Object(m) if m.is_empty() => out.push_str("{}\n"),
        J::Array(a) if a.is_empty() => out.push_str("[]\n"),
        J::Object(m) => {
            for (i, (k, c)) in m.iter().enumerate() {
                if i > 0 || !in_seq {
                    out.push_str(&pad);
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
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
            "- \"key\": \"a\"\n  \"operator\": \"Exists\"\n  \"tolerationSeconds\": 30"
        );
        let v = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}});
        assert_eq!(
            to_yaml(&v),
            "\"rollingUpdate\":\n  \"maxUnavailable\": 1\n\"type\": \"RollingUpdate\""
        );
    }
}
