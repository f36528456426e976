# tests/setup_suite.bash: Bats runs setup_suite once, before the first suite of a bats run (Bats
# 1.7+: this file beside the suites).
#
# Where a GPU can run the stages, every lean run of every suite in this bats run (tests/runs.bash)
# goes ahead of the first test, test_jobs at a time (each run checks its rows on the CPU: the
# float64 reference is most of a run's time), so that no suite's set-up waits for another's and a
# run that two suites read runs once. The suites then read the runs (stage_result); runs that need
# the GPU to themselves (the counter pass, the timeline pass, --regions, runs whose times a test
# compares) stay in the suites, after this, one at a time. Without a GPU it does nothing: the GPU
# tests skip with the stages' own reason.
setup_suite() {
    local f name cases=()
    BATS_TEST_DIRNAME=$(cd "$(dirname "$BATS_TEST_FILENAME")" && pwd)
    # shellcheck source=tests/helpers.bash
    source "$BATS_TEST_DIRNAME/helpers.bash"
    # The suites with a test to run: Bats (1.7, 1.8) lists the tests it will run, after -f and
    # the other filters, in TESTS_LIST_FILE (FILE<TAB>TEST per line) before it calls setup_suite,
    # and the suites of the run in BATS_UNIQUE_TEST_FILENAMES; without either, nothing runs here
    # and each suite's setup_file runs its own list.
    local suites=()
    if [ -n "${TESTS_LIST_FILE:-}" ] && [ -r "$TESTS_LIST_FILE" ]; then
        mapfile -t suites < <(cut -f 1 "$TESTS_LIST_FILE" | awk '!seen[$0]++')
    else
        suites=("${BATS_UNIQUE_TEST_FILENAMES[@]}")
    fi
    for f in "${suites[@]}"; do
        [ -n "$f" ] || continue
        name=$(basename "$f" .bats)
        mapfile -t -O "${#cases[@]}" cases < <(suite_runs "$name")
    done
    # a bad TEST_JOBS is each suite's own error (prerun_suite says it); the suites go on
    [ "${#cases[@]}" -gt 0 ] || return 0
    gpu_ready || return 0
    local t0=$EPOCHREALTIME
    prerun "${cases[@]}" || true
    # make test TEST_TIMING=1 (tests/run_suites.sh): the set-up's seconds, for its summary
    [ -z "${TEST_TIMING_DIR:-}" ] ||
        awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="${#cases[@]}" \
            'BEGIN { printf "%.1f s, %d runs\n", b - a, n }' > "$TEST_TIMING_DIR/setup"
}
