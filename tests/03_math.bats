#!/usr/bin/env bats
# 03_math: PyTorch's SDPA math backend rebuilt: Q, K, V upcast to FP32, sqrt(scale) on Q and on K,
# the causal mask rebuilt on every call (ones, tril, two 0-d fills, where -> additive bias), FP32
# cuBLAS SGEMMs on CUDA cores (no TF32: FFMA kernels), bias add, FP32 softmax, the NaN-safe guard
# (isneginf, all, fill, where), the attention weights and O cast back to bf16.
# 20 GPU activities per step, no copy (the list is in 03_math/math.cu and its README).
load helpers

GEMM_RE='nvjet|gemm|Gemm'
# Anything that would mean tensor cores: TF32, bf16/fp16 MMA, Hopper nvjet.
TC_RE='nvjet|tf32|bf16|s16816|h16816|hmma|tensorop|f16f16'

setup() {
    require_gpu
}

kcount() {
    trace_query "$TRACE" kernels | grep -cE "$1" || true
}

# The 20 kernels of each of the 3 active steps, by role, and the CPU lane's op names.
assert_math_trace() {
    trace_query "$TRACE" valid
    trace_query "$TRACE" kernels
    [ "$(trace_query "$TRACE" kernels | grep -c .)" -eq 60 ]
    [ "$(kcount 'to_f32_kernel')" -eq 9 ]
    [ "$(kcount 'mul_f32_kernel')" -eq 6 ]
    [ "$(kcount 'fill_bool_kernel')" -eq 3 ]
    [ "$(kcount 'tril_bool_kernel')" -eq 3 ]
    [ "$(kcount 'fill_f32_kernel')" -eq 9 ]
    [ "$(kcount 'where_scalar_f32_kernel')" -eq 3 ]
    [ "$(kcount "$GEMM_RE")" -eq 6 ]
    [ "$(kcount 'add_bias_f32_kernel')" -eq 3 ]
    [ "$(kcount 'softmax_rows_f32_kernel')" -eq 3 ]
    [ "$(kcount 'isneginf_f32_kernel')" -eq 3 ]
    [ "$(kcount 'all_rows_kernel')" -eq 3 ]
    [ "$(kcount 'where_rows_f32_kernel')" -eq 3 ]
    [ "$(kcount 'to_bf16_kernel')" -eq 6 ]
    # FP32 GEMMs on CUDA cores only
    [ "$(trace_query "$TRACE" kernels | grep -E "$GEMM_RE" | grep -cE "$TC_RE" || true)" -eq 0 ]
    [ "$(trace_query "$TRACE" count gpu_memcpy)" -eq 0 ]
    [ "$(trace_query "$TRACE" flows)" -ge 60 ]
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges _scaled_dot_product_attention_math)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges _to_copy)" -eq 15 ]
    [ "$(trace_query "$TRACE" ranges mul)" -eq 6 ]
    [ "$(trace_query "$TRACE" ranges ones)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges tril)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges scalar_tensor)" -eq 9 ]
    [ "$(trace_query "$TRACE" ranges where)" -eq 6 ]
    [ "$(trace_query "$TRACE" ranges matmul)" -eq 6 ]
    [ "$(trace_query "$TRACE" ranges add_)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges _safe_softmax)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges _softmax)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges isneginf)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges all)" -eq 3 ]
}

# extra_bytes: Q, K, V, O in FP32; ones, tril (bool) and the FP32 bias [seq, seq]; three 0-d
# tensors (16 bytes); S and P in FP32; isneginf (bool [b, h, s, s]); the all-masked rows (bool
# [b, h, s]); the 32 MiB cuBLAS workspace.
math_extra_bytes() {
    local b=$1 h=$2 s=$3 d=$4
    echo $(( 4 * b * h * s * d * 4 + 2 * s * s + 4 * s * s + 16 + 2 * b * h * s * s * 4 \
             + b * h * s * s + b * h * s + 33554432 ))
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

@test "03_math small shape 1x2x77x64, every row checked: PASS under 4e-3, 20 activities" {
    stage_result 03_math --batch 1 --heads 2 --seq 77 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 4e-3
    [ "$(field kernels_per_step)" = 20 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = "$(math_extra_bytes 1 2 77 64)" ]
    assert_math_trace
}

@test "03_math default shape: FFMA SGEMMs, mask kernels every step, table and trace" {
    stage_result 03_math
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    assert_rel_l2_le 4e-3
    [ "$(field kernels_per_step)" = 20 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = "$(math_extra_bytes 8 16 1024 64)" ]
    assert_math_trace
    # both GEMMs are cuBLAS's FP32 FFMA (CUDA-core) kernels
    [ "$(trace_query "$TRACE" kernels | grep -E "$GEMM_RE" | grep -c 'ffma')" -eq 6 ]
    printf '%s\n' "$output" | grep -qE '^ +Name +Self CPU % +Self CPU +CPU total % +CPU total +CPU time avg +Self CUDA +Self CUDA % +CUDA total +CUDA time avg +# of Calls'
    [ "$(printf '%s\n' "$output" | grep -c 'Memcpy DtoD')" -eq 0 ]
    printf '%s\n' "$output" | grep -qE '^Self CPU time total: [0-9.]+(us|ms|s)$'
    printf '%s\n' "$output" | grep -qE '^Self CUDA time total: [0-9.]+(us|ms|s)$'
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
}

@test "03_math odd shapes (seq 1, 17 with head_dim 128, 1000): PASS under 4e-3" {
    for shape in "2 3 1 64" "2 3 17 128" "1 2 1000 64"; do
        set -- $shape
        stage_result 03_math --batch "$1" --heads "$2" --seq "$3" --head-dim "$4" --check-rows all
        echo "$shape: $output" | tail -n 1
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        assert_rel_l2_le 4e-3
        [ "$(field memcpy_per_step)" = 0 ]
    done
}

@test "03_math --poison-q: the NaN passes the safe softmax and stays in its own row" {
    stage_result 03_math --batch 1 --heads 2 --seq 77 --poison-q 0 --check-rows all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
}

@test "03_math is FP32 on CUDA cores: more than 1.5x the GPU time of 02_inplace at the blog's shape" {
    run_stage 02_inplace --quiet
    [ "$status" -eq 0 ]
    local inplace; inplace=$(field gpu_us)
    run_stage 03_math --quiet
    [ "$status" -eq 0 ]
    echo "gpu_us 02_inplace $inplace, 03_math $(field gpu_us)"
    python3 -c "import sys; sys.exit(0 if float('$(field gpu_us)') > 1.5 * float('$inplace') else 1)"
}
