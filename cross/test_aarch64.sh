#!/bin/sh
# The aarch64 test plan under qemu-user for one emulated CPU, on a cross build configured with -Dtests=enabled
# (scripts/debian13.sh arm64 runs it in the Debian 13 root for cortex-a53 and max; docs/platforms.md).
#
#   cross/test_aarch64.sh BUILD cortex-a53|max
#
# cortex-a53 (a Pi Zero 2 / Pi 3: ARMv8.0, no float16 arithmetic): the core suites, YOLOv8n in float32 with
# the file provider, its float16 and int8 variants, int4 weights, and the sd example end to end.
# max (ARMv8.2+ with float16 arithmetic and dot product, like a Pi 5's Cortex-A76): the float16 op cases,
# YOLOv8n's variants, int4 weights, attention and the small SD models.
# Left out under qemu for time (run by hand when needed): cache (a process per YOLOv8n run), bindings,
# convert/patterns/quant/layout/import (the importer's work, done on the build machine), YOLOv8n's
# callback-read case (the provider code is the same on every architecture), soak and the allocation sweep.
set -eu
build=${1:?usage: $0 BUILD cortex-a53|max}
cpu=${2:?usage: $0 BUILD cortex-a53|max}
run() {
    t=$(date +%s)
    meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 3 "$@"
    echo "test_aarch64: $cpu: meson test $*: $(( $(date +%s) - t )) s"
}
export QEMU_CPU=$cpu
case $cpu in
    cortex-a53)
        export ONNXSTREAM_EXPECT_FP16_ARITHMETIC=0
        # suite slow without soak and faults: the yolov8n test.
        ONNXSTREAM_E2E_CASES=nocache run --suite unit --suite ops --suite capi --suite bad-input --suite fuzz \
            --suite slow --suite examples --no-suite soak --no-suite faults
        run yolov8n_arithmetic w4
        ;;
    max)
        export ONNXSTREAM_EXPECT_FP16_ARITHMETIC=1
        run half arithmetic conv matmul_gemm yolov8n_arithmetic w4
        run --suite attention --suite sd
        ;;
    *)
        echo "$0: unknown CPU $cpu (cortex-a53 or max)" >&2
        exit 2
        ;;
esac
