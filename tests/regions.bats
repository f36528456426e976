#!/usr/bin/env bats
# GPU: the regions pass (--regions N) of 04_efficient, 05_flash and every rung of 07_hopper. One
# run per stage (per rung for 07) at the blog's shape (rung 15: its batch, heads and seq at head_dim 128) with --regions (default 4 SMs) and one
# without, made once in setup_file and read by every test: the regions build passes the same
# check as the kernel it instruments, the pass changes neither gpu_us nor O, the trace gets one
# track per (SM, slot, warp or warpgroup) with every region inside the pass's kernel, 05's
# barrier order and 07's producer-before-consumer order hold on the timeline, 07's ping-pong
# (rung 4) shows as consumers that never issue their P.V at the same time, and the overhead of
# the instrumented kernel is printed. The 07 tests need compute capability 9.0 and skip
# elsewhere with the reason.
load helpers

# The rungs of 07_hopper's ladder (07_hopper/rung<N>_*.cu).
rungs_07() {
    (cd "$ROOT" && ls 07_hopper/rung[0-9]*_*.cu | sed 's/^07_hopper\/rung\([0-9]*\)_.*/\1/' | sort -n)
}

# head_dim_07 RUNG: the head_dim its regions run uses: the blog's 64, but 128 for rung 15 (it runs
# head_dim 128 only).
head_dim_07() { if [ "$1" -eq 15 ]; then echo 128; else echo 64; fi; }

# consumers_07 RUNG: its block's consumer warpgroups, one per 64 rows of its tile (helpers.bash).
consumers_07() { echo $(($(flash3_block_m "$1" "$(head_dim_07 "$1")") / 64)); }

gpu_cc() {
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' '
}

setup_file() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || return 0
    local root; root="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
    make -s -C "$root" 04_efficient 05_flash 07_hopper
    for s in 04_efficient 05_flash; do
        "$root/$s/run" --regions --no-counters --no-timeline --trace "$BATS_FILE_TMPDIR/$s.json" \
            > "$BATS_FILE_TMPDIR/$s.regions" 2>&1
        echo "rc=$?" >> "$BATS_FILE_TMPDIR/$s.regions"
        "$root/$s/run" --no-counters --no-timeline --trace none --quiet > "$BATS_FILE_TMPDIR/$s.plain" 2>&1
    done
    [ "$(gpu_cc)" = "9.0" ] || return 0
    # 07: every rung at the blog's shape (rung 15: its batch, heads and seq at head_dim 128)
    local r
    for r in $(rungs_07); do
        "$root/07_hopper/run" --rung "$r" --head-dim "$(head_dim_07 "$r")" --regions --no-counters \
            --no-timeline --trace "$BATS_FILE_TMPDIR/07_hopper_r$r.json" \
            > "$BATS_FILE_TMPDIR/07_hopper_r$r.regions" 2>&1
        echo "rc=$?" >> "$BATS_FILE_TMPDIR/07_hopper_r$r.regions"
        "$root/07_hopper/run" --rung "$r" --head-dim "$(head_dim_07 "$r")" --no-counters --no-timeline \
            --trace none --quiet > "$BATS_FILE_TMPDIR/07_hopper_r$r.plain" 2>&1
    done
}

setup() {
    require_gpu
    case "$BATS_TEST_DESCRIPTION" in
        07*)
            local cc; cc=$(gpu_cc)
            [ "$cc" = "9.0" ] || skip "07_hopper needs a Hopper GPU, compute capability 9.0 (this GPU: ${cc:-unknown})" ;;
    esac
}

# regions_line KEY: the value of KEY=... on the run's "regions stage=..." line
regions_field() {
    last_line_of "$output" 'regions stage='
    line_field "$REPLY" "$1"
}

load_run() {
    output=$(cat "$BATS_FILE_TMPDIR/$1.regions")
    TRACE="$BATS_FILE_TMPDIR/$1.json"
}

@test "04_efficient --regions: the regions build passes the check; no missing end, buffer not full" {
    load_run 04_efficient
    printf '%s\n' "$output" | grep -A 12 '^regions: '
    [ "$(printf '%s\n' "$output" | tail -n 1)" = "rc=0" ]
    [ "$(regions_field check)" = "PASS" ]
    [ "$(regions_field missing_end)" = "0" ]
    [ "$(regions_field full)" = "0" ]
    [ "$(regions_field sms)" = "4" ]
    at_most 1 "$(regions_field events)"
    at_most "$(regions_field rel_l2)" 1e-2
}

