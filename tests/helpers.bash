# Shared helpers for the Bats suites. Load with: load helpers
# ROOT: the repository (tests/..). Each test loads this file: an absolute, plain BATS_TEST_DIRNAME
# gives it without a subshell.
if [[ "$BATS_TEST_DIRNAME" == /?*/tests && "$BATS_TEST_DIRNAME" != *//* && "$BATS_TEST_DIRNAME" != *"/."* ]]; then
    ROOT=${BATS_TEST_DIRNAME%/tests}
else
    ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
fi
# Bats 1.8 or later: run --separate-stderr and its other flags, and setup_suite beside the suites
# as tests/setup_suite.bash uses it.
bats_require_minimum_version 1.8.0

# python3 on PATH may be a version manager's shim (pyenv's is a bash script that starts the
# interpreter: each start costs a shell and a lookup more), and the suites start python3 hundreds
# of times. The interpreter's own directory (sys.executable's, not its link target: a virtual
# environment stays itself) goes first on PATH for every test process; asked once per bats run,
# the answer kept in $BATS_RUN_TMPDIR.
python_dir_first() {
    local cache="${BATS_RUN_TMPDIR:-}/python3_dir" dir=""
    [ -n "${BATS_RUN_TMPDIR:-}" ] || return 0
    if [ ! -e "$cache" ]; then
        python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' > "$cache.$$" 2>/dev/null || true
        mv "$cache.$$" "$cache"
    fi
    read -r dir < "$cache" || true
    if [ -n "$dir" ] && [ -x "$dir/python3" ]; then
        case ":$PATH:" in ":$dir:"*) ;; *) PATH="$dir:$PATH" ;; esac
    fi
}
python_dir_first

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
    local why; why=$(gpu_reason)
    [ -z "$why" ] || skip "$why (this test needs an NVIDIA GPU)"
}

# gpu_reason: why no stage can run here (tests/need_gpu.sh's line), or nothing where one can.
gpu_reason() {
    local cache="$BATS_RUN_TMPDIR/need_gpu"
    if [ ! -e "$cache" ]; then
        (bash "$ROOT/tests/need_gpu.sh" || true) > "$cache.$$" && mv "$cache.$$" "$cache"
    fi
    local why; why=$(< "$cache")
    [ -z "$why" ] || printf '%s\n' "$why"
}

# gpu_ready: exit 0 where require_gpu would not skip (a suite's setup_file asks it).
gpu_ready() {
    [ -z "$(gpu_reason)" ]
}

# gpu_cc: the compute capability of GPU 0 ("9.0"), or "" without a GPU; asked once per bats run
# (every test of the 07 suites asks), the answer kept in $BATS_RUN_TMPDIR.
gpu_cc() {
    local cache=${BATS_RUN_TMPDIR:+$BATS_RUN_TMPDIR/gpu_cc} cc=""
    if [ -n "$cache" ] && [ -e "$cache" ]; then
        read -r cc < "$cache" || true
    else
        cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ')
        [ -z "$cache" ] || { printf '%s\n' "$cc" > "$cache.$$"; mv "$cache.$$" "$cache"; }
    fi
    printf '%s\n' "$cc"
}

# require_hopper: require_gpu, and skip (with the reason) where GPU 0 is not compute capability
# 9.0: 07_hopper's binary holds sm_90a code only.
require_hopper() {
    require_gpu
    local cc; cc=$(gpu_cc)
    [ "$cc" = "9.0" ] || skip "07_hopper needs a Hopper GPU, compute capability 9.0 (this GPU: ${cc:-unknown})"
}

