#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: the regions decoder, summary and trace tracks (common/regions.c) on the synthetic
# records of tests/unit/regions_tests.c (the cases and their times are listed there), the
# queries of tests/regions_query.py on their traces, and the --regions flag's refusals.
load helpers

setup_file() {
    make -s -C "$BATS_TEST_DIRNAME/.." build/common_unit
}

setup() {
    UNIT="$ROOT/build/common_unit"
}

@test "regions decode: begin/end pairs of interleaved streams, slots reused on one SM" {
    run "$UNIT" regions-decode pairs
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=9 records=18 streams=5 units=2 missing_end=0 stray_end=0 backwards=0 full=0" ]
    [ "${lines[1]}" = "sm=0 slot=0 warp=0 block=0 load 100-300 depth=0" ]
    [ "${lines[4]}" = "sm=0 slot=0 warp=0 block=0 O+=PV 900-1000 depth=0" ]
    [ "${lines[5]}" = "sm=0 slot=0 warp=0 block=1 S=QK^T 1100-1300 depth=0" ]
    [ "${lines[8]}" = "sm=0 slot=1 warp=0 block=2 load 200-700 depth=0" ]
    [ "${lines[9]}" = "sm=1 slot=0 warp=0 block=3 epilogue 150-250 depth=0" ]
}

@test "regions decode: a missing end drops that region and is counted" {
    run "$UNIT" regions-decode missing-end
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=1 records=3 streams=1 units=1 missing_end=1 stray_end=0 backwards=0 full=0" ]
    [ "${lines[1]}" = "sm=0 slot=0 warp=0 block=0 load 100-200 depth=0" ]
}

@test "regions decode: a region left open inside another is dropped when the outer one ends" {
    run "$UNIT" regions-decode nested
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=2 records=5 streams=1 units=1 missing_end=1 stray_end=0 backwards=0 full=0" ]
    [ "${lines[1]}" = "sm=0 slot=0 warp=0 block=0 softmax 100-400 depth=0" ]
    [ "${lines[2]}" = "sm=0 slot=0 warp=0 block=0 wait K 150-160 depth=1" ]
}

@test "regions decode: an end without a begin is a stray end" {
    run "$UNIT" regions-decode stray
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=1 records=3 streams=1 units=1 missing_end=0 stray_end=1 backwards=0 full=0" ]
    [ "${lines[1]}" = "sm=0 slot=0 warp=0 block=0 S=QK^T 200-300 depth=0" ]
}

@test "regions decode: out-of-order streams are sorted; a stamp earlier than its predecessor is clamped" {
    run "$UNIT" regions-decode out-of-order
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=3 records=6 streams=2 units=2 missing_end=0 stray_end=0 backwards=1 full=0" ]
    [ "${lines[1]}" = "sm=2 slot=0 warp=0 block=5 S=QK^T 100-300 depth=0" ]
    [ "${lines[2]}" = "sm=2 slot=0 warp=0 block=5 softmax 400-400 depth=0" ]
    [ "${lines[3]}" = "sm=2 slot=0 warp=1 block=7 O+=PV 800-900 depth=0" ]
}

@test "regions decode: a full buffer is reported, in the decoder and in the summary" {
    run "$UNIT" regions-decode full
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "events=9 records=18 streams=5 units=2 missing_end=0 stray_end=0 backwards=0 full=1" ]
    run "$UNIT" regions-summary full
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"; buffer full (96 of 64 slots claimed): later regions dropped" ]]
}

@test "regions summary: mean duration per region per warp, and each warp's waited share" {
    run "$UNIT" regions-summary pairs
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "regions: 05_flash, SMs 0-1 recorded: 4 blocks, 5 warps, 9 regions; kernel 1.250 us" ]
    [ "$(echo ${lines[1]})" = "mean us (n) warp 0 warp 1" ]
    [ "$(echo ${lines[2]})" = "load 0.350 (2) 0.300 (1)" ]
    [ "$(echo ${lines[3]})" = "S=QK^T 0.200 (2) 0.200 (1)" ]
    [ "$(echo ${lines[4]})" = "softmax 0.400 (1) -" ]
    [ "$(echo ${lines[5]})" = "O+=PV 0.100 (1) -" ]
    [ "$(echo ${lines[6]})" = "epilogue 0.100 (1) -" ]
    # warp 0 waits 200 + 500 ns of 900 + 500 + 200 + 100 ns alive; warp 1 300 of 500 ns
    [ "$(echo ${lines[7]})" = "waited 41.2% 60.0%" ]
}

