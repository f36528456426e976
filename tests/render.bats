#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: bench/render.py renders every number table of the course (README.md, the chapters,
# docs/*.md) from docs/h200/results.txt; --check fails when a rendered table differs from it.
bats_require_minimum_version 1.8.0
load helpers

# copy_course DIR: the Markdown pages and the results file, as render.py finds them under a root.
# (One cp: --parents keeps each file's path under DIR.)
copy_course() {
    mkdir -p "$1"
    (cd "$ROOT" && cp --parents README.md [0-9][0-9]_*/README.md docs/*.md docs/h200/results.txt "$1/")
}

@test "render --check: every table of the course agrees with docs/h200/results.txt" {
    run py_stdlib "$ROOT/bench/render.py" --check
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
    sed -i 's/^\(result run=stages stage=05_flash shape=8x16x1024x64 .*\)gpu_us=[0-9.]*/\1gpu_us=12.3/' \
        "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    grep -q '^result run=stages stage=05_flash .* gpu_us=12.3 ' "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    run py_stdlib "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^render: differs: docs/results.md:[0-9]*: results:compare 8x16x1024x64$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^render: differs: docs/perf-notes.md:[0-9]*: results:compare 8x16x1024x64$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^render: differs: 05_flash/README.md:[0-9]*: results:value 05_flash 8x16x1024x64 gpu_us$' <<< "$output")" -eq 2 ]
    [ "$(grep -c '^render: differs: ' <<< "$output")" -eq 4 ]
    [[ "${lines[-1]}" == *" 4 differ from docs/h200/results.txt" ]]
}

@test "render: rewriting puts the results file's numbers in the pages; --check then passes" {
    copy_course "$BATS_TEST_TMPDIR/c"
    sed -i 's/^\(result run=stages stage=05_flash shape=8x16x1024x64 .*\)gpu_us=[0-9.]*/\1gpu_us=12.3/' \
        "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    run py_stdlib "$ROOT/bench/render.py" --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^| 05_flash | 1 | 12.3 | ' "$BATS_TEST_TMPDIR/c/docs/results.md")" -eq 1 ]
    grep -q 'gpu_us -->12.3<!-- end -->' "$BATS_TEST_TMPDIR/c/05_flash/README.md"
    run py_stdlib "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    [ "$status" -eq 0 ]
}

@test "render: a table edited by hand is named by --check" {
    copy_course "$BATS_TEST_TMPDIR/c"
    local ours; ours=$(sed -n 's/^peers run=peers shape=8x16x1024x64 stage=01_naive .*ours_us=\([0-9.]*\) .*/\1/p' "$ROOT/docs/h200/results.txt")
    [ -n "$ours" ]
    [ "$ours" != 700.0 ]
    sed -i "s/^| 01_naive | naive module | $ours /| 01_naive | naive module | 700.0 /" "$BATS_TEST_TMPDIR/c/docs/results.md"
    grep -q '^| 01_naive | naive module | 700.0 ' "$BATS_TEST_TMPDIR/c/docs/results.md"
    run py_stdlib "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^render: differs: docs/results.md:[0-9]*: results:peers$' <<< "$output")" -eq 1 ]
}

@test "render: a marker naming a stage the results file lacks: one line, exit 2, nothing rewritten" {
    copy_course "$BATS_TEST_TMPDIR/c"
    printf '%s\n' '<!-- results:value 09_none 8x16x1024x64 gpu_us -->1<!-- end -->' >> "$BATS_TEST_TMPDIR/c/docs/results.md"
    cp "$BATS_TEST_TMPDIR/c/docs/results.md" "$BATS_TEST_TMPDIR/before.md"
    run py_stdlib "$ROOT/bench/render.py" --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "render: docs/results.md: <!-- results:value 09_none 8x16x1024x64 gpu_us -->: no result line for 09_none at 8x16x1024x64" ]]
    cmp "$BATS_TEST_TMPDIR/before.md" "$BATS_TEST_TMPDIR/c/docs/results.md"
}

