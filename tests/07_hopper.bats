#!/usr/bin/env bats
# 07_hopper: FlashAttention-3's machinery by hand on sm_90a: TMA tile loads completing on
# mbarriers, wgmma (S = Q.K^T from shared memory, O += P.V with P from registers).
#
# Per step: one kernel, flash3_fwd_bf16_causal_<BLOCK_M>x<BLOCK_N>_d<head_dim>_r<rung>_sm90a, no
# copy, no memset, no device memory beyond Q, K, V, O; where the default rung (8 or 14) splits
# the keys of a small grid, that kernel and flash3_fwd_combine_bf16_d<head_dim>_r<rung>_sm90a, and its
# plan and partials as extra bytes. head_dim 64 and 128 only. The binary holds
# sm_90a code only, so every GPU test needs compute capability 9.0 (H100/H200) and skips elsewhere,
# with the reason; another GPU must refuse with exit 2 (tested where one is present).
load helpers

# The default rungs and their kernels (helpers.bash: flash3_default_rung, flash3_kernel; 64 query
# rows per consumer warpgroup, 128-key tiles): at head_dim 64 rung 14 (three consumer warpgroups,
# 192-row tiles) where batch x heads x its query tiles fill the SMs, else rung 8 (two, 128 rows);
# rung 14 at head_dim 128 (two, 128 rows). tests/07_ladder.bats runs every rung.
D64_KERNEL=$(flash3_kernel "$FLASH3_DEFAULT_D64" 64)
D128_KERNEL=$(flash3_kernel "$FLASH3_DEFAULT_D128" 128)

# Every test needs a Hopper GPU but those marked "(no GPU needed)" or "(non-Hopper GPU)".
setup() {
    case "$BATS_TEST_DESCRIPTION" in
        *"(no GPU needed)"* | *"(non-Hopper GPU)"*) ;;
        *) require_hopper ;;
    esac
}

# The lean runs of the tests below (tests/runs.bash), at once, before the first test.
setup_file() { prerun_suite; }