@test "05_flash --regions: the regions build passes the check; no missing end, buffer not full" {
    load_run 05_flash
    printf '%s\n' "$output" | grep -A 12 '^regions: '
    [ "$(printf '%s\n' "$output" | tail -n 1)" = "rc=0" ]
    [ "$(regions_field check)" = "PASS" ]
    [ "$(regions_field missing_end)" = "0" ]
    [ "$(regions_field full)" = "0" ]
    at_most 1 "$(regions_field events)"
    at_most "$(regions_field rel_l2)" 1e-2
}

@test "--regions changes neither O nor the check nor gpu_us (within 5%)" {
    for s in 04_efficient 05_flash; do
        load_run "$s"
        local hash_r gpu_r
        hash_r=$(field o_hash); gpu_r=$(field gpu_us)
        [ "$(field check)" = "PASS" ]
        output=$(cat "$BATS_FILE_TMPDIR/$s.plain")
        [ "$(field check)" = "PASS" ]
        echo "$s: o_hash $hash_r / $(field o_hash), gpu_us $gpu_r / $(field gpu_us)"
        [ "$hash_r" = "$(field o_hash)" ]
        at_most "abs($gpu_r - $(field gpu_us))" "0.05 * $(field gpu_us)"
    done
}

@test "--regions trace: one track per (SM, slot, warp), every region inside the pass's kernel, no overlap" {
    for s in 04_efficient 05_flash; do
        load_run "$s"
        run python3 "$ROOT/tests/regions_query.py" "$TRACE" inside
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "kernels=1" ]
        [ "${lines[1]}" = "outside=0" ]
        [ "${lines[2]}" = "overlap=0" ]
        run python3 "$ROOT/tests/regions_query.py" "$TRACE" tracks
        [ "$status" -eq 0 ]
        # SMs 0-3 only, and every (SM, slot) holds the block's 4 warps
        [ "$(printf '%s\n' "$output" | grep -vc '^SM [0-3] slot [0-9]* warp [0-3]	[0-9]*$')" -eq 1 ]
        [ "$(printf '%s\n' "$output" | grep '^SM ' | sed 's/ warp .*//' | sort | uniq -c | awk '$1 != 4' | wc -l)" -eq 0 ]
        at_most 4 "$(printf '%s\n' "$output" | grep -c '^SM ')"
    done
}

@test "05_flash --regions: every warp of a block reaches tile n's load before any warp starts its S" {
    load_run 05_flash
    run python3 "$ROOT/tests/regions_query.py" "$TRACE" order
    [ "$status" -eq 0 ]
    echo "$output"
    [ "$(echo "$output" | sed -n 's/.*violations=//p')" = "0" ]
    at_most 16 "$(echo "$output" | sed -n 's/^tiles=\([0-9]*\).*/\1/p')"
}

@test "--regions: the instrumented kernel's overhead against the plain one (printed)" {
    for s in 04_efficient 05_flash; do
        load_run "$s"
        echo "$s: plain_us=$(regions_field plain_us) regions_us=$(regions_field regions_us) overhead_pct=$(regions_field overhead_pct) kernel_us=$(regions_field kernel_us) trace_bytes=$(stat -c %s "$TRACE")"
        at_most 1 "$(regions_field plain_us)"
        at_most 1 "$(regions_field regions_us)"
    done
}

@test "--regions at an odd shape with every SM recorded: check passes, no end missing, not full" {
    local sms
    # the SM count from the stage's own header line: "device NAME (N SMs, sm_XY)"
    sms=$("$ROOT/05_flash/run" --batch 1 --heads 1 --seq 1 --trace none --no-counters --no-timeline \
          --warmup 0 --steps 1 | sed -n 's/^device .*(\([0-9][0-9]*\) SMs, .*/\1/p' | head -n 1)
    echo "SMs: $sms"
    [[ "$sms" =~ ^[0-9]+$ ]]
    for s in 04_efficient 05_flash; do
        run "$ROOT/$s/run" --batch 1 --heads 3 --seq 1000 --head-dim 128 --regions "$sms" --trace none \
            --no-counters --steps 1
        [ "$status" -eq 0 ]
        [ "$(regions_field check)" = "PASS" ]
        [ "$(regions_field missing_end)" = "0" ]
        [ "$(regions_field full)" = "0" ]
    done
}