@test "regions trace: valid JSON, one track per (SM, slot, warp), every region inside the pass's kernel" {
    run "$UNIT" regions-trace pairs "$BATS_TEST_TMPDIR/r.json"
    [ "$status" -eq 0 ]
    run python3 -m json.tool "$BATS_TEST_TMPDIR/r.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/r.json" tracks
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$(printf 'SM 0 slot 0 warp 0\t5')" ]
    [ "${lines[1]}" = "$(printf 'SM 0 slot 0 warp 1\t2')" ]
    [ "${lines[2]}" = "$(printf 'SM 0 slot 1 warp 0\t1')" ]
    [ "${lines[3]}" = "$(printf 'SM 1 slot 0 warp 0\t1')" ]
    [ "${lines[4]}" = "tracks=4" ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/r.json" inside
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "kernels=1" ]
    [ "${lines[1]}" = "outside=0" ]
    [ "${lines[2]}" = "overlap=0" ]
}

@test "regions summary, 07's units: a column per role, waits nested in S counted, one line per region" {
    run "$UNIT" regions-summary pingpong
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "regions: 07_hopper, SMs 0-1 recorded: 1 blocks, 3 warpgroups, 26 regions; kernel 1.250 us" ]
    [ "$(echo ${lines[1]})" = "mean us (n) producer consumer 0 consumer 1" ]
    [ "$(echo ${lines[2]})" = "S=QK^T - 0.210 (2) 0.350 (1)" ]
    [ "$(echo ${lines[3]})" = "softmax - 0.250 (2) 0.400 (1)" ]
    [ "$(echo ${lines[4]})" = "O+=PV - 0.030 (2) 0.030 (1)" ]
    [ "$(echo ${lines[5]})" = "epilogue - 0.050 (1) 0.100 (1)" ]
    [ "$(echo ${lines[6]})" = "TMA Q 0.010 (1) - -" ]
    [ "$(echo ${lines[7]})" = "TMA K 0.010 (1) - -" ]
    [ "$(echo ${lines[8]})" = "TMA V 0.010 (1) - -" ]
    [ "$(echo ${lines[9]})" = "wait free 0.010 (2) - -" ]
    [ "$(echo ${lines[10]})" = "wait Q - 0.200 (1) 0.200 (1)" ]
    [ "$(echo ${lines[11]})" = "wait K - 0.010 (2) 0.010 (1)" ]
    [ "$(echo ${lines[12]})" = "wait V - 0.025 (2) 0.010 (1)" ]
    [ "$(echo ${lines[13]})" = "wait turn - 0.010 (1) 0.140 (1)" ]
    # producer 20 of 50 ns; consumer 0: wait Q 200 + wait K 20 + wait turn 10 + wait V (inside
    # S) 50 of 1200 ns; consumer 1: 200 + 10 + 140 + 10 of 1200 ns
    [ "$(echo ${lines[14]})" = "waited 40.0% 23.3% 30.0%" ]
    [ "${#lines[@]}" -eq 15 ]
}

@test "regions trace, 07's units: one track per warpgroup named by its role; nested regions are not overlaps" {
    run "$UNIT" regions-trace pingpong "$BATS_TEST_TMPDIR/p.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/p.json" tracks
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$(printf 'SM 0 slot 0 warpgroup 0 (producer)\t5')" ]
    [ "${lines[1]}" = "$(printf 'SM 0 slot 0 warpgroup 1 (consumer 0)\t13')" ]
    [ "${lines[2]}" = "$(printf 'SM 0 slot 0 warpgroup 2 (consumer 1)\t8')" ]
    [ "${lines[3]}" = "tracks=3" ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/p.json" inside
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "kernels=1" ]
    [ "${lines[1]}" = "outside=0" ]
    [ "${lines[2]}" = "overlap=0" ]
}

@test "regions_query first_load: the producer's first TMA K against each consumer's first S, per block" {
    run "$UNIT" regions-trace pingpong "$BATS_TEST_TMPDIR/p.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/p.json" first_load
    [ "$status" -eq 0 ]
    [ "$output" = "blocks=1 missing=0 violations=0" ]
    # the K load ends at 410 ns, after consumer 0's first S began at 320
    run "$UNIT" regions-trace pingpong-overlap "$BATS_TEST_TMPDIR/o.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/o.json" first_load
    [ "$status" -eq 0 ]
    [ "$output" = "blocks=1 missing=0 violations=1" ]
    # a block without consumers' regions is missing, not passed
    run "$UNIT" regions-trace pairs "$BATS_TEST_TMPDIR/w.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/w.json" first_load
    [ "$status" -eq 0 ]
    [ "$output" = "blocks=4 missing=4 violations=0" ]
}

