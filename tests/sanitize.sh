#!/usr/bin/env bash
# make sanitize: compute-sanitizer on every built stage at small odd shapes, one forward each way
# (--warmup 0 --steps 1 --trace none --quiet), with four tools:
#   memcheck   out-of-bounds and misaligned device memory accesses, hardware exceptions;
#   racecheck  shared-memory hazards (a missing __syncthreads between a write and a read);
#   synccheck  invalid uses of barriers (__syncthreads or bar.sync in divergent code, a barrier
#              not every thread of the block or warp reaches, __syncwarp with a bad mask);
#   initcheck  device global memory read before anything wrote it (an uninitialized buffer, a
#              workspace or padding read as data). O is poisoned by a memset before the checked
#              forward, so an unwritten O element is not an initcheck error (the reference check
#              catches it), but a kernel that reads past the data it was given is.
# Fails (exit 1) if any tool reports an error (--error-exitcode 1) or a stage fails; a stage that
# refuses a shape (exit 2, e.g. a head_dim it does not support) is skipped with its message.
# Bad input (every variable below, checked first), no GPU (checked next) or no compute-sanitizer:
# one line on stderr, exit 2, before anything runs.
#
#   SANITIZER=/path/to/compute-sanitizer  the tool (default: $CUDA_HOME/bin/compute-sanitizer,
#                                         then $CUDA_HOME/compute-sanitizer/, then PATH)
#   SANITIZE_SHAPES="1x2x77x64 1x2x77x128"  BxHxSxD list
#   SANITIZE_TOOLS="memcheck racecheck synccheck initcheck"  a subset of the tools
#   SANITIZE_STAGES="05_flash"            a subset of the stages (default every NN_x/ directory)
#   SANITIZER_FLAGS                       extra flags; default --report-api-errors no: our own
#       CUDA calls are all checked by common/check.h, and library-internal calls (cuBLAS, cuDNN)
#       that fail on purpose and recover would otherwise count as errors.
#   RACECHECK_EXCLUDE="kns=cudnn_generated"  kernels racecheck leaves out (default: cuDNN's
#       generated kernels). Measured on the H200 (cuDNN 9.14): racecheck reports shared-memory
#       hazards inside cudnn_generated_..._flash_fprop_wgmma_... kernels (8 per block, between a
#       read and a write that the kernel orders with mbarriers / the TMA async proxy, which
#       racecheck does not model). They are NVIDIA's kernels, not ours; memcheck still runs on
#       them. Every kernel of ours (04, 05, 01-03's kernels) is racechecked.
#   SANITIZE_CUDA_BARRIERS=1024  --num-cuda-barriers for racecheck and synccheck: the mbarriers
#       (cuda::barrier) per block the tool tracks. Its automatic count (0) is too small for
#       cuDNN's generated kernel: measured on the H200 (compute-sanitizer 2025.3.1, cuDNN 9.14),
#       06 synccheck at 1x2x77x64 warned "Detected overflow of tracked cuda::barrier structures"
#       and the kernel then failed (unspecified launch failure) with 0 and with 64; with 1024
#       it runs clean.
#   SANITIZE_TIMEOUT=300  seconds per run; a run that takes longer is killed and FAILs (a hang
#       under a tool is a finding, not a wait).
#   07_hopper runs once per rung (--rung 1 .. 15, every rung file; rungs 4 and 10 refuse head_dim 128,
#       rung 15 head_dim 64: skipped):
#       every tool checks the kernels students run, racecheck included. Measured on the H200
#       (compute-sanitizer 2025.3.1) on the one-kernel build before the ladder: racecheck hung
#       now and then on the setmaxnreg kernel (killed after 30-60 s; 0 hazards whenever it
#       finished). On the rungs too, a few racecheck runs hang and the rest finish clean in
#       seconds (tests/probes/racecheck_07.sh; the measurements are in chapter 07, "What
#       compute-sanitizer sees"); memcheck, synccheck and initcheck never hang. So racecheck on
#       07_hopper only: a run killed at SANITIZE_TIMEOUT is named ("hung ...") and run again,
#       up to 3 runs in all; three hangs in a row FAIL; a hazard is never run again.
#   SYNCCHECK_EXCLUDE, INITCHECK_EXCLUDE  kernels synccheck / initcheck leave out, in the same
#       --kernel-name-exclude syntax (default: none). Every kernel, cuBLAS's and cuDNN's
#       included, is checked by both: named barriers and mbarriers are valid barrier use for
#       synccheck, and the libraries read only Q, K, V, the buffers the stage wrote before (S,
#       P, the mask) and workspaces they initialize themselves (cuDNN's 4-byte memset). Should
#       initcheck report reads inside a library kernel (a workspace or an alignment pad that it
#       loads but never uses), exclude that kernel here with the measurement, as for racecheck,
#       and keep every kernel of ours checked.
# Logs: build/sanitize/STAGE.TOOL.BxHxSxD.log (SANITIZE_LOGS to change).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# bash tests/sanitize.sh --preflight: the checks below (the variables, the GPU, the tool) and
# nothing else; the reason on stderr without the "sanitize: " prefix, exit 2 (make sanitize puts
# it into its one "*** make sanitize: ..." line before building anything); silent, exit 0 when a
# run could start.
preflight=0
if [ $# -eq 1 ] && [ "$1" = --preflight ]; then
    preflight=1
elif [ $# -gt 0 ]; then
    echo "sanitize: takes no arguments (got '$1'); set SANITIZE_* variables instead (see tests/sanitize.sh)" >&2
    exit 2
fi

# bad REASON: one line on stderr ("sanitize: REASON", the bare REASON under --preflight), exit 2.
bad() {
    if [ $preflight -eq 1 ]; then echo "$1" >&2; else echo "sanitize: $1" >&2; fi
    exit 2
}

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
shapes=${SANITIZE_SHAPES:-"1x2x77x64 1x2x77x128"}
tools=${SANITIZE_TOOLS:-"memcheck racecheck synccheck initcheck"}
logs=${SANITIZE_LOGS:-build/sanitize}
flags=${SANITIZER_FLAGS:-"--report-api-errors no"}
race_exclude=${RACECHECK_EXCLUDE-"kns=cudnn_generated"}
sync_exclude=${SYNCCHECK_EXCLUDE-}
init_exclude=${INITCHECK_EXCLUDE-}
cuda_barriers=${SANITIZE_CUDA_BARRIERS:-1024}
run_timeout=${SANITIZE_TIMEOUT:-300}
stages=${SANITIZE_STAGES:-$(for d in [0-9][0-9]_*/; do [ -d "$d" ] && printf '%s ' "${d%/}"; done)}
# The last built stage: its --validate checks a shape against the stages' own limits (every
# stage shares the flag parser; the last ones start fastest: 01-03 load cuBLAS first).
validator=
for run in [0-9][0-9]_*/run; do
    if [ -x "$run" ]; then validator=./$run; fi
done
# From here on no word of a variable is a glob pattern (SANITIZE_SHAPES='*' is an error, not the
# file names of the current directory).
set -f

# Every variable is checked here, before the GPU: bad input is reported as bad input anywhere.
case "$cuda_barriers$run_timeout" in
    *[!0-9]*) bad "SANITIZE_CUDA_BARRIERS and SANITIZE_TIMEOUT must be whole numbers" ;;
esac
if [ ${#run_timeout} -gt 5 ] || [ $((10#$run_timeout)) -lt 1 ] || [ $((10#$run_timeout)) -gt 86400 ]; then
    bad "SANITIZE_TIMEOUT=$run_timeout: seconds per run must be 1 to 86400"
fi
if [ ${#cuda_barriers} -gt 6 ] || [ $((10#$cuda_barriers)) -gt 65536 ]; then
    bad "SANITIZE_CUDA_BARRIERS=$cuda_barriers: must be 0 (the tool's own count) to 65536"
fi
n=0
for tool in $tools; do
    case "$tool" in
        memcheck | racecheck | synccheck | initcheck) n=$((n + 1)) ;;
        *) bad "SANITIZE_TOOLS: '$tool' is not memcheck, racecheck, synccheck or initcheck" ;;
    esac
done
[ $n -gt 0 ] || bad "SANITIZE_TOOLS names no tool (memcheck, racecheck, synccheck, initcheck)"
n=0
for shape in $shapes; do
    if ! [[ "$shape" =~ ^([1-9][0-9]*)x([1-9][0-9]*)x([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
        bad "SANITIZE_SHAPES: '$shape' is not BxHxSxD with positive integers (e.g. 1x2x77x64)"
    fi
    # the stages' own limits (common/cli.c): --validate checks the flags and exits 0 or 2 before
    # any device is looked for (no stage built: the runs will say)
    if [ -n "$validator" ] &&
       ! why=$("$validator" --validate --batch "${BASH_REMATCH[1]}" --heads "${BASH_REMATCH[2]}" \
               --seq "${BASH_REMATCH[3]}" --head-dim "${BASH_REMATCH[4]}" --trace none 2>&1) &&
       [[ "$why" == --* ]]; then
        bad "SANITIZE_SHAPES: '$shape': $why"
    fi
    n=$((n + 1))
done
[ $n -gt 0 ] || bad "SANITIZE_SHAPES names no shape (BxHxSxD, e.g. 1x2x77x64)"
n=0
for stage in $stages; do
    if ! [[ "$stage" =~ ^[0-9][0-9]_[A-Za-z0-9_]+$ ]] || [ ! -d "$stage" ]; then
        bad "SANITIZE_STAGES: '$stage' is not a stage (a NN_x directory such as 05_flash)"
    fi
    n=$((n + 1))
done
[ $n -gt 0 ] || bad "SANITIZE_STAGES names no stage (e.g. 05_flash)"
# The logs' directory: an existing one must take a new file; a missing one, its nearest existing
# parent a new directory (tried with a temporary one, removed: nothing is left behind here).
[ -n "$logs" ] || bad "SANITIZE_LOGS is empty (a directory for the logs, default build/sanitize)"
if [ -e "$logs" ]; then
    [ -d "$logs" ] || bad "SANITIZE_LOGS=$logs is not a directory"
    probe=$(mktemp -p "$logs" .sanitize-probe.XXXXXX 2>/dev/null) ||
        bad "SANITIZE_LOGS=$logs: cannot write there"
    rm -f -- "$probe"
else
    parent=$(dirname -- "$logs")
    while [ ! -e "$parent" ]; do parent=$(dirname -- "$parent"); done
    [ -d "$parent" ] || bad "SANITIZE_LOGS=$logs: $parent is not a directory"
    probe=$(mktemp -d -p "$parent" .sanitize-probe.XXXXXX 2>/dev/null) ||
        bad "SANITIZE_LOGS=$logs: cannot create it (no write access to $parent)"
    rmdir -- "$probe"
fi
san=${SANITIZER:-}
if [ -n "$san" ] && [ -e "$san" ] && { [ -d "$san" ] || [ ! -x "$san" ]; }; then
    bad "SANITIZER=$san is not an executable file (the compute-sanitizer program)"
fi

# A GPU next: without one nothing here can run, whatever else is missing (tests/need_gpu.sh says
# why: no driver, a driver too old, no GPU).
if ! no_gpu=$(bash tests/need_gpu.sh); then
    bad "$no_gpu"
fi

if [ -z "$san" ]; then
    for c in "$CUDA_HOME/bin/compute-sanitizer" "$CUDA_HOME/compute-sanitizer/compute-sanitizer" \
             "$(command -v compute-sanitizer 2>/dev/null)"; do
        if [ -n "$c" ] && [ -x "$c" ]; then san=$c; break; fi
    done
fi
if [ -z "$san" ] || [ ! -x "$san" ]; then
    bad "compute-sanitizer not found (looked in $CUDA_HOME/bin, $CUDA_HOME/compute-sanitizer, PATH); install the CUDA toolkit's compute-sanitizer or set SANITIZER=/path/to/it"
fi
[ $preflight -eq 0 ] || exit 0

# compute-sanitizer owns CUPTI in the process: ATTN_SANITIZE=1 takes the harness's profiler, its
# timing loop and the trace out of these runs (the check against the reference still runs).
export ATTN_SANITIZE=1

mkdir -p "$logs" 2>/dev/null || bad "SANITIZE_LOGS=$logs: cannot create it"
# The tool's version, under the same time limit as a run: a tool that hangs stops here (exit 2).
version=$(timeout -k 10 "$run_timeout" "$san" --version 2>/dev/null)
vrc=$?
if [ $vrc -eq 124 ] || [ $vrc -eq 137 ]; then
    bad "$san --version still running after ${run_timeout} s, killed (SANITIZE_TIMEOUT)"
fi
echo "sanitize: $(printf '%s\n' "$version" | grep -m1 -iE 'version' || echo "$san")"
failed=0 ran=0 skipped=0 hangs=0
hang_tries=3
for stage in $stages; do
    if [ ! -x "$stage/run" ]; then
        echo "FAIL $stage: ./$stage/run is not built (make $stage)"
        failed=1
        continue
    fi
    variants=-
    # 07_hopper: every rung of the ladder, one per file (07_hopper/rung<N>_*.cu)
    if [ "$stage" = 07_hopper ]; then
        variants=$(set +f; ls 07_hopper/rung[0-9]*_*.cu | sed 's/^07_hopper\/rung\([0-9]*\)_.*/\1/' | sort -n | tr '\n' ' ')
    fi
    for variant in $variants; do
    rung_args=() which=
    if [ "$variant" != - ]; then rung_args=(--rung "$variant"); which="; --rung $variant"; fi
    for shape in $shapes; do
        IFS=x read -r b h s d <<<"$shape"
        bin=./$stage/run
        # A shape (or rung) the stage refuses is skipped with the stage's own line: asked with
        # --validate first (once for every tool), since under the tool the refusal's exit 2 reads
        # 255.
        why=$("$bin" "${rung_args[@]}" --batch "$b" --heads "$h" --seq "$s" --head-dim "$d" \
              --trace none --validate 2>&1); vrc=$?
        for tool in $tools; do
            log="$logs/$stage.$tool.$shape.log"
            [ "$variant" = - ] || log="$logs/$stage.rung$variant.$tool.$shape.log"
            t0=$SECONDS
            tool_flags=$flags
            case "$tool" in
                racecheck) exclude=$race_exclude
                           tool_flags="$tool_flags --num-cuda-barriers $cuda_barriers" ;;
                synccheck) exclude=$sync_exclude
                           tool_flags="$tool_flags --num-cuda-barriers $cuda_barriers" ;;
                initcheck) exclude=$init_exclude ;;
                *) exclude= ;;
            esac
            if [ -n "$exclude" ]; then
                tool_flags="$tool_flags --kernel-name-exclude $exclude"
            fi
            if [ $vrc -eq 2 ]; then
                echo "skip $stage $tool $shape: ${why}"
                skipped=$((skipped + 1))
                continue
            elif [ $vrc -ne 0 ]; then    # not a refusal: the stage cannot even check its input
                echo "FAIL $stage $tool $shape: ./$stage/run --validate exited $vrc: ${why}"
                failed=1
                continue
            fi
            # racecheck on 07's setmaxnreg kernels: a run killed at the limit is run again, up to
            # $hang_tries times in all (the tool's intermittent hang, header); every hang is named.
            tries=1; [ "$tool:$stage" = racecheck:07_hopper ] && tries=$hang_tries
            hung=0
            while :; do
                # shellcheck disable=SC2086  # $tool_flags holds several words
                timeout -k 10 "$run_timeout" "$san" --tool "$tool" --error-exitcode 1 $tool_flags \
                    "$bin" "${rung_args[@]}" --batch "$b" --heads "$h" --seq "$s" --head-dim "$d" \
                    --warmup 0 --steps 1 --trace none --quiet >"$log" 2>&1
                rc=$?
                { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } || break
                hung=$((hung + 1))
                [ $hung -lt "$tries" ] || break
                echo "hung $stage $tool $shape: still running after ${run_timeout} s, killed; run again ($((hung + 1)) of $tries)$which"
                hangs=$((hangs + 1))
            done
            took=$((SECONDS - t0))
            hung_note=; [ $hung -eq 0 ] || hung_note="; after $hung hung run(s)"
            # the program's own last line (the sanitizer's lines start with "=========")
            msg=$(grep -v '^=========' "$log" | grep -v '^[[:space:]]*$' | tail -n 1)
            summary=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sed 's/^========= *//')
            if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
                echo "FAIL $stage $tool $shape: still running after ${run_timeout} s, killed (SANITIZE_TIMEOUT)$which: $log"
                failed=1
            elif [ $rc -eq 0 ]; then
                echo "ok   $stage $tool $shape (${took} s; ${summary:-no summary}$which$hung_note)"
                ran=$((ran + 1))
            elif [ $rc -eq 2 ] && [[ "$msg" != "no CUDA device"* ]] &&
                 ! grep -q 'ERROR SUMMARY: [1-9]' "$log"; then
                echo "skip $stage $tool $shape: $msg"
                skipped=$((skipped + 1))
            else
                echo "FAIL $stage $tool $shape (exit $rc, ${took} s; ${summary:-no summary}): $log"
                tail -n 40 "$log" | sed 's/^/    /'
                failed=1
            fi
        done
    done
    done
done
if [ $ran -eq 0 ]; then
    echo "sanitize: no stage ran under the sanitizer: nothing was checked"
    failed=1
fi
echo "sanitize: $ran runs clean, $skipped skipped (shape not supported), $hangs hung run(s) run again (racecheck on 07_hopper), $([ $failed -eq 0 ] && echo 'no failures' || echo 'FAILURES above'); logs in $logs/"
exit $failed
