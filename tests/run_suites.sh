#!/usr/bin/env bash
# tests/run_suites.sh: make test's runner. Every Bats suite under tests/, TAP on stdout (bats
# --tap), exit status 1 if a suite failed, else 0; tests/tap_summary.sh adds the closing line.
# `bash tests/run_suites.sh --list` prints each suite's lane (cpu or gpu, below), runs nothing;
# `--check` checks TEST_JOBS and TEST_TIMING alone (make test does, before it builds). Bad
# arguments or settings: one line on stderr, exit 2.
# TEST_TIMING=1 (make test TEST_TIMING=1, or in the environment): each test's time on its TAP line
# (bats -T), and at the end, on stderr, the wall seconds of the GPU lane, of its set-up (the lean
# runs ahead of the first test, tests/setup_suite.bash, and each of their lists) and of each
# suite run in the other lanes: where the time of a run on a GPU machine goes.
#
# The suites run in lanes, TEST_JOBS of them (default: the CPU count, at most 4); a lane takes
# the next suite nobody has taken, the largest files first, and runs it as its own `bats --tap`.
#
# Without a GPU (tests/need_gpu.sh), every GPU test skips and every suite is independent CPU work:
# all suites go through the lanes. Their TAP is printed when all are done, in the suites' order,
# one plan line per suite.
#
# Where a GPU can run the stages, runs with the counter pass, the timeline pass or --regions must
# never overlap (CUPTI's profiler and PM sampling are device-wide), and a suite's lean runs are
# best run ahead of the first test, all suites' at once (tests/setup_suite.bash). So the suites
# that use the GPU run in one lane, one `bats --tap` over all of them in the suites' order, as one
# `bats --tap tests/` would; it starts first (it is the long one) and its TAP is printed as it
# comes. The suites that never start a CUDA context (a line "# lane: cpu (...)" among their first
# 10 lines; tests/lanes.bats checks that such a suite starts no stage, asks for no GPU and lists
# no lean runs) run beside it, in the other TEST_JOBS - 1 lanes, as without a GPU; the GPU lane
# takes those left over when it is done. Their TAP follows the GPU lane's, in the suites' order.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# lane_of SUITE: cpu where the suite is marked as never starting a CUDA context, else gpu.
lane_of() {
    if head -n 10 "$1" | grep -qE '^# lane: cpu( |$)'; then echo cpu; else echo gpu; fi
}

suites=(tests/*.bats)
check_only=0
if [ $# -gt 1 ]; then
    echo "run_suites.sh: one argument at most (--list: each suite's lane; --check: the settings)" >&2
    exit 2
elif [ "${1-}" = --list ]; then
    for s in "${suites[@]}"; do
        echo "$(lane_of "$s") $(basename "$s" .bats)"
    done
    exit 0
elif [ "${1-}" = --check ]; then
    check_only=1   # (TEST_JOBS and TEST_TIMING checked below, nothing run: make test's check)
elif [ $# -gt 0 ]; then
    echo "run_suites.sh: unknown argument '$1' (--list: each suite's lane; --check: the settings)" >&2
    exit 2
fi

jobs=${TEST_JOBS:-}
if [ -z "$jobs" ]; then
    jobs=$(nproc 2>/dev/null || echo 1)
    [ "$jobs" -le 4 ] || jobs=4
elif ! [[ "$jobs" =~ ^[1-9][0-9]{0,3}$ ]] || [ "$jobs" -gt 1024 ]; then
    echo "TEST_JOBS=$jobs: expected a whole number from 1 to 1024" >&2
    exit 2
fi

timing=${TEST_TIMING:-0}
if [ "$timing" != 0 ] && [ "$timing" != 1 ]; then
    echo "TEST_TIMING=$timing: expected 0 or 1" >&2
    exit 2
fi
[ "$check_only" = 0 ] || exit 0
bats_flags=(--tap)
[ "$timing" = 0 ] || bats_flags+=(-T)

# seconds_since T0: the seconds from $EPOCHREALTIME T0 to now, to 0.1 s.
seconds_since() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# The lanes' suites: with a GPU, those marked cpu (the GPU lane runs the others); without one, all.
gpu_suites=()
lane_suites=()
if [ -z "$(bash tests/need_gpu.sh 2>/dev/null)" ]; then
    for s in "${suites[@]}"; do
        if [ "$(lane_of "$s")" = cpu ]; then lane_suites+=("$s"); else gpu_suites+=("$s"); fi
    done
else
    lane_suites=("${suites[@]}")
fi
start=$EPOCHREALTIME
work=$(mktemp -d "${TMPDIR:-/tmp}/run_suites.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# The queue: the lanes' suites by size, largest first; a lane takes the next one nobody has taken
# (mkdir is atomic: the lane that makes claims/NAME runs NAME).
queue=()
[ "${#lane_suites[@]}" -eq 0 ] || mapfile -t queue < <(ls -S "${lane_suites[@]}")
mkdir "$work/claims"
lane() {
    local s name
    for s in "${queue[@]}"; do
        name=$(basename "$s" .bats)
        mkdir "$work/claims/$name" 2>/dev/null || continue
        local t0=$EPOCHREALTIME
        bats "${bats_flags[@]}" "$s" > "$work/$name.tap" 2>&1
        echo $? > "$work/$name.status"
        seconds_since "$t0" > "$work/$name.time"
    done
}
if [ "${#gpu_suites[@]}" -gt 0 ]; then
    # the GPU lane: first, its TAP straight to stdout; then whatever the queue still holds
    # (with TEST_TIMING=1, tests/setup_suite.bash leaves its set-up's seconds in TEST_TIMING_DIR)
    timing_dir=""
    [ "$timing" = 0 ] || { timing_dir=$work/timing; mkdir -p "$timing_dir"; }
    { t0=$EPOCHREALTIME
      TEST_TIMING_DIR=$timing_dir bats "${bats_flags[@]}" "${gpu_suites[@]}"
      echo $? > "$work/gpu.status"
      seconds_since "$t0" > "$work/gpu.time"; lane; } &
    jobs=$((jobs - 1))
fi
[ "$jobs" -le "${#queue[@]}" ] || jobs=${#queue[@]}   # no more lanes than suites
for _ in $(seq "$jobs"); do lane & done
wait
rc=0
[ "${#gpu_suites[@]}" -eq 0 ] || [ "$(cat "$work/gpu.status" 2>/dev/null)" = 0 ] || rc=1
for s in "${lane_suites[@]}"; do   # (in the suites' order, as tests/*.bats lists them)
    name=$(basename "$s" .bats)
    cat "$work/$name.tap"
    [ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ] || rc=1
done
if [ "$timing" = 1 ]; then
    if [ "${#gpu_suites[@]}" -gt 0 ]; then
        echo "time: GPU lane $(cat "$work/gpu.time") s (${#gpu_suites[@]} suites)" >&2
        # tests/setup_suite.bash's lean runs ahead of the first test, and each of its lists
        [ ! -s "$work/timing/setup" ] || echo "time: GPU lane set-up $(cat "$work/timing/setup")" >&2
        [ ! -s "$work/timing/setup.lists" ] || sort -rn "$work/timing/setup.lists" | sed 's/^/time:   list /' >&2
    fi
    for s in "${lane_suites[@]}"; do
        name=$(basename "$s" .bats)
        echo "time: $name $(cat "$work/$name.time" 2>/dev/null || echo -) s" >&2
    done
    echo "time: all $(seconds_since "$start") s" >&2
fi
exit "$rc"
