//! YAML text as RKE1 produces it with `sigs.k8s.io/yaml` (JSON → go-yaml v2): mapping keys in
//! go-yaml's sort order, block style, sequences not indented under their key, `{}`/`[]` for empty
//! collections, and go-yaml's quoting rules for strings.
//!
//! The exact bytes matter: RKE1 puts the MD5 of this text into `RKE_*_CHECKSUM` env variables
//! of kube-apiserver, so a different rendering would restart the apiserver of an adopted cluster.

use serde_json::Value;
use std::cmp::Ordering;

/// Renders a JSON value as go-yaml v2 would after `sigs.k8s.io/yaml.Marshal`.
pub fn to_go_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_mapping(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_sequence(&mut out, items, 0),
        other => {
            out.push_str(&inline(other, 0));
            out.push('\n');
        }
    }
    out
}

fn sorted_entries(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| go_yaml_key_order(a.0, b.0));
    entries
}

fn write_mapping(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    for (i, (key, value)) in sorted_entries(map).into_iter().enumerate() {
        // The first key of a mapping inside a sequence item shares the `- ` line.
        if !(i == 0 && out.ends_with("- ")) {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&scalar_string(key, None));
        out.push(':');
        write_value_after_key(out, value, indent);
    }
}

fn write_value_after_key(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_mapping(out, map, indent + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_sequence(out, items, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other, indent + 2));
            out.push('\n');
        }
    }
}

