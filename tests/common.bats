#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only unit tests of common/ (no GPU needed): occupancy, the profiler's record join, the table
# format, the trace. They drive build/common_unit (tests/unit/*.c); expected values are derived in
# the comments. Then the stages' CLI and device checks, the build's and the tools' bad input, all
# of which stop before the device (a stage started here says why on its line: "# no context:"),
# or run with a stand-in driver, or skip where a GPU is present. The tests that go on to a real
# device are in tests/cli_gpu.bats (the GPU lane), those of tests/sanitize.sh in
# tests/sanitize_cpu.bats.

load helpers

setup_file() { build_unit; }

# ---- occupancy (H200 properties: unit_h200_props, tests/unit/profiler_tests.c) ---------------

@test "occupancy: FlashAttention-2 d=64 (255 regs x 128 threads, 48 KiB) -> 2 blocks/SM, 12.5%, registers" {
    # 255 regs -> 256 per thread x 32 = 8192 per warp; 65536 / 8192 = 8 warps/SM = 2 blocks of 4.
    run "$UNIT" occupancy 255 128 0 49152 0 2048
    [ "$status" -eq 0 ]
    [ "$output" = "blocks_per_sm=2 warps_per_sm=8 occupancy=12.50 limiter=registers optin=0 est_pct=13 kineto_blocks=2 kineto_pct=13" ]
}

@test "occupancy: the zeroed cudaOccDeviceState pitfall gives 1 block; we give 2" {
    run "$UNIT" occupancy-zeroed 255 128 0 49152 0
    [ "$status" -eq 0 ]
    [ "$output" = "blocks_per_sm=1" ]
    run "$UNIT" occupancy 255 128 0 49152 0 2048
    [[ "$output" == "blocks_per_sm=2 "* ]]
}

@test "occupancy: cuDNN SDPA (168 regs x 384 threads, 134144 B opt-in) -> 1 block, 18.75%; Kineto 0%" {
    run "$UNIT" occupancy 168 384 0 134144 1 132
    [ "$status" -eq 0 ]
    [ "$output" = "blocks_per_sm=1 warps_per_sm=12 occupancy=18.75 limiter=registers + shared memory optin=1 est_pct=19 kineto_blocks=0 kineto_pct=0" ]
}

@test "occupancy: more than 48 KiB per block counts as opt-in even if the record says default" {
    run "$UNIT" occupancy 168 384 0 134144 0 132
    [ "$status" -eq 0 ]
    [[ "$output" == "blocks_per_sm=1 warps_per_sm=12 occupancy=18.75 "*"optin=1 "*"kineto_pct=0" ]]
}

@test "occupancy: FlashAttention-2 d=128 (64 KiB opt-in) -> 2 blocks, registers; Kineto 0%" {
    # shared memory alone would allow 233472 / (65536 + 1024) = 3 blocks; registers allow 2.
    run "$UNIT" occupancy 255 128 0 65536 1 1024
    [ "$output" = "blocks_per_sm=2 warps_per_sm=8 occupancy=12.50 limiter=registers optin=1 est_pct=13 kineto_blocks=0 kineto_pct=0" ]
}

@test "occupancy: bad arguments exit 2" {
    run "$UNIT" occupancy 255 128
    [ "$status" -eq 2 ]
    run "$UNIT" no-such-subcommand
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown subcommand no-such-subcommand"* ]]
}

@test "unit: bad arguments of any subcommand exit 2 with a message, never a crash or 0" {
    run "$UNIT" occupancy-zeroed 0 0 0 0 0          # 0 threads per block
    [ "$status" -eq 2 ]
    [[ "$output" == *"out of range"* ]]
    run "$UNIT" occupancy 256 128 0 0 0 1           # more than 255 registers
    [ "$status" -eq 2 ]
    run "$UNIT" occupancy 32 128 0 0 2 1            # opt-in is 0 or 1
    [ "$status" -eq 2 ]
    run "$UNIT" pick-rows 1 1 10 -1                 # was heap corruption
    [ "$status" -eq 2 ]
    [[ "$output" == *"'-1' is not an integer from 1 to"* ]]
    run "$UNIT" pick-rows 0 1 10 4
    [ "$status" -eq 2 ]
    run "$UNIT" pick-rows 1 1 10
    [ "$status" -eq 2 ]
    run "$UNIT" format-time 12us
    [ "$status" -eq 2 ]
    run "$UNIT" format-share 1
    [ "$status" -eq 2 ]
    run "$UNIT" generator-first -1
    [ "$status" -eq 2 ]
    run "$UNIT" join extra
    [ "$status" -eq 2 ]
    [[ "$output" == *"join: takes no arguments"* ]]
    run "$UNIT" trace
    [ "$status" -eq 2 ]
}

# ---- table formatting (torch/autograd/profiler_util.py) -------------------------------------

@test "table: times formatted as torch's _format_time" {
    run "$UNIT" format-time 0.875 1073 3600 1500000 999.9996 0 1234567.8
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "0.875us" ]
    [ "${lines[1]}" = "1.073ms" ]
    [ "${lines[2]}" = "3.600ms" ]
    [ "${lines[3]}" = "1.500s" ]
    [ "${lines[4]}" = "1000.000us" ]   # torch picks the unit before rounding
    [ "${lines[5]}" = "0.000us" ]
    [ "${lines[6]}" = "1.235s" ]
}

@test "table: percentages as torch's _format_time_share, NaN for a zero total" {
    run "$UNIT" format-share 150 272.625
    [ "$output" = "55.02%" ]
    run "$UNIT" format-share 302.625 272.625
    [ "$output" = "111.00%" ]
    run "$UNIT" format-share 0 0
    [ "$output" = "NaN" ]
}

@test "table: names of 52 characters or more are cut to 52 + ..." {
    n51=$(printf 'a%.0s' $(seq 51))
    n52=$(printf 'b%.0s' $(seq 52))
    run "$UNIT" truncate "$n51"
    [ "$output" = "$n51" ]
    run "$UNIT" truncate "$n52"
    [ "$output" = "${n52}..." ]
    run "$UNIT" truncate "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"
    [ "$output" = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wg..." ]
}

# ---- the profiler's join (prof_finish on synthetic CUPTI records) ---------------------------

@test "join: steps, host ranges and launch APIs come from external correlation" {
    run --separate-stderr "$UNIT" join
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "active_steps=1 acts=3 apis=3 ranges=3" ]
    # mangled kernel names are demangled (CUPTI gives _Z4gemmPfi)
    [ "${lines[1]}" = "act kind=0 step=1 range=1 corr=11 launch=cudaLaunchKernel name=gemm(float*, int)" ]
    # cudart's own cuMemcpyDtoDAsync (corr 13, inside cudaMemcpyAsync) folds into the runtime call
    [ "${lines[2]}" = "act kind=1 step=1 range=1 corr=12 launch=cudaMemcpyAsync name=Memcpy DtoD (Device -> Device)" ]
    [ "${lines[3]}" = "act kind=0 step=1 range=2 corr=14 launch=cuLaunchKernelEx name=softmax_kernel" ]
    [ "${lines[4]}" = "api cudaLaunchKernel driver=0 step=1 range=1 corr=11 tid=4242" ]
    [ "${lines[5]}" = "api cudaMemcpyAsync driver=0 step=1 range=1 corr=12 tid=4242" ]
    [ "${lines[6]}" = "api cuLaunchKernelEx driver=1 step=1 range=2 corr=14 tid=4242" ]
    [ "${lines[7]}" = "range attn_fwd step=1 depth=0 parent=-1 dur_ns=100000" ]
    [ "${lines[8]}" = "range matmul step=1 depth=1 parent=0 dur_ns=19000" ]
    # a range left open is closed at prof_finish's time
    [ "${lines[9]}" = "range softmax step=1 depth=1 parent=0 dur_ns=90000" ]
    [ "${lines[10]}" = "count step=1 kernels=2 memcpys=1 memsets=0" ]
    # the inactive step's kernel is dropped silently; the untraced launch is reported
    [ "$stderr" = "profiler: warning: 1 GPU activities were launched by API calls the profiler does not trace; they are left out of the table and trace" ]
}

# ---- the table of a synthetic profile (tests/unit/profiler_tests.c: synthetic_profile) ------

@test "table: header line over the table" {
    run "$UNIT" table
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "stage 01_naive: cuBLAS GEMMs with the scores S in memory" ]
    [ "${lines[1]}" = "device NVIDIA H200 (132 SMs, sm_90) | shape 8x16x1024x64 (batch x heads x seq x head_dim), bf16, causal | 3 profiled steps, times summed over them" ]
}

