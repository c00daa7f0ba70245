# flanneld from its Go module (scripts/build-modules flannel) in the role of
# rancher/mirrored-flannel-flannel: RKE1's flannel and canal templates run /opt/bin/flanneld, which
# programs iptables (both backends, the host's choice) and VXLAN links. Set by scripts/sandbox images.
RECIPE_IMAGE=${FLANNEL_IMAGE:?scripts/sandbox images sets FLANNEL_IMAGE}
RECIPE_PACKAGES=(iptables iproute2 ca-certificates)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'ENTRYPOINT ["/opt/bin/flanneld"]'
)
recipe_inputs() { cat "${FLANNEL_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    local root=$1
    mkdir -p "$root/opt/bin"
    install -m 0755 "$FLANNEL_BIN/flanneld" "$root/opt/bin/flanneld"
}
