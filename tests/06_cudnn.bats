#!/usr/bin/env bats
# 06_cudnn: causal SDPA as a cuDNN 9 operation graph through the backend C API; the plan is built
# once at set-up and executed every step (--rebuild-plan rebuilds it every call).
#
# What cuDNN does on the H200 (06_cudnn/README.md, docs/pytorch-h200/sdpa_cudnn.txt):
# heuristics mode A picks a runtime-compiled flash-attention engine with a 256-byte workspace for
# seq >= 17, and its execute issues a 4-byte "Memset (Device)" before the one generated kernel:
# 2 GPU activities per step. At seq 1 it picks another engine with no workspace: 1 activity.
load helpers

KERNEL_RE='cudnn_generated.*sdpa.*flash_fprop'

# No setup(): every test that runs the stage calls require_gpu itself (the --head-dim checks come
# after the device probe, so they need a GPU too); --help needs none and runs everywhere.

# Every kernel event of the trace matches KERNEL_RE, and there are exactly $1 of them.
assert_cudnn_kernels() {
    local names
    names=$(trace_query "$TRACE" kernels)
    printf 'kernels:\n%s\n' "$names"
    [ "$(printf '%s\n' "$names" | grep -c .)" -eq "$1" ]
    [ "$(printf '%s\n' "$names" | grep -cE "$KERNEL_RE")" -eq "$1" ]
}

# The number of table rows "Memset (Device)" whose # of Calls is 3 (one per active step).
memset_rows_with_3_calls() {
    printf '%s\n' "$output" | grep -cE '^ +Memset \(Device\) .* 3 *$' || true
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

# shape_case SEQ HEAD_DIM ACTIVITIES_PER_STEP WORKSPACE_BYTES: batch 2, heads 4, checked on every
# query row; exact per-step count, workspace, memsets and kernel names.
shape_case() {
    require_gpu
    quick shape_checks "$@"
}
shape_checks() {
    local seq=$1 d=$2 per_step=$3 ws=$4
    stage_result 06_cudnn --batch 2 --heads 4 --seq "$seq" --head-dim "$d" --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = "$per_step" ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = "$ws" ]
    trace_query "$TRACE" valid
    assert_cudnn_kernels 3
    # the memset, if any, is one per active step: the table (active steps only) has its row with
    # 3 calls. (The trace also holds the set-up phase, where cuDNN's plan build adds memsets.)
    [ "$(memset_rows_with_3_calls)" -eq $(( per_step - 1 )) ]
}

@test "06_cudnn seq 1 head_dim 64: PASS, 1 kernel, no workspace" { shape_case 1 64 1 0; }
@test "06_cudnn seq 1 head_dim 128: PASS, 1 kernel, no workspace" { shape_case 1 128 1 0; }
@test "06_cudnn seq 17 head_dim 64: PASS, memset + kernel" { shape_case 17 64 2 256; }
@test "06_cudnn seq 17 head_dim 128: PASS, memset + kernel" { shape_case 17 128 2 256; }
@test "06_cudnn seq 1000 head_dim 64: PASS, memset + kernel" { shape_case 1000 64 2 256; }
@test "06_cudnn seq 1000 head_dim 128: PASS, memset + kernel" { shape_case 1000 128 2 256; }
@test "06_cudnn seq 1024 head_dim 64: PASS, memset + kernel" { shape_case 1024 64 2 256; }
@test "06_cudnn seq 1024 head_dim 128: PASS, memset + kernel" { shape_case 1024 128 2 256; }

