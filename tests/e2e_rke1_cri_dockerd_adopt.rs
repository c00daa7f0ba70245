//! Adopting a cluster RKE1 built on a cri-dockerd Kubernetes version (issue 27), end to end on the
//! sandbox.
//!
//! The sandbox runs Kubernetes v1.20.2 binaries, and its rke-tools image has no cri-dockerd. So the
//! cluster is the standard one brought to the shape RKE1 gives a v1.27 cluster on the same images
//! (`system_images` pinned to the sandbox's, as a user pinning images would): starting from the
//! v1.20 containers (which `e2e_day2_adopt` shows to be RKE1's), every container is recreated
//! through Docker's API with what RKE1's code (rancher/rke `cluster/plan.go`, v1.6.3 = release/v1.7)
//! changes between the two versions, each change written here with its source:
//! - KDM's default flags as RKE1 picks them (`getDefaultKubernetesServicesOptions`: the exact
//!   version, else the minor of the `kubernetes` image's tag, which is v1.20 here) and applies
//!   them (an empty value deletes the flag, any other sets it);
//! - no `z` on any bind from v1.22 (`util.RemoveZFromBinds`);
//! - `--authentication-kubeconfig`/`--authorization-kubeconfig` for the controller manager and the
//!   scheduler from v1.22;
//! - kubelet through cri-dockerd from v1.24 (`setCRIDockerd`, `BuildKubeletProcess`):
//!   `--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock` (no `--container-runtime`
//!   from v1.27), `RKE_KUBELET_CRIDOCKERD=true`, the `/var/lib/cri-dockerd` bind;
//! - the PodSecurity plugin (privileged, `pod-security.admission.config.k8s.io/v1` from v1.25) in
//!   the admission configuration, and its checksum in kube-apiserver's environment.
//!
//! And the state as RKE1 writes it for that version (no rkers mark, `enableCriDockerd: true`).
//!
//! kubelet then runs as RKE1 starts it on v1.27: `/opt/rke-tools/entrypoint.sh kubelet` from the
//! service-sidekick's volume with `RKE_KUBELET_CRIDOCKERD=true`. This test runs on the shared
//! v1.20 sandbox images, whose rke-tools carries no cri-dockerd (the real one runs in
//! `tests/e2e_real_cluster.rs`, built from its module for v1.24 and later), so the
//! kubernetes_services_sidecar image is a test double built on each host from it: the same image
//! whose entrypoint starts kubelet alone, letting kubelet v1.20's own dockershim (the code
//! cri-dockerd was forked from) serve the CRI socket RKE1 names,
//! `unix:///var/run/cri-dockerd.sock`. Everything else is the sandbox's images and RKE1's specs.
//!
//! Verified end to end: `up --dry-run` is an adoption that creates and recreates no container;
//! `up --yes` keeps every container ID and leaves a healthy cluster; a second `up` is a no-op.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use support::e2e::{E2e, HOSTS, SandboxEnv, dry_run_actions};

/// The cri-dockerd version of this test: one RKE1 offered (v1.27 is the oldest such minor the
/// compiled-in data carries).
const VERSION: &str = "v1.27.16-rancher1-1";

/// The admission configuration RKE1 writes for v1.25 and later with the default PodSecurity
/// level (`getConsolidatedAdmissionConfiguration`, `newDefaultPodSecurityPluginConfigurationPrivileged`).
const ADMISSION_YAML: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- configuration:\n    apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n    kind: Configuration\n    limits:\n    - burst: 20000\n      qps: 5000\n      type: Server\n  name: EventRateLimit\n  path: \"\"\n- configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    defaults:\n      enforce: privileged\n      enforce-version: latest\n    exemptions: {}\n    kind: PodSecurityConfiguration\n  name: PodSecurity\n  path: \"\"\n";

/// The tag of the stand-in rke-tools image (see the module doc), next to the sandbox's own.
fn standin_tag(tools: &str) -> String {
    format!("{tools}-cridockerd-standin")
}

