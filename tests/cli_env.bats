#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU tests of the start-up checks (they read the same with or without a GPU): a bad environment
# setting or --trace path prints one line on stderr and exits 2 before the device is looked for;
# --help prints the usage and exits 0 whatever else is wrong.

load helpers

setup_file() { build_unit; }

# A shape 01 and 02 refuse before the device (batch x heads over cuBLASLt's int32 batch count,
# eager_supports with prop = NULL): an environment that passes the check reaches this line, on
# any machine, and nothing runs on a GPU.
BIG=(--batch 65535 --heads 65535 --trace none)
BIG_LINE="batch x heads = 4294836225 exceeds cuBLASLt's batch count limit 2147483647"
ALGO_FORMS="expected heuristic indices 0..15 as i (both GEMMs) or i,j (Q.K^T, then P.V), digits only, e.g. 0 or 1,0 (unset: 0)"
WS_FORMS="expected 0 (GEMM algorithms without a workspace, the default, also when unset) or 1 (allow a cuBLASLt workspace of up to 32 MiB)"
VERBOSE_FORMS="expected 0 (quiet, the default, also when unset) or 1 (print each GEMM's candidate algorithms and the pick on stderr)"

# ---- ATTN_GEMM_*: every value through the parser 01 and 02 share, each message through both -----
# 01_naive and 02_inplace check these settings with one parser, common/eager/eager_env.c (their
# check_env, eager_check_env, which cli_parse calls before the device is looked for). Every value
# below goes through that parser in build/common_unit's stand-in (cli-eager: the same cli_parse
# and check_env, without the cuBLAS that each start of 01 or 02 loads); each message is asked of
# the real stages too, their runs at once.

# eager_unit VAR=VALUE: the stand-in under that one setting, at BIG's flags (status, output, stderr).
eager_unit() { run --separate-stderr env "$1" "$UNIT" cli-eager "${BIG[@]}"; }

# stage_env STAGE VAR=VALUE: ./STAGE/run at BIG's flags under that one setting (run_parallel's
# FUNC): stdout in $ENV_DIR/KEY.out, stderr in $ENV_DIR/KEY.err.
stage_env() { env "$2" "$ROOT/$1/run" "${BIG[@]}" 2> "$ENV_DIR/$(case_key "$*").err"; }   # no context: BIG is refused before the device (a bad setting first)

# stage_envs CASE...: every "STAGE VAR=VALUE" case at once.
stage_envs() {
    ENV_DIR="$BATS_TEST_TMPDIR/env"
    run_parallel "$ENV_DIR" stage_env "$@"
}

# stage_env_result CASE: status, output (stdout) and stderr of that case's run.
stage_env_result() {
    load_case "$ENV_DIR" "$1" || return 1
    stderr=$(cat "$ENV_DIR/$(case_key "$1").err")
}

@test "ATTN_GEMM_ALGO: anything but i or i,j (0 to 15, digits) is refused before the device, whole" {
    for v in abc 1,0,junk 0,1,2,3 1,2,-5 '' 1, ,1 16 1,16 '1 ' 0x1; do
        eager_unit ATTN_GEMM_ALGO="$v"
        [ "$status" -eq 2 ]
        [ "$stderr" = "ATTN_GEMM_ALGO=$v: $ALGO_FORMS" ]
        [ -z "$output" ]
    done
    stage_envs "01_naive ATTN_GEMM_ALGO=1,0,junk" "02_inplace ATTN_GEMM_ALGO="
    for c in "01_naive ATTN_GEMM_ALGO=1,0,junk" "02_inplace ATTN_GEMM_ALGO="; do
        stage_env_result "$c"
        [ "$status" -eq 2 ]
        [ "$stderr" = "${c#* }: $ALGO_FORMS" ]
        [ -z "$output" ]
    done
}

@test "ATTN_GEMM_ALGO: i and i,j from 0 to 15 are taken (the run goes on to the shape check)" {
    for v in 0 15 1,0 0,15 007; do
        eager_unit ATTN_GEMM_ALGO="$v"
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
    done
    stage_envs "01_naive ATTN_GEMM_ALGO=0,15"
    stage_env_result "01_naive ATTN_GEMM_ALGO=0,15"
    [ "$status" -eq 2 ]
    [ "$stderr" = "$BIG_LINE" ]
}

