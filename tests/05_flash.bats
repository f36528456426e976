#!/usr/bin/env bats
# 05_flash: one kernel, one sweep over K and V; the online softmax rescales the output
# accumulator (FlashAttention-2's work split, mma.sync m16n8k16, ldmatrix, cp.async).
#
# Per step: exactly one kernel, flash_fwd_bf16_causal_<BLOCK_M>x<BLOCK_N>_d<head_dim>_sm80, no
# copy, no memset, no device memory beyond Q, K, V, O. head_dim 64 and 128 only.
load helpers

# The kernel of each head_dim, with its tile shape (05_flash/flash.cu, FLASH_D*_BLOCK_*).
D64_KERNEL='flash_fwd_bf16_causal_128x64_d64_sm80'
D128_KERNEL='flash_fwd_bf16_causal_128x48_d128_sm80'

# Every test needs a GPU but the refusals marked "(no GPU needed)": the harness checks the
# head_dim before it looks for a device.
setup() {
    case "$BATS_TEST_DESCRIPTION" in *"(no GPU needed)"*) ;; *) require_gpu ;; esac
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

kernel_for() {
    if [ "$1" = 64 ]; then echo "$D64_KERNEL"; else echo "$D128_KERNEL"; fi
}

# The trace holds the 3 active steps' kernels, all of them this head_dim's flash kernel.
assert_flash_kernels() {
    local names
    names=$(trace_query "$TRACE" kernels)
    printf 'kernels:\n%s\n' "$names"
    [ "$(printf '%s\n' "$names" | grep -c .)" -eq 3 ]
    [ "$(printf '%s\n' "$names" | grep -c "^$(kernel_for "$1")(")" -eq 3 ]
    [ "$(trace_query "$TRACE" launch-apis | grep -c '^cudaLaunchKernel$')" -eq 3 ]
}

# assert_kernels HEAD_DIM: assert_flash_kernels (assert_one_kernel_shape's kernel check).
assert_kernels() { assert_flash_kernels "$1"; }

# shape_case BATCH HEADS SEQ HEAD_DIM: every query row checked; one kernel per step, no copy,
# no extra bytes, a valid trace with the named kernel (assert_one_kernel_shape).
shape_case() { quick assert_one_kernel_shape 05_flash "$@"; }

@test "05_flash seq 1 head_dim 64: PASS, one kernel" { shape_case 2 3 1 64; }
@test "05_flash seq 1 head_dim 128: PASS, one kernel" { shape_case 2 3 1 128; }
@test "05_flash seq 17 head_dim 64: PASS, one kernel" { shape_case 2 3 17 64; }
@test "05_flash seq 17 head_dim 128: PASS, one kernel" { shape_case 2 3 17 128; }
@test "05_flash seq 255 head_dim 64: PASS, one kernel" { shape_case 2 3 255 64; }
@test "05_flash seq 255 head_dim 128: PASS, one kernel" { shape_case 2 3 255 128; }
@test "05_flash seq 1000 head_dim 64: PASS, one kernel" { shape_case 2 2 1000 64; }
@test "05_flash seq 1000 head_dim 128: PASS, one kernel" { shape_case 2 2 1000 128; }
@test "05_flash seq 1024 head_dim 64: PASS, one kernel" { shape_case 2 2 1024 64; }
@test "05_flash seq 1024 head_dim 128: PASS, one kernel" { shape_case 2 2 1024 128; }
@test "05_flash seq 4096 head_dim 64: PASS, one kernel" { shape_case 1 1 4096 64; }
@test "05_flash seq 4096 head_dim 128: PASS, one kernel" { shape_case 1 1 4096 128; }

# The kernel's reduction order is fixed (no atomics, no split over keys), and a missing barrier
# would show as run-to-run differences: two runs with the same seed write the same O, bit for bit
# (o_hash: FNV-1a 64 of all of O, every row, not only the checked ones).
@test "05_flash same seed, same result: O identical over two runs (o_hash)" {
    for d in 64 128; do
        stage_result 05_flash --batch 2 --heads 2 --seq 1000 --head-dim "$d" --seed 7 --check-rows all --quiet '#1'
        [ "$status" -eq 0 ]
        local hash1
        hash1=$(field o_hash)
        stage_result 05_flash --batch 2 --heads 2 --seq 1000 --head-dim "$d" --seed 7 --check-rows all --quiet '#2'
        [ "$status" -eq 0 ]
        echo "head_dim $d: o_hash $hash1 vs $(field o_hash)"
        [[ "$hash1" =~ ^[0-9a-f]{16}$ ]]
        [ "$hash1" = "$(field o_hash)" ]
    done
}

@test "05_flash --poison-q: the NaN stays in its own output row" {
    for d in 64 128; do
        stage_result 05_flash --batch 1 --heads 2 --seq 77 --head-dim "$d" --poison-q 5 --check-rows all
        echo "$output" | tail -n 1
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
    done
}

@test "05_flash head_dim 96: exit 2, one line naming the supported head_dims (no GPU needed)" {
    run "$ROOT/05_flash/run" --batch 1 --heads 1 --seq 64 --head-dim 96 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 96 is not supported by 05_flash (supported: 64, 128)"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "05_flash default shape: one kernel, grid and block in the details, table and trace" {
    stage_result 05_flash
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    assert_rel_l2_le 1e-2
    # the check line names the worst element and its bf16 bound; err_ratio is |err| / bound
    printf '%s\n' "$output" | grep -qE '^check: PASS on 256 of 131072 query rows against the float64 reference: rel_l2=[0-9.e+-]+ \(bound 1\.0e-02\), max_abs=[0-9.e+-]+; worst element \(batch, head, row, col\) = \([0-9]+, [0-9]+, [0-9]+, [0-9]+\): got [-0-9.e+]+, want [-0-9.e+]+, \|err\| [0-9.e+-]+ <= bound [0-9.e+-]+ \([0-9.]+ of it\); 0 elements over their bound$'
    num_le "$(field err_ratio)" 1.0
    [[ "$(field o_hash)" =~ ^[0-9a-f]{16}$ ]]
    [ "$(field kernels_per_step)" = 1 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = 0 ]
    trace_query "$TRACE" valid
    assert_flash_kernels 64
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges _flash_attention_forward)" -eq 3 ]
    # grid (batch*heads, query tiles of 128 rows), 4 warps, 48 KiB of dynamic shared memory
    printf '%s\n' "$output" | grep -qE "^  $D64_KERNEL\(flash_params\): grid \[128, 8, 1\], block \[128, 1, 1\], [0-9]+ registers/thread, shared memory 0 \+ 49152 B"
    # the table: its row for the kernel, both footer lines, one summary line
    printf '%s\n' "$output" | grep -qE "^ +$D64_KERNEL\(flash_params\) "
    printf '%s\n' "$output" | grep -qE '^Self CPU time total: [0-9.]+(us|ms|s)$'
    printf '%s\n' "$output" | grep -qE '^Self CUDA time total: [0-9.]+(us|ms|s)$'
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
}

