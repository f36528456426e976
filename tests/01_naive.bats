#!/usr/bin/env bats
# 01_naive: eager attention as PyTorch runs the blog's naive module: cuBLASLt bf16 GEMM S = Q·Kᵀ,
# an out-of-place scale, an out-of-place masked_fill (ATen clones S with a device-to-device copy,
# then fills the copy), a row softmax, a cuBLASLt GEMM O = P·V.
#
# Per step on the H200: 2 GEMM kernels + mul + Memcpy DtoD + masked-fill + softmax = 6 GPU
# activities, one of them the copy, and no memset. Measured with cuBLAS 13.1: when a workspace is
# allowed, every heuristic candidate for S = Q·Kᵀ (nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT,
# ...) needs a 4-byte workspace that cuBLAS memsets before each call (PyTorch's 7 activities per
# step on this GPU). The GEMMs ask cuBLASLt for zero-workspace algorithms first, so the memset is
# gone at the same speed and no workspace is allocated. ATTN_GEMM_WORKSPACE=1 allows the workspace
# again: the 4 bytes are allocated, the "Memset (Device)" row is back, 7 activities per step.
load helpers

setup() {
    require_gpu
}

# The kernels and host ranges of 3 active steps (+ the mask built once at set-up): the eager
# stages' (assert_eager_kernels_and_ranges), the copy, and masked_fill = clone (the copy) +
# masked_fill_ on the CPU lane.
assert_naive_trace() {
    assert_eager_kernels_and_ranges
    [ "$(trace_query "$TRACE" count gpu_memcpy)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges masked_fill)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges clone)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges masked_fill_)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges triu)" -eq 1 ]
}

# The number of table rows "Memset (Device)" (the table shows the active steps only).
memset_rows() {
    printf '%s\n' "$output" | grep -cE '^ +Memset \(Device\) ' || true
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

@test "01_naive small shape 1x2x77x64, every row checked: PASS, 6 activities, 1 DtoD copy" {
    stage_result 01_naive --batch 1 --heads 2 --seq 77 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 6 ]
    [ "$(field memcpy_per_step)" = 1 ]
    [ "$(field extra_bytes)" = "$(naive_extra_bytes 1 2 77)" ]
    assert_naive_trace
}

@test "01_naive default shape: tensor-core GEMMs, the Memcpy DtoD row, table and trace" {
    stage_result 01_naive
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 6 ]
    [ "$(field memcpy_per_step)" = 1 ]
    [ "$(field extra_bytes)" = "$(naive_extra_bytes 8 16 1024)" ]
    assert_naive_trace
    # both GEMMs on bf16 tensor cores, none on CUDA-core FP32
    [ "$(kcount "$TC_GEMM_RE")" -eq 6 ]
    [ "$(kcount 'ffma|sgemm')" -eq 0 ]
    # the table: header, the copy's own row, both footer lines, one summary line
    printf '%s\n' "$output" | grep -qE '^ +Name +Self CPU % +Self CPU +CPU total % +CPU total +CPU time avg +Self CUDA +Self CUDA % +CUDA total +CUDA time avg +# of Calls'
    printf '%s\n' "$output" | grep -qE '^ *Memcpy DtoD \(Device -> Device\) '
    # the zero-workspace GEMMs: no cuBLAS memset, in the table or anywhere in the trace
    [ "$(memset_rows)" -eq 0 ]
    [ "$(trace_query "$TRACE" count gpu_memset)" -eq 0 ]
    printf '%s\n' "$output" | grep -qE '^Self CPU time total: [0-9.]+(us|ms|s)$'
    printf '%s\n' "$output" | grep -qE '^Self CUDA time total: [0-9.]+(us|ms|s)$'
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
}

