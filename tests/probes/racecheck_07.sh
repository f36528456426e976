#!/usr/bin/env bash
# Probe (GPU machine, repo root, after `make 07_hopper`): does compute-sanitizer's racecheck
# finish on the 07_hopper rungs as shipped, and which of the tool's options or which register
# split makes it finish? Background: on the one-kernel build before the ladder, racecheck hung now
# and then on the setmaxnreg kernel. A lead: instrumentation raises the consumers' register needs
# and setmaxnreg.inc then waits for registers that never come free.
#
# Prints, first, the tool's version and its help lines about racecheck, barriers and warpgroups
# (so unknown flags are visible), then one line per try:
#   try rung=N shape=BxHxSxD build=shipped|split24/224 flags='...' rc=RC elapsed=Ss summary='...'
# rc 124/137: killed after RACECHECK_TIMEOUT seconds (a hang); summary: the tool's
# "RACECHECK SUMMARY" or "ERROR SUMMARY" line, or the program's last line.
# Each try runs under `timeout -k 5 $RACECHECK_TIMEOUT` (default 40); tries stop once
# PROBE_BUDGET seconds (default 420; a clean try takes a few seconds) have gone, the rest printed as "skipped (budget)".
# The split build: a copy of the tree in a temporary directory with the consumers' setmaxnreg
# budget lowered from 240 to 224 (128 x 24 + 256 x 224 = 60416 of 65536 registers: 5120 left
# for the tool), built there; the shipped tree is not touched.
set -u
cd "$(dirname "$0")/../.." || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
san=${SANITIZER:-$CUDA_HOME/bin/compute-sanitizer}
limit=${RACECHECK_TIMEOUT:-40}
budget=${PROBE_BUDGET:-420}
[ -x "$san" ] || san=$(command -v compute-sanitizer || true)
if [ -z "$san" ] || [ ! -x "$san" ]; then echo "probe: compute-sanitizer not found"; exit 2; fi
[ -x 07_hopper/run ] || { echo "probe: ./07_hopper/run is not built (make 07_hopper)"; exit 2; }
export ATTN_SANITIZE=1

echo "probe: $("$san" --version 2>&1 | grep -m1 -i version)"
echo "probe: help lines:"
"$san" --help 2>&1 | grep -iE 'racecheck|warpgroup|wgmma|barrier' | sed 's/^/    /'

# The split build, once (printed: its make status).
split_dir=$(mktemp -d)
trap 'rm -rf "$split_dir"' EXIT
cp -r Makefile common 07_hopper tests "$split_dir"/
rm -f "$split_dir/07_hopper/run"
sed -i 's/^#define H3_CONSUMER_REGS 240$/#define H3_CONSUMER_REGS 224/' "$split_dir/07_hopper/flash3.cuh"
grep -q '^#define H3_CONSUMER_REGS 224$' "$split_dir/07_hopper/flash3.cuh" && \
    make -C "$split_dir" -j8 07_hopper >"$split_dir/build.log" 2>&1
echo "probe: split24/224 build: rc=$? ($(grep -c 'spill' "$split_dir/build.log" 2>/dev/null) spill lines)"

start=$SECONDS
try() {   # try BUILD_DIR BUILD_NAME RUNG SHAPE FLAGS...
    local dir=$1 name=$2 rung=$3 shape=$4; shift 4
    local b h s d log rc t0 summary
    IFS=x read -r b h s d <<<"$shape"
    if [ $((SECONDS - start)) -ge "$budget" ]; then
        echo "try rung=$rung shape=$shape build=$name flags='$*' skipped (budget ${budget} s)"
        return
    fi
    log=$(mktemp)
    t0=$SECONDS
    timeout -k 5 "$limit" "$san" --tool racecheck --error-exitcode 1 "$@" \
        "$dir/07_hopper/run" --rung "$rung" --batch "$b" --heads "$h" --seq "$s" --head-dim "$d" \
        --warmup 0 --steps 1 --trace none --quiet >"$log" 2>&1
    rc=$?
    summary=$(grep -m1 -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$log" | sed 's/^========= *//')
    [ -n "$summary" ] || summary=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    echo "try rung=$rung shape=$shape build=$name flags='$*' rc=$rc elapsed=$((SECONDS - t0))s summary='$summary'"
    rm -f "$log"
}

# Passes, most telling first: the shipped kernels with make sanitize's flags; the split build;
# then the tool's own options on the shipped kernels.
each() {  # each BUILD_DIR BUILD_NAME FLAGS...: every rung at both shapes
    local shape rung
    for shape in 1x2x77x64 1x2x77x128; do
        for rung in 1 2 3 4; do
            [ "$rung:$shape" != 4:1x2x77x128 ] || continue
            try "$1" "$2" "$rung" "$shape" "${@:3}"
        done
    done
}
each . shipped --num-cuda-barriers 1024
if [ -x "$split_dir/07_hopper/run" ]; then each "$split_dir" split24/224 --num-cuda-barriers 1024; fi
each . shipped --num-cuda-barriers 1024 --check-warpgroup-mma yes
each . shipped --num-cuda-barriers 1024 --racecheck-memcheck yes
each . shipped --num-cuda-barriers 1024 --racecheck-report all --racecheck-detect-level info
echo "probe: done in $((SECONDS - start)) s"
