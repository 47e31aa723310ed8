#!/bin/sh
# Build and test onnxstream on Debian 13 "trixie" (XNNPACK 2024-11, g++ 14, libonnx 1.17) from a Debian 12 host,
# without touching the host's apt sources: mmdebstrap makes a trixie root from Debian's packages, the
# checkout and ../shared are bind-mounted at the same paths inside it (in a private mount namespace, so
# nothing stays mounted afterwards), and the build and `meson test` run under chroot. Needs root and
# Debian's `mmdebstrap`.
#
#   scripts/debian13.sh [test] [MESON_TEST_ARGS...]   build, then meson test (e.g. --suite ops --suite e2e)
#   scripts/debian13.sh build                         build only
#   scripts/debian13.sh exec COMMAND [ARGS...]        run a command in the root, in the checkout
#   scripts/debian13.sh arm64                         cross-build for arm64 against trixie's arm64 libraries
#                                                     (cross/sysroot.sh inside the root) and run
#                                                     cross/test_aarch64.sh under qemu (cortex-a53 and max)
#   scripts/debian13.sh prepare [arm64]               make the root (and its arm64 cross compiler, qemu and
#                                                     library tree) only: downloads, no build
#
# DEBIAN13_ROOT    where the root lives (default /var/tmp/onnxstream-debian13); made once, then reused
# DEBIAN13_BUILD   build folder inside the checkout (default build-debian13)
# DEBIAN13_CC      gcc (default) or clang
# DEBIAN13_MOUNTS  more host folders to mount at the same paths, separated by ':' (e.g. a benchmark's work folder)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$src/.." && pwd)/shared
root=${DEBIAN13_ROOT:-/var/tmp/onnxstream-debian13}
build=${DEBIAN13_BUILD:-build-debian13}
mode=test
case ${1:-} in test|build|exec|arm64|prepare) mode=$1; shift ;; esac

# Build and test dependencies, all from trixie itself. onnxruntime-node (the test reference) comes from
# npm into tests/tools/node_modules of the checkout, shared with the host, and so do the zoo suite's models
# (tests/zoo/node_modules).
packages=build-essential,pkg-config,meson,ninja-build,clang,\
libxnnpack-dev,libcpuinfo-dev,libpthreadpool-dev,libpng-dev,zlib1g-dev,libxxhash-dev,nlohmann-json3-dev,\
libonnx-dev,libprotobuf-dev,protobuf-compiler,libgtest-dev,libbenchmark-dev,\
python3,python3-numpy,python3-onnx,python3-torch,python3-pil,nodejs,npm,cargo,golang-go,time,ca-certificates

# An mmdebstrap that failed or was stopped can leave /proc, /sys and /dev/pts mounted in the root: unmount
# them first, and --one-file-system keeps rm out of any that remain.
remove_root() {
    grep -o " $root/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
    rm -rf --one-file-system "$root"
}

start=$(date +%s)
if [ ! -x "$root/usr/bin/meson" ]; then
    echo "debian13: making a trixie root in $root"
    remove_root
    # A mirror caught mid-sync fails the index download ("unexpected size"): retry.
    tries=0
    until mmdebstrap --quiet --variant=apt --include="$packages" trixie "$root"; do
        tries=$((tries + 1))
        [ $tries -lt 3 ] || { echo "debian13: mmdebstrap failed $tries times" >&2; exit 1; }
        remove_root
        sleep 20
    done
    echo "debian13: root ready in $(( $(date +%s) - start )) s"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

case ${DEBIAN13_CC:-gcc} in
    gcc) cc_env="CC=gcc CXX=g++" ;;
    clang) cc_env="CC=clang CXX=clang++" ;;
    *) echo "debian13: DEBIAN13_CC must be gcc or clang" >&2; exit 2 ;;
esac

# Runs "$@" inside the root, in the checkout, with the mounts it needs.
in_root() {
    unshare --mount --propagation private sh -eu -c '
        root=$1 mounts=$2; shift 2
        IFS=:
        for d in $mounts; do [ -n "$d" ] || continue; mkdir -p "$root$d"; mount --bind "$d" "$root$d"; done
        unset IFS
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        exec chroot "$root" "$@"
    ' debian13 "$root" "$src:$shared:${DEBIAN13_MOUNTS:-}" \
        /usr/bin/env HOME=/root PATH=/usr/local/bin:/usr/bin:/bin $cc_env sh -eu -c 'cd "$0"; exec "$@"' "$src" "$@"
}

