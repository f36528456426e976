#!/usr/bin/env bats
# 07_hopper's ladder: every rung (./07_hopper/run --rung N) is its own kernel,
# flash3_fwd_bf16_causal_<BLOCK_M>x128_d<head_dim>_r<N>_sm90a (BLOCK_M 128; 192 on rung 10 and on rungs 11-14
# at head_dim 64), and must pass what the chapter's kernel
# passes: every query row of the odd sequence lengths at both head_dims it runs, one kernel per
# step, no extra device memory, the same O bits over repeated runs. GPU tests need compute
# capability 9.0 (the binary is sm_90a only) and skip elsewhere with the reason; the tests marked
# "(no GPU needed)" run anywhere.
load helpers

setup() {
    case "$BATS_TEST_DESCRIPTION" in *"(no GPU needed)"*) ;; *) require_hopper ;; esac
}

# Dynamic shared memory of a rung's block (07_hopper/flash3.cuh, H3_SMEM_BYTES): 1024 (alignment)
# + QB x Q (128 rows) + 2 stages x (K + V) (128 rows) + mbarriers (9 with one Q buffer, 12 with two).
#   one Q buffer (rungs 1-2):  d64 1024 + 16384 + 65536 + 72 = 83016,  d128 1024 + 32768 + 131072 + 72 = 164936
#   two Q buffers (rungs 3-9): d64 1024 + 32768 + 65536 + 96 = 99424,  d128 1024 + 65536 + 131072 + 96 = 197728
#   (rungs 6-10 store O from the Q buffer it was staged in: no shared memory of their own)
#   rungs 10-13 (192-row Q tiles, two buffers), d64: 1024 + 49152 + 65536 + 96 = 115808
#   rungs 11-13 at d128 (128-row Q tiles, two buffers): as rungs 3-9, 197728
#   rung 14 (three V stages: 2 K + 3 V tiles, 14 mbarriers): d64 1024 + 49152 + 81920 + 112 =
#   132208, d128 1024 + 65536 + 163840 + 112 = 230512
#   rung 15 (head_dim 128 only, clusters of two): as rung 14's, 230512
smem_of() {
    case "$1:$2" in
        1:64 | 2:64) echo 83016 ;;
        1:128 | 2:128) echo 164936 ;;
        3:64 | 4:64 | 5:64 | 6:64 | 7:64 | 8:64 | 9:64) echo 99424 ;;
        3:128 | 5:128 | 6:128 | 7:128 | 8:128 | 9:128 | 11:128 | 12:128 | 13:128) echo 197728 ;;
        10:64 | 11:64 | 12:64 | 13:64) echo 115808 ;;
        14:64) echo 132208 ;;
        14:128 | 15:128) echo 230512 ;;
    esac
}

# The kernel details line of the run: exactly one, the rung's kernel.
assert_rung_kernel() {
    local bm k; bm=$(flash3_block_m "$1" "$2") k=$(flash3_kernel "$1" "$2")
    [ "$(printf '%s\n' "$output" | grep -cE '^  flash3_[a-z0-9_]+\(flash3_params\): grid ')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -cE "^  $k\(flash3_params\): grid \[[0-9]+, [0-9]+, 1\], block \[$((128 + 2 * bm)), 1, 1\], [0-9]+ registers/thread, shared memory 0 \+ $(smem_of "$1" "$2") B \(opt-in\)")" -eq 1 ]
}

# The lean runs of the rung_case tests (rung_cases and rung_flags, tests/runs.bash), at once,
# before the first test (on a Hopper GPU).
setup_file() { prerun_suite; }

# rung_result CASE: status, output and lines of that run (rung_cases' form).
rung_result() {
    # shellcheck disable=SC2046  # the run's words
    stage_result $(rung_flags $1)
}

# The device's SM count, from the device line of the run in $output.
sm_count() {
    printf '%s\n' "$output" | sed -n 's/^device .*(\([0-9][0-9]*\) SMs, .*/\1/p' | head -n 1
}

# combine_lines HEAD_DIM [RUNG]: the combine kernel's details lines of rung 8 (or RUNG) where it
# split the keys: its grid is (split tiles, BLOCK_M / rows per block), 256 threads.
combine_lines() {
    printf '%s\n' "$output" | grep -cE "^  flash3_fwd_combine_bf16_d$1_r${2:-8}_sm90a\(flash3_combine_params\): grid \[[0-9]+, $(($(flash3_block_m "${2:-8}" "$1") / (256 / ($1 / 8)))), 1\], block \[256, 1, 1\], "
}