# On the H100/H200 (65536 registers and 228 KiB of shared memory per SM, 1 KiB of it reserved per
# block), 128 threads per block:
#   d64:  232 registers -> 2 blocks; 48 KiB (49152 B) of shared memory -> 4 blocks: limited by
#         registers.
#   d128: 255 registers -> 2 blocks; 80 KiB (81920 B, opt-in above 48 KiB) -> 2 blocks: limited by
#         registers and shared memory at once; Kineto, which ignores the opt-in, estimates 0%.
# Either way 8 warps of 64 = 12.5%, the occupancy FlashAttention-2 runs at.
@test "05_flash on compute capability 9.0: 2 blocks/SM, 12.50%, limiter per head_dim" {
    local cc
    cc=$(gpu_cc)
    [ "$cc" = "9.0" ] || skip "occupancy numbers are for compute capability 9.0 (this GPU: $cc)"
    local details="grid \[32, 16, 1\], block \[128, 1, 1\]"
    local d64_re="^  $D64_KERNEL\(flash_params\): $details, 232 registers/thread, shared memory 0 \+ 49152 B, 2 blocks/SM \(8 warps\), occupancy 12\.50%, limited by registers, "
    local d128_re="^  $D128_KERNEL\(flash_params\): $details, 255 registers/thread, shared memory 0 \+ 81920 B \(opt-in\), 2 blocks/SM \(8 warps\), occupancy 12\.50%, limited by registers \+ shared memory, Kineto: 0%, "
    for d in 64 128; do
        stage_result 05_flash --batch 2 --heads 16 --seq 2048 --head-dim "$d"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" | grep -E "^  $(kernel_for "$d")\("
        if [ "$d" = 64 ]; then
            printf '%s\n' "$output" | grep -qE "$d64_re"
        else
            printf '%s\n' "$output" | grep -qE "$d128_re"
        fi
    done
}

@test "05_flash 2x16x4096x128: PASS on sampled rows, the d128 kernel" {
    stage_result 05_flash --batch 2 --heads 16 --seq 4096 --head-dim 128
    echo "$output" | tail -n 3
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 1 ]
    assert_flash_kernels 128
}