@test "render: the result lines at 8x16x1024x64 are the summary lines docs/h200/NN_x.txt end with, run=stages" {
    [ "$(grep -c '^result run=stages stage=[0-9][0-9]_[a-z]* shape=8x16x1024x64 ' "$ROOT/docs/h200/results.txt")" -eq 7 ]
    [ "$(grep -c '^result ' "$ROOT/docs/h200/results.txt")" -eq 7 ]
    for out in "$ROOT"/docs/h200/0[1-7]_[a-z]*.txt; do
        case "$out" in *_rung*) continue ;; esac
        want=$(grep '^result ' "$out" | tail -n 1)
        echo "$out: $want"
        [ "$(grep -cxF "result run=stages ${want#result }" "$ROOT/docs/h200/results.txt")" -eq 1 ]
    done
    [ "$(grep -c '^peers run=peers shape=' "$ROOT/docs/h200/results.txt")" -eq 21 ]
    [ "$(grep -c '^peers ' "$ROOT/docs/h200/results.txt")" -eq 21 ]
}

# peers_run KEY: the value of KEY (commit, date) on the peers run's line of docs/h200/results.txt.
peers_run() {
    sed -n "s/^run id=peers .*\\<$1=\\([^ ]*\\).*/\\1/p" "$ROOT/docs/h200/results.txt"
}

@test "render: results:run gives one paragraph per run, each naming what it measured and its commit" {
    local commit date; commit=$(peers_run commit); date=$(peers_run date)
    [ -n "$commit" ]
    [[ "$date" =~ ^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]$ ]]
    run sed -n '/^<!-- results:run -->$/,/^<!-- end -->$/p' "$ROOT/docs/results.md"
    echo "$output"
    [ "${#lines[@]}" -eq 4 ]
    [ "$(grep -c '^$' <<< "$output")" -eq 1 ]
    [[ "${lines[1]}" == "The stages' summary lines at 8×16×1024×64 (the course table and the values quoted in the pages): measured on 2026-12-01 on one NVIDIA H200 (driver 580.159.04, CUDA 13.0, the system's cuDNN 9.14.0), code at commit bab905d, by \`bench/reference_runs.sh --part stages\`." ]]
    [[ "${lines[2]}" == "Ours beside PyTorch at 8×16×1024×64, 4×16×2048×64 and 2×16×4096×128 (the peers table): measured on $date on one NVIDIA H200 "*"; PyTorch 2.11 with its cuDNN 9.19 for the peers, and for 06_cudnn beside them), code at commit $commit. These numbers were rebuilt from that run's printed tables (docs/h200/results.txt says how)." ]]
}

@test "render: results:run ID renders that run alone; an unknown ID: one line, exit 2" {
    local commit; commit=$(peers_run commit)
    [ -n "$commit" ]
    copy_course "$BATS_TEST_TMPDIR/c"
    printf '%s\n' '<!-- results:run peers -->' 'x' '<!-- end -->' >> "$BATS_TEST_TMPDIR/c/docs/results.md"
    run py_stdlib "$ROOT/bench/render.py" --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(tail -n 2 "$BATS_TEST_TMPDIR/c/docs/results.md" | grep -c "^Ours beside PyTorch at .* code at commit $commit\\. ")" -eq 1 ]
    [ "$(grep -c '^The stages' "$BATS_TEST_TMPDIR/c/docs/results.md")" -eq 1 ]
    printf '%s\n' '<!-- results:run nosuch -->' 'x' '<!-- end -->' >> "$BATS_TEST_TMPDIR/c/docs/results.md"
    run py_stdlib "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "render: docs/results.md: <!-- results:run nosuch -->: no run line with id=nosuch" ]]
}

# bad_results SED: the course's results file edited by SED, then render --check on it: the run.
bad_results() {
    copy_course "$BATS_TEST_TMPDIR/c"
    sed -i "$1" "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    ! cmp -s "$ROOT/docs/h200/results.txt" "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    run py_stdlib "$ROOT/bench/render.py" --check --root "$BATS_TEST_TMPDIR/c"
    echo "$output"
}

@test "render: a line naming a run the file lacks: one line, exit 2" {
    bad_results 's/^\(result \)run=stages \(stage=05_flash \)/\1run=stagez \2/'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ run=stagez:\ no\ run\ line\ has\ that\ id$ ]]
}

@test "render: with two run lines, a line without run=: one line, exit 2" {
    bad_results 's/^\(peers \)run=peers \(shape=4x16x2048x64 stage=05_flash \)/\1\2/'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ with\ more\ than\ one\ run\ line,\ a\ peers\ line\ needs\ run=ID$ ]]
}

