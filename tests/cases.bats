#!/usr/bin/env bats
# lane: cpu (no test here creates a CUDA context)
# ./STAGE/run --cases FILE (common/run.c), the mode the suites' lean runs go through: many runs in
# one process, each line "OUT<TAB>FLAGS..." writing OUT.out and OUT.status; and its driver in
# tests/helpers.bash (lean_line, cases_chunk). CPU-only: where no GPU can run the stages, a valid
# run stops at the device check, which is before any device state, so the process goes on to the
# next line; the restart after a run that ends its process is checked on a stand-in stage.
load helpers

setup() {
    build_unit
    [ -x "$ROOT/07_hopper/run" ] || skip "./07_hopper/run is not built (make all)"
    [ -x "$ROOT/04_efficient/run" ] || skip "./04_efficient/run is not built (make all)"
    D="$BATS_TEST_TMPDIR/cases"
    mkdir -p "$D"
}

# line OUT FLAGS...: one --cases line (OUT and the flags, tab-separated).
line() {
    local IFS=$'\t'
    printf '%s\n' "$*"
}

@test "cases: every line runs in one process, each its own output and exit status" {
    {
        line "$D/valid" --seq 77 --validate
        line "$D/bad" --sequence 3
        echo
        line "$D/profiled" --seq 77 --trace none
        line "$D/lean" --seq 77 --trace none --no-counters --no-timeline --validate
        line "$D/help" --help
    } > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: every line stops before the device (--validate, refusals), or skips with a GPU
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
    [ "$(cat "$D/valid.status")" = 0 ]
    [ "$(cat "$D/valid.out")" = "" ]
    [ "$(cat "$D/bad.status")" = 2 ]
    [ "$(cat "$D/bad.out")" = "unknown flag '--sequence' (see $ROOT/04_efficient/run --help)" ]
    [ "$(cat "$D/profiled.status")" = 2 ]
    [[ "$(cat "$D/profiled.out")" == "--cases: each run needs --no-counters and --no-timeline and no --regions"* ]]
    [ "$(cat "$D/lean.status")" = 0 ]
    [ "$(cat "$D/help.status")" = 0 ]
    [[ "$(head -n 1 "$D/help.out")" == "usage: $ROOT/04_efficient/run "* ]]
    [ ! -e "$D/valid.status.tmp" ]
}

@test "cases: without a GPU a run stops at the device check and the next line still runs" {
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then skip "a GPU is present"; fi
    {
        line "$D/a" --batch 1 --heads 1 --seq 17 --trace none --no-counters --no-timeline
        line "$D/b" --batch 1 --heads 1 --seq 17 --trace none --no-counters --no-timeline --quiet
    } > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: every line stops before the device (--validate, refusals), or skips with a GPU
    [ "$status" -eq 0 ]
    [ "$(cat "$D/a.status")" = 2 ]
    [[ "$(cat "$D/a.out")" == "no CUDA device: "* ]]
    [ "$(cat "$D/b.status")" = 2 ]
    [[ "$(cat "$D/b.out")" == "no CUDA device: "* ]]
}

@test "cases: a stage flag of one line does not carry over to the next (07's --rung)" {
    {
        line "$D/r4" --head-dim 128 --rung 4 --validate
        line "$D/default" --head-dim 128 --validate
        line "$D/r3" --head-dim 128 --rung 3 --validate
        line "$D/default2" --head-dim 128 --validate
    } > "$D/list"
    run "$ROOT/07_hopper/run" --cases "$D/list"   # no context: every line stops before the device (--validate, refusals), or skips with a GPU
    [ "$status" -eq 0 ]
    [ "$(cat "$D/r4.status")" = 2 ]
    [[ "$(cat "$D/r4.out")" == *"rung 4"*"head_dim 128"* ]]
    [ "$(cat "$D/default.status")" = 0 ]
    [ "$(cat "$D/r3.status")" = 0 ]
    [ "$(cat "$D/default2.status")" = 0 ]
}

@test "cases: the stage flags go back to their defaults between two parses (cli_parse's reset)" {
    run "$UNIT" cli-twice --tile 64 --fast --seq 77
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[0]}" == *" seq=77 "*" tile=64 fast=1" ]]
    [[ "${lines[1]}" == *" seq=1024 "*" tile=0 fast=0" ]]
}

