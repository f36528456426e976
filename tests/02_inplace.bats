#!/usr/bin/env bats
# 02_inplace: 01_naive with the mask applied in place (scores.masked_fill_(mask, -inf)): ATen no
# longer clones the scores, so the Memcpy DtoD is gone. Per step: 2 GEMM kernels + mul +
# masked-fill + softmax = 5 GPU activities, no copy. Same ops (common/eager/eager_ops.cu) as 01: the
# GEMMs take cuBLASLt's zero-workspace algorithms, so cuBLAS's 4-byte memset before S = Q·Kᵀ
# (PyTorch's extra activity on the H200) is gone too and no workspace is allocated; with
# ATTN_GEMM_WORKSPACE=1 it comes back (6 per step; tests/01_naive.bats checks that case).
load helpers

setup() {
    require_gpu
}

# The kernels and host ranges of 3 active steps: the eager stages' (assert_eager_kernels_and_ranges)
# and the lesson: no copy anywhere, masked_fill_ alone on the CPU lane.
assert_inplace_trace() {
    assert_eager_kernels_and_ranges
    [ "$(trace_query "$TRACE" count gpu_memcpy)" -eq 0 ]
    [ "$(trace_query "$TRACE" ranges masked_fill_)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges masked_fill)" -eq 0 ]
    [ "$(trace_query "$TRACE" ranges clone)" -eq 0 ]
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

@test "02_inplace small shape 1x2x77x64, every row checked: PASS, 5 activities, no copy" {
    stage_result 02_inplace --batch 1 --heads 2 --seq 77 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 5 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = "$(naive_extra_bytes 1 2 77)" ]
    assert_inplace_trace
}

@test "02_inplace default shape: tensor-core GEMMs, no Memcpy row, table and trace" {
    stage_result 02_inplace
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 5 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = "$(naive_extra_bytes 8 16 1024)" ]
    assert_inplace_trace
    [ "$(kcount "$TC_GEMM_RE")" -eq 6 ]
    [ "$(kcount 'ffma|sgemm')" -eq 0 ]
    printf '%s\n' "$output" | grep -qE '^ +Name +Self CPU % +Self CPU +CPU total % +CPU total +CPU time avg +Self CUDA +Self CUDA % +CUDA total +CUDA time avg +# of Calls'
    [ "$(printf '%s\n' "$output" | grep -c 'Memcpy DtoD')" -eq 0 ]
    # the zero-workspace GEMMs: no cuBLAS memset either
    [ "$(printf '%s\n' "$output" | grep -c 'Memset (Device)')" -eq 0 ]
    [ "$(trace_query "$TRACE" count gpu_memset)" -eq 0 ]
    printf '%s\n' "$output" | grep -qE '^Self CPU time total: [0-9.]+(us|ms|s)$'
    printf '%s\n' "$output" | grep -qE '^Self CUDA time total: [0-9.]+(us|ms|s)$'
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
}

@test "02_inplace odd shapes (seq 1, 17 with head_dim 128, 1000): PASS" {
    for shape in "2 3 1 64" "2 3 17 128" "1 2 1000 64"; do
        set -- $shape
        stage_result 02_inplace --batch "$1" --heads "$2" --seq "$3" --head-dim "$4" --check-rows all
        echo "$shape: $output" | tail -n 1
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        assert_rel_l2_le 1e-2
        [ "$(field memcpy_per_step)" = 0 ]
    done
}

@test "02_inplace --poison-q: the NaN stays in its own output row" {
    stage_result 02_inplace --batch 1 --heads 2 --seq 77 --poison-q 76 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
}

@test "02_inplace computes what 01_naive computes, bit for bit (same ops, one copy fewer)" {
    # o_hash: FNV-1a 64 of all of O: the same bits, not only the same rounded errors.
    run_stage 01_naive --batch 2 --heads 2 --seq 100 --check-rows all --quiet
    [ "$status" -eq 0 ]
    local naive_hash
    naive_hash=$(field o_hash)
    [[ "$naive_hash" =~ ^[0-9a-f]{16}$ ]]
    run_stage 02_inplace --batch 2 --heads 2 --seq 100 --check-rows all --quiet
    [ "$status" -eq 0 ]
    echo "01: o_hash $naive_hash  02: o_hash $(field o_hash)"
    [ "$(field o_hash)" = "$naive_hash" ]
}
