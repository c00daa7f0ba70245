//! `rkers image build` end to end on the sandbox's standard cluster.
//!
//! The v1.20.2 binaries scripts/build-k8s made are laid out as the official
//! `kubernetes-server-linux-amd64.tar.gz` lays them out (`kubernetes/server/bin/<binary>`), packed
//! the same way (tar, gzip) with its `.sha512` beside it, as dl.k8s.io publishes it. The base is
//! the sandbox's own Kubernetes image with every Kubernetes binary removed, so the cluster can
//! only run if the binaries came from the tarball. cri-dockerd is a stand-in (a copy of
//! kube-proxy: image build takes only a Linux executable of the binaries' architecture):
//! Kubernetes v1.20 runs dockershim, and no cri-dockerd binary can be built here; the test checks
//! it lands on the image's PATH. The tarball records its version in
//! `kube-apiserver.docker_tag`, as the official one does: rkers never runs an input to ask it.
//!
//! 1. `rkers image build` on host1's Docker over SSH, pushed to the sandbox registry with the
//!    `private_registries` credentials; the `system_images` lines printed; the labels record the
//!    version and the checksums; the password never printed.
//! 2. The cluster with that image as `system_images.kubernetes` is Ready on every node, and
//!    host3's kubelet runs the image it pulled from the registry.
//! 3. A damaged tarball is refused (exit 2) naming the file and both digests.
//! 4. The standard image is put back for the next test.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::e2e::{E2e, HOSTS, wait_nodes_ready};

const BINARIES: [&str; 6] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubectl",
    "kubelet",
];