@test "cases: --cases is the only flag; a missing file or a line without OUT exits 2" {
    run "$ROOT/04_efficient/run" --cases "$D/list" --seq 3   # no context: refused before the device
    [ "$status" -eq 2 ]
    [ "$output" = "--cases FILE takes no other flag (each line of FILE holds one run's flags)" ]
    run "$ROOT/04_efficient/run" --seq 3 --cases "$D/list"   # no context: refused before the device
    [ "$status" -eq 2 ]
    run "$ROOT/04_efficient/run" --cases=   # no context: refused before the device
    [ "$status" -eq 2 ]
    [ "$output" = "--cases needs a file (one run a line: OUT<TAB>FLAGS...)" ]
    run "$ROOT/04_efficient/run" --cases   # no context: refused before the device
    [ "$status" -eq 2 ]
    [ "$output" = "--cases needs a file (one run a line: OUT<TAB>FLAGS...)" ]
    run "$ROOT/04_efficient/run" --cases "$D"   # no context: refused before the device
    [ "$status" -eq 2 ]
    [ "$output" = "--cases: cannot read '$D': Is a directory" ]
    run "$ROOT/04_efficient/run" --cases "$D/none"   # no context: refused before the device
    [ "$status" -eq 2 ]
    [ "$output" = "--cases: cannot read '$D/none': No such file or directory" ]
    printf '\t--seq\t3\n' > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: every line stops before the device (--validate, refusals), or skips with a GPU
    [ "$status" -eq 2 ]
    [ "$output" = "--cases: $D/list line 1 has no OUT before its first tab (OUT<TAB>FLAGS... expected)" ]
}

@test "cases: an empty field is an empty argument, as \"\" on a command line" {
    line "$D/empty" --trace "" --validate > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: every line stops before the device (--validate, refusals), or skips with a GPU
    [ "$status" -eq 0 ]
    [ "$(cat "$D/empty.status")" = 2 ]
    [ "$(cat "$D/empty.out")" = "--trace needs a path or 'none'" ]
}

@test "cases: lean_line writes OUT under CASES_DIR, the trace beside it, the lean flags, no #N" {
    CASES_DIR=/x/cases
    run lean_line "05_flash --batch 2 --seq 1000 --quiet #2"
    [ "$status" -eq 0 ]
    [ "$output" = "$(line /x/cases/05_flash_--batch_2_--seq_1000_--quiet_#2 --trace /x/cases/05_flash_--batch_2_--seq_1000_--quiet_#2.json --no-counters --no-timeline --batch 2 --seq 1000 --quiet)" ]
}

# A stand-in stage for cases_chunk: its --cases writes each line's status until a line whose first
# flag is "fatal" (status 1 written, then the process ends, as after a CUDA error) or "crash" (the
# process dies before writing it); run alone, "crash" exits 139. Each start is logged.
fake_stage() {
    mkdir -p "$BATS_TEST_TMPDIR/root/99_fake"
    cat > "$BATS_TEST_TMPDIR/root/99_fake/run" <<'EOF'
#!/usr/bin/env bash
echo "start $*" >> "${0%/run}/starts"
if [ "$1" != --cases ]; then
    [ "$1" = crash ] && exit 139
    echo "alone $*"; exit 0
fi
while IFS=$'\t' read -r out flag rest; do
    case "$flag" in
        crash) exit 139 ;;
        fatal) echo "fatal" > "$out.out"; echo 1 > "$out.status"; exit 1 ;;
        *) echo "ran $flag" > "$out.out"; echo 0 > "$out.status" ;;
    esac
done < "$2"
EOF
    chmod +x "$BATS_TEST_TMPDIR/root/99_fake/run"
}

