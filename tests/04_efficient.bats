#!/usr/bin/env bats
# 04_efficient: one tiled kernel on bf16 tensor cores (64 query rows × 64 keys per tile), two sweeps
# over K per query tile, S never in device memory. One kernel per step, no copies, no extra bytes.
load helpers

# The kernel for head_dim $1 (the name is the same mangled or demangled).
kernel_re() {
    printf 'fmha_fwd_bf16_64x64_causal_2pass_d%s_sm80' "$1"
}

# Every test needs a GPU but the refusals marked "(no GPU needed)": the harness checks the
# head_dim before it looks for a device.
setup() {
    case "$BATS_TEST_DESCRIPTION" in *"(no GPU needed)"*) ;; *) require_gpu ;; esac
}

# Every kernel event of the trace is our kernel for head_dim $1, and there is at least one.
assert_our_kernels() {
    local names
    names=$(trace_query "$TRACE" kernels)
    printf 'kernels:\n%s\n' "$names"
    [ "$(printf '%s\n' "$names" | grep -c .)" -ge 1 ]
    [ "$(printf '%s\n' "$names" | grep -cvE "$(kernel_re "$1")")" -eq 0 ]
}

# The facts every passing run must show: PASS under 1e-2, one kernel and no copy per step, no
# device memory beyond Q, K, V, O, a valid trace holding only our kernel.
assert_one_kernel_run() {
    local d=$1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 1 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = 0 ]
    trace_query "$TRACE" valid
    assert_our_kernels "$d"
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

# small_case SEQ HEAD_DIM: batch 1, heads 2, every query row checked (small_flags, tests/runs.bash).
small_case() { quick small_checks "$@"; }
small_checks() {
    # shellcheck disable=SC2046  # the run's words
    stage_result $(small_flags "$1" "$2")
    assert_one_kernel_run "$2"
    [ "$(field shape)" = "1x2x$1x$2" ]
}

@test "04_efficient seq 1 head_dim 64: PASS, one kernel" { small_case 1 64; }
@test "04_efficient seq 1 head_dim 128: PASS, one kernel" { small_case 1 128; }
@test "04_efficient seq 17 head_dim 64: PASS (partial tile)" { small_case 17 64; }
@test "04_efficient seq 17 head_dim 128: PASS (partial tile)" { small_case 17 128; }
@test "04_efficient seq 255 head_dim 64: PASS (4 tiles, last partial)" { small_case 255 64; }
@test "04_efficient seq 255 head_dim 128: PASS (4 tiles, last partial)" { small_case 255 128; }
@test "04_efficient seq 1000 head_dim 64: PASS" { small_case 1000 64; }
@test "04_efficient seq 1000 head_dim 128: PASS" { small_case 1000 128; }
@test "04_efficient seq 1024 head_dim 64: PASS (whole tiles)" { small_case 1024 64; }
@test "04_efficient seq 1024 head_dim 128: PASS (whole tiles)" { small_case 1024 128; }

@test "04_efficient seq 4096 head_dim 64: PASS on sampled rows" {
    stage_result 04_efficient --batch 2 --heads 4 --seq 4096 --head-dim 64
    assert_one_kernel_run 64
}

@test "04_efficient seq 4096 head_dim 128: PASS on sampled rows" {
    stage_result 04_efficient --batch 2 --heads 4 --seq 4096 --head-dim 128
    assert_one_kernel_run 128
}

@test "04_efficient default shape: one kernel per step, table header and footer" {
    stage_result 04_efficient
    assert_one_kernel_run 64
    [ "$(field shape)" = 8x16x1024x64 ]
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
    printf '%s\n' "$output" | grep -q 'Self CPU time total:'
    printf '%s\n' "$output" | grep -q 'Self CUDA time total:'
    printf '%s\n' "$output" | grep -qE "$(kernel_re 64)"
    # three active steps: three launches of the one kernel, each in its attn_fwd range
    [ "$(trace_query "$TRACE" kernels | grep -cE "$(kernel_re 64)")" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
    [ "$(trace_query "$TRACE" count gpu_memcpy)" -eq 0 ]
    [ "$(trace_query "$TRACE" count gpu_memset)" -eq 0 ]
}

@test "04_efficient is deterministic: two runs write the same O (o_hash)" {
    # A missing __syncthreads would read half-copied tiles: errors that change from run to run.
    # o_hash: FNV-1a 64 of all of O, so every row counts, bit for bit.
    stage_result 04_efficient --batch 2 --heads 4 --seq 1000 --head-dim 128 --check-rows all --trace none '#1'
    [ "$status" -eq 0 ]
    local first
    first=$(field o_hash)
    [[ "$first" =~ ^[0-9a-f]{16}$ ]]
    stage_result 04_efficient --batch 2 --heads 4 --seq 1000 --head-dim 128 --check-rows all --trace none '#2'
    [ "$status" -eq 0 ]
    [ "$(field o_hash)" = "$first" ]
}

@test "04_efficient: a NaN in one Q row reaches exactly that output row" {
    # Rows are independent (no row statistics shared across rows, padded rows never stored).
    stage_result 04_efficient --batch 1 --heads 2 --seq 255 --head-dim 64 --check-rows all --poison-q 70
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
}

@test "04_efficient --head-dim 96: exit 2 naming the supported head_dims (no GPU needed)" {
    run_stage 04_efficient --seq 64 --head-dim 96
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 96 is not supported by 04_efficient (supported: 64, 128)"* ]]
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 0 ]
    [ ! -e "$TRACE" ]
}
