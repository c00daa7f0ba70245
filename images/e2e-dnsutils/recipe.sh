# jessie-dnsutils of the conformance suite (registry.k8s.io/e2e-test-images/jessie-dnsutils, upstream
# Debian jessie with dnsutils and coredns): Debian bookworm with dig (bind9-dnsutils), the shell
# tools the DNS tests' probe loops use (hostname, awk, seq, getent) and coredns
# (scripts/build-modules coredns). Set by scripts/conformance-images: E2E_IMAGE, COREDNS_BIN.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_PACKAGES=(bind9-dnsutils hostname mawk)
RECIPE_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'CMD ["/bin/bash"]')
recipe_inputs() { cat "${COREDNS_BIN:?}/../SHA256SUMS"; }
recipe_populate() { install -m 0755 "$COREDNS_BIN/coredns" "$1/coredns"; }