# A root made from an older package list lacks what was added since: install it (nothing when complete).
missing=$(echo "$packages" | tr ',' '\n' | while read -r p; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
done)
if [ -n "$missing" ]; then
    echo "debian13: installing into the root:" $missing
    in_root sh -eu -c 'n=0; until apt-get update -qq; do n=$((n + 1)); [ $n -lt 3 ] || exit 1; sleep 20; done
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null' debian13-packages $missing
fi

if [ "$mode" = exec ]; then
    in_root "$@"
    exit
fi

# trixie's own cross compiler (g++ 14) and qemu; the arm64 libraries unpacked by cross/sysroot.sh into the
# root's /opt, where cross/aarch64-linux-gnu.ini looks for them. Again each time: a few seconds, and the
# package list may have grown.
arm64_tools() {
    in_root sh -eu -c '
        if [ ! -x /usr/bin/aarch64-linux-gnu-g++ ] || [ ! -x /usr/bin/qemu-aarch64-static ]; then
            dpkg --add-architecture arm64
            n=0; until apt-get update -qq; do n=$((n + 1)); [ $n -lt 3 ] || exit 1; sleep 20; done
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                crossbuild-essential-arm64 qemu-user-static >/dev/null
        fi
        bash cross/sysroot.sh arm64'
}

if [ "$mode" = prepare ]; then
    [ "${1:-}" != arm64 ] || arm64_tools
    echo "debian13: prepared in $(( $(date +%s) - start )) s"
    exit
fi

if [ "$mode" = arm64 ]; then
    arm64_tools
    # The library, the tools, the sd example and the tests, then cross/test_aarch64.sh under each CPU of
    # DEBIAN13_ARM_CPUS (default: both): a Pi Zero 2 / 3 class CPU (no float16 arithmetic) and a Pi 5 class
    # one (ARMv8.2 float16 arithmetic). meson test builds each test's programs.
    in_root sh -eu -c '
        build=$1 cpus=$2
        if [ -f "$build/build.ninja" ]; then
            meson configure "$build" -Dtests=enabled
        else
            meson setup "$build" --cross-file cross/aarch64-linux-gnu.ini --buildtype=release -Dtests=enabled
        fi
        t=$(date +%s)
        meson compile -C "$build" onnxstream onnxstream-run onnxstream-convert sd
        echo "debian13 arm64: build $(( $(date +%s) - t )) s"
        qemu-aarch64-static -L /opt/onnxstream-cross/aarch64-linux-gnu "$build/src/tools/onnxstream-run" --version
        for cpu in $cpus; do sh cross/test_aarch64.sh "$build" "$cpu"; done
    ' debian13-arm64 "${DEBIAN13_BUILD:-build-debian13-arm64}" "${DEBIAN13_ARM_CPUS:-cortex-a53 max}"
    echo "debian13: done in $(( $(date +%s) - start )) s"
    exit
fi

in_root sh -eu -c '
    build=$1 mode=$2; shift 2
    echo "debian13: $(. /etc/os-release; echo "$PRETTY_NAME"), $(${CXX} --version | head -n 1)"
    [ -d tests/tools/node_modules ] || (cd tests/tools && npm ci --ignore-scripts --no-audit --no-fund)
    [ -d tests/zoo/node_modules ] || (cd tests/zoo && npm ci --ignore-scripts --no-audit --no-fund)
    [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release -Dtests=enabled
    t=$(date +%s)
    ninja -C "$build"
    echo "debian13: build $(( $(date +%s) - t )) s"
    "$build/src/tools/onnxstream-run" --version
    [ "$mode" = test ] || exit 0
    t=$(date +%s)
    meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
    echo "debian13: tests $(( $(date +%s) - t )) s"
' debian13-build "$build" "$mode" "$@"
echo "debian13: done in $(( $(date +%s) - start )) s"
