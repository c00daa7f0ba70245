//! Incident 2: restarting flannel (or canal) before v0.27.0 tears down the nat table's
//! `FLANNEL-POSTRTG` chain before the new pod re-creates it, and pods lose outbound NAT.
//! Older flannel (v0.15, RKE1's through Kubernetes v1.24) has no such chain: its masquerade
//! rules sit in POSTROUTING itself (without a comment in v0.15); either layout is a working NAT. Pure evaluation of the nat lines the probe read, and of the flannel image's
//! version.

use super::{Finding, Status};
use std::collections::BTreeMap;

pub const CHAIN: &str = "FLANNEL-POSTRTG";
pub const CHECK: &str = "flannel-nat";
/// The comment flannel puts on every nat rule of its own (since v0.16; v0.15 put none).
const MASQ_COMMENT: &str = "flanneld masq";
/// flannel's outbound masquerade spares multicast, in every version: `-s <cluster cidr> ! -d
/// 224.0.0.0/4 -j MASQUERADE`; no other rule RKE1's nodes carry has it.
const MULTICAST_SPARED: [&str; 3] = ["!", "-d", "224.0.0.0/4"];
pub const VERSION_CHECK: &str = "flannel-version";
/// The first flannel release that keeps its rules in place across restarts.
pub const FIXED_IN: (u64, u64, u64) = (0, 27, 0);

/// What one backend's nat table says about the chain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NatState {
    pub chain: bool,
    pub jump: bool,
    /// Older flannel's layout: a `flanneld masq` MASQUERADE rule in POSTROUTING itself.
    pub masq_in_postrouting: bool,
    /// The POSTROUTING and FLANNEL lines read, for evidence.
    pub lines: Vec<String>,
}

/// Parses `iptables-save -t nat` lines (already filtered to FLANNEL and POSTROUTING lines).
pub fn parse_nat(lines: &[String]) -> NatState {
    let mut s = NatState::default();
    for l in lines {
        let l = l.trim();
        if l.starts_with(&format!(":{CHAIN} ")) || l == format!(":{CHAIN}") {
            s.chain = true;
        }
        if l.starts_with("-A POSTROUTING ")
            && l.split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| w == ["-j", CHAIN])
        {
            s.jump = true;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        if l.starts_with("-A POSTROUTING ")
            && words.windows(2).any(|w| w == ["-j", "MASQUERADE"])
            && (l.contains(MASQ_COMMENT) || words.windows(3).any(|w| w == MULTICAST_SPARED))
        {
            s.masq_in_postrouting = true;
        }
        if l.starts_with(':') || l.starts_with("-A") {
            s.lines.push(l.to_string());
        }
    }
    s
}

/// The finding for one node (`node` at `address`) from the probe's `nat <backend>` sections;
/// `pod` is the node's flannel pod (namespace, name), named in the manual fix.
pub fn evaluate(
    node: &str,
    address: &str,
    sections: &BTreeMap<String, Vec<String>>,
    pod: Option<(&str, &str)>,
) -> Finding {
    let backends: Vec<(&str, NatState)> = sections
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("nat ").map(|b| (b, parse_nat(v))))
        .collect();
    if backends.is_empty() {
        return Finding::new(
            CHECK,
            Status::Warn,
            Some(node),
            "could not read the nat table (no iptables-save in the Kubernetes image)",
        );
    }
    let mut evidence = Vec::new();
    for (b, s) in &backends {
        if s.lines.is_empty() {
            evidence.push(format!("{b} -t nat: no POSTROUTING or FLANNEL lines"));
        }
        for l in &s.lines {
            evidence.push(format!("{b} -t nat: {l}"));
        }
    }
    if backends.iter().any(|(_, s)| s.chain && s.jump) {
        let keep: Vec<String> = evidence.into_iter().filter(|e| e.contains(CHAIN)).collect();
        return Finding::ok(
            CHECK,
            Some(node),
            format!("nat table has {CHAIN} and POSTROUTING jumps to it"),
        )
        .evidence(keep);
    }
    if backends.iter().any(|(_, s)| s.masq_in_postrouting) {
        let keep: Vec<String> = evidence
            .into_iter()
            .filter(|e| e.contains(MASQ_COMMENT) || e.contains("224.0.0.0/4"))
            .collect();
        return Finding::ok(
            CHECK,
            Some(node),
            "nat table's POSTROUTING has flannel's masquerade rules (older flannel's layout, no \
             FLANNEL-POSTRTG chain)",
        )
        .evidence(keep);
    }
    let chain = backends.iter().any(|(_, s)| s.chain);
    let summary = if chain {
        format!(
            "outbound NAT is broken: the nat table has {CHAIN} but POSTROUTING does not jump to it"
        )
    } else {
        format!(
            "outbound NAT is broken: the nat table has no {CHAIN} chain and no flannel masquerade \
             rule in POSTROUTING (pods cannot reach outside the cluster)"
        )
    };
    let restart = match pod {
        Some((ns, name)) => {
            format!("kubectl -n {ns} delete pod {name}   (its successor re-creates the rules)")
        }
        None => "delete this node's flannel/canal pod so its successor re-creates the rules".into(),
    };
    Finding::new(CHECK, Status::Fail, Some(node), summary)
        .evidence(evidence)
        .fix([
            format!("rkers doctor --fix {CHECK} --host {address}   (or by hand:)"),
            restart,
        ])
}