@test "table: torch's layout, rows, # of Calls and totals of a 3-step profile" {
    "$UNIT" table > "$BATS_TEST_TMPDIR/table.txt"
    # Per step: attn_fwd 400 us with matmul, masked_fill, softmax 20 us each; their launch calls
    # 5, 4, 8 + 2 us; GPU: gemm 50 us, memcpy 10 us, softmax 30 us, memset 0.875 us, spanning
    # 100.875 us. Self CPU total = 3 x 400 us; Self CUDA total = 3 x 90.875 us.
    python3 - "$BATS_TEST_TMPDIR/table.txt" <<'EOF'
import sys
text = open(sys.argv[1]).read().split("\n")
W = 55
fmt = "{: >%d}  " % W + "{: >12}  " * 10
sep = "-" * W + "  " + ("-" * 12 + "  ") * 10
head = fmt.format("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                  "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls")
rows = [
 ("attn_fwd", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "302.625us", "111.00%", "302.625us", "100.875us", 3),
 ("attn_fwd", "85.00%", "1.020ms", "100.00%", "1.200ms", "400.000us", "0.000us", "0.00%", "272.625us", "90.875us", 3),
 ("matmul", "3.75%", "45.000us", "5.00%", "60.000us", "20.000us", "150.000us", "55.02%", "150.000us", "50.000us", 3),
 ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "150.000us", "55.02%", "150.000us", "50.000us", 3),
 ("softmax", "2.50%", "30.000us", "5.00%", "60.000us", "20.000us", "92.625us", "33.98%", "92.625us", "30.875us", 3),
 ("void (anonymous namespace)::softmax_warp_forward<flo...", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "90.000us", "33.01%", "90.000us", "30.000us", 3),
 ("masked_fill", "4.00%", "48.000us", "5.00%", "60.000us", "20.000us", "30.000us", "11.00%", "30.000us", "10.000us", 3),
 ("Memcpy DtoD (Device -> Device)", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "30.000us", "11.00%", "30.000us", "10.000us", 3),
 ("Memset (Device)", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "2.625us", "0.96%", "2.625us", "0.875us", 3),
 ("cudaLaunchKernel", "1.25%", "15.000us", "1.25%", "15.000us", "5.000us", "0.000us", "0.00%", "0.000us", "0.000us", 3),
 ("cudaMemcpyAsync", "1.00%", "12.000us", "1.00%", "12.000us", "4.000us", "0.000us", "0.00%", "0.000us", "0.000us", 3),
 ("cuLaunchKernelEx", "2.00%", "24.000us", "2.00%", "24.000us", "8.000us", "0.000us", "0.00%", "0.000us", "0.000us", 3),
 ("cudaMemsetAsync", "0.50%", "6.000us", "0.50%", "6.000us", "2.000us", "0.000us", "0.00%", "0.000us", "0.000us", 3),
]
want = [sep, head, sep] + [fmt.format(*r) for r in rows] + [sep,
        "Self CPU time total: 1.200ms", "Self CUDA time total: 272.625us"]
start = text.index(sep)
got = text[start:start + len(want)]
for i, (g, w) in enumerate(zip(got, want)):
    if g != w:
        sys.exit("line %d differs:\n got: %r\nwant: %r" % (i, g, w))
if len(got) != len(want):
    sys.exit("table has %d lines, want %d" % (len(got), len(want)))
EOF
}

@test "table: kernel details name grid, block, registers, shared memory, occupancy, limiter, launch API" {
    run "$UNIT" table
    [[ "$output" == *"Kernel details"* ]]
    [[ "$output" == *"  nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT: grid [128, 16, 1], block [128, 1, 1], 255 registers/thread, shared memory 0 + 49152 B, 2 blocks/SM (8 warps), occupancy 12.50%, limited by registers, launch cudaLaunchKernel"* ]]
    # the full name here: only the table's rows are cut at 52 characters + ...
    [[ "$output" == *"  void (anonymous namespace)::softmax_warp_forward<float>(float*, float const*, int): grid [132, 1, 1], block [384, 1, 1], 168 registers/thread, shared memory 0 + 134144 B (opt-in), 1 block/SM (12 warps), occupancy 18.75%, limited by registers + shared memory, Kineto: 0%, launch cuLaunchKernelEx"* ]]
    [[ "$(printf '%s\n' "$output" | sed -n '/^Kernel details/,$p')" != *"..."* ]]
    # the set-up step's kernel is in the trace only
    [[ "$output" != *"void f<"* ]]
}

# ---- the trace of the same profile ----------------------------------------------------------

@test "trace: valid JSON in Kineto's layout, parent directories created, no temporary file left" {
    path="$BATS_TEST_TMPDIR/traces/01_naive/8_16_1024_64.json"
    run "$UNIT" trace "$path"
    [ "$status" -eq 0 ]
    py_stdlib -m json.tool "$path" > /dev/null
    trace_query "$path" valid
    [ -z "$(ls "$BATS_TEST_TMPDIR/traces/01_naive" | grep -v '^8_16_1024_64.json$')" ]
    py_stdlib - "$path" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schemaVersion"] == 1 and d["displayTimeUnit"] == "ms", d.keys()
assert d["baseTimeNanoseconds"] == 1700000000000000000
p = d["deviceProperties"][0]
assert (p["name"], p["numSms"], p["sharedMemPerBlockOptin"]) == ("NVIDIA H200", 132, 232448)
ev = d["traceEvents"]
names = {(e["name"], e["args"].get("name", e["args"].get("labels"))) for e in ev if e["ph"] == "M"}
assert ("process_labels", "GPU 0") in names and ("thread_name", "stream 7") in names, names
# ts in us with 3 decimals relative to the base: the set-up range starts at T0 = ...123456789 ns
r = [e for e in ev if e["ph"] == "X" and e["cat"] == "cpu_op"][0]
assert r["ts"] == 123456.789 and r["dur"] == 200.0, r
# attn_fwd on the GPU lane spans its step's activities (100.875 us), widened 1 ns each side
g = [e for e in ev if e.get("cat") == "gpu_user_annotation"]
assert [e["dur"] for e in g] == [100.877] * 3, g
EOF
}

@test "trace: kernels, flows and counts by category" {
    path="$BATS_TEST_TMPDIR/t.json"
    "$UNIT" trace "$path"
    [ "$(trace_query "$path" count kernel)" = 7 ]          # 1 set-up + 2 per step
    [ "$(trace_query "$path" count gpu_memcpy)" = 3 ]
    [ "$(trace_query "$path" count gpu_memset)" = 3 ]
    [ "$(trace_query "$path" count gpu_user_annotation)" = 3 ]
    [ "$(trace_query "$path" count user_annotation)" = 3 ]
    [ "$(trace_query "$path" count cpu_op)" = 10 ]         # set-up range + 3 ops x 3 steps
    [ "$(trace_query "$path" count cuda_runtime)" = 10 ]
    [ "$(trace_query "$path" count cuda_driver)" = 3 ]
    [ "$(trace_query "$path" flows)" = 13 ]                # one per call that reached the GPU
    [ "$(trace_query "$path" ranges attn_fwd)" = 3 ]
    run trace_query "$path" kernels
    [ "${lines[1]}" = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT" ]
    [ "${lines[2]}" = "void (anonymous namespace)::softmax_warp_forward<float>(float*, float const*, int)" ]
    [ "$(trace_query "$path" launch-apis | grep -cx cudaLaunchKernel)" = 4 ]
    [ "$(trace_query "$path" launch-apis | grep -cx cuLaunchKernelEx)" = 3 ]
    # est. achieved occupancy % with the kernels' own shared-memory config: set-up kernel 25,
    # gemm 13, softmax (opt-in) 19 where Kineto prints 0
    run trace_query "$path" occupancy
    [ "$(echo ${lines[@]})" = "25 13 19 13 19 13 19" ]
    py_stdlib - "$path" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
s = {e["id"] for e in ev if e["ph"] == "s"}
f = [e for e in ev if e["ph"] == "f"]
assert len(f) == 13 and {e["id"] for e in f} == s and all(e["bp"] == "e" for e in f), f
k = [e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("void (anonymous")][0]["args"]
assert (k["grid"], k["block"], k["registers per thread"], k["shared memory"]) == ([132, 1, 1], [384, 1, 1], 168, 134144)
assert (k["blocks per SM"], k["warps per SM"], k["est. achieved occupancy %"]) == (1.0, 12.0, 19)
assert (k["occupancy limiter"], k["launch api"], k["kineto est. achieved occupancy %"]) == ("registers + shared memory", "cuLaunchKernelEx", 0)
m = [e for e in ev if e.get("cat") == "gpu_memcpy"][0]["args"]
assert m["bytes"] == 268435456 and abs(m["memory bandwidth (GB/s)"] - 26843.5456) < 1e-3, m
EOF
}

@test "trace: names with quotes, backslashes and control characters round-trip through json.load" {
    path="$BATS_TEST_TMPDIR/names.json"
    "$UNIT" trace "$path"
    py_stdlib - "$path" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e["name"] for e in ev if e.get("cat") == "kernel"]
want = 'void f<(anon)::T, 3>(char const*, "q\\"x")\\path'
assert kernels[0] == want, (kernels[0], want)
ranges = [e["name"] for e in ev if e.get("cat") == "cpu_op"]
assert ranges[0] == "build_plan\t(set-up)\x01", repr(ranges[0])
EOF
}

