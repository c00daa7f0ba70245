//! RKE1's `toYaml` template function (RKE's templates package: JSON, then YAML by
//! ghodss/yaml, i.e. yaml.v2), which is the emitter the core already has for the files RKE1
//! writes with sigs.k8s.io/yaml ([`crate::plan::goyaml`]), less its final newline.

/// RKE1's `toYaml`: the value as block YAML, without the final newline.
pub fn to_yaml(v: &serde_json::Value) -> String {
    crate::plan::goyaml::to_go_yaml(v)
        .trim_end_matches('\n')
        .to_string()
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
            "- key: a\n  operator: Exists\n  tolerationSeconds: 30"
        );
        let v = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "20%"}});
        assert_eq!(
            to_yaml(&v),
            "rollingUpdate:\n  maxUnavailable: 20%\ntype: RollingUpdate"
        );
        let v = json!({"a": {}, "b": [], "c": null, "d": true});
        assert_eq!(to_yaml(&v), "a: {}\nb: []\nc: null\nd: true");
    }

    /// As ghodss/yaml v1.0.0 with yaml.v2 v2.4.0 wrote it (the scalars' own cases are in
    /// goyaml_scalar).
    #[test]
    fn nested_values_are_laid_out_as_yaml_v2_lays_them_out() {
        let v = json!({"z": 1, "a": {"b": [{"c": [1, 2]}, [3, 4], {}], "e": [], "d": {}},
            "nodeSelector": {"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": "true"},
            "n": [1, 2.5], "multi": "a\nb"});
        assert_eq!(
            to_yaml(&v),
            "a:\n  b:\n  - c:\n    - 1\n    - 2\n  - - 3\n    - 4\n  - {}\n  d: {}\n  e: []\nmulti: |-\n  a\n  b\n\"n\":\n- 1\n- 2.5\nnodeSelector:\n  kubernetes.io/os: linux\n  node-role.kubernetes.io/worker: \"true\"\nz: 1"
        );
    }
}
