//! How gopkg.in/yaml.v2 writes one scalar, for RKE1's `toYaml` (`ghodss/yaml.JSONToYAML`: the
//! JSON decoded by yaml.v2, encoded again by it). A string is plain unless it would read back as
//! something else (a YAML 1.1 bool, null, number or timestamp: double-quoted), needs quoting to
//! stay one plain scalar (single-quoted), holds line breaks (a literal block) or characters
//! YAML cannot print (double-quoted with escapes). Checked against the real ghodss/yaml v1.0.0
//! and yaml.v2 v2.4.0 on the cases of the tests below.

/// A JSON number as yaml.v2 writes the int or float64 it decodes it to.
pub(super) fn number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    go_float(n.as_f64().unwrap_or_default())
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
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
    if f == 0.0 {
        return "0".into();
    }
    // Shortest digits, then Go's choice between %e and %f: %e when the exponent is below -4
    // or at least 6 (`eprec` is 6 for the shortest form).
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

/// `s` as a block-context scalar; `indent` is the indentation of the lines of a literal block.
pub(super) fn string(s: &str, indent: usize) -> String {
    if !resolves_to_string(s) {
        return double_quoted(s);
    }
    if s.chars().any(|c| !printable(c) && c != '\n') {
        return double_quoted(s);
    }
    if s.contains('\n') {
        return literal(s, indent);
    }
    if plain_allowed(s) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "''"))
}

fn literal(s: &str, indent: usize) -> String {
    let trailing = s.len() - s.trim_end_matches('\n').len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent);
    let body = s.strip_suffix('\n').unwrap_or(s);
    let mut out = format!("|{chomp}");
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    out
}