@test "trace: an unwritable path exits 2 with one line and leaves no file" {
    touch "$BATS_TEST_TMPDIR/plainfile"
    run "$UNIT" trace "$BATS_TEST_TMPDIR/plainfile/t.json"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "--trace $BATS_TEST_TMPDIR/plainfile/t.json: cannot "* ]]
    mkdir "$BATS_TEST_TMPDIR/ro"
    chmod 555 "$BATS_TEST_TMPDIR/ro"
    if [ "$(id -u)" != 0 ]; then   # root writes anywhere
        run "$UNIT" trace "$BATS_TEST_TMPDIR/ro/t.json"
        [ "$status" -eq 2 ]
        [ -z "$(ls "$BATS_TEST_TMPDIR/ro")" ]
    fi
}

@test "trace: /dev/null means no trace: nothing written, /dev/null stays a device" {
    run "$UNIT" trace /dev/null
    [ "$status" -eq 0 ]
    [ -c /dev/null ]
    [ "$("$UNIT" trace-check /dev/null)" = none ]
    [ "$("$UNIT" trace-check none)" = none ]
    ln -s /dev/null "$BATS_TEST_TMPDIR/null-link"   # a link to /dev/null is /dev/null too
    [ "$("$UNIT" trace-check "$BATS_TEST_TMPDIR/null-link")" = none ]
    [ -L "$BATS_TEST_TMPDIR/null-link" ]
    [ -c /dev/null ]
}

@test "trace: a FIFO, a symbolic link or a directory at the path is refused (exit 2, one line) and left alone" {
    W="$BATS_TEST_TMPDIR/w"   # not the temp dir itself: Bats keeps its own files there
    mkdir "$W"
    cd "$W"
    mkfifo fifo
    echo keep > target.json
    ln -s target.json link.json
    ln -s missing.json dangling.json
    mkdir dir.json
    for p in fifo link.json dangling.json dir.json; do
        for cmd in trace trace-check; do
            run --separate-stderr "$UNIT" "$cmd" "$W/$p"
            [ "$status" -eq 2 ]
            [ -z "$output" ]
            [[ "$stderr" == "--trace $W/$p: not a regular file ("*")"*"or none" ]]
            [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
        done
    done
    [ -p fifo ]
    [ -L link.json ]
    [ -L dangling.json ]
    [ -d dir.json ]
    [ "$(cat target.json)" = keep ]
    [ ! -e missing.json ]
    [[ "$("$UNIT" trace-check "$W/fifo" 2>&1)" == *"(a FIFO)"* ]]
    [[ "$("$UNIT" trace-check "$W/link.json" 2>&1)" == *"(a symbolic link)"* ]]
    [[ "$("$UNIT" trace-check "$W/dir.json" 2>&1)" == *"(a directory)"* ]]
    # no temporary file was left next to them
    [ "$(ls | sort | tr '\n' ' ')" = "dangling.json dir.json fifo link.json target.json " ]
}

@test "trace: the path check creates, tests and removes: nothing is left behind, ok or not" {
    W="$BATS_TEST_TMPDIR/w"   # not the temp dir itself: Bats keeps its own files there
    mkdir "$W"
    run "$UNIT" trace-check "$W/new/a/b/t.json"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    [ ! -e "$W/new" ]
    # an existing regular file is fine (it will be replaced), and stays as it is
    echo old > "$W/old.json"
    [ "$("$UNIT" trace-check "$W/old.json")" = ok ]
    [ "$(cat "$W/old.json")" = old ]
    # a path under a regular file cannot be made: exit 2, nothing made
    mkdir "$W/d"
    touch "$W/d/plainfile"
    run "$UNIT" trace-check "$W/d/plainfile/x/t.json"
    [ "$status" -eq 2 ]
    [[ "$output" == "--trace $W/d/plainfile/x/t.json: cannot create its directory: "* ]]
    [ "$(ls "$W/d")" = plainfile ]
    # the directories can be made but the file cannot (its temporary name "<name>.tmp.<pid>" is
    # longer than a file name may be): exit 2, and the directories made are removed again
    long=$(printf 'n%.0s' $(seq 250))
    run "$UNIT" trace-check "$W/made/here/$long"
    [ "$status" -eq 2 ]
    [[ "$output" == "--trace $W/made/here/$long: cannot write: File name too long" ]]
    [ "$(ls "$W" | sort | tr '\n' ' ')" = "d old.json " ]
}

# ---- CLI errors (CPU only: flags are checked before any CUDA call) -------------------------
# Any built stage works: 04_efficient links the harness alone (no cuBLAS or cuDNN to load, so a
# run that stops at its flags takes milliseconds). Every cli here stops before the device (a flag,
# a value or ATTN_SANITIZE refused; --help) or is in a test that skips where a GPU is present: the
# runs that go on to the device are in tests/cli_gpu.bats.
cli() { run "$ROOT/04_efficient/run" --trace "$BATS_TEST_TMPDIR/cli/t.json" "$@"; }  # no context: refused before the device, --help, or skips where a GPU is present

@test "cli: --batch 0 exits 2 and names the flag and the range" {
    cli --batch 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"--batch: 0 is out of range (expected 1 to 65535)"* ]]
}

@test "cli: a negative --seq exits 2" {
    cli --seq -5
    [ "$status" -eq 2 ]
    [[ "$output" == *"--seq: -5 is out of range"* ]]
}

@test "cli: a non-numeric --head-dim exits 2" {
    cli --head-dim sixty-four
    [ "$status" -eq 2 ]
    [[ "$output" == *"--head-dim: 'sixty-four' is not an integer"* ]]
}

@test "cli: trailing garbage in a number exits 2" {
    cli --heads 16x
    [ "$status" -eq 2 ]
    [[ "$output" == *"--heads: '16x' is not an integer"* ]]
}

@test "cli: a flag without its value exits 2" {
    cli --steps
    [ "$status" -eq 2 ]
    [[ "$output" == *"--steps needs a value"* ]]
}

@test "cli: an unknown flag exits 2 and names it" {
    cli --sequence 12
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown flag '--sequence'"* ]]
}

@test "cli: --check-rows accepts all, refuses 0" {
    cli --check-rows 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"--check-rows: 0 is out of range"* ]]
}

@test "cli: --poison-q past the last row exits 2" {
    cli --seq 17 --poison-q 17
    [ "$status" -eq 2 ]
    [[ "$output" == *"--poison-q: row 17 is out of range (expected 0 to 16, seq - 1)"* ]]
}

@test "cli: every error is one line on stderr" {
    run bash -c "'$ROOT/01_naive/run' --batch 0 2>&1 >/dev/null | wc -l"
    [ "$output" -eq 1 ]
}

@test "cli: --help prints the flags and exits 0" {
    cli --help
    [ "$status" -eq 0 ]
    for f in --batch --heads --seq --head-dim --warmup --steps --seed --check-rows --trace --quiet; do
        [[ "$output" == *"$f"* ]]
    done
}