# ---- stand-ins and probes of common.bats and cli_gpu.bats (the CLI, device and tool checks) ----
# no_gpu: exit 0 where nvidia-smi lists no GPU (a test's no-GPU branch, or its skip where one is).
no_gpu() { ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

# no_driver: no libcuda.so.1 can be loaded here (no NVIDIA driver installed).
no_driver() { ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; }

# fake_gpu: a stand-in nvidia-smi that lists one GPU, first on PATH (tests/need_gpu.sh trusts it).
fake_gpu() {
    mkdir -p "$BATS_TEST_TMPDIR/gpu-bin"
    printf '#!/bin/sh\necho "GPU 0: NVIDIA Stand-in (UUID: GPU-0)"\n' > "$BATS_TEST_TMPDIR/gpu-bin/nvidia-smi"
    chmod +x "$BATS_TEST_TMPDIR/gpu-bin/nvidia-smi"
    printf '%s\n' "$BATS_TEST_TMPDIR/gpu-bin:$PATH"
}

# make_bad ARGS...: make -s ARGS in the repository; sets status, output, stderr.
make_bad() {
    run --separate-stderr make -s -C "$ROOT" --no-print-directory "$@"
    echo "$stderr"
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
# (No process is started: a suite asks for hundreds of fields.)
field() {
    untraced
    last_line_of "$output" 'result '
    line_field "$REPLY" "$1"
}

# untraced: in a command substitution, $(...), turns off Bats' DEBUG trap for the rest of it.
# Bats records a stack trace before every command of a test (for the failing line's location),
# which makes each command of the parsing helpers cost ten times its own time; a helper called
# as $(helper ...) asserts nothing, and the trap of the test itself is left as it is.
untraced() {
    [ "$BASH_SUBSHELL" = 0 ] || trap - DEBUG
}

# last_line_of TEXT PREFIX: REPLY = the last line of TEXT that starts with PREFIX, or "". In bash
# alone for the usual run's output; a long text (an ncu report after the summary line) goes to
# awk, since bash's pattern removal below takes time with the square of what follows the line.
last_line_of() {
    local t=$'\n'"$1"
    REPLY=""
    if [ "${#t}" -gt 65536 ]; then
        REPLY=$(printf '%s\n' "$1" | P=$2 awk 'index($0, ENVIRON["P"]) == 1 { l = $0 } END { printf "%s", l }')
        return 0
    fi
    case "$t" in *$'\n'"$2"*) ;; *) return 0 ;; esac
    t=${t##*$'\n'"$2"}
    REPLY="$2${t%%$'\n'*}"
}

# line_field LINE KEY: the value of each space-separated word KEY=VALUE of LINE, one per line.
line_field() {
    local rest=" $1 " key=" $2="
    while [[ "$rest" == *"$key"* ]]; do
        rest=${rest#*"$key"}
        printf '%s\n' "${rest%% *}"
        rest=" ${rest#* }"
    done
}

# py_stdlib ARGS...: python3 -S ARGS, for what needs the standard library alone: the course's own
# scripts under test (bench/compare.py, bench/render.py, bench/peers.py up to its PyTorch import,
# which the suites give a stand-in on PYTHONPATH; tests/*.py) and the suites' Python snippets. -S
# leaves out site's start-up (site-packages and its .pth files, which may import whole packages):
# the suites start Python hundreds of times. PYTHONPATH still holds. Whatever needs site-packages
# (PyTorch itself, HTA) runs as plain python3.
py_stdlib() { python3 -S "$@"; }

# trace_query_py ARGS...: tests/trace_query.py ARGS.
trace_query_py() { py_stdlib "$ROOT/tests/trace_query.py" "$@"; }

# trace_query PATH WHAT [ARGS]: facts about a Chrome trace, one per line, from tests/trace_query.py.
# A suite asks a trace many questions; the ones that `trace_query.py PATH facts` answers are read
# from its answers, computed once per version of the file (its inode, size and modification time)
# and kept in $BATS_RUN_TMPDIR; the others (counter, achieved) and a file that is not a trace go
# to trace_query.py itself, as before. A fact's ARG and VALUE come escaped (\\, \t, \n, \r:
# trace_query.py's fact_field): the argument is compared, the value printed, as the text it stands
# for.
trace_query() {
    local facts
    case "${2-}" in
        valid | kernels | launch-apis | occupancy | profiler-steps | timeline-kernels | flows | rank) ;;
        count | ranges) [ $# -eq 3 ] || { trace_query_py "$@"; return; } ;;
        *) trace_query_py "$@"; return ;;
    esac
    trace_facts "$1" || { trace_query_py "$@"; return; }
    facts=$REPLY
    case "$2" in
        valid) grep -qxF "$(printf 'valid\t\t1')" "$facts" ;;
        rank) grep -q '^rank'$'\t' "$facts" || { trace_query_py "$@"; return; }
              TQ_QUERY=rank fact_values "$facts" ;;
        count | ranges) TQ_QUERY=$2 TQ_ARG=$3 TQ_NUMBER=1 fact_values "$facts" ;;
        *) TQ_QUERY=$2 fact_values "$facts" ;;
    esac
}