@test "the plain kernels read no %globaltimer; the regions kernels do (cuobjdump -sass)" {
    local dump; dump=$(find_tool cuobjdump)
    [ -n "$dump" ] || skip "cuobjdump not found"
    make -s -C "$ROOT" 04_efficient 05_flash 07_hopper
    local objs o k t
    objs=(04_efficient/efficient 05_flash/flash $(cd "$ROOT" && ls 07_hopper/rung*.cu | sed 's/\.cu$//'))
    for o in "${objs[@]}"; do          # the dumps at once, each one's status kept
        for k in "" .regions; do
            t="$BATS_TEST_TMPDIR/${o//\//_}$k"
            ( "$dump" -sass "$ROOT/build/$o$k.cu.o" > "$t.sass"; echo $? > "$t.rc" ) &
        done
    done
    wait
    for o in "${objs[@]}"; do
        t="$BATS_TEST_TMPDIR/${o//\//_}"
        echo "$o: plain $(grep -c 'SR_GLOBALTIMER' "$t.sass"), regions $(grep -c 'SR_GLOBALTIMER' "$t.regions.sass")"
        [ "$(cat "$t.rc")" -eq 0 ]
        [ "$(cat "$t.regions.rc")" -eq 0 ]
        [ "$(grep -c 'SR_GLOBALTIMER' "$t.sass")" -eq 0 ]
        at_most 1 "$(grep -c 'SR_GLOBALTIMER' "$t.regions.sass")"
    done
}

# ---- 07_hopper: every rung ----------------------------------------------------------------------

@test "07_hopper --regions, every rung: the regions build passes the check; the decoder found nothing amiss" {
    local r line
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        printf '%s\n' "$output" | grep -A 16 '^regions: '
        [ "$(printf '%s\n' "$output" | tail -n 1)" = "rc=0" ]
        [ "$(regions_field check)" = "PASS" ]
        [ "$(regions_field missing_end)" = "0" ]
        [ "$(regions_field full)" = "0" ]
        [ "$(regions_field sms)" = "4" ]
        at_most 1 "$(regions_field events)"
        at_most "$(regions_field rel_l2)" 1e-2
        # no buffer full, missing end, stray end or out-of-order record on the summary's first line
        line=$(printf '%s\n' "$output" | grep '^regions: ')
        [[ "$line" == "regions: 07_hopper, SMs 0-3 recorded: "*" warpgroups, "*" regions; kernel "*" us" ]]
        [[ "$line" != *";"*";"* ]]
    done
}

@test "07_hopper --regions, every rung: the summary has a column per role and the rung's own regions" {
    local r f c n head dash val pct
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        n=$(consumers_07 "$r")
        echo "rung $r ($n consumers)"
        head=" mean us (n) producer" dash="" val="" pct=""
        for ((c = 0; c < n; c++)); do
            head+=" consumer $c" dash+=" +-" val+=" +[0-9.]+ \([0-9]+\)" pct+=" +[0-9.]+%"
        done
        [ "$(printf '%s\n' "$output" | grep -A 1 '^regions: ' | tail -n 1 | tr -s ' ')" = "$head" ]
        printf '%s\n' "$output" | grep -qE "^  TMA K +[0-9.]+ \([0-9]+\)$dash\$"
        printf '%s\n' "$output" | grep -qE "^  S=QK\^T +-$val\$"
        printf '%s\n' "$output" | grep -qE "^  O\+=PV +-$val\$"
        printf '%s\n' "$output" | grep -qE "^  waited +[0-9.]+%$pct\$"
        # the regions build ran the rung --rung chose: a "wait turn" row (ping-pong) and a
        # "hand-over" row (persistent) exactly when that rung's file stamps them (the hand-over
        # directly, or through flash3.cuh's hand_back)
        f=$(ls "$ROOT"/07_hopper/rung${r}_*.cu)
        if grep -q 'ATTN_REGION_WAIT_TURN' "$f"; then
            printf '%s\n' "$output" | grep -qE '^  wait turn +- '
        else
            [ "$(printf '%s\n' "$output" | grep -c '^  wait turn ')" -eq 0 ]
        fi
        if grep -qE 'ATTN_REGION_HANDOVER|hand_back\(' "$f"; then
            printf '%s\n' "$output" | grep -qE '^  hand-over +- '
        else
            [ "$(printf '%s\n' "$output" | grep -c '^  hand-over ')" -eq 0 ]
        fi
    done
}

@test "07_hopper --regions, every rung: changes neither O nor the check nor gpu_us (within 5%)" {
    local r hash_r gpu_r
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        hash_r=$(field o_hash); gpu_r=$(field gpu_us)
        [ "$(field check)" = "PASS" ]
        output=$(cat "$BATS_FILE_TMPDIR/07_hopper_r$r.plain")
        [ "$(field check)" = "PASS" ]
        echo "rung $r: o_hash $hash_r / $(field o_hash), gpu_us $gpu_r / $(field gpu_us)"
        [ "$hash_r" = "$(field o_hash)" ]
        at_most "abs($gpu_r - $(field gpu_us))" "0.05 * $(field gpu_us)"
    done
}

