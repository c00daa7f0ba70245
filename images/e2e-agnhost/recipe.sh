# agnhost of the conformance suite (registry.k8s.io/e2e-test-images/agnhost): the binary built from
# test/images/agnhost of the same k8s.io/kubernetes module as e2e.test (scripts/build-modules
# kubernetes-e2e), on Debian with the tools upstream's Dockerfile adds (dig, curl, nc, ss, iperf,
# bash), coredns (scripts/build-modules coredns, for the DNS server subcommand tests), the porter
# certificates, /uploads, the agnhost-2 alias and the user and group the supplemental-groups test
# expects. With E2E_AGNHOST_SITE=kitten|nautilus it is instead that image of the Update Demo test:
# the same base with the site's picture and data.json, serving them with test-webserver.
# Set by scripts/conformance-images: E2E_IMAGE, E2E_BIN, COREDNS_BIN, E2E_AGNHOST_SITE.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_PACKAGES=(bind9-dnsutils curl netcat-openbsd iproute2 iperf bash ca-certificates)
if [ -n "${E2E_AGNHOST_SITE:-}" ]; then
    RECIPE_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'EXPOSE 80 8080 8081 9376 5000' 'ENTRYPOINT ["/agnhost"]' 'CMD ["test-webserver"]')
else
    RECIPE_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'EXPOSE 80 8080 8081 9376 5000' 'ENTRYPOINT ["/agnhost"]' 'CMD ["pause"]')
fi
recipe_inputs() {
    cat "${E2E_BIN:?}/../SHA256SUMS" "${COREDNS_BIN:?}/../SHA256SUMS"
    echo "site ${E2E_AGNHOST_SITE:-}"
}
recipe_populate() {
    local root=$1 site=${E2E_AGNHOST_SITE:-}
    install -m 0755 "$E2E_BIN/agnhost" "$root/agnhost"
    ln -sf agnhost "$root/agnhost-2"
    install -m 0755 "$COREDNS_BIN/coredns" "$root/coredns"
    mkdir -p "$root/uploads"
    tar -xf "$E2E_BIN/test-images.tar" -C "$root" --strip-components=3 \
        images/agnhost/porter/localhost.crt images/agnhost/porter/localhost.key
    ln -sf /usr/bin/iperf "$root/usr/local/bin/iperf"
    images_chroot "$root" groupadd -g 50000 group-defined-in-image
    images_chroot "$root" useradd -u 1000 -M -G group-defined-in-image user-defined-in-image
    if [ -n "$site" ]; then
        tar -xf "$E2E_BIN/test-images.tar" -C "$root" --strip-components=3 \
            "images/$site/html/$site.jpg" "images/$site/html/data.json"
    fi
}