@test "cases: cases_chunk starts a new process after a run that ended one, and runs a crash alone" {
    fake_stage
    {
        line "$D/1" a
        line "$D/2" fatal
        line "$D/3" b
        line "$D/4" crash
        line "$D/5" c
    } > "$D/list"
    ROOT="$BATS_TEST_TMPDIR/root" cases_chunk 99_fake "$D/list"
    [ "$(cat "$D/1.status")" = 0 ]
    [ "$(cat "$D/2.status")" = 1 ]
    [ "$(cat "$D/3.status")" = 0 ]
    [ "$(cat "$D/4.status")" = 139 ]
    [ "$(cat "$D/5.status")" = 0 ]
    [ "$(cat "$D/5.out")" = "ran c" ]
    # starts: the list, after the fatal run, the crash twice in a list (no progress), then alone,
    # then the rest
    run cat "$BATS_TEST_TMPDIR/root/99_fake/starts"
    [ "${#lines[@]}" -eq 5 ]
    [ "${lines[3]}" = "start crash" ]
    [ "${lines[4]}" = "start --cases $D/list" ]
}

# prerun's lists: a stand-in for each of three stages (fake_stage's run, its starts logged) and a
# GPU taken as ready; the lists are read back from the starts.
fake_stages() {
    local s
    fake_stage
    for s in 99_a 99_b 99_c; do
        mkdir -p "$BATS_TEST_TMPDIR/root/$s"
        cp "$BATS_TEST_TMPDIR/root/99_fake/run" "$BATS_TEST_TMPDIR/root/$s/run"
    done
}

@test "cases: prerun makes lists up to a quarter larger where that keeps them to TEST_JOBS; a stage's lists even; every run its status" {
    fake_stages
    gpu_ready() { true; }   # no context: the stages are stand-ins
    local i cases=() L
    for i in $(seq 36); do cases+=("99_a --seq $i"); done
    for i in $(seq 4); do cases+=("99_b --seq $i"); done
    cases+=("99_a --seq 5")   # (listed twice: run once)
    # (a space in the cases' directory: the lists are passed by name)
    CASES_DIR="$D/ca ses" ROOT="$BATS_TEST_TMPDIR/root" TEST_JOBS=4 prerun "${cases[@]}"   # no context: stand-ins
    # 80 units (2 a run), 4 jobs: 20 a list would make 4 + 1 lists, 24 makes 3 + 1
    [ "$(find "$D/ca ses" -name '*.status' -path '*/ca ses/99_*' | wc -l)" -eq 40 ]
    L=$(echo "$D/ca ses"/lists.*)
    [ "$(ls "$L" | grep -cE '^99_[a-z]\.[0-9]+$')" -eq 4 ]
    [ "$(grep -c . "$L/99_a.0")" -eq 12 ]
    [ "$(grep -c . "$L/99_a.1")" -eq 12 ]
    [ "$(grep -c . "$L/99_a.2")" -eq 12 ]
    [ "$(grep -c . "$L/99_b.0")" -eq 4 ]
    [ "$(cat "$L/99_a.0" "$L/99_a.1" "$L/99_a.2" | grep -c -- "--seq"$'\t'"5$")" -eq 1 ]
    [ "$(wc -l < "$BATS_TEST_TMPDIR/root/99_a/starts")" -eq 3 ]
    # the runs dealt in turn: seq 1 and 4 in the first list, seq 2 in the second
    grep -q -- "--seq"$'\t'"4$" "$L/99_a.0"
    grep -q -- "--seq"$'\t'"2$" "$L/99_a.1"
}

@test "cases: prerun, where a quarter more would still make more lists than TEST_JOBS: the smaller lists" {
    fake_stages
    gpu_ready() { true; }   # no context: the stages are stand-ins
    local i cases=() L
    for i in $(seq 20); do cases+=("99_a --seq $i"); done
    cases+=("99_b --seq 1" "99_b --seq 2" "99_c --seq 1")
    CASES_DIR="$D/cases" ROOT="$BATS_TEST_TMPDIR/root" TEST_JOBS=2 prerun "${cases[@]}"   # no context: stand-ins
    # 46 units, 2 jobs: 23 a list (2 + 1 + 1 lists); 28 would still make 4
    [ "$(find "$D/cases" -name '*.status' -path '*/cases/99_*' | wc -l)" -eq 23 ]
    L=$(echo "$D/cases"/lists.*)
    [ "$(ls "$L" | grep -cE '^99_[a-z]\.[0-9]+$')" -eq 4 ]
    [ "$(grep -c . "$L/99_a.0")" -eq 10 ]
    [ "$(grep -c . "$L/99_a.1")" -eq 10 ]
}

