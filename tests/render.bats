#!/usr/bin/env bats
# CPU-only: bench/render.py renders every number table of the course (README.md, the chapters,
# docs/*.md) from docs/h200/results.txt; --check fails when a rendered table differs from it.
load helpers

# copy_course DIR: the Markdown pages and the results file, as render.py finds them under a root.
copy_course() {
    mkdir -p "$1/docs/h200"
    cp "$ROOT/README.md" "$1/"
    for d in "$ROOT"/[0-9][0-9]_*/; do
        mkdir -p "$1/$(basename "$d")"
        cp "$d/README.md" "$1/$(basename "$d")/"
    done
    cp "$ROOT"/docs/*.md "$1/docs/"
    cp "$ROOT/docs/h200/results.txt" "$1/docs/h200/"
}

@test "render --check: every table of the course agrees with docs/h200/results.txt" {
    run python3 "$ROOT/bench/render.py" --check
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *" 0 differ from docs/h200/results.txt" ]]
}

@test "render: the course table, the peers table and the run line are rendered in docs/results.md" {
    [ "$(grep -c '^<!-- results:compare 8x16x1024x64 -->$' "$ROOT/docs/results.md")" -eq 1 ]
    [ "$(grep -c '^<!-- results:peers -->$' "$ROOT/docs/results.md")" -eq 1 ]
    [ "$(grep -c '^<!-- results:run -->$' "$ROOT/docs/results.md")" -eq 1 ]
    [ "$(grep -c '^| 07_hopper | SDPA cuDNN | ' "$ROOT/docs/results.md")" -eq 1 ]
    [ "$(grep -c '^| 07_hopper | 1 | ' "$ROOT/docs/results.md")" -eq 1 ]
}

@test "render --check: a number changed in the results file names each table and value that differs" {
    copy_course "$BATS_TEST_TMPDIR/c"
    sed -i 's/^\(result stage=05_flash shape=8x16x1024x64 .*\)gpu_us=[0-9.]*/\1gpu_us=12.3/' \
        "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    grep -q '^result stage=05_flash .* gpu_us=12.3 ' "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    run python3 "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^render: differs: docs/results.md:[0-9]*: results:compare 8x16x1024x64$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^render: differs: 05_flash/README.md:[0-9]*: results:value 05_flash 8x16x1024x64 gpu_us$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^render: differs: ' <<< "$output")" -eq 2 ]
    [[ "${lines[-1]}" == *" 2 differ from docs/h200/results.txt" ]]
}

@test "render: rewriting puts the results file's numbers in the pages; --check then passes" {
    copy_course "$BATS_TEST_TMPDIR/c"
    sed -i 's/^\(result stage=05_flash shape=8x16x1024x64 .*\)gpu_us=[0-9.]*/\1gpu_us=12.3/' \
        "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    run python3 "$ROOT/bench/render.py" --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^| 05_flash | 1 | 12.3 | ' "$BATS_TEST_TMPDIR/c/docs/results.md")" -eq 1 ]
    grep -q 'gpu_us -->12.3<!-- end -->' "$BATS_TEST_TMPDIR/c/05_flash/README.md"
    run python3 "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    [ "$status" -eq 0 ]
}

@test "render: a table edited by hand is named by --check" {
    copy_course "$BATS_TEST_TMPDIR/c"
    sed -i 's/^| 01_naive | naive module | 706.9 /| 01_naive | naive module | 700.0 /' "$BATS_TEST_TMPDIR/c/docs/results.md"
    grep -q '^| 01_naive | naive module | 700.0 ' "$BATS_TEST_TMPDIR/c/docs/results.md"
    run python3 "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^render: differs: docs/results.md:[0-9]*: results:peers$' <<< "$output")" -eq 1 ]
}

@test "render: a marker naming a stage the results file lacks: one line, exit 2, nothing rewritten" {
    copy_course "$BATS_TEST_TMPDIR/c"
    printf '%s\n' '<!-- results:value 09_none 8x16x1024x64 gpu_us -->1<!-- end -->' >> "$BATS_TEST_TMPDIR/c/docs/results.md"
    cp "$BATS_TEST_TMPDIR/c/docs/results.md" "$BATS_TEST_TMPDIR/before.md"
    run python3 "$ROOT/bench/render.py" --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "render: docs/results.md: <!-- results:value 09_none 8x16x1024x64 gpu_us -->: no result line for 09_none at 8x16x1024x64" ]]
    cmp "$BATS_TEST_TMPDIR/before.md" "$BATS_TEST_TMPDIR/c/docs/results.md"
}

@test "render collect: a reference run's outputs become result and peers lines" {
    d="$BATS_TEST_TMPDIR/run"
    mkdir -p "$d/shapes"
    echo 'run date=2027-01-02 gpu="NVIDIA H200" driver=1 cuda=13.0' > "$d/run.txt"
    printf 'table\nresult stage=05_flash shape=8x16x1024x64 kernels_per_step=1 gpu_us=70.1 check=PASS\n' > "$d/shapes/05_flash_8x16x1024x64.txt"
    printf '## 8x16x1024x64\n\n| stage | peer | ours µs | peer µs | ours/peer | our TFLOP/s | peer TFLOP/s | our host µs | peer host µs |\n|:---|:---|---:|\n| 05_flash | SDPA flash | 70.1 | 95.0 | 0.74 | 245.1 | 180.8 | 3.9 | 20.1 |\n' > "$d/peers.md"
    run python3 "$ROOT/bench/render.py" collect "$d"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^run date=2027-01-02 gpu="NVIDIA H200" driver=1 cuda=13.0$' "$d/results.txt")" -eq 1 ]
    [ "$(grep -c '^result stage=05_flash shape=8x16x1024x64 kernels_per_step=1 gpu_us=70.1 check=PASS$' "$d/results.txt")" -eq 1 ]
    [ "$(grep -c "^peers shape=8x16x1024x64 stage=05_flash peer='SDPA flash' ours_us=70.1 peer_us=95.0 ratio=0.74 ours_cpu_us=3.9 peer_cpu_us=20.1$" "$d/results.txt")" -eq 1 ]
}

@test "reference_runs.sh: a part it does not know, or two OUTDIRs: one line, exit 2, before any run" {
    run bash "$ROOT/bench/reference_runs.sh" --part tables
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "reference_runs: --part 'tables': expected all, stages, shapes, peers or collect" ]
    run bash "$ROOT/bench/reference_runs.sh" --part collect "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [ ! -e "$BATS_TEST_TMPDIR/a" ]
}
