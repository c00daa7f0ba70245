//! JSON output byte-compatible with Go's `json.MarshalIndent(v, "", "  ")`: two-space indent,
//! no trailing newline, and Go's HTML-safe escaping of `<`, `>`, `&`, U+2028 and U+2029 (so a
//! state file rewritten by rkers diffs cleanly against one written by RKE1).

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

pub(crate) fn to_string_indent<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter::new());
    value.serialize(&mut ser)?;
    // Only valid UTF-8 is ever written by serde_json.
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

struct GoFormatter {
    pretty: PrettyFormatter<'static>,
}

impl GoFormatter {
    fn new() -> Self {
        GoFormatter {
            pretty: PrettyFormatter::with_indent(b"  "),
        }
    }
}

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, ch) in fragment.char_indices() {
            let escaped = match ch {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(&fragment.as_bytes()[start..i])?;
            writer.write_all(escaped.as_bytes())?;
            start = i + ch.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.pretty.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.pretty.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_go_marshal_indent() {
        let v = json!({"a": {"b": [1, "x<y>&z\u{2028}"], "e": {}, "f": []}, "n": null});
        let text = to_string_indent(&v).unwrap();
        let expected = "{\n  \"a\": {\n    \"b\": [\n      1,\n      \"x\\u003cy\\u003e\\u0026z\\u2028\"\n    ],\n    \"e\": {},\n    \"f\": []\n  },\n  \"n\": null\n}";
        assert_eq!(text, expected);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