@test "01_naive ATTN_GEMM_WORKSPACE=1: the 4-byte workspace and cuBLAS's memset come back, 7 activities" {
    ATTN_GEMM_WORKSPACE=1 run_stage 01_naive
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field kernels_per_step)" = 7 ]
    [ "$(field memcpy_per_step)" = 1 ]
    # the Q·Kᵀ algorithm's 4-byte workspace is all that is allocated for the GEMMs
    [ "$(field extra_bytes)" = "$(( $(naive_extra_bytes 8 16 1024) + 4 ))" ]
    # one memset per active step: the table's row with 3 calls, 3 in the trace
    printf '%s\n' "$output" | grep -E '^ +Memset \(Device\) '
    printf '%s\n' "$output" | grep -qE '^ +Memset \(Device\) .* 3 *$'
    [ "$(memset_rows)" -eq 1 ]
    [ "$(trace_query "$TRACE" count gpu_memset)" -eq 3 ]
    # the same GEMM kernels' count: the memset is cuBLAS's, not another kernel
    [ "$(kcount "$GEMM_RE")" -eq 6 ]
}

@test "01_naive ATTN_GEMM_WORKSPACE other than 0 or 1: exit 2, one line" {
    ATTN_GEMM_WORKSPACE=2 run "$ROOT/01_naive/run" --batch 1 --heads 2 --seq 64 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"ATTN_GEMM_WORKSPACE=2"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "01_naive odd shapes (seq 1, 17 with head_dim 128, 1000): PASS" {
    for shape in "2 3 1 64" "2 3 17 128" "1 2 1000 64"; do
        set -- $shape
        stage_result 01_naive --batch "$1" --heads "$2" --seq "$3" --head-dim "$4" --check-rows all
        echo "$shape: $output" | tail -n 1
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        assert_rel_l2_le 1e-2
        [ "$(field memcpy_per_step)" = 1 ]
    done
}

@test "01_naive --poison-q: the NaN stays in its own output row" {
    stage_result 01_naive --batch 1 --heads 2 --seq 77 --poison-q 5 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
}

@test "01_naive ATTN_GEMM_VERBOSE=1 prints the heuristic's candidates and the pick, on stderr" {
    ATTN_GEMM_VERBOSE=1 run_stage 01_naive --batch 1 --heads 2 --seq 64 --quiet
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qE '^gemm S = Q\.K\^T: heuristic\[0\] \(picked\) algo_id='
    printf '%s\n' "$output" | grep -qE '^gemm O = P\.V: heuristic\[0\] \(picked\) algo_id='
}

@test "01_naive ATTN_GEMM_ALGO out of range or malformed: exit 2, one line" {
    ATTN_GEMM_ALGO=99 run "$ROOT/01_naive/run" --batch 1 --heads 2 --seq 64 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"ATTN_GEMM_ALGO=99"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
    ATTN_GEMM_ALGO=x run "$ROOT/01_naive/run" --batch 1 --heads 2 --seq 64 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"ATTN_GEMM_ALGO=x"* ]]
    # digits only, as every flag: a sign or a space is refused too
    for v in +1 ' 1' '1, 0' -0; do
        ATTN_GEMM_ALGO="$v" run "$ROOT/01_naive/run" --batch 1 --heads 2 --seq 64 --trace none --no-counters --no-timeline
        echo "$output"
        [ "$status" -eq 2 ]
        [[ "$output" == *"ATTN_GEMM_ALGO=$v: expected heuristic indices"* ]]
    done
}

# ---- counters (the counter pass, common/counters.c) -----------------------------------------
# S (and P) of 8x16x1024x64 in bf16 is 8*16*1024*1024*2 B = 256 MiB. The scores go to DRAM and
# back at least four times per forward (GEMM writes S, scale reads and writes, the copy, the fill,
# softmax reads and writes, GEMM reads P): DRAM read + written >= 4 x 256 MiB.
@test "01_naive default shape, counters: DRAM traffic >= 4 passes over S; achieved <= theoretical" {
    run_stage_profiled 01_naive
    printf '%s\n' "$output" | sed -n '/^Kernel details/,$p'
    [ "$status" -eq 0 ]
    local rd wr
    rd=$(field dram_read)
    wr=$(field dram_write)
    [[ "$rd" =~ ^[0-9]+$ ]]
    [[ "$wr" =~ ^[0-9]+$ ]]
    at_most "4 * 268435456" "$rd + $wr"
    assert_achieved_le_theoretical
    printf '%s\n' "$output" | grep -q '^Counters: one more forward under CUPTI'
}