@test "ATTN_GEMM_WORKSPACE: only 0 or 1 (an empty value is refused too), before the device" {
    for v in 2 yes '' true ' 1' 01; do
        eager_unit ATTN_GEMM_WORKSPACE="$v"
        [ "$status" -eq 2 ]
        [ "$stderr" = "ATTN_GEMM_WORKSPACE=$v: $WS_FORMS" ]
    done
    for v in 0 1; do
        eager_unit ATTN_GEMM_WORKSPACE="$v"
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
    done
    stage_envs "01_naive ATTN_GEMM_WORKSPACE=" "02_inplace ATTN_GEMM_WORKSPACE=yes" "01_naive ATTN_GEMM_WORKSPACE=1"
    for c in "01_naive ATTN_GEMM_WORKSPACE=" "02_inplace ATTN_GEMM_WORKSPACE=yes"; do
        stage_env_result "$c"
        [ "$status" -eq 2 ]
        [ "$stderr" = "${c#* }: $WS_FORMS" ]
    done
    stage_env_result "01_naive ATTN_GEMM_WORKSPACE=1"
    [ "$stderr" = "$BIG_LINE" ]
}

@test "ATTN_GEMM_VERBOSE: only 0 or 1, before the device" {
    for v in yes 2 true ''; do
        eager_unit ATTN_GEMM_VERBOSE="$v"
        [ "$status" -eq 2 ]
        [ "$stderr" = "ATTN_GEMM_VERBOSE=$v: $VERBOSE_FORMS" ]
    done
    for v in 0 1; do
        eager_unit ATTN_GEMM_VERBOSE="$v"
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
    done
    stage_envs "01_naive ATTN_GEMM_VERBOSE=true" "02_inplace ATTN_GEMM_VERBOSE=2" "01_naive ATTN_GEMM_VERBOSE=1"
    for c in "01_naive ATTN_GEMM_VERBOSE=true" "02_inplace ATTN_GEMM_VERBOSE=2"; do
        stage_env_result "$c"
        [ "$status" -eq 2 ]
        [ "$stderr" = "${c#* }: $VERBOSE_FORMS" ]
    done
    stage_env_result "01_naive ATTN_GEMM_VERBOSE=1"
    [ "$stderr" = "$BIG_LINE" ]
}

@test "ATTN_GEMM_*: a control character in the value stays on one escaped line" {
    run --separate-stderr env ATTN_GEMM_ALGO=$'1\n2' "$ROOT/01_naive/run" "${BIG[@]}"   # no context: a bad setting, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "ATTN_GEMM_ALGO=1\\n2: $ALGO_FORMS" ]
}

@test "ATTN_GEMM_*: stages 03 to 07 do not read them" {
    # its value is not checked here: a warning that 05 does not read it, then the shape's refusal
    run --separate-stderr env ATTN_GEMM_ALGO=abc "$ROOT/05_flash/run" --head-dim 96 --trace none   # no context: a bad setting, refused before the device
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [ "${stderr_lines[0]}" = "warning: 05_flash does not read ATTN_GEMM_ALGO, it is ignored here (05_flash reads ATTN_SANITIZE)" ]
    [ "${stderr_lines[1]}" = "head_dim 96 is not supported by 05_flash (supported: 64, 128)" ]
}

@test "--help and --help's environment section: the accepted forms of ATTN_GEMM_*" {
    run --separate-stderr "$ROOT/01_naive/run" --help
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '^  ATTN_GEMM_WORKSPACE=0|1 ')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -c '^  ATTN_GEMM_ALGO=i or i,j  candidate i (0 to 15, digits only)')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -c '^  ATTN_GEMM_VERBOSE=0|1 ')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -c '^one too) prints one line and exits 2, before the device is looked for\.$')" -eq 1 ]
}

@test "--help exits 0 with the usage whatever else is wrong (environment, flags)" {
    run --separate-stderr env ATTN_SANITIZE=2 "$ROOT/05_flash/run" --help
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "usage: $ROOT/05_flash/run [--batch B] [--heads H] [--seq S] [--head-dim D] [--warmup N] [--steps N]" ]
    [ -z "$stderr" ]
    run --separate-stderr env ATTN_GEMM_ALGO=abc ATTN_GEMM_WORKSPACE=yes "$ROOT/01_naive/run" --help
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    run --separate-stderr "$ROOT/01_naive/run" --seq -1 --bogus stray -h   # no context: -h: the usage
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "usage: $ROOT/01_naive/run [--batch B] [--heads H] [--seq S] [--head-dim D] [--warmup N] [--steps N]" ]
    # --help=x is not --help: a flag without a value written with one
    run --separate-stderr "$ROOT/01_naive/run" --help=1
    [ "$status" -eq 2 ]
    [ "$stderr" = "--help takes no value (got '--help=1')" ]
}

