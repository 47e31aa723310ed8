#!/bin/sh
# Fuzz every target for SECONDS_PER_TARGET (default 60) with libFuzzer, ASan and UBSan; not run in CI.
#   tests/fuzz/run_fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# Configures and builds build-fuzz (clang, -Dfuzzing=true, -Db_sanitize=address,undefined), seeds the corpora
# (make_seeds.py: ../shared, tests/, and the build folders in SEED_BUILDS, default build), runs each target
# with two workers (FUZZ_JOBS) and prints per target: executions, crashers found, corpus size. Exits 1 when a
# target found a crasher: the inputs are in build-fuzz/fuzz-work/crashes/<target>/. Replay one with
# build-fuzz/tests/fuzz/fuzz_<target> FILE, fix it, and keep it in tests/fuzz/regressions/<target>/.
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
work=$build/fuzz-work
jobs=${FUZZ_JOBS:-2}
targets=${*:-model_txt npy range_data onnx_import}

if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$build" "$root" -Dfuzzing=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dbuildtype=debugoptimized -Dtests=disabled -Dtools=false -Dexamples=disabled
fi
exes=
for t in $targets; do exes="$exes tests/fuzz/fuzz_$t"; done
# shellcheck disable=SC2086
nice -n 10 ninja -C "$build" $exes

seed_args=
for b in ${SEED_BUILDS:-$root/build}; do seed_args="$seed_args --build $b"; done
rm -rf "$work/seeds"
# shellcheck disable=SC2086
/usr/bin/python3 "$root/tests/fuzz/make_seeds.py" --out "$work/seeds" --root "$root" $seed_args

# UBSan findings must stop the run like ASan's do; leaks are checked at every input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
total=0
printf '%-12s %14s %8s %8s\n' target executions crashers corpus > "$work/summary.txt"
for t in $targets; do
    corpus=$work/corpus/$t
    crashes=$work/crashes/$t
    logs=$work/logs/$t
    # Crashers of an earlier run move aside: the counts below are this run's.
    if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ]; then
        mkdir -p "$work/crashes.prev/$t" && mv "$crashes"/* "$work/crashes.prev/$t/"
    fi
    mkdir -p "$corpus" "$crashes" "$logs" "$work/seeds/$t"
    rm -f "$logs"/*.log
    dict=
    [ -f "$root/tests/fuzz/$t.dict" ] && dict=-dict=$root/tests/fuzz/$t.dict
    # -jobs runs that many fuzzing processes (each until the time is up or it finds a crasher); its output
    # goes to fuzz-<job>.log in the working folder.
    (cd "$logs" && nice -n 10 "$build/tests/fuzz/fuzz_$t" -jobs="$jobs" -workers="$jobs" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict "$corpus" "$work/seeds/$t" >/dev/null 2>&1) || true
    execs=$(cat "$logs"/fuzz-*.log 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{s += $1} END {print s + 0}')
    found=$(find "$crashes" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    size=$(find "$corpus" -type f | wc -l)
    printf '%-12s %14s %8s %8s\n' "$t" "$execs" "$found" "$size" >> "$work/summary.txt"
    total=$((total + execs))
    [ "$found" -eq 0 ] || status=1
done
printf '%-12s %14s\n' total "$total" >> "$work/summary.txt"
cat "$work/summary.txt"
exit $status