# rung_case RUNG HEAD_DIM: every run of rung_cases PASSes with one rung kernel per step, no copy,
# no extra bytes (rungs 8-9: where its details show the combine kernel, two kernels per step and
# extra bytes for its plan and partials; else one and none); the repeat has the same o_hash as the first seq-1000 run (the kernel's reduction
# order is fixed, so a missing wait or a stage released early shows as a difference). Every case
# is checked and each failure listed. The o_hash is kept for the cross-rung test below.
rung_case() { quick rung_checks "$@"; }
rung_checks() {
    local r=$1 d=$2 c first="" this
    FAILS=()
    while read -r c; do
        rung_result "$c"
        echo "rung $r: $c: $(printf '%s\n' "$output" | tail -n 1)"
        expect "$c: exit $status" [ "$status" -eq 0 ]
        case "$c" in *" --quiet") this=$(field o_hash); continue ;; esac
        expect "$c: check=$(field check)" [ "$(field check)" = PASS ]
        expect "$c: rel_l2=$(field rel_l2) over 1e-2" assert_rel_l2_le 1e-2
        expect "$c: memcpy_per_step=$(field memcpy_per_step)" [ "$(field memcpy_per_step)" = 0 ]
        if [ "$r" -ge 8 ] && [ "$(combine_lines "$d" "$r")" = 1 ]; then
            expect "$c: kernels_per_step=$(field kernels_per_step) with a split" [ "$(field kernels_per_step)" = 2 ]
            expect "$c: extra_bytes=$(field extra_bytes) with a split" [ "$(field extra_bytes)" -gt 0 ]
        else
            expect "$c: kernels_per_step=$(field kernels_per_step)" [ "$(field kernels_per_step)" = 1 ]
            expect "$c: extra_bytes=$(field extra_bytes)" [ "$(field extra_bytes)" = 0 ]
            expect "$c: a combine kernel line" [ "$(combine_lines "$d" "$r")" = 0 ]
        fi
        expect "$c: not one r$r kernel line" assert_rung_kernel "$r" "$d"
        case "$c" in *" 1000 $d "*) first=$(field o_hash) ;; esac
    done < <(rung_cases "$r" "$d")
    echo "rung $r head_dim $d again: o_hash=$this (first $first)"
    expect "no o_hash at seq 1000" [ -n "$first" ]
    expect "the repeat's o_hash $this is not $first" [ "$this" = "$first" ]
    report_fails
    echo "$first" > "$BATS_FILE_TMPDIR/o_hash.r$r.d$d"
}

@test "07 ladder rung 1 head_dim 64: every odd seq PASS, one r1 kernel, same o_hash" { rung_case 1 64; }
@test "07 ladder rung 1 head_dim 128: every odd seq PASS, one r1 kernel, same o_hash" { rung_case 1 128; }
@test "07 ladder rung 2 head_dim 64: every odd seq PASS, one r2 kernel, same o_hash" { rung_case 2 64; }
@test "07 ladder rung 2 head_dim 128: every odd seq PASS, one r2 kernel, same o_hash" { rung_case 2 128; }
@test "07 ladder rung 3 head_dim 64: every odd seq PASS, one r3 kernel, same o_hash" { rung_case 3 64; }
@test "07 ladder rung 3 head_dim 128: every odd seq PASS, one r3 kernel, same o_hash" { rung_case 3 128; }
@test "07 ladder rung 4 head_dim 64: every odd seq PASS, one r4 kernel, same o_hash" { rung_case 4 64; }
@test "07 ladder rung 5 head_dim 64: every odd seq PASS, one r5 kernel, same o_hash" { rung_case 5 64; }
@test "07 ladder rung 5 head_dim 128: every odd seq PASS, one r5 kernel, same o_hash" { rung_case 5 128; }
@test "07 ladder rung 6 head_dim 64: every odd seq PASS, one r6 kernel, same o_hash" { rung_case 6 64; }
@test "07 ladder rung 6 head_dim 128: every odd seq PASS, one r6 kernel, same o_hash" { rung_case 6 128; }
@test "07 ladder rung 7 head_dim 64: every odd seq PASS, one r7 kernel, same o_hash" { rung_case 7 64; }
@test "07 ladder rung 7 head_dim 128: every odd seq PASS, one r7 kernel, same o_hash" { rung_case 7 128; }
@test "07 ladder rung 8 head_dim 64: every odd seq PASS, one r8 kernel (+ combine where split), same o_hash" { rung_case 8 64; }
@test "07 ladder rung 8 head_dim 128: every odd seq PASS, one r8 kernel (+ combine where split), same o_hash" { rung_case 8 128; }
@test "07 ladder rung 9 head_dim 64: every odd seq PASS, one r9 kernel (+ combine where split), same o_hash" { rung_case 9 64; }
@test "07 ladder rung 9 head_dim 128: every odd seq PASS, one r9 kernel (+ combine where split), same o_hash" { rung_case 9 128; }
@test "07 ladder rung 10 head_dim 64: every odd seq PASS, one r10 kernel (+ combine where split), same o_hash" { rung_case 10 64; }
@test "07 ladder rung 11 head_dim 64: every odd seq PASS, one r11 kernel (+ combine where split), same o_hash" { rung_case 11 64; }
@test "07 ladder rung 11 head_dim 128: every odd seq PASS, one r11 kernel (+ combine where split), same o_hash" { rung_case 11 128; }
@test "07 ladder rung 12 head_dim 64: every odd seq PASS, one r12 kernel (+ combine where split), same o_hash" { rung_case 12 64; }
@test "07 ladder rung 12 head_dim 128: every odd seq PASS, one r12 kernel (+ combine where split), same o_hash" { rung_case 12 128; }
@test "07 ladder rung 13 head_dim 64: every odd seq PASS, one r13 kernel (+ combine where split), same o_hash" { rung_case 13 64; }
@test "07 ladder rung 13 head_dim 128: every odd seq PASS, one r13 kernel (+ combine where split), same o_hash" { rung_case 13 128; }
@test "07 ladder rung 14 head_dim 64: every odd seq PASS, one r14 kernel (+ combine where split), same o_hash" { rung_case 14 64; }
@test "07 ladder rung 14 head_dim 128: every odd seq PASS, one r14 kernel (+ combine where split), same o_hash" { rung_case 14 128; }
@test "07 ladder rung 15 head_dim 128: every odd seq PASS, one r15 kernel (no split), same o_hash" { rung_case 15 128; }

