#!/usr/bin/env bats
# CPU-only: bench/compare.py (`make compare`) renders the stages' summary lines as one table, a
# Markdown file and an SVG bar chart. tests/data/compare_summary.txt holds canned lines with H200
# numbers at the blog's shape 8x16x1024x64 (dram_read/dram_write from the H200 counter pass; 01: 6 activities, 703.8 us, 545 MiB of scores, mask and
# cuBLAS workspace; 03: 20, 2344.2 us, 1.29 GiB; 06: memset + kernel, 63.4 us, a 256 B workspace).
load helpers

DATA="$ROOT/tests/data/compare_summary.txt"

render() {
    OUTDIR="$BATS_TEST_TMPDIR/out"
    run py_stdlib "$ROOT/bench/compare.py" render "$1" "$OUTDIR"
    echo "$output"
}

# row STAGE: the terminal table's row of STAGE (exactly one).
row() {
    local r
    r=$(printf '%s\n' "$output" | grep -E "^$1 ")
    [ "$(printf '%s\n' "$r" | grep -c .)" -eq 1 ] || { echo "no single row for $1"; return 1; }
    printf '%s\n' "$r"
}

# svg_facts FILE: well-formed XML (minidom), then one line per bar: stage ops-text width.
svg_facts() {
    py_stdlib - "$1" <<'EOF'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
assert doc.documentElement.tagName == "svg", doc.documentElement.tagName
texts = doc.getElementsByTagName("text") + doc.getElementsByTagName("tspan")
def text_of(n):
    return "".join(c.data for c in n.childNodes if c.nodeType == c.TEXT_NODE)
stages = [text_of(t) for t in texts if t.getAttribute("class") == "stage"]
ops = [text_of(t) for t in texts if t.getAttribute("class") == "ops"]
bars = [r for r in doc.getElementsByTagName("rect") if r.getAttribute("class") == "bar"]
print("bars", len(bars))
for s, o, b in zip(stages, ops, bars):
    print(s, o.replace(" ", "_"), b.getAttribute("width"))
EOF
}

@test "compare render: one row per stage in stage order, values from the summary lines" {
    render "$DATA"
    [ "$status" -eq 0 ]
    [[ "$output" == *"shape 8x16x1024x64"* ]]
    printf '%s\n' "$output" | grep -qE '^stage +GPU ops/step +GPU µs/step +host µs/call +TFLOP/s +% of peak +tensor pipe % +DRAM bytes/fwd +FLOP/byte +extra device memory +rel\. error +idea$'
    # stage, ops/step, GPU us, host us, TFLOP/s, % of peak, tensor pipe % (- : summary lines alone
    # hold no kernel details), DRAM bytes/fwd (dram_read + dram_write),
    # FLOP/byte (2*8*16*1024^2*64 = 17179869184 FLOP over those bytes), extra memory, rel. error, idea
    row 01_naive     | grep -qE '^01_naive +6 +703\.8 +41\.7 +24\.4 +2\.5 +- +2\.84 GB +6\.1 +545\.0 MiB +3\.112e-03 +cuBLAS bf16 GEMM'
    row 02_inplace   | grep -qE '^02_inplace +5 +576\.0 +36\.2 +29\.8 +3\.0 +- +2\.30 GB +7\.5 +545\.0 MiB +3\.112e-03 +01 with the mask applied in place'
    row 03_math      | grep -qE '^03_math +20 +2344\.2 +97\.5 +7\.3 +0\.7 +- +6\.60 GB +2\.6 +1\.29 GiB +1\.561e-03 +PyTorch.s SDPA math backend'
    row 04_efficient | grep -qE '^04_efficient +1 +99\.8 +3\.4 +172\.1 +17\.4 +- +93\.5 MB +183\.8 +0 +1\.571e-03 +one tiled kernel'
    row 05_flash     | grep -qE '^05_flash +1 +103\.4 +3\.8 +166\.1 +16\.8 +- +106\.5 MB +161\.3 +0 +1\.567e-03 +one kernel, one sweep'
    row 06_cudnn     | grep -qE '^06_cudnn +2 +63\.4 +5\.1 +271\.0 +27\.4 +- +85\.3 MB +201\.5 +256 B +1\.585e-03 +cuDNN 9 backend API'
    # exactly six stage rows, in order; the "cudnn: " lines of the canned file are not rows
    [ "$(printf '%s\n' "$output" | grep -oE '^0[1-6]_[a-z]+' | tr '\n' ' ')" = \
      "01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn " ]
    [ "$(printf '%s\n' "$output" | grep -c '^cudnn' || true)" -eq 0 ]
}