@test "render: two run lines with one id, or one without an id: one line, exit 2" {
    bad_results 's/^run id=peers /run id=stages /'
    [ "$status" -eq 2 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ a\ second\ run\ line\ with\ id=\'stages\'\ \(line\ [0-9]+\ has\ it\)$ ]]
    bad_results 's/^run id=peers /run /'
    [ "$status" -eq 2 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ with\ more\ than\ one\ run\ line,\ each\ needs\ id=$ ]]
}

@test "render: a run line that no line names: one line, exit 2" {
    bad_results 's/^\(run id=peers .*\)$/\1\nrun id=spare date=2026-12-02/'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ run\ id=spare:\ no\ result\ or\ peers\ line\ names\ it$ ]]
}

@test "render: a second result line for the same stage and shape: one line, exit 2" {
    bad_results '/^result run=stages stage=07_hopper /p'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ a\ second\ result\ line\ for\ 07_hopper\ at\ 8x16x1024x64\ \(line\ [0-9]+\ has\ one\)$ ]]
}

@test "render collect: a reference run's outputs become result and peers lines" {
    d="$BATS_TEST_TMPDIR/run"
    mkdir -p "$d/shapes"
    echo 'run date=2027-01-02 gpu="NVIDIA H200" driver=1 cuda=13.0' > "$d/run.txt"
    printf 'table\nresult stage=05_flash shape=8x16x1024x64 kernels_per_step=1 gpu_us=70.1 check=PASS\n' > "$d/shapes/05_flash_8x16x1024x64.txt"
    printf '## 8x16x1024x64\n\n| stage | peer | ours µs | peer µs | ours/peer | our TFLOP/s | peer TFLOP/s | our host µs | peer host µs |\n|:---|:---|---:|\n| 05_flash | SDPA flash | 70.1 | 95.0 | 0.74 | 245.1 | 180.8 | 3.9 | 20.1 |\n' > "$d/peers.md"
    run py_stdlib "$ROOT/bench/render.py" collect "$d"
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

# render_bad ARGS...: bench/render.py ARGS, stdout in $output, stderr in $stderr.
render_bad() {
    run --separate-stderr py_stdlib "$ROOT/bench/render.py" "$@"
    echo "$stderr"
}

@test "render: argparse errors are one line (not usage + error), exit 2" {
    render_bad --bogus
    [ "$status" -eq 2 ]
    [ "$stderr" = "render: unrecognized arguments: --bogus (bench/render.py --help)" ]
    render_bad --results
    [ "$status" -eq 2 ]
    [ "$stderr" = "render: argument --results: expected one argument (bench/render.py --help)" ]
}

@test "render: a result line whose shape is not BxHxSxD, a peers line without its numbers: one line, exit 2" {
    bad_results 's/^\(result run=stages stage=05_flash \)shape=8x16x1024x64 /\1shape=8x16 /'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ shape=8x16\ is\ not\ BxHxSxD\ with\ positive\ integers$ ]]
    bad_results 's/^\(peers run=peers shape=8x16x1024x64 stage=05_flash .*\) ratio=[0-9.]*/\1/'
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ a\ peers\ line\ needs\ ratio=$ ]]
}

@test "render: a page that is not UTF-8, a marker that names no kind: one line, exit 2, nothing rewritten" {
    copy_course "$BATS_TEST_TMPDIR/c"
    # a changed number: the pages before the bad one (docs/results.md) would be rewritten
    sed -i 's/^\(result run=stages stage=05_flash shape=8x16x1024x64 .*\)gpu_us=[0-9.]*/\1gpu_us=12.3/' \
        "$BATS_TEST_TMPDIR/c/docs/h200/results.txt"
    printf '\377\376' > "$BATS_TEST_TMPDIR/c/docs/zz.md"
    render_bad --root "$BATS_TEST_TMPDIR/c"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "render: cannot read $BATS_TEST_TMPDIR/c/docs/zz.md: not a UTF-8 text file" ]
    cmp "$ROOT/docs/results.md" "$BATS_TEST_TMPDIR/c/docs/results.md"
    printf '%s\n' 'x <!-- results: --><!-- end -->' > "$BATS_TEST_TMPDIR/c/docs/zz.md"
    render_bad --root "$BATS_TEST_TMPDIR/c"
    [ "$status" -eq 2 ]
    [ "$stderr" = "render: docs/zz.md: <!-- results: -->: a marker names no kind (compare, peers, run, value, peer)" ]
    cmp "$ROOT/docs/results.md" "$BATS_TEST_TMPDIR/c/docs/results.md"
}

