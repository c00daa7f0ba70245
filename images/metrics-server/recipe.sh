# metrics-server from its Go module (scripts/build-modules metrics-server) in the role of
# rancher/mirrored-metrics-server: /metrics-server, static, alone in the image, as upstream's.
RECIPE_IMAGE=${METRICS_SERVER_IMAGE:?scripts/sandbox images sets METRICS_SERVER_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENTRYPOINT ["/metrics-server"]')
recipe_inputs() { cat "${METRICS_SERVER_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    install -m 0755 "$METRICS_SERVER_BIN/metrics-server" "$1/metrics-server"
    # --cert-dir=/tmp: RKE1's template mounts an emptyDir there; the directory must exist.
    mkdir -p "$1/tmp" && chmod 1777 "$1/tmp"
}