# ---- counters (the counter pass, common/counters.c) -----------------------------------------
# Q, K and V of 8x16x1024x64 in bf16: 3 x 16 MiB.
QKV_BYTES=$((3 * 8 * 16 * 1024 * 64 * 2))

@test "05_flash default shape, counters: DRAM reads within 1.5 x Q+K+V, HMMA and no GMMA, achieved <= theoretical" {
    run_stage_profiled 05_flash
    printf '%s\n' "$output" | sed -n '/^Kernel details/,$p'
    [ "$status" -eq 0 ]
    local rd hmma gmma
    rd=$(field dram_read)
    [[ "$rd" =~ ^[0-9]+$ ]]
    [[ "$(field dram_write)" =~ ^[0-9]+$ ]]
    at_most "$rd" "1.5 * $QKV_BYTES"
    hmma=$(trace_query "$TRACE" counter "^$D64_KERNEL" sm__inst_executed_pipe_tensor_op_hmma.sum | head -n 1)
    gmma=$(trace_query "$TRACE" counter "^$D64_KERNEL" sm__inst_executed_pipe_tensor_op_gmma.sum | head -n 1)
    echo "HMMA-class $hmma, GMMA $gmma"
    at_most 1 "$hmma"
    [ "$gmma" = 0 ]
    assert_achieved_le_theoretical
    printf '%s\n' "$output" | grep -qE '^    counters: DRAM read .* tensor instructions [0-9,]+ HMMA-class / 0 GMMA: mma\.sync \(HMMA\)$'
    [ "$(trace_query "$TRACE" count cuda_profiler_range)" -eq 3 ]
    [ "$(trace_query "$TRACE" profiler-steps | tr '\n' ' ')" = "ProfilerStep#2 ProfilerStep#3 ProfilerStep#4 " ]
    printf '%s\n' "$output" | grep -qE '^ +ProfilerStep\* '
}

# The counter pass runs after the timing: gpu_us with it and with --no-counters agree within
# 10% (two medians of 10 batches of 20 forwards each; the run-to-run spread is a few %).
@test "05_flash: the counter pass leaves gpu_us within noise of a run with --no-counters" {
    run_stage_profiled 05_flash --quiet
    [ "$status" -eq 0 ]
    local with without
    with=$(field gpu_us)
    [[ "$(field dram_read)" =~ ^[0-9]+$ ]]
    run_stage_profiled 05_flash --quiet --no-counters
    [ "$status" -eq 0 ]
    without=$(field gpu_us)
    [ "$(field dram_read)" = "-" ]
    [ "$(field dram_write)" = "-" ]
    echo "gpu_us with counters $with, without $without"
    at_most "abs($with - $without)" "0.10 * $without"
}

# Under Nsight Compute our profiler steps aside (one stderr line), the check and the forwards
# run, exit 0, and ncu profiles the kernel.
@test "05_flash under ncu: exit 0, ncu reports the kernel, our profiler is off" {
    local ncu
    ncu=$(find_tool ncu)
    [ -n "$ncu" ] || skip "ncu (Nsight Compute) not found"
    run timeout 300 "$ncu" --clock-control none -k regex:flash_fwd -c 1 "$ROOT/05_flash/run" --steps 1 --trace none
    printf '%s\n' "$output" | head -n 40
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -q "$D64_KERNEL"
    printf '%s\n' "$output" | grep -q '^profiler: CUPTI is in use by '
    [ "$(field check)" = PASS ]
    [ "$(field kernels_per_step)" = off ]
    [ "$(field dram_read)" = off ]
    [ "$(field trace)" = none ]
}

@test "05_flash under nsys: exit 0, nsys sees the kernel and our NVTX ranges" {
    local nsys
    nsys=$(find_tool nsys)
    [ -n "$nsys" ] || skip "nsys (Nsight Systems) not found"
    run timeout 300 "$nsys" profile --trace cuda,nvtx --force-overwrite true -o "$BATS_TEST_TMPDIR/r" "$ROOT/05_flash/run" --steps 1 --trace none
    printf '%s\n' "$output" | tail -n 20
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -q '^profiler: CUPTI is in use by '
    [ "$(field check)" = PASS ]
    run "$nsys" stats --report cuda_gpu_kern_sum,nvtx_sum "$BATS_TEST_TMPDIR/r.nsys-rep"
    printf '%s\n' "$output" | grep -E "flash_fwd|attn_fwd|_flash_attention_forward"
    printf '%s\n' "$output" | grep -q "$D64_KERNEL"
    printf '%s\n' "$output" | grep -q 'attn_fwd'
}
