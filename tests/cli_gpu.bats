#!/usr/bin/env bats
# The tests of the stages' CLI that common.bats (marked "# lane: cpu": tests/run_suites.sh runs
# it beside the GPU lane) cannot hold: runs that go on to the device where one is present (a
# shape too large for its memory, --trace /dev/null, --seq=17, --seed 2^64 - 1; each creates a
# CUDA context on a GPU). Without a GPU they run on the CPU as the rest.

load helpers

# cli FLAGS...: ./04_efficient/run with its trace in the test's temp dir (as common.bats's cli).
cli() { run "$ROOT/04_efficient/run" --trace "$BATS_TEST_TMPDIR/cli/t.json" "$@"; }

# ---- runs that reach the device where there is one --------------------------------------------
@test "cli: on a GPU, a shape too large for device memory exits 2 and writes no trace" {
    require_gpu
    run "$ROOT/01_naive/run" --trace "$BATS_TEST_TMPDIR/cli/t.json" --batch 4096 --heads 4096 --seq 1024 --quiet
    [ "$status" -eq 2 ]
    [[ "$output" == *"bytes of device memory"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/cli/t.json" ]
}

# The run's trace check happens before the device probe: without a GPU, a path that passes the
# check goes on to "no CUDA device"; with one, the run goes on.
@test "cli: --trace /dev/null means none; without a GPU the run gets to the device probe and leaves /dev/null alone" {
    if no_gpu; then
        run "$ROOT/01_naive/run" --batch 1 --heads 1 --seq 17 --trace /dev/null
        [ "$status" -eq 2 ]
        [[ "$output" == "no CUDA device"* ]]
    else
        run "$ROOT/01_naive/run" --batch 1 --heads 1 --seq 17 --quiet --no-counters --no-timeline --trace /dev/null
        [ "$status" -eq 0 ]
        [ "$(field trace)" = none ]
    fi
    [ -c /dev/null ]
}

@test "cli: --flag=value on a real stage: --seq=17 is parsed, the run goes on to the device" {
    cli --seq=17 --head-dim=64 --no-counters --no-timeline
    [[ "$output" != *"unknown flag"* ]]
    [[ "$output" != *"--seq"* ]]
    cli --seq=0
    [ "$status" -eq 2 ]
    [ "$output" = "--seq: 0 is out of range (expected 1 to 1048576)" ]
    cli --seq=
    [ "$status" -eq 2 ]
    [ "$output" = "--seq: '' is not an integer: digits only, no sign or space (expected 1 to 1048576)" ]
}

@test "cli: --seed takes 0 to 2^64 - 1, refuses a sign and 2^64; limits in words" {
    cli --seed 18446744073709551615 --seq 17 --no-counters --no-timeline
    [[ "$output" != *"--seed"* ]]          # accepted: the run goes on (to the device)
    cli --seed -1
    [ "$status" -eq 2 ]
    [ "$output" = "--seed: -1 is out of range (expected an integer from 0 to 2^64 - 1)" ]
    cli --seed 18446744073709551616
    [ "$status" -eq 2 ]
    [[ "$output" == "--seed: 18446744073709551616 is out of range"* ]]
    cli --seed +5
    [ "$status" -eq 2 ]
    [[ "$output" == "--seed: '+5' is not an integer"* ]]
    cli --check-rows 99999999999999999999
    [ "$status" -eq 2 ]
    [ "$output" = "--check-rows: 99999999999999999999 is out of range (expected a positive integer, or all)" ]
    cli --check-rows -3
    [ "$status" -eq 2 ]
    for f in --seed --check-rows; do
        cli "$f" x
        [ "$status" -eq 2 ]
        [[ "$output" != *9223372036854775807* ]]
    done
}
