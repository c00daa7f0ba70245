# calico-kube-controllers from github.com/projectcalico/calico (scripts/build-modules calico) in
# the role of rancher/mirrored-calico-kube-controllers: canal's and calico's templates run it as
# a non-root Deployment (runAsNonRoot) whose probes run /usr/bin/check-status, which reads the
# status file the controllers write. As upstream's image: user 999, started by its wrapper.
# Set by scripts/sandbox images.
RECIPE_IMAGE=${CALICO_CONTROLLERS_IMAGE:?scripts/sandbox images sets CALICO_CONTROLLERS_IMAGE}
RECIPE_PACKAGES=(ca-certificates)
RECIPE_CHANGES=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'USER 999'
    'ENTRYPOINT ["/usr/bin/wrapper", "/usr/bin/kube-controllers"]'
)
recipe_inputs() { cat "${CALICO_BIN:?}/../SHA256SUMS"; }
recipe_populate() {
    local root=$1 b f
    for b in kube-controllers check-status wrapper; do install -m 0755 "$CALICO_BIN/$b" "$root/usr/bin/$b"; done
    mkdir -p "$root/status" "$root/profiles"
    for f in status/status.json profiles/mem.pprof profiles/cpu.pprof; do
        : >"$root/$f"
        chown 999 "$root/$f"
    done
}
