#!/bin/sh
# Fuzz every target for SECONDS_PER_TARGET with libFuzzer, ASan and UBSan.
#   tests/fuzz/run_fuzz.sh [--smoke] [SECONDS_PER_TARGET] [TARGET...]
# Configures and builds build-fuzz (clang, -Dfuzzing=true, -Db_sanitize=address,undefined), replays every kept
# regression and shared crasher through each target's binary, seeds the corpora (make_seeds.py: the
# regressions, ../shared, tests/, and the build folders in SEED_BUILDS), fuzzes and prints per target:
# executions, crashers found, corpus size, seconds. Exits 1 when a replay failed or a target found a crasher:
# the inputs are in build-fuzz/fuzz-work/crashes/<target>/. Replay one with build-fuzz/tests/fuzz/fuzz_<target>
# FILE, fix it, and keep it in tests/fuzz/regressions/<target>/.
# Default (a long run): 60 s per target, one target at a time with two workers (FUZZ_JOBS), seeds from the
# build folder too (SEED_BUILDS=build). --smoke (CI, .ci/run): 45 s per target, two targets at a time with
# one worker each (FUZZ_PARALLEL, FUZZ_JOBS), no build-folder seeds, so that libFuzzer's pass over the
# initial corpus stays a small part of the time, and build-fuzz configured -O1 without debug info when it
# is made.
set -eu
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
if [ $smoke = 1 ]; then
    secs=${1:-45} jobs=${FUZZ_JOBS:-1} parallel=${FUZZ_PARALLEL:-2} seed_builds=${SEED_BUILDS-}
else
    secs=${1:-60} jobs=${FUZZ_JOBS:-2} parallel=${FUZZ_PARALLEL:-1} seed_builds=${SEED_BUILDS-build}
fi
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
work=$build/fuzz-work
targets=${*:-model_txt model_run npy range_data safetensors onnx_import convert_capi}

# A long run wants file:line in its reports (-O2 -g); the smoke run a quicker build (-O1, no debug info: the
# reports still name functions, and a crasher is replayed in a debug build).
opt="-Dbuildtype=debugoptimized"
[ $smoke = 0 ] || opt="-Doptimization=1 -Ddebug=false"
if [ ! -f "$build/build.ninja" ]; then
    # shellcheck disable=SC2086
    CC=clang CXX=clang++ meson setup "$build" "$root" -Dfuzzing=true -Db_sanitize=address,undefined \
        -Db_lundef=false $opt -Dtests=disabled -Dtools=false -Dexamples=disabled
fi
exes=
for t in $targets; do exes="$exes tests/fuzz/fuzz_$t"; done
# shellcheck disable=SC2086
nice -n 10 ninja -C "$build" $exes

seed_args=
for b in $seed_builds; do
    case $b in /*) ;; *) b=$root/$b ;; esac
    seed_args="$seed_args --build $b"
done
rm -rf "$work/seeds"
# shellcheck disable=SC2086
/usr/bin/python3 "$root/tests/fuzz/make_seeds.py" --out "$work/seeds" --root "$root" $seed_args

# UBSan findings must stop the run like ASan's do; leaks are checked at every input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
mkdir -p "$work"
rm -f "$work"/summary-*.txt
# Replays: every kept regression and shared crasher must run clean before any fuzzing.
for t in $targets; do
    files=$( (find "$root/tests/fuzz/regressions/$t" -type f ! -name '.*'
              find "$root/../shared/data/crashers" -type f -name "$t-*") 2>/dev/null || true)
    [ -n "$files" ] || continue
    n=$(echo "$files" | wc -l)
    # shellcheck disable=SC2086
    if "$build/tests/fuzz/fuzz_$t" $files > "$work/replay-$t.log" 2>&1; then
        echo "replay $t: $n inputs, clean"
    else
        echo "replay $t: FAILED (see $work/replay-$t.log)"
        tail -n 30 "$work/replay-$t.log"
        status=1
    fi
done

fuzz_one() {
    t=$1
    corpus=$work/corpus/$t
    crashes=$work/crashes/$t
    logs=$work/logs/$t
    # Crashers of an earlier run move aside: the counts below are this run's.
    if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ]; then
        mkdir -p "$work/crashes.prev/$t" && mv "$crashes"/* "$work/crashes.prev/$t/"
    fi
    mkdir -p "$corpus" "$crashes" "$logs" "$work/seeds/$t"
    rm -f "$logs"/*.log
    # The C API targets read the same formats as model_txt and onnx_import (convert_capi after an option byte).
    case $t in model_run) d=model_txt ;; convert_capi) d=onnx_import ;; *) d=$t ;; esac
    dict=
    [ -f "$root/tests/fuzz/$d.dict" ] && dict=-dict=$root/tests/fuzz/$d.dict
    started=$(date +%s)
    # -jobs runs that many fuzzing processes (each until the time is up or it finds a crasher); its output
    # goes to fuzz-<job>.log in the working folder.
    (cd "$logs" && nice -n 10 "$build/tests/fuzz/fuzz_$t" -jobs="$jobs" -workers="$jobs" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict "$corpus" "$work/seeds/$t" >/dev/null 2>&1) || true
    took=$(($(date +%s) - started))
    execs=$(cat "$logs"/fuzz-*.log 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{s += $1} END {print s + 0}')
    found=$(find "$crashes" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    size=$(find "$corpus" -type f | wc -l)
    printf '%-12s %14s %8s %8s %8s\n' "$t" "$execs" "$found" "$size" "$took" > "$work/summary-$t.txt"
}

running=0
for t in $targets; do
    fuzz_one "$t" &
    running=$((running + 1))
    if [ $running -ge "$parallel" ]; then wait; running=0; fi
done
wait

total=0
printf '%-12s %14s %8s %8s %8s\n' target executions crashers corpus seconds > "$work/summary.txt"
for t in $targets; do
    cat "$work/summary-$t.txt" >> "$work/summary.txt"
    execs=$(awk '{print $2}' "$work/summary-$t.txt")
    found=$(awk '{print $3}' "$work/summary-$t.txt")
    total=$((total + execs))
    [ "$found" -eq 0 ] || status=1
done
printf '%-12s %14s\n' total "$total" >> "$work/summary.txt"
cat "$work/summary.txt"
if [ $status != 0 ]; then
    for t in $targets; do
        for f in "$work/crashes/$t"/*; do [ -f "$f" ] && echo "crasher: $f"; done
    done
fi
exit $status