@test "render collect: a run.txt that is not UTF-8, a results.txt that cannot be written: one line, exit 2" {
    d="$BATS_TEST_TMPDIR/run"
    mkdir -p "$d/shapes"
    printf '\377\n' > "$d/run.txt"
    printf 'result stage=05_flash shape=8x16x1024x64 gpu_us=70.1 check=PASS\n' > "$d/shapes/05_flash_8x16x1024x64.txt"
    printf '## 8x16x1024x64\n' > "$d/peers.md"
    render_bad collect "$d"
    [ "$status" -eq 2 ]
    [ "$stderr" = "render: cannot read $d/run.txt: not a UTF-8 text file" ]
    echo 'run date=2027-01-02' > "$d/run.txt"
    mkdir "$d/results.txt"
    render_bad collect "$d"
    [ "$status" -eq 2 ]
    [ "$stderr" = "render: cannot write $d/results.txt: Is a directory" ]
}

# collect_run DIR: the inputs of bench/render.py collect (a run line, one stage output, peers.md).
collect_run() {
    mkdir -p "$1/shapes"
    echo 'run date=2027-01-02 gpu="NVIDIA H200" driver=1 cuda=13.0' > "$1/run.txt"
    printf 'result stage=05_flash shape=8x16x1024x64 gpu_us=70.1 check=PASS\n' > "$1/shapes/05_flash_8x16x1024x64.txt"
    printf '## 8x16x1024x64\n' > "$1/peers.md"
}

@test "reference_runs.sh: a relative OUTDIR is the caller's, not the repository's" {
    local name=reference_runs_relative_outdir
    mkdir -p "$BATS_TEST_TMPDIR/caller"
    collect_run "$BATS_TEST_TMPDIR/caller/$name"
    cd "$BATS_TEST_TMPDIR/caller"
    run bash "$ROOT/bench/reference_runs.sh" --part collect "$name"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^result stage=05_flash shape=8x16x1024x64 gpu_us=70.1 check=PASS$' "$BATS_TEST_TMPDIR/caller/$name/results.txt")" -eq 1 ]
    [ ! -e "$ROOT/$name" ]
}

# install_tree DIR: what bench/reference_runs.sh --install needs of a repository (the script,
# bench/render.py and its benchlib.py, one page with a marker), with an earlier run in docs/h200/.
install_tree() {
    mkdir -p "$1/bench" "$1/docs/h200"
    cp "$ROOT/bench/reference_runs.sh" "$ROOT/bench/render.py" "$ROOT/bench/benchlib.py" "$1/bench/"
    printf '%s\n' '05 takes <!-- results:value 05_flash 8x16x1024x64 gpu_us -->1.0<!-- end --> us.' > "$1/README.md"
    echo old > "$1/docs/h200/05_flash.txt"
    echo old > "$1/docs/h200/05_flash.err"
    echo old > "$1/docs/h200/07_hopper_rung5.txt"
    echo old > "$1/docs/h200/07_hopper_rung5.json"
}

@test "reference_runs.sh --install: a relative OUTDIR from the caller; the earlier run's .err and rungs go" {
    install_tree "$BATS_TEST_TMPDIR/repo"
    mkdir -p "$BATS_TEST_TMPDIR/caller/run"
    printf 'run date=2027-01-02 gpu="NVIDIA H200"\nresult stage=05_flash shape=8x16x1024x64 gpu_us=70.1 check=PASS\n' \
        > "$BATS_TEST_TMPDIR/caller/run/results.txt"
    echo new > "$BATS_TEST_TMPDIR/caller/run/05_flash.txt"
    echo '{}' > "$BATS_TEST_TMPDIR/caller/run/05_flash.json"
    cd "$BATS_TEST_TMPDIR/caller"
    run bash "$BATS_TEST_TMPDIR/repo/bench/reference_runs.sh" --install run
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(cat "$BATS_TEST_TMPDIR/repo/docs/h200/05_flash.txt")" = new ]
    [ -s "$BATS_TEST_TMPDIR/repo/docs/h200/05_flash.json" ]
    cmp "$BATS_TEST_TMPDIR/caller/run/results.txt" "$BATS_TEST_TMPDIR/repo/docs/h200/results.txt"
    [ ! -e "$BATS_TEST_TMPDIR/repo/docs/h200/05_flash.err" ]
    [ ! -e "$BATS_TEST_TMPDIR/repo/docs/h200/07_hopper_rung5.txt" ]
    [ ! -e "$BATS_TEST_TMPDIR/repo/docs/h200/07_hopper_rung5.json" ]
    grep -qxF '05 takes <!-- results:value 05_flash 8x16x1024x64 gpu_us -->70.1<!-- end --> us.' "$BATS_TEST_TMPDIR/repo/README.md"
}

