# calico-node from its Go module (scripts/build-modules calico) in the role of
# rancher/mirrored-calico-node, as RKE1's canal template runs it: felix programs each host's
# iptables and ipsets for network policy while flannel carries the pod traffic
# (CALICO_NETWORKING_BACKEND=none). The template's liveness probe runs /bin/calico-node
# -felix-live and its init container calico-node -init -best-effort. BIRD is not built, so the
# BGP backend of RKE1's calico template is refused at start (start-calico-node). Set by
# scripts/sandbox images.
RECIPE_IMAGE=${CALICO_NODE_IMAGE:?scripts/sandbox images sets CALICO_NODE_IMAGE}
# felix picks iptables' legacy or nft backend by what the host already uses
# (FELIX_IPTABLESBACKEND=auto), so both come with Debian's iptables; ipset for policy sets.
RECIPE_PACKAGES=(bash iptables ipset iproute2 conntrack kmod procps ca-certificates)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'ENTRYPOINT ["/usr/local/bin/start-calico-node"]'
)
recipe_inputs() { cat "${CALICO_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    local root=$1
    install -m 0755 "$CALICO_BIN/calico-node" "$root/usr/bin/calico-node"
    mkdir -p "$root/var/lib/calico" "$root/var/run/calico" "$root/etc/calico"
}
