#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: the timeline's report side (tests/unit/timeline_tests.c): the sparkline, the
# locale test, the table's timeline lines, the trace's counter tracks, the unavailable path, the
# flags, and the metric table's shape. The synthetic timeline pass: the GEMM (50 us) and the
# softmax (30 us) of the synthetic profile once more, sampled every 500 ns on a clock 10 us
# ahead; GEMM: tensor pipe 50%, DRAM 10%; softmax: tensor 0%, DRAM 80%.
load helpers

setup_file() {
    make -s -C "$BATS_TEST_DIRNAME/.." build/common_unit
}

setup() {
    UNIT="$ROOT/build/common_unit"
}

@test "sparkline: one UTF-8 block per column, 0..100 % in eight levels" {
    run "$UNIT" sparkline utf8 8 0 12 25 37 50 62 75 100
    [ "$status" -eq 0 ]
    [ "$output" = "|▁▁▃▃▅▅▇█| samples=8" ]
}

@test "sparkline: the ASCII fallback has the same levels" {
    run "$UNIT" sparkline ascii 8 0 12 25 37 50 62 75 100
    [ "$output" = "|..--++#@| samples=8" ]
}

@test "sparkline: the width is fixed whatever the sample count" {
    run "$UNIT" sparkline ascii 10 100 50
    [ "$output" = "|@@@@@+++++| samples=2" ]
    run "$UNIT" sparkline ascii 3 0 0 0 0 0 0 0 0 0 100 100 100
    [ "$output" = "|..#| samples=12" ]
}

@test "sparkline: empty input is blank columns and 0 samples; NaN reads ?" {
    run "$UNIT" sparkline utf8 4
    [ "$output" = "|    | samples=0" ]
    run "$UNIT" sparkline utf8 4 nan nan 50 50
    [ "$output" = "|??▅▅| samples=4" ]
}

@test "locale: UTF-8 from LC_ALL, else LC_CTYPE, else LANG; C means ASCII" {
    run env LC_ALL=C LANG=en_US.UTF-8 "$UNIT" locale-utf8
    [ "$output" = "utf8=0" ]
    run env -u LC_ALL -u LC_CTYPE LANG=en_US.UTF-8 "$UNIT" locale-utf8
    [ "$output" = "utf8=1" ]
    run env -u LC_ALL LC_CTYPE=C.utf8 LANG=C "$UNIT" locale-utf8
    [ "$output" = "utf8=1" ]
    run env -u LC_ALL -u LC_CTYPE -u LANG "$UNIT" locale-utf8
    [ "$output" = "utf8=0" ]
}

@test "timeline table: a timeline line under each kernel, means and sample counts over its interval" {
    run env LC_ALL=C "$UNIT" timeline-table on
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF '    timeline: tensor pipe |++++++++++++++++++++++++++++++++++++++++| mean 50.0%, DRAM |........................................| mean 10.0% (100 samples, every 500 ns)'
    printf '%s\n' "$output" | grep -qxF '    timeline: tensor pipe |........................................| mean 0.0%, DRAM |########################################| mean 80.0% (60 samples, every 500 ns)'
    [ "$(printf '%s\n' "$output" | grep -c '^    timeline: ')" -eq 2 ]
}

@test "timeline alignment: the 10 us clock offset is measured and removed; idle samples outside dropped" {
    run "$UNIT" timeline-table on
    printf '%s\n' "$output" | grep -qxF 'offset measured=-10000 applied=-10000 kept=182 dropped=18 gemm_samples=100 gemm_tensor=50.0'
    printf '%s\n' "$output" | grep -qE '^Timeline: one more forward under CUPTI PM sampling \(GPU-wide, every 500 ns\).*182 samples over its kernels.*clocks shifted \(measured offset -10000 ns\)$'
}

@test "timeline unavailable: one reason line, every timeline line reads -, counters unchanged" {
    run "$UNIT" timeline-table unavailable
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -cxF '    timeline: -')" -eq 2 ]
    printf '%s\n' "$output" | grep -qxF 'Timeline: - (cuptiPmSamplingEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)'
    run "$UNIT" timeline-table disabled
    printf '%s\n' "$output" | grep -qxF 'Timeline: - (--no-timeline)'
}