fn printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && c != '\u{feff}'
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if !printable(c) && (c as u32) <= 0xff => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if !printable(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// yaml.v2's `resolve` for an untagged plain scalar: does `s` read back as a string?
fn resolves_to_string(s: &str) -> bool {
    const OTHER: [&str; 36] = [
        "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off",
        "OFF", "true", "True", "TRUE", "false", "False", "FALSE", "~", "null", "Null", "NULL",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "-.inf", "-.Inf",
    ];
    if s.is_empty() || OTHER.contains(&s) || s == "+.INF" || s == "-.INF" || s == "<<" {
        return false;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'.') {
        return true;
    }
    let plain = s.replace('_', "");
    !(go_int(&plain)
        || float_syntax(&plain)
        || base60_float(s)
        || (first.is_ascii_digit() && timestamp(s)))
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint` accepting it (prefixes 0x, 0o, 0b, 0).
fn go_int(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (digits, radix) =
        if let Some(r) = unsigned.strip_prefix("0x").or(unsigned.strip_prefix("0X")) {
            (r, 16)
        } else if let Some(r) = unsigned.strip_prefix("0o").or(unsigned.strip_prefix("0O")) {
            (r, 8)
        } else if let Some(r) = unsigned.strip_prefix("0b").or(unsigned.strip_prefix("0B")) {
            (r, 2)
        } else if unsigned.len() > 1 && unsigned.starts_with('0') {
            (&unsigned[1..], 8)
        } else {
            (unsigned, 10)
        };
    !digits.is_empty() && u64::from_str_radix(digits, radix).is_ok()
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn float_syntax(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (number, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let number_ok = match number.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && frac.bytes().all(|b| b.is_ascii_digit()),
        None => digits(number),
    };
    number_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn base60_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut parts = whole.split(':');
    let head = parts.next().unwrap_or("");
    let sixties: Vec<&str> = parts.collect();
    !sixties.is_empty()
        && head.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && head.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        && sixties.iter().all(|p| {
            (1..=2).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u32>().is_ok_and(|n| n < 60)
        })
        && frac.bytes().all(|b| b.is_ascii_digit() || b == b'_')
}

/// yaml.v2's timestamp forms: `2006-1-2`, optionally followed by `T`, `t` or a space and a time.
fn timestamp(s: &str) -> bool {
    let date_end = s.find(['T', 't', ' ']).unwrap_or(s.len());
    let mut date = s[..date_end].split('-');
    let ok = |p: Option<&str>, max: usize| {
        p.is_some_and(|p| (1..=max).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let date_ok = date
        .next()
        .is_some_and(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()))
        && ok(date.next(), 2)
        && ok(date.next(), 2)
        && date.next().is_none();
    if !date_ok {
        return false;
    }
    if date_end == s.len() {
        return true;
    }
    let time = &s[date_end + 1..];
    let clock = time.split(['Z', '+', '-', '.']).next().unwrap_or("");
    let mut hms = clock.split(':');
    ok(hms.next(), 2) && ok(hms.next(), 2) && ok(hms.next(), 2) && hms.next().is_none()
}

/// libyaml's `yaml_emitter_analyze_scalar` for block context: may `s` be written plain?
fn plain_allowed(s: &str) -> bool {
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if s.starts_with(' ') || s.ends_with(' ') {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    let blank_after = |i: usize| chars.get(i + 1).is_none_or(|c| *c == ' ' || *c == '\t');
    for (i, c) in chars.iter().enumerate() {
        let indicator = if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' | '-' => blank_after(i),
                _ => false,
            }
        } else {
            match c {
                ':' => blank_after(i),
                '#' => chars[i - 1] == ' ' || chars[i - 1] == '\t',
                _ => false,
            }
        };
        if indicator {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every case as ghodss/yaml v1.0.0 with yaml.v2 v2.4.0 wrote it.
    #[test]
    fn strings_are_written_as_yaml_v2_writes_them() {
        let cases = [
            ("RollingUpdate", "RollingUpdate"),
            ("25%", "25%"),
            ("true", "\"true\""),
            ("yes", "\"yes\""),
            ("n", "\"n\""),
            ("Yes", "\"Yes\""),
            ("ON", "\"ON\""),
            ("null", "\"null\""),
            ("~", "\"~\""),
            ("", "\"\""),
            ("1", "\"1\""),
            ("1.5", "\"1.5\""),
            ("0x1f", "\"0x1f\""),
            ("1e3", "\"1e3\""),
            ("2001-12-14", "\"2001-12-14\""),
            ("1:20", "\"1:20\""),
            (".inf", "\".inf\""),
            ("01", "\"01\""),
            ("+1", "\"+1\""),
            ("-1", "\"-1\""),
            ("1_000", "\"1_000\""),
            ("0o17", "\"0o17\""),
            ("0b101", "\"0b101\""),
            ("-", "'-'"),
            (" x", "' x'"),
            ("x ", "'x '"),
            ("a: b", "'a: b'"),
            ("a #b", "'a #b'"),
            ("#c", "'#c'"),
            ("- x", "'- x'"),
            ("-x", "-x"),
            ("?x", "?x"),
            (":x", ":x"),
            ("x:", "'x:'"),
            ("@x", "'@x'"),
            ("`x", "'`x'"),
            ("%x", "'%x'"),
            ("'x", "'''x'"),
            ("\"x", "'\"x'"),
            ("[x", "'[x'"),
            (",x", "',x'"),
            ("a,b", "a,b"),
            ("a'b", "a'b"),
            ("café", "café"),
            ("a\tb", "\"a\\tb\""),
            ("a\u{1}b", "\"a\\x01b\""),
            ("kubernetes.io/os", "kubernetes.io/os"),
        ];
        for (input, want) in cases {
            assert_eq!(string(input, 2), want, "{input:?}");
        }
        assert_eq!(string("a\nb", 2), "|-\n  a\n  b");
    }

    #[test]
    fn numbers_are_written_as_go_writes_int_and_float64() {
        let n = |v: serde_json::Value| match v {
            serde_json::Value::Number(n) => number(&n),
            _ => unreachable!(),
        };
        assert_eq!(n(serde_json::json!(1)), "1");
        assert_eq!(n(serde_json::json!(-3)), "-3");
        assert_eq!(n(serde_json::json!(2.5)), "2.5");
        assert_eq!(n(serde_json::json!(1e21)), "1e+21");
        assert_eq!(n(serde_json::json!(0.000001)), "1e-06");
        assert_eq!(n(serde_json::json!(1234567.5)), "1.2345675e+06");
        assert_eq!(n(serde_json::json!(0.25)), "0.25");
    }
}
