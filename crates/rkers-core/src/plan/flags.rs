//! Command-line flags of the Kubernetes components: applying KDM service options and rendering
//! `--key=value` lists.

use std::collections::BTreeMap;

use super::util::join_path;

/// Applies KDM service options on top of RKE1's base flags. A value `""` deletes the flag. With
/// `kubelet_prefix` set (kubelet only, as in RKE1) a value `''` sets the flag to an empty value
/// and a value starting with `[PREFIX_PATH]` is joined onto that prefix path.
pub fn apply_service_options(
    args: &mut BTreeMap<String, String>,
    options: &BTreeMap<String, String>,
    kubelet_prefix: Option<&str>,
) {
    for (key, value) in options {
        if value.is_empty() {
            args.remove(key);
            continue;
        }
        if let Some(prefix) = kubelet_prefix {
            if value == "''" {
                args.insert(key.clone(), String::new());
                continue;
            }
            if value.starts_with("[PREFIX_PATH]") {
                let rest = value.replace("[PREFIX_PATH]", "");
                args.insert(key.clone(), join_path(&[prefix, &rest]));
                continue;
            }
        }
        args.insert(key.clone(), value.clone());
    }
}

/// Renders flags as RKE1 does (`--key=value`, each `extra_args_array` value repeated), sorted by
/// key so the output is stable; RKE1 compares these lists as sets.
pub fn render_flags(
    args: &BTreeMap<String, String>,
    array_args: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut out: Vec<String> = args.iter().map(|(k, v)| format!("--{k}={v}")).collect();
    for (key, values) in array_args {
        out.extend(values.iter().map(|v| format!("--{key}={v}")));
    }
    out
}

/// Overrides with the user's `extra_args` (they win over everything before them).
pub fn apply_extra_args(args: &mut BTreeMap<String, String>, extra: &BTreeMap<String, String>) {
    for (key, value) in extra {
        args.insert(key.clone(), value.clone());
    }
}

pub fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kdm_empty_value_deletes_and_other_values_override() {
        let mut args = map(&[("a", "1"), ("b", "2")]);
        apply_service_options(&mut args, &map(&[("a", ""), ("b", "3"), ("c", "4")]), None);
        assert_eq!(args, map(&[("b", "3"), ("c", "4")]));
    }

    #[test]
    fn kubelet_conventions_only_with_prefix() {
        let options = map(&[
            ("enforce-node-allocatable", "''"),
            ("cert-dir", "[PREFIX_PATH]/var/lib/kubelet/pki"),
        ]);
        let mut kubelet = BTreeMap::new();
        apply_service_options(&mut kubelet, &options, Some("/opt/rke"));
        assert_eq!(
            kubelet,
            map(&[
                ("cert-dir", "/opt/rke/var/lib/kubelet/pki"),
                ("enforce-node-allocatable", "")
            ])
        );
        let mut other = BTreeMap::new();
        apply_service_options(&mut other, &options, None);
        assert_eq!(other["enforce-node-allocatable"], "''");
        assert_eq!(other["cert-dir"], "[PREFIX_PATH]/var/lib/kubelet/pki");
    }

    #[test]
    fn render_is_sorted_and_arrays_repeat() {
        let args = map(&[("v", "2"), ("cloud-provider", "")]);
        let mut arrays = BTreeMap::new();
        arrays.insert(
            "tls-sni".to_string(),
            vec!["a".to_string(), "b".to_string()],
        );
        assert_eq!(
            render_flags(&args, &arrays),
            vec!["--cloud-provider=", "--v=2", "--tls-sni=a", "--tls-sni=b"]
        );
    }
}