# assert_flash3_kernels HEAD_DIM [SPLIT [RUNG]]: the trace holds the 3 active steps' kernels: the
# rung's (default: flash3_default_rung HEAD_DIM) flash3 kernel each step, and (SPLIT given and 1) its
# combine kernel after each.
assert_flash3_kernels() {
    local names split=${2:-0} rung=${3:-$(flash3_default_rung "$1")}
    names=$(trace_query "$TRACE" kernels)
    printf 'kernels (rung %s):\n%s\n' "$rung" "$names"
    [ "$(printf '%s\n' "$names" | grep -c .)" -eq $((3 + 3 * split)) ]
    [ "$(printf '%s\n' "$names" | grep -c "^$(flash3_kernel "$rung" "$1")(")" -eq 3 ]
    [ "$(printf '%s\n' "$names" | grep -cE '^flash3_fwd_bf16_causal_[0-9]+x[0-9]+_d(64|128)_r[0-9]+_sm90a\(')" -eq 3 ]
    [ "$(printf '%s\n' "$names" | grep -c "^flash3_fwd_combine_bf16_d$1_r${rung}_sm90a(")" -eq $((3 * split)) ]
}

# splits BATCH HEADS SEQ SMS [BM]: 1 if the default rung splits the keys at that shape on SMS
# multiprocessors, else 0. The rule of 07_hopper/flash3_split.h, written out again: q query tiles
# of BM rows (128; 192 with three consumer warpgroups, shifted up by the largest multiple of 64 rows that the last
# would hang past seq: flash3_tile_m0), tile m reaching the key tiles of its last row, W key tiles
# of work (causal), an even share (W + one per tile) over the SMs; a split where the longest tile
# (n_max key tiles, + 1) is more than 5/4 of the share and chunks of ceil(W / SMs) key tiles shed
# at least 6 of its key tiles.
splits() {
    local bh=$(($1 * $2)) seq=$3 g=$4 bm=${5:-128}
    local q=$((($3 + bm - 1) / bm)) nk=$((($3 + 127) / 128)) shift=0 m keys w=0 nmax=0 share chunk
    [ "$bm" -eq 128 ] || shift=$(((bm * q - seq) / 64 * 64))
    for ((m = 0; m < q; m++)); do
        keys=$(((m * bm - shift + bm - 1) / 128 + 1))
        [ "$keys" -le "$nk" ] || keys=$nk
        w=$((w + keys))
        nmax=$keys
    done
    w=$((bh * w))
    share=$(((w + bh * q + g - 1) / g))
    chunk=$(((w + g - 1) / g))
    [ "$chunk" -ge 1 ] || chunk=1
    if [ $(((nmax + 1) * 4)) -gt $((share * 5)) ] && [ $((nmax - chunk)) -ge 6 ]; then echo 1; else echo 0; fi
}

# assert_kernels HEAD_DIM: assert_flash3_kernels (assert_one_kernel_shape's kernel check).
assert_kernels() { assert_flash3_kernels "$1"; }

# shape_case BATCH HEADS SEQ HEAD_DIM: every query row checked; no copy, a valid trace with the
# named kernel; where the default rung splits (splits, on the run's SM count) two kernels per step, the
# combine kernel in the trace and extra bytes, else one kernel and none.
shape_case() { quick assert_07_shape "$@"; }
assert_07_shape() {
    local split sms rung
    # shellcheck disable=SC2046  # the run's words
    stage_result $(shape_flags 07_hopper "$@")
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = "$1x$2x$3x$4" ]
    assert_rel_l2_le 1e-2
    sms=$(printf '%s\n' "$output" | sed -n 's/^device .*(\([0-9][0-9]*\) SMs, .*/\1/p' | head -n 1)
    [ -n "$sms" ]
    rung=$(flash3_default_rung "$4" "$1" "$2" "$3" "$sms")
    split=$(splits "$1" "$2" "$3" "$sms" "$(flash3_block_m "$rung" "$4")")
    echo "rung $rung, splits: $split ($sms SMs)"
    [ "$(field kernels_per_step)" = $((1 + split)) ]
    [ "$(field memcpy_per_step)" = 0 ]
    if [ "$split" = 1 ]; then [ "$(field extra_bytes)" -gt 0 ]; else [ "$(field extra_bytes)" = 0 ]; fi
    trace_query "$TRACE" valid
    assert_flash3_kernels "$4" "$split" "$rung"
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
}

# seq around the tile edges (64-row warpgroups, 128-key tiles, 128- or 192-row query tiles): one
# partial tile, a tile plus one row, 2 stages, an odd number of key tiles, 33 key tiles with a
# 1-row tail.
@test "07_hopper seq 1 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 1 64; }
@test "07_hopper seq 1 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 1 128; }
@test "07_hopper seq 17 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 17 64; }
@test "07_hopper seq 17 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 17 128; }
@test "07_hopper seq 63 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 63 64; }
@test "07_hopper seq 63 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 63 128; }
@test "07_hopper seq 65 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 65 64; }
@test "07_hopper seq 65 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 65 128; }
@test "07_hopper seq 127 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 127 64; }
@test "07_hopper seq 127 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 127 128; }
@test "07_hopper seq 129 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 129 64; }
@test "07_hopper seq 129 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 129 128; }
@test "07_hopper seq 191 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 191 64; }
@test "07_hopper seq 191 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 191 128; }
@test "07_hopper seq 193 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 193 64; }
@test "07_hopper seq 193 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 193 128; }
@test "07_hopper seq 255 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 3 255 64; }
@test "07_hopper seq 255 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 3 255 128; }
@test "07_hopper seq 1000 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 2 1000 64; }
@test "07_hopper seq 1000 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 2 1000 128; }
@test "07_hopper seq 1024 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 2 2 1024 64; }
@test "07_hopper seq 1024 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 2 2 1024 128; }
@test "07_hopper seq 4097 head_dim 64: PASS, one kernel (two where it splits)" { shape_case 1 1 4097 64; }
@test "07_hopper seq 4097 head_dim 128: PASS, one kernel (two where it splits)" { shape_case 1 1 4097 128; }

# The kernels' reduction order is fixed (no atomics; a split's combine in key order) and a missing wait on a
# barrier would show as run-to-run differences: three runs with the same seed print the same
# result (the O hash where the harness prints one, else the error figures to the last digit).
@test "07_hopper same seed, same result over three runs" {
    for d in 64 128; do
        local first="" this
        for i in 1 2 3; do
            stage_result 07_hopper --batch 2 --heads 2 --seq 1000 --head-dim "$d" --seed 7 --check-rows all --quiet "#$i"
            [ "$status" -eq 0 ]
            if [ -n "$(field o_hash)" ]; then
                this="o_hash=$(field o_hash)"
            else
                this="rel_l2=$(field rel_l2) max_abs=$(field max_abs)"
            fi
            echo "head_dim $d run $i: $this"
            [ -n "$this" ]
            if [ -z "$first" ]; then first=$this; fi
            [ "$this" = "$first" ]
        done
    done
}

@test "07_hopper default shape: one kernel, grid and block in the details, table and trace" {
    stage_result 07_hopper
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = 8x16x1024x64 ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 1 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = 0 ]
    trace_query "$TRACE" valid
    assert_flash3_kernels 64
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges flash3_attention_forward)" -eq 3 ]
    # persistent grid: min(SMs, 128 x 6 query tiles of 192 rows) = 132 blocks on the H100/H200
    # (132 SMs), 4 warpgroups (three consumers), opt-in dynamic shared memory:
    # 1024 (alignment) + 2 x Q 24576 + 2 x K 16384 + 3 x V 16384 + 14 mbarriers x 8 = 132208 B
    printf '%s\n' "$output" | grep -qE "^  $D64_KERNEL\(flash3_params\): grid \[132, 1, 1\], block \[512, 1, 1\], [0-9]+ registers/thread, shared memory 0 \+ 132208 B \(opt-in\)"
    # the table's Name column holds 55 characters: a longer name is cut to 52 and "..."
    local shown="${D64_KERNEL}(flash3_params)"
    shown="${shown:0:52}..."
    printf '%s\n' "$output" | grep -qE "^ *$(printf '%s' "$shown" | sed 's/[.()]/\\&/g')  "
    printf '%s\n' "$output" | grep -qE '^Self CPU time total: [0-9.]+(us|ms|s)$'
    printf '%s\n' "$output" | grep -qE '^Self CUDA time total: [0-9.]+(us|ms|s)$'
    [ "$(printf '%s\n' "$output" | grep -c '^result ')" -eq 1 ]
}

