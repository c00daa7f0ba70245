//! Time to generate the full PKI bundle (kubelet serving certificates on) for 3 and 100 hosts,
//! and to reconcile the 100-host bundle unchanged. Run through `scripts/bench-pki`.

use std::time::Instant;

use rkers::pki::{
    HostRoles, PkiHost, PkiSpec, generate_bundle, parse_service_cidrs, reconcile_bundle,
};

/// `controlplanes` nodes with controlplane+etcd, the rest workers.
fn spec(hosts: usize, controlplanes: usize) -> PkiSpec {
    PkiSpec {
        hosts: (0..hosts)
            .map(|i| PkiHost {
                address: format!("10.0.{}.{}", i / 250, i % 250 + 1),
                internal_address: String::new(),
                hostname_override: format!("node-{i}"),
                roles: HostRoles {
                    etcd: i < controlplanes,
                    controlplane: i < controlplanes,
                    worker: i >= controlplanes || hosts <= 3,
                },
            })
            .collect(),
        extra_sans: vec!["lb.example.com".into()],
        service_cidrs: parse_service_cidrs("10.43.0.0/16").expect("valid range"),
        cluster_domain: "cluster.local".into(),
        cluster_name: "bench".into(),
        kubelet_serving_certs: true,
        external_etcd: None,
        admin_kubeconfig_path: "./kube_config_cluster.yml".into(),
    }
}

fn main() {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "PKI generation benchmark (RSA-2048, kubelet serving certificates on, {threads} threads)"
    );
    for (hosts, controlplanes) in [(3, 3), (100, 3)] {
        let spec = spec(hosts, controlplanes);
        let start = Instant::now();
        let bundle = generate_bundle(&spec).expect("generation succeeds");
        let generate = start.elapsed();

        let start = Instant::now();
        let (_, changes) = reconcile_bundle(bundle.clone(), &spec).expect("reconcile succeeds");
        let reconcile = start.elapsed();
        println!(
            "{hosts:>4} hosts ({controlplanes} controlplane+etcd): {:>3} certificates generated in {:>8.2?}; unchanged reconcile {:>8.2?} ({} re-signed)",
            bundle.len(),
            generate,
            reconcile,
            changes.changed.len(),
        );
    }
}
