# The calico CNI plugin, calico-ipam and their installer from github.com/projectcalico/calico
# (scripts/build-modules calico), with the standard CNI plugins (scripts/build-modules
# cni-plugins) and the flannel plugin, in the role of rancher/calico-cni: RKE1's canal template
# runs /opt/cni/bin/install, which copies /opt/cni/bin to the host's, writes the plugin's
# kubeconfig and CNI_NETWORK_CONFIG as /etc/cni/net.d/$CNI_CONF_NAME. Set by scripts/sandbox images.
RECIPE_IMAGE=${CALICO_CNI_IMAGE:?scripts/sandbox images sets CALICO_CNI_IMAGE}
RECIPE_PACKAGES=(ca-certificates)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'CMD ["/opt/cni/bin/install"]'
)
recipe_inputs() { cat "${CALICO_BIN:?}/../SHA256SUMS" "${CNI_PLUGINS_BIN:?}/../SHA256SUMS" "${FLANNEL_CNI_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    local root=$1 b
    mkdir -p "$root/opt/cni/bin"
    cp -a "$CNI_PLUGINS_BIN/." "$root/opt/cni/bin/"
    install -m 0755 "$FLANNEL_CNI_BIN/flannel" "$root/opt/cni/bin/flannel"
    for b in calico calico-ipam install; do install -m 0755 "$CALICO_BIN/$b" "$root/opt/cni/bin/$b"; done
}
