#!/usr/bin/env bats
# GPU: the timeline pass at the blog's shape (8x16x1024x64). One run per stage (setup_file),
# several assertions on it: samples inside 07's kernel, mean tensor pipe over 07's kernel and
# over 02's softmax, mean DRAM over 02's masked_fill, gpu_us with and without the pass, and the
# trace's counter tracks under the pass's kernels (clock alignment).
load helpers

setup_file() {
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        local d="$BATS_FILE_TMPDIR"
        for s in 07_hopper 02_inplace; do
            "$ROOT/$s/run" --trace "$d/$s.json" >"$d/$s.out" 2>"$d/$s.err" || true
        done
        "$ROOT/07_hopper/run" --quiet --no-timeline --trace none >"$d/07_none.out" 2>&1 || true
    fi
}

setup() {
    require_gpu
    D="$BATS_FILE_TMPDIR"
}

# kernel_stat TRACE PATTERN TRACK: "<samples> <mean>" of the counter track over the timeline
# pass's first kernel whose name matches PATTERN (samples whose window midpoint lies inside).
kernel_stat() {
    python3 - "$@" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1])); ev = d["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel" and e["args"].get("step") == -2
     and re.search(sys.argv[2], e["name"])][0]
t0, t1 = float(k["ts"]), float(k["ts"]) + float(k["dur"])
half = d["timeline"]["interval_ns"] / 2000.0
v = [list(e["args"].values())[0] for e in ev if e.get("ph") == "C" and e["name"] == sys.argv[3]
     and t0 <= float(e["ts"]) + half < t1]
print(len(v), sum(v) / len(v) if v else float("nan"))
PY
}

@test "timeline 07: exit 0, a timeline line under the kernel, no unavailable note" {
    [ "$(tail -n 1 "$D/07_hopper.out" | grep -c 'check=PASS')" -eq 1 ]
    grep -qE '^    timeline: tensor pipe \|.{40}\| mean [0-9.]+%, DRAM \|.{40}\| mean [0-9.]+% \([0-9]+ samples, every 500 ns\)$' "$D/07_hopper.out"
    [ "$(grep -c 'timeline: unavailable' "$D/07_hopper.err")" -eq 0 ]
}

@test "timeline 07: at least 50 samples inside the kernel, mean tensor pipe >= 20%" {
    read -r n mean < <(kernel_stat "$D/07_hopper.json" 'flash3' 'tensor pipe %')
    echo "samples=$n mean=$mean"
    at_most 50 "$n"
    at_most 20 "$mean"
}

@test "timeline 07: clocks aligned: every sample with tensor pipe > 1% lies inside the kernel (one interval of slack)" {
    run python3 - "$D/07_hopper.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); ev = d["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel" and e["args"].get("step") == -2][0]
t0, t1 = float(k["ts"]), float(k["ts"]) + float(k["dur"])
slack = d["timeline"]["interval_ns"] / 1000.0
busy = [float(e["ts"]) for e in ev if e.get("ph") == "C" and e["name"] == "tensor pipe %"
        and list(e["args"].values())[0] > 1.0]
out = [t for t in busy if not (t0 - slack <= t <= t1)]
print(len(busy), len(out), d["timeline"]["measured_clock_offset_ns"])
PY
    echo "$output"
    [ "$(echo "$output" | cut -d' ' -f2)" -eq 0 ]
    at_most 50 "$(echo "$output" | cut -d' ' -f1)"
}

@test "timeline 02: mean tensor pipe <= 2% over the softmax, mean DRAM >= 40% over masked_fill" {
    read -r n mean < <(kernel_stat "$D/02_inplace.json" 'softmax' 'tensor pipe %')
    echo "softmax samples=$n tensor=$mean"
    at_most 1 "$n"
    at_most "$mean" 2
    read -r n mean < <(kernel_stat "$D/02_inplace.json" 'masked_fill|fill' 'DRAM %')
    echo "masked_fill samples=$n dram=$mean"
    at_most 1 "$n"
    at_most 40 "$mean"
}

@test "timeline: HTA's pairing holds: one cuda_profiler_range per cudaLaunchKernel* event" {
    for s in 07_hopper 02_inplace; do
        run python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
print(sum(e.get('cat') == 'cuda_profiler_range' for e in ev),
      sum(e.get('cat') == 'cuda_runtime' and e['name'].startswith('cudaLaunchKernel') for e in ev))" "$D/$s.json"
        echo "$s: $output"
        [ "${output% *}" = "${output#* }" ]
    done
}

@test "timeline: the pass leaves gpu_us within noise (10%) of a run without it" {
    local with without
    with=$(tail -n 1 "$D/07_hopper.out" | tr ' ' '\n' | sed -n 's/^gpu_us=//p')
    without=$(tail -n 1 "$D/07_none.out" | tr ' ' '\n' | sed -n 's/^gpu_us=//p')
    echo "with=$with without=$without"
    at_most "$with" "1.10 * $without"
    at_most "$without" "1.10 * $with"
}

@test "timeline under ncu: 07 (timeline pass included) exits 0" {
    local ncu
    ncu=$(find_tool ncu)
    [ -n "$ncu" ] || skip "ncu (Nsight Compute) not found"
    run "$ncu" --launch-count 1 "$ROOT/07_hopper/run" --batch 1 --heads 2 --seq 256 --trace none
    [ "$status" -eq 0 ]
}