@test "check_env (unit stage): run after the flags, not by --help" {
    run --separate-stderr env FAKE_KNOB=2 "$UNIT" cli --seq 64
    [ "$status" -eq 2 ]
    [ "$stderr" = "FAKE_KNOB=2: expected 1 (unset: off)" ]
    run --separate-stderr env FAKE_KNOB=2 "$UNIT" cli --seq 0
    [ "$status" -eq 2 ]
    [ "$stderr" = "--seq: 0 is out of range (expected 1 to 1048576)" ]
    run --separate-stderr env FAKE_KNOB=2 "$UNIT" cli --help
    [ "$status" -eq 0 ]
    run --separate-stderr env FAKE_KNOB=1 "$UNIT" cli --seq 64
    [ "$status" -eq 0 ]
    [[ "$output" == "batch=8 heads=16 seq=64 "* ]]
}

@test "--trace: a last component . or .. is refused early, and nothing is created" {
    mkdir "$BATS_TEST_TMPDIR/d"
    run --separate-stderr "$ROOT/05_flash/run" --trace "$BATS_TEST_TMPDIR/new/."   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace $BATS_TEST_TMPDIR/new/.: not a regular file (a directory name); give a file path, or none" ]
    run --separate-stderr "$ROOT/05_flash/run" --trace "$BATS_TEST_TMPDIR/new/.."   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace $BATS_TEST_TMPDIR/new/..: not a regular file (a directory name); give a file path, or none" ]
    [ ! -e "$BATS_TEST_TMPDIR/new" ]
    run --separate-stderr "$ROOT/05_flash/run" --trace "$BATS_TEST_TMPDIR/d/."   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace $BATS_TEST_TMPDIR/d/.: not a regular file (a directory); give a file path, or none" ]
    run --separate-stderr "$ROOT/05_flash/run" --trace ..   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace ..: not a regular file (a directory); give a file path, or none" ]
}

@test "--trace: a control character in the path is refused, on one escaped line" {
    mkdir "$BATS_TEST_TMPDIR/w"
    cd "$BATS_TEST_TMPDIR/w"
    run --separate-stderr "$ROOT/05_flash/run" --trace $'a\nb.json'   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace a\\nb.json: the path holds a control character (0x0a); give a path without one, or none" ]
    run --separate-stderr "$ROOT/05_flash/run" --trace $'a\x7fb.json'   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace a\\x7fb.json: the path holds a control character (0x7f); give a path without one, or none" ]
    run --separate-stderr "$ROOT/05_flash/run" --trace $'d\t/x.json'   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace d\\t/x.json: the path holds a control character (0x09); give a path without one, or none" ]
    [ -z "$(ls -A "$BATS_TEST_TMPDIR/w")" ]
}

@test "--trace under ATTN_SANITIZE=1: checked as in a normal run" {
    run --separate-stderr env ATTN_SANITIZE=1 "$ROOT/05_flash/run" --trace /   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace /: not a regular file (a directory); give a file path, or none" ]
    run --separate-stderr env ATTN_SANITIZE=1 "$ROOT/05_flash/run" --trace "$BATS_TEST_TMPDIR/new/."   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace $BATS_TEST_TMPDIR/new/.: not a regular file (a directory name); give a file path, or none" ]
}

@test "--trace into /proc: the message names the directory that takes no new files" {
    [ -d /proc/self ] || skip "no /proc here"
    run --separate-stderr "$ROOT/05_flash/run" --trace /proc/version   # no context: a bad --trace path, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "--trace /proc/version: cannot create a file in /proc: its file system takes no new files (No such file or directory)" ]
}

@test "06_cudnn --help asks cuDNN's version once, not once per head_dim (cuDNN's API log stays short)" {
    [ -x "$ROOT/06_cudnn/run" ] || skip "./06_cudnn/run is not built"
    plain=$("$ROOT/06_cudnn/run" --help | wc -l)
    logged=$(CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stdout "$ROOT/06_cudnn/run" --help | wc -l)
    # one cudnnGetVersion call logs a handful of lines; one per head_dim (1 to 1024) logged 5000+
    [ "$logged" -lt $((plain + 50)) ]
    run env CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stdout "$ROOT/06_cudnn/run" --help
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c 'this stage runs head_dim 8 to 256 in steps of 8$')" -eq 1 ]
}

