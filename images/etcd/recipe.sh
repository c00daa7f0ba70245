# etcd image: Debian's etcd 3.4 server and etcdctl, where RKE runs them (/usr/local/bin/etcd as
# the container command; /usr/local/bin/etcdctl in the snapshot-restore one-shot).
RECIPE_IMAGE=$IMAGE_ETCD
RECIPE_PACKAGES=(etcd-server etcd-client ca-certificates)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'CMD ["/usr/local/bin/etcd"]'
)
recipe_inputs() { :; }
recipe_populate() {
    local root=$1
    ln -sf /usr/bin/etcd "$root/usr/local/bin/etcd"
    ln -sf /usr/bin/etcdctl "$root/usr/local/bin/etcdctl"
    mkdir -p "$root/var/lib/rancher/etcd"
}