/// `vX.Y.Z` of an image reference's tag (suffixes like `-rancher1` ignored).
pub fn image_version(image: &str) -> Option<(u64, u64, u64)> {
    let tag = image.rsplit_once(':').map(|(_, t)| t)?;
    if tag.contains('/') {
        return None;
    }
    let t = tag.trim_start_matches('v');
    let core = t.split(['-', '+']).next()?;
    let mut it = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
}

/// A warning when the flannel image is older than [`FIXED_IN`]; `None` when it is not, or its
/// version cannot be read.
pub fn version_finding(image: &str, config_key: &str) -> Option<Finding> {
    let v = image_version(image)?;
    let (a, b, c) = FIXED_IN;
    if v >= FIXED_IN {
        return Some(Finding::ok(
            VERSION_CHECK,
            None,
            format!("{image} keeps its NAT rules across restarts"),
        ));
    }
    Some(
        Finding::new(
            VERSION_CHECK,
            Status::Warn,
            None,
            format!(
                "flannel {image} is older than v{a}.{b}.{c}: restarting its pods (upgrade, cert \
                 rotation) leaves a gap in the nodes' outbound NAT"
            ),
        )
        .evidence([format!("system_images.{config_key}: {image}")])
        .fix([
            format!("set system_images.{config_key} to a flannel v{a}.{b}.{c} or later image, then `rkers up`"),
            "until then, restart CNI pods in a change window".to_string(),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    const HEALTHY: &[&str] = &[
        ":POSTROUTING ACCEPT [0:0]",
        ":FLANNEL-POSTRTG - [0:0]",
        "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING",
        "-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG",
        "-A FLANNEL-POSTRTG -s 10.42.0.0/16 -d 10.42.0.0/16 -m comment --comment \"flanneld masq\" -j RETURN",
    ];

    #[test]
    fn chain_and_jump_are_recognised() {
        let st = parse_nat(&s(HEALTHY));
        assert!(st.chain && st.jump);
        let no_jump = parse_nat(&s(&HEALTHY[..3]));
        assert!(no_jump.chain && !no_jump.jump);
        // A jump to a chain whose name only starts the same is not the jump.
        let other = parse_nat(&s(&["-A POSTROUTING -j FLANNEL-POSTRTG-OLD"]));
        assert!(!other.jump);
    }

    #[test]
    fn a_missing_chain_in_every_backend_fails_with_the_lines_read() {
        let sections: BTreeMap<String, Vec<String>> = [
            ("nat iptables-legacy-save".to_string(), s(&HEALTHY[..1])),
            ("nat iptables-nft-save".to_string(), s(&[])),
        ]
        .into();
        let f = evaluate("host3", "10.0.0.3", &sections, None);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.fix[0],
            "rkers doctor --fix flannel-nat --host 10.0.0.3   (or by hand:)"
        );
        assert!(
            f.summary.contains("no FLANNEL-POSTRTG chain"),
            "{}",
            f.summary
        );
        assert!(
            f.evidence
                .contains(&"iptables-legacy-save -t nat: :POSTROUTING ACCEPT [0:0]".to_string())
        );
        assert!(
            f.evidence
                .contains(&"iptables-nft-save -t nat: no POSTROUTING or FLANNEL lines".to_string())
        );
    }

    /// The nat table of a real v1.24.17 node here (flannel v0.15.1, RKE1's through Kubernetes
    /// v1.24): its rules in POSTROUTING itself, without a comment; Docker's own masquerade beside.
    const OLDER_LAYOUT: &[&str] = &[
        ":POSTROUTING ACCEPT [0:0]",
        "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING",
        "-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE",
        "-A POSTROUTING -s 10.79.0.0/16 -d 10.79.0.0/16 -j RETURN",
        "-A POSTROUTING -s 10.79.0.0/16 ! -d 224.0.0.0/4 -j MASQUERADE --random-fully",
        "-A POSTROUTING ! -s 10.79.0.0/16 -d 10.79.1.0/24 -j RETURN",
        "-A POSTROUTING ! -s 10.79.0.0/16 -d 10.79.0.0/16 -j MASQUERADE --random-fully",
    ];

    #[test]
    fn older_flannels_masquerade_rules_in_postrouting_are_a_working_nat() {
        let sections: BTreeMap<String, Vec<String>> =
            [("nat iptables-legacy-save".to_string(), s(OLDER_LAYOUT))].into();
        let f = evaluate("host1", "10.0.0.1", &sections, None);
        assert_eq!(f.status, Status::Ok, "{}", f.summary);
        assert!(f.summary.contains("older flannel"), "{}", f.summary);
        assert!(
            f.evidence.iter().all(|e| e.contains("224.0.0.0/4")),
            "{:?}",
            f.evidence
        );
        // Without flannel's outbound rule, Docker's masquerade of its own bridge is no NAT for
        // pods.
        let returns_only: Vec<&str> = OLDER_LAYOUT
            .iter()
            .copied()
            .filter(|l| !l.contains("224.0.0.0/4"))
            .collect();
        let sections: BTreeMap<String, Vec<String>> =
            [("nat iptables-legacy-save".to_string(), s(&returns_only))].into();
        let f = evaluate("host1", "10.0.0.1", &sections, None);
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("no FLANNEL-POSTRTG chain and no flannel masquerade"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn one_backend_with_the_chain_is_enough() {
        let sections: BTreeMap<String, Vec<String>> = [
            ("nat iptables-legacy-save".to_string(), s(&[])),
            ("nat iptables-nft-save".to_string(), s(HEALTHY)),
        ]
        .into();
        let f = evaluate("host3", "10.0.0.3", &sections, None);
        assert_eq!(f.status, Status::Ok);
        assert!(f.evidence.iter().all(|e| e.contains(CHAIN)));
    }

    #[test]
    fn versions_before_0_27_warn() {
        assert_eq!(
            image_version("rancher/mirrored-flannel-flannel:v0.25.1"),
            Some((0, 25, 1))
        );
        assert_eq!(
            image_version("reg:5000/flannel:v0.27.0-rancher1"),
            Some((0, 27, 0))
        );
        assert_eq!(image_version("reg:5000/flannel"), None);
        assert_eq!(
            version_finding("x/flannel:v0.25.1", "flannel")
                .unwrap()
                .status,
            Status::Warn
        );
        assert_eq!(
            version_finding("x/flannel:v0.27.0", "flannel")
                .unwrap()
                .status,
            Status::Ok
        );
        assert_eq!(
            version_finding("x/flannel:v1.0", "flannel").unwrap().status,
            Status::Ok
        );
        assert!(version_finding("x/flannel:latest", "flannel").is_none());
    }
}
