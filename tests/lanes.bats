#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: make test's lanes (tests/run_suites.sh). Where a GPU can run the stages, the suites
# marked "# lane: cpu" run beside the one bats of the GPU suites, whose profiled runs must have the
# device to themselves: so a suite marked cpu must never start a CUDA context. It starts no stage
# but with --validate or --help (which stop before the device) or on a line that says why the run
# stops before the device ("# no context: WHY"), calls none of the helpers that ask for a GPU or
# run a stage (tests/helpers.bash), and has no lean runs in tests/runs.bash (tests/setup_suite.bash
# would run them in its lane). Then the lanes themselves, with a GPU present: a stand-in
# nvidia-smi that lists one (tests/need_gpu.sh trusts it) and a stand-in bats that runs nothing.
load helpers

# gpu_uses SUITE: what in the suite file SUITE would reach the GPU, one line each ("N:TEXT" for a
# line of the suite, comments left out); nothing for a suite that stays on the CPU. (Each name in
# the patterns has a letter in brackets, so that no pattern matches its own line in this file.)
gpu_uses() {
    local name; name=$(basename "$1" .bats)
    # (a test's name is not code, its one-line body is; a line may say why it starts no context,
    # "# no context: WHY": stand-in stages)
    sed -E 's/^(\s*@test\s+)"([^"\\]|\\.)*"/\1""/' "$1" |
        grep -nE '\<([r]equire_gpu|[r]equire_hopper|[g]pu_ready|[g]pu_reason|[s]tage_result|[r]un_stage[a-z_]*|[l]ean_run|[p]rerun[a-z_]*|[f]ind_tool)\>' |
        grep -vE '^[0-9]+:\s*#' |
        grep -vE -- '# [n]o context: [^ ]' || true
    # compute-sanitizer or sanitize.sh named in code (a test's name is not code), unless the line
    # says why no stage runs on the GPU there ("# no context: WHY": a stand-in sanitizer, input
    # refused before the device)
    grep -nE '[c]ompute-sanitizer|[s]anitize\.sh' "$1" |
        grep -vE '^[0-9]+:\s*(#|@test )' |
        grep -vE -- '# [n]o context: [^ ]' || true
    # a stage started: "$ROOT/STAGE/run" other than in a file test ([ -x "$ROOT/STAGE/run" ]),
    # with neither --validate nor --help, nor a "# no context: WHY"
    sed -E 's/\[ -[a-z] "[^"]*" \]//g' "$1" | grep -nE '\$\{?(ROOT|root)\}?/[^/" ]+/[r]un"' |
        grep -vE '^[0-9]+:\s*#' |
        grep -vE -- '--validate|--help|# [n]o context: [^ ]' || true
    if grep -q "^[r]uns_$name()" "$ROOT/tests/runs.bash"; then
        echo "tests/runs.bash lists lean runs for $name (tests/setup_suite.bash would run them in its lane)"
    fi
}

# lanes LANE: the suites run_suites.sh puts in LANE (cpu or gpu), one name per line.
lanes() {
    bash "$ROOT/tests/run_suites.sh" --list | awk -v l="$1" '$1 == l { print $2 }'
}

@test "lanes: the suites marked cpu start no stage, ask for no GPU and have no lean runs" {
    local name uses bad=0
    [ -n "$(lanes cpu)" ]
    [ -n "$(lanes gpu)" ]
    for name in $(lanes cpu); do
        uses=$(gpu_uses "$ROOT/tests/$name.bats")
        echo "$name: ${uses:-nothing on the GPU}"
        [ -z "$uses" ] || bad=$((bad + 1))
    done
    [ "$bad" -eq 0 ]
}

