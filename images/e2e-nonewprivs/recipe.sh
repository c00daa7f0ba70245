# nonewprivs of the conformance suite (registry.k8s.io/e2e-test-images/nonewprivs): test/images/
# nonewprivs/nnp.go of the same k8s.io/kubernetes module as e2e.test (scripts/build-modules
# kubernetes-e2e keeps test/images in test-images.tar), compiled statically and installed setuid
# root as /usr/local/bin/nnp, as upstream's Dockerfile does: it prints its effective uid, which
# the AllowPrivilegeEscalation tests read. Set by scripts/conformance-images: E2E_IMAGE, E2E_BIN.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENV PATH=/usr/local/bin' 'CMD ["nnp"]')
recipe_inputs() {
    tar -xOf "${E2E_BIN:?}/test-images.tar" images/nonewprivs/nnp.go | sha256sum | cut -d' ' -f1
    "$GO" env GOVERSION
}
recipe_populate() {
    local root=$1 src
    src=$(mktemp -d)
    tar -xOf "$E2E_BIN/test-images.tar" images/nonewprivs/nnp.go >"$src/nnp.go"
    mkdir -p "$root/usr/local/bin"
    (cd "$src" && CGO_ENABLED=0 GOTOOLCHAIN=local GO111MODULE=off GOCACHE="$RKERS_CACHE/go/build" \
        "$GO" build -trimpath -ldflags "-s -w" -o "$root/usr/local/bin/nnp" nnp.go) || images_die "compiling nnp.go failed"
    rm -rf "$src"
    chmod 4755 "$root/usr/local/bin/nnp"
}