fn k8s_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(
        std::env::var("RKERS_K8S_BIN")
            .unwrap_or_else(|_| "/var/cache/rkers/k8s/current/bin".into()),
    )
}

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The official server tarball's layout and packing, with its `.sha512` beside it.
fn server_tarball(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("kubernetes/server/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for b in BINARIES {
        std::fs::hard_link(k8s_bin().join(b), bin.join(b))
            .or_else(|_| std::fs::copy(k8s_bin().join(b), bin.join(b)).map(|_| ()))
            .unwrap();
    }
    std::fs::write(bin.join("kube-apiserver.docker_tag"), "v1.20.2\n").unwrap();
    let tarball = dir.join("kubernetes-server-linux-amd64.tar.gz");
    sh(&format!(
        "cd {d} && tar -cf - kubernetes | gzip -1 > {t} && sha512sum {n} > {n}.sha512",
        d = dir.display(),
        t = tarball.display(),
        n = "kubernetes-server-linux-amd64.tar.gz"
    ));
    tarball
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_tarball_becomes_the_image_the_cluster_runs() {
    let Some(e) = E2e::new() else {
        return;
    };
    if !k8s_bin().join("kubelet").is_file() {
        support::skip("no v1.20.2 binaries from scripts/build-k8s (RKERS_K8S_BIN)");
        return;
    }
    let sandbox_yml = e.reset_config(3);
    let api = e.standard().await;
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let tarball = server_tarball(work.path());
    let cri = work.path().join("cri-dockerd");
    std::fs::copy(k8s_bin().join("kube-proxy"), &cri).unwrap();
    let cri_sha = sh(&format!("sha256sum {}", cri.display()));
    let cri_sha = cri_sha.split_whitespace().next().unwrap().to_owned();
    eprintln!("inputs packed in {:.1}s", started.elapsed().as_secs_f64());

    // A base without Kubernetes: the sandbox's image minus its binaries.
    let standard_image = format!("{}/rkers/hyperkube:v1.20.2-rkers1", e.env.registry);
    let base = "rkers-test/k8s-base:image-build";
    e.env.on_host(
        "host1",
        &format!(
            "printf 'FROM {standard_image}\\nRUN rm -f /usr/local/bin/kube* /usr/local/bin/hyperkube\\n' \
             | docker build -q -t {base} -"
        ),
    );

    // 1. Build on host1 over SSH and push.
    let instance = std::env::var("SANDBOX_INSTANCE").unwrap_or_else(|_| "0".into());
    let tag = format!(
        "{}/rkers-test/hyperkube-built:v1.20.2-e2e-{instance}",
        e.env.registry
    );
    let build_args = |kubernetes: &Path| {
        let mut args: Vec<String> = ["image", "build", "--kubernetes"]
            .map(String::from)
            .to_vec();
        args.push(kubernetes.display().to_string());
        for (flag, value) in [
            ("--cri-dockerd", cri.display().to_string()),
            ("--base", base.into()),
            ("--tag", tag.clone()),
        ] {
            args.push(flag.into());
            args.push(value);
        }
        args
    };
    let t = Instant::now();
    let mut args = build_args(&tarball);
    args.extend(["--node".to_string(), "host1".to_string()]);
    let (ok, out) = e.rkers(&args.iter().map(String::as_str).collect::<Vec<_>>());
    eprintln!("rkers image build took {:.1}s", t.elapsed().as_secs_f64());
    assert!(ok, "rkers image build failed:\n{out}");
    assert!(
        out.contains(&format!("system_images:\n  kubernetes: {tag}\n")),
        "{out}"
    );
    assert!(out.contains("Kubernetes v1.20.2"), "{out}");
    assert!(
        out.contains("checksum: sha512 matched") && out.contains(".tar.gz.sha512"),
        "{out}"
    );
    let password = sandbox_yml
        .lines()
        .find_map(|l| l.trim().strip_prefix("password: "))
        .map(|p| p.trim_matches('"').to_owned())
        .expect("the sandbox's cluster.yml has a registry password");
    assert!(
        !out.contains(&password),
        "the registry password was printed"
    );

    let labels: serde_json::Value = serde_json::from_str(&e.env.on_host(
        "host1",
        &format!("docker image inspect --format '{{{{json .Config.Labels}}}}' {tag}"),
    ))
    .unwrap();
    let kubelet_sha = sh(&format!(
        "sha256sum {}",
        k8s_bin().join("kubelet").display()
    ));
    let kubelet_sha = kubelet_sha.split_whitespace().next().unwrap();
    assert_eq!(labels["io.rkers.image-build.kubernetes-version"], "v1.20.2");
    assert_eq!(
        labels["io.rkers.image-build.bin.kubelet.sha256"],
        kubelet_sha
    );
    assert_eq!(
        labels["io.rkers.image-build.kubernetes.source"],
        "kubernetes-server-linux-amd64.tar.gz"
    );
    let inside = e.env.on_host(
        "host1",
        &format!(
            "docker run --rm --entrypoint sh {tag} -c 'sha256sum /usr/local/bin/kubelet \"$(command -v cri-dockerd)\"; command -v hyperkube'"
        ),
    );
    assert!(inside.contains(kubelet_sha), "{inside}");
    assert!(
        inside.contains(&format!("{cri_sha}  /usr/local/bin/cri-dockerd")),
        "{inside}"
    );
    assert!(inside.contains("/usr/local/bin/hyperkube"), "{inside}");
    let tags = sh(&format!(
        "curl -sf http://{}/v2/rkers-test/hyperkube-built/tags/list",
        e.env.registry_local
    ));
    assert!(tags.contains(&format!("v1.20.2-e2e-{instance}")), "{tags}");

    // 2. The cluster runs it; host3 pulls it from the registry.
    e.env.on_host(
        "host3",
        &format!("docker rmi {tag} >/dev/null 2>&1 || true"),
    );
    e.edit(|t| {
        t.replace(
            &format!("kubernetes: {standard_image}"),
            &format!("kubernetes: {tag}"),
        )
    });
    let t = Instant::now();
    e.up();
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
    eprintln!(
        "up with the built image and every node Ready in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    for (host, container) in [
        ("host1", "kube-apiserver"),
        ("host1", "kubelet"),
        ("host3", "kubelet"),
    ] {
        let image = e.env.on_host(
            host,
            &format!("docker inspect --format '{{{{.Config.Image}}}}' {container}"),
        );
        assert_eq!(image.trim(), tag, "{host}/{container}");
    }

    // 3. A damaged tarball: refused before anything is built.
    let damaged = work
        .path()
        .join("damaged/kubernetes-server-linux-amd64.tar.gz");
    std::fs::create_dir_all(damaged.parent().unwrap()).unwrap();
    std::fs::copy(&tarball, &damaged).unwrap();
    std::fs::copy(
        work.path()
            .join("kubernetes-server-linux-amd64.tar.gz.sha512"),
        work.path()
            .join("damaged/kubernetes-server-linux-amd64.tar.gz.sha512"),
    )
    .unwrap();
    sh(&format!(
        "printf x | dd of={} bs=1 seek=1000 conv=notrunc 2>/dev/null",
        damaged.display()
    ));
    let out = e
        .command(
            &build_args(&damaged)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "damaged/kubernetes-server-linux-amd64.tar.gz: checksum mismatch: sha512 is "
        ),
        "{text}"
    );

    // 4. Back to the standard image for the next test.
    e.reset_config(3);
    let t = Instant::now();
    e.up();
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(180)).await;
    eprintln!("standard image back in {:.1}s", t.elapsed().as_secs_f64());
    eprintln!(
        "the test's own work took {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