@test "compare render: traces-style compare.md holds the same table in Markdown" {
    render "$DATA"
    [ "$status" -eq 0 ]
    md="$OUTDIR/compare.md"
    [ -f "$md" ]
    cat "$md"
    grep -qxF '| stage | idea | GPU ops/step | GPU µs/step | host µs/call | TFLOP/s | % of peak | tensor pipe % | DRAM bytes/fwd | FLOP/byte | extra device memory | rel. error |' "$md"
    grep -qxF '|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|' "$md"
    grep -qE '^\| `01_naive` \| cuBLAS bf16 GEMM .* \| 6 \| 703\.8 \| 41\.7 \| 24\.4 \| 2\.5 \| - \| 2\.84 GB \| 6\.1 \| 545\.0 MiB \| 3\.112e-03 \|$' "$md"
    grep -qE '^\| `03_math` \| .* \| 20 \| 2344\.2 \| 97\.5 \| 7\.3 \| 0\.7 \| - \| 6\.60 GB \| 2\.6 \| 1\.29 GiB \| 1\.561e-03 \|$' "$md"
    grep -qE '^\| `05_flash` \| .* \| 1 \| 103\.4 \| 3\.8 \| 166\.1 \| 16\.8 \| - \| 106\.5 MB \| 161\.3 \| 0 \| 1\.567e-03 \|$' "$md"
    grep -qE '^\| `06_cudnn` \| .* \| 2 \| 63\.4 \| 5\.1 \| 271\.0 \| 27\.4 \| - \| 85\.3 MB \| 201\.5 \| 256 B \| 1\.585e-03 \|$' "$md"
    [ "$(grep -cE '^\| `0[1-6]_' "$md")" -eq 6 ]
    grep -qF '](compare.svg)' "$md"
}

@test "compare render: compare.svg is well-formed XML, one bar per stage, the counts on the bars" {
    render "$DATA"
    [ "$status" -eq 0 ]
    run svg_facts "$OUTDIR/compare.svg"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "bars 6" ]
    [ "$(printf '%s\n' "${lines[@]:1}" | cut -d' ' -f1-2 | tr '\n' ' ')" = \
      "01_naive 6_ops/step 02_inplace 5_ops/step 03_math 20_ops/step 04_efficient 1_ops/step 05_flash 1_ops/step 06_cudnn 2_ops/step " ]
    # log axis: bar lengths ordered as the times (03 > 01 > 02 > 05 > 04 > 06)
    [ "$(printf '%s\n' "${lines[@]:1}" | sort -k3,3 -g -r | cut -d' ' -f1 | tr '\n' ' ')" = \
      "03_math 01_naive 02_inplace 05_flash 04_efficient 06_cudnn " ]
    grep -qF '703.8 µs' "$OUTDIR/compare.svg"
    grep -qF '>10 µs<' "$OUTDIR/compare.svg"
    grep -qF '>10 ms<' "$OUTDIR/compare.svg"
}