@test "cases: prerun with fewer jobs than stages makes one list per stage (and ends)" {
    fake_stages
    gpu_ready() { true; }   # no context: the stages are stand-ins
    CASES_DIR="$D/cases" ROOT="$BATS_TEST_TMPDIR/root" TEST_JOBS=1 \
        timeout 60 bash -c "$(declare -f); prerun '99_a --seq 1' '99_a --seq 2' '99_b --seq 1' '99_c --seq 1' '99_c --seq 2'"   # no context: stand-ins
    [ "$(ls "$D"/cases/lists.*/ | grep -cE '^99_[a-z]\.[0-9]+$')" -eq 3 ]
    [ "$(find "$D/cases" -name '*.status' -path '*/cases/99_*' | wc -l)" -eq 5 ]
}

@test "cases: --help anywhere beside --cases prints the usage and exits 0, as with any flag" {
    run "$ROOT/04_efficient/run" --cases "$D/none" --help   # no context: --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: $ROOT/04_efficient/run "* ]]
    run "$ROOT/04_efficient/run" --help --cases   # no context: --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: $ROOT/04_efficient/run "* ]]
}

@test "cases: a CR before the line's end is dropped; a NUL byte is refused with one line" {
    printf '%s\t--seq\t77\t--validate\r\n' "$D/crlf" > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: --validate
    [ "$status" -eq 0 ]
    [ "$(cat "$D/crlf.status")" = 0 ]
    printf '%s\t--seq\0\t--validate\n' "$D/nul" > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: --validate
    [ "$status" -eq 2 ]
    [ "$output" = "--cases: $D/list line 1 holds a NUL byte" ]
    [ ! -e "$D/nul.status" ]
}

@test "cases: a run whose output could not be written does not fail the next one" {
    ln -s /dev/full "$D/full.out"
    {
        line "$D/full" --help
        line "$D/next" --validate
        line "$D/next2" --help
    } > "$D/list"
    run "$ROOT/04_efficient/run" --cases "$D/list"   # no context: --help and --validate
    [ "$status" -eq 0 ]
    [ "$(cat "$D/full.status")" = 1 ]
    [ "$(cat "$D/next.status")" = 0 ]
    [ "$(cat "$D/next2.status")" = 0 ]
}

@test "cases: a status that cannot be written: one line on the process's own stderr, exit 2" {
    mkdir "$D/a.status"
    line "$D/a" --validate > "$D/list"
    run --separate-stderr "$ROOT/04_efficient/run" --cases "$D/list"   # no context: --validate
    [ "$status" -eq 2 ]
    [ "$stderr" = "--cases: cannot write the status of $D/a: $D/a.status: Is a directory" ]
    [ ! -e "$D/a.status.tmp" ]
}

@test "cases: cases_chunk skips empty lines, reads a last line without a newline, keeps empty fields" {
    fake_stage
    { line "$D/1" a; echo; line "$D/2" crash "" x; printf '%s\t%s' "$D/3" b; } > "$D/list"
    ROOT="$BATS_TEST_TMPDIR/root" cases_chunk 99_fake "$D/list"
    [ "$(cat "$D/1.status")" = 0 ]
    [ "$(cat "$D/2.status")" = 139 ]
    [ "$(cat "$D/3.status")" = 0 ]
    [ ! -e "$D/.status" ]
    [ ! -e .status ]
    # the crash ran alone with its three flags, the empty one kept
    run grep -c '^start crash  x$' "$BATS_TEST_TMPDIR/root/99_fake/starts"
    [ "$output" = 1 ]
}

