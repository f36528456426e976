# Shared helpers for the Bats suites. Load with: load helpers
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"

# The unit-test binary (CPU suites build it in setup_file with build_unit).
UNIT="$ROOT/build/common_unit"

# CPU suites that drive build/common_unit: setup_file() { build_unit; }
build_unit() {
    make -s -C "$ROOT" build/common_unit
}

# GPU suites call this in setup(): skip, with the stages' own reason, where no CUDA device can run
# them: tests/need_gpu.sh (nvidia-smi listing a GPU, else a built stage's own "no CUDA device: ..."
# line: no driver, the toolkit's stub, a driver too old, no GPU). Asked once per bats run; the
# answer is kept in $BATS_RUN_TMPDIR.
require_gpu() {
    local cache="$BATS_RUN_TMPDIR/need_gpu" why
    if [ ! -e "$cache" ]; then
        why=$(bash "$ROOT/tests/need_gpu.sh") || true
        printf '%s\n' "$why" > "$cache.$$" && mv "$cache.$$" "$cache"
    fi
    why=$(cat "$cache")
    [ -z "$why" ] || skip "$why (this test needs an NVIDIA GPU)"
}

# run_stage STAGE [flags...]: runs ./STAGE/run with its trace in the test's temp dir, without the
# counter pass and the timeline pass (each one more forward under CUPTI, a second or more of set-up
# per run: the correctness, table and trace tests do not read them); sets $status/$output (Bats
# run) and TRACE.
run_stage() {
    local stage=$1; shift
    TRACE="$BATS_TEST_TMPDIR/$stage.json"
    run "$ROOT/$stage/run" --trace "$TRACE" --no-counters --no-timeline "$@"
}

# run_stage_profiled STAGE [flags...]: the same with every pass a student's run has (the counter
# pass and the timeline pass unless the flags turn them off): the tests that read counters.
run_stage_profiled() {
    local stage=$1; shift
    TRACE="$BATS_TEST_TMPDIR/$stage.json"
    run "$ROOT/$stage/run" --trace "$TRACE" "$@"
}

# field KEY: the value of KEY=... in the summary line (the last line of $output).
field() {
    local line
    line=$(printf '%s\n' "$output" | grep '^result ' | tail -n 1)
    printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# trace_query PATH WHAT: facts about a Chrome trace, one per line, from tests/trace_query.py.
trace_query() {
    python3 "$ROOT/tests/trace_query.py" "$@"
}

# The summary line's rel_l2 is at most $1.
assert_rel_l2_le() {
    local err; err=$(field rel_l2)
    python3 -c "import sys; e=float('$err'); sys.exit(0 if e <= $1 else 1)" || {
        echo "rel_l2=$err exceeds $1"; return 1; }
}

# at_most A B: exit 0 when the number A <= B (python3 arithmetic: A and B may be expressions).
at_most() {
    python3 -c "import sys; a = float($1); b = float($2); print('%g <= %g ?' % (a, b)); sys.exit(0 if a <= b else 1)"
}

# The CUPTI-client tests: a tool (ncu, nsys) from PATH or the CUDA toolkit's bin, else empty.
find_tool() {
    command -v "$1" 2>/dev/null || { [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/$1" ] && echo "${CUDA_HOME:-/usr/local/cuda}/bin/$1"; } || true
}

# Every kernel of $TRACE that has counters: achieved occupancy (sm__warps_active, % of peak)
# at most the theoretical occupancy we compute + 1 percentage point (the counter averages warps
# over active cycles; one point covers its sampling granularity). Prints each pair.
assert_achieved_le_theoretical() {
    local pairs
    pairs=$(trace_query "$TRACE" achieved)
    printf '%s\n' "$pairs"
    [ -n "$pairs" ]
    printf '%s\n' "$pairs" | python3 -c '
import sys
bad = [l for l in sys.stdin.read().splitlines()
       if l.split("\t")[2] == "-" or float(l.split("\t")[1]) > float(l.split("\t")[2]) + 1.0]
print("over:", bad) if bad else None
sys.exit(1 if bad else 0)'
}
