# Tools image in the role of rancher/rke-tools (RKE uses it for system_images alpine, nginx_proxy,
# cert_downloader and kubernetes_services_sidecar):
#   /opt/rke-tools (VOLUME)   entrypoint.sh wrapper, rke-etcd-backup, bin/docker
#   /usr/bin/cert-deployer    certificates from KUBE_* / KUBECFG_* variables
#   /usr/bin/nginx-proxy      nginx stream proxy to the CP_HOSTS apiservers
#   nc (socat based), bash as /bin/sh, etcdctl and kubectl in /usr/local/bin, setfacl
# With TOOLS_IMAGE and CRI_DOCKERD_BIN (scripts/build-modules cri-dockerd), the rke-tools of
# Kubernetes 1.24 and later: cri-dockerd in /opt/rke-tools/bin, where RKE1's image has it; with
# DOCKER_CLI_BIN (scripts/build-modules docker-cli) the docker CLI those releases carry instead of
# Debian's 20.10, which Docker 29.0-29.2 refuse (API 1.41 is below their 1.44).
RECIPE_IMAGE=${TOOLS_IMAGE:-$IMAGE_TOOLS}
RECIPE_PACKAGES=(
    bash coreutils findutils grep sed gawk procps tar gzip acl
    nginx libnginx-mod-stream socat etcd-client ca-certificates
)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'VOLUME /opt/rke-tools'
    'CMD ["/bin/bash"]'
)
recipe_inputs() {
    grep -E ' kubectl$' "$K8S_BIN/../SHA256SUMS"
    "$GO" version
    if [ -n "${DOCKER_CLI_BIN:-}" ]; then cat "$DOCKER_CLI_BIN/../SHA256SUMS"; else images_docker_cli_deb | xargs -r basename; fi
    [ -z "${CRI_DOCKERD_BIN:-}" ] || cat "$CRI_DOCKERD_BIN/../SHA256SUMS"
}
# Debian's docker.io package, downloaded once; only its CLI goes into the image.
images_docker_cli_deb() {
    local d="$RKERS_CACHE/debs"
    mkdir -p "$d"
    if [ -z "$(find "$d" -maxdepth 1 -name 'docker.io_*.deb' | head -1)" ]; then
        (cd "$d" && apt-get -qq -o APT::Sandbox::User=root download docker.io >&2)
    fi
    find "$d" -maxdepth 1 -name 'docker.io_*.deb' | sort | tail -1
}
recipe_populate() {
    local root=$1 deb tmp
    mkdir -p "$root/opt/rke-tools/bin"
    install -m 0755 "$K8S_BIN/kubectl" "$root/usr/local/bin/kubectl"
    ln -sf /usr/bin/etcdctl "$root/usr/local/bin/etcdctl"
    tmp=$(mktemp -d)
    if [ -n "${DOCKER_CLI_BIN:-}" ]; then
        install -m 0755 "$DOCKER_CLI_BIN/docker" "$root/opt/rke-tools/bin/docker"
    else
        deb=$(images_docker_cli_deb)
        dpkg-deb -x "$deb" "$tmp"
        install -m 0755 "$tmp/usr/bin/docker" "$root/opt/rke-tools/bin/docker"
    fi
    if [ -n "${CRI_DOCKERD_BIN:-}" ]; then
        install -m 0755 "$CRI_DOCKERD_BIN/cri-dockerd" "$root/opt/rke-tools/bin/cri-dockerd"
    fi
    rm -rf "$tmp"
    # Its unit tests (the S3 signing among them) run first: a failing one stops the image.
    (cd "$RECIPE_DIR/rke-etcd-backup" && export CGO_ENABLED=0 GOFLAGS= GOPROXY=off GOTOOLCHAIN=local \
        GOCACHE="$RKERS_CACHE/go-build-cache" && "$GO" vet . && "$GO" test -count=1 . >&2 &&
        "$GO" build -trimpath -ldflags '-s -w -buildid=' -o "$root/opt/rke-tools/rke-etcd-backup" .)
    # RKE's helper scripts are written for bash but run as `sh -c`.
    ln -sf bash "$root/bin/sh"
    # The stock site configuration would listen on port 80; nginx-proxy renders its own.
    rm -f "$root/etc/nginx/sites-enabled/default"
}