# The roofline: FLOP/byte = 17179869184 / (dram_read + dram_write); the bandwidth roof at that
# intensity is FLOP/byte x 4.2 TB/s (01: 6.05 x 4.2 = 25.4 TFLOP/s, against 24.4 measured).
@test "compare render: roofline.svg, one point per stage with counters, the roofs, the numbers on stdout" {
    render "$DATA"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | grep -qxF 'roofline 01_naive: 6.1 FLOP/byte, 24.4 TFLOP/s (bandwidth roof there: 25.4)'
    printf '%s\n' "$output" | grep -qxF 'roofline 03_math: 2.6 FLOP/byte, 7.3 TFLOP/s (bandwidth roof there: 10.9)'
    printf '%s\n' "$output" | grep -qxF 'roofline 06_cudnn: 201.5 FLOP/byte, 271.0 TFLOP/s (bandwidth roof there: 790.0)'
    grep -qF '](roofline.svg)' "$OUTDIR/compare.md"
    run py_stdlib - "$OUTDIR/roofline.svg" <<'EOF'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
def text_of(n):
    return "".join(c.data for c in n.childNodes if c.nodeType == c.TEXT_NODE)
pts = [text_of(t).split(" ")[0] for t in doc.getElementsByTagName("text") if t.getAttribute("class") == "point-label"]
roofs = [text_of(t) for t in doc.getElementsByTagName("text") if t.getAttribute("class") == "roof-label"]
circles = [c for c in doc.getElementsByTagName("circle") if c.getAttribute("class") == "point"]
print(" ".join(pts))
print(len(circles), len(doc.getElementsByTagName("polyline")))
print(" | ".join(roofs))
# x grows with intensity: 03 (2.6) < 01 (6.1) < 02 (7.5) < 05 (161) < 04 (184) < 06 (202)
xs = {t: float(c.getAttribute("cx")) for t, c in zip(pts, circles)}
print(" ".join(sorted(xs, key=xs.get)))
EOF
    echo "$output"
    [ "${lines[0]}" = "01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn" ]
    [ "${lines[1]}" = "6 2" ]
    [ "${lines[2]}" = "bf16 tensor cores ≈790 TFLOP/s | FP32 CUDA cores ≈67 TFLOP/s (03_math) | DRAM ≈4.2 TB/s" ]
    [ "${lines[3]}" = "03_math 01_naive 02_inplace 05_flash 04_efficient 06_cudnn" ]
}

@test "compare render: summary lines without counters (dram_read=-) have '-' columns and no roofline point" {
    sed -e 's/dram_read=[0-9]* dram_write=[0-9]*/dram_read=- dram_write=-/' "$DATA" > "$BATS_TEST_TMPDIR/summary.txt"
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 05_flash | grep -qE '^05_flash +1 +103\.4 +3\.8 +166\.1 +16\.8 +- +- +- +0 +'
    [ "$(grep -c 'class="point"' "$OUTDIR/roofline.svg" || true)" -eq 0 ]
}

@test "compare render: a stage that refused the shape is listed as not supported, with its message" {
    sed -e 's/^result stage=04_efficient .*/unsupported stage=04_efficient shape=8x16x1024x64 exit=2 message=head_dim 96 is not supported by 04_efficient (supported: 64, 128)/' \
        "$DATA" > "$BATS_TEST_TMPDIR/summary.txt"
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 04_efficient | grep -qE '^04_efficient +not supported +one tiled kernel'
    printf '%s\n' "$output" | grep -qxF '04_efficient: not supported at 8x16x1024x64: head_dim 96 is not supported by 04_efficient (supported: 64, 128)'
    grep -qF -- '- 04_efficient: not supported at 8x16x1024x64: head_dim 96 is not supported' "$OUTDIR/compare.md"
    run svg_facts "$OUTDIR/compare.svg"
    echo "$output"
    [ "${lines[0]}" = "bars 5" ]
    grep -qF '>not supported<' "$OUTDIR/compare.svg"
}

@test "compare: bad input -> exit 2 with one line" {
    run py_stdlib "$ROOT/bench/compare.py" run --shape 8x16
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == "compare: --shape '8x16' is not BxHxSxD"* ]]
    run py_stdlib "$ROOT/bench/compare.py" render "$BATS_TEST_TMPDIR/missing.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [[ "$output" == "compare: cannot read "* ]]
    run py_stdlib "$ROOT/bench/compare.py" render /dev/null "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [[ "$output" == "compare: no summary lines"* ]]
}

@test "compare run without a GPU: a clear message, exit 2, nothing written" {
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        skip "a GPU is present (the no-GPU path is tested where there is none)"
    fi
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" run --outdir "$BATS_TEST_TMPDIR/out"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "compare: no CUDA device: "*"runs the stages on a GPU machine"* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]        # the reason only: no progress line before it
    [ -z "$output" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

# ---- bad input: one line on stderr, exit 2, no traceback, nothing written --------------------

# compare_bad ARGS...: bench/compare.py ARGS; stdout in $output, stderr in $stderr.
compare_bad() {
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" "$@"
    echo "$stderr"
}

@test "compare: argparse errors are one line (not usage + error), exit 2" {
    compare_bad
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "compare: the following arguments are required: mode (bench/compare.py --help)" ]
    compare_bad bogus
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "compare: argument mode: invalid choice: 'bogus' "* ]]
    compare_bad run --nope
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: unrecognized arguments: --nope (bench/compare.py --help)" ]
    compare_bad render "$DATA"
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: the following arguments are required: outdir (bench/compare.py --help)" ]
    compare_bad run --shape
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: argument --shape: expected one argument (bench/compare.py --help)" ]
}

