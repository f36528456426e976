#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# tests/sanitize.sh (make sanitize) on stand-ins: the GPU check, the tool, the SANITIZE_* variables,
# hung runs and the barrier flag. No test here runs a stage on the GPU: bad input is refused
# before the device, the stand-in compute-sanitizers never run the stage they are given, and the
# no-GPU cases skip where a GPU is present; each line that names the sanitizer says which.

load helpers

# ---- tests/sanitize.sh: the GPU, the tool, the variables -----------------------------------------
@test "sanitize.sh: with a GPU but without compute-sanitizer: exit 2 with one line" {
    PATH=$(fake_gpu) run --separate-stderr env SANITIZER=/nonexistent/compute-sanitizer bash "$ROOT/tests/sanitize.sh"   # no context: a stand-in GPU listing, no sanitizer: nothing runs
    [ "$status" -eq 2 ]
    [[ "$stderr" == "sanitize: compute-sanitizer not found"* ]]   # no context: a message
    [ "${#stderr_lines[@]}" -eq 1 ]
}

@test "sanitize.sh: without a GPU it says so first (not compute-sanitizer): exit 2, one line" {
    no_gpu || skip "a GPU is present"
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    run --separate-stderr env SANITIZER=/nonexistent/compute-sanitizer bash "$ROOT/tests/sanitize.sh"   # no context: skips where a GPU is present
    [ "$status" -eq 2 ]
    [[ "$stderr" == "sanitize: no CUDA device: "* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ -z "$output" ]
    no_driver || skip "an NVIDIA driver is installed here (the reason differs)"
    [ "$stderr" = "sanitize: no CUDA device: no NVIDIA driver found (libcuda.so.1 not loadable): running a stage needs an NVIDIA GPU and its driver" ]
}

@test "sanitize.sh: an unknown tool in SANITIZE_TOOLS exits 2 with one line" {
    run --separate-stderr env SANITIZE_TOOLS="memcheck bogus" SANITIZER=/bin/true bash "$ROOT/tests/sanitize.sh"   # no context: bad input, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_TOOLS: 'bogus' is not memcheck, racecheck, synccheck or initcheck" ]
}

@test "sanitize.sh: the default tools are memcheck, racecheck, synccheck and initcheck" {
    grep -qx 'tools=${SANITIZE_TOOLS:-"memcheck racecheck synccheck initcheck"}' "$ROOT/tests/sanitize.sh"   # no context: reads the script
}

# A fake GPU listing and a fake compute-sanitizer, to drive tests/sanitize.sh on the CPU.
fake_sanitizer() {
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\necho "GPU 0: Fake GPU (UUID: GPU-0)"\n' > "$BATS_TEST_TMPDIR/bin/nvidia-smi"
    printf '#!/bin/sh\n%s\n' "$1" > "$BATS_TEST_TMPDIR/bin/fake-sanitizer"
    chmod +x "$BATS_TEST_TMPDIR/bin/nvidia-smi" "$BATS_TEST_TMPDIR/bin/fake-sanitizer"
}

@test "sanitize.sh: SANITIZE_TIMEOUT and SANITIZE_CUDA_BARRIERS must be whole numbers: exit 2, one line" {
    run --separate-stderr env SANITIZE_TIMEOUT=5m SANITIZER=/bin/true bash "$ROOT/tests/sanitize.sh"   # no context: bad input, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_CUDA_BARRIERS and SANITIZE_TIMEOUT must be whole numbers" ]
    run --separate-stderr env SANITIZE_CUDA_BARRIERS=-1 SANITIZER=/bin/true bash "$ROOT/tests/sanitize.sh"   # no context: bad input, refused before the device
    [ "$status" -eq 2 ]
}

@test "sanitize.sh: a run still going after SANITIZE_TIMEOUT is killed and FAILs, naming the limit" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    # --version answers; a run hangs (exec: the limit's signal reaches the sleep itself)
    fake_sanitizer '[ "$1" = --version ] && { echo "fake version 1"; exit 0; }; exec sleep 30'
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        SANITIZE_TIMEOUT=1 SANITIZE_TOOLS=memcheck SANITIZE_SHAPES=1x2x77x64 SANITIZE_STAGES=01_naive \
        SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs" bash "$ROOT/tests/sanitize.sh"   # no context: the stand-in sanitizer never runs the stage
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAIL 01_naive memcheck 1x2x77x64: still running after 1 s, killed (SANITIZE_TIMEOUT)"* ]]
}

