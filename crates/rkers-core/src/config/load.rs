//! Reading cluster.yml: typed parse (unknown keys collected as warnings), a second pass that
//! records where every key sits in the file, and the parse-time fix-ups RKE1 makes while
//! parsing (`node_drain_input` defaults that depend on which keys were written).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::types::RkeConfig;
use super::{ConfigError, Diagnostic};

/// A 1-based position in the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

/// Where each key path of the document sits in the file.
///
/// Paths look like `nodes[2].address` or `services.kube-api.extra_args.v`. For a mapping entry
/// the position is that of its key; for a sequence item it is the item itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Locations {
    file: String,
    entries: BTreeMap<String, Position>,
}

impl Locations {
    /// Locations for a file without position information (e.g. a config built in code).
    pub fn empty(file: &str) -> Self {
        Locations {
            file: file.to_string(),
            entries: BTreeMap::new(),
        }
    }

    /// The file name diagnostics carry.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The exact position of `path`, if it was written in the file.
    pub fn get(&self, path: &str) -> Option<Position> {
        self.entries.get(path).copied()
    }

    /// Whether `path` was written in the file (even with an empty value).
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(path)
    }

    /// The position of `path`, or of its nearest ancestor that was written in the file.
    pub fn nearest(&self, path: &str) -> Option<Position> {
        let mut current = path;
        loop {
            if let Some(position) = self.entries.get(current) {
                return Some(*position);
            }
            current = parent_path(current)?;
        }
    }

    /// A diagnostic located at `path` (or its nearest written ancestor).
    pub fn diagnostic(&self, path: &str, message: impl Into<String>) -> Diagnostic {
        let position = self
            .nearest(path)
            .unwrap_or(Position { line: 0, column: 0 });
        Diagnostic {
            file: self.file.clone(),
            line: position.line,
            column: position.column,
            path: path.to_string(),
            // A message may quote the value written there: what could be a credential is
            // masked, as nobody registered it as a secret.
            message: crate::redact::mask_credentials(&message.into()),
        }
    }

    /// The deepest key path written at or just before a position (used to name the key a
    /// type error from the YAML parser is about).
    pub fn path_at(&self, line: u64, column: u64) -> String {
        let target = Position { line, column };
        self.entries
            .iter()
            .filter(|(_, p)| **p <= target)
            .max_by(|(pa, a), (pb, b)| a.cmp(b).then(pa.len().cmp(&pb.len())))
            .map(|(path, _)| path.clone())
            .unwrap_or_default()
    }

    /// Every recorded path with its position, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Position)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

/// `a.b[3]` → `a.b`, `a.b` → `a`, `a` → `` (the document), `` → none.
fn parent_path(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = path.rfind(['.', '[']).unwrap_or(0);
    Some(&path[..cut])
}

fn join_key(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// A parsed cluster.yml, not yet defaulted or validated.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub config: RkeConfig,
    /// Unknown keys (RKE1 ignores them silently; we say so).
    pub warnings: Vec<Diagnostic>,
    pub locations: Locations,
}

/// Reads and parses a cluster.yml file.
pub fn load_file(path: &Path) -> Result<Loaded, ConfigError> {
    let file = path.display().to_string();
    let io = |source| ConfigError::Io {
        file: file.clone(),
        source,
    };
    let bytes = crate::bounded::read(path, crate::bounded::CONFIG).map_err(io)?;
    // A binary file is not a cluster.yml; say so instead of reporting YAML syntax at a NUL.
    let not_text = |why: String| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{why}: a cluster.yml must be UTF-8 YAML text"),
        ))
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        not_text(format!("byte {at} is not UTF-8"))
    })?;
    if let Some(at) = text.find('\0') {
        return Err(not_text(format!("byte {at} is a NUL (a binary file?)")));
    }
    load_str(&text, &file)
}

