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
    # Bats sets BATS_UNIQUE_TEST_FILENAMES (the suites of this run) before it calls setup_suite
    for f in "${BATS_UNIQUE_TEST_FILENAMES[@]}"; do
        name=$(basename "$f" .bats)
        mapfile -t -O "${#cases[@]}" cases < <(suite_runs "$name")
    done
    # a bad TEST_JOBS is each suite's own error (prerun_suite says it); the suites go on
    [ "${#cases[@]}" -gt 0 ] || return 0
    gpu_ready || return 0
    prerun "${cases[@]}" || true
}
