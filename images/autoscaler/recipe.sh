# rkers' own linear-mode cluster-proportional-autoscaler (src/, scripts/build-modules autoscaler)
# in the role of rancher/mirrored-cluster-proportional-autoscaler, whose module the Go module
# proxy here does not serve: RKE1's DNS templates run /cluster-proportional-autoscaler. Static,
# alone in the image.
RECIPE_IMAGE=${AUTOSCALER_IMAGE:?scripts/sandbox images sets AUTOSCALER_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENTRYPOINT ["/cluster-proportional-autoscaler"]')
recipe_inputs() { cat "${AUTOSCALER_BIN:?}/../SHA256SUMS"; }
recipe_populate() { install -m 0755 "$AUTOSCALER_BIN/cluster-proportional-autoscaler" "$1/cluster-proportional-autoscaler"; }
