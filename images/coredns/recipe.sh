# CoreDNS from its Go module (scripts/build-modules coredns) in the role of
# rancher/mirrored-coredns-coredns: /coredns, static, alone in the image, as upstream's image.
RECIPE_IMAGE=${COREDNS_IMAGE:?scripts/sandbox images sets COREDNS_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENTRYPOINT ["/coredns"]' 'EXPOSE 53 53/udp')
recipe_inputs() { cat "${COREDNS_BIN:?}/../SHA256SUMS"; }
recipe_populate() { install -m 0755 "$COREDNS_BIN/coredns" "$1/coredns"; }