# quick's stand-ins, in a file of their own (line 3: the failing check): a check that fails at
# its second command; one that passes and sets a variable; one whose $(...) holds a failing grep.
quick_checks() {
    cat > "$BATS_TEST_TMPDIR/checks.bash" <<'EOF'
second_fails() {
    [ 1 -eq 1 ]
    [ "$(field check)" = PASS ]
    echo "not reached"
}
passes() {
    QUICK_SET=1
    [ "$(field check)" = PASS ]
}
count_zero() {
    [ "$(printf 'a\n' | grep -cv a)" -eq 0 ]
}
skips() {
    skip "no reason here"
    echo "after the skip"
}
errexit_off() {
    set +e
    false
    set -e
}
EOF
}

# in_bash OUTPUT COMMAND: COMMAND in a bash of its own with helpers.bash and the stand-ins
# sourced, $output set to OUTPUT and a stand-in for Bats' skip (Bats' run; a failing quick there
# fails nothing here).
in_bash() {
    run bash -c 'bats_require_minimum_version() { :; }; BATS_TEST_DIRNAME=$1/tests
        skip() { echo "skipped: ${1:-}"; }
        source "$1/tests/helpers.bash"; source "$2"; output=$3; eval "$4"' _ \
        "$ROOT" "$BATS_TEST_TMPDIR/checks.bash" "$1" "$2"
}

@test "quick: a check in its subshell passes or fails as in the test; a failure names its command and line" {
    quick_checks
    in_bash "result stage=x check=FAIL" "quick second_fails"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [ "${lines[0]}" = 'failed: [ "$(field check)" = PASS ] (checks.bash, line 3)' ]
    in_bash "result stage=x check=PASS" 'QUICK_SET=0; quick passes; echo "QUICK_SET=$QUICK_SET"'
    [ "$status" -eq 0 ]
    [ "$output" = "QUICK_SET=0" ]
    # a command that fails inside $(...) (grep -c counting 0) is no failure, as in a test
    in_bash "" "quick count_zero"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # a skip inside skips the test, after the subshell: nothing after it runs
    in_bash "" "quick skips; echo 'after quick'"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "skipped: no reason here" ]
    [ "${lines[1]}" = "after quick" ]
    [ "${#lines[@]}" -eq 2 ]
    # a failing command where the function turned set -e off is no failure, and not reported
    in_bash "" "quick errexit_off"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # a function of a suite is named by the suite file, not by Bats' copy of it
    in_bash "result stage=x check=FAIL" "BATS_TEST_SOURCE=$BATS_TEST_TMPDIR/checks.bash BATS_TEST_FILENAME=/x/07_ladder.bats; quick second_fails"
    [ "$status" -eq 1 ]
    [ "$output" = 'failed: [ "$(field check)" = PASS ] (07_ladder.bats, line 3)' ]
    # where set -e is ignored: refused, even for a check that would pass
    in_bash "result stage=x check=PASS" 'quick passes || echo "refused: $?"'
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "quick passes: called where bash ignores set -e (if, ||, &&, !, run): its checks would not stop it" ]
    [ "${lines[1]}" = "refused: 1" ]
}

@test "untraced: in \$(...) Bats' DEBUG trap goes, in the test it stays" {
    [ -n "$(trap -p DEBUG)" ]
    [ -z "$(untraced; trap -p DEBUG)" ]
    untraced
    [ -n "$(trap -p DEBUG)" ]
}

@test "gpu_cc: nvidia-smi's compute capability, asked once per bats run and kept" {
    local bin="$BATS_TEST_TMPDIR/bin" cache="$BATS_RUN_TMPDIR/gpu_cc"
    mkdir -p "$bin"
    printf '#!/bin/sh\necho "%s"\n' ' 9.0' > "$bin/nvidia-smi"
    chmod +x "$bin/nvidia-smi"
    local saved=""
    [ ! -e "$cache" ] || saved=$(< "$cache")
    rm -f "$cache"
    [ "$(PATH="$bin:$PATH" gpu_cc)" = "9.0" ]
    [ "$(< "$cache")" = "9.0" ]
    # asked once: the answer kept, whatever nvidia-smi says next
    printf '#!/bin/sh\necho 8.0\n' > "$bin/nvidia-smi"
    [ "$(PATH="$bin:$PATH" gpu_cc)" = "9.0" ]
    # (this bats run's own answer put back)
    if [ -n "$saved" ]; then printf '%s\n' "$saved" > "$cache"; else rm -f "$cache"; fi
}
