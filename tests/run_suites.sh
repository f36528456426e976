#!/usr/bin/env bash
# tests/run_suites.sh: make test's runner. Every Bats suite under tests/, TAP on stdout (bats
# --tap), exit status 1 if a suite failed, else 0; tests/tap_summary.sh adds the closing line.
#
# Where a GPU can run the stages (tests/need_gpu.sh), one `bats --tap tests/`: the suites one
# after another, since runs with the counter pass, the timeline pass or --regions must never
# overlap (CUPTI's profiler and PM sampling are device-wide). Without one, every GPU test skips and
# the suites are independent CPU work: they run TEST_JOBS at a time (default: the CPU count, at
# most 4), the largest files first, each its own `bats --tap`; their TAP is printed when all are
# done, in the suites' order, one plan line per suite.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
jobs=${TEST_JOBS:-}
if [ -z "$jobs" ]; then
    jobs=$(nproc 2>/dev/null || echo 1)
    [ "$jobs" -le 4 ] || jobs=4
elif ! [[ "$jobs" =~ ^[1-9][0-9]{0,3}$ ]] || [ "$jobs" -gt 1024 ]; then
    echo "TEST_JOBS=$jobs: expected a whole number from 1 to 1024" >&2
    exit 2
fi
if [ -z "$(bash tests/need_gpu.sh 2>/dev/null)" ]; then
    exec bats --tap tests/
fi
suites=(tests/*.bats)
[ "$jobs" -le "${#suites[@]}" ] || jobs=${#suites[@]}   # no more lanes than suites
work=$(mktemp -d "${TMPDIR:-/tmp}/run_suites.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# The queue: the suites by size, largest first; a lane takes the next one nobody has taken
# (mkdir is atomic: the lane that makes claims/NAME runs NAME).
mapfile -t queue < <(ls -S "${suites[@]}")
mkdir "$work/claims"
lane() {
    local s name
    for s in "${queue[@]}"; do
        name=$(basename "$s" .bats)
        mkdir "$work/claims/$name" 2>/dev/null || continue
        bats --tap "$s" > "$work/$name.tap" 2>&1
        echo $? > "$work/$name.status"
    done
}
for _ in $(seq "$jobs"); do lane & done
wait
rc=0
for s in "${suites[@]}"; do
    name=$(basename "$s" .bats)
    cat "$work/$name.tap"
    [ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ] || rc=1
done
exit "$rc"
