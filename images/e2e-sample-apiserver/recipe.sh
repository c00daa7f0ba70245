# sample-apiserver of the conformance suite's aggregator test (registry.k8s.io/e2e-test-images/
# sample-apiserver): k8s.io/sample-apiserver built from its Go module (scripts/build-modules
# sample-apiserver, at the version e2e.test was built with), static, alone in the image but for
# /tmp. Set by scripts/conformance-images: E2E_IMAGE, SAMPLE_APISERVER_BIN.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENTRYPOINT ["/sample-apiserver"]')
recipe_inputs() { cat "${SAMPLE_APISERVER_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    install -m 0755 "$SAMPLE_APISERVER_BIN/sample-apiserver" "$1/sample-apiserver"
    mkdir -p "$1/tmp"
    chmod 1777 "$1/tmp"
}
