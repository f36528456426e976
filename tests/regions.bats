#!/usr/bin/env bats
# GPU: the regions pass (--regions N) of 04_efficient and 05_flash. One run per stage at the
# blog's shape with --regions (default 4 SMs) and one without, made once in setup_file and read
# by every test: the regions build passes the same check as the kernel it instruments, the pass
# changes neither gpu_us nor O, the trace gets one track per (SM, slot, warp) with every region
# inside the pass's kernel, 05's barrier order holds on the timeline, and the overhead of the
# instrumented kernel is printed.
load helpers

setup_file() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || return 0
    local root; root="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
    make -s -C "$root" 04_efficient 05_flash
    for s in 04_efficient 05_flash; do
        "$root/$s/run" --regions --trace "$BATS_FILE_TMPDIR/$s.json" > "$BATS_FILE_TMPDIR/$s.regions" 2>&1
        echo "rc=$?" >> "$BATS_FILE_TMPDIR/$s.regions"
        "$root/$s/run" --trace none --quiet > "$BATS_FILE_TMPDIR/$s.plain" 2>&1
    done
}

setup() {
    require_gpu
}

# regions_line KEY: the value of KEY=... on the run's "regions stage=..." line
regions_field() {
    printf '%s\n' "$output" | grep '^regions stage=' | tr ' ' '\n' | sed -n "s/^$1=//p"
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
    for o in 04_efficient/efficient 05_flash/flash; do
        [ "$("$dump" -sass "$ROOT/build/$o.cu.o" | grep -c 'SR_GLOBALTIMER')" -eq 0 ]
        at_most 1 "$("$dump" -sass "$ROOT/build/$o.regions.cu.o" | grep -c 'SR_GLOBALTIMER')"
    done
}
