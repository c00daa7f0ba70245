# CNI plugins from Debian's containernetworking-plugins, for the sandbox's own pod network:
# /opt/cni/bin holds them, and `install-cni` copies them to /host/opt/cni/bin.
RECIPE_IMAGE=$IMAGE_CNI_PLUGINS
RECIPE_PACKAGES=(containernetworking-plugins)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'CMD ["/usr/local/bin/install-cni"]'
)
recipe_inputs() { :; }
recipe_populate() {
    local root=$1
    mkdir -p "$root/opt/cni/bin"
    cp -a "$root"/usr/lib/cni/. "$root/opt/cni/bin/"
}
