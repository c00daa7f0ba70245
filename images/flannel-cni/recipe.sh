# The flannel CNI plugin (scripts/build-modules flannel-cni) and the standard CNI plugins
# (scripts/build-modules cni-plugins) in the role of rancher/flannel-cni: RKE1's flannel template
# runs /install-cni.sh, which installs them in the host's /opt/cni/bin and the network
# configuration from CNI_NETWORK_CONFIG as /etc/cni/net.d/$CNI_CONF_NAME, then stays. Set by
# scripts/sandbox images.
RECIPE_IMAGE=${FLANNEL_CNI_IMAGE:?scripts/sandbox images sets FLANNEL_CNI_IMAGE}
RECIPE_PACKAGES=(bash coreutils)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'CMD ["/install-cni.sh"]'
)
recipe_inputs() { cat "${FLANNEL_CNI_BIN:?}/../SHA256SUMS" "${CNI_PLUGINS_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    local root=$1
    mkdir -p "$root/opt/cni/bin"
    cp -a "$CNI_PLUGINS_BIN/." "$root/opt/cni/bin/"
    install -m 0755 "$FLANNEL_CNI_BIN/flannel" "$root/opt/cni/bin/flannel"
}