@test "cli: without a GPU, a valid run exits 2 with 'no CUDA device' and writes no trace" {
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then skip "a GPU is present"; fi
    cli --seq 17
    [ "$status" -eq 2 ]
    [[ "$output" == *"no CUDA device"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/cli/t.json" ]
}

# The run's trace check happens before the device probe, so these hold with or without a GPU:
# with none, a path that passes the check goes on to "no CUDA device".
@test "cli: --trace followed by a flag is refused, not taken as the path" {
    cli --seq 17 --trace --quiet
    [ "$status" -eq 2 ]
    [[ "$output" == *"--trace needs a path or 'none', not the flag '--quiet'"* ]]
    [ ! -e ./--quiet ]
}

@test "cli: --trace at a FIFO, a symbolic link or a directory exits 2 before any GPU work" {
    mkfifo "$BATS_TEST_TMPDIR/fifo"
    ln -s "$BATS_TEST_TMPDIR/elsewhere.json" "$BATS_TEST_TMPDIR/link.json"
    for p in fifo link.json; do
        run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace "$BATS_TEST_TMPDIR/$p"  # no context: refused before the device (--trace not a regular file)
        [ "$status" -eq 2 ]
        [[ "$stderr" == "--trace $BATS_TEST_TMPDIR/$p: not a regular file ("* ]]
        [ -z "$output" ]
    done
    run "$ROOT/01_naive/run" --seq 17 --trace "$BATS_TEST_TMPDIR"  # no context: refused before the device (--trace a directory)
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a regular file (a directory)"* ]]
    [ -p "$BATS_TEST_TMPDIR/fifo" ]
    [ -L "$BATS_TEST_TMPDIR/link.json" ]
    [ ! -e "$BATS_TEST_TMPDIR/elsewhere.json" ]
}

@test "cli: an uncreatable --trace directory exits 2 before any GPU work" {
    touch "$BATS_TEST_TMPDIR/plainfile"
    run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace "$BATS_TEST_TMPDIR/plainfile/sub/t.json"  # no context: refused before the device (--trace directory cannot be made)
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace $BATS_TEST_TMPDIR/plainfile/sub/t.json: cannot create its directory: Not a directory" ]
    [ -z "$output" ]
}

@test "cli: without a GPU, the trace check leaves no directory behind" {
    no_gpu || skip "a GPU is present (the run would write the trace)"
    cli --seq 17
    [[ "$output" == "no CUDA device"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/cli" ]
    cd "$BATS_TEST_TMPDIR"
    run "$ROOT/01_naive/run" --seq 17            # the default path, traces/01_naive/... # no context: skips where a GPU is present
    [ "$status" -eq 2 ]
    [ ! -e "$BATS_TEST_TMPDIR/traces" ]
}

# ---- the device check: which of "no driver", "a stub", "a driver too old", "no GPU" ----------

# fake_driver KIND: a directory with a stand-in libcuda.so.1; first on LD_LIBRARY_PATH, the CUDA
# runtime loads it instead of any real driver (so these tests run on a GPU machine too).
#   old    reports CUDA 11.8 (cuDriverGetVersion 11080): older than the build's runtime
#   nogpu  reports CUDA 99.0, and cuInit says CUDA_ERROR_NO_DEVICE (100): a driver, no GPU
#   stub   the CUDA toolkit's own stub (lib64/stubs/libcuda.so), for linking only
fake_driver() {
    local dir="$BATS_TEST_TMPDIR/driver-$1"
    mkdir -p "$dir"
    case "$1" in
        old)   printf 'int cuDriverGetVersion(int *v) { *v = 11080; return 0; }\nint cuInit(unsigned f) { (void)f; return 0; }\n' > "$dir/f.c" ;;
        nogpu) printf 'int cuDriverGetVersion(int *v) { *v = 99000; return 0; }\nint cuInit(unsigned f) { (void)f; return 100; }\n' > "$dir/f.c" ;;
        stub)  cp "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so" "$dir/libcuda.so.1" || return 1 ;;
    esac
    if [ -e "$dir/f.c" ]; then
        "${CC:-gcc}" -shared -fPIC -o "$dir/libcuda.so.1" "$dir/f.c" || return 1
    fi
    printf '%s\n' "$dir"
}

@test "device: without any NVIDIA driver, the run says so: one line, exit 2" {
    no_driver || skip "an NVIDIA driver (libcuda.so.1) is installed here"
    run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace none  # no context: no driver here (skips where one is installed)
    [ "$status" -eq 2 ]
    [ "$stderr" = "no CUDA device: no NVIDIA driver found (libcuda.so.1 not loadable): running a stage needs an NVIDIA GPU and its driver" ]
    [ -z "$output" ]
}

@test "device: a driver older than the build's runtime is named as such, with both CUDA versions" {
    dir=$(fake_driver old)
    LD_LIBRARY_PATH="$dir" run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace none  # no context: stand-in driver (LD_LIBRARY_PATH)
    [ "$status" -eq 2 ]
    [[ "$stderr" == "no CUDA device: the NVIDIA driver is too old for this build: it supports CUDA 11.8, the stages use the CUDA "*" runtime; update the driver"* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ -z "$output" ]
}

@test "device: a driver that finds no GPU says so, and names CUDA_VISIBLE_DEVICES when set" {
    dir=$(fake_driver nogpu)
    LD_LIBRARY_PATH="$dir" run --separate-stderr env -u CUDA_VISIBLE_DEVICES "$ROOT/01_naive/run" --seq 17 --trace none  # no context: stand-in driver (LD_LIBRARY_PATH)
    [ "$status" -eq 2 ]
    [ "$stderr" = "no CUDA device: the NVIDIA driver (CUDA 99.0) is loaded but finds no GPU" ]
    LD_LIBRARY_PATH="$dir" CUDA_VISIBLE_DEVICES=7 run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace none  # no context: stand-in driver (LD_LIBRARY_PATH)
    [ "$status" -eq 2 ]
    [ "$stderr" = "no CUDA device: the NVIDIA driver (CUDA 99.0) is loaded but finds no GPU (CUDA_VISIBLE_DEVICES='7' is set)" ]
}

@test "device: the toolkit's stub libcuda.so.1 is not taken for a driver" {
    [ -e "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so" ] || skip "no stub libcuda.so in the CUDA toolkit"
    dir=$(fake_driver stub)
    LD_LIBRARY_PATH="$dir" run --separate-stderr "$ROOT/01_naive/run" --seq 17 --trace none  # no context: stand-in driver (LD_LIBRARY_PATH)
    [ "$status" -eq 2 ]
    [[ "$stderr" == "no CUDA device: no NVIDIA driver found: the libcuda.so.1 loaded is the CUDA toolkit's stub "* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
}

@test "device: flags are checked before the device: a bad flag reads the same with any driver" {
    dir=$(fake_driver old)
    LD_LIBRARY_PATH="$dir" run --separate-stderr "$ROOT/01_naive/run" --seq 0  # no context: refused before the device (bad flag), stand-in driver (LD_LIBRARY_PATH)
    [ "$status" -eq 2 ]
    [ "$stderr" = "--seq: 0 is out of range (expected 1 to 1048576)" ]
}

# ---- one number rule for every integer flag; --flag=value; stray words ----------------------
@test "cli: a number too large for 64 bits is out of range, with the range, not 'not an integer'" {
    cli --seq 99999999999999999999
    [ "$status" -eq 2 ]
    [ "$output" = "--seq: 99999999999999999999 is out of range (expected 1 to 1048576)" ]
    cli --batch 18446744073709551616
    [ "$status" -eq 2 ]
    [ "$output" = "--batch: 18446744073709551616 is out of range (expected 1 to 65535)" ]
    cli --poison-q 99999999999999999999
    [ "$status" -eq 2 ]
    [ "$output" = "--poison-q: 99999999999999999999 is out of range (expected 0 to 2147483647)" ]
}

@test "cli: every integer flag takes digits only: a sign or a space is refused, as for --seed" {
    for f in --batch --heads --seq --head-dim --warmup --steps --seed --poison-q --check-rows; do
        for v in +5 ' 12' '12 ' 0x10 1e3; do
            cli "$f" "$v"
            echo "$f '$v': $output"
            [ "$status" -eq 2 ]
            [[ "$output" == "$f: '$v' is not an integer: digits only, no sign or space (expected "*")" ]]
        done
    done
}

@test "cli: the number rule's messages name the flag and its range" {
    cli --seq +5
    [ "$status" -eq 2 ]
    [ "$output" = "--seq: '+5' is not an integer: digits only, no sign or space (expected 1 to 1048576)" ]
    cli --seq ' 12'
    [ "$status" -eq 2 ]
    [ "$output" = "--seq: ' 12' is not an integer: digits only, no sign or space (expected 1 to 1048576)" ]
    cli --warmup -1
    [ "$status" -eq 2 ]
    [ "$output" = "--warmup: -1 is out of range (expected 0 to 1000)" ]
    cli --check-rows ' 7'
    [ "$status" -eq 2 ]
    [ "$output" = "--check-rows: ' 7' is not an integer: digits only, no sign or space (expected a positive integer, or all)" ]
}

@test "cli: leading zeros are digits: --seq 0017 is seq 17" {
    run "$UNIT" cli --seq 0017
    [ "$status" -eq 0 ]
    [[ "$output" == *" seq=17 "* ]]
}

@test "cli: --flag=value is accepted for every flag that takes a value" {
    run "$UNIT" cli --batch=2 --heads=3 --seq=128 --head-dim=96 --warmup=0 --steps=7 --seed=5 --check-rows=all --poison-q=9 --trace=none
    [ "$status" -eq 0 ]
    [ "$output" = "batch=2 heads=3 seq=128 head_dim=96 warmup=0 steps=7 seed=5 check_rows=18446744073709551615 poison_q=9 quiet=0 no_counters=0 no_timeline=0 timeline_interval=500 trace=none tile=0 fast=0" ]
    run "$UNIT" cli --seq 128 --check-rows=5
    [ "$status" -eq 0 ]
    [[ "$output" == "batch=8 heads=16 seq=128 "*" check_rows=5 "* ]]
}

@test "cli: --trace=--x is a path (the '=' says so); --trace --x is still refused" {
    run "$UNIT" cli --trace=--x
    [ "$status" -eq 0 ]
    [[ "$output" == *" trace=--x "* ]]
    run "$UNIT" cli --trace --x
    [ "$status" -eq 2 ]
    [[ "$output" == "--trace needs a path or 'none', not the flag '--x'"* ]]
}

@test "cli: a flag without a value refuses --flag=value" {
    cli --quiet=1
    [ "$status" -eq 2 ]
    [ "$output" = "--quiet takes no value (got '--quiet=1')" ]
    cli --no-counters=yes
    [ "$status" -eq 2 ]
    [ "$output" = "--no-counters takes no value (got '--no-counters=yes')" ]
    cli --help=all
    [ "$status" -eq 2 ]
    [ "$output" = "--help takes no value (got '--help=all')" ]
}

@test "cli: an unknown --flag=value names the flag" {
    cli --sequence=12
    [ "$status" -eq 2 ]
    [ "$output" = "unknown flag '--sequence' (see $ROOT/04_efficient/run --help)" ]
}

@test "cli: a stray word is an unexpected argument, not an unknown flag" {
    cli word
    [ "$status" -eq 2 ]
    [ "$output" = "unexpected argument 'word' (flags start with --; see $ROOT/04_efficient/run --help)" ]
    cli --seq 17 extra
    [ "$status" -eq 2 ]
    [ "$output" = "unexpected argument 'extra' (flags start with --; see $ROOT/04_efficient/run --help)" ]
    cli -seq 17
    [ "$status" -eq 2 ]
    [ "$output" = "unexpected argument '-seq' (flags start with --; see $ROOT/04_efficient/run --help)" ]
}

@test "cli: a stage's own flags: a value by the same number rule, --flag=value, no value where none is taken" {
    run "$UNIT" cli --tile 32 --fast
    [ "$status" -eq 0 ]
    [[ "$output" == *" tile=32 fast=1" ]]
    run "$UNIT" cli --tile=64 --seq 17
    [ "$status" -eq 0 ]
    [[ "$output" == *" seq=17 "*" tile=64 fast=0" ]]
    run "$UNIT" cli --tile +32
    [ "$status" -eq 2 ]
    [ "$output" = "--tile: '+32' is not an integer: digits only, no sign or space (expected 16 to 128)" ]
    run "$UNIT" cli --tile=99999999999999999999
    [ "$status" -eq 2 ]
    [ "$output" = "--tile: 99999999999999999999 is out of range (expected 16 to 128)" ]
    run "$UNIT" cli --tile
    [ "$status" -eq 2 ]
    [ "$output" = "--tile needs a value (an integer from 16 to 128)" ]
    run "$UNIT" cli --fast=1
    [ "$status" -eq 2 ]
    [ "$output" = "--fast takes no value (got '--fast=1')" ]
}

@test "cli: 06_cudnn's --rebuild-plan takes no value" {
    [ -x "$ROOT/06_cudnn/run" ] || skip "./06_cudnn/run is not built"
    run "$ROOT/06_cudnn/run" --rebuild-plan=1  # no context: refused before the device (bad flag)
    [ "$status" -eq 2 ]
    [ "$output" = "--rebuild-plan takes no value (got '--rebuild-plan=1')" ]
}

# ---- --help: head_dims and environment settings of each stage --------------------------------
# help_lines STAGE PATTERN: the lines of STAGE's --help that match PATTERN (grep -E). Each stage's
# --help runs once per suite (01-03 load cuBLAS at each start), kept in $BATS_FILE_TMPDIR; a
# --help that exits non-zero fails here and is not kept.
help_lines() {
    local f="$BATS_FILE_TMPDIR/help.$1"
    if [ ! -e "$f" ]; then
        "$ROOT/$1/run" --help > "$f.$$" || { rm -f "$f.$$"; return 1; }
        mv "$f.$$" "$f"
    fi
    grep -E -- "$2" "$f"
}

@test "cli --help: each stage lists the head_dims it runs" {
    [ "$(help_lines 01_naive 'this stage runs')" = "                    this stage runs head_dim 1 to 1024" ]
    [ "$(help_lines 02_inplace 'this stage runs')" = "                    this stage runs head_dim 1 to 1024" ]
    [ "$(help_lines 03_math 'this stage runs')" = "                    this stage runs head_dim 1 to 1024" ]
    [ "$(help_lines 04_efficient 'this stage runs')" = "                    this stage runs head_dim 64, 128" ]
    [ "$(help_lines 05_flash 'this stage runs')" = "                    this stage runs head_dim 64, 128" ]
    [ "$(help_lines 06_cudnn 'this stage runs')" = "                    this stage runs head_dim 8 to 256 in steps of 8" ]
    [ "$(help_lines 07_hopper 'this stage runs')" = "                    this stage runs head_dim 64, 128" ]
    run "$UNIT" cli --help
    [[ "$output" == *"this stage runs head_dim 32 to 1024 in steps of 32"* ]]
}

@test "cli --help: the head_dims listed are the ones the stage takes (one refused, one taken)" {
    run "$ROOT/04_efficient/run" --head-dim 96 --trace none  # no context: refused before the device (head_dim not supported)
    [ "$status" -eq 2 ]
    [ "$output" = "head_dim 96 is not supported by 04_efficient (supported: 64, 128)" ]
    run "$ROOT/06_cudnn/run" --head-dim 100 --trace none  # no context: refused before the device (head_dim not supported)
    [ "$status" -eq 2 ]
    [[ "$output" == "head_dim 100 is not supported by 06_cudnn"* ]]
}

@test "cli --help: 01 and 02 list the ATTN_GEMM_* settings; every stage lists ATTN_SANITIZE" {
    for s in 01_naive 02_inplace; do
        [ "$(help_lines "$s" '^  ATTN_GEMM_' | cut -d' ' -f3 | cut -d= -f1 | tr '\n' ' ')" = "ATTN_GEMM_WORKSPACE ATTN_GEMM_ALGO ATTN_GEMM_VERBOSE " ]
    done
    for s in 03_math 04_efficient 05_flash 06_cudnn 07_hopper; do
        [ -z "$(help_lines "$s" 'ATTN_GEMM_' || true)" ]
    done
    for s in 01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn 07_hopper; do
        [ "$(help_lines "$s" '^Environment:$')" = "Environment:" ]
        [ "$(help_lines "$s" '^  ATTN_SANITIZE=1 ' | wc -l)" -eq 1 ]
    done
    [ "$(help_lines 06_cudnn '^  CUDNN_LOGLEVEL_DBG=2 ' | wc -l)" -eq 1 ]
    run "$UNIT" cli --help
    [[ "$output" == *$'\n  FAKE_KNOB=1       a setting the stage reads\n'* ]]
}

@test "cli --help: says running needs an NVIDIA GPU, and how values are written" {
    cli --help
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\nRunning needs an NVIDIA GPU and its driver.\n'* ]]
    [[ "$output" == *"(--seq 128) or an '=' (--seq=128); numbers are decimal digits"* ]]
}

@test "cli: a control character in a flag stays on one escaped line" {
    run --separate-stderr "$ROOT/01_naive/run" $'--fo\no'  # no context: refused before the device (unknown flag)
    [ "$status" -eq 2 ]
    [ "$stderr" = "unknown flag '--fo\\no' (see $ROOT/01_naive/run --help)" ]
    run bash -c "'$ROOT/01_naive/run' \$'--a\\tb\\rc\\x01' 2>&1 >/dev/null | wc -l"
    [ "$output" -eq 1 ]
}

@test "cli: ATTN_SANITIZE must be 0 or 1; with 1 a bad --trace is refused as without it" {
    ATTN_SANITIZE=yes cli --seq 17
    [ "$status" -eq 2 ]
    [ "$output" = "ATTN_SANITIZE must be 0 or 1 (got 'yes')" ]
    mkfifo "$BATS_TEST_TMPDIR/fifo"
    ATTN_SANITIZE=0 run "$ROOT/01_naive/run" --seq 17 --trace "$BATS_TEST_TMPDIR/fifo"  # no context: refused before the device (--trace a FIFO)
    [ "$status" -eq 2 ]
    [ "$output" = "--trace $BATS_TEST_TMPDIR/fifo: not a regular file (a FIFO); give a file path, or none" ]
    ATTN_SANITIZE=1 run "$ROOT/01_naive/run" --seq 17 --trace "$BATS_TEST_TMPDIR/fifo"  # no context: refused before the device (--trace a FIFO)
    [ "$status" -eq 2 ]
    [ "$output" = "--trace $BATS_TEST_TMPDIR/fifo: not a regular file (a FIFO); give a file path, or none" ]
    [ -p "$BATS_TEST_TMPDIR/fifo" ]
}

@test "cli: --help into a full device exits 1 with one line, not 0" {
    run --separate-stderr bash -c "'$ROOT/01_naive/run' --help > /dev/full"
    [ "$status" -eq 1 ]
    [[ "$stderr" == "cannot write to stdout: "* ]]
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
    run bash -c "'$ROOT/01_naive/run' --help > /dev/null"
    [ "$status" -eq 0 ]
}

# ---- the build (CPU: make -n shows the compile line without running it) ---------------------
# flash_compile_line: make -n's compile of 05_flash/flash.cu from stdin, the compile itself (make -n
# also lists the recipe's echo of it, or its no-op ':' under -s).
flash_compile_line() {
    grep -vE '^(echo|:) ' | grep -- '-c 05_flash/flash.cu'
}

# arch_for CC: the -gencode flags make would use with a GPU of compute capability CC.
arch_for() {
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\necho "%s"\n' "$1" > "$BATS_TEST_TMPDIR/bin/nvidia-smi"
    chmod +x "$BATS_TEST_TMPDIR/bin/nvidia-smi"
    PATH="$BATS_TEST_TMPDIR/bin:$PATH" make -s -n -B -C "$ROOT" build/05_flash/flash.cu.o |
        flash_compile_line | grep -oE -- '-gencode [^ ]+' | tr '\n' ' '
}

@test "make: the detected GPU's architecture plus its PTX; anything odd or older than sm_80 falls back" {
    [ "$(arch_for 9.0)" = "-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 " ]
    [ "$(arch_for 12.0)" = "-gencode arch=compute_120,code=sm_120 -gencode arch=compute_120,code=compute_120 " ]
    fallback="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 "
    [ "$(arch_for 7.5)" = "$fallback" ]
    [ "$(arch_for '[N/A]')" = "$fallback" ]
    [ "$(arch_for '9.0; rm -rf x')" = "$fallback" ]
    [ "$(arch_for '')" = "$fallback" ]
}

# ---- the tools' bad-input paths (bench/compare.py, tests/need_gpu.sh), CPU only --------------
# (tests/sanitize.sh's are in tests/sanitize_cpu.bats)

@test "compare run: a shape the stages' flags refuse is bad input: exit 2, one line, nothing written" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" run --shape 99999999999x1x1x1 \
        --outdir "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: --shape 99999999999x1x1x1: --batch: 99999999999 is out of range (expected 1 to 65535); nothing was written" ]
    [ -z "$output" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "need_gpu.sh: the stages' own reason where there is no GPU; silent, 0 where nvidia-smi lists one" {
    run --separate-stderr env PATH="$(fake_gpu)" bash "$ROOT/tests/need_gpu.sh"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [ -z "$stderr" ]
    no_gpu || skip "a GPU is present"
    dir=$(fake_driver old)
    LD_LIBRARY_PATH="$dir" run --separate-stderr bash "$ROOT/tests/need_gpu.sh"
    [ "$status" -eq 2 ]
    [[ "$output" == "no CUDA device: the NVIDIA driver is too old for this build: it supports CUDA 11.8, "* ]]
    [ -z "$stderr" ]
}

@test "make compare / make sanitize without a GPU: one line (make's own), exit 2, nothing run" {
    no_gpu || skip "a GPU is present"
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    for t in compare sanitize; do
        run --separate-stderr make -s -C "$ROOT" --no-print-directory "$t"
        echo "$stderr"
        [ "$status" -eq 2 ]
        [ -z "$output" ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == "Makefile:"*": *** make $t: no CUDA device: "*".  Stop." ]]
    done
}

@test "make compare SHAPE=1x1 and a bad make sanitize setting are refused before anything is compiled" {
    # an empty build directory stands for a fresh clone: the check must come before the build
    b="$BATS_TEST_TMPDIR/build"
    run --separate-stderr make -s -C "$ROOT" --no-print-directory compare SHAPE=1x1 BUILD="$b"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape '1x1' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    [ -z "$(find "$b" -name '*.o' 2>/dev/null)" ]
    run --separate-stderr make -s -C "$ROOT" --no-print-directory sanitize SANITIZE_TOOLS=bogus BUILD="$b"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make sanitize: SANITIZE_TOOLS: 'bogus' is not memcheck, racecheck, synccheck or initcheck.  Stop." ]]
    [ -z "$(find "$b" -name '*.o' 2>/dev/null)" ]
}

@test "make ladder SHAPE=x is refused before anything is compiled: one line (make's own), exit 2" {
    b="$BATS_TEST_TMPDIR/build"
    run --separate-stderr make -s -C "$ROOT" --no-print-directory ladder SHAPE=x BUILD="$b"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make ladder: --shape 'x' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    [ -z "$(find "$b" -name '*.o' 2>/dev/null)" ]
}

@test "make test TEST_JOBS=0 or TEST_TIMING=2 is refused before anything is compiled: one line (make's own), exit 2" {
    b="$BATS_TEST_TMPDIR/build"
    run --separate-stderr make -s -C "$ROOT" --no-print-directory test TEST_JOBS=0 BUILD="$b"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make test: TEST_JOBS=0: expected a whole number from 1 to 1024.  Stop." ]]
    run --separate-stderr env TEST_TIMING=2 make -s -C "$ROOT" --no-print-directory test BUILD="$b"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make test: TEST_TIMING=2: expected 0 or 1.  Stop." ]]
    [ -z "$(find "$b" -name '*.o' 2>/dev/null)" ]
    # the check alone: nothing printed, exit 0, for good settings
    run env TEST_JOBS=3 TEST_TIMING=1 bash "$ROOT/tests/run_suites.sh" --check
    [ "$status" -eq 0 ]
    [ -z "$output" ]
}

# ---- reference attention and the generator (CPU only) ---------------------------------------
# num_lt A B: exit 0 when A < B, both decimal numbers (num_le's form); anything else fails.
num_lt() { num_le "$1" "$2" && ! num_le "$2" "$1"; }

@test "reference: equal scores (Q = 0) give the running mean of V" {
    run "$ROOT/build/common_unit" ref-equal-scores
    [ "$status" -eq 0 ]
    [[ "$output" == *"max_err=0"* ]] || [[ "$output" =~ max_err=[0-9.e-]+ ]]
    err=$(sed -n 's/.*max_err=\([^ ]*\).*/\1/p' <<<"$output")
    num_lt "$err" 1e-12
}

@test "reference: row 0 of a causal head equals V[0]" {
    run "$ROOT/build/common_unit" ref-row0
    [ "$status" -eq 0 ]
    err=$(sed -n 's/.*max_err=\([^ ]*\).*/\1/p' <<<"$output")
    num_le "$err" 0
    num_le 0 "$err"
}

@test "reference: two keys with a known score gap give softmax weights 1/(1+e^-d)" {
    run "$ROOT/build/common_unit" ref-two-keys
    [ "$status" -eq 0 ]
    err=$(sed -n 's/.*max_err=\([^ ]*\).*/\1/p' <<<"$output")
    num_lt "$err" 1e-12
}

@test "reference: the safe softmax turns a fully masked row into zeros, not NaN" {
    run "$ROOT/build/common_unit" softmax-masked-row
    [ "$status" -eq 0 ]
    [ "$output" = "p=0 0 0 0" ]
}

@test "reference: a NaN score makes the whole softmax row NaN (as PyTorch); all -inf stays zeros" {
    run "$ROOT/build/common_unit" softmax-nan
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "nan_first=nan nan nan" ]
    [ "${lines[1]}" = "nan_middle=nan nan nan" ]
    [ "${lines[2]}" = "masked=0 0" ]
}

@test "reference: the check catches one unwritten (NaN) element and a wrong one" {
    run "$ROOT/build/common_unit" ref-check-poison
    [ "$status" -eq 0 ]
    [[ "$output" == *"clean nonfinite=0 rel_l2=0"* ]]
    [[ "$output" == *"poisoned nonfinite=1"* ]]
    [[ "$output" == *"perturbed nonfinite=0"* ]]
}

@test "reference: sampled rows include rows 0 and seq-1 of the first, a middle and the last head" {
    run "$ROOT/build/common_unit" pick-rows 2 3 10 8
    [ "$status" -eq 0 ]
    # heads = 6: fixed heads 0, 3, 5 -> rows 0 9 30 39 50 59
    for r in 0 9 30 39 50 59; do [[ " $output " == *" $r "* ]]; done
    [ "${lines[1]}" = "count=8 distinct=1" ]
}

@test "reference: --check-rows N checks exactly N distinct rows (fixed rows coincide with one head)" {
    # one head: the three fixed heads are the same, so only rows 0 and 9 are fixed; 6 are drawn
    run "$ROOT/build/common_unit" pick-rows 1 1 10 8
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "count=8 distinct=1" ]
    [[ " ${lines[0]} " == *" 0 "* ]]
    [[ " ${lines[0]} " == *" 9 "* ]]
    [ "$("$ROOT/build/common_unit" pick-rows 1 1 10 9 | tail -n 1)" = "count=9 distinct=1" ]
    [ "$("$ROOT/build/common_unit" pick-rows 1 1 10 100 | tail -n 1)" = "count=10 distinct=1" ]
    [ "$("$ROOT/build/common_unit" pick-rows 1 1 1 1 | tail -n 1)" = "count=1 distinct=1" ]
    [ "$("$ROOT/build/common_unit" pick-rows 3 1 1 2 | tail -n 1)" = "count=2 distinct=1" ]
    # many of few (selection sampling) and few of many (Floyd's algorithm)
    [ "$("$ROOT/build/common_unit" pick-rows 1 1 1000 999 | tail -n 1)" = "count=999 distinct=1" ]
    [ "$("$ROOT/build/common_unit" pick-rows 8 16 1024 256 | tail -n 1)" = "count=256 distinct=1" ]
    [ "$("$ROOT/build/common_unit" pick-rows 4 4 4096 50000 | tail -n 1)" = "count=50000 distinct=1" ]
    # the same seed gives the same rows
    [ "$("$ROOT/build/common_unit" pick-rows 8 16 1024 256)" = "$("$ROOT/build/common_unit" pick-rows 8 16 1024 256)" ]
}

@test "generator: the same seed gives the same bits, a different seed differs, bf16 rounds to nearest even" {
    run "$ROOT/build/common_unit" generator
    [ "$status" -eq 0 ]
    [[ "$output" == *"same=1 different=1"* ]]
    [[ "$output" == *"rne=ok"* ]]
    # Mean ~0 and variance ~1 over 1e5 draws.
    mean=$(sed -n 's/.*mean=\([^ ]*\).*/\1/p' <<<"$output"); var=$(sed -n 's/.*var=\([^ ]*\).*/\1/p' <<<"$output")
    num_lt -0.02 "$mean"
    num_lt "$mean" 0.02
    num_lt 0.97 "$var"
    num_lt "$var" 1.03
}

@test "generator: the streams of 3000017 elements of seed 7 are pinned, whatever the thread count" {
    # FNV-1a 64 of the one-thread generator's output; the threaded fill starts each share where
    # that generator would be.
    [ "$("$UNIT" generator-hash 3000017 7)" = 0a32c12e9a8daf74 ]
}

@test "generator: the first values of seed 0 are pinned (same bits on any machine)" {
    run "$ROOT/build/common_unit" generator-first 0
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$ROOT/tests/data/generator_seed0.txt")" ]
}

# ---- the element-wise check: faults built into O (tests/unit/check_tests.c) ------------------
# check-fault KIND: 05's arithmetic emulated on the CPU at the blog's shape 8x16x1024x64, on the
# rows the run checks by default (256, seed 0), with one fault built in; the last line is
# "pass=0|1 fault=(b, h, row, col)". The bound is 2x the worst-case bf16 rounding error of S, P
# and O (common/reference.h).

@test "check: 05's emulated arithmetic passes, its worst element well inside the bound" {
    run "$UNIT" check-fault none
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pass=1 fault=(7, 15, 1023, -1)" ]
    [[ "${lines[0]}" == "check: PASS on 256 of 131072 query rows against the float64 reference: "* ]]
    [[ "${lines[0]}" == *"; 0 elements over their bound" ]]
    ratio=$(sed -n 's/.*(\([0-9.]*\) of it).*/\1/p' <<<"${lines[0]}")
    num_le "$ratio" 0.5
}

@test "check: the last query tile computed without its diagonal key tile fails and is named" {
    # Rows 960..1023 of head (7, 15) miss keys 960..1023. The old rule (rel_l2 alone, row seq-1
    # only) passed this; the element rule fails it by more than 2x.
    run "$UNIT" check-fault diag-tile
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pass=0 fault=(7, 15, 960, -1)" ]
    [[ "${lines[0]}" == "check: FAIL on 256 of 131072 query rows "* ]]
    [[ "${lines[0]}" =~ worst\ element\ \(batch,\ head,\ row,\ col\)\ =\ \(7,\ 15,\ (9[6-9][0-9]|10[0-2][0-9]),\ [0-9]+\):\ got\ [-0-9.e]+,\ want\ [-0-9.e]+,\ \|err\|\ [0-9.e+-]+\ \>\ bound\ [0-9.e+-]+\ \(([0-9.]+)\ of\ it\) ]]
    num_le 2.0 "${BASH_REMATCH[2]}"
}

@test "check: one element off by 0.05 in the last row of the last head fails and is named exactly" {
    run "$UNIT" check-fault one-element
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pass=0 fault=(7, 15, 1023, 32)" ]
    [[ "${lines[0]}" == "check: FAIL "* ]]
    [[ "${lines[0]}" == *"worst element (batch, head, row, col) = (7, 15, 1023, 32): got "* ]]
    [[ "${lines[0]}" == *"; 1 element over its bound" ]]
    # the relative L2 error alone would have passed it
    [[ "${lines[0]}" =~ rel_l2=([0-9.e+-]+) ]]
    num_le "${BASH_REMATCH[1]}" 1e-2
}

@test "check: a query row left unwritten (NaN poison) fails and names its first element" {
    run "$UNIT" check-fault nan-row
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pass=0 fault=(7, 15, 1023, -1)" ]
    [[ "${lines[0]}" == *", 64 non-finite; worst element (batch, head, row, col) = (7, 15, 1023, 0): got nan, "* ]]
    [[ "${lines[0]}" == *"; 64 elements over their bound" ]]
}

@test "check: a query row written with another row's output fails and is named" {
    run "$UNIT" check-fault other-row
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pass=0 fault=(7, 15, 1023, -1)" ]
    [[ "${lines[0]}" == "check: FAIL "* ]]
    [[ "${lines[0]}" == *"worst element (batch, head, row, col) = (7, 15, 1023, "* ]]
}

# emulate MODELS SHAPE ROWS: stages' arithmetic on the CPU (eager = 01/02, math = 03, tiled = 04,
# flash = 05, cudnn = 06's FlashAttention-style kernel), one problem for all five; two lines per
# model. Every correct stage must pass with its worst element at most half its bound.
# bench/emulate_check.sh runs every test shape.
MODELS=eager,math,tiled,flash,cudnn

# assert_emulated_margin: each model's second line in $output says pass=1 with ratio <= 0.5.
assert_emulated_margin() {
    [ "${#lines[@]}" -eq 10 ]
    for i in 1 3 5 7 9; do
        echo "${lines[$i]}"
        [[ "${lines[$i]}" == *" pass=1" ]]
        local ratio=${lines[$i]%% *}
        num_le "${ratio#ratio=}" 0.5
    done
}

# emulate SHAPE [ROWS]: the unit binary's emulation of every model (a test runs its shapes at
# once, run_parallel).
emulate() { "$UNIT" emulate "$MODELS" "$@"; }

@test "check: every stage's emulated arithmetic passes with a margin of 2, small shapes, every row" {
    local shapes=("1x2x17x64 all" "1x2x17x128 all" "2x3x77x64 all" "1x2x255x128 all" "1x1x1000x64 all")
    run_parallel "$BATS_TEST_TMPDIR/emulate" emulate "${shapes[@]}"
    for shape in "${shapes[@]}"; do
        load_case "$BATS_TEST_TMPDIR/emulate" "$shape"
        [ "$status" -eq 0 ]
        echo "$shape"
        assert_emulated_margin
    done
}

@test "check: every stage's emulated arithmetic passes with a margin of 2 at the benchmark shapes" {
    local shapes=(8x16x1024x64 4x16x2048x64 2x16x4096x128)
    run_parallel "$BATS_TEST_TMPDIR/emulate" emulate "${shapes[@]}"
    for shape in "${shapes[@]}"; do
        load_case "$BATS_TEST_TMPDIR/emulate" "$shape"
        [ "$status" -eq 0 ]
        echo "$shape"
        assert_emulated_margin
    done
}

@test "check: the result has the same bits on 1, 2, 3, 5 and 16 threads" {
    run "$UNIT" check-threads 2x3x77x64 all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "threads=1,2,3,5,16 same=1" ]
    [[ "${lines[0]}" == "check: FAIL on 462 of 462 query rows "* ]]
    [[ "${lines[0]}" == *"worst element (batch, head, row, col) = (1, 1, 38, 32): "* ]]
    run "$UNIT" check-threads 8x16x1024x64 256
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "threads=1,2,3,5,16 same=1" ]
}