@test "regions_query pingpong: overlapping O+=PV of the two consumers counted; each softmax's share under the other's products" {
    run "$UNIT" regions-trace pingpong "$BATS_TEST_TMPDIR/p.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/p.json" pingpong
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "blocks=1" ]
    [ "${lines[1]}" = "pv_overlap=0" ]
    # consumer 0: softmax 600-900 under consumer 1's S 450-800 for 200 of its 500 ns;
    # consumer 1: softmax 800-1200 under consumer 0's S 910-1050 for 140 of 400 ns
    [ "${lines[2]}" = "softmax_share_c0=0.400" ]
    [ "${lines[3]}" = "softmax_share_c1=0.350" ]
    [ "${#lines[@]}" -eq 4 ]
    # consumer 1's O+=PV 440-460 overlaps consumer 0's 420-450
    run "$UNIT" regions-trace pingpong-overlap "$BATS_TEST_TMPDIR/o.json"
    [ "$status" -eq 0 ]
    run python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/o.json" pingpong
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "pv_overlap=1" ]
}

@test "--regions: a stage without a regions build refuses it with one line, exit 2 (no GPU needed)" {
    make -s -C "$ROOT" 02_inplace
    run "$ROOT/02_inplace/run" --regions   # no context: refused before the device check
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [ "${lines[0]}" = "--regions: 02_inplace has no regions build (the stages with region markers: 04_efficient, 05_flash, 07_hopper)" ]
}

@test "--regions: a bad count is refused with one line, exit 2" {
    make -s -C "$ROOT" 05_flash
    run "$ROOT/05_flash/run" --regions=0   # no context: refused before the device check
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == *"--regions: 0 is out of range (expected 1 to 1024)" ]]
    run "$ROOT/05_flash/run" --regions x   # no context: refused before the device check
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "--regions: "*"x"* ]]
    run "$ROOT/05_flash/run" --regions -1   # no context: refused before the device check
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "--regions: "*"-1"* ]]
    run "$ROOT/05_flash/run" --regions 3 4   # no context: refused before the device check
    [ "$status" -eq 2 ]
    [[ "${lines[0]}" == *"unexpected argument '4'"* ]]
}

@test "regions_query.py: a trace it cannot read, or not of the right shape: one line, exit 1, no zeros" {
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/none.json" tracks
    [ "$status" -eq 1 ]
    [ "$stderr" = "regions_query.py: cannot read $BATS_TEST_TMPDIR/none.json: No such file or directory" ]
    printf '{"traceEvents": {}}\n' > "$BATS_TEST_TMPDIR/t.json"
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" tracks
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "$stderr" = "regions_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents is a dict, not a list" ]
    printf '[1]\n' > "$BATS_TEST_TMPDIR/t.json"
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" tracks
    [ "$status" -eq 1 ]
    [ "$stderr" = "regions_query.py: $BATS_TEST_TMPDIR/t.json: the top level is a list, not an object" ]
    printf '{"traceEvents": [{"ph": "X", "cat": "gpu_region", "pid": 1, "ts": 1, "dur": 1}]}\n' > "$BATS_TEST_TMPDIR/t.json"
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" tracks
    [ "$status" -eq 1 ]
    [ "$stderr" = "regions_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[0] is a gpu_region event without a number tid" ]
    printf 'nope\n' > "$BATS_TEST_TMPDIR/t.json"
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" tracks
    [ "$status" -eq 1 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "regions_query.py: $BATS_TEST_TMPDIR/t.json: not JSON ("* ]]
}

@test "regions_query.py: no arguments, an unknown query, inside without a regions pass kernel: one line, exit 1" {
    run --separate-stderr python3 "$ROOT/tests/regions_query.py"
    [ "$status" -eq 1 ]
    [ "$stderr" = "regions_query.py: usage: regions_query.py TRACE tracks|inside|order|first_load|pingpong" ]
    printf '{"traceEvents": []}\n' > "$BATS_TEST_TMPDIR/t.json"
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" nosuch
    [ "$status" -eq 1 ]
    [ "$stderr" = "regions_query.py: usage: regions_query.py TRACE tracks|inside|order|first_load|pingpong" ]
    run --separate-stderr python3 "$ROOT/tests/regions_query.py" "$BATS_TEST_TMPDIR/t.json" inside
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "$stderr" = "regions_query.py: $BATS_TEST_TMPDIR/t.json: no kernel event of the regions pass (args \"regions pass\": 1)" ]
}

@test "--regions: --help offers it only where the stage has a regions build (04, 05, 07)" {
    local s n
    for s in 01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn 07_hopper; do
        [ -x "$ROOT/$s/run" ] || continue
        run "$ROOT/$s/run" --help
        [ "$status" -eq 0 ]
        n=$(printf '%s\n' "$output" | grep -c -- '--regions \[N\]' || true)
        echo "$s: $n"
        case "$s" in
            04_efficient | 05_flash | 07_hopper) [ "$n" -eq 2 ] ;;
            *) [ "$n" -eq 0 ] ;;
        esac
    done
}
