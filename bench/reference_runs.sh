#!/usr/bin/env bash
# reference_runs.sh: the course's reference runs, the ones docs/h200/ holds and every number
# table is rendered from. Run on the GPU machine, from anywhere:
#
#   bash bench/reference_runs.sh [--part all|stages|shapes|peers|collect] [OUTDIR]
#   bash bench/reference_runs.sh --install OUTDIR      (anywhere: OUTDIR -> docs/h200/, render)
#
# A relative OUTDIR is taken from the directory the script is called from; the default,
# build/reference, is the repository's. --install copies the run's outputs, traces, stderr files
# and results.txt into docs/h200/, removes the NN_x.txt, .json and .err files there that the run
# does not have (a stderr file of an earlier run, a rung no longer run), then renders the pages.
# OUTDIR (default build/reference) receives:
#   run.txt                the `run` line: date, GPU, driver, CUDA, nvcc, cuDNN, PyTorch versions
#   NN_x.txt, NN_x.json    every stage at the blog's shape 8x16x1024x64: the full printed output
#                          (stdout; stderr, if any, in NN_x.err) and the trace
#   07_hopper_rungN.*      the same for each rung of 07's ladder, where ./07_hopper/run has --rung,
#                          with the regions pass (--regions: the regions table and trace tracks)
#   shapes/NN_x_SHAPE.txt  every stage at the three bench shapes, --quiet (its summary line)
#   peers.md, peers.txt    python3 bench/peers.py at the three shapes (needs PyTorch)
#   compare/               bench/compare.py render of the NN_x.txt outputs
#   results.txt            python3 bench/render.py collect: the run line, the result and peers lines
# The parts can run as separate calls (each under 10 minutes on an H200), in the order above;
# `all` runs them in turn. Every trace is checked against the size the repository takes
# (TRACE_MAX_BYTES, as tests/reference_runs.bats): a larger one is named and the exit status is 1.
# Exit status: 0; 1 when a run failed or a trace is too large; 2 on bad arguments or no GPU
# (one line on stderr).
set -uo pipefail
caller=$PWD
cd "$(dirname "$0")/.." || exit 2
# abs PATH: PATH as the caller named it (relative to the caller's directory), made absolute.
abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$caller/$1" ;; esac; }
BLOG=8x16x1024x64
SHAPES="8x16x1024x64 4x16x2048x64 2x16x4096x128"
TRACE_MAX_BYTES=$((4 * 1024 * 1024))
part=all
if [ "${1:-}" = --install ]; then
    [ $# -eq 2 ] && [ -n "$2" ] || { echo "reference_runs: usage: bash bench/reference_runs.sh --install OUTDIR" >&2; exit 2; }
    src=$(abs "$2")
    [ -f "$src/results.txt" ] || { echo "reference_runs: $2/results.txt is missing (run the parts first)" >&2; exit 2; }
    mkdir -p docs/h200 || exit 1
    cp "$src"/[0-9][0-9]_*.txt "$src"/[0-9][0-9]_*.json "$src/results.txt" docs/h200/ || exit 1
    for f in "$src"/[0-9][0-9]_*.err; do
        [ -e "$f" ] || continue
        cp "$f" docs/h200/ || exit 1
    done
    # what the run does not have goes: an earlier run's stderr file, a rung no longer run
    for f in docs/h200/[0-9][0-9]_*.txt docs/h200/[0-9][0-9]_*.json docs/h200/[0-9][0-9]_*.err; do
        [ -e "$f" ] || continue
        [ -e "$src/${f##*/}" ] || rm -f "$f" || exit 1
    done
    python3 bench/render.py
    exit $?
fi
if [ "${1:-}" = --part ]; then
    part=${2:-}
    shift 2 || true
fi
case "$part" in
    all|stages|shapes|peers|collect) ;;
    *) echo "reference_runs: --part '$part': expected all, stages, shapes, peers or collect" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "reference_runs: one OUTDIR expected, got: $*" >&2; exit 2; }
if [ -n "${1:-}" ]; then out=$(abs "$1"); else out=build/reference; fi
mkdir -p "$out/shapes" || exit 2
failed=0

