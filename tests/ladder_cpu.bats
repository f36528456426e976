#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: bench/ladder.py (`make ladder`) on bad input: a flag argparse refuses, an OUTDIR that
# cannot hold its files, a summary file it cannot read or whose shape is not BxHxSxD. Each is one
# line on stderr ("ladder: ..."), exit 2, no traceback, nothing written.
bats_require_minimum_version 1.5.0
load helpers

DATA="$ROOT/tests/data/ladder_summary.txt"

# ladder_bad ARGS...: bench/ladder.py ARGS; stdout in $output, stderr in $stderr.
ladder_bad() {
    run --separate-stderr python3 "$ROOT/bench/ladder.py" "$@"
    echo "$stderr"
}

@test "ladder: argparse errors are one line (not usage + error), exit 2" {
    ladder_bad
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "ladder: the following arguments are required: cmd (bench/ladder.py --help)" ]
    ladder_bad render "$DATA"
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: the following arguments are required: outdir (bench/ladder.py --help)" ]
    ladder_bad run --nope
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: unrecognized arguments: --nope (bench/ladder.py --help)" ]
    ladder_bad run --shape
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: argument --shape: expected one argument (bench/ladder.py --help)" ]
}

@test "ladder render: an OUTDIR that cannot hold the table: one line, exit 2, no table" {
    ladder_bad render "$DATA" /etc/passwd
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: OUTDIR /etc/passwd is not a directory" ]
    ladder_bad render "$DATA" /etc/passwd/out
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: OUTDIR /etc/passwd/out: /etc/passwd is not a directory" ]
    ladder_bad render "$DATA" /proc/o
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "ladder: OUTDIR /proc/o: cannot create a directory in /proc ("* ]]
}

@test "ladder render: a summary file it cannot read: one line, exit 2, nothing written" {
    ladder_bad render "$BATS_TEST_TMPDIR/missing.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: cannot read $BATS_TEST_TMPDIR/missing.txt: No such file or directory" ]
    ladder_bad render /bin/ls "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: cannot read /bin/ls: not a UTF-8 text file (summary lines expected)" ]
    ladder_bad render "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "ladder: cannot read $BATS_TEST_TMPDIR: Is a directory" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "ladder render: a summary line whose shape is not BxHxSxD: one line, exit 2, nothing written" {
    sed -e 's/ shape=8x16x1024x64 / shape=..\/x /' "$DATA" > "$BATS_TEST_TMPDIR/s.txt"
    grep -q ' shape=\.\./x ' "$BATS_TEST_TMPDIR/s.txt"
    ladder_bad render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: a summary line's shape=../x is not BxHxSxD with positive integers" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
    [ ! -e "$BATS_TEST_TMPDIR/x.md" ]
}

@test "ladder render: a good summary into a new OUTDIR writes the table there and prints it" {
    ladder_bad render "$DATA" "$BATS_TEST_TMPDIR/new/out"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    cmp <(printf '%s\n' "$output") "$BATS_TEST_TMPDIR/new/out/ladder_8x16x1024x64.md"
}

@test "ladder run: an --outdir that cannot be created: one line, exit 2, before any rung runs" {
    [ -x "$ROOT/07_hopper/run" ] || skip "./07_hopper/run is not built (make 07_hopper)"
    ladder_bad run --shape 1x1x64x64 --outdir /etc/passwd
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: --outdir /etc/passwd is not a directory" ]
    ladder_bad run --shape 1x1x64x64 --outdir /proc/o/x
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "ladder: --outdir /proc/o/x: cannot create a directory in /proc ("* ]]
}

@test "ladder render: a rung's summary line without shape=: one line, exit 2, nothing written" {
    sed -e '0,/ shape=8x16x1024x64 / s/ shape=8x16x1024x64 / /' "$DATA" > "$BATS_TEST_TMPDIR/s.txt"
    [ "$(grep -c ' shape=' "$BATS_TEST_TMPDIR/s.txt")" -eq 3 ]
    ladder_bad render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: rung 1's summary line has no shape= (BxHxSxD)" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "ladder render: rungs whose summary lines name different shapes: one line, exit 2, nothing written" {
    sed -e '/^result .* gpu_us=56.5 /s/ shape=8x16x1024x64 / shape=1x1x64x64 /' "$DATA" > "$BATS_TEST_TMPDIR/s.txt"
    [ "$(grep -c ' shape=1x1x64x64 ' "$BATS_TEST_TMPDIR/s.txt")" -eq 1 ]
    ladder_bad render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: the rungs' summary lines name different shapes (1x1x64x64, 8x16x1024x64): one ladder is one shape" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}