@test "07_hopper --regions trace, every rung: a track per (SM, slot, warpgroup) named by role, every region inside the pass's kernel and nested" {
    local r n roles
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        n=$(consumers_07 "$r")
        roles="0 \(producer\)|1 \(consumer 0\)|2 \(consumer 1\)"
        [ "$n" -eq 2 ] || roles+="|3 \(consumer 2\)"
        run python3 "$ROOT/tests/regions_query.py" "$TRACE" inside
        echo "rung $r: $output"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "kernels=1" ]
        [ "${lines[1]}" = "outside=0" ]
        [ "${lines[2]}" = "overlap=0" ]
        run python3 "$ROOT/tests/regions_query.py" "$TRACE" tracks
        [ "$status" -eq 0 ]
        # SMs 0-3 only; every (SM, slot) holds the block's 1 + n warpgroups, each named by its role
        [ "$(printf '%s\n' "$output" | grep -vcE "^SM [0-3] slot [0-9]+ warpgroup ($roles)	[0-9]+\$")" -eq 1 ]
        [ "$(printf '%s\n' "$output" | grep '^SM ' | sed 's/ warpgroup .*//' | sort | uniq -c | awk -v w=$((1 + n)) '$1 != w' | wc -l)" -eq 0 ]
        at_most $((4 * (1 + n))) "$(printf '%s\n' "$output" | grep -c '^SM ')"
    done
}

@test "07_hopper --regions, every rung: the producer's first K load is issued before either consumer's first S=QK^T begins, in every block" {
    local r
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        run python3 "$ROOT/tests/regions_query.py" "$TRACE" first_load
        echo "rung $r: $output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | sed -n 's/.* missing=\([0-9]*\).*/\1/p')" = "0" ]
        [ "$(echo "$output" | sed -n 's/.* violations=//p')" = "0" ]
        at_most 4 "$(echo "$output" | sed -n 's/^blocks=\([0-9]*\).*/\1/p')"
    done
}

@test "07_hopper rung 4 --regions at 8x16x1024x64: the two consumers never issue their P.V at the same time; each one's softmax runs under the other's products" {
    local r share
    # rung 3, the same schedule without the turns, for comparison (printed)
    load_run 07_hopper_r3
    run python3 "$ROOT/tests/regions_query.py" "$TRACE" pingpong
    [ "$status" -eq 0 ]
    echo "rung 3 (no ping-pong): $(echo $output)"
    load_run 07_hopper_r4
    [ "$(field shape)" = "8x16x1024x64" ]
    run python3 "$ROOT/tests/regions_query.py" "$TRACE" pingpong
    [ "$status" -eq 0 ]
    echo "rung 4: $(echo $output)"
    # one persistent block per SM, SMs 0-3 recorded
    [ "${lines[0]}" = "blocks=4" ]
    [ "${lines[1]}" = "pv_overlap=0" ]
    for c in 0 1; do
        share=$(printf '%s\n' "$output" | sed -n "s/^softmax_share_c$c=//p")
        python3 -c "import sys; s = float('$share'); print('consumer $c: share %g > 0 ?' % s); sys.exit(0 if s > 0 else 1)"
    done
}

@test "07_hopper --regions, every rung: the instrumented kernel's overhead against the plain one (printed)" {
    local r
    for r in $(rungs_07); do
        load_run "07_hopper_r$r"
        echo "rung $r: plain_us=$(regions_field plain_us) regions_us=$(regions_field regions_us) overhead_pct=$(regions_field overhead_pct) kernel_us=$(regions_field kernel_us) trace_bytes=$(stat -c %s "$TRACE")"
        at_most 1 "$(regions_field plain_us)"
        at_most 1 "$(regions_field regions_us)"
    done
}

@test "07_hopper --regions at odd shapes with every SM recorded, rung 1 and the default rungs: check passes, no end missing, not full" {
    local sms r
    sms=$("$ROOT/07_hopper/run" --batch 1 --heads 1 --seq 1 --trace none --no-counters --no-timeline \
          --warmup 0 --steps 1 | sed -n 's/^device .*(\([0-9][0-9]*\) SMs, .*/\1/p' | head -n 1)
    echo "SMs: $sms"
    [[ "$sms" =~ ^[0-9]+$ ]]
    for args in "--rung 1 --head-dim 64" "--rung 1 --head-dim 128" "--head-dim 64" "--head-dim 128"; do
        run "$ROOT/07_hopper/run" --batch 1 --heads 3 --seq 1000 $args --regions "$sms" --trace none \
            --no-counters --no-timeline --steps 1
        echo "$args: $(printf '%s\n' "$output" | grep '^regions stage=')"
        [ "$status" -eq 0 ]
        [ "$(regions_field check)" = "PASS" ]
        [ "$(regions_field missing_end)" = "0" ]
        [ "$(regions_field full)" = "0" ]
    done
}