@test "06_cudnn default shape: engine printed, cuLaunchKernelEx, real occupancy, plan built once" {
    require_gpu
    run_stage 06_cudnn
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    [ "$(field kernels_per_step)" = 2 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = 256 ]
    # the engine read back from cuDNN, on stdout before the table; one summary line only
    [ "$(printf '%s\n' "$output" | grep -c '^cudnn: ')" -eq 2 ]
    printf '%s\n' "$output" | grep -qE '^cudnn: engine [0-9]+, knobs '
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
    printf '%s\n' "$output" | grep -q 'Memset (Device)'
    trace_query "$TRACE" valid
    assert_cudnn_kernels 3
    [ "$(memset_rows_with_3_calls)" -eq 1 ]
    # launched by the driver API, every time
    [ "$(trace_query "$TRACE" launch-apis | grep -c '^cuLaunchKernelEx$')" -eq 3 ]
    # the real occupancy (the kernel opts into > 48 KiB shared memory; Kineto prints 0 here)
    trace_query "$TRACE" occupancy | python3 -c '
import sys
v = [float(x) for x in sys.stdin.read().split()]
print("occupancy %:", v)
sys.exit(0 if len(v) == 3 and all(x > 0 for x in v) else 1)'
    # the plan is built once, at set-up; each active step only executes it
    [ "$(trace_query "$TRACE" ranges cudnn_build_plan)" -eq 1 ]
    [ "$(trace_query "$TRACE" ranges cudnn_execute)" -eq 3 ]
}

@test "06_cudnn --rebuild-plan: one build at set-up plus one per active step, and it costs host time" {
    require_gpu
    run_stage 06_cudnn --batch 2 --heads 4 --seq 256 --warmup 0
    echo "$output"
    [ "$status" -eq 0 ]
    local cached_cpu; cached_cpu=$(field cpu_us)
    [ "$(trace_query "$TRACE" ranges cudnn_build_plan)" -eq 1 ]

    run_stage 06_cudnn --batch 2 --heads 4 --seq 256 --warmup 0 --rebuild-plan
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field kernels_per_step)" = 2 ]
    [ "$(trace_query "$TRACE" ranges cudnn_build_plan)" -eq 4 ]
    [ "$(trace_query "$TRACE" ranges cudnn_execute)" -eq 3 ]
    assert_cudnn_kernels 3
    # building a plan (graph, heuristics, kernel generation) dwarfs executing one
    python3 -c "import sys; c=float('$cached_cpu'); r=float('$(field cpu_us)'); \
print('cpu_us cached', c, 'rebuild', r); sys.exit(0 if r > 10 * c else 1)"
}

@test "06_cudnn --head-dim 7: exit 2 with the reason (no GPU needed)" {
    run "$ROOT/06_cudnn/run" --head-dim 7 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 7 is not supported by 06_cudnn"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "06_cudnn --head-dim 264: exit 2 (cuDNN's SDPA stops at 256; no GPU needed)" {
    run "$ROOT/06_cudnn/run" --head-dim 264 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 264 is not supported by 06_cudnn"* ]]
}

@test "06_cudnn --quiet: no cudnn: lines, no table: stdout is the summary line alone" {
    require_gpu
    run --separate-stderr "$ROOT/06_cudnn/run" --batch 2 --heads 4 --seq 256 --quiet \
        --trace "$BATS_TEST_TMPDIR/06_cudnn.json"
    echo "stdout: $output"
    echo "stderr: $stderr"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
    [[ "$output" == "result stage=06_cudnn "* ]]
}

# No GPU needed: the CLI prints the help before it looks for a device.
@test "06_cudnn --help lists --rebuild-plan" {
    run "$ROOT/06_cudnn/run" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--rebuild-plan"* ]]
}

# ---- counters (the counter pass, common/counters.c) -----------------------------------------
@test "06_cudnn default shape, counters: cuDNN's kernel runs wgmma (GMMA > 0); achieved <= theoretical" {
    require_gpu
    run_stage_profiled 06_cudnn
    printf '%s\n' "$output" | sed -n '/^Kernel details/,$p'
    [ "$status" -eq 0 ]
    local gmma
    gmma=$(trace_query "$TRACE" counter "sdpa" sm__inst_executed_pipe_tensor_op_gmma.sum | head -n 1)
    echo "GMMA $gmma"
    at_most 1 "$gmma"
    [[ "$(field dram_read)" =~ ^[0-9]+$ ]]
    assert_achieved_le_theoretical
    printf '%s\n' "$output" | grep -qE '^    counters: .*: wgmma \(GMMA\)$'
}