@test "reference_runs.sh --install: a stderr file of this run is installed with it" {
    install_tree "$BATS_TEST_TMPDIR/repo"
    d="$BATS_TEST_TMPDIR/run"
    mkdir -p "$d"
    printf 'run date=2027-01-02\nresult stage=05_flash shape=8x16x1024x64 gpu_us=70.1 check=PASS\n' > "$d/results.txt"
    echo new > "$d/05_flash.txt"
    echo '{}' > "$d/05_flash.json"
    echo 'note: new' > "$d/05_flash.err"
    run bash "$BATS_TEST_TMPDIR/repo/bench/reference_runs.sh" --install "$d"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(cat "$BATS_TEST_TMPDIR/repo/docs/h200/05_flash.err")" = "note: new" ]
}

@test "reference_runs.sh --install without an OUTDIR, or one without results.txt: one line, exit 2" {
    install_tree "$BATS_TEST_TMPDIR/repo"
    run bash "$BATS_TEST_TMPDIR/repo/bench/reference_runs.sh" --install
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "reference_runs: usage: bash bench/reference_runs.sh --install OUTDIR" ]
    cd "$BATS_TEST_TMPDIR"
    run bash "$BATS_TEST_TMPDIR/repo/bench/reference_runs.sh" --install nothing
    [ "$status" -eq 2 ]
    [ "$output" = "reference_runs: nothing/results.txt is missing (run the parts first)" ]
    [ "$(cat "$BATS_TEST_TMPDIR/repo/docs/h200/05_flash.err")" = old ]
}

@test "perf-notes: the current numbers are the rendered run, course and peers tables; every other entry is dated" {
    f="$ROOT/docs/perf-notes.md"
    [ "$(grep -c '^<!-- results:run -->$' "$f")" -eq 1 ]
    [ "$(grep -c '^<!-- results:compare 8x16x1024x64 -->$' "$f")" -eq 1 ]
    [ "$(grep -c '^<!-- results:peers -->$' "$f")" -eq 1 ]
    # every ## heading after "Current numbers" names its date, or is a topic whose ### entries do
    undated=$(awk '/^## Current numbers$/ { on = 1; next }
                   on && /^## / && $0 !~ /20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/ { topic = 1; print; next }
                   on && /^## / { topic = 0 }
                   on && topic && /^### / && $0 !~ /20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/ { print }' "$f" |
              grep -vxE '## The method: two numbers first|## The profiler.s passes|## The test suite' || true)
    echo "$undated"
    [ -z "$undated" ]
    [ "$(grep -ciE 'issue [0-9]|session|helper|the lead|this change' "$f")" -eq 0 ]
}

@test "render: a result line whose shape has 400-digit numbers: one line, exit 2 (no float overflow)" {
    big=$(printf '1%.0s' {1..400})
    bad_results "s/^\(result run=stages stage=05_flash \)shape=8x16x1024x64 /\1shape=${big}x1x1x1 /"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^render:\ .*/docs/h200/results\.txt:[0-9]+:\ shape=1{40}\.\.\.:\ its\ numbers\ are\ too\ large\ \(2·B·H·S²·D\ overflows\ a\ float\)$ ]]
}

@test "render: an empty --results is refused, not taken for the default: one line, exit 2" {
    render_bad --check --results ""
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "render: --results: an empty path (give the results file, or leave --results out)" ]
}

@test "render collect --help prints its usage, exit 0 (not a RUNDIR named --help)" {
    render_bad collect --help
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "$output" = "usage: bench/render.py collect RUNDIR  (writes RUNDIR/results.txt from bench/reference_runs.sh's outputs)" ]
}
