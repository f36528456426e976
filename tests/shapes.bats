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

# expect_pass STAGE BOUND ARGS...: exit 0, check=PASS, rel_l2 <= BOUND; else the case goes to FAILS.
expect_pass() {
    local stage=$1 bound=$2; shift 2
    run "$ROOT/$stage/run" "$@" "${FLAGS[@]}"
    local err; err=$(field rel_l2)
    if [ "$status" -ne 0 ] || [ "$(field check)" != PASS ] ||
       ! python3 -c "import sys; sys.exit(0 if float('$err') <= $bound else 1)" 2>/dev/null; then
        FAILS+=("$stage $*: exit $status, rel_l2=${err:-?} (bound $bound): $(printf '%s\n' "$output" | tail -n 2 | tr '\n' ' ')")
    else
        echo "ok  $stage $*: rel_l2=$err max_abs=$(field max_abs) err_ratio=$(field err_ratio)"
    fi
}

# expect_refused STAGE HEAD_DIM: exit 2 and a one-line reason naming the head_dim.
expect_refused() {
    local stage=$1 d=$2
    run "$ROOT/$stage/run" --batch 1 --heads 2 --seq 17 --head-dim "$d" "${FLAGS[@]}"
    if [ "$status" -ne 2 ] || [[ "$output" != *"head_dim $d is not supported"* ]]; then
        FAILS+=("$stage --head-dim $d: expected exit 2 'head_dim $d is not supported', got exit $status: $output")
    else
        echo "ok  $stage --head-dim $d refused: $output"
    fi
}

# all_cases STAGE BOUND: the shape grid, odd batch/heads and the poisoned row.
all_cases() {
    local stage=$1 bound=$2 seq d
    for seq in 1 17 255 1000; do
        for d in 64 128; do
            expect_pass "$stage" "$bound" --batch 1 --heads 2 --seq "$seq" --head-dim "$d"
        done
    done
    expect_pass "$stage" "$bound" --batch 1 --heads 1 --seq 77 --head-dim 64
    expect_pass "$stage" "$bound" --batch 3 --heads 5 --seq 77 --head-dim 64
    expect_pass "$stage" "$bound" --batch 5 --heads 3 --seq 77 --head-dim 128
    expect_pass "$stage" "$bound" --batch 1 --heads 2 --seq 17 --head-dim 64 --poison-q 5
}

# report: fail the test, listing every failed case.
report() {
    if [ "${#FAILS[@]}" -gt 0 ]; then
        printf 'FAILED: %s\n' "${FAILS[@]}"
        return 1
    fi
}

@test "shapes: 01_naive on odd shapes, every row checked" {
    FAILS=()
    all_cases 01_naive 1e-2
    expect_pass 01_naive 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96
    report
}

@test "shapes: 02_inplace on odd shapes, every row checked" {
    FAILS=()
    all_cases 02_inplace 1e-2
    expect_pass 02_inplace 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96
    report
}

@test "shapes: 03_math on odd shapes, every row checked (bound 4e-3)" {
    FAILS=()
    all_cases 03_math 4e-3
    expect_pass 03_math 4e-3 --batch 1 --heads 2 --seq 77 --head-dim 96
    report
}

@test "shapes: 04_efficient on odd shapes, every row checked; head_dim 96 refused" {
    FAILS=()
    all_cases 04_efficient 1e-2
    expect_refused 04_efficient 96
    report
}

@test "shapes: 05_flash on odd shapes, every row checked; head_dim 96 refused" {
    FAILS=()
    all_cases 05_flash 1e-2
    expect_refused 05_flash 96
    report
}

@test "shapes: 06_cudnn on odd shapes, every row checked; head_dim 96 runs, 100 refused" {
    FAILS=()
    all_cases 06_cudnn 1e-2
    expect_pass 06_cudnn 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96
    expect_refused 06_cudnn 100
    report
}
