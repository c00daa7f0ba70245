# Docker-in-Docker node image for `rkers up --dind` here, in the role of docker:<version>-dind:
# Debian's docker.io (dockerd, containerd, runc, the CLI), iptables, socat and mount, and a
# `dockerd-entrypoint.sh` that serves unix:///var/run/docker.sock and, with DOCKER_TLS_CERTDIR
# empty (as RKE1 and rkers start it), tcp://0.0.0.0:2375 without TLS.
# Two properties of the sandbox machine, not of rkers, are baked in: the sandbox's runc wrapper
# (scripts/lib/sandbox-runc-wrapper.sh: no CAP_SYS_RESOURCE here) as the default runtime, and
# registries on private addresses trusted over plain HTTP (the sandbox registry).
RECIPE_IMAGE=$IMAGE_DIND
RECIPE_PACKAGES=(docker.io iptables socat mount jq ca-certificates procps kmod)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'VOLUME /var/lib/docker'
    'ENTRYPOINT ["dockerd-entrypoint.sh"]'
)
recipe_inputs() { sha256sum "$here/lib/sandbox-runc-wrapper.sh" | cut -d' ' -f1; }
recipe_populate() {
    local root=$1
    install -m 0755 "$here/lib/sandbox-runc-wrapper.sh" "$root/usr/local/bin/rkers-runc"
}
