//! KDM's addon templates as RKE1 renders them: the Go `text/template` bodies of
//! `data/addon-templates.json` (KDM's `templateKeys`, byte for byte), executed by gotmpl (Go's
//! text/template in Rust) with the functions of RKE's `templates.CompileTemplateFromMap`.
//!
//! RKE registers sprig's whole text function map plus `toYaml` and `GetKubednsStubDomains`.
//! Of sprig's, the functions KDM's bodies call are here (`default`, `indent`, `nindent`,
//! `splitList`, `first`, `last`) with sprig's semantics; a body that calls another sprig
//! function fails to parse, naming it, rather than rendering something RKE1 would not.

use super::AddonError;
use gotmpl::{FuncMap, Template, TemplateError, Value};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

/// `data/addon-templates.json`, written by `data/generate` from the pinned module; build.rs
/// compresses it into the binary (about 9.8 MB of text).
static EMBEDDED_JSON: LazyLock<String> = LazyLock::new(|| {
    let packed = include_bytes!(concat!(env!("OUT_DIR"), "/addon-templates.json.zst"));
    // build.rs wrote it from the JSON; the test below parses the result.
    zstd::stream::decode_all(&packed[..])
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
});

#[derive(serde::Deserialize)]
struct EmbeddedFile<'a> {
    #[serde(borrow)]
    templates: BTreeMap<&'a str, &'a RawValue>,
}

/// The embedded bodies by template name, each still JSON text: only the one being rendered is
/// decoded, so a plan does not hold every body in memory at once.
static EMBEDDED: LazyLock<BTreeMap<&'static str, &'static RawValue>> = LazyLock::new(|| {
    // The file is generated and checked by data/generate --check; the test below parses it.
    serde_json::from_str::<EmbeddedFile<'static>>(EMBEDDED_JSON.as_str())
        .map(|f| f.templates)
        .unwrap_or_default()
});

/// The body of embedded template `key`, if rkers has it.
pub fn embedded_body(key: &str) -> Option<String> {
    EMBEDDED
        .get(key)
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
}

/// The names of the embedded templates.
pub fn embedded_names() -> Vec<&'static str> {
    EMBEDDED.keys().copied().collect()
}

/// Renders the Go template `body` (named `key` in errors) with `vars` as RKE1 does.
pub fn render(key: &str, body: &str, vars: &serde_json::Value) -> Result<String, AddonError> {
    let failed = |e: TemplateError| AddonError::Render {
        template: key.to_string(),
        message: e.to_string(),
    };
    Template::new(key)
        .funcs(functions())
        .parse(body)
        .map_err(failed)?
        .execute_to_string(&to_value(vars))
        .map_err(failed)
}

fn to_value(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Bool(*b),
        // RKE1's values are typed Go structs: whole numbers are ints there.
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::Uint(u),
            (_, _, Some(f)) => Value::Float(f),
            _ => Value::Nil,
        },
        J::String(s) => Value::String(s.as_str().into()),
        J::Array(a) => Value::List(a.iter().map(to_value).collect()),
        J::Object(m) => Value::Map(Arc::new(
            m.iter()
                .map(|(k, v)| (Arc::<str>::from(k.as_str()), to_value(v)))
                .collect(),
        )),
    }
}

fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Nil | Value::Function(_) => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Uint(u) => J::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::String(s) => J::String(s.to_string()),
        Value::List(l) => J::Array(l.iter().map(to_json).collect()),
        Value::Map(m) => J::Object(m.iter().map(|(k, v)| (k.to_string(), to_json(v))).collect()),
        #[allow(unreachable_patterns)]
        _ => J::Null,
    }
}

fn exec_error(message: String) -> TemplateError {
    TemplateError::Exec(message)
}

fn arg<'a>(args: &'a [Value], i: usize, name: &str) -> Result<&'a Value, TemplateError> {
    args.get(i)
        .ok_or_else(|| exec_error(format!("{name}: missing argument {}", i + 1)))
}

fn int_arg(args: &[Value], i: usize, name: &str) -> Result<i64, TemplateError> {
    match arg(args, i, name)? {
        Value::Int(n) => Ok(*n),
        Value::Uint(n) => i64::try_from(*n).map_err(|_| exec_error(format!("{name}: {n} too big"))),
        other => Err(exec_error(format!("{name}: expected an int, got {other}"))),
    }
}

fn str_arg(args: &[Value], i: usize, name: &str) -> Result<String, TemplateError> {
    match arg(args, i, name)? {
        Value::String(s) => Ok(s.to_string()),
        other => Err(exec_error(format!(
            "{name}: expected a string, got {other}"
        ))),
    }
}

/// sprig's `empty`: nil, false, zero numbers and empty strings, lists and maps.
fn empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(n) => *n == 0,
        Value::Uint(n) => *n == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => false,
    }
}