/// Builds the stand-in rke-tools image on `host` from `tools`: its entrypoint's start of
/// cri-dockerd (from `RKE_KUBELET_CRIDOCKERD=true` on) replaced by kubelet alone, so kubelet
/// v1.20's dockershim serves the socket RKE1 names.
fn build_standin(sb: &SandboxEnv, host: &str, tools: &str) {
    let entrypoint = sb.on_host(
        host,
        &format!("docker run --rm --entrypoint cat {tools} /opt/rke-tools/entrypoint.sh"),
    );
    let start = entrypoint
        .find("if [ \"${RKE_KUBELET_CRIDOCKERD:-}\" != \"true\" ]; then")
        .expect("the sandbox entrypoint's cri-dockerd start");
    let standin = format!(
        "{}say \"cri-dockerd test stand-in: kubelet's dockershim serves the CRI socket\"\nexec \"${{args[@]}}\" \"--cgroup-driver=$cgroup_driver\"\n",
        &entrypoint[..start],
    );
    let dockerfile = format!("FROM {tools}\nCOPY entrypoint.sh /opt/rke-tools/entrypoint.sh\n");
    sb.on_host(
        host,
        &format!(
            "set -e; d=$(mktemp -d); cd $d
echo {} | base64 -d >entrypoint.sh; chmod 0755 entrypoint.sh
echo {} | base64 -d >Dockerfile
tar -c Dockerfile entrypoint.sh | docker build -q -t {} - >/dev/null
cd /; rm -rf $d",
            base64_encode(standin.as_bytes()),
            base64_encode(dockerfile.as_bytes()),
            standin_tag(tools)
        ),
    );
}

/// KDM's default flags, per KDM component, as RKE1 picks them (`getDefaultKubernetesServicesOptions`):
/// the exact `version` first, else the minor of the `kubernetes` image's tag (here the sandbox's
/// v1.20.2 image, so its minor's flags, whatever the cluster's version).
fn service_options(
    version: &str,
    kubernetes_image: &str,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let data: Value = serde_json::from_str(include_str!("../data/versions.json")).unwrap();
    let options = &data["service_options"];
    let tag = kubernetes_image.rsplit(':').next().unwrap_or_default();
    let minor = tag.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    let entry = if options[version].is_object() {
        &options[version]
    } else {
        &options[minor.as_str()]
    };
    serde_json::from_value(entry.clone()).unwrap_or_else(|e| panic!("{version}: {e}"))
}

/// `util.RemoveZFromBinds`: the `z` option dropped from every bind.
fn without_z(binds: &[Value]) -> Vec<Value> {
    binds
        .iter()
        .map(|b| {
            let b = b.as_str().unwrap();
            let (head, options) = b.rsplit_once(':').unwrap_or((b, ""));
            let kept: Vec<&str> = options
                .split(',')
                .filter(|o| !o.eq_ignore_ascii_case("z"))
                .collect();
            let kept = kept.join(",");
            json!(if kept.is_empty() {
                head.to_string()
            } else {
                format!("{head}:{kept}")
            })
        })
        .collect()
}

/// The flag list with `flag` set to `value` (`None`: removed), as RKE1's map of flags does.
fn set_flag(args: &mut Vec<Value>, flag: &str, value: Option<&str>) {
    let name = format!("--{flag}");
    let position = args.iter().position(|a| {
        a.as_str()
            .is_some_and(|a| a == name || a.starts_with(&format!("{name}=")))
    });
    match (position, value) {
        (Some(i), None) => {
            args.remove(i);
        }
        (Some(i), Some(v)) => args[i] = json!(format!("{name}={v}")),
        (None, Some(v)) => args.push(json!(format!("{name}={v}"))),
        (None, None) => {}
    }
}