# On the H100/H200 (65536 registers per SM, 228 KiB of shared memory, 1 KiB of it reserved per
# block) the profiler reads the registers a kernel is launched with: the cap at entry that
# __launch_bounds__ gives, not what the warpgroups move to with setmaxnreg.
#   d64 (rung 14, 512 threads): 65536 / 512 = 128 (not the producer's 32 and the consumers' 160)
#       -> 1 block, 16 warps = 25%; 132208 B of shared memory allow 1 block too: limited by both.
#   d128 (rung 14, 384 threads): 65536 / 384 rounded down to a multiple of 8 = 168 (not 24 and
#       240) -> 1 block, 12 warps = 18.75%; 230512 B allow 1 block too: limited by both.
#   Kineto, which ignores the opt-in, says 0% for both.
# Both kernels run a persistent grid: min(132 SMs, 32 x 11 or 32 x 16 query tiles) = 132 blocks.
@test "07_hopper on compute capability 9.0: registers at entry, 1 block/SM, occupancy per head_dim" {
    local d64_re="^  $D64_KERNEL\(flash3_params\): grid \[132, 1, 1\], block \[512, 1, 1\], 128 registers/thread, shared memory 0 \+ 132208 B \(opt-in\), 1 block/SM \(16 warps\), occupancy 25\.00%, limited by registers \+ shared memory, Kineto: 0%, "
    local d128_re="^  $D128_KERNEL\(flash3_params\): grid \[132, 1, 1\], block \[384, 1, 1\], 168 registers/thread, shared memory 0 \+ 230512 B \(opt-in\), 1 block/SM \(12 warps\), occupancy 18\.75%, limited by registers \+ shared memory, Kineto: 0%, "
    for d in 64 128; do
        stage_result 07_hopper --batch 2 --heads 16 --seq 2048 --head-dim "$d"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" | grep -E "^  $(flash3_kernel "$(flash3_default_rung "$d")" "$d")\("
        if [ "$d" = 64 ]; then
            printf '%s\n' "$output" | grep -qE "$d64_re"
        else
            printf '%s\n' "$output" | grep -qE "$d128_re"
        fi
    done
}

@test "07_hopper 2x16x4096x128: PASS on sampled rows, the d128 kernel" {
    stage_result 07_hopper --batch 2 --heads 16 --seq 4096 --head-dim 128
    echo "$output" | tail -n 3
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 1 ]
    assert_flash3_kernels 128
}

# batch x heads indexes the kernels' work: above what an int holds the stage refuses, before the
# device (65535 x 32768 still fits, 65535 x 32769 does not).
@test "07_hopper batch x heads beyond an int: exit 2, one line (no GPU needed)" {
    run --separate-stderr "$ROOT/07_hopper/run" --batch 65535 --heads 32769 --seq 1 --validate
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ "$stderr" = "batch x heads = 2147516415 is more than 07_hopper indexes (at most 2147483647)" ]
    run "$ROOT/07_hopper/run" --batch 65535 --heads 32768 --seq 1 --validate
    [ "$status" -eq 0 ]
}

@test "07_hopper head_dim 96: exit 2, one line naming the supported head_dims (no GPU needed)" {
    run "$ROOT/07_hopper/run" --batch 1 --heads 1 --seq 64 --head-dim 96 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 96 is not supported by 07_hopper (supported: 64, 128)"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "07_hopper head_dim 256: exit 2, one line naming the supported head_dims (no GPU needed)" {
    run "$ROOT/07_hopper/run" --batch 1 --heads 1 --seq 64 --head-dim 256 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"head_dim 256 is not supported by 07_hopper (supported: 64, 128)"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "07_hopper on a GPU other than compute capability 9.0: exit 2, one line naming it (non-Hopper GPU)" {
    require_gpu
    local cc; cc=$(gpu_cc)
    [ "$cc" != "9.0" ] || skip "this GPU is compute capability 9.0: the refusal needs another GPU"
    run "$ROOT/07_hopper/run" --batch 1 --heads 1 --seq 64 --head-dim 64 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"07_hopper needs a Hopper GPU, compute capability 9.0"* ]]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}