# fact_values FACTS: the values of the facts whose query is $TQ_QUERY (and, where TQ_ARG is set,
# whose argument is $TQ_ARG), unescaped, one per line; with TQ_NUMBER set, the last one as a number
# instead (0 where none matches: a count). From the environment, not awk -v: -v would take the
# backslashes of a name for escapes.
fact_values() {
    awk -F'\t' '
        function unescape(s,    out, i, c, n) {
            if (index(s, "\\") == 0) return s
            out = ""; n = length(s)
            for (i = 1; i <= n; i++) {
                c = substr(s, i, 1)
                if (c == "\\" && i < n) {
                    c = substr(s, ++i, 1)
                    if (c == "t") c = "\t"; else if (c == "n") c = "\n"; else if (c == "r") c = "\r"
                }
                out = out c
            }
            return out
        }
        # ("" joined: compared as text, never as numbers: a name "1.0" is not "1")
        $1 "" == ENVIRON["TQ_QUERY"] "" && (!("TQ_ARG" in ENVIRON) || unescape($2) "" == ENVIRON["TQ_ARG"] "") {
            if ("TQ_NUMBER" in ENVIRON) n = $3
            else print unescape($3)
        }
        END { if ("TQ_NUMBER" in ENVIRON) print n + 0 }' "$1"
}