fn write_sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => write_mapping(out, map, indent + 2),
            Value::Array(inner) if !inner.is_empty() => {
                // go-yaml puts a nested sequence on the same line: `- - a`.
                write_sequence_inline_start(out, inner, indent + 2);
            }
            other => {
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn write_sequence_inline_start(out: &mut String, items: &[Value], indent: usize) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => write_mapping(out, map, indent + 2),
            Value::Array(inner) if !inner.is_empty() => {
                write_sequence_inline_start(out, inner, indent + 2)
            }
            other => {
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

/// A scalar or an empty collection after a key or a `- `; `block_indent` is the indentation of
/// a literal block's lines.
fn inline(value: &Value, block_indent: usize) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => scalar_string(s, Some(block_indent)),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // go-yaml reads integral JSON numbers back as integers.
        return format!("{}", f as i64);
    }
    go_float(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, as go-yaml writes a float: the shortest digits,
/// in %e form when the exponent is below -4 or at least 6 (`eprec` of the shortest form).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Quoting as go-yaml v2 does it: plain when the text would read back as the same string,
/// double quotes when it would resolve to another type (`"true"`, `""`, `"1.5"`), single quotes
/// when the emitter cannot write it plain (leading indicator, `: `, ` #`, surrounding blanks).
/// A text with line breaks and nothing else unprintable is a literal block (`|-`) where a block
/// may stand (`block_indent`: a value, not a key), as go-yaml writes it.
fn scalar_string(s: &str, block_indent: Option<usize>) -> String {
    let only_breaks = |s: &str| s.chars().all(|c| c == '\n' || !c.is_control());
    if let Some(indent) = block_indent
        && s.contains('\n')
        && resolves_to_string(s)
        && only_breaks(s)
    {
        return literal(s, indent);
    }
    if s.contains('\n') || !resolves_to_string(s) || s.chars().any(|c| c.is_control()) {
        return double_quoted(s);
    }
    if plain_allowed(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn literal(s: &str, indent: usize) -> String {
    let chomp = match s.len() - s.trim_end_matches('\n').len() {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent);
    let mut out = format!("|{chomp}");
    for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    out
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN", "<<",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    let first = s.chars().next().unwrap_or(' ');
    if first.is_ascii_digit() || matches!(first, '+' | '-' | '.') {
        let plain = s.replace('_', "");
        if plain.parse::<i64>().is_ok() || plain.parse::<f64>().is_ok() {
            return false;
        }
        let unsigned = plain.trim_start_matches(['+', '-']);
        if let Some(hex) = unsigned.strip_prefix("0x")
            && i64::from_str_radix(hex, 16).is_ok()
        {
            return false;
        }
        if let Some(bin) = unsigned.strip_prefix("0b")
            && i64::from_str_radix(bin, 2).is_ok()
        {
            return false;
        }
        if is_base60_float(s) {
            return false;
        }
    }
    true
}

fn is_base60_float(s: &str) -> bool {
    // go-yaml: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let body = s.trim_start_matches(['+', '-']);
    let (int_part, _frac) = body.split_once('.').unwrap_or((body, ""));
    let mut parts = int_part.split(':');
    let Some(head) = parts.next() else {
        return false;
    };
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty()
        || !head.starts_with(|c: char| c.is_ascii_digit())
        || !head.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    rest.iter().all(|p| {
        (1..=2).contains(&p.len())
            && p.chars().all(|c| c.is_ascii_digit())
            && (p.len() == 1 || p.as_bytes()[0] <= b'5')
    })
}

fn plain_allowed(s: &str) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    if s.starts_with(' ') || s.ends_with(' ') || s.starts_with('\t') {
        return false;
    }
    if matches!(
        first,
        '#' | ','
            | '['
            | ']'
            | '{'
            | '}'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
    ) {
        return false;
    }
    if matches!(first, '-' | '?' | ':') {
        let second = s.chars().nth(1);
        if second.is_none() || second == Some(' ') {
            return false;
        }
    }
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    true
}

/// go-yaml v2's mapping key order (`keyList.Less`) for string keys: letters compare by code
/// point, a non-letter sorts before a letter, and runs of digits compare numerically.
pub fn go_yaml_key_order(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .saturating_mul(10)
                .saturating_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .saturating_mul(10)
                .saturating_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_audit_policy_renders_like_rke1() {
        let policy = json!({
            "kind": "Policy",
            "apiVersion": "audit.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "rules": [{"level": "Metadata"}]
        });
        assert_eq!(
            to_go_yaml(&policy),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata:\n  creationTimestamp: null\nrules:\n- level: Metadata\n"
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(scalar_string("", None), "\"\"");
        assert_eq!(scalar_string("true", None), "\"true\"");
        assert_eq!(scalar_string("5000", None), "\"5000\"");
        assert_eq!(scalar_string("latest", None), "latest");
        assert_eq!(scalar_string("a: b", None), "'a: b'");
        assert_eq!(scalar_string("-x", None), "-x");
        assert_eq!(scalar_string("- x", None), "'- x'");
        assert_eq!(scalar_string("1:20", None), "\"1:20\"");
    }

    #[test]
    fn literal_blocks_and_floats_as_ghodss_yaml_writes_them() {
        // As ghodss/yaml v1.0.0 with yaml.v2 v2.4.0 wrote it (RKE1's toYaml).
        let v = serde_json::json!({"multi": "a\nb", "f": [2.5, 1e21, 0.000001, 1234567.5, 100000.5],
            "l": [[3, 4], "x\n"], "ctrl": "a\u{1}b", "tab": "\tx"});
        assert_eq!(
            to_go_yaml(&v),
            "ctrl: \"a\\x01b\"\nf:\n- 2.5\n- 1e+21\n- 1e-06\n- 1.2345675e+06\n- 100000.5\nl:\n- - 3\n  - 4\n- |\n  x\nmulti: |-\n  a\n  b\ntab: \"\\tx\"\n"
        );
    }

    #[test]
    fn key_order_puts_uppercase_first() {
        let mut keys = vec!["kind", "apiVersion", "Limits", "enforce-version", "enforce"];
        keys.sort_by(|a, b| go_yaml_key_order(a, b));
        assert_eq!(
            keys,
            vec!["Limits", "apiVersion", "enforce", "enforce-version", "kind"]
        );
    }
    /// Expected text produced by go-yaml v2.4.0 (`yaml.Unmarshal` of the JSON, `yaml.Marshal`),
    /// i.e. what sigs.k8s.io/yaml writes for it.
    #[test]
    fn matches_go_yaml_on_tricky_values() {
        let value: Value = serde_json::from_str(r##"{"a":["- x","a: b","true","","1:20","0x1F","x #y","#c","@at","it's","-x","?q","plain text","null","~","1e3","007","v1.2","é", {"nested":[[1,2],["a"]], "empty":[], "m":{}}],"Zeta":1,"alpha2":2,"alpha10":3,"a1":null,"b":1.5,"c":false}"##).unwrap();
        let expected = r##"Zeta: 1
a:
- '- x'
- 'a: b'
- "true"
- ""
- "1:20"
- "0x1F"
- 'x #y'
- '#c'
- '@at'
- it's
- -x
- ?q
- plain text
- "null"
- "~"
- "1e3"
- "007"
- v1.2
- é
- empty: []
  m: {}
  nested:
  - - 1
    - 2
  - - a
a1: null
alpha2: 2
alpha10: 3
b: 1.5
c: false
"##;
        assert_eq!(to_go_yaml(&value), expected);
    }
}
