#!/usr/bin/env bats
# GPU: every stage on odd shapes, every query row checked against the float64 reference.
#   seq {1, 17, 255, 1000} x head_dim {64, 128} at batch 1, heads 2;
#   batch/heads 1x1, 3x5 (head_dim 64) and 5x3 (head_dim 128) at seq 77;
#   --poison-q 5 at seq 17: the harness checks that exactly output row 5 of head (0, 0) is NaN;
#   a head_dim beside 64/128: 01-03 run any head_dim, 06 multiples of 8 up to 256 (96 runs),
#   04/05 refuse 96 and 06 refuses 100 with exit 2 and the reason.
# One test per stage; it runs every case and lists each one that failed.
load helpers

setup() {
    require_gpu
}

FLAGS=(--check-rows all --quiet --trace none --no-counters --no-timeline)

# A case: "pass STAGE BOUND ARGS..." (exit 0, check=PASS, rel_l2 <= BOUND) or "refuse STAGE
# HEAD_DIM" (exit 2 and a one-line reason naming the head_dim). A test runs its stage's cases
# at once (run_parallel: no counter pass, no timeline pass), then checks each one and lists every
# case that failed.

# shape_run KIND STAGE BOUND|HEAD_DIM [ARGS...]: the case's run (run_parallel calls it).
shape_run() {
    local kind=$1 stage=$2; shift 2
    if [ "$kind" = pass ]; then
        shift  # the bound
        "$ROOT/$stage/run" "$@" "${FLAGS[@]}"
    else
        "$ROOT/$stage/run" --batch 1 --heads 2 --seq 17 --head-dim "$1" "${FLAGS[@]}"
    fi
}

# check_case KIND STAGE BOUND|HEAD_DIM [ARGS...]: the case's assertions on its saved run.
check_case() {
    local kind=$1 stage=$2 c="$*"
    load_case "$BATS_TEST_TMPDIR/cases" "$c" || { FAILS+=("$c: did not run"); return 0; }
    if [ "$kind" = pass ]; then
        local bound=$3 err; shift 3
        err=$(field rel_l2)
        if [ "$status" -ne 0 ] || [ "$(field check)" != PASS ] ||
           ! num_le "$err" "$bound"; then
            FAILS+=("$stage $*: exit $status, rel_l2=${err:-?} (bound $bound): $(printf '%s\n' "$output" | tail -n 2 | tr '\n' ' ')")
        else
            echo "ok  $stage $*: rel_l2=$err max_abs=$(field max_abs) err_ratio=$(field err_ratio)"
        fi
    else
        local d=$3
        if [ "$status" -ne 2 ] || [[ "$output" != *"head_dim $d is not supported"* ]]; then
            FAILS+=("$stage --head-dim $d: expected exit 2 'head_dim $d is not supported', got exit $status: $output")
        else
            echo "ok  $stage --head-dim $d refused: $output"
        fi
    fi
}

# all_cases STAGE BOUND: the shape grid, odd batch/heads and the poisoned row, one case per line.
all_cases() {
    local stage=$1 bound=$2 seq d
    for seq in 1 17 255 1000; do
        for d in 64 128; do
            echo "pass $stage $bound --batch 1 --heads 2 --seq $seq --head-dim $d"
        done
    done
    echo "pass $stage $bound --batch 1 --heads 1 --seq 77 --head-dim 64"
    echo "pass $stage $bound --batch 3 --heads 5 --seq 77 --head-dim 64"
    echo "pass $stage $bound --batch 5 --heads 3 --seq 77 --head-dim 128"
    echo "pass $stage $bound --batch 1 --heads 2 --seq 17 --head-dim 64 --poison-q 5"
}

# run_cases CASE...: every case run at once, then checked; the test fails listing each failed case.
run_cases() {
    local c
    FAILS=()
    run_parallel "$BATS_TEST_TMPDIR/cases" shape_run "$@"
    for c in "$@"; do
        # shellcheck disable=SC2086  # the case's words
        check_case $c
    done
    report_fails
}

@test "shapes: 01_naive on odd shapes, every row checked" {
    local cases
    mapfile -t cases < <(all_cases 01_naive 1e-2; echo 'pass 01_naive 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96')
    run_cases "${cases[@]}"
}

@test "shapes: 02_inplace on odd shapes, every row checked" {
    local cases
    mapfile -t cases < <(all_cases 02_inplace 1e-2; echo 'pass 02_inplace 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96')
    run_cases "${cases[@]}"
}

@test "shapes: 03_math on odd shapes, every row checked (bound 4e-3)" {
    local cases
    mapfile -t cases < <(all_cases 03_math 4e-3; echo 'pass 03_math 4e-3 --batch 1 --heads 2 --seq 77 --head-dim 96')
    run_cases "${cases[@]}"
}

@test "shapes: 04_efficient on odd shapes, every row checked; head_dim 96 refused" {
    local cases
    mapfile -t cases < <(all_cases 04_efficient 1e-2; echo 'refuse 04_efficient 96')
    run_cases "${cases[@]}"
}

@test "shapes: 05_flash on odd shapes, every row checked; head_dim 96 refused" {
    local cases
    mapfile -t cases < <(all_cases 05_flash 1e-2; echo 'refuse 05_flash 96')
    run_cases "${cases[@]}"
}

@test "shapes: 06_cudnn on odd shapes, every row checked; head_dim 96 runs, 100 refused" {
    local cases
    mapfile -t cases < <(all_cases 06_cudnn 1e-2; echo 'pass 06_cudnn 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96'; echo 'refuse 06_cudnn 100')
    run_cases "${cases[@]}"
}