@test "timeline trace: valid JSON, one counter track per metric, ordered timestamps, values 0-100" {
    "$UNIT" timeline-trace "$BATS_TEST_TMPDIR/t.json" on
    run python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = [e for e in d["traceEvents"] if e.get("ph") == "C"]
tracks = {}
for e in c:
    tracks.setdefault(e["name"], []).append(e)
for name in sorted(tracks):
    ev = tracks[name]
    ts = [float(e["ts"]) for e in ev]
    vals = [v for e in ev for v in e["args"].values()]
    print(name, len(ev), "ordered" if ts == sorted(ts) else "UNORDERED",
          "in0-100" if all(0 <= v <= 100 for v in vals) else "OUT", "pid", ev[0]["pid"])
print("timeline", d["timeline"]["samples"], d["timeline"]["applied_clock_offset_ns"])
PY
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "DRAM % 182 ordered in0-100 pid 0" ]
    [ "${lines[1]}" = "DRAM read % 182 ordered in0-100 pid 0" ]
    [ "${lines[2]}" = "DRAM write % 182 ordered in0-100 pid 0" ]
    [ "${lines[3]}" = "tensor pipe % 182 ordered in0-100 pid 0" ]
    [ "${lines[4]}" = "warps active % 182 ordered in0-100 pid 0" ]
    [ "${lines[5]}" = "timeline 182 -10000" ]
}

@test "timeline trace: the pass's kernels sit in a gpu_user_annotation 'timeline pass' span" {
    "$UNIT" timeline-trace "$BATS_TEST_TMPDIR/t.json" on
    run python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
span = [e for e in ev if e.get("cat") == "gpu_user_annotation" and e["name"] == "timeline pass"]
k = [e for e in ev if e.get("cat") == "kernel" and e["args"].get("step") == -2]
s = span[0]
inside = sum(1 for e in k if float(e["ts"]) >= float(s["ts"]) and
             float(e["ts"]) + float(e["dur"]) <= float(s["ts"]) + float(s["dur"]))
print(len(span), len(k), inside)
PY
    [ "$output" = "1 2 2" ]
}

@test "timeline trace unavailable: no counter events, no timeline field" {
    "$UNIT" timeline-trace "$BATS_TEST_TMPDIR/u.json" unavailable
    run python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(e.get('ph')=='C' for e in d['traceEvents']), 'timeline' in d)" "$BATS_TEST_TMPDIR/u.json"
    [ "$output" = "0 False" ]
}

@test "HTA pairing: one cuda_profiler_range per cudaLaunchKernel* event in the trace" {
    "$UNIT" kineto-trace "$BATS_TEST_TMPDIR/t.json" on
    run python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
r = sum(e.get('cat') == 'cuda_profiler_range' for e in ev)
l = sum(e.get('cat') == 'cuda_runtime' and e['name'].startswith('cudaLaunchKernel') for e in ev)
print(r, l)" "$BATS_TEST_TMPDIR/t.json"
    [ "$output" = "4 4" ]
}

@test "metric table: every percentage and ratio averages over launches, every byte and count sums" {
    run "$UNIT" metric-rows
    [ "$output" = "rows=33 range=9 stall=19 pm=5 wrong_aggregation=0" ]
}

@test "flags: --timeline-interval takes 100 to 1000000 ns, --no-timeline no value (exit 2, one line)" {
    run "$UNIT" cli --timeline-interval 50
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "--timeline-interval"* ]]
    run "$UNIT" cli --timeline-interval 1000001
    [ "$status" -eq 2 ]
    run "$UNIT" cli --timeline-interval abc
    [ "$status" -eq 2 ]
    run "$UNIT" cli --no-timeline=1
    [ "$status" -eq 2 ]
    [ "$output" = "--no-timeline takes no value (got '--no-timeline=1')" ]
    run "$UNIT" cli --no-timeline --timeline-interval 1000
    [ "$status" -eq 0 ]
    [[ "$output" == *" no_timeline=1 timeline_interval=1000 "* ]]
}