# Rung 8 splits the keys where the tiles are few against the SMs (flash3_split.h; the plans are
# checked on the CPU below): at 2x3x1000 (48 tiles) chunks of 2 key tiles where the device has
# 132 SMs, 36 split tiles to combine; at seq 65 (6 tiles of one key tile each) nothing to split.
@test "07 ladder rung 8: a split at 2x3x1000, two kernels and its workspace; none at 2x3x65" {
    local d
    for d in 64 128; do
        rung_result "8 2 3 1000 $d --check-rows all --seed 7"
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        [ "$(field kernels_per_step)" = 2 ]
        [ "$(combine_lines "$d")" = 1 ]
        [ "$(field extra_bytes)" -gt 0 ]
        rung_result "8 2 3 65 $d --check-rows all --seed 7"
        [ "$status" -eq 0 ]
        [ "$(field kernels_per_step)" = 1 ]
        [ "$(field extra_bytes)" = 0 ]
    done
    if [ "$(sm_count)" = 132 ]; then
        rung_result "8 2 3 1000 64 --check-rows all --seed 7"
        printf '%s\n' "$output" | grep -qE "^  flash3_fwd_bf16_causal_128x128_d64_r8_sm90a\(flash3_params\): grid \[120, 1, 1\], "
        printf '%s\n' "$output" | grep -qE "^  flash3_fwd_combine_bf16_d64_r8_sm90a\(flash3_combine_params\): grid \[36, 4, 1\], "
        [ "$(field extra_bytes)" = 3598080 ]
    fi
}

# Every rung computes each O element by the same operations in the same order (per key tile:
# S by the same wgmma, the same mask and exp2, O scaled by alpha before P.V is added; the rungs
# change only who issues what when, and where), so at one seed all rungs write the same O bits.
@test "07 ladder: every rung writes the same O bits as rung 1 at seq 1000, each head_dim" {
    local r d want got
    for d in 64 128; do
        want=$(cat "$BATS_FILE_TMPDIR/o_hash.r1.d$d")
        [ -n "$want" ]
        for r in 2 3 4 5 6 7; do
            [ "$r:$d" != 4:128 ] || continue
            got=$(cat "$BATS_FILE_TMPDIR/o_hash.r$r.d$d")
            echo "head_dim $d rung $r: $got (rung 1: $want)"
            [ "$got" = "$want" ]
        done
    done
}

# A NaN in Q stays in its own row of O where the keys are split: row 999 of head (0, 0) lies in
# the last query tile, which rungs 8 and 9 cut into 4 chunks at 2x3x1000, and rungs 10-14
# (192-row tiles at head_dim 64) into 4 (the check fails if the NaN rows of O are not exactly that
# row; a split that dropped the NaN would write a finite row).
@test "07 ladder rungs 8-14: --poison-q 999 at 2x3x1000, a split shape: the NaN stays in its own row" {
    local r d
    for r in 8 9 10 11 12 13 14; do
        for d in 64 128; do
            [ "$r:$d" != 10:128 ] || continue
            rung_result "$r 2 3 1000 $d --poison-q 999 --check-rows all"
            echo "rung $r head_dim $d: $(printf '%s\n' "$output" | tail -n 1)"
            [ "$status" -eq 0 ]
            [ "$(field check)" = PASS ]
            [ "$(field kernels_per_step)" = 2 ]
        done
    done
}