/// What RKE1 changes in one container between the sandbox's v1.20 and [`VERSION`].
fn as_rke1_builds_it(name: &str, container: &mut Value, old: &str, kubernetes_image: &str) {
    let component = match name {
        "etcd" => "etcd",
        "kube-apiserver" => "kubeapi",
        "kube-controller-manager" => "kube_controller",
        "kube-scheduler" => "scheduler",
        "kubelet" => "kubelet",
        "kube-proxy" => "kubeproxy",
        _ => "",
    };
    let args_key = if name == "etcd" { "Cmd" } else { "Entrypoint" };
    if !component.is_empty() {
        let (before, after) = (
            service_options(old, kubernetes_image)
                .remove(component)
                .unwrap_or_default(),
            service_options(VERSION, kubernetes_image)
                .remove(component)
                .unwrap_or_default(),
        );
        let args = container[args_key].as_array_mut().unwrap();
        for flag in before.keys().filter(|k| !after.contains_key(*k)) {
            set_flag(args, flag, None);
        }
        for (flag, value) in &after {
            match value.as_str() {
                "" => set_flag(args, flag, None),
                "''" if component == "kubelet" => set_flag(args, flag, Some("")),
                v => set_flag(args, flag, Some(v)),
            }
        }
    }
    if let Some(args) = container[args_key].as_array_mut() {
        match name {
            "kube-controller-manager" | "kube-scheduler" => {
                let kubeconfig = format!("/etc/kubernetes/ssl/kubecfg-{name}.yaml");
                set_flag(args, "authentication-kubeconfig", Some(&kubeconfig));
                set_flag(args, "authorization-kubeconfig", Some(&kubeconfig));
            }
            "kubelet" => {
                set_flag(
                    args,
                    "container-runtime-endpoint",
                    Some("unix:///var/run/cri-dockerd.sock"),
                );
                set_flag(args, "container-runtime", None);
            }
            _ => {}
        }
    }
    match name {
        "kubelet" => {
            container["Env"]
                .as_array_mut()
                .unwrap()
                .push(json!("RKE_KUBELET_CRIDOCKERD=true"));
            container["HostConfig"]["Binds"]
                .as_array_mut()
                .unwrap()
                .insert(0, json!("/var/lib/cri-dockerd:/var/lib/cri-dockerd:z"));
        }
        "kube-apiserver" => {
            for e in container["Env"].as_array_mut().unwrap() {
                if e.as_str()
                    .is_some_and(|e| e.starts_with("RKE_ADMISSION_CONFIG_CHECKSUM="))
                {
                    *e = json!(format!(
                        "RKE_ADMISSION_CONFIG_CHECKSUM={}",
                        rkers::plan::md5_hex(ADMISSION_YAML)
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(binds) = container["HostConfig"]["Binds"].as_array() {
        container["HostConfig"]["Binds"] = json!(without_z(binds));
    }
}

/// Recreates `name` on `host` through Docker's API from its own inspect output after `change`,
/// started again when it was running.
fn recreate(sb: &SandboxEnv, host: &str, name: &str, change: impl FnOnce(&mut Value)) {
    let inspect: Value =
        serde_json::from_str(&sb.on_host(host, &format!("docker inspect {name}"))).unwrap();
    let running = inspect[0]["State"]["Running"].as_bool().unwrap_or(false);
    let mut body = inspect[0]["Config"].clone();
    body["HostConfig"] = inspect[0]["HostConfig"].clone();
    change(&mut body);
    let encoded = base64_encode(body.to_string().as_bytes());
    sb.on_host(
        host,
        &format!(
            "set -e; echo {encoded} | base64 -d >/tmp/{name}.json
docker rm -f {name} >/dev/null
curl -sf --unix-socket /var/run/docker.sock -H 'Content-Type: application/json' \
  -d @/tmp/{name}.json -X POST 'http://docker/containers/create?name={name}' >/dev/null
rm -f /tmp/{name}.json
{start}",
            start = if running {
                format!("docker start {name} >/dev/null")
            } else {
                String::new()
            }
        ),
    );
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The state as RKE1 writes it for [`VERSION`]: no rkers mark, the version, cri-dockerd on and
/// the default PodSecurity level in both halves.
fn rke1_state(cluster: &E2e, sidecar: &str) -> String {
    let mut state = cluster.state();
    state
        .as_object_mut()
        .unwrap()
        .remove(rkers::state::RKERS_MARK);
    for half in ["desiredState", "currentState"] {
        let config = &mut state[half]["rkeConfig"];
        config["kubernetesVersion"] = json!(VERSION);
        config["enableCriDockerd"] = json!(true);
        config["services"]["kubeApi"]["podSecurityConfiguration"] = json!("privileged");
        config["systemImages"]["kubernetesServicesSidecar"] = json!(sidecar);
    }
    serde_json::to_string_pretty(&state).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cri_dockerd_cluster_rke1_built_is_adopted_without_recreating_containers() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    cluster.standard().await;
    let yml = std::fs::read_to_string(&cluster.config).unwrap();
    let old = yml
        .lines()
        .find_map(|l| l.strip_prefix("kubernetes_version: "))
        .expect("the sandbox names its version")
        .trim()
        .to_string();

    // The cluster as RKE1 leaves it on VERSION: containers, admission file, state, cluster.yml.
    let tools = yml
        .lines()
        .find_map(|l| l.trim().strip_prefix("kubernetes_services_sidecar: "))
        .expect("the sandbox names its rke-tools image")
        .trim()
        .to_string();
    let sidecar = standin_tag(&tools);
    let kubernetes_image = yml
        .lines()
        .find_map(|l| l.trim().strip_prefix("kubernetes: "))
        .expect("the sandbox names its Kubernetes image")
        .trim()
        .to_string();
    let state = rke1_state(&cluster, &sidecar);
    let components = [
        "etcd",
        "etcd-rolling-snapshots",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "kube-proxy",
    ];
    for host in HOSTS {
        build_standin(&sb, host, &tools);
        // The sidekick first: the others take its volume when they are created.
        recreate(&sb, host, "service-sidekick", |c| {
            c["Image"] = json!(sidecar)
        });
        let present = sb.container_names(host);
        for name in components
            .iter()
            .filter(|c| present.iter().any(|p| p == *c))
        {
            recreate(&sb, host, name, |c| {
                as_rke1_builds_it(name, c, &old, &kubernetes_image)
            });
        }
    }
    let encoded = base64_encode(ADMISSION_YAML.as_bytes());
    sb.on_host(
        "host1",
        &format!("echo {encoded} | base64 -d >/etc/kubernetes/admission.yaml"),
    );
    std::fs::write(cluster.state_path(), &state).unwrap();
    cluster.edit(|t| {
        t.replace(
            &format!("kubernetes_version: {old}"),
            &format!("kubernetes_version: {VERSION}"),
        )
        .replace(
            &format!("kubernetes_services_sidecar: {tools}"),
            &format!("kubernetes_services_sidecar: {sidecar}"),
        )
    });
    let kubelet = sb.on_host("host2", "docker inspect kubelet");
    assert!(
        kubelet.contains("RKE_KUBELET_CRIDOCKERD=true")
            && kubelet.contains("--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock")
            && kubelet.contains("\"/var/lib/cri-dockerd:/var/lib/cri-dockerd\""),
        "{kubelet}"
    );
    let ids = sb.container_ids(&HOSTS);

    // The dry run: an adoption, and no container created or recreated.
    let (dry, actions) = cluster.adoption_dry_run();
    // The state as RKE1 wrote it lacks what rkers records.
    let unexpected: Vec<_> = actions
        .iter()
        .filter(|(host, action)| {
            !(host == "cluster" && action.starts_with("save the state in Secret"))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "unexpected changes: {unexpected:#?}\n{dry}"
    );
    assert_eq!(
        sb.container_ids(&HOSTS),
        ids,
        "the dry run changed containers"
    );

    // `up --yes`: every container kept, the cluster healthy; then a second `up` changes nothing.
    let (ok, text) = cluster.rkers(&["up", "--yes"]);
    assert!(ok, "{text}");
    assert_eq!(
        sb.container_ids(&HOSTS),
        ids,
        "up restarted containers:\n{text}"
    );
    let dry = cluster.dry_run();
    assert!(!dry.contains("Adopting"), "{dry}");
    assert!(dry_run_actions(&dry).is_empty(), "{dry}");
    let api = cluster.api().await;
    support::e2e::wait_nodes_ready(&api, &HOSTS, std::time::Duration::from_secs(120)).await;

    // Back to fresh hosts: the next test's standard cluster starts cold. That next test is
    // e2e_up, which starts from fresh hosts anyway: nextest runs the sandbox group's binaries in
    // the order of their names, which is why this file is named to sort just before e2e_up.
    cluster.fresh();
}