/// Parses cluster.yml text; `file_name` is only used in diagnostics.
pub fn load_str(src: &str, file_name: &str) -> Result<Loaded, ConfigError> {
    if is_blank_document(src) {
        // go-yaml decodes an empty document into the zero config; validation then reports
        // what is missing.
        return Ok(Loaded {
            config: RkeConfig::default(),
            warnings: Vec::new(),
            locations: Locations::empty(file_name),
        });
    }
    let mut unknown: Vec<String> = Vec::new();
    let typed: Result<RkeConfig, _> = serde_saphyr::with_deserializer_from_str(src, |de| {
        serde_ignored::deserialize(de, |path| unknown.push(ignored_path(&path)))
    });
    // The shape pass accepts anything the typed pass might reject (e.g. `.nan`), so that a
    // typed error can still be given the path of its key.
    let mut lenient = serde_saphyr::Options::default();
    lenient.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    let tree = serde_saphyr::from_str_with_options::<Spanned<LocNode>>(src, lenient);
    let mut locations = Locations::empty(file_name);
    if let Ok(tree) = &tree {
        record(tree, String::new(), &mut locations.entries);
    }
    let mut config = match (typed, tree) {
        (Ok(config), Ok(_)) => config,
        (Err(e), _) | (Ok(_), Err(e)) => {
            let mut diagnostic = syntax_diagnostic(&e, file_name);
            diagnostic.path = locations.path_at(diagnostic.line, diagnostic.column);
            return Err(ConfigError::Syntax(diagnostic));
        }
    };

    if let Some(diagnostic) = non_finite_float(&config, &locations) {
        return Err(ConfigError::Syntax(diagnostic));
    }

    let warnings = unknown
        .iter()
        .map(|path| {
            let key = path.rsplit(['.', '[']).next().unwrap_or(path);
            locations.diagnostic(path, format!("unknown key `{key}` is ignored"))
        })
        .collect();

    apply_parse_time_defaults(&mut config, &locations);
    Ok(Loaded {
        config,
        warnings,
        locations,
    })
}

/// `.nan`/`.inf` parse as floats but cannot be stored (Go's JSON encoder refuses them).
fn non_finite_float(config: &RkeConfig, locations: &Locations) -> Option<Diagnostic> {
    let params = config.dns.as_ref()?.linear_autoscaler_params.as_ref()?;
    [
        ("cores_per_replica", params.cores_per_replica),
        ("nodes_per_replica", params.nodes_per_replica),
    ]
    .into_iter()
    .find(|(_, value)| !value.is_finite())
    .map(|(key, _)| {
        locations.diagnostic(
            &format!("dns.linear_autoscaler_params.{key}"),
            "expected a finite number",
        )
    })
}

fn is_blank_document(src: &str) -> bool {
    src.lines().all(|line| {
        let t = line.trim();
        t.is_empty() || t.starts_with('#') || t == "---" || t == "..."
    })
}

/// RKE1 fills `node_drain_input` keys the user did not write (`ignore_daemonsets` true,
/// `timeout` 120, `grace_period` -1) while parsing, because only then can it tell an absent key
/// from an explicit zero.
// RKE1 bug (parseNodeDrainInput): when it fills one of these it rebuilds the whole struct from a
// JSON re-read that drops an explicit `ignore_daemonsets: false`. We keep the user's value.
fn apply_parse_time_defaults(config: &mut RkeConfig, locations: &Locations) {
    let Some(drain) = config
        .upgrade_strategy
        .as_mut()
        .and_then(|u| u.node_drain_input.as_mut())
    else {
        return;
    };
    let base = "upgrade_strategy.node_drain_input";
    if drain.ignore_daemonsets.is_none() {
        drain.ignore_daemonsets = Some(true);
    }
    if !locations.contains(&format!("{base}.timeout")) {
        drain.timeout = super::defaults::DEFAULT_NODE_DRAIN_TIMEOUT;
    }
    if !locations.contains(&format!("{base}.grace_period")) {
        drain.grace_period = super::defaults::DEFAULT_NODE_DRAIN_GRACE_PERIOD;
    }
}

fn syntax_diagnostic(error: &serde_saphyr::Error, file: &str) -> Diagnostic {
    let (line, column) = error
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    Diagnostic {
        file: file.to_string(),
        line,
        column,
        path: String::new(),
        message: crate::redact::mask_credentials(&plain_message(error)),
    }
}