# same_o_bits BASE RUNG: at seq 1000, each head_dim, RUNG's rung_case wrote BASE's O (o_hash).
same_o_bits() {
    local d want got
    for d in 64 128; do
        want=$(cat "$BATS_FILE_TMPDIR/o_hash.r$1.d$d")
        got=$(cat "$BATS_FILE_TMPDIR/o_hash.r$2.d$d")
        echo "head_dim $d rung $2: $got (rung $1: $want)"
        [ -n "$want" ]
        [ "$got" = "$want" ]
    done
}

# Rung 9 computes rung 8's items with rung 8's arithmetic in the same order (only when each
# item's first S is issued changes), so at seq 1000, which rung 8 splits, it writes rung 8's O.
@test "07 ladder: rung 9 writes the same O bits as rung 8 at seq 1000, each head_dim" { same_o_bits 8 9; }

# Rung 12 leaves out of rung 11's arithmetic only terms that are exactly 0 (P of the masked half
# of a diagonal tile, and its products with V; fp32 sums that gain +0 do not change), so at seq
# 1000 it writes rung 11's O bit for bit.
@test "07 ladder: rung 12 writes the same O bits as rung 11 at seq 1000, each head_dim" { same_o_bits 11 12; }

# Rung 13 changes how rung 12's kernels are launched and when a block starts, not what it computes:
# rung 12's O, bit for bit, where it splits (seq 1000: the combine kernel launched the same way).
@test "07 ladder: rung 13 writes the same O bits as rung 12 at seq 1000, each head_dim" { same_o_bits 12 13; }

# Rung 14 changes when the producer loads K and V and into which stage, not what the consumers
# compute: rung 13's O, bit for bit.
@test "07 ladder: rung 14 writes the same O bits as rung 13 at seq 1000, each head_dim" { same_o_bits 13 14; }

# Rung 15 computes each of its rows as rung 14 does (the same key tiles in the same order, the same
# arithmetic); only which block loads which panel of K and V, and which 64-row blocks of queries go
# together, change. At 2x16x3001x128 neither splits the keys; rung 15's 256-row cluster tiles are
# aligned to end at seq (flash3_tile_m0), so each head's first one starts 64 rows before row 0 and
# block 0's first row block has no rows to compute or store: rung 14's O, bit for bit.
@test "07 ladder: rung 15 writes the same O bits as rung 14 at 2x16x3001x128" {
    local want
    rung_result "14 2 16 3001 128 --seed 7"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    want=$(field o_hash)
    rung_result "15 2 16 3001 128 --seed 7"
    echo "rung 15: $(field o_hash) $(field check) (rung 14: $want)"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field kernels_per_step)" = 1 ]
    [ -n "$want" ]
    [ "$(field o_hash)" = "$want" ]
}

# The overlap inside a warpgroup, in the SASS: from rung 2 on, each key tile's S and the previous
# tile's P.V are issued together, S is waited for (WARPGROUP.DEPBAR.LE gsb0, 0x1), the softmax runs,
# and then P.V is waited for (WARPGROUP.DEPBAR.LE gsb0, 0x0). ptxas moves a plain wait for P.V up to
# the top of the softmax, the PTX order notwithstanding; at head_dim 128 wait_pv_after_softmax
# (07_hopper/flash3.cuh) keeps it below (head_dim 64 keeps ptxas's order, which measures faster
# there). Rung 11 computes alpha whether or not O is rescaled, so its tile has 66 too. So in the
# machine code of each rung's head_dim-128 forward kernel, every wait for P.V that follows a wait
# for S must come after the softmax's 66 exponentials (MUFU.EX2: 64 of P, 2 of alpha, per thread),
# but one on rungs 12-15: the half tile's step (one copy of the code) has 34 (32 of P, 2 of alpha).
# sass_waits KERNEL: "<waits for S> <waits for P.V after one> <those with fewer than 34 EX2 before
# them, or a wait for S with no wait for P.V before the next> <those with 34 to 65>", in address
# order.
sass_waits() {
    awk -v k="$1" '
        /Function : / { on = index($0, k) > 0 && index($0, "_regions") == 0; next }
        !on { next }
        /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { if (after_s) early++; s++; after_s = 1; ex2 = 0; next }
        /MUFU\.EX2/ { if (after_s) ex2++; next }
        /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { if (after_s) { n++; if (ex2 < 34) early++; else if (ex2 < 66) half++ }; after_s = 0 }
        END { if (after_s) early++; printf "%d %d %d %d\n", s, n, early, half }' "$BATS_FILE_TMPDIR/07.sass"
}