@test "compare render: an OUTDIR that cannot hold the files: one line, exit 2, no table, no traceback" {
    compare_bad render "$DATA" /etc/passwd
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "compare: OUTDIR /etc/passwd is not a directory" ]
    compare_bad render "$DATA" /dev/full
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: OUTDIR /dev/full is not a directory" ]
    compare_bad render "$DATA" /proc/o
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "compare: OUTDIR /proc/o: cannot create a directory in /proc ("* ]]
    compare_bad render "$DATA" ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: OUTDIR is empty" ]
    compare_bad render "$DATA" /etc/passwd/out
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: OUTDIR /etc/passwd/out: /etc/passwd is not a directory" ]
}

@test "compare render: a SUMMARY_FILE that is not text, or a directory: one line, exit 2" {
    compare_bad render /bin/ls "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: cannot read /bin/ls: not a UTF-8 text file (summary lines expected)" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
    compare_bad render "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: cannot read $BATS_TEST_TMPDIR: Is a directory" ]
}

@test "compare render: gpu_us=inf, gpu_us=nan, tflops=nan, dram_read=inf, extra_bytes=zz render without a crash" {
    sed -e 's/^\(result stage=01_naive .*\)gpu_us=[0-9.]*/\1gpu_us=inf/' \
        -e 's/^\(result stage=02_inplace .*\)tflops=[0-9.]*/\1tflops=nan/' \
        -e 's/^\(result stage=03_math .*\)gpu_us=[0-9.]*/\1gpu_us=nan/' \
        -e 's/^\(result stage=04_efficient .*\)dram_read=[0-9]*/\1dram_read=inf/' \
        -e 's/^\(result stage=05_flash .*\)extra_bytes=[0-9]*/\1extra_bytes=zz/' \
        "$DATA" > "$BATS_TEST_TMPDIR/summary.txt"
    grep -q 'gpu_us=inf' "$BATS_TEST_TMPDIR/summary.txt"
    grep -q 'tflops=nan' "$BATS_TEST_TMPDIR/summary.txt"
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 05_flash | grep -qE '^05_flash +1 +103\.4 +3\.8 +166\.1 +16\.8 +- +106\.5 MB +161\.3 +\? +'
    row 04_efficient | grep -qE '^04_efficient +1 +99\.8 +3\.4 +172\.1 +17\.4 +- +- +- +0 +'
    run svg_facts "$OUTDIR/compare.svg"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "bars 4" ]
    [ "$(grep -c '>no GPU time<' "$OUTDIR/compare.svg")" -eq 2 ]
    # the roofline leaves out 02 (tflops=nan) and 04 (no traffic): 01, 03, 05, 06
    [ "$(grep -c 'class="point"' "$OUTDIR/roofline.svg")" -eq 4 ]
    py_stdlib -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$OUTDIR/roofline.svg"
}

@test "compare run --outdir that cannot be created: one line, exit 2, before any run or device check" {
    compare_bad run --outdir /etc/passwd
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "compare: --outdir /etc/passwd is not a directory" ]
    compare_bad run --outdir /proc/o/x
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "compare: --outdir /proc/o/x: cannot create a directory in /proc ("* ]]
}

@test "compare run: ATTN_SANITIZE other than unset, 0 or 1 is its own error, not the default shape's" {
    ATTN_SANITIZE=2 compare_bad run
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "compare: ATTN_SANITIZE='2' must be unset, 0 or 1 (compare runs the stages, which refuse it)" ]
    ATTN_SANITIZE= compare_bad run --shape 1x1x1x64
    [ "$status" -eq 2 ]
    [ "$stderr" = "compare: ATTN_SANITIZE='' must be unset, 0 or 1 (compare runs the stages, which refuse it)" ]
}