# ---- ATTN_* names: a typo exits 2, another stage's setting warns ------------------------------
COURSE_ENV="ATTN_GEMM_ALGO, ATTN_GEMM_VERBOSE, ATTN_GEMM_WORKSPACE, ATTN_SANITIZE"

@test "an ATTN_* name the course does not know (a typo) exits 2 before the device, naming the settings" {
    stage_envs "01_naive ATTN_GEMM_VERBSE=1" "01_naive ATTN_FOO=1" "01_naive ATTN_=1"
    for name in ATTN_GEMM_VERBSE ATTN_FOO ATTN_; do
        stage_env_result "01_naive $name=1"
        [ "$status" -eq 2 ]
        [ "$stderr" = "$name is not a setting of this course (the ATTN_* settings: $COURSE_ENV; 01_naive reads $COURSE_ENV)" ]
        [ -z "$output" ]
    done
    run --separate-stderr env ATTN_FOO=1 "$ROOT/03_math/run" --seq 1 --head-dim 2000   # no context: head_dim out of range, refused before the device
    [ "$status" -eq 2 ]
    [[ "$stderr" == "--head-dim: 2000 is out of range"* ]]
    run --separate-stderr env ATTN_FOO=1 "$ROOT/03_math/run" --trace none   # no context: an unknown setting, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "ATTN_FOO is not a setting of this course (the ATTN_* settings: $COURSE_ENV; 03_math reads ATTN_SANITIZE)" ]
}

@test "another stage's ATTN_* setting: one warning line, then the run goes on (here to the shape check)" {
    run --separate-stderr env ATTN_GEMM_ALGO=99 "$ROOT/03_math/run" --batch 65535 --heads 65535 --seq 1048576 --head-dim 1024 --trace none   # no context: batch x heads over the limit, refused before the device
    [ "${#stderr_lines[@]}" -ge 1 ]
    [ "${stderr_lines[0]}" = "warning: 03_math does not read ATTN_GEMM_ALGO, it is ignored here (03_math reads ATTN_SANITIZE)" ]
    run --separate-stderr env ATTN_GEMM_ALGO=1 "$ROOT/01_naive/run" "${BIG[@]}"   # no context: BIG is refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "$BIG_LINE" ]
}

@test "--help names the ATTN_* settings and says what a typo and another stage's setting do" {
    run env ATTN_FOO=1 "$ROOT/03_math/run" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\n'"An ATTN_* name no stage reads (a typo) exits 2 too, naming the settings that exist;"$'\n'* ]]
    [[ "$output" == *$'\n'"one that only other stages read prints a warning and is ignored."* ]]
}

@test "the README's settings table lists exactly the course's ATTN_* settings" {
    run bash -c "grep -o '^| \`ATTN_[A-Z_]*\`' '$ROOT/README.md' | tr -d '|\` ' | sort | paste -sd, | sed 's/,/, /g'"
    [ "$output" = "$COURSE_ENV" ]
}

# ---- --validate: the input checks alone, no device -------------------------------------------

@test "--validate: good input exits 0 with nothing printed, on a machine with or without a GPU" {
    for s in 01_naive 03_math 04_efficient 06_cudnn; do
        run --separate-stderr "$ROOT/$s/run" --validate --batch 1 --heads 2 --seq 77 --head-dim 64 --trace none
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$stderr" ]
    done
}

@test "--validate: a bad flag, a shape the stage refuses, a bad setting: exit 2 and the run's own line" {
    run --separate-stderr "$ROOT/01_naive/run" --validate --seq 2000000
    [ "$status" -eq 2 ]
    [ "$stderr" = "--seq: 2000000 is out of range (expected 1 to 1048576)" ]
    run --separate-stderr "$ROOT/04_efficient/run" --validate --head-dim 80
    [ "$status" -eq 2 ]
    [ "$stderr" = "head_dim 80 is not supported by 04_efficient (supported: 64, 128)" ]
    run --separate-stderr env ATTN_SANITIZE=2 "$ROOT/05_flash/run" --validate
    [ "$status" -eq 2 ]
    [ "$stderr" = "ATTN_SANITIZE must be 0 or 1 (got '2')" ]
    run --separate-stderr "$ROOT/05_flash/run" --validate=1
    [ "$status" -eq 2 ]
    [ "$stderr" = "--validate takes no value (got '--validate=1')" ]
    [ -z "$output" ]
}