@test "07 ladder: the SASS of rungs 2-9 and 11-15 at head_dim 128 waits for P.V after the softmax's exponentials (no GPU needed)" {
    local dump; dump=$(find_tool cuobjdump)
    [ -n "$dump" ] || skip "cuobjdump not found (the CUDA toolkit's binary utilities)"
    [ -x "$ROOT/07_hopper/run" ] || skip "07_hopper/run is not built (make 07_hopper)"
    "$dump" -sass "$ROOT/07_hopper/run" > "$BATS_FILE_TMPDIR/07.sass"
    local r ns n early half fails=0
    for r in 2 3 5 6 7 8 9 11 12 13 14 15; do
        read -r ns n early half < <(sass_waits "flash3_fwd_bf16_causal_128x128_d128_r${r}_sm90a")
        echo "rung $r head_dim 128: $ns waits for S, $n waits for P.V after one, $early early or missing, $half after a half tile's softmax"
        [ "$ns" -ge 1 ] && [ "$n" -eq "$ns" ] && [ "$early" -eq 0 ] || fails=$((fails + 1))
        [ "$half" -eq "$([ "$r" -ge 12 ] && echo 1 || echo 0)" ] || fails=$((fails + 1))
    done
    [ "$fails" -eq 0 ]
}

# The grids: rungs 1-2 one block per query tile, (batch*heads, ceil(seq/128)); rungs 3-7
# persistent, min(SMs, tiles): at 2x3x1000, 6 x 8 = 48 tiles, fewer than any Hopper's SMs.
@test "07 ladder: rungs 1-2 launch (batch*heads, query tiles), rungs 3-7 one block per tile up to the SMs" {
    local r
    for r in 1 2 3 4 5 6 7; do
        rung_result "$r 2 3 1000 64 --check-rows all --seed 7"
        [ "$status" -eq 0 ]
        if [ "$r" -le 2 ]; then
            printf '%s\n' "$output" | grep -qE "^  flash3_fwd_bf16_causal_128x128_d64_r${r}_sm90a\(flash3_params\): grid \[6, 8, 1\], "
        else
            printf '%s\n' "$output" | grep -qE "^  flash3_fwd_bf16_causal_128x128_d64_r${r}_sm90a\(flash3_params\): grid \[48, 1, 1\], "
        fi
    done
}

# The default rungs: helpers.bash's FLASH3_DEFAULT_* (hopper.cu's rung_for).
@test "07 ladder: without --rung, --help names the default rung of each shape (no GPU needed)" {
    run "$ROOT/07_hopper/run" --help
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qF "(default: the fastest rung at each shape: $FLASH3_DEFAULT_D64 at"
    printf '%s\n' "$output" | grep -qF "head_dim 64 ($FLASH3_DEFAULT_D64_SMALL where batch x heads x 192-row tiles < SMs),"
    printf '%s\n' "$output" | grep -qE "^ +$FLASH3_DEFAULT_D128 at 128\)\. Rung, idea, head_dims:\$"
}

# 2 x 128 heads of one 192-row tile fill any Hopper GPU's SMs (132 on the H100 SXM and H200, 114
# on the H100 PCIe); 1 x 2 heads do not.
@test "07 ladder: without --rung, each head_dim and grid runs its default rung" {
    stage_result 07_hopper --batch 2 --heads 128 --seq 77 --head-dim 64 --trace none --warmup 0 --steps 1
    [ "$status" -eq 0 ]
    assert_rung_kernel "$FLASH3_DEFAULT_D64" 64
    stage_result 07_hopper --batch 1 --heads 2 --seq 77 --head-dim 64 --trace none --warmup 0 --steps 1
    [ "$status" -eq 0 ]
    assert_rung_kernel "$FLASH3_DEFAULT_D64_SMALL" 64
    stage_result 07_hopper --batch 1 --heads 2 --seq 77 --head-dim 128 --trace none --warmup 0 --steps 1
    [ "$status" -eq 0 ]
    assert_rung_kernel "$FLASH3_DEFAULT_D128" 128
}