@test "lanes: the check above finds what reaches the GPU (controls)" {
    # GPU suites: the helpers, stage runs, lean runs
    run gpu_uses "$ROOT/tests/05_flash.bats"
    [ "${#lines[@]}" -ge 10 ]
    [ "${lines[-1]}" = "tests/runs.bash lists lean runs for 05_flash (tests/setup_suite.bash would run them in its lane)" ]
    run gpu_uses "$ROOT/tests/regions.bats"
    [ "${#lines[@]}" -ge 1 ]
    # suites marked cpu, changed: a stage run that loses its --validate (peers), the runs that lose
    # their reason (regions_cpu, sanitize_cpu), a test that reads a GPU suite's run (chapters)
    sed 's/ --validate / /' "$ROOT/tests/peers.bats" > "$BATS_TEST_TMPDIR/peers.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/peers.bats"
    echo "$output"
    [ "${#lines[@]}" -eq 1 ]
    grep -q '/$stage/[r]un" --batch ' <<< "${lines[0]}"
    sed 's/ *# no context: .*//' "$ROOT/tests/regions_cpu.bats" > "$BATS_TEST_TMPDIR/regions_cpu.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/regions_cpu.bats"
    echo "$output"
    [ "${#lines[@]}" -eq "$(grep -c '# no context: ' "$ROOT/tests/regions_cpu.bats")" ]
    [ "${#lines[@]}" -ge 1 ]
    # the sanitizer's lines without their reasons (sanitize_cpu): each one found again
    sed 's/ *# no context: .*//' "$ROOT/tests/sanitize_cpu.bats" > "$BATS_TEST_TMPDIR/sanitize_cpu.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/sanitize_cpu.bats"
    [ "${#lines[@]}" -eq "$(grep -c '# no context: ' "$ROOT/tests/sanitize_cpu.bats")" ]
    [ "${#lines[@]}" -ge 10 ]
    # the stand-in prerun of cases without its reasons: its helper lines found again
    sed 's/ *# no context: .*//' "$ROOT/tests/cases.bats" > "$BATS_TEST_TMPDIR/cases.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/cases.bats"
    echo "$output"
    [ "$(printf '%s\n' "$output" | grep -cE '[p]rerun |[g]pu_ready\(\)')" -eq 6 ]
    # a one-line test's body is code (its name is not)
    printf '@test "x" { %s 05_flash --seq 7; }\n@test "a [p]rerun in a name" { true; }\n' '[s]tage_result' | tr -d '[]' > "$BATS_TEST_TMPDIR/one.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/one.bats"
    echo "$output"
    [ "${#lines[@]}" -eq 1 ]
    [ "${lines[0]}" = "$(printf '1:@test "" { %s 05_flash --seq 7; }' '[s]tage_result' | tr -d '[]')" ]
    { cat "$ROOT/tests/chapters.bats"; grep -m 1 '^ *[s]tage_result ' "$ROOT/tests/05_flash.bats"; } > "$BATS_TEST_TMPDIR/chapters.bats"
    run gpu_uses "$BATS_TEST_TMPDIR/chapters.bats"
    echo "$output"
    [ "${#lines[@]}" -eq 1 ]
}

