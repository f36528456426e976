#!/usr/bin/env bash
# tests/tap_summary.sh: a filter for bats' TAP output (bats --tap). It copies its input to stdout
# unchanged, then ends with one line CI can read:
#
#     N passed, N failed, N skipped
#
# counted from the test lines: "ok N name" passed, "ok N name # skip ..." skipped, "not ok N
# name" failed; the input may hold several TAP streams one after another (tests/run_suites.sh:
# one per bats it ran, each with its own plan). Tests a plan ("1..N") announced but no line
# reported (bats stopped early) count as failed. Exit status: 1 if any failed, else 0; `make
# test` runs it as `bash tests/run_suites.sh | bash tests/tap_summary.sh` under pipefail, so the
# runner's own status stays the status of the run.
set -uo pipefail
awk '
    { print; fflush() }
    /^1\.\.[0-9]+$/ { plan += substr($0, 4) + 0; next }
    /^not ok [0-9]+( |$)/ { failed++; next }
    /^ok [0-9]+( |$)/ {
        if ($0 ~ / # [sS][kK][iI][pP]( |\(|$)/) skipped++; else passed++
        next
    }
    END {
        seen = passed + failed + skipped
        if (plan > seen) failed += plan - seen
        printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
        exit failed > 0 ? 1 : 0
    }
'
