//! Merging a freshly serialized `rkeConfig` over the one read from the state file, so fields
//! written by a newer RKE (unknown to rkers) survive a rewrite.

use serde_json::{Map, Value};

/// Objects are merged key by key, recursively: the new value wins, keys only present in `old`
/// are kept (after the new keys). Anything else (arrays, scalars, type changes) is taken from
/// `new` as a whole, because array elements cannot be matched reliably.
///
/// Caveat: a field rkers knows but omitted because it is now empty would also come back from
/// `old`. Callers that can tell known fields from unknown ones should use
/// [`merge_preserving_where`].
pub fn merge_preserving(old: &Value, new: Value) -> Value {
    merge_preserving_where(old, new, &|_| true)
}

/// Like [`merge_preserving`], but a key present only in `old` is kept only when
/// `keep_old_only(path)` is true; `path` is the list of object keys from the root
/// (e.g. `["services", "etcd", "futureField"]`).
pub fn merge_preserving_where(
    old: &Value,
    new: Value,
    keep_old_only: &dyn Fn(&[String]) -> bool,
) -> Value {
    let mut path = Vec::new();
    merge_at(old, new, keep_old_only, &mut path)
}

fn merge_at(
    old: &Value,
    new: Value,
    keep_old_only: &dyn Fn(&[String]) -> bool,
    path: &mut Vec<String>,
) -> Value {
    match (old, new) {
        (Value::Object(old_map), Value::Object(new_map)) => {
            let mut merged = Map::with_capacity(new_map.len());
            for (key, new_value) in new_map {
                path.push(key.clone());
                let value = match old_map.get(&key) {
                    Some(old_value) => merge_at(old_value, new_value, keep_old_only, path),
                    None => new_value,
                };
                path.pop();
                merged.insert(key, value);
            }
            for (key, old_value) in old_map {
                if merged.contains_key(key) {
                    continue;
                }
                path.push(key.clone());
                if keep_old_only(path) {
                    merged.insert(key.clone(), old_value.clone());
                }
                path.pop();
            }
            Value::Object(merged)
        }
        (_, new) => new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_unknown_fields_and_takes_new_values() {
        let old = json!({
            "clusterName": "old",
            "futureTop": {"x": 1},
            "services": {"etcd": {"snapshot": true, "futureEtcd": "keep"}},
            "nodes": [{"address": "1.1.1.1", "futureNode": 1}]
        });
        let new = json!({
            "clusterName": "new",
            "services": {"etcd": {"snapshot": false}},
            "nodes": [{"address": "2.2.2.2"}]
        });
        let merged = merge_preserving(&old, new);
        assert_eq!(
            merged,
            json!({
                "clusterName": "new",
                "services": {"etcd": {"snapshot": false, "futureEtcd": "keep"}},
                "nodes": [{"address": "2.2.2.2"}],
                "futureTop": {"x": 1}
            })
        );
        let keys: Vec<&String> = merged.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["clusterName", "services", "nodes", "futureTop"]);
    }

    #[test]
    fn filter_drops_known_fields_that_disappeared() {
        let old =
            json!({"ingress": {"provider": "nginx", "nodeSelector": {"a": "b"}}, "future": 1});
        let new = json!({"ingress": {"provider": "none"}});
        let merged = merge_preserving_where(&old, new, &|path| path == ["future"]);
        assert_eq!(
            merged,
            json!({"ingress": {"provider": "none"}, "future": 1})
        );
    }
}
