#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: the reference runs under docs/h200/ (bench/reference_runs.sh) can be read without a
# GPU: one output and one trace per stage, each output with its profiler table and its summary
# line, each trace passing the trace checks and small enough for the repository. Until a run has
# been installed (bash bench/reference_runs.sh --install DIR), every test here skips, saying so.
load helpers

H200="$ROOT/docs/h200"
TRACE_MAX_BYTES=$((4 * 1024 * 1024))      # as bench/reference_runs.sh

setup() {
    if ! ls "$H200"/[0-9][0-9]_*.txt >/dev/null 2>&1; then
        skip "NO REFERENCE RUNS: docs/h200/ holds no NN_x.txt yet; run bash bench/reference_runs.sh on the GPU machine, then --install its directory"
    fi
}

stages() {
    (cd "$ROOT" && ls -d [0-9][0-9]_*/ | tr -d /)
}

@test "reference runs: every stage has its output and its trace under docs/h200/" {
    for stage in $(stages); do
        echo "checking docs/h200/$stage.txt and .json"
        [ -s "$H200/$stage.txt" ]
        [ -s "$H200/$stage.json" ]
    done
}

@test "reference runs: every output ends with its stage's passing summary line at the blog's shape" {
    for out in "$H200"/[0-9][0-9]_*.txt; do
        name=$(basename "$out" .txt)
        last=$(tail -n 1 "$out")
        echo "$name: $last"
        [[ "$last" == "result stage=${name%%_rung*} shape=8x16x1024x64 "* ]]
        [[ "$last" == *" check=PASS "* ]]
    done
}

@test "reference runs: every output holds the profiler table, its footer and the kernel details" {
    for out in "$H200"/[0-9][0-9]_*.txt; do
        echo "checking $out"
        [ "$(grep -c '^ *Name  *Self CPU %' "$out")" -eq 1 ]
        [ "$(grep -c '^Self CPU time total: ' "$out")" -eq 1 ]
        [ "$(grep -c '^Self CUDA time total: ' "$out")" -eq 1 ]
        [ "$(grep -c '^check: PASS' "$out")" -eq 1 ]
        grep -q 'counters:' "$out"
    done
}

@test "reference runs: every trace passes the trace checks and is small enough to commit" {
    for trace in "$H200"/[0-9][0-9]_*.json; do
        echo "checking $trace ($(stat -c %s "$trace") bytes)"
        trace_query "$trace" valid
        [ "$(stat -c %s "$trace")" -le "$TRACE_MAX_BYTES" ]
        [ "$(trace_query "$trace" ranges attn_fwd)" -eq 3 ]
        [ "$(trace_query "$trace" profiler-steps | tr '\n' ' ')" = "ProfilerStep#2 ProfilerStep#3 ProfilerStep#4 " ]
        [ "$(trace_query "$trace" kernels | wc -l)" -ge 3 ]
        [ "$(trace_query "$trace" flows)" -ge 3 ]
    done
}

@test "reference runs: bench/compare.py render draws one row per stage from the outputs" {
    cat "$H200"/[0-9][0-9]_*.txt > "$BATS_TEST_TMPDIR/summary.txt"
    run py_stdlib "$ROOT/bench/compare.py" render "$BATS_TEST_TMPDIR/summary.txt" "$BATS_TEST_TMPDIR/out"
    echo "$output"
    [ "$status" -eq 0 ]
    for stage in $(stages); do
        [ "$(grep -c "^$stage " <<< "$output")" -eq 1 ]
    done
}