@test "compare preflight: the bare reason on stderr for make (bad shape before the device), exit 2" {
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" preflight --shape bad
    [ "$status" -eq 2 ]
    [ "$stderr" = "--shape 'bad' is not BxHxSxD with positive integers (e.g. 8x16x1024x64)" ]
    [ -z "$output" ]
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" preflight --shape $'1x1x1x64\necho hi'
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "--shape '1x1x1x64\\necho hi' is not BxHxSxD with positive integers (e.g. 8x16x1024x64)" ]
    [ -z "$output" ]
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" preflight --bogus
    [ "$status" -eq 2 ]
    [ "$stderr" = "unrecognized arguments: --bogus (bench/compare.py --help)" ]
    [ -z "$output" ]
}

@test "compare preflight with a (fake) GPU and a good shape: silent, exit 0" {
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\necho "GPU 0: Fake GPU (UUID: GPU-0)"\n' > "$BATS_TEST_TMPDIR/bin/nvidia-smi"
    chmod +x "$BATS_TEST_TMPDIR/bin/nvidia-smi"
    PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr py_stdlib "$ROOT/bench/compare.py" preflight --shape 1x2x77x64
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [ -z "$stderr" ]
}

# ---- the tensor pipe % column: from the stages' printed tables and kernel details ------------
# docs/h200/NN_x.txt: every stage's whole output at the blog's shape on the H200. The column is
# each stage's kernels' `counters:` "tensor pipe X% active" weighted by the kernel's CUDA total in
# the table. 01: (22.6 x 258.401 + 0 x 382.785 + 0 x 381.153 + 0.9 x 427.266 + 22.8 x 251.009) /
# 1700.614 us = 7.03; 02: 11854.9 / 1704.36 = 6.96; 03: (0.8 x 773.347 + 0.3 x 1014) / 6902.566
# = 0.13; 04..07 have one kernel each (06's memset is no kernel): its own value.
H200_OUTPUTS=(01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn 07_hopper)

# h200_summary FILE: the seven stages' outputs of docs/h200/ concatenated into FILE.
h200_summary() {
    local s
    for s in "${H200_OUTPUTS[@]}"; do cat "$ROOT/docs/h200/$s.txt"; done > "$1"
}

@test "compare render docs/h200 outputs: tensor pipe % per stage, weighted by the kernels' CUDA time" {
    h200_summary "$BATS_TEST_TMPDIR/summary.txt"
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 01_naive     | grep -qE '^01_naive +6 +705\.2 +46\.9 +24\.4 +2\.5 +7\.0 +2\.83 GB +'
    row 02_inplace   | grep -qE '^02_inplace +5 +579\.6 +37\.2 +29\.6 +3\.0 +7\.0 +2\.30 GB +'
    row 03_math      | grep -qE '^03_math +20 +2346\.2 +118\.6 +7\.3 +0\.7 +0\.1 +6\.62 GB +'
    row 04_efficient | grep -qE '^04_efficient +1 +98\.7 +5\.3 +174\.0 +17\.6 +44\.6 +84\.6 MB +'
    row 05_flash     | grep -qE '^05_flash +1 +70\.0 +5\.6 +245\.3 +24\.8 +42\.9 +95\.0 MB +'
    row 06_cudnn     | grep -qE '^06_cudnn +2 +64\.1 +8\.7 +268\.0 +27\.1 +41\.6 +70\.7 MB +'
    row 07_hopper    | grep -qE '^07_hopper +1 +55\.1 +4\.8 +311\.7 +31\.5 +38\.8 +95\.9 MB +'
    # the idea comes from each output's "stage NN_x: idea" line
    row 07_hopper    | grep -qE " FlashAttention-3's machinery by hand: TMA loads"
    printf '%s\n' "$output" | grep -qF "tensor pipe % is the kernels' mean tensor-pipe activity weighted by each kernel's CUDA time in the stage's table"
    grep -qE '^\| `07_hopper` \| .* \| 1 \| 55\.1 \| 4\.8 \| 311\.7 \| 31\.5 \| 38\.8 \| 95\.9 MB \| 179\.2 \| 0 \| 1\.132e-03 \|$' "$OUTDIR/compare.md"
    grep -qF 'each kernel'"'"'s `counters:` line ("tensor pipe X% active", the counter pass)' "$OUTDIR/compare.md"
    [ "$(printf '%s\n' "$output" | grep -c 'from the timeline' || true)" -eq 0 ]
}

