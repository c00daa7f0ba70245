# Pod infrastructure image: build/pause/linux/pause.c from the same Kubernetes source tree,
# compiled statically, alone in the image (the equivalent of FROM scratch).
# PAUSE_IMAGE and PAUSE_SOURCE (a pause.c of a Kubernetes module build): scripts/sandbox images.
RECIPE_IMAGE=${PAUSE_IMAGE:-$IMAGE_PAUSE}
PAUSE_C=${PAUSE_SOURCE:-$K8S_BIN/pause.c}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENTRYPOINT ["/pause"]')
# The source file's version, not the image tag: the tag follows what kubelet is configured with.
PAUSE_SOURCE_VERSION=v3.4-rkers
recipe_inputs() { sha256sum "$PAUSE_C" | cut -d' ' -f1; gcc --version | head -1; echo "$PAUSE_SOURCE_VERSION"; }
recipe_populate() {
    local root=$1
    command -v gcc >/dev/null || apt_install gcc libc6-dev
    gcc -Os -Wall -Werror -static -DVERSION="$PAUSE_SOURCE_VERSION" -o "$root/pause" "$PAUSE_C"
    strip "$root/pause"
}