@test "lanes: every lane mark is one run_suites.sh reads: '# lane: cpu' among a suite's first 10 lines" {
    local f bad=0
    for f in "$ROOT"/tests/*.bats; do
        if [ "$(grep -c '^# *lane *:' "$f")" -ne "$(head -n 10 "$f" | grep -cE '^# lane: cpu( |$)')" ]; then
            echo "$(basename "$f"): a lane mark run_suites.sh does not read: $(grep -n '^# *lane *:' "$f" | tr '\n' ' ')"
            bad=$((bad + 1))
        fi
    done
    [ "$bad" -eq 0 ]
}

# with_gpu TEST_JOBS [FAIL [TEST_TIMING]]: tests/run_suites.sh (TEST_TIMING 0 unless given) where a (stand-in) GPU is present, with a stand-in
# bats that runs nothing: each call logs its suites on one line of $BATS_TEST_TMPDIR/calls and
# prints one passing test named after them; it fails when one of them is tests/FAIL.bats. Sets
# $status, $output and $lines (Bats' run).
with_gpu() {
    local bin="$BATS_TEST_TMPDIR/bin"
    mkdir -p "$bin"
    printf '#!/bin/sh\necho "GPU 0: NVIDIA Stand-in (UUID: GPU-0)"\n' > "$bin/nvidia-smi"
    cat > "$bin/bats" <<'EOF'
#!/bin/sh
shift   # --tap
echo "$*" >> "$CALLS"
# with SETUP_TIMES=1, what tests/setup_suite.bash leaves in TEST_TIMING_DIR when it is set
if [ "${SETUP_TIMES:-0}" = 1 ] && [ -n "${TEST_TIMING_DIR:-}" ]; then
    echo "2.5 s, 3 runs" > "$TEST_TIMING_DIR/setup"
    printf '%s\n' "1.0 s 05_flash.0 (2 runs)" "2.0 s 07_hopper.0 (1 runs)" >> "$TEST_TIMING_DIR/setup.lists"
fi
printf '1..1\nok 1 %s\n' "$*"
case " $* " in *" tests/$FAIL.bats "*) exit 1 ;; esac
EOF
    chmod +x "$bin/nvidia-smi" "$bin/bats"
    rm -f "$BATS_TEST_TMPDIR/calls"
    run env PATH="$bin:$PATH" CALLS="$BATS_TEST_TMPDIR/calls" TEST_JOBS="$1" FAIL="${2:-none}" \
        TEST_TIMING="${3:-0}" bash "$ROOT/tests/run_suites.sh"
}

@test "run_suites: with a GPU, one bats for the GPU suites in order, its TAP first; each cpu suite its own bats, TAP in the suites' order" {
    local gpu cpu
    gpu=$(lanes gpu | sed 's|^|tests/|; s|$|.bats|' | tr '\n' ' ')
    gpu=${gpu% }
    cpu=$(lanes cpu | sed 's|^|tests/|; s|$|.bats|')
    with_gpu 3
    [ "$status" -eq 0 ]
    # the calls: the GPU suites in one, in the suites' order; each cpu suite alone, once
    [ "$(grep -cxF "$gpu" "$BATS_TEST_TMPDIR/calls")" -eq 1 ]
    [ "$(grep -vxF "$gpu" "$BATS_TEST_TMPDIR/calls" | sort)" = "$(sort <<< "$cpu")" ]
    # the TAP: the GPU lane's, then the cpu suites' in the suites' order
    [ "${lines[1]}" = "ok 1 $gpu" ]
    [ "$(printf '%s\n' "${lines[@]:2}" | sed -n 's/^ok 1 //p')" = "$cpu" ]
    [ "$(printf '%s\n' "$output" | grep -c '^1\.\.1$')" -eq $((1 + $(grep -c . <<< "$cpu"))) ]
}

@test "run_suites: with a GPU and TEST_JOBS=1 the GPU lane runs first, then the cpu suites, largest first" {
    local gpu
    gpu=$(lanes gpu | sed 's|^|tests/|; s|$|.bats|' | tr '\n' ' ')
    with_gpu 1
    [ "$status" -eq 0 ]
    [ "$(head -n 1 "$BATS_TEST_TMPDIR/calls")" = "${gpu% }" ]
    [ "$(tail -n +2 "$BATS_TEST_TMPDIR/calls")" = "$(cd "$ROOT" && ls -S $(lanes cpu | sed 's|^|tests/|; s|$|.bats|'))" ]
}

@test "run_suites: with a GPU, status 1 when a suite of either lane fails" {
    with_gpu 3 "$(lanes cpu | head -n 1)"
    [ "$status" -eq 1 ]
    with_gpu 3 "$(lanes gpu | tail -n 1)"
    [ "$status" -eq 1 ]
    with_gpu 2 none
    [ "$status" -eq 0 ]
}

@test "run_suites: TEST_TIMING=1 gives each bats -T and, on stderr, each lane's seconds; other values exit 2" {
    with_gpu 3 none 1
    [ "$status" -eq 0 ]
    # every bats call with -T first
    [ "$(grep -vc '^-T tests/' "$BATS_TEST_TMPDIR/calls")" -eq 0 ]
    run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" CALLS="$BATS_TEST_TMPDIR/calls" \
        TEST_JOBS=3 TEST_TIMING=1 bash "$ROOT/tests/run_suites.sh"
    [ "$status" -eq 0 ]
    [[ "${stderr_lines[0]}" =~ ^time:\ GPU\ lane\ [0-9]+\.[0-9]\ s\ \([0-9]+\ suites\)$ ]]
    [ "${#stderr_lines[@]}" -eq $((2 + $(lanes cpu | grep -c .))) ]
    [[ "${stderr_lines[-1]}" =~ ^time:\ all\ [0-9]+\.[0-9]\ s$ ]]
    [ "$(printf '%s\n' "${stderr_lines[@]:1:${#stderr_lines[@]}-2}" | grep -cE '^time: [a-z0-9_]+ [0-9]+\.[0-9] s$')" -eq "$(lanes cpu | grep -c .)" ]
    run --separate-stderr env TEST_TIMING=yes bash "$ROOT/tests/run_suites.sh"
    [ "$status" -eq 2 ]
    [ "$stderr" = "TEST_TIMING=yes: expected 0 or 1" ]
}

@test "run_suites: TEST_TIMING=1 with a GPU: the set-up's seconds after the GPU lane's, its lists longest first; the GPU lane alone gets TEST_TIMING_DIR" {
    with_gpu 3 none 1
    run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" CALLS="$BATS_TEST_TMPDIR/calls" \
        TEST_JOBS=3 TEST_TIMING=1 SETUP_TIMES=1 bash "$ROOT/tests/run_suites.sh"
    printf '%s\n' "${stderr_lines[@]}"
    [ "$status" -eq 0 ]
    [[ "${stderr_lines[0]}" =~ ^time:\ GPU\ lane\ [0-9]+\.[0-9]\ s ]]
    [ "${stderr_lines[1]}" = "time: GPU lane set-up 2.5 s, 3 runs" ]
    [ "${stderr_lines[2]}" = "time:   list 2.0 s 07_hopper.0 (1 runs)" ]
    [ "${stderr_lines[3]}" = "time:   list 1.0 s 05_flash.0 (2 runs)" ]
    [ "$(printf '%s\n' "${stderr_lines[@]}" | grep -c '^time:   list ')" -eq 2 ]
    # without TEST_TIMING: no set-up lines, nothing on stderr
    run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$PATH" CALLS="$BATS_TEST_TMPDIR/calls" \
        TEST_JOBS=3 TEST_TIMING=0 SETUP_TIMES=1 bash "$ROOT/tests/run_suites.sh"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
}

@test "run_suites: an unknown argument, or a second one: one line on stderr, exit 2, nothing run" {
    run --separate-stderr bash "$ROOT/tests/run_suites.sh" --bogus
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "run_suites.sh: unknown argument '--bogus' (--list: each suite's lane; --check: the settings)" ]
    run --separate-stderr bash "$ROOT/tests/run_suites.sh" --list extra
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "run_suites.sh: one argument at most (--list: each suite's lane; --check: the settings)" ]
}