@test "compare render: one stage's output alone (docs/h200/05_flash.txt) gives its row with the column" {
    render "$ROOT/docs/h200/05_flash.txt"
    [ "$status" -eq 0 ]
    row 05_flash | grep -qE '^05_flash +1 +70\.0 +5\.6 +245\.3 +24\.8 +42\.9 +95\.0 MB +180\.9 +0 +1\.127e-03 +one kernel, one sweep'
    [ "$(printf '%s\n' "$output" | grep -cE '^0[1-7]_')" -eq 1 ]
}

@test "compare render: without counters values the column takes the timeline lines' means, and says so" {
    # counters_format_pct prints "-" for a counter it could not read: "tensor pipe - active"
    sed -e 's/tensor pipe [0-9.]*% active/tensor pipe - active/' "$ROOT/docs/h200/01_naive.txt" > "$BATS_TEST_TMPDIR/summary.txt"
    [ "$(grep -c 'tensor pipe - active' "$BATS_TEST_TMPDIR/summary.txt")" -eq 5 ]
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    # timeline means 21.1, 0.0, 0.0, 0.9, 21.5 over the same times: 11233.5 / 1700.614 = 6.61
    row 01_naive | grep -qE '^01_naive +6 +705\.2 +46\.9 +24\.4 +2\.5 +6\.6 +2\.83 GB +'
    printf '%s\n' "$output" | grep -qxF "01_naive: tensor pipe % from the timeline lines' means (no counters)"
}

@test "compare render: one kernel without counters switches the whole stage to the timeline" {
    # 01's mul kernel only (the second counters line): the stage takes one source for every kernel
    awk '/^    counters: / && ++n == 2 { sub(/tensor pipe [0-9.]*% active/, "tensor pipe - active") } { print }' \
        "$ROOT/docs/h200/01_naive.txt" > "$BATS_TEST_TMPDIR/summary.txt"
    [ "$(grep -c 'tensor pipe - active' "$BATS_TEST_TMPDIR/summary.txt")" -eq 1 ]
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 01_naive | grep -qE '^01_naive +6 +705\.2 +46\.9 +24\.4 +2\.5 +6\.6 +2\.83 GB +'
}

@test "compare render: neither counters nor timeline values: '-' in the column, the rest unchanged" {
    sed -e 's/tensor pipe [0-9.]*% active/tensor pipe - active/' -e 's/^    timeline: .*/    timeline: -/' \
        "$ROOT/docs/h200/07_hopper.txt" > "$BATS_TEST_TMPDIR/summary.txt"
    grep -qxF '    timeline: -' "$BATS_TEST_TMPDIR/summary.txt"
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 07_hopper | grep -qE '^07_hopper +1 +55\.1 +4\.8 +311\.7 +31\.5 +- +95\.9 MB +179\.2 +0 +'
    [ "$(printf '%s\n' "$output" | grep -c 'from the timeline' || true)" -eq 0 ]
}

@test "compare render: a kernel name under several launch configurations shares its table time" {
    # 03's to_bf16_kernel has one table row (596.739 us over 6 calls) and two details entries
    # (grid 65536 and grid 4096). Set the second entry's tensor pipe to 50.0%: it weighs half the
    # row, (922.3 + 50 x 298.370) / 6902.566 = 2.29; giving it the whole row would read 4.1.
    awk '/^  to_bf16_kernel/ { n++ } /^    counters: / && n == 2 && !done { sub(/tensor pipe 0\.0% active/, "tensor pipe 50.0% active"); done = 1 } { print }' \
        "$ROOT/docs/h200/03_math.txt" > "$BATS_TEST_TMPDIR/summary.txt"
    [ "$(grep -c 'tensor pipe 50.0% active' "$BATS_TEST_TMPDIR/summary.txt")" -eq 1 ]
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 03_math | grep -qE '^03_math +20 +2346\.2 +118\.6 +7\.3 +0\.7 +2\.3 +6\.62 GB +'
}

@test "compare render: a details kernel missing from the table gives '-' (no time to weigh it by)" {
    sed -e '/^ *flash3_fwd_bf16_causal.*  *3  *$/d' "$ROOT/docs/h200/07_hopper.txt" > "$BATS_TEST_TMPDIR/summary.txt"
    [ "$(grep -c 'flash3_p\.\.\.' "$BATS_TEST_TMPDIR/summary.txt" || true)" -eq 0 ]
    [ "$(grep -c '^  flash3_fwd_bf16_causal_128x128_d64_r4_sm90a(flash3_params): grid' "$BATS_TEST_TMPDIR/summary.txt")" -eq 1 ]
    render "$BATS_TEST_TMPDIR/summary.txt"
    [ "$status" -eq 0 ]
    row 07_hopper | grep -qE '^07_hopper +1 +55\.1 +4\.8 +311\.7 +31\.5 +- +95\.9 MB +'
}