say() { echo "reference_runs: $*" >&2; }
dims() { local IFS=x; set -- $1; echo "--batch $1 --heads $2 --seq $3 --head-dim $4"; }

if [ "$part" != collect ]; then
    why=$(bash tests/need_gpu.sh) || { echo "reference_runs: $why" >&2; exit 2; }
    make -j all >"$out/build.log" 2>&1 || { say "make all failed: $out/build.log"; exit 1; }
fi

# one NAME [flags]: the stage's full run at the blog's shape, output and trace under OUTDIR.
one() {
    local name=$1 stage=${1%%_rung*}; shift
    say "$name ..."
    "./$stage/run" --trace "$out/$name.json" "$@" >"$out/$name.txt" 2>"$out/$name.err"
    local rc=$?
    [ -s "$out/$name.err" ] || rm -f "$out/$name.err"
    if [ $rc -ne 0 ]; then say "$name: exit $rc"; failed=1; fi
    local size; size=$(stat -c %s "$out/$name.json" 2>/dev/null || echo 0)
    say "$name: exit $rc, trace $size bytes"
    if [ "$size" -gt "$TRACE_MAX_BYTES" ]; then
        say "$name: the trace is $size bytes, over $TRACE_MAX_BYTES"; failed=1
    fi
    return $rc
}

if [ "$part" = all ] || [ "$part" = stages ]; then
    for d in [0-9][0-9]_*/; do
        one "${d%/}"
    done
    # the run line, once 06_cudnn has printed the cuDNN it loaded
    {
        printf 'run date=%s gpu="%s" driver=%s' "$(date -u +%F)" \
            "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" \
            "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
        printf ' cuda=%s' "$("${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
        printf ' cudnn=%s' "$(grep -o 'cuDNN [0-9][0-9.]*[0-9]' "$out/06_cudnn.txt" 2>/dev/null | head -n 1 | cut -d' ' -f2)"
        python3 -c 'import torch; print(" torch=%s torch_cudnn=%s" % (torch.__version__.split("+")[0], torch.backends.cudnn.version()), end="")' 2>/dev/null
        printf ' commit=%s source=bench/reference_runs.sh\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    } >"$out/run.txt"
    if ./07_hopper/run --help 2>/dev/null | grep -q -- '--rung'; then
        for n in $(seq 1 20); do
            ./07_hopper/run --rung "$n" --batch 1 --heads 1 --seq 64 --warmup 0 --steps 1 \
                --trace none --quiet --no-counters >/dev/null 2>&1
            [ $? -eq 2 ] && break          # past the last rung (or one this GPU refuses)
            one "07_hopper_rung$n" --rung "$n" --regions
        done
    else
        say "07_hopper has no --rung: the default kernel only"
    fi
    # the stages' outputs alone (not 07's rungs, whose summary lines would take 07's row)
    for f in "$out"/[0-9][0-9]_*.txt; do
        case "$f" in *_rung[0-9]*.txt) ;; *) cat "$f" ;; esac
    done >"$out/compare_summary.txt"
    python3 bench/compare.py render "$out/compare_summary.txt" "$out/compare" >"$out/compare.txt" || failed=1
fi

if [ "$part" = all ] || [ "$part" = shapes ]; then
    for shape in $SHAPES; do
        for d in [0-9][0-9]_*/; do
            stage=${d%/}
            say "$stage $shape ..."
            # shellcheck disable=SC2046
            "./$stage/run" --quiet --trace none $(dims "$shape") >"$out/shapes/${stage}_$shape.txt" 2>"$out/shapes/${stage}_$shape.err"
            rc=$?
            [ -s "$out/shapes/${stage}_$shape.err" ] || rm -f "$out/shapes/${stage}_$shape.err"
            if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then say "$stage $shape: exit $rc"; failed=1; fi
        done
    done
fi

if [ "$part" = all ] || [ "$part" = peers ]; then
    say "peers ..."
    python3 bench/peers.py --out "$out/peers.md" >"$out/peers.txt" 2>&1 || { say "peers.py failed: $out/peers.txt"; failed=1; }
fi

if [ "$part" = all ] || [ "$part" = collect ]; then
    python3 bench/render.py collect "$out" || failed=1
    say "next, on any machine: bash bench/reference_runs.sh --install $out"
fi
exit $failed
