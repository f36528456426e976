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

# A case: "pass STAGE BOUND ARGS..." (exit 0, check=PASS, rel_l2 <= BOUND) or "refuse STAGE
# HEAD_DIM" (exit 2 and a one-line reason naming the head_dim), its run shape_run_flags's (every
# row checked, --quiet, no trace). The runs (tests/runs.bash: stage_shape_cases) go at once before
# the first test, without the counter pass and the timeline pass; a test checks each of its
# stage's cases and lists every case that failed.
setup_file() { prerun_suite; }

# check_case KIND STAGE BOUND|HEAD_DIM [ARGS...]: the case's assertions on its saved run.
check_case() {
    local kind=$1 stage=$2 c="$*"
    # shellcheck disable=SC2046  # the run's words
    stage_result $(shape_run_flags "$@") || { FAILS+=("$c: did not run"); return 0; }
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

# stage_cases STAGE: every case of STAGE checked; the test fails listing each failed case.
stage_cases() { quick stage_checks "$@"; }
stage_checks() {
    local c
    FAILS=()
    while read -r c; do
        # shellcheck disable=SC2086  # the case's words
        check_case $c
    done < <(stage_shape_cases "$1")
    [ "$(stage_shape_cases "$1" | grep -c .)" -ge 13 ]
    report_fails
}

@test "shapes: 01_naive on odd shapes, every row checked" { stage_cases 01_naive; }
@test "shapes: 02_inplace on odd shapes, every row checked" { stage_cases 02_inplace; }
@test "shapes: 03_math on odd shapes, every row checked (bound 4e-3)" { stage_cases 03_math; }
@test "shapes: 04_efficient on odd shapes, every row checked; head_dim 96 refused" { stage_cases 04_efficient; }
@test "shapes: 05_flash on odd shapes, every row checked; head_dim 96 refused" { stage_cases 05_flash; }
@test "shapes: 06_cudnn on odd shapes, every row checked; head_dim 96 runs, 100 refused" { stage_cases 06_cudnn; }
