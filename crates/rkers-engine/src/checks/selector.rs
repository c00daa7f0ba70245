//! Kubernetes label selectors evaluated against a label set, the way the API server does for
//! a webhook's `namespaceSelector` and `objectSelector` (an absent or empty selector matches
//! everything).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

pub fn matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(sel) = selector else { return true };
    if let Some(ml) = &sel.match_labels
        && ml.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        return false;
    }
    for e in sel.match_expressions.iter().flatten() {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or(&[]);
        let ok = match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            // An operator the API server would have refused: be safe, count it as matching.
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// The selector in the `key=value, key in (a,b)` form people read.
pub fn describe(selector: Option<&LabelSelector>) -> String {
    let Some(sel) = selector else {
        return "everything".into();
    };
    let mut parts: Vec<String> = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in sel.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]).join(",");
        parts.push(match e.operator.as_str() {
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            op => format!("{} {} ({values})", e.key, op.to_lowercase()),
        });
    }
    if parts.is_empty() {
        "everything".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn empty_selectors_match_everything() {
        assert!(matches(None, &labels(&[])));
        assert!(matches(
            Some(&LabelSelector::default()),
            &labels(&[("a", "b")])
        ));
        assert_eq!(describe(None), "everything");
    }

    #[test]
    fn kube_system_is_excluded_by_a_not_in_expression_only() {
        let ks = labels(&[("kubernetes.io/metadata.name", "kube-system")]);
        let excluding = LabelSelector {
            match_expressions: Some(vec![expr(
                "kubernetes.io/metadata.name",
                "NotIn",
                &["kube-system", "kube-flannel"],
            )]),
            ..Default::default()
        };
        assert!(!matches(Some(&excluding), &ks));
        assert!(matches(
            Some(&excluding),
            &labels(&[("kubernetes.io/metadata.name", "default")])
        ));
        // Without the label (v1.20 does not set it) NotIn matches: kube-system is covered.
        assert!(matches(Some(&excluding), &labels(&[])));
        assert!(describe(Some(&excluding)).contains("notin (kube-system,kube-flannel)"));
    }

    #[test]
    fn match_labels_and_existence() {
        let sel = LabelSelector {
            match_labels: Some([("team".to_string(), "a".to_string())].into()),
            match_expressions: Some(vec![
                expr("skip", "DoesNotExist", &[]),
                expr("tier", "In", &["x", "y"]),
            ]),
        };
        assert!(matches(
            Some(&sel),
            &labels(&[("team", "a"), ("tier", "y")])
        ));
        assert!(!matches(
            Some(&sel),
            &labels(&[("team", "a"), ("tier", "z")])
        ));
        assert!(!matches(
            Some(&sel),
            &labels(&[("team", "a"), ("tier", "x"), ("skip", "")])
        ));
        assert!(!matches(Some(&sel), &labels(&[("tier", "x")])));
        let exists = LabelSelector {
            match_expressions: Some(vec![expr("opt-in", "Exists", &[])]),
            ..Default::default()
        };
        assert!(!matches(Some(&exists), &labels(&[])));
    }
}
