# etcd image: Debian's etcd 3.4 server and etcdctl, where RKE runs them (/usr/local/bin/etcd as
# the container command; /usr/local/bin/etcdctl in the snapshot-restore one-shot).
# With ETCD_BIN (scripts/build-modules etcd: etcd, etcdctl, etcdutl) and ETCD_IMAGE, that release
# instead, from its Go module (scripts/sandbox images).
RECIPE_IMAGE=${ETCD_IMAGE:-$IMAGE_ETCD}
if [ -n "${ETCD_BIN:-}" ]; then
    RECIPE_PACKAGES=(ca-certificates)
else
    RECIPE_PACKAGES=(etcd-server etcd-client ca-certificates)
fi
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'CMD ["/usr/local/bin/etcd"]'
)
recipe_inputs() { [ -z "${ETCD_BIN:-}" ] || cat "$ETCD_BIN/../SHA256SUMS"; }
recipe_populate() {
    local root=$1 b
    if [ -n "${ETCD_BIN:-}" ]; then
        for b in etcd etcdctl etcdutl; do install -m 0755 "$ETCD_BIN/$b" "$root/usr/local/bin/$b"; done
    else
        ln -sf /usr/bin/etcd "$root/usr/local/bin/etcd"
        ln -sf /usr/bin/etcdctl "$root/usr/local/bin/etcdctl"
    fi
    mkdir -p "$root/var/lib/rancher/etcd"
}
