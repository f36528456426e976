# tests/runs.bash: the lean stage runs each GPU suite reads (loaded by tests/helpers.bash).
#
# A run is a case of lean_run (tests/helpers.bash): "STAGE FLAGS..." (a last word #N: the N-th of
# repeated runs with the same flags), run as ./STAGE/run without the counter pass and the timeline
# pass, its stdout and stderr, exit status and trace kept under $CASES_DIR, one directory for the
# whole bats run. A suite's tests read their runs with stage_result. The runs are listed here, one
# function per suite, so that both the suite's setup_file (prerun_suite: a suite run alone) and
# tests/setup_suite.bash (every suite of a bats run, all their runs at once before the first test)
# can run them ahead. A run two suites list runs once.
#
# Runs that must have the GPU to themselves are not here: the counter pass, the timeline pass and
# --regions (CUPTI's profiler and PM sampling are device-wide), and runs whose gpu_us or cpu_us a
# test compares with another run's. Those stay in their tests and set-ups, one after another.

# suite_runs SUITE: the runs of tests/SUITE.bats, one per line (none for a suite without a list).
suite_runs() {
    if declare -F "runs_$1" > /dev/null; then "runs_$1"; fi
}

# test_calls FUNC [FILE]: the arguments of each one-line test of FILE (default: this suite),
# @test "..." { FUNC ARGS; }, one line each.
test_calls() {
    sed -n "s/^@test .*{ $1 \\(.*\\); }\$/\\1/p" "${2:-$BATS_TEST_FILENAME}"
}

# suite_file SUITE: the path of tests/SUITE.bats.
suite_file() {
    echo "$ROOT/tests/$1.bats"
}

# ---- 01-03: the small shape, the defaults, seq 1, head_dim 128, seq 1000, a poisoned row ---------
# eager_runs STAGE POISON_ROW
eager_runs() {
    echo "$1 --batch 1 --heads 2 --seq 77 --check-rows all"
    echo "$1"
    echo "$1 --batch 2 --heads 3 --seq 1 --head-dim 64 --check-rows all"
    echo "$1 --batch 2 --heads 3 --seq 17 --head-dim 128 --check-rows all"
    echo "$1 --batch 1 --heads 2 --seq 1000 --head-dim 64 --check-rows all"
    echo "$1 --batch 1 --heads 2 --seq 77 --poison-q $2 --check-rows all"
}
runs_01_naive() { eager_runs 01_naive 5; }
runs_02_inplace() { eager_runs 02_inplace 76; }
runs_03_math() { eager_runs 03_math 0; }

# ---- 04_efficient ------------------------------------------------------------------------------
# small_flags SEQ HEAD_DIM: the run of 04's small_case.
small_flags() {
    echo "04_efficient --batch 1 --heads 2 --seq $1 --head-dim $2 --check-rows all"
}

runs_04_efficient() {
    local c
    while read -r c; do
        # shellcheck disable=SC2086  # SEQ HEAD_DIM
        small_flags $c
    done < <(test_calls small_case "$(suite_file 04_efficient)")
    echo "04_efficient --batch 2 --heads 4 --seq 4096 --head-dim 64"
    echo "04_efficient --batch 2 --heads 4 --seq 4096 --head-dim 128"
    echo "04_efficient"
    echo "04_efficient --batch 2 --heads 4 --seq 1000 --head-dim 128 --check-rows all --trace none #1"
    echo "04_efficient --batch 2 --heads 4 --seq 1000 --head-dim 128 --check-rows all --trace none #2"
    echo "04_efficient --batch 1 --heads 2 --seq 255 --head-dim 64 --check-rows all --poison-q 70"
}

# ---- the one-kernel stages 05_flash and 07_hopper -----------------------------------------------
# shape_flags STAGE BATCH HEADS SEQ HEAD_DIM: the run of a shape case, every query row checked.
shape_flags() {
    echo "$1 --batch $2 --heads $3 --seq $4 --head-dim $5 --check-rows all"
}

# shape_cases STAGE: the runs of STAGE's suite's one-line shape_case tests.
shape_cases() {
    local c
    while read -r c; do
        # shellcheck disable=SC2086  # BATCH HEADS SEQ HEAD_DIM
        shape_flags "$1" $c
    done < <(test_calls shape_case "$(suite_file "$1")")
}

# one_kernel_runs STAGE REPEATS: the shape cases; per head_dim the seq-1000 run REPEATS times
# (the same O bits each time), a poisoned row and 2x16x2048; the defaults and 2x16x4096x128.
one_kernel_runs() {
    local d i
    shape_cases "$1"
    for d in 64 128; do
        for i in $(seq "$2"); do
            echo "$1 --batch 2 --heads 2 --seq 1000 --head-dim $d --seed 7 --check-rows all --quiet #$i"
        done
        [ "$1" != 05_flash ] || echo "05_flash --batch 1 --heads 2 --seq 77 --head-dim $d --poison-q 5 --check-rows all"
        echo "$1 --batch 2 --heads 16 --seq 2048 --head-dim $d"
    done
    echo "$1"
    echo "$1 --batch 2 --heads 16 --seq 4096 --head-dim 128"
}
runs_05_flash() { one_kernel_runs 05_flash 2; }
runs_07_hopper() {
    [ "$(gpu_cc)" = "9.0" ] || return 0
    one_kernel_runs 07_hopper 3
}

