# Kubernetes image in the role of rancher/hyperkube: the v1.20.2 binaries in /usr/local/bin (RKE
# starts `/opt/rke-tools/entrypoint.sh kube-apiserver ...`, found through PATH) and what kubelet's
# dockershim and kube-proxy call on a host.
# scripts/sandbox images sets HYPERKUBE_IMAGE and HYPERKUBE_BIN for a version built from its Go
# module (scripts/build-modules kubernetes); alone, it is the v1.20.2 build of Debian's sources.
RECIPE_IMAGE=${HYPERKUBE_IMAGE:-$IMAGE_HYPERKUBE}
K8S_BIN=${HYPERKUBE_BIN:-$K8S_BIN}
RECIPE_PACKAGES=(
    bash coreutils findutils grep sed gawk
    iptables ipset conntrack kmod iproute2 ethtool
    mount util-linux procps socat
    ca-certificates jq e2fsprogs xfsprogs
)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
)
# Inputs besides this directory: the Kubernetes binaries.
recipe_inputs() { cat "$K8S_BIN/../SHA256SUMS"; }
recipe_populate() {
    local root=$1 b
    for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl kubelet; do
        install -m 0755 "$K8S_BIN/$b" "$root/usr/local/bin/$b"
    done
    # Upstream hyperkube images also answered to the single-binary name.
    printf '#!/bin/sh\n# hyperkube <component> [flags]: runs the named Kubernetes component.\nexec "$@"\n' >"$root/usr/local/bin/hyperkube"
    chmod 0755 "$root/usr/local/bin/hyperkube"
}