# Rungs 5-7 cut the heads into L2 sections only where K and V outgrow H3_L2_KV_BUDGET (16 MiB):
# 4x8x4096x64 (32 heads of 1 MiB) and 1x16x4096x128 (16 heads of 2 MiB) make two sections each
# (flash3_l2_sections; the order test below prints the bench shapes'). The same items in another
# order: the O bits of the rung they build on (4 at head_dim 64, 3 at 128). Rung 8 does not split
# there (1024 and 512 tiles), so it computes rung 7's items in rung 7's order. Nor does rung 10
# (704 tiles of 192 rows), whose rows each walk the same key tiles with the same arithmetic in
# other tiles: the same bits again, at head_dim 64. Rung 11 takes its P from another offset (the
# running max it keeps), so its bits are its own: PASS and its kernel, at both head_dims; rung 12
# leaves out only exact zeros of rung 11's, rung 13 launches rung 12, rung 14 loads rung 13's
# tiles in another order and rung 15 (head_dim 128) shares them between two blocks that take the
# same 64-row blocks of queries in other pairs: rung 11's bits.
@test "07 ladder: rungs 5-15 at shapes of two L2 sections: PASS, the O bits of rung 4 / rung 3 (rungs 11-15: rung 11's)" {
    local d r base want got shape rungs
    for d in 64 128; do
        if [ "$d" = 64 ]; then shape=(4 8 4096 64); base=4; rungs="5 6 7 8 9 10"
        else shape=(1 16 4096 128); base=3; rungs="5 6 7 8 9"; fi
        rung_result "$base ${shape[*]} --seed 7"
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        want=$(field o_hash)
        [ -n "$want" ]
        for r in $rungs; do
            rung_result "$r ${shape[*]} --seed 7"
            echo "${shape[*]}: rung $r $(field o_hash) (rung $base: $want)"
            [ "$status" -eq 0 ]
            [ "$(field check)" = PASS ]
            assert_rung_kernel "$r" "$d"
            got=$(field o_hash)
            [ "$got" = "$want" ]
        done
        rung_result "11 ${shape[*]} --seed 7"
        echo "${shape[*]}: rung 11 $(field o_hash) $(field check)"
        [ "$status" -eq 0 ]
        [ "$(field check)" = PASS ]
        assert_rel_l2_le 1e-2
        assert_rung_kernel 11 "$d"
        want=$(field o_hash)
        rungs="12 13 14"
        [ "$d" = 128 ] && rungs="12 13 14 15"
        for r in $rungs; do
            rung_result "$r ${shape[*]} --seed 7"
            echo "${shape[*]}: rung $r $(field o_hash) (rung 11: $want)"
            [ "$status" -eq 0 ]
            [ "$(field check)" = PASS ]
            assert_rung_kernel "$r" "$d"
            [ "$(field o_hash)" = "$want" ]
        done
    done
}

# ---- CPU ---------------------------------------------------------------------------------------

@test "07 ladder: --help lists the fifteen rungs with their idea and head_dims (no GPU needed)" {
    run "$ROOT/07_hopper/run" --help
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF '                      1  TMA + mbarriers + wgmma; producer warpgroup, setmaxnreg  64, 128'
    printf '%s\n' "$output" | grep -qxF '                      2  + softmax of tile n under P.V of tile n-1 (overlap)      64, 128'
    printf '%s\n' "$output" | grep -qxF '                      3  + persistent grid, tiles longest-first, 2 Q buffers      64, 128'
    printf '%s\n' "$output" | grep -qxF '                      4  + ping-pong of the two consumer warpgroups               64'
    printf '%s\n' "$output" | grep -qxF '                      5  + tiles in L2 sections of heads (4 at 64, 3 at 128)      64, 128'
    printf '%s\n' "$output" | grep -qxF '                      6  + O stored by TMA from the shared tile                   64, 128'
    printf '%s\n' "$output" | grep -qxF "                      7  + the store's read waited for under the next S           64, 128"
    printf '%s\n' "$output" | grep -qxF '                      8  + split over the keys where the grid is small, combine   64, 128'
    printf '%s\n' "$output" | grep -qxF "                      9  + the next item's first S under this one's last P.V      64, 128"
    printf '%s\n' "$output" | grep -qxF "                     10  8 + three consumer warpgroups, 192x128 tiles             64"
    printf '%s\n' "$output" | grep -qxF "                     11  + O rescaled only when P would pass 2^8, under next S    64, 128"
    printf '%s\n' "$output" | grep -qxF "                     12  + the masked half of the diagonal tile skipped           64, 128"
    printf '%s\n' "$output" | grep -qxF "                     13  + the next kernel's launch under this one's tail (PDL)   64, 128"
    printf '%s\n' "$output" | grep -qxF "                     14  + K one tile ahead of V, and V three stages deep         64, 128"
    printf '%s\n' "$output" | grep -qxF "                     15  + K and V multicast to a cluster of two (head_dim 128)   128"
    [ "$(printf '%s\n' "$output" | grep -c -- '--rung N')" -eq 1 ]
    # one line per rung file, each as bench/ladder.py reads it (number, idea, head_dims on one
    # line: a rung whose line wraps would be left out of make ladder's table)
    [ "$(printf '%s\n' "$output" | python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from ladder import HELP_RUNG_RE; print(sum(1 for l in sys.stdin if HELP_RUNG_RE.match(l.rstrip("\n"))))' "$ROOT/bench")" -eq "$(cd "$ROOT" && ls 07_hopper/rung[0-9]*_*.cu | wc -l)" ]
}