@test "sanitize.sh: racecheck on 07_hopper runs a hung run again (named), up to 3 runs, then FAILs" {
    [ -x "$ROOT/07_hopper/run" ] || skip "./07_hopper/run is not built (make all)"
    # the first run of each shape hangs, the next one is clean (a counter file per shape)
    fake_sanitizer '[ "$1" = --version ] && { echo "fake version 1"; exit 0; }
f="$FAKE_DIR/n"; n=$(cat "$f" 2>/dev/null || echo 0); echo $((n + 1)) > "$f"
[ "$n" -eq 0 ] && exec sleep 30
echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"; exit 0'
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        FAKE_DIR="$BATS_TEST_TMPDIR" SANITIZE_TIMEOUT=1 SANITIZE_TOOLS=racecheck SANITIZE_SHAPES=1x2x77x64 \
        SANITIZE_STAGES=07_hopper SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs" bash "$ROOT/tests/sanitize.sh"   # no context: the stand-in sanitizer never runs the stage
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '^hung 07_hopper racecheck 1x2x77x64: still running after 1 s, killed; run again (2 of 3); --rung 1$')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -c '^ok   07_hopper racecheck 1x2x77x64 .*; after 1 hung run(s))$')" -eq 1 ]
    # racecheck's own summary line is the one quoted, once per rung of the ladder (its files) that
    # runs head_dim 64: all but rung 15, which is skipped with its own line
    local rungs
    rungs=$(cd "$ROOT" && ls 07_hopper/rung[0-9]*_*.cu | wc -l)
    [ "$rungs" -eq 15 ]
    [ "$(printf '%s\n' "$output" | grep -cE '^ok   07_hopper racecheck 1x2x77x64 \([0-9]+ s; RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\); --rung [0-9]+')" -eq $((rungs - 1)) ]
    [ "$(printf '%s\n' "$output" | grep -c '^ok   07_hopper racecheck')" -eq $((rungs - 1)) ]
    [ "$(printf '%s\n' "$output" | grep -cxF 'skip 07_hopper racecheck 1x2x77x64: rung 15 of 07_hopper does not run head_dim 64 (it runs 128; rungs 1-3, 5-9 and 11-14 run 64 and 128)')" -eq 1 ]
    [[ "$output" == *", 1 hung run(s) run again (racecheck on 07_hopper), no failures;"* ]]
    # rung 1 always hanging: three runs, then FAIL (the other rungs clean). What sanitize.sh sees
    # of a run killed at the limit is timeout(1)'s exit status 124: here rung 1's run answers 124
    # at once, for each of its three runs (the real kill at the limit is the half above's, and the
    # test before this one's)
    fake_sanitizer '[ "$1" = --version ] && { echo "fake version 1"; exit 0; }
case " $* " in *" --rung 1 "*) exit 124 ;; esac
echo "========= ERROR SUMMARY: 0 errors"; exit 0'
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        SANITIZE_TIMEOUT=1 SANITIZE_TOOLS=racecheck SANITIZE_SHAPES=1x2x77x128 SANITIZE_STAGES=07_hopper \
        SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs2" bash "$ROOT/tests/sanitize.sh"   # no context: the stand-in sanitizer never runs the stage
    [ "$status" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -c '^hung 07_hopper racecheck 1x2x77x128: .*--rung 1$')" -eq 2 ]
    [[ "$output" == *"FAIL 07_hopper racecheck 1x2x77x128: still running after 1 s, killed (SANITIZE_TIMEOUT); --rung 1:"* ]]
    # the rungs that refuse head_dim 128 are skipped with their own line, before the tool runs
    [ "$(printf '%s\n' "$output" | grep -cxF 'skip 07_hopper racecheck 1x2x77x128: rung 4 of 07_hopper does not run head_dim 128 (it runs 64; rungs 1-3, 5-9 and 11-14 run 64 and 128)')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -cxF 'skip 07_hopper racecheck 1x2x77x128: rung 10 of 07_hopper does not run head_dim 128 (it runs 64; rungs 1-3, 5-9 and 11-14 run 64 and 128)')" -eq 1 ]
}

@test "sanitize.sh: a sanitizer whose --version hangs is killed after SANITIZE_TIMEOUT: exit 2, one line" {
    fake_sanitizer 'exec sleep 30'
    run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        SANITIZE_TIMEOUT=1 SANITIZE_TOOLS=memcheck SANITIZE_SHAPES=1x2x77x64 SANITIZE_STAGES=01_naive \
        SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs" bash "$ROOT/tests/sanitize.sh"   # no context: the stand-in sanitizer never runs the stage
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: $BATS_TEST_TMPDIR/bin/fake-sanitizer --version still running after 1 s, killed (SANITIZE_TIMEOUT)" ]
    [ -z "$output" ]
}

