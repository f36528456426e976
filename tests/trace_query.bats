#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: tests/trace_query.py, the trace reader of the GPU suites. `valid` holds a trace to its
# shape (a JSON object; traceEvents a list of objects; schemaVersion, deviceProperties) and fails,
# exit 1 with one line, on anything else; so does every other query. The reference traces of
# docs/h200/ are valid.
bats_require_minimum_version 1.8.0
load helpers

# trace FILE JSON: FILE holds JSON.
trace() {
    printf '%s\n' "$2" > "$1"
}

# valid_of FILE: trace_query.py FILE valid; status in $status, the reason in $stderr.
valid_of() {
    run --separate-stderr trace_query_py "$1" valid
    echo "$stderr"
}

@test "trace_query valid: a minimal trace of the right shape passes" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "args": {"step": 1}}, {"ph": "M", "args": null}]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
}

@test "trace_query valid: traceEvents an object, a string, missing: exit 1 with one line" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": {"ph": "X"}}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents is a dict, not a list" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": "X"}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents is a str, not a list" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": []}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents is missing, not a list" ]
}

@test "trace_query valid: an event that is not an object, args that are not an object: exit 1" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X"}, 3]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[1] is a int, not an object" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "args": [1]}]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[0].args is not an object" ]
}

@test "trace_query valid: no schemaVersion, no deviceProperties, a list at the top: exit 1" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"deviceProperties": [], "traceEvents": []}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: no schemaVersion" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "traceEvents": []}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: no deviceProperties" ]
    trace "$BATS_TEST_TMPDIR/t.json" '[{"traceEvents": []}]'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: the top level is a list, not an object" ]
}

@test "trace_query valid: a file cut short, not there: exit 1 with one line" {
    head -c 1000 "$ROOT/docs/h200/07_hopper.json" > "$BATS_TEST_TMPDIR/cut.json"
    valid_of "$BATS_TEST_TMPDIR/cut.json"
    [ "$status" -eq 1 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "trace_query.py: $BATS_TEST_TMPDIR/cut.json: not JSON ("* ]]
    valid_of "$BATS_TEST_TMPDIR/none.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: cannot read $BATS_TEST_TMPDIR/none.json: No such file or directory" ]
}

@test "trace_query: every other query fails the same way on a bad trace (no traceback)" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": {"ph": "X"}}'
    run --separate-stderr trace_query_py "$BATS_TEST_TMPDIR/t.json" kernels
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents is a dict, not a list" ]
}

@test "trace_query valid: every reference trace under docs/h200/ passes" {
    for t in "$ROOT"/docs/h200/[0-9][0-9]_*.json; do
        echo "$t"
        trace_query "$t" valid
    done
}

# query_of FILE WHAT [ARG...]: trace_query.py FILE WHAT ARG...; stdout in $output, stderr in $stderr.
query_of() {
    run --separate-stderr trace_query_py "$@"
    echo "$stderr"
}

@test "trace_query: no arguments, a query without its arguments, a bad regex: one line, exit 1" {
    query_of
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "$stderr" = "trace_query.py: usage: trace_query.py PATH WHAT [ARG...] (WHAT: see the top of tests/trace_query.py)" ]
    query_of "$ROOT/docs/h200/05_flash.json" counter
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: counter takes 2 arguments, got 0; usage: trace_query.py PATH WHAT [ARG...] (WHAT: see the top of tests/trace_query.py)" ]
    query_of "$ROOT/docs/h200/05_flash.json" count
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: count takes 1 argument, got 0; usage: trace_query.py PATH WHAT [ARG...] (WHAT: see the top of tests/trace_query.py)" ]
    query_of "$ROOT/docs/h200/05_flash.json" counter '(' dram__bytes_read.sum
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "trace_query.py: counter: REGEX '(' is not a regular expression ("* ]]
}

@test "trace_query valid: a kernel event without a name or args, a name that is not a string: exit 1" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "kernel", "args": {}}]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[0] is a kernel event without a name" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k"}]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[0] is a kernel event without an args object" ]
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": 7}]}'
    valid_of "$BATS_TEST_TMPDIR/t.json"
    [ "$status" -eq 1 ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: traceEvents[0].name is not a string" ]
}

@test "trace_query: a user_annotation without a name is no ProfilerStep; rank without distributedInfo: one line, exit 1" {
    trace "$BATS_TEST_TMPDIR/t.json" '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "user_annotation"}, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1"}]}'
    query_of "$BATS_TEST_TMPDIR/t.json" profiler-steps
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "$output" = "ProfilerStep#1" ]
    query_of "$BATS_TEST_TMPDIR/t.json" facts
    [ "$status" -eq 0 ]
    [ "$(grep -c $'^profiler-steps\t\tProfilerStep#1$' <<< "$output")" -eq 1 ]
    query_of "$BATS_TEST_TMPDIR/t.json" rank
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [ "$stderr" = "trace_query.py: $BATS_TEST_TMPDIR/t.json: no distributedInfo with a rank" ]
}

# The facts a suite reads through helpers.bash (trace_query) are compared as text: a range named
# "1.0" is not "1", "01", "1e0" or "+1" (awk would compare numbers), and each query answers what
# trace_query.py answers on the same trace.
@test "trace_query facts: names that look like numbers are matched as text, as trace_query.py matches them" {
    local ev='{"ph": "X", "cat": "user_annotation", "name": "%s"}' names=(1 1.0 1.0 " 1") n evs=""
    for n in "${names[@]}"; do evs+="${evs:+, }$(printf "$ev" "$n")"; done
    trace "$BATS_TEST_TMPDIR/t.json" "{\"schemaVersion\": 1, \"deviceProperties\": [], \"traceEvents\": [$evs]}"
    [ "$(trace_query "$BATS_TEST_TMPDIR/t.json" ranges 1.0)" -eq 2 ]
    [ "$(trace_query "$BATS_TEST_TMPDIR/t.json" ranges 1)" -eq 1 ]
    [ "$(trace_query "$BATS_TEST_TMPDIR/t.json" ranges ' 1')" -eq 1 ]
    for n in 01 1e0 +1 1.00; do
        [ "$(trace_query "$BATS_TEST_TMPDIR/t.json" ranges "$n")" -eq 0 ]
        [ "$(trace_query_py "$BATS_TEST_TMPDIR/t.json" ranges "$n")" -eq 0 ]
    done
}
