#!/usr/bin/env bash
# Probe (GPU machine, repository root, after `make 02_inplace 07_hopper`): the metric names of
# common/metrics.h on this device, and the timeline pass on two stages.
#  1. builds tests/probes/pm_metrics.c with the Makefile's include and library flags, runs it:
#     "chip ...", "range base metric: ..." / "pm base metric: ..." (names with stall or
#     pipe_tensor), "... refuses: NAME" for each table row the device refuses, and
#     "<set>: N metrics accepted, P pass(es)" for the core, stall, core+stall and timeline sets;
#  2. runs 07_hopper and 02_inplace at the blog's shape and prints their timeline:, stalls: and
#     Timeline: lines, any "timeline:"/"counters:" note on stderr, and the trace's counter events
#     per track and the timeline field.
set -u
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
LIB=$CUDA_HOME/lib64; [ -d "$LIB" ] || LIB=$CUDA_HOME/lib
out=$(mktemp -d)
gcc -std=c11 -O1 -Icommon/c_shim -Icommon -I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" \
    tests/probes/pm_metrics.c common/metrics.c -o "$out/pm_metrics" -L"$LIB" \
    -Wl,--disable-new-dtags,-rpath,"$LIB" -lcupti -lcudart -ldl || { echo "probe: build failed"; exit 1; }
echo "== metric names and passes"
timeout 30 "$out/pm_metrics"
for stage in 07_hopper 02_inplace; do
    [ -x "$stage/run" ] || { echo "== $stage: not built"; continue; }
    echo "== $stage"
    start=$(date +%s.%N)
    timeout 60 "./$stage/run" --trace "$out/$stage.json" >"$out/$stage.out" 2>"$out/$stage.err"
    echo "exit $? wall $(python3 -c "import time; print('%.2f s' % (time.time() - $start))")"
    grep -E '^  [^ ]|^    (counters|stalls|timeline):|^Timeline:' "$out/$stage.out" | cut -c1-400
    grep -E 'timeline|counters' "$out/$stage.err"
    tail -n 1 "$out/$stage.out"
    python3 - "$out/$stage.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
print("counter events per track:", dict(collections.Counter(e["name"] for e in ev if e.get("ph") == "C")))
print("timeline field:", d.get("timeline"))
k = [e for e in ev if e.get("cat") == "kernel" and e["args"].get("step") == -2]
c = [e for e in ev if e.get("ph") == "C" and e["name"] == "tensor pipe %"]
for x in k:
    t0, t1 = float(x["ts"]), float(x["ts"]) + float(x["dur"])
    busy = [float(e["ts"]) for e in c if list(e["args"].values())[0] > 1.0]
    inside = sum(1 for t in busy if t0 - 1.0 <= t <= t1)
    print("timeline kernel %.40s: dur %.1f us, tensor>1%% samples %d, inside [ts-1us, end] %d"
          % (x["name"], t1 - t0, len(busy), inside))
r = sum(e.get("cat") == "cuda_profiler_range" for e in ev)
l = sum(e.get("cat") == "cuda_runtime" and e["name"].startswith("cudaLaunchKernel") for e in ev)
print("HTA pairing: cuda_profiler_range %d, cudaLaunchKernel* %d" % (r, l))
PY
done
rm -rf "$out"