@test "sanitize.sh: racecheck and synccheck track 1024 cuda::barriers per block, memcheck is not given the flag" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    fake_sanitizer "echo \"\$*\" >> \"$BATS_TEST_TMPDIR/args\"; echo '========= ERROR SUMMARY: 0 errors'"
    run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        SANITIZE_TOOLS="memcheck racecheck synccheck" SANITIZE_SHAPES=1x2x77x64 SANITIZE_STAGES=01_naive \
        SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs" bash "$ROOT/tests/sanitize.sh"   # no context: the stand-in sanitizer never runs the stage
    [ "$status" -eq 0 ]
    [ "$(grep -c -- '--num-cuda-barriers 1024' "$BATS_TEST_TMPDIR/args")" -eq 2 ]
    grep -q -- '^--tool memcheck --error-exitcode 1 --report-api-errors no ./01_naive/run ' "$BATS_TEST_TMPDIR/args"
    grep -q -- '^--tool racecheck .*--num-cuda-barriers 1024 --kernel-name-exclude kns=cudnn_generated ./01_naive/run ' "$BATS_TEST_TMPDIR/args"
    grep -q -- '^--tool synccheck .*--num-cuda-barriers 1024 ./01_naive/run ' "$BATS_TEST_TMPDIR/args"
}

# ---- bad input to tests/sanitize.sh and make sanitize: one line, exit 2, before the device is
# looked at (these run where there is no GPU: the reason must still be the input) ----------------

# sanitize_bad VAR=VALUE...: tests/sanitize.sh under those variables (no fake GPU, no sanitizer
# found: a bad variable must be reported before either is looked at).
sanitize_bad() {
    run --separate-stderr env "$@" SANITIZE_LOGS="${SANITIZE_LOGS_T:-$BATS_TEST_TMPDIR/logs}" \
        bash "$ROOT/tests/sanitize.sh"   # no context: bad input, refused before the device
}

@test "sanitize.sh: a malformed SANITIZE_SHAPES entry: exit 2, one line, before anything runs" {
    for shape in 1x2x77 0x2x77x64 -1x2x3x64 1x2x77x64x9 '*' 1x2x77x64,1x2x77x128 ' 1x2x77x64 abc'; do
        sanitize_bad SANITIZE_SHAPES="$shape"
        echo "$shape -> $stderr"
        [ "$status" -eq 2 ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == "sanitize: SANITIZE_SHAPES: '"*"' is not BxHxSxD with positive integers (e.g. 1x2x77x64)" ]]
        [ -z "$output" ]
    done
}

@test "sanitize.sh: SANITIZE_SHAPES='*' is not glob-expanded: the message names '*'" {
    sanitize_bad SANITIZE_SHAPES='*'
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_SHAPES: '*' is not BxHxSxD with positive integers (e.g. 1x2x77x64)" ]
}

@test "sanitize.sh: a SANITIZE_SHAPES entry beyond the stages' limits: exit 2, one line" {
    # the limits are the stages' own (common/cli.c), asked with ./NN_x/run --validate
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    sanitize_bad SANITIZE_SHAPES="1x2x77x64 99999999999999999999x1x1x64"
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_SHAPES: '99999999999999999999x1x1x64': --batch: 99999999999999999999 is out of range (expected 1 to 65535)" ]
    sanitize_bad SANITIZE_SHAPES="1x1x1x2048"
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_SHAPES: '1x1x1x2048': --head-dim: 2048 is out of range (expected 1 to 1024)" ]
}

@test "sanitize.sh: empty lists (SANITIZE_TOOLS, SANITIZE_SHAPES, SANITIZE_STAGES of blanks): exit 2, one line each" {
    sanitize_bad SANITIZE_TOOLS=" "
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_TOOLS names no tool (memcheck, racecheck, synccheck, initcheck)" ]
    sanitize_bad SANITIZE_SHAPES=" "
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_SHAPES names no shape (BxHxSxD, e.g. 1x2x77x64)" ]
    sanitize_bad SANITIZE_STAGES=" "
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_STAGES names no stage (e.g. 05_flash)" ]
}