@test "check: 03_math's tighter relative L2 bound (4e-3) still holds alongside the element rule" {
    run "$UNIT" emulate math 2x3x77x64 all
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"(bound 4.0e-03)"* ]]
    run "$UNIT" emulate eager 2x3x77x64 all
    [[ "${lines[0]}" == *"(bound 1.0e-02)"* ]]
}

@test "check: the default sample holds rows 0, seq-1 and the whole last query tile of three heads" {
    run "$UNIT" pick-rows 8 16 1024 256
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "count=256 distinct=1" ]
    # heads 0, 64 and 127: rows 0 and 960..1023 of each
    python3 - "${lines[0]}" <<'PY'
import sys
rows = set(map(int, sys.argv[1].split()))
for h in (0, 64, 127):
    want = {h * 1024} | set(range(h * 1024 + 960, h * 1024 + 1024))
    missing = want - rows
    assert not missing, (h, sorted(missing)[:5])
others = [r for r in rows if r // 1024 not in (0, 64, 127)]
assert len(others) >= 50, len(others)   # the rest is drawn from the other heads too
PY
}

@test "o_hash: FNV-1a 64 matches the published test vectors" {
    [ "$("$UNIT" fnv1a a)" = af63dc4c8601ec8c ]
    [ "$("$UNIT" fnv1a foobar)" = 85944171f73967e8 ]
}

