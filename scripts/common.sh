# Shared by scripts/demo.sh, scripts/test.sh and .ci/run: timed, printed steps and idempotent apt installs.

step_start=0
step() {
    step_start=$(date +%s)
    printf '== %s\n' "$*"
}
step_done() {
    printf '   done in %d s\n' $(( $(date +%s) - step_start ))
}

# Root's commands run as root, or through sudo for a user who may.
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

# apt_update: apt-get update, retried. A failed index (a mirror caught mid-sync, often another
# architecture's on a machine set up for cross builds) leaves the others usable: after three tries go on,
# and let apt-get install say if a package is really missing.
apt_update() {
    n=0
    until $sudo apt-get update -qq; do
        n=$((n + 1))
        if [ $n -ge 3 ]; then
            echo "   apt-get update failed 3 times: installing from the indexes that did arrive" >&2
            return 0
        fi
        sleep 20
    done
}

# apt_install PKG...: installs the packages that are not installed yet (nothing when all are).
apt_install() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -z "$missing" ]; then
        echo "   all $# packages already installed"
        return 0
    fi
    echo "   apt-get install$missing"
    apt_update
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# What building the library, the tools and the sd example needs (Debian 12 or 13).
BUILD_PACKAGES="build-essential pkg-config meson ninja-build libxnnpack-dev libcpuinfo-dev libpthreadpool-dev
libpng-dev zlib1g-dev libxxhash-dev nlohmann-json3-dev libonnx-dev libprotobuf-dev protobuf-compiler"