@test "sanitize.sh: SANITIZE_TIMEOUT must be 1 to 86400 seconds: 0 is refused with one line" {
    sanitize_bad SANITIZE_TIMEOUT=0
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_TIMEOUT=0: seconds per run must be 1 to 86400" ]
    sanitize_bad SANITIZE_TIMEOUT=99999999999999999999
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_TIMEOUT=99999999999999999999: seconds per run must be 1 to 86400" ]
    sanitize_bad SANITIZE_CUDA_BARRIERS=99999999999999999999
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_CUDA_BARRIERS=99999999999999999999: must be 0 (the tool's own count) to 65536" ]
}

@test "sanitize.sh: SANITIZER that exists but is not an executable file: exit 2, says so" {
    sanitize_bad SANITIZER=/etc/passwd
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZER=/etc/passwd is not an executable file (the compute-sanitizer program)" ]   # no context: a message
    sanitize_bad SANITIZER=/tmp
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZER=/tmp is not an executable file (the compute-sanitizer program)" ]   # no context: a message
}

@test "sanitize.sh: a SANITIZE_LOGS that is a file, under a file, or cannot be created: exit 2, one line" {
    SANITIZE_LOGS_T=/etc/passwd sanitize_bad
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_LOGS=/etc/passwd is not a directory" ]
    SANITIZE_LOGS_T=/etc/passwd/logs sanitize_bad
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_LOGS=/etc/passwd/logs: /etc/passwd is not a directory" ]
    SANITIZE_LOGS_T=/proc/sanitize-logs sanitize_bad
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_LOGS=/proc/sanitize-logs: cannot create it (no write access to /proc)" ]
    SANITIZE_LOGS_T=/dev/full sanitize_bad
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_LOGS=/dev/full is not a directory" ]
}

@test "sanitize.sh: checking SANITIZE_LOGS leaves nothing behind (a missing directory is not created by the check)" {
    no_gpu || skip "a GPU is present (the run would create the logs)"
    SANITIZE_LOGS_T="$BATS_TEST_TMPDIR/new/logs" sanitize_bad SANITIZER=/nonexistent
    [ "$status" -eq 2 ]
    [[ "$stderr" == "sanitize: no CUDA device: "* ]]
    [ ! -e "$BATS_TEST_TMPDIR/new" ]
    [ -z "$(ls -A "$BATS_TEST_TMPDIR" | grep sanitize-probe || true)" ]
}

@test "sanitize.sh: an unknown stage in SANITIZE_STAGES: exit 2, one line" {
    sanitize_bad SANITIZE_STAGES="01_naive 99_bogus"
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_STAGES: '99_bogus' is not a stage (a NN_x directory such as 05_flash)" ]
    sanitize_bad SANITIZE_STAGES="../tests"
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: SANITIZE_STAGES: '../tests' is not a stage (a NN_x directory such as 05_flash)" ]
}

@test "sanitize.sh: an argument is refused with one line; --preflight prints the bare reason on stderr" {
    run --separate-stderr bash "$ROOT/tests/sanitize.sh" --fast   # no context: bad input, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "sanitize: takes no arguments (got '--fast'); set SANITIZE_* variables instead (see tests/sanitize.sh)" ]   # no context: a message
    run --separate-stderr env SANITIZE_TIMEOUT=0 bash "$ROOT/tests/sanitize.sh" --preflight   # no context: bad input, refused before the device
    [ "$status" -eq 2 ]
    [ "$stderr" = "SANITIZE_TIMEOUT=0: seconds per run must be 1 to 86400" ]
    [ -z "$output" ]
}

@test "sanitize.sh --preflight with a (fake) GPU and sanitizer: silent, exit 0, nothing run" {
    fake_sanitizer "echo ran >> \"$BATS_TEST_TMPDIR/ran\""
    run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" SANITIZER="$BATS_TEST_TMPDIR/bin/fake-sanitizer" \
        SANITIZE_LOGS="$BATS_TEST_TMPDIR/logs" bash "$ROOT/tests/sanitize.sh" --preflight   # no context: --preflight: nothing runs
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [ -z "$stderr" ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "make sanitize with a bad SANITIZE_* variable: that reason in make's one line, exit 2, even without a GPU" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    SANITIZE_SHAPES='*' make_bad sanitize
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "Makefile:"*": *** make sanitize: SANITIZE_SHAPES: '*' is not BxHxSxD with positive integers (e.g. 1x2x77x64).  Stop." ]]
    make_bad sanitize SANITIZE_TIMEOUT=0
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make sanitize: SANITIZE_TIMEOUT=0: seconds per run must be 1 to 86400.  Stop." ]]
    make_bad sanitize SANITIZER=/etc/passwd
    [ "$status" -eq 2 ]
    [[ "$stderr" == "Makefile:"*": *** make sanitize: SANITIZER=/etc/passwd is not an executable file (the compute-sanitizer program).  Stop." ]]   # no context: a message
}
