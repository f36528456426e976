#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: bench/ladder.py (`make ladder`) on bad input: a flag argparse refuses, an OUTDIR that
# cannot hold its files, a summary file it cannot read or whose shape is not BxHxSxD. Each is one
# line on stderr ("ladder: ..."), exit 2, no traceback, nothing written. And every rung through
# ptxas with the CI flags (the end of this file).
bats_require_minimum_version 1.8.0
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

@test "ladder render: a rung with two summary lines: one line, exit 2, nothing written" {
    awk '{ print } /^result / && !done { print; done = 1 }' "$DATA" > "$BATS_TEST_TMPDIR/s.txt"
    [ "$(grep -c '^result ' "$BATS_TEST_TMPDIR/s.txt")" -eq "$(( $(grep -c '^result ' "$DATA") + 1 ))" ]
    ladder_bad render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "ladder: rung 1 has two summary lines ('result ...'): one run per rung" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "ladder render: a '|' inside an idea stays in its cell, escaped" {
    sed -e '0,/^rung 1 / s/^rung 1 .*/rung 1 TMA | wgmma/' "$DATA" > "$BATS_TEST_TMPDIR/s.txt"
    run python3 "$ROOT/bench/ladder.py" render "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/out"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^| 1 | TMA \\| wgmma | ' "$BATS_TEST_TMPDIR/out/"ladder_*.md)" -eq 1 ]
    [ "$(grep '^| 1 | ' "$BATS_TEST_TMPDIR/out/"ladder_*.md | sed 's/\\|//g' | tr -cd '|' | wc -c)" -eq 11 ]
}

# Each rung file through ptxas with the CI flags (-Werror: a spill or a warning is an error) and
# -v: every kernel 0 spill bytes, a forward kernel's register count capped at 168 by
# __launch_bounds__(384, 1) (rung 10, and rungs 11-12 at head_dim 64: 128, (512, 1)),
# and no wgmma serialization or ignored setmaxnreg (C75xx). The build keeps each 07_hopper
# object's ptxas report (-Xptxas -v) next to it, <object>.ptxas (the Makefile): where the stage
# was built under CI=true (make's compile line of every rung holds -Xptxas -Werror and
# -Xcompiler -Werror), the test reads the reports; else it compiles the rung files alone with
# those flags, at once (rung_build FILE is one, run_parallel's FUNC).
rung_build() {
    "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
        -I"$ROOT/common" -Xptxas -v -Xptxas -warn-spills -Xptxas -Werror -Xcompiler -Werror \
        -c "$1" -o "$BATS_TEST_TMPDIR/$(basename "$1").o"
}

# ci_built OBJECT...: exit 0 when make's compile line of each object (07_hopper's flags as built:
# the flags stamp rebuilds every object whose flags change) has ptxas's report and warnings as
# errors.
ci_built() {
    local lines o line
    lines=$(make -s -n -B -C "$ROOT" "$@") || return 1
    for o in "$@"; do
        line=$(printf '%s\n' "$lines" | grep -F -- "-o $o ") || return 1
        [[ "$line" == *" -Xptxas -v -gencode arch=compute_90a,code=sm_90a "* ]] || return 1
        [[ "$line" == *" -Xptxas -warn-spills -Xptxas -Werror "* ]] || return 1
        [[ "$line" == *" -Xcompiler -Werror "* ]] || return 1
    done
}

# reports_kept OBJECT...: exit 0 when each object's ptxas report is there, not empty, and not older
# than the flags stamp (a report removed by hand is not remade by make: the object is up to date).
reports_kept() {
    local o
    for o in "$@"; do
        [ -s "$ROOT/$o.ptxas" ] && [ ! "$ROOT/build/flags.stamp" -nt "$ROOT/$o.ptxas" ] || return 1
    done
}

@test "07 ladder: every rung builds under the CI flags without spills or serialized wgmma (no GPU needed)" {
    local f n c rep objs=() reports=""
    run make -s -C "$ROOT" 07_hopper
    echo "$output"
    [ "$status" -eq 0 ]
    for f in "$ROOT"/07_hopper/rung*.cu; do objs+=("build/07_hopper/$(basename "$f").o"); done
    if ci_built "${objs[@]}" && reports_kept "${objs[@]}"; then
        reports=1
    else
        echo "07_hopper is not built under CI=true (or a report is missing): the rungs compiled here with the CI flags"
        run_parallel "$BATS_TEST_TMPDIR/builds" rung_build "$ROOT"/07_hopper/rung*.cu
    fi
    for f in "$ROOT"/07_hopper/rung*.cu; do
        if [ -n "$reports" ]; then # the report of the object make just found up to date
            rep="$ROOT/build/07_hopper/$(basename "$f").o.ptxas"
            echo "$rep"
            [ -s "$rep" ]
            [ ! "$ROOT/build/flags.stamp" -nt "$rep" ]
            output=$(cat "$rep")
        else
            load_case "$BATS_TEST_TMPDIR/builds" "$f"
            echo "$f: $status"
            [ "$status" -eq 0 ]
        fi
        # the forward kernels (one per head_dim the rung runs; rungs 4 and 10: 64 only; rung 15:
        # 128 only) at 168 registers (rung 10, and the head_dim-64 kernels of rungs 11-14: 128, by
        # __launch_bounds__(512, 1)), and the combine kernels of rungs 8-14 (one per head_dim),
        # every one without spills
        n=$(printf '%s\n' "$output" | grep -c "Compiling entry function '_Z[0-9]*flash3_fwd_bf16_causal_")
        c=$(printf '%s\n' "$output" | grep -c "Compiling entry function '_Z[0-9]*flash3_fwd_combine_" || true)
        case "$f" in *rung4_* | *rung10_* | *rung15_*) [ "$n" -eq 1 ] ;; *) [ "$n" -eq 2 ] ;; esac
        case "$f" in *rung8_* | *rung9_* | *rung1[1-4]_*) [ "$c" -eq 2 ] ;; *rung10_*) [ "$c" -eq 1 ] ;; *) [ "$c" -eq 0 ] ;; esac
        [ "$(printf '%s\n' "$output" | grep -c 'Compiling entry function')" -eq $((n + c)) ]
        [ "$(printf '%s\n' "$output" | grep -c '0 bytes spill stores, 0 bytes spill loads')" -eq $((n + c)) ]
        case "$f" in
            *rung10_*) [ "$(printf '%s\n' "$output" | grep -c 'Used 128 registers')" -eq "$n" ] ;;
            *rung1[1-4]_*) [ "$(printf '%s\n' "$output" | grep -c 'Used 128 registers')" -eq 1 ]
                       [ "$(printf '%s\n' "$output" | grep -c 'Used 168 registers')" -eq 1 ] ;;
            *) [ "$(printf '%s\n' "$output" | grep -c 'Used 168 registers')" -eq "$n" ] ;;
        esac
        [ "$(printf '%s\n' "$output" | grep -cE 'C75[0-9][0-9]')" -eq 0 ]
    done
}