@test "compare run on the GPU: every stage's row has a tensor pipe % (the runs' tables are kept)" {
    require_gpu
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" run --shape 1x2x128x64 --outdir "$BATS_TEST_TMPDIR/out"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^Kernel details' "$BATS_TEST_TMPDIR/out/compare_summary.txt")" -eq 7 ]
    [ "$(grep -c '^result stage=' "$BATS_TEST_TMPDIR/out/compare_summary.txt")" -eq 7 ]
    # stage, ops/step, GPU us, host us, TFLOP/s, % of peak, then a number in the tensor pipe column
    [ "$(printf '%s\n' "$output" | grep -cE '^0[1-7]_[a-z]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+\.[0-9] +')" -eq 7 ]
    [ "$(printf '%s\n' "$output" | grep -c 'from the timeline' || true)" -eq 0 ]
}

# tp_of STAGE: the tensor pipe % column of STAGE's row in $output (the 7th field: stage, GPU
# ops/step, GPU us, host us, TFLOP/s, % of peak, tensor pipe %).
tp_of() {
    printf '%s\n' "$output" | awk -v s="$1" '$1 == s { print $7 }'
}

# At `make compare`'s own shape, what the stages' code makes certain: 03_math runs both GEMMs as
# FP32 SGEMM on the CUDA cores (cublasSgemmStridedBatched, default math mode: no TF32) and every
# other kernel is elementwise, so its tensor pipe stays near 0; 01 and 02 run bf16 cuBLAS GEMMs on
# the tensor cores for part of their time; 04-07 are one attention kernel (06: plus a memset) whose
# two matmuls are mma.sync or wgmma. A number in the column is a mean of per-kernel percentages
# that compare.py reads only within 0..100 (else "-").
@test "compare run on the GPU at the blog's shape: every stage's row (its table kept) has a tensor pipe %; 03 below 1, above it 01 and 02, above them 04-07" {
    require_gpu
    run --separate-stderr py_stdlib "$ROOT/bench/compare.py" run --outdir "$BATS_TEST_TMPDIR/out"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^Kernel details' "$BATS_TEST_TMPDIR/out/compare_summary.txt")" -eq 7 ]
    [ "$(grep -c '^result stage=[0-9][0-9]_[a-z]* shape=8x16x1024x64 ' "$BATS_TEST_TMPDIR/out/compare_summary.txt")" -eq 7 ]
    # stage, ops/step, GPU us, host us, TFLOP/s, % of peak, then a number in the tensor pipe column
    [ "$(printf '%s\n' "$output" | grep -cE '^0[1-7]_[a-z]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+\.[0-9] +')" -eq 7 ]
    [ "$(printf '%s\n' "$output" | awk '$1 ~ /^0[1-7]_[a-z]+$/ && $7 ~ /^[0-9]+\.[0-9]$/' | wc -l)" -eq 7 ]
    [ "$(printf '%s\n' "$output" | grep -c 'from the timeline' || true)" -eq 0 ]
    at_most "$(tp_of 03_math)" 1.0
    at_most "$(tp_of 03_math) + 1.0" "$(tp_of 01_naive)"
    at_most "$(tp_of 03_math) + 1.0" "$(tp_of 02_inplace)"
    at_most "max($(tp_of 01_naive), $(tp_of 02_inplace), $(tp_of 03_math))" \
            "min($(tp_of 04_efficient), $(tp_of 05_flash), $(tp_of 06_cudnn), $(tp_of 07_hopper))"
}

@test "compare render: a summary shape with 400-digit numbers: one line, exit 2, nothing written (no float overflow)" {
    big=$(printf '1%.0s' {1..400})
    sed -e "s/shape=8x16x1024x64/shape=${big}x1x1x1/" "$DATA" > "$BATS_TEST_TMPDIR/summary.txt"
    compare_bad render "$BATS_TEST_TMPDIR/summary.txt" "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "compare: 01_naive: shape=1111111111111111111111111111111111111111...: its numbers are too large (2·B·H·S²·D overflows a float)" ]
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
}