@test "07 ladder: a bad --rung exits 2 with one line naming the range (no GPU needed)" {
    local v
    for v in 0 16 99 x -1 2.5 ''; do
        run "$ROOT/07_hopper/run" --rung "$v" --trace none
        echo "--rung '$v': $status $output"
        [ "$status" -eq 2 ]
        [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
        [[ "$output" == "--rung: "*"(expected 1 to 15)" ]]
    done
    run "$ROOT/07_hopper/run" --trace none --rung
    [ "$status" -eq 2 ]
    [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
}

@test "07 ladder: rungs 4 and 10 refuse head_dim 128 with one line, exit 2 (no GPU needed)" {
    local r
    for r in 4 10; do
        run "$ROOT/07_hopper/run" --rung "$r" --head-dim 128 --trace none
        echo "$output"
        [ "$status" -eq 2 ]
        [ "$output" = "rung $r of 07_hopper does not run head_dim 128 (it runs 64; rungs 1-3, 5-9 and 11-14 run 64 and 128)" ]
    done
}

@test "07 ladder: rung 15 refuses head_dim 64 with one line, exit 2 (no GPU needed)" {
    run "$ROOT/07_hopper/run" --rung 15 --head-dim 64 --trace none
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "rung 15 of 07_hopper does not run head_dim 64 (it runs 128; rungs 1-3, 5-9 and 11-14 run 64 and 128)" ]
}

@test "07 ladder: make ladder at a head_dim no rung runs: the stage's one line, exit 2, nothing written (no GPU needed)" {
    run --separate-stderr python3 "$ROOT/bench/ladder.py" run --shape 1x1x64x96 --outdir "$BATS_TEST_TMPDIR/ladder"
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: head_dim 96 is not supported by 07_hopper (supported: 64, 128)" ]
    [ ! -e "$BATS_TEST_TMPDIR/ladder" ]
}

# The work orders on the CPU (tests/unit/flash3_order.cu, built by make as build/flash3_order with
# the header the kernels use): every (head, query tile) exactly once over the blocks for 1352
# cases of heads, seq, grid and sections (and as many with rung 10's tiles); one section = rung 3's order item for item; and the
# host's L2 sections at the bench shapes: 2, 2 and 4 sections with the busiest block's work (key
# tiles + 1 per item) equal to one section's, 2x16x3001x128 back to one section (four to eight
# would leave a block 82 or more against 79), 4x16x6000x64 at 8 sections (7, the fewest its K and
# V allow, would leave 582 against 572), and the two shapes of the GPU test above at two sections.
# The same for rung 10's 192-row tiles (order10 / split10; their key tiles are larger work, so the
# busiest counts compare only with each other): the tiles shifted so that they cover rows 0 ..
# seq-1 with no 64-row warpgroup across row 0, for every seq from 1 to 1200.
@test "07 ladder: rungs 5-10's order covers every tile once; the host's L2 sections (no GPU needed)" {
    run make -s -C "$ROOT" build/flash3_order
    echo "$output"
    [ "$status" -eq 0 ]
    run "$ROOT/build/flash3_order"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c FAIL)" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF 'order 8x16x1024x64 G=132 sections=2 busiest=44 one_section=44'
    printf '%s\n' "$output" | grep -qxF 'order 4x16x2048x64 G=132 sections=2 busiest=76 one_section=76'
    printf '%s\n' "$output" | grep -qxF 'order 2x16x4096x128 G=132 sections=4 busiest=136 one_section=136'
    printf '%s\n' "$output" | grep -qxF 'order 2x16x3001x128 G=132 sections=1 busiest=79 one_section=79'
    printf '%s\n' "$output" | grep -qxF 'order 2x3x1000x64 G=48 sections=1 busiest=9 one_section=9'
    printf '%s\n' "$output" | grep -qxF 'order 4x8x4096x64 G=132 sections=2 busiest=136 one_section=136'
    printf '%s\n' "$output" | grep -qxF 'order 1x16x4096x128 G=132 sections=2 busiest=68 one_section=68'
    printf '%s\n' "$output" | grep -qxF 'order 4x16x6000x64 G=132 sections=8 busiest=572 one_section=572'
    # rung 8's plans: a split where the longest tile is more than 5/4 of an even share of the work
    printf '%s\n' "$output" | grep -qxF 'split 1x1x4096x64 G=132 chunk=4 items=144 slots=140 combine=28 busiest=6 unsplit=33 bytes=4663552'
    printf '%s\n' "$output" | grep -qxF 'split 1x1x16384x128 G=132 chunk=63 items=195 slots=132 combine=65 busiest=65 unsplit=129 bytes=8724480'
    printf '%s\n' "$output" | grep -qxF 'split 2x3x1000x64 G=120 chunk=2 items=120 slots=108 combine=36 busiest=3 unsplit=9 bytes=3598080'
    printf '%s\n' "$output" | grep -qxF 'split 8x16x1024x64 G=132 chunk=0 items=0 slots=0 combine=0 busiest=0 unsplit=44 bytes=0'
    printf '%s\n' "$output" | grep -qxF 'split 1x16x16384x128 G=132 chunk=0 items=0 slots=0 combine=0 busiest=0 unsplit=1024 bytes=0'
    # rung 10: 6 tiles a head at seq 1024 (33 per block against 44), the split of 2x3x1000x64 cut
    # into 2-key-tile chunks (its last tile into 4), none at the blog's shape
    printf '%s\n' "$output" | grep -qxF 'order10 8x16x1024x64 G=132 sections=2 busiest=33 one_section=33'
    printf '%s\n' "$output" | grep -qxF 'order10 4x16x2048x64 G=132 sections=2 busiest=54 one_section=54'
    printf '%s\n' "$output" | grep -qxF 'split10 1x1x4096x64 G=132 chunk=3 items=132 slots=130 combine=20 busiest=4 unsplit=33 bytes=6493696'
    printf '%s\n' "$output" | grep -qxF 'split10 2x3x1000x64 G=90 chunk=2 items=90 slots=78 combine=24 busiest=3 unsplit=9 bytes=3896832'
    printf '%s\n' "$output" | grep -qxF 'split10 8x16x1024x64 G=132 chunk=0 items=0 slots=0 combine=0 busiest=0 unsplit=33 bytes=0'
    [ "$(printf '%s\n' "$output" | tail -n 1)" = "order: 5691 cases ok" ]
}