# ---- make test's closing line (tests/tap_summary.sh) ----------------------------------------
@test "tap_summary: counts passed, failed and skipped; a skip is not a pass; input passes through" {
    tap=$'1..5\nok 1 a\nok 2 b # skip no CUDA device\nnot ok 3 c\n# (in test file x.bats, line 4)\nok 4 d # skip\nok 5 names with skip in them pass'
    run bash "$ROOT/tests/tap_summary.sh" <<<"$tap"
    [ "$status" -eq 1 ]
    [ "${lines[-1]}" = "2 passed, 1 failed, 2 skipped" ]
    [ "${#lines[@]}" -eq 8 ]
    [ "$(printf '%s\n' "$output" | head -n 7)" = "$tap" ]
}

@test "tap_summary: all passed exits 0; tests the plan announced but never ran count as failed" {
    run bash "$ROOT/tests/tap_summary.sh" <<<$'1..2\nok 1 a\nok 2 b'
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "2 passed, 0 failed, 0 skipped" ]
    run bash "$ROOT/tests/tap_summary.sh" <<<$'1..3\nok 1 a'
    [ "$status" -eq 1 ]
    [ "${lines[-1]}" = "1 passed, 2 failed, 0 skipped" ]
}

@test "tap_summary: make test keeps bats' exit status and ends with the closing line" {
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    # a stand-in bats that reports one failure and exits 1, as bats does
    printf '#!/bin/sh\nprintf "1..2\\nok 1 a\\nnot ok 2 b\\n"\nexit 1\n' > "$BATS_TEST_TMPDIR/bin/bats"
    chmod +x "$BATS_TEST_TMPDIR/bin/bats"
    cmd=$(make -s -n -C "$ROOT" test | tail -n 1)
    [[ "$cmd" == *"bash tests/run_suites.sh | bash tests/tap_summary.sh"* ]]
    cd "$ROOT"
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" bash -c "$cmd"
    [ "$status" -ne 0 ]
    # one bats per suite without a GPU; with one, one bats for the GPU lane's suites and one per
    # suite marked cpu (tests/run_suites.sh)
    local n; n=$(ls "$ROOT"/tests/*.bats | wc -l)
    [ -n "$(bash "$ROOT/tests/need_gpu.sh")" ] ||
        n=$(( 1 + $(bash "$ROOT/tests/run_suites.sh" --list | grep -c '^cpu ') ))
    [ "${lines[-1]}" = "$n passed, $n failed, 0 skipped" ]
}

@test "run_suites: TEST_JOBS must be a whole number from 1 to 1024: exit 2, one line, nothing run" {
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\necho ran > "%s/ran"\n' "$BATS_TEST_TMPDIR" > "$BATS_TEST_TMPDIR/bin/bats"
    chmod +x "$BATS_TEST_TMPDIR/bin/bats"
    for v in 0 -1 x 2.5 ' 2' 1025 99999999999999999999; do
        run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" TEST_JOBS="$v" timeout 20 bash "$ROOT/tests/run_suites.sh"
        [ "$status" -eq 2 ]
        [ "$stderr" = "TEST_JOBS=$v: expected a whole number from 1 to 1024" ]
        [ -z "$output" ]
    done
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "run_suites: without a GPU every suite runs once, TAP in the suites' order, status 1 if one failed" {
    [ -z "$(bash "$ROOT/tests/need_gpu.sh")" ] && skip "a GPU is present: the suites run as one bats"
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    # a stand-in bats: one passing test named after its suite; build.bats fails
    printf '#!/bin/sh\nn=$(basename "$2" .bats)\nprintf "1..1\\nok 1 %%s\\n" "$n"\n[ "$n" != build ]\n' > "$BATS_TEST_TMPDIR/bin/bats"
    chmod +x "$BATS_TEST_TMPDIR/bin/bats"
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" TEST_JOBS=3 TEST_TIMING=0 bash "$ROOT/tests/run_suites.sh"
    [ "$status" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep '^ok 1 ' | sed 's/^ok 1 //' | tr '\n' ' ')" = "$(cd "$ROOT/tests" && ls *.bats | sed 's/\.bats$//' | tr '\n' ' ')" ]
    [ "$(printf '%s\n' "$output" | grep -c '^1\.\.1$')" -eq "$(ls "$ROOT"/tests/*.bats | wc -l)" ]
}

# ---- the build refuses spills under CI; the d128 Q-in-registers knob is gone -----------------
@test "make: under CI=true ptxas warnings (a spill) are errors; a plain build only warns" {
    ci=$(CI=true make -s -n -B -C "$ROOT" build/05_flash/flash.cu.o | flash_compile_line)
    [[ "$ci" == *"-Xptxas -warn-spills -Xptxas -Werror "* ]]
    plain=$(env -u CI make -s -n -B -C "$ROOT" build/05_flash/flash.cu.o | flash_compile_line)
    [[ "$plain" == *"-Xptxas -warn-spills "* ]]
    [[ "$plain" != *"-Xptxas -Werror"* ]]
}

@test "05_flash: -DFLASH_D128_Q_IN_REGS (it spilled) stops the build with a reason (no GPU needed)" {
    nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
    [ -x "$nvcc" ] || skip "nvcc not found at $nvcc"
    run "$nvcc" -E -std=c++17 -DFLASH_D128_Q_IN_REGS=1 -I"$ROOT/common" "$ROOT/05_flash/flash.cu" -o /dev/null
    [ "$status" -ne 0 ]
    [[ "$output" == *"FLASH_D128_Q_IN_REGS was removed: Q in registers at head_dim 128 spills"* ]]
    run "$nvcc" -E -std=c++17 -I"$ROOT/common" "$ROOT/05_flash/flash.cu" -o /dev/null
    [ "$status" -eq 0 ]
}

# ---- bad input to make compare: one line, exit 2, before the device is looked at (these run
# where there is no GPU: the reason must still be the input). tests/sanitize.sh's and make
# sanitize's are in tests/sanitize_cpu.bats ----------------------------------------------------

@test "need_gpu.sh: a stage whose run fails for another reason (ATTN_SANITIZE=2) gives that stage's line" {
    no_gpu || skip "a GPU is present (need_gpu.sh trusts nvidia-smi there)"
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    ATTN_SANITIZE=2 run --separate-stderr bash "$ROOT/tests/need_gpu.sh"
    [ "$status" -eq 2 ]
    [ "$output" = "./01_naive/run failed (exit 2): ATTN_SANITIZE must be 0 or 1 (got '2')" ]
    [ -z "$stderr" ]
}

@test "make compare SHAPE with shell code or extra words: bad shape, one line, exit 2, nothing run" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    make_bad compare SHAPE='1x1x1x64;echo INJECTED>&2'
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape '1x1x1x64;echo INJECTED>&2' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    make_bad compare SHAPE='1x1x1x64 extra'
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape '1x1x1x64 extra' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    make_bad compare SHAPE="1x1x1x64'; echo INJECTED >&2; '"
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == *" is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    make_bad compare SHAPE='$(shell echo INJECTED >&2)'
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape '\$(shell echo INJECTED >&2)' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
}

@test "make compare SHAPE=bad on a machine without a GPU: the shape error, not 'no CUDA device'" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    make_bad compare SHAPE=bad
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape 'bad' is not BxHxSxD with positive integers (e.g. 8x16x1024x64).  Stop." ]]
    make_bad compare SHAPE=99999999999x1x1x1
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: --shape 99999999999x1x1x1: --batch: 99999999999 is out of range (expected 1 to 65535); nothing was written.  Stop." ]]
}

@test "make compare with a (fake) GPU: the recipe passes SHAPE single-quoted, one word" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    run --separate-stderr env PATH="$(fake_gpu)" make -s -n -C "$ROOT" --no-print-directory compare SHAPE=1x2x77x64
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | tail -n 1)" = "python3 bench/compare.py run --shape '1x2x77x64'" ]
}

@test "ATTN_SANITIZE=2 make compare: its own line (environment or make's command line), exit 2" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    ATTN_SANITIZE=2 make_bad compare
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: ATTN_SANITIZE='2' must be unset, 0 or 1 (compare runs the stages, which refuse it).  Stop." ]]
    make_bad compare ATTN_SANITIZE=2
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make compare: ATTN_SANITIZE='2' must be unset, 0 or 1 (compare runs the stages, which refuse it).  Stop." ]]
}
