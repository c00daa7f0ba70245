//! The three KDM templates gotmpl cannot parse, as minijinja ports (templates/, once made by
//! a port script from KDM's Go text): nginxingress-v1.1.0-rancher2, -rancher4 and
//! v1.2.0-rancher1 declare a variable inside a parenthesized pipeline
//! (`{{- if and ($v := (index .ExtraArgs "default-ingress-class")) ...}}`), which Go's
//! text/template allows and gotmpl 0.6 refuses. Their rendering is compared with Go's own in
//! the tests of [`super::gotemplate`]; when gotmpl parses them, this module goes.

use super::AddonError;
use minijinja::{Environment, Value};

/// The ports, by KDM template key.
static TEMPLATES: &[(&str, &str)] = &[
    (
        "nginxingress-v1.1.0-rancher2",
        include_str!("../../../../templates/nginxingress-v1.1.0-rancher2.yaml.j2"),
    ),
    (
        "nginxingress-v1.1.0-rancher4",
        include_str!("../../../../templates/nginxingress-v1.1.0-rancher4.yaml.j2"),
    ),
    (
        "nginxingress-v1.2.0-rancher1",
        include_str!("../../../../templates/nginxingress-v1.2.0-rancher1.yaml.j2"),
    ),
];

/// The port of a KDM template key, if there is one.
pub(super) fn template_source(key: &str) -> Option<&'static str> {
    TEMPLATES
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, body)| *body)
}

/// A minijinja environment with the functions the ports call. Templates are not added to it:
/// [`render`] compiles only the one it renders.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    let mut syntax = minijinja::syntax::SyntaxConfig::builder();
    syntax.keep_trailing_newline(true);
    env.set_syntax(syntax.build().expect("default delimiters"));
    env.set_formatter(go_formatter);
    env.add_function("toYaml", |v: Value| -> Result<String, minijinja::Error> {
        let json: serde_json::Value = serde_json::to_value(&v).map_err(|e| {
            minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
        })?;
        Ok(super::yaml::to_yaml(&json))
    });
    env.add_function("GetKubednsStubDomains", |v: Value| -> String {
        // Go's json.Marshal: map keys sorted, compact.
        let json: serde_json::Value = serde_json::to_value(&v).unwrap_or_default();
        serde_json::to_string(&super::yaml::sorted(json)).unwrap_or_default()
    });
    env
}

/// Prints values the way Go's text/template does where it differs from minijinja: a list of
/// strings prints as `[a b]` (KDM's CoreDNS templates print `ReverseCIDRs` that way).
fn go_formatter(
    out: &mut minijinja::Output,
    state: &mut minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    if value.kind() == minijinja::value::ValueKind::Seq {
        let items: Vec<String> = value
            .try_iter()?
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        return out
            .write_str(&format!("[{}]", items.join(" ")))
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string()));
    }
    minijinja::escape_formatter(out, state, value)
}

/// Renders the port of `key` with `vars`, or None when `key` has no port.
pub fn render(
    env: &Environment<'static>,
    key: &str,
    vars: &serde_json::Value,
) -> Option<Result<String, AddonError>> {
    let source = template_source(key)?;
    Some(render_source(env, key, source, vars))
}

fn render_source(
    env: &Environment<'static>,
    key: &str,
    source: &'static str,
    vars: &serde_json::Value,
) -> Result<String, AddonError> {
    let template = env
        .template_from_named_str(key, source)
        .map_err(|e| AddonError::Render {
            template: key.to_string(),
            message: format!("{e:#}"),
        })?;
    template
        .render(minijinja::value::Serde(vars))
        .map_err(|e| AddonError::Render {
            template: key.to_string(),
            message: format!("{e:#}"),
        })
}