fn indent(spaces: i64, text: &str) -> String {
    let pad = " ".repeat(usize::try_from(spaces).unwrap_or(0));
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

fn list_end(args: &[Value], name: &str, last: bool) -> Result<Value, TemplateError> {
    match arg(args, 0, name)? {
        Value::List(l) => Ok(if last { l.last() } else { l.first() }
            .cloned()
            .unwrap_or(Value::Nil)),
        Value::Nil => Ok(Value::Nil),
        other => Err(exec_error(format!("{name}: cannot find {name} on {other}"))),
    }
}

fn functions() -> FuncMap {
    let mut f = FuncMap::new();
    f.insert(
        "default".into(),
        Arc::new(|args: &[Value]| {
            let given = args.get(1).filter(|v| !empty(v));
            Ok(given.unwrap_or(arg(args, 0, "default")?).clone())
        }),
    );
    f.insert(
        "indent".into(),
        Arc::new(|args: &[Value]| {
            let text = str_arg(args, 1, "indent")?;
            Ok(Value::String(
                indent(int_arg(args, 0, "indent")?, &text).into(),
            ))
        }),
    );
    f.insert(
        "nindent".into(),
        Arc::new(|args: &[Value]| {
            let text = str_arg(args, 1, "nindent")?;
            let indented = indent(int_arg(args, 0, "nindent")?, &text);
            Ok(Value::String(format!("\n{indented}").into()))
        }),
    );
    f.insert(
        "splitList".into(),
        Arc::new(|args: &[Value]| {
            let sep = str_arg(args, 0, "splitList")?;
            let text = str_arg(args, 1, "splitList")?;
            Ok(Value::List(
                text.split(sep.as_str())
                    .map(|s| Value::String(s.into()))
                    .collect(),
            ))
        }),
    );
    f.insert(
        "first".into(),
        Arc::new(|args: &[Value]| list_end(args, "first", false)),
    );
    f.insert(
        "last".into(),
        Arc::new(|args: &[Value]| list_end(args, "last", true)),
    );
    f.insert(
        "toYaml".into(),
        Arc::new(|args: &[Value]| {
            let json = to_json(arg(args, 0, "toYaml")?);
            Ok(Value::String(super::yaml::to_yaml(&json).into()))
        }),
    );
    f.insert(
        "GetKubednsStubDomains".into(),
        Arc::new(|args: &[Value]| {
            // Go's json.Marshal of a map: keys sorted, compact.
            let json = to_json(arg(args, 0, "GetKubednsStubDomains")?);
            Ok(Value::String(
                serde_json::to_string(&json).unwrap_or_default().into(),
            ))
        }),
    );
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn objects(label: &str, text: &str) -> Vec<serde_json::Value> {
        crate::addons::parse_manifest(label, text)
            .unwrap_or_else(|e| panic!("{label}: YAML does not parse: {e}"))
    }

    /// The golden cases (data/addons-golden/cases.json, written by scripts/addons-golden).
    fn cases() -> Vec<serde_json::Value> {
        let path = repo().join("data/addons-golden/cases.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_embedded_file_has_every_template_rkers_renders() {
        let on_disk = std::fs::read_to_string(repo().join("data/addon-templates.json")).unwrap();
        assert!(
            *EMBEDDED_JSON == on_disk,
            "the binary carries data/addon-templates.json byte for byte"
        );
        let file: serde_json::Value = serde_json::from_str(&EMBEDDED_JSON).unwrap();
        let names = embedded_names();
        assert_eq!(names.len(), file["templates"].as_object().unwrap().len());
        for key in [
            "canal-v3.30.2-rancher2",
            "nginxingress-v1.14.5-rancher1",
            "coredns-v1.8.3",
        ] {
            let body = embedded_body(key).unwrap();
            assert_eq!(body, file["templates"][key].as_str().unwrap(), "{key}");
        }
        assert!(
            embedded_body("aci-v6.1.1.4").is_none(),
            "ACI is not rendered"
        );
    }

    #[test]
    fn functions_follow_sprig_and_rke() {
        let vars = serde_json::json!({
            "List": ["a", "b"], "Empty": "", "Zero": 0, "Map": {"b": {"x": 1}, "a": []},
            "Stub": {"z.local": ["1.1.1.1"], "a.local": ["2.2.2.2", "3.3.3.3"]},
        });
        let r = |body: &str| render("t", body, &vars).unwrap();
        assert_eq!(
            r(r#"{{ default "d" .Empty }}|{{ default "d" .Zero }}|{{ default "d" "x" }}"#),
            "d|d|x"
        );
        assert_eq!(
            r(r#"{{ indent 2 "a\nb" }}|{{ nindent 1 "c" }}"#),
            "  a\n  b|\n c"
        );
        assert_eq!(
            r(r#"{{ first .List }}{{ last .List }}{{ first (splitList "," "x,y") }}"#),
            "abx"
        );
        assert_eq!(r("{{ toYaml .Map }}"), "a: []\nb:\n  x: 1");
        assert_eq!(
            r("{{ GetKubednsStubDomains .Stub }}"),
            r#"{"a.local":["2.2.2.2","3.3.3.3"],"z.local":["1.1.1.1"]}"#
        );
        assert_eq!(r("{{ .Missing }}"), "<no value>");
        let err = render("t.yaml", "{{ upper .Empty }}", &vars)
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.yaml") && err.contains("upper"), "{err}");
    }

    /// A Go toolchain's `go`, or None.
    fn go() -> Option<PathBuf> {
        let candidates = [
            std::env::var_os("GO").map(PathBuf::from),
            Some(PathBuf::from("go")),
            Some(PathBuf::from("/usr/local/go/bin/go")),
        ];
        candidates.into_iter().flatten().find(|g| {
            Command::new(g)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    }

    /// tests/kdm-render, built: RKERS_KDM_RENDER when scripts/test built it, else built here.
    fn go_renderer(dir: &Path) -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("RKERS_KDM_RENDER") {
            return Some(PathBuf::from(path));
        }
        let go = go()?;
        let out = dir.join("kdm-render");
        let status = Command::new(go)
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(repo().join("tests/kdm-render"))
            .env("GOFLAGS", "-modcacherw")
            .env("GOTOOLCHAIN", "local")
            .status()
            .expect("go build runs");
        assert!(status.success(), "go build of tests/kdm-render failed");
        Some(out)
    }

    #[test]
    fn every_embedded_template_parses() {
        let names = embedded_names();
        assert!(names.len() >= 75, "{}", names.len());
        for key in names {
            let parsed = Template::new(key)
                .funcs(functions())
                .parse(&embedded_body(key).unwrap());
            assert!(parsed.is_ok(), "{key}: {:?}", parsed.err());
        }
    }

    /// Go's text/template takes a declaration inside a parenthesized pipeline, and three of
    /// KDM's nginx-ingress templates use one (gotmpl 0.6.1 refused it: vendor/README.md).
    #[test]
    fn a_declaration_in_parentheses_binds_as_in_go() {
        let body = r#"{{- if and ($v := (index .ExtraArgs "default-ingress-class")) (ne $v "false") }}class={{ $v }}{{ else }}none{{ end }}"#;
        for (args, want) in [
            (
                serde_json::json!({"default-ingress-class": "nginx"}),
                "class=nginx",
            ),
            (
                serde_json::json!({"default-ingress-class": "false"}),
                "none",
            ),
            (serde_json::json!({}), "none"),
        ] {
            let out = render("paren", body, &serde_json::json!({"ExtraArgs": args})).unwrap();
            assert_eq!(out, want, "{args}");
        }
    }

    /// Every embedded template, on every golden case, renders to the objects Go's own
    /// text/template renders with RKE's function map (sprig, toYaml, GetKubednsStubDomains at
    /// RKE v1.8.14's module versions): tests/kdm-render.
    #[test]
    fn every_template_renders_what_go_renders_with_rkes_functions() {
        let dir = tempfile::tempdir().unwrap();
        let Some(renderer) = go_renderer(dir.path()) else {
            assert!(
                std::env::var("RKERS_NO_SKIP").as_deref() != Ok("1"),
                "RKERS_NO_SKIP=1: Go is needed to render the goldens with Go's text/template"
            );
            eprintln!("skipped: no Go toolchain (set GO or RKERS_KDM_RENDER)");
            return;
        };
        let cases = cases();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let status = Command::new(&renderer)
            .arg(repo().join("data/addon-templates.json"))
            .arg(repo().join("data/addons-golden/cases.json"))
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "{} failed", renderer.display());
        let mut covered = std::collections::BTreeSet::new();
        let (mut failures, mut same_bytes) = (Vec::new(), 0);
        for case in &cases {
            let name = case["name"].as_str().unwrap();
            let key = case["template"].as_str().unwrap();
            covered.insert(key);
            let go_text = std::fs::read_to_string(out.join(format!("{name}.yaml"))).unwrap();
            let ours = match super::super::plan::render_template(
                crate::metadata::Catalog::embedded(),
                key,
                &case["vars"],
            ) {
                Ok(text) => text,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            same_bytes += usize::from(ours == go_text);
            let (want, got) = (objects(name, &go_text), objects(name, &ours));
            assert!(!want.is_empty(), "{name}: Go rendered objects");
            if got != want {
                let at = want
                    .iter()
                    .zip(&got)
                    .position(|(w, g)| w != g)
                    .map_or("count".to_string(), |i| format!("object {i}"));
                failures.push(format!("{name}: {at} differs"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        let embedded: std::collections::BTreeSet<&str> = embedded_names().into_iter().collect();
        assert_eq!(covered, embedded, "every embedded template has cases");
        // toYaml writes a string yaml.v2 would single-quote or fold double-quoted (see `yaml`);
        // the cases have none, so every one is Go's text byte for byte.
        assert_eq!(
            same_bytes,
            cases.len(),
            "cases byte for byte as Go renders them"
        );
    }
}