@test "07 ladder: the table renders from a saved summary, one row per rung (no GPU needed)" {
    run python3 "$ROOT/bench/ladder.py" render "$ROOT/tests/data/ladder_summary.txt" "$BATS_TEST_TMPDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '^| [1-4] |')" -eq 4 ]
    printf '%s\n' "$output" | grep -qxF '| 1 | TMA + mbarriers + wgmma; producer warpgroup, setmaxnreg | 66.4 | 258.7 | 168 | 83016 | 60.1 MB | 17.2% | 30.5% | 1,327,104 |'
    printf '%s\n' "$output" | grep -qxF '| 4 | + ping-pong of the two consumer warpgroups | 56.5 | 304.0 | 168 | 99424 | 93.7 MB | 14.0% | 35.9% | 1,327,104 |'
    cmp <(printf '%s\n' "$output") "$BATS_TEST_TMPDIR/ladder_8x16x1024x64.md"
}

# Where rung 8 splits, its run has two kernels and two counters lines: the row takes the forward
# kernel's (the first, after its details line), not the combine kernel's (no GMMA, no tensor pipe).
@test "07 ladder: a split rung's row has its forward kernel's counters, not the combine's (no GPU needed)" {
    run python3 "$ROOT/bench/ladder.py" render "$ROOT/tests/data/ladder_summary_split.txt" "$BATS_TEST_TMPDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^    counters: ' "$ROOT/tests/data/ladder_summary_split.txt")" -eq 2 ]
    [ "$(printf '%s\n' "$output" | grep -c '^| 8 |')" -eq 1 ]
    printf '%s\n' "$output" | grep -qxF '| 8 | + split over the keys where the grid is small, combine | 16.0 | 134.2 | 168 | 99424 | 41.22 kB | 13.7% | 26.8% | 50,688 |'
}

# A forward kernel's counters line without a DRAM read (a metric the device refused: "-") leaves
# the cell "-": the combine kernel's line after it does not fill it.
@test "07 ladder: a split rung's missing forward counter stays '-', not the combine's (no GPU needed)" {
    sed 's/DRAM read 41.22 kB/DRAM read -/' "$ROOT/tests/data/ladder_summary_split.txt" > "$BATS_TEST_TMPDIR/s.txt"
    run python3 "$ROOT/bench/ladder.py" render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF '| 8 | + split over the keys where the grid is small, combine | 16.0 | 134.2 | 168 | 99424 | - | 13.7% | 26.8% | 50,688 |'
}

# Rung numbers of two digits parse as one rung (the ladder may grow past 9).
@test "07 ladder: a rung 10 in a summary is its own row (no GPU needed)" {
    sed 's/^rung 8 /rung 10 /' "$ROOT/tests/data/ladder_summary_split.txt" > "$BATS_TEST_TMPDIR/s.txt"
    run python3 "$ROOT/bench/ladder.py" render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '^| 10 | + split over the keys')" -eq 1 ]
}

@test "07 ladder: a rung that refuses the shape is a row with its message (no GPU needed)" {
    printf 'rung 4 + ping-pong of the two consumer warpgroups\nunsupported rung=4 message=rung 4 of 07_hopper does not run head_dim 128\n' > "$BATS_TEST_TMPDIR/s.txt"
    run python3 "$ROOT/bench/ladder.py" render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF '| 4 | + ping-pong of the two consumer warpgroups | rung 4 of 07_hopper does not run head_dim 128 | | | | | | | |'
}
