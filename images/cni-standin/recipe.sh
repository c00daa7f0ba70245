# Stand-in for calico-node and flannel, which cannot be built here (no Debian package, no
# registry to pull from): one script that plays either part well enough for `rkers doctor`'s
# incident checks to meet real kernel and kubelet behaviour. See rootfs/usr/local/bin/cni-standin.
RECIPE_IMAGE=$IMAGE_CNI_STANDIN
RECIPE_PACKAGES=(iptables)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'ENTRYPOINT ["/usr/local/bin/cni-standin"]'
)
recipe_inputs() { :; }
recipe_populate() { :; }