# ---- 06_cudnn: batch 2, heads 4, every row checked, at each shape_case's seq and head_dim -------
runs_06_cudnn() {
    local seq d rest
    while read -r seq d rest; do
        echo "06_cudnn --batch 2 --heads 4 --seq $seq --head-dim $d --check-rows all"
    done < <(test_calls shape_case "$(suite_file 06_cudnn)")
}

# ---- 07_ladder: every rung_case test's runs -----------------------------------------------------
# rung_cases RUNG HEAD_DIM: the runs of 07_ladder's rung_case, one per line as "RUNG B H S D
# FLAGS...": seq 1, 17, 63, 65, 127, 129, 255, 1000 with every row checked and 4097 on sampled
# rows (its float64 reference over every row costs seconds); then the seq-1000 run once more with
# the same seed and --quiet (the repeat).
rung_cases() {
    local seq
    for seq in 1 17 63 65 127 129 255 1000; do
        echo "$1 2 3 $seq $2 --check-rows all --seed 7"
    done
    echo "$1 1 1 4097 $2"
    echo "$1 2 3 1000 $2 --check-rows 1 --seed 7 --quiet"
}

# rung_flags RUNG B H S D FLAGS...: the lean run of a rung case: one correctness run, no trace, one
# profiled step.
rung_flags() {
    echo "07_hopper --rung $1 --batch $2 --heads $3 --seq $4 --head-dim $5 --trace none --warmup 0 --steps 1${6:+ ${*:6}}"
}

runs_07_ladder() {
    local c r
    [ "$(gpu_cc)" = "9.0" ] || return 0
    while read -r c; do
        # shellcheck disable=SC2086  # RUNG HEAD_DIM
        while read -r r; do
            # shellcheck disable=SC2086  # the case's words
            rung_flags $r
        done < <(rung_cases $c)
    done < <(test_calls rung_case "$(suite_file 07_ladder)")
    # the L2-sections test: the rung each builds on and rungs 5-15, at shapes of two sections
    for r in 4 5 6 7 8 9 10 11 12 13 14; do rung_flags "$r" 4 8 4096 64 --seed 7; done
    for r in 3 5 6 7 8 9 11 12 13 14 15; do rung_flags "$r" 1 16 4096 128 --seed 7; done
    # rungs 8-14 with a NaN in a split tile (rung 10: head_dim 64)
    for r in 8 9; do
        rung_flags "$r" 2 3 1000 64 --poison-q 999 --check-rows all
        rung_flags "$r" 2 3 1000 128 --poison-q 999 --check-rows all
    done
    rung_flags 10 2 3 1000 64 --poison-q 999 --check-rows all
    rung_flags 11 2 3 1000 64 --poison-q 999 --check-rows all
    rung_flags 11 2 3 1000 128 --poison-q 999 --check-rows all
    rung_flags 12 2 3 1000 64 --poison-q 999 --check-rows all
    rung_flags 12 2 3 1000 128 --poison-q 999 --check-rows all
    rung_flags 13 2 3 1000 64 --poison-q 999 --check-rows all
    rung_flags 13 2 3 1000 128 --poison-q 999 --check-rows all
    rung_flags 14 2 3 1000 64 --poison-q 999 --check-rows all
    rung_flags 14 2 3 1000 128 --poison-q 999 --check-rows all
    # rung 8 where it has nothing to split
    rung_flags 8 2 3 65 64 --check-rows all --seed 7
    rung_flags 8 2 3 65 128 --check-rows all --seed 7
    # the default rung per head_dim and grid
    echo "07_hopper --batch 2 --heads 128 --seq 77 --head-dim 64 --trace none --warmup 0 --steps 1"
    echo "07_hopper --batch 1 --heads 2 --seq 77 --head-dim 64 --trace none --warmup 0 --steps 1"
    echo "07_hopper --batch 1 --heads 2 --seq 77 --head-dim 128 --trace none --warmup 0 --steps 1"
}

# ---- shapes: every stage on odd shapes ----------------------------------------------------------
# A shapes case: "pass STAGE BOUND ARGS..." (exit 0, check=PASS, rel_l2 <= BOUND) or "refuse STAGE
# HEAD_DIM" (exit 2 and a one-line reason naming the head_dim).

# shape_run_flags KIND STAGE BOUND|HEAD_DIM [ARGS...]: the lean run of a shapes case.
shape_run_flags() {
    if [ "$1" = pass ]; then
        echo "$2 ${*:4} --check-rows all --quiet --trace none"
    else
        echo "$2 --batch 1 --heads 2 --seq 17 --head-dim $3 --check-rows all --quiet --trace none"
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

# stage_shape_cases STAGE: the shapes cases of STAGE's test: the grid at its bound (4e-3 for
# 03_math's FP32 path, 1e-2 for the others) and its other head_dim (96 runs on 01-03 and 06, 04
# and 05 refuse it, 06 refuses 100).
stage_shape_cases() {
    case "$1" in
        01_naive | 02_inplace) all_cases "$1" 1e-2; echo "pass $1 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96" ;;
        03_math) all_cases "$1" 4e-3; echo "pass $1 4e-3 --batch 1 --heads 2 --seq 77 --head-dim 96" ;;
        04_efficient | 05_flash) all_cases "$1" 1e-2; echo "refuse $1 96" ;;
        06_cudnn) all_cases "$1" 1e-2; echo "pass $1 1e-2 --batch 1 --heads 2 --seq 77 --head-dim 96"; echo "refuse $1 100" ;;
    esac
}

runs_shapes() {
    local s c
    for s in 01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn; do
        while read -r c; do
            # shellcheck disable=SC2086  # the case's words
            shape_run_flags $c
        done < <(stage_shape_cases "$s")
    done
}
