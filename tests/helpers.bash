# Shared helpers for the Bats suites. Load with: load helpers
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"

# GPU suites call this in setup(): skip, with the reason, where no CUDA device is present.
require_gpu() {
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        skip "no CUDA device: nvidia-smi not found (this test needs an NVIDIA GPU)"
    fi
    if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        skip "no CUDA device: nvidia-smi lists no GPU (this test needs an NVIDIA GPU)"
    fi
}

# run_stage STAGE [flags...]: runs ./STAGE/run with its trace in the test's temp dir; sets
# $status/$output (Bats run) and TRACE.
run_stage() {
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