# trace_facts PATH: REPLY = the file of PATH's facts (trace_query.py PATH facts), made when PATH is
# new or has changed; fails when trace_query.py cannot give them. The file's name is p and PATH,
# its '%' and '/' written %25 and %2F (c and PATH's cksum where that is too long for a name).
trace_facts() {
    local stamp dir="${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/trace_facts" key f first
    stamp=$(stat -L -c '%i %s %y' "$1" 2>/dev/null) || return 1
    key=${1//%/%25}
    key=p${key//\//%2F}
    [ "${#key}" -le 200 ] || key=c$(printf '%s' "$1" | cksum | tr ' ' _)
    f="$dir/$key"
    if [ -s "$f" ] && read -r first < "$f" && [ "$first" = "$stamp" ]; then
        REPLY=$f
        return 0
    fi
    mkdir -p "$dir"
    { printf '%s\n' "$stamp"; trace_query_py "$1" facts; } > "$f.$BASHPID" 2>/dev/null ||
        { rm -f "$f.$BASHPID"; return 1; }
    mv "$f.$BASHPID" "$f"
    REPLY=$f
}

# num_le A B: exit 0 when A <= B, both decimal numbers as the summary line prints them (1.2e-03,
# 0.5); anything else (nan, inf, empty, an expression) fails: use at_most for expressions.
num_le() {
    local re='^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$'
    [[ $1 =~ $re && $2 =~ $re ]] || return 1
    awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'
}

# The summary line's rel_l2 is at most $1.
assert_rel_l2_le() {
    local err; err=$(field rel_l2)
    num_le "$err" "$1" || { echo "rel_l2=$err exceeds $1"; return 1; }
}

# at_most A B: exit 0 when the number A <= B (python3 arithmetic: A and B may be expressions).
at_most() {
    py_stdlib -c "import sys; a = float($1); b = float($2); print('%g <= %g ?' % (a, b)); sys.exit(0 if a <= b else 1)"
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

# ---- independent runs at once ------------------------------------------------------------------
# Runs of a stage without the counter pass, the timeline pass and --regions (the tests' correctness
# runs) are independent processes: several can share the GPU. Runs that profile (the counter pass,
# the timeline pass, --regions: CUPTI's profiler and PM sampling are device-wide) never go through
# run_parallel: each one runs alone.

# test_jobs: how many runs at once: $TEST_JOBS if set (a whole number from 1 to 1024), else the CPU count
# up to 16 (each run checks its rows on the CPU).
test_jobs() {
    local n=${TEST_JOBS:-}
    if [ -n "$n" ]; then
        [[ "$n" =~ ^[1-9][0-9]{0,3}$ ]] && [ "$n" -le 1024 ] ||
            { echo "TEST_JOBS=$n: expected a whole number from 1 to 1024" >&2; return 2; }
        echo "$n"
        return 0
    fi
    n=$(nproc 2>/dev/null || echo 1)
    echo $(( n > 16 ? 16 : n ))
}

# run_parallel DIR FUNC CASE...: FUNC with the words of each CASE as its arguments, in the
# background, at most test_jobs at a time; waits for all. A case's stdout and stderr go to
# DIR/KEY.out and its exit status to DIR/KEY.status (KEY: the case with '_' for each space, see
# case_key). FUNC runs in a subshell of the test: the test's functions and variables are there.
# With TEST_RUN_TIMES=FILE each case adds a line "START END CASE" (seconds since the epoch) to FILE.
run_parallel() {
    local dir=$1 func=$2 jobs running=0 c key; shift 2
    jobs=$(test_jobs) || return 2
    mkdir -p "$dir"
    for c in "$@"; do
        key=$(case_key "$c")
        # shellcheck disable=SC2086  # the case's words are the arguments
        ( set +e; t0=$EPOCHREALTIME
          "$func" $c > "$dir/$key.out" 2>&1 < /dev/null; echo $? > "$dir/$key.status"
          [ -z "${TEST_RUN_TIMES:-}" ] || echo "$t0 $EPOCHREALTIME $c" >> "$TEST_RUN_TIMES" ) &
        running=$((running + 1))
        if [ "$running" -ge "$jobs" ]; then
            wait -n || true
            running=$((running - 1))
        fi
    done
    wait || true
}

# case_key CASE: the file name of a case's results (each space an underscore, each / a %).
case_key() {
    untraced
    local k=${1// /_}
    printf '%s\n' "${k//\//%}"
}

# load_case DIR CASE: status, output and lines of the case's run, as Bats' run sets them; fails
# (saying so) when the case did not run.
load_case() {
    local key; key=$(case_key "$2")
    if [ ! -e "$1/$key.status" ]; then
        echo "case '$2' did not run (no $1/$key.status)"
        status=255 output="" lines=()
        return 1
    fi
    read -r status < "$1/$key.status"
    output=$(cat "$1/$key.out")
    IFS=$'\n' read -d '' -r -a lines <<< "$output" || true
}

# expect WHAT COMMAND...: runs COMMAND (an assertion); when it fails, WHAT goes to FAILS and the
# test goes on, so that one run shows every failing case; report_fails ends the test.
expect() {
    local what=$1; shift
    "$@" || FAILS+=("$what")
}

# quick FUNC ARGS...: FUNC ARGS as an assertion, in a subshell without Bats' per-command trace
# (see untraced): for the functions that check many cases or fields, where the trace would cost
# more than the checks. As in a test (set -e), the first failing command fails it; that command
# and its file and line are printed, since Bats' own report then names the quick call, not the
# check. (To list every failing case instead, FUNC collects them with expect and ends with
# report_fails, as rung_checks does.) A skip in FUNC skips the test. Variables FUNC sets stay in
# the subshell. A command of its own: where bash ignores set -e (after if, ||, && or !, in Bats'
# run) no check would stop it, so quick refuses to run there; nor in a pipeline, whose status
# is its last command's.
quick() {
    local ignored why rc skipped="${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/quick_skip.$BASHPID"
    ignored=$( (set -e; false; echo yes); true )   # (not in the if: its condition ignores set -e)
    if [ -n "$ignored" ]; then
        echo "quick $1: called where bash ignores set -e (if, ||, &&, !, run): its checks would not stop it"
        return 1
    fi
    rm -f "$skipped"
    (
        trap - DEBUG
        # (the trap fires in $(...) too, and where set -e is off, where a failing command is no
        # failure: reported at the subshell's own level under set -e only, and on stderr, which
        # $(...) does not take)
        quick_level=$BASH_SUBSHELL
        trap '[ "$BASH_SUBSHELL" != "$quick_level" ] || [[ $- != *e* ]] || quick_failed "$BASH_COMMAND" "${BASH_SOURCE[0]}" "$LINENO"' ERR
        skip() { printf '%s' "${1:-}" > "$skipped"; exit 0; }   # (Bats' skip, after the subshell)
        set -eE
        "$@"
    )
    rc=$?   # (under set -e, as in a test, a failure has ended quick already)
    if [ -e "$skipped" ]; then
        why=$(< "$skipped")
        rm -f "$skipped"
        skip ${why:+"$why"}
    fi
    return "$rc"
}

# quick_failed COMMAND FILE LINE: quick's line for a failing command, on stderr; a function of a
# suite is in Bats' copy of the suite file (BATS_TEST_SOURCE), named by the suite's own name.
quick_failed() {
    local f=$2
    [ -z "${BATS_TEST_SOURCE:-}" ] || [ "$f" != "$BATS_TEST_SOURCE" ] || f=$BATS_TEST_FILENAME
    echo "failed: $1 (${f##*/}, line $3)" >&2
}

# report_fails: fails the test, listing every entry of FAILS, if there is one.
report_fails() {
    if [ "${#FAILS[@]}" -gt 0 ]; then
        printf 'FAILED: %s\n' "${FAILS[@]}"
        return 1
    fi
}

# ---- a suite's runs ahead of its tests -----------------------------------------------------------
# A GPU suite's lean stage runs (run_stage's: no counter pass, no timeline pass) are listed in
# tests/runs.bash and run ahead of its tests, at once: by tests/setup_suite.bash for every suite of
# the bats run, else by the suite's setup_file (prerun_suite). A test then reads its run with
# stage_result, which runs it there and then when nobody did (no GPU at set-up, a test run alone
# with its own flags). The runs are kept for the whole bats run: a run two suites read runs once.
CASES_DIR="${BATS_RUN_TMPDIR:-${BATS_FILE_TMPDIR:-${TMPDIR:-/tmp}}}/cases"

# lean_run STAGE FLAGS... [#N]: ./STAGE/run with its trace at $CASES_DIR/KEY.json, without the
# counter pass and the timeline pass (run_parallel's FUNC for prerun).
lean_run() {
    local key stage=$1 args=("${@:2}")
    key=$(case_key "$*")
    if [ "${#args[@]}" -gt 0 ] && [[ "${args[-1]}" == '#'* ]]; then unset 'args[-1]'; fi
    "$ROOT/$stage/run" --trace "$CASES_DIR/$key.json" --no-counters --no-timeline "${args[@]}"
}

# lean_line CASE: the case as a line of ./STAGE/run --cases (common/run.c): OUT ($CASES_DIR/KEY),
# then lean_run's flags, tab-separated.
lean_line() {
    local key words=() out
    read -r -a words <<< "$1"
    key=$(case_key "$1")
    if [[ "${words[-1]}" == '#'* ]]; then unset 'words[-1]'; fi
    out=("$CASES_DIR/$key" --trace "$CASES_DIR/$key.json" --no-counters --no-timeline "${words[@]:1}")
    local IFS=$'\t'
    printf '%s\n' "${out[*]}"
}

# cases_chunk STAGE LIST: the runs of LIST (lean_line's lines, all of STAGE) in one process,
# ./STAGE/run --cases LIST, one CUDA context for all of them; then again for the lines left
# without a status (a run that ended its process: a CUDA error, a crash), from the first of them.
# A line that two processes in a row leave without a status (it crashes its process before
# writing one) runs alone, as lean_run would run it, so that its status is the process's own.
cases_chunk() {
    local stage=$1 list=$2 first prev="" out line rc todo=() args
    while :; do
        # the lines still without a status (an empty line is none: the C side skips it too)
        mapfile -t todo < "$list"
        local left=()
        for line in "${todo[@]}"; do
            [ -n "$line" ] && [ ! -e "${line%%$'\t'*}.status" ] && left+=("$line")
        done
        [ "${#left[@]}" -gt 0 ] || break
        first=${left[0]}
        if [ "$first" = "$prev" ]; then
            # the flags split at each tab, an empty field kept (as the C side keeps it)
            out=${first%%$'\t'*}
            args=()
            line=${first#"$out"}
            while [ -n "$line" ]; do
                line=${line#$'\t'}
                args+=("${line%%$'\t'*}")
                [[ "$line" == *$'\t'* ]] && line=$'\t'${line#*$'\t'} || line=""
            done
            rc=0
            "$ROOT/$stage/run" "${args[@]}" > "$out.out" 2>&1 < /dev/null || rc=$?
            echo "$rc" > "$out.status"
            prev=""
            continue
        fi
        printf '%s\n' "${left[@]}" > "$list"
        "$ROOT/$stage/run" --cases "$list" > "$list.log" 2>&1 < /dev/null || true
        prev=$first
    done
}

# prerun CASE...: every case not run yet, where a GPU can run them (else nothing): grouped by
# stage into lists, each list one process (cases_chunk), up to test_jobs processes at once. Each
# process creates one CUDA context: the driver creates contexts one at a time across processes
# (a fraction of a second each), so one process per run would make hundreds of runs wait for
# each other; the runs of one process go one after another, each checking its rows on every
# core. The lists: about the work of all runs (run_cost) over test_jobs each, at least 4 runs'
# worth, and up to a quarter more each where that makes no more lists than test_jobs (then none
# waits for another to end); a stage's runs dealt out in turn among its lists, so that they come
# out even (neighbouring runs are often alike in cost); the longest lists started first.
prerun() {
    local c todo=() jobs per first n stage list dir names=()
    gpu_ready || return 0
    declare -A cost=() lists=() dealt=() units=() seen=()
    for c in "$@"; do
        # (a case two suites list runs once: two lists would write the same files at once)
        [ -z "${seen[$c]:-}" ] || continue
        seen[$c]=1
        [ -e "$CASES_DIR/$(case_key "$c").status" ] || todo+=("$c")
    done
    [ "${#todo[@]}" -gt 0 ] || return 0
    jobs=$(test_jobs) || return 2
    n=0
    for c in "${todo[@]}"; do
        stage=${c%% *}
        run_cost "$stage"
        cost[$stage]=$(( ${cost[$stage]:-0} + REPLY ))
        n=$(( n + REPLY ))
    done
    per=$(( (n + jobs - 1) / jobs ))
    [ "$per" -ge 8 ] || per=8
    first=$per
    while :; do
        n=0
        for stage in "${!cost[@]}"; do n=$(( n + (cost[$stage] + per - 1) / per )); done
        [ "$n" -gt "$jobs" ] && [ $(( 4 * per )) -lt $(( 5 * first )) ] || break
        per=$(( per + 1 ))
    done
    [ "$n" -le "$jobs" ] || per=$first   # (more lists than jobs either way: the smaller ones)
    for stage in "${!cost[@]}"; do lists[$stage]=$(( (cost[$stage] + per - 1) / per )); done
    mkdir -p "$CASES_DIR"
    dir=$(mktemp -d "$CASES_DIR/lists.XXXXXX") || return 1
    for c in "${todo[@]}"; do
        stage=${c%% *}
        list=$stage.$(( ${dealt[$stage]:-0} % lists[$stage] ))
        lean_line "$c" >> "$dir/$list"
        run_cost "$stage"
        units[$list]=$(( ${units[$list]:-0} + REPLY ))
        dealt[$stage]=$(( ${dealt[$stage]:-0} + 1 ))
    done
    mapfile -t names < <(for list in "${!units[@]}"; do echo "${units[$list]} $list"; done | sort -k1,1nr -k2 | cut -d' ' -f2)
    # (the lists by name: run_parallel splits a case into words, and $dir may hold a space)
    lists_dir=$dir run_parallel "$dir/logs" cases_list "${names[@]}"
}

# run_cost STAGE: REPLY = what one lean run of STAGE costs, in units of about 0.17 s of an H200
# run (measured per list with make test TEST_TIMING=1): 3 for 06_cudnn, whose every run builds
# its cuDNN plan, 2 for the others.
run_cost() {
    case "$1" in
        06_cudnn) REPLY=3 ;;
        *) REPLY=2 ;;
    esac
}

# cases_list NAME: cases_chunk of the list prerun wrote as $lists_dir/NAME, NAME = STAGE.N
# (run_parallel's FUNC).
cases_list() {
    local stage=$1 t0=$EPOCHREALTIME lines=()
    mapfile -t lines < "$lists_dir/$1"   # (for TEST_TIMING; cases_chunk rewrites it on a restart)
    cases_chunk "${stage%.*}" "$lists_dir/$1"
    [ -z "${TEST_TIMING_DIR:-}" ] ||
        awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="${#lines[@]}" -v s="$stage" \
            'BEGIN { printf "%.1f s %s (%d runs)\n", b - a, s, n }' >> "$TEST_TIMING_DIR/setup.lists"
}

# prerun_suite: this suite's runs (tests/runs.bash), those not run yet (a setup_file's body).
prerun_suite() {
    local cases=()
    gpu_ready || return 0
    mapfile -t cases < <(suite_runs "$(basename "$BATS_TEST_FILENAME" .bats)")
    [ "${#cases[@]}" -eq 0 ] || prerun "${cases[@]}"
}

# stage_result STAGE FLAGS... [#N]: status, output and lines of that run as Bats' run sets them
# and TRACE its trace: the saved run of prerun, else run now (and saved). With
# TEST_NOT_PRERUN=FILE, each case run here (not listed in tests/runs.bash, or no GPU at set-up)
# adds a line to FILE: the lists' misses.
stage_result() {
    local key; key=$(case_key "$*")
    if [ ! -e "$CASES_DIR/$key.status" ]; then
        [ -z "${TEST_NOT_PRERUN:-}" ] || printf '%s\n' "$*" >> "$TEST_NOT_PRERUN"
        mkdir -p "$CASES_DIR"
        ( set +e; lean_run "$@" > "$CASES_DIR/$key.out" 2>&1 < /dev/null; echo $? > "$CASES_DIR/$key.status" )
    fi
    load_case "$CASES_DIR" "$*"
    TRACE="$CASES_DIR/$key.json"
}

# The suites' runs and the functions that list them.
# shellcheck source=tests/runs.bash
source "$ROOT/tests/runs.bash"

# ---- the eager stages (01_naive, 02_inplace) ----------------------------------------------------
# A bf16 tensor-core GEMM: cuBLAS's Hopper "nvjet" kernels, or a named bf16/HMMA kernel.
TC_GEMM_RE='^nvjet_|bf16.*gemm|gemm.*bf16|s16816|hmma|tensorop'
GEMM_RE='nvjet|gemm|Gemm'

# kcount ERE: the number of kernel events of $TRACE whose name matches ERE.
kcount() {
    trace_query "$TRACE" kernels | grep -cE "$1" || true
}

# naive_extra_bytes B H S: 01's and 02's extra_bytes: two bf16 score buffers + the bool mask (no
# cuBLASLt workspace: the GEMMs need none).
naive_extra_bytes() {
    local b=$1 h=$2 s=$3
    echo $(( 2 * b * h * s * s * 2 + s * s ))
}

# assert_eager_kernels_and_ranges: what 01's and 02's traces share over 3 active steps (+ the mask
# built once at set-up): 2 GEMMs, mul, masked-fill and softmax per step, launch-to-kernel flows,
# our kernels through cudaLaunchKernel, and the blog's op names on the CPU lane.
assert_eager_kernels_and_ranges() {
    trace_query "$TRACE" valid
    trace_query "$TRACE" kernels
    [ "$(kcount "$GEMM_RE")" -eq 6 ]
    [ "$(kcount 'mul_bf16_kernel')" -eq 3 ]
    [ "$(kcount 'masked_fill_bf16_kernel')" -eq 3 ]
    [ "$(kcount 'softmax_rows_bf16_kernel')" -eq 3 ]
    [ "$(kcount 'causal_mask_kernel')" -eq 1 ]
    # one launch-to-kernel flow per kernel of the active steps at least
    [ "$(trace_query "$TRACE" flows)" -ge 15 ]
    # our own kernels go through the runtime's <<<>>> launch
    [ "$(trace_query "$TRACE" launch-apis | grep -c '^cudaLaunchKernel$')" -ge 9 ]
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges matmul)" -eq 6 ]
    [ "$(trace_query "$TRACE" ranges mul)" -eq 3 ]
    [ "$(trace_query "$TRACE" ranges softmax)" -eq 3 ]
}

# ---- 07_hopper's rungs (07_hopper.bats, 07_ladder.bats, regions.bats) -----------------------------
# flash3_block_m RUNG [HEAD_DIM]: the query rows of the rung's tile at that head_dim (default 64),
# 64 per consumer warpgroup: 192 (three consumer warpgroups) on rung 10 and on rungs 11-14 at
# head_dim 64; 128 (two) otherwise.
flash3_block_m() {
    if [ "$1" -eq 10 ] || { [ "$1" -ge 11 ] && [ "${2:-64}" = 64 ]; }; then echo 192; else echo 128; fi
}
# flash3_kernel RUNG HEAD_DIM: the rung's attention kernel at that head_dim.
flash3_kernel() { echo "flash3_fwd_bf16_causal_$(flash3_block_m "$1" "$2")x128_d$2_r$1_sm90a"; }
# The default rungs (07_hopper/hopper.cu's rung_for): at head_dim 64 rung 14 where batch x heads x
# its 192-row query tiles fill the SMs, rung 8 below that; rung 14 at head_dim 128.
FLASH3_DEFAULT_D64=14
FLASH3_DEFAULT_D64_SMALL=8
FLASH3_DEFAULT_D128=14
# flash3_default_rung HEAD_DIM [BATCH HEADS SEQ SMS]: the rung a run without --rung takes
# (without the shape: a grid that fills the SMs, as the default shape's does).
flash3_default_rung() {
    if [ "$1" != 64 ]; then echo "$FLASH3_DEFAULT_D128"; return; fi
    if [ $# -ge 5 ] && [ $(($2 * $3 * (($4 + 191) / 192))) -lt "$5" ]; then
        echo "$FLASH3_DEFAULT_D64_SMALL"
    else
        echo "$FLASH3_DEFAULT_D64"
    fi
}

# ---- the one-kernel stages (05_flash, 07_hopper) ------------------------------------------------
# assert_one_kernel_shape STAGE BATCH HEADS SEQ HEAD_DIM: the saved shape run PASSed at that shape
# under 1e-2 with one kernel and no copy per step, no extra bytes, a valid trace with 3 attn_fwd
# ranges and the suite's kernels (its assert_kernels HEAD_DIM).
assert_one_kernel_shape() {
    # shellcheck disable=SC2046  # the run's words
    stage_result $(shape_flags "$@")
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field check)" = PASS ]
    [ "$(field shape)" = "$2x$3x$4x$5" ]
    assert_rel_l2_le 1e-2
    [ "$(field kernels_per_step)" = 1 ]
    [ "$(field memcpy_per_step)" = 0 ]
    [ "$(field extra_bytes)" = 0 ]
    trace_query "$TRACE" valid
    assert_kernels "$5"
    [ "$(trace_query "$TRACE" ranges attn_fwd)" -eq 3 ]
}