/// The error text without the position suffix and source snippet serde-saphyr adds (our
/// Display puts `file:line:column` in front instead).
fn plain_message(error: &serde_saphyr::Error) -> String {
    let text = error.without_snippet().to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let first = match first.rfind(" at line ") {
        Some(i) => &first[..i],
        None => first,
    };
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // Drop advice aimed at the library user, not at whoever edits cluster.yml.
    let first = match first.find(", set DuplicateKeyPolicy") {
        Some(i) => &first[..i],
        None => first,
    };
    if let Some(limit) = parser_limit(first) {
        return limit;
    }
    match first {
        "" => "invalid YAML".to_string(),
        "invalid i64" | "invalid i32" | "invalid u64" => "expected an integer".to_string(),
        "invalid f64" => "expected a number".to_string(),
        "expected string scalar" => {
            "expected a single value (a string), not a list or mapping".to_string()
        }
        other => other.to_string(),
    }
}

/// The parser's safety limits, in words instead of its Rust debug text
/// (`budget breached: Depth { depth: 65 }`).
fn parser_limit(text: &str) -> Option<String> {
    if text == "recursion limit exceeded" {
        return Some("nested too deeply: a cluster.yml is never this deep".to_string());
    }
    let breach = text.strip_prefix("budget breached: ")?;
    let kind = breach.split([' ', '{']).next().unwrap_or(breach);
    let number: String = breach.chars().filter(char::is_ascii_digit).collect();
    Some(match kind {
        "Depth" => format!(
            "nested more than {} levels deep: a cluster.yml is never this deep",
            number.parse::<u64>().map_or(0, |n| n.saturating_sub(1))
        ),
        _ => format!(
            "the document is larger or more complex than a cluster.yml can be (limit on {} reached)",
            kind.to_lowercase()
        ),
    })
}

fn ignored_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path as P;
    match path {
        P::Root => String::new(),
        P::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        P::Map { parent, key } => join_key(&ignored_path(parent), key),
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            ignored_path(parent)
        }
    }
}

/// Shape of the document with positions, used only to build [`Locations`].
enum LocNode {
    Map(Vec<(Spanned<KeyText>, Spanned<LocNode>)>),
    Seq(Vec<Spanned<LocNode>>),
    Scalar,
}

fn record(node: &Spanned<LocNode>, path: String, out: &mut BTreeMap<String, Position>) {
    match &node.value {
        LocNode::Map(entries) => {
            for (key, value) in entries {
                let child = join_key(&path, &key.value.0);
                out.entry(child.clone()).or_insert(Position {
                    line: key.referenced.line(),
                    column: key.referenced.column(),
                });
                record(value, child, out);
            }
        }
        LocNode::Seq(items) => {
            for (index, item) in items.iter().enumerate() {
                let child = format!("{path}[{index}]");
                out.entry(child.clone()).or_insert(Position {
                    line: item.referenced.line(),
                    column: item.referenced.column(),
                });
                record(item, child, out);
            }
        }
        LocNode::Scalar => {}
    }
    if path.is_empty() {
        out.entry(String::new()).or_insert(Position {
            line: node.referenced.line(),
            column: node.referenced.column(),
        });
    }
}

impl<'de> Deserialize<'de> for LocNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LocNodeVisitor)
    }
}

struct LocNodeVisitor;

macro_rules! scalar_visits {
    ($($name:ident: $ty:ty),*) => {$(
        fn $name<E: de::Error>(self, _: $ty) -> Result<LocNode, E> {
            Ok(LocNode::Scalar)
        }
    )*};
}

impl<'de> Visitor<'de> for LocNodeVisitor {
    type Value = LocNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    scalar_visits!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64,
        visit_i128: i128, visit_u128: u128, visit_str: &str, visit_bytes: &[u8]);

    fn visit_unit<E: de::Error>(self) -> Result<LocNode, E> {
        Ok(LocNode::Scalar)
    }

    fn visit_none<E: de::Error>(self) -> Result<LocNode, E> {
        Ok(LocNode::Scalar)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<LocNode, D::Error> {
        deserializer.deserialize_any(LocNodeVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LocNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<LocNode>>()? {
            items.push(item);
        }
        Ok(LocNode::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LocNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
            let value = map.next_value::<Spanned<LocNode>>()?;
            entries.push((key, value));
        }
        Ok(LocNode::Map(entries))
    }
}

/// A mapping key as text (`22` and `true` keys become "22" and "true").
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyText, E> {
                Ok(KeyText(String::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<KeyText, E> {
                Ok(KeyText(String::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyText, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(KeyText("?".to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyText, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(KeyText("?".to_string()))
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}
