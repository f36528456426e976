#!/usr/bin/env bash
# need_gpu.sh: exits 0, printing nothing, where a CUDA device can run the stages; else prints why
# on one line (stdout) and exits 2. make compare and make sanitize call it before running
# anything (bench/compare.py and tests/sanitize.sh too, when run by hand).
#
# nvidia-smi listing a GPU is enough. Otherwise the reason is the stages' own (common/run.c: no
# driver at all, the toolkit's stub driver, a driver too old for the build, a driver that finds no
# GPU): the built ./NN_x/run are run at the smallest shape until one decides; with no usable device
# a run stops at its device check, before any GPU work. A run that fails for another reason (bad
# input such as ATTN_SANITIZE=2, a crash) is the reason too: its own last line, with the stage
# named. Without a built stage (or none decides), nvidia-smi's answer is the reason.
cd "$(dirname "$0")/.." || exit 1
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    exit 0
fi
for run in [0-9][0-9]_*/run; do
    [ -x "$run" ] || continue
    out=$("./$run" --batch 1 --heads 1 --seq 1 --head-dim 64 --warmup 0 --steps 1 --check-rows 1 \
          --trace none --quiet --no-counters 2>&1 >/dev/null)
    rc=$?
    msg=$(printf '%s\n' "$out" | tail -n 1)
    if [ $rc -eq 2 ] && [[ "$msg" == "no CUDA device"* ]]; then
        echo "$msg"
        exit 2
    fi
    [ $rc -eq 0 ] && exit 0  # it ran: a GPU is there
    # it failed before deciding (bad input, a crash): its own line, not a guess about the device
    echo "./$run failed (exit $rc): ${msg:-no message}"
    exit 2
done
if command -v nvidia-smi >/dev/null 2>&1; then
    echo "no CUDA device: nvidia-smi lists no GPU"
else
    echo "no CUDA device: nvidia-smi not found (no NVIDIA driver installed?)"
fi
exit 2
