#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: bench/peers.py runs on the GPU machine where PyTorch is installed; anywhere else it
# must say why on one line on stderr and exit 2 (a script must not take "nothing compared" for
# success). A stand-in `torch` package on PYTHONPATH makes both cases happen everywhere.
load helpers

# fake_torch BODY: a package `torch` whose __init__.py is BODY, first on PYTHONPATH.
fake_torch() {
    mkdir -p "$BATS_TEST_TMPDIR/fake/torch"
    printf '%s\n' "$1" > "$BATS_TEST_TMPDIR/fake/torch/__init__.py"
}

@test "peers: without PyTorch: one line on stderr, exit 2, nothing written" {
    fake_torch 'raise ImportError("No module named torch (stand-in)")'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr py_stdlib "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "peers: PyTorch is not installed here"*"runs on the GPU machine"* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ ! -e "$BATS_TEST_TMPDIR/peers.md" ]
}

@test "peers: PyTorch without a CUDA device: one line on stderr, exit 2, nothing written" {
    fake_torch $'__version__ = "2.11.0+stand-in"\nclass cuda:\n    @staticmethod\n    def is_available():\n        return False'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr py_stdlib "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "peers: PyTorch 2.11.0+stand-in sees no CUDA device; bench/peers.py runs on the GPU machine. Nothing to compare." ]
    [ ! -e "$BATS_TEST_TMPDIR/peers.md" ]
}

@test "peers: where PyTorch really is missing, the plain command exits 2 with the message on stderr" {
    if python3 -c 'import torch' 2>/dev/null; then
        skip "PyTorch is installed here (the stand-in tests above cover the message)"
    fi
    run --separate-stderr python3 "$ROOT/bench/peers.py"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "peers: PyTorch is not installed here"* ]]
}

@test "peers: bad --shapes -> exit 2 with one line" {
    run py_stdlib "$ROOT/bench/peers.py" --shapes 8x16x1024
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "peers: --shapes: '8x16x1024' is not BxHxSxD with positive integers" ]
}

# ---- bad input: one line on stderr, exit 2, before PyTorch or the device is looked at ----------
# (a stand-in torch that records its import shows that nothing got that far)

# peers_bad ARGS...: bench/peers.py ARGS with a stand-in torch that writes a mark when imported.
peers_bad() {
    fake_torch "open('$BATS_TEST_TMPDIR/imported', 'w').close()
raise ImportError('stand-in')"
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr py_stdlib "$ROOT/bench/peers.py" "$@"
    echo "$stderr"
}

@test "peers: argparse errors are one line (not usage + error), exit 2, torch not imported" {
    peers_bad --bogus
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "peers: unrecognized arguments: --bogus (bench/peers.py --help)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    peers_bad --shapes
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: argument --shapes: expected one argument (bench/peers.py --help)" ]
}

@test "peers: --shapes beyond the stages' limits is refused at argument parsing: one line, exit 2" {
    # the limits are the stages' own (common/cli.c), asked with ./NN_x/run --validate
    [ -x "$ROOT/01_naive/run" ] || skip "./01_naive/run is not built (make all)"
    peers_bad --shapes 99999999999999999999x1x1x64
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "peers: --shapes: '99999999999999999999x1x1x64': --batch: 99999999999999999999 is out of range (expected 1 to 65535)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    peers_bad --shapes 8x16x1024x64,1x1x2000000x64
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --shapes: '1x1x2000000x64': --seq: 2000000 is out of range (expected 1 to 1048576)" ]
    peers_bad --shapes 1x1x1x1025
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --shapes: '1x1x1x1025': --head-dim: 1025 is out of range (expected 1 to 1024)" ]
    peers_bad --shapes ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --shapes: '' is not BxHxSxD with positive integers" ]
}

@test "peers: an --out that cannot be written is refused before anything runs: one line, exit 2" {
    peers_bad --out /etc/passwd/peers.md
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --out /etc/passwd/peers.md: /etc/passwd is not a directory" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    peers_bad --out "$BATS_TEST_TMPDIR"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --out $BATS_TEST_TMPDIR is a directory (a file name is expected)" ]
    peers_bad --out ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --out is empty" ]
    peers_bad --out /proc/o/peers.md
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "peers: --out /proc/o/peers.md: cannot create it in /proc ("* ]]
}

@test "peers: ATTN_SANITIZE other than unset, 0 or 1: its own line, exit 2, before PyTorch" {
    ATTN_SANITIZE=2 peers_bad
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "peers: ATTN_SANITIZE='2' must be unset, 0 or 1 (peers.py runs the stages, which refuse it)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
}

@test "peers: good arguments reach the PyTorch check (the stand-in is imported), nothing written" {
    peers_bad --shapes 1x2x77x64 --out "$BATS_TEST_TMPDIR/new/peers.md"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "peers: PyTorch is not installed here (stand-in)"* ]]
    [ -e "$BATS_TEST_TMPDIR/imported" ]
    [ ! -e "$BATS_TEST_TMPDIR/new" ]
}

# ---- --sweep: the grid, its flags, the summary of a saved result set (all without a device) -----

FAKE_SWEEP="$ROOT/tests/data/peers_sweep_fake.json"

# sweep_list: `--sweep --list` with the recording stand-in torch; sets $output, $status, $stderr.
sweep_list() {
    peers_bad --sweep --list
}

# grid_shapes: the shape column of the listing (stdout), one BxHxSxD per line.
grid_shapes() {
    printf '%s\n' "$output" | awk '$1 ~ /^[0-9]+x[0-9]+x[0-9]+x[0-9]+$/ { print $1 }'
}

@test "peers --sweep --list: the grid and its estimate on stdout, exit 0, PyTorch not imported" {
    sweep_list
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    [ "$(grid_shapes | wc -l)" -eq 20 ]
    [ "$(grid_shapes | sort -u | wc -l)" -eq 20 ]
    [ "${lines[0]}" = "sweep: 20 shapes (batch x heads x seq x head_dim, bf16, causal); at each 07_hopper, 06_cudnn against SDPA cuDNN, SDPA flash; query tiles of 128 rows against the H200's 132 SMs" ]
    [ "$(grep -c '^8x16x1024x64  *17\.2  *1024  *4\.0-4\.0  the blog.s shape$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^1x1x4096x64  *2\.1  *32 < SMs  *4\.0-4\.0  32 query tiles: grid below the SM count$' <<< "$output")" -eq 1 ]
    [ "$(grep -c '^1x16x16384x128  *1099\.5  *2048  *5\.5-7\.0  longest$' <<< "$output")" -eq 1 ]
    [ "${lines[-1]}" = "sweep: estimate 84-88 s (at most 1.5 min) at 600-300 TFLOP/s plus 2 s per stage run, PyTorch's start not included" ]
}

@test "peers --sweep --list: the grid covers what users run" {
    sweep_list
    [ "$status" -eq 0 ]
    # seq from 512 to 16384, head_dim 64 and 128 only, batch x heads from 1 to 512
    [ "$(grid_shapes | awk -Fx 'NR == 1 || $3 < m { m = $3 } END { print m }')" -eq 512 ]
    [ "$(grid_shapes | awk -Fx '$3 > m { m = $3 } END { print m }')" -eq 16384 ]
    [ "$(grid_shapes | awk -Fx '$4 == 64' | wc -l)" -ge 8 ]
    [ "$(grid_shapes | awk -Fx '$4 == 128' | wc -l)" -ge 8 ]
    [ "$(grid_shapes | awk -Fx '$4 != 64 && $4 != 128' | wc -l)" -eq 0 ]
    [ "$(grid_shapes | awk -Fx 'NR == 1 || $1 * $2 < m { m = $1 * $2 } END { print m }')" -eq 1 ]
    [ "$(grid_shapes | awk -Fx '$1 * $2 > m { m = $1 * $2 } END { print m }')" -eq 512 ]
    # grids of fewer query tiles (128 rows) than the 132 SMs, at both head_dims
    [ "$(grid_shapes | awk -Fx '$4 == 64 && $1 * $2 * int(($3 + 127) / 128) < 132' | wc -l)" -ge 2 ]
    [ "$(grid_shapes | awk -Fx '$4 == 128 && $1 * $2 * int(($3 + 127) / 128) < 132' | wc -l)" -ge 2 ]
    [ "$(grep -c ' < SMs ' <<< "$output")" -eq "$(grid_shapes | awk -Fx '$1 * $2 * int(($3 + 127) / 128) < 132' | wc -l)" ]
    # seq not a multiple of the tile, at both head_dims
    [ "$(grid_shapes | awk -Fx '$4 == 64 && $3 % 128 != 0' | wc -l)" -ge 1 ]
    [ "$(grid_shapes | awk -Fx '$4 == 128 && $3 % 128 != 0' | wc -l)" -ge 1 ]
    # the three bench shapes are in it
    [ "$(grid_shapes | grep -cx -e 8x16x1024x64 -e 4x16x2048x64 -e 2x16x4096x128)" -eq 3 ]
    # the slow estimate of the whole sweep stays under 8 minutes
    [ "$(sed -n 's/^sweep: estimate [0-9]*-\([0-9]*\) s .*/\1/p' <<< "$output")" -lt 480 ]
}

@test "peers --sweep --list: every shape of the grid is within the stages' limits (their --validate)" {
    [ -x "$ROOT/07_hopper/run" ] || skip "./07_hopper/run is not built (make 07_hopper)"
    [ -x "$ROOT/06_cudnn/run" ] || skip "./06_cudnn/run is not built (make 06_cudnn)"
    sweep_list
    [ "$status" -eq 0 ]
    local shape b h s d bad=0
    for shape in $(grid_shapes); do
        IFS=x read -r b h s d <<< "$shape"
        for stage in 07_hopper 06_cudnn; do
            "$ROOT/$stage/run" --validate --batch "$b" --heads "$h" --seq "$s" --head-dim "$d" --trace none || { echo "$stage refuses $shape"; bad=$((bad + 1)); }
        done
    done
    [ "$bad" -eq 0 ]
}

@test "peers --sweep: flags it does not take, or that do not go together: one line, exit 2, PyTorch not imported" {
    peers_bad --sweep --shapes 8x16x1024x64
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "peers: --sweep runs its own grid of shapes (bench/peers.py --sweep --list); --shapes is for a run without --sweep" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    peers_bad --sweep --bogus
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: unrecognized arguments: --bogus (bench/peers.py --help)" ]
    peers_bad --sweep --list --from "$FAKE_SWEEP"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --sweep takes --list or --from, not both" ]
    peers_bad --sweep --list --out "$BATS_TEST_TMPDIR/s.md"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --sweep --list runs nothing; it takes no --out" ]
    peers_bad --sweep --list --system-cudnn
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --sweep --list runs nothing; it takes no --system-cudnn" ]
    peers_bad --sweep --from "$FAKE_SWEEP" --json "$BATS_TEST_TMPDIR/s.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --sweep --from runs nothing; it takes no --json" ]
    peers_bad --sweep --out "$BATS_TEST_TMPDIR/s" --json "$BATS_TEST_TMPDIR/s"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --out and --json name the same file ($BATS_TEST_TMPDIR/s)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    [ ! -e "$BATS_TEST_TMPDIR/s" ]
}

@test "peers: the --sweep options without --sweep: one line, exit 2, PyTorch not imported" {
    peers_bad --list
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "peers: --list is a --sweep option (bench/peers.py --help)" ]
    peers_bad --from "$FAKE_SWEEP"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from is a --sweep option (bench/peers.py --help)" ]
    peers_bad --json "$BATS_TEST_TMPDIR/s.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --json is a --sweep option (bench/peers.py --help)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
}

@test "peers --sweep: an --out or --json that cannot be written, ATTN_SANITIZE: one line, exit 2, before PyTorch" {
    peers_bad --sweep --out /etc/passwd/s.md
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --out /etc/passwd/s.md: /etc/passwd is not a directory" ]
    peers_bad --sweep --json "$BATS_TEST_TMPDIR"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --json $BATS_TEST_TMPDIR is a directory (a file name is expected)" ]
    peers_bad --sweep --json ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --json is empty" ]
    ATTN_SANITIZE=yes peers_bad --sweep
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: ATTN_SANITIZE='yes' must be unset, 0 or 1 (peers.py runs the stages, which refuse it)" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
}

@test "peers --sweep: good flags reach the PyTorch check (the stand-in is imported), nothing written" {
    peers_bad --sweep --out "$BATS_TEST_TMPDIR/new/s.md" --json "$BATS_TEST_TMPDIR/new/s.json"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "peers: PyTorch is not installed here (stand-in)"* ]]
    [ -e "$BATS_TEST_TMPDIR/imported" ]
    [ ! -e "$BATS_TEST_TMPDIR/new" ]
}

@test "peers --sweep --from: a file that is not a saved sweep: one line, exit 2" {
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/none.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from cannot read $BATS_TEST_TMPDIR/none.json: No such file or directory" ]
    printf '{"format": "peers-sweep 1", "shapes": [' > "$BATS_TEST_TMPDIR/cut.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/cut.json"
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "peers: --from $BATS_TEST_TMPDIR/cut.json: not JSON ("* ]]
    printf '{"shapes": []}' > "$BATS_TEST_TMPDIR/other.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/other.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from $BATS_TEST_TMPDIR/other.json: not a saved sweep (expected \"format\": \"peers-sweep 1\")" ]
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["shapes"][1]["SDPA flash"]; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/side.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/side.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from $BATS_TEST_TMPDIR/side.json: 1x1x4096x64: no \"SDPA flash\" entry" ]
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][0]["06_cudnn"]["gpu_us"]=-3; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/neg.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/neg.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from $BATS_TEST_TMPDIR/neg.json: 8x16x1024x64: 06_cudnn: gpu_us -3 is not a positive number" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
}

@test "peers --sweep --from: a shape not BxHxSxD, a gpu_us too large for a float, JSON nested too deeply: one line, exit 2" {
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][1]["shape"]="1x1x4096"; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/shape.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/shape.json"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [ "$stderr" = "peers: --from $BATS_TEST_TMPDIR/shape.json: shapes[1]: shape '1x1x4096' is not BxHxSxD with positive integers" ]
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][0]["shape"]="1x1x4096x"+"9"*400; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/flops.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/flops.json"
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "peers: --from $BATS_TEST_TMPDIR/flops.json: shapes[0]: shape '1x1x4096x999"*"' is not BxHxSxD with positive integers" ]]
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][0]["07_hopper"]["gpu_us"]=10**400; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/big.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/big.json"
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "peers: --from $BATS_TEST_TMPDIR/big.json: 8x16x1024x64: 07_hopper: gpu_us 1000"*" is not a positive number" ]]
    py_stdlib -c 'import sys; n = 100000; open(sys.argv[1], "w").write("{\"format\": \"peers-sweep 1\", \"shapes\": " + "[" * n + "]" * n + "}")' "$BATS_TEST_TMPDIR/deep.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/deep.json"
    [ "$status" -eq 2 ]
    [ "$stderr" = "peers: --from $BATS_TEST_TMPDIR/deep.json: not JSON (nested too deeply)" ]
    printf '\377\376' > "$BATS_TEST_TMPDIR/binary.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/binary.json"
    [ "$status" -eq 2 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "peers: --from $BATS_TEST_TMPDIR/binary.json: not JSON ("* ]]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
}

# The fake result set (tests/data/peers_sweep_fake.json, made up): 07/cuDNN 0.5, 2.0, 0.9; at the
# third shape 06_cudnn did not run and SDPA flash failed its check, so only two shapes count there.
@test "peers --sweep --from: each shape's line, from a saved (made-up) result set" {
    peers_bad --sweep --from "$FAKE_SWEEP"
    [ "$status" -eq 1 ]
    [ -z "$stderr" ]
    [ ! -e "$BATS_TEST_TMPDIR/imported" ]
    [ "${lines[0]}" = "sweep: a made-up result set for tests/peers.bats (not measured): ratios 0.5 / 2.0 / 0.9 (saved in $FAKE_SWEEP)" ]
    [ "${lines[1]}" = "sweep: 8x16x1024x64: 07_hopper 50.0 µs PASS, 06_cudnn 100.0 µs PASS, SDPA cuDNN 100.0 µs PASS, SDPA flash 200.0 µs PASS, 07/cuDNN 0.50, 07/flash 0.25, 07/06 0.50, 06/cuDNN 1.00" ]
    [ "${lines[2]}" = "sweep: 1x1x4096x64: 07_hopper 80.0 µs PASS, 06_cudnn 40.0 µs PASS, SDPA cuDNN 40.0 µs PASS, SDPA flash 40.0 µs PASS, 07/cuDNN 2.00, 07/flash 2.00, 07/06 2.00, 06/cuDNN 1.00" ]
    [ "${lines[3]}" = "sweep: 1x4x2048x128: 07_hopper 90.0 µs PASS, 06_cudnn - (not supported: made up for the test), SDPA cuDNN 100.0 µs PASS, SDPA flash 50.0 µs FAIL, 07/cuDNN 0.90, 07/flash -, 07/06 -, 06/cuDNN -" ]
}

@test "peers --sweep --from: the table, the geometric means and the goal lines" {
    peers_bad --sweep --from "$FAKE_SWEEP"
    [ "$status" -eq 1 ]
    [ "$(tr -s ' ' <<< "$output" | grep -c '^shape 07 µs 06 µs cuDNN µs flash µs 07/cuDNN 07/flash 07/06 06/cuDNN 07 TFLOP/s checks$')" -eq 1 ]
    # TFLOP/s = 2·B·H·S²·D / µs: 17.18 GFLOP in 50 µs, 2.15 in 80, 4.29 in 90
    [ "$(tr -s ' ' <<< "$output" | grep -c '^8x16x1024x64 50.0 100.0 100.0 200.0 0.50 0.25 0.50 1.00 344 4/4 PASS$')" -eq 1 ]
    [ "$(tr -s ' ' <<< "$output" | grep -c '^1x1x4096x64 80.0 40.0 40.0 40.0 2.00 2.00 2.00 1.00 27 4/4 PASS$')" -eq 1 ]
    [ "$(tr -s ' ' <<< "$output" | grep -c '^1x4x2048x128 90.0 - 100.0 50.0 0.90 - - - 48 2/4 PASS$')" -eq 1 ]
    # (0.5·2.0·0.9)^(1/3) = 0.965; (0.25·2.0)^(1/2) = 0.707 and (0.5·2.0)^(1/2) = 1 over 2 shapes
    [ "$(tr -s ' ' <<< "$output" | grep -c '^geomean 0.97 0.71 (2/3) 1.00 (2/3) 1.00 (2/3)$')" -eq 1 ]
    [ "${lines[-2]}" = "sweep: 07_hopper against SDPA cuDNN: geometric mean 0.97 over 3 of 3 shapes (goal <= 0.85); at or below 1.00 at 2 of 3" ]
    [ "${lines[-1]}" = "sweep: 07_hopper against 06_cudnn: geometric mean 1.00 over 2 of 3 shapes (goal <= 0.85); at or below 1.00 at 1 of 3" ]
}

@test "peers --sweep --from: every side checked PASS: exit 0, the ratio counts at every shape" {
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][2]["SDPA flash"]["check"]="PASS"; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/pass.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/pass.json"
    [ "$status" -eq 0 ]
    # 07/flash: 0.25, 2.0, 1.8: (0.9)^(1/3) = 0.965 over all three
    [ "$(tr -s ' ' <<< "$output" | grep -c '^geomean 0.97 0.97 1.00 (2/3) 1.00 (2/3)$')" -eq 1 ]
    [ "$(tr -s ' ' <<< "$output" | grep -c '^1x4x2048x128 90.0 - 100.0 50.0 0.90 1.80 - - 48 3/4 PASS$')" -eq 1 ]
}

@test "peers --sweep --from: a ratio that underflows to 0 or overflows to inf is not counted in the geometric mean" {
    # 07/06 at the first shape: 1e-300 / 1e300 underflows to 0 (then 1e300 / 1e-300 is inf); only 1x1x4096x64's 2.00 counts
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][0]["07_hopper"]["gpu_us"]=1e-300; d["shapes"][0]["06_cudnn"]["gpu_us"]=1e300; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/zero.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/zero.json"
    [ "$status" -eq 1 ]
    [ -z "$stderr" ]
    [ "${lines[-1]}" = "sweep: 07_hopper against 06_cudnn: geometric mean 2.00 over 1 of 3 shapes (goal <= 0.85); at or below 1.00 at 0 of 3" ]
    py_stdlib -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shapes"][0]["07_hopper"]["gpu_us"]=1e300; d["shapes"][0]["06_cudnn"]["gpu_us"]=1e-300; json.dump(d, open(sys.argv[2], "w"))' "$FAKE_SWEEP" "$BATS_TEST_TMPDIR/inf.json"
    peers_bad --sweep --from "$BATS_TEST_TMPDIR/inf.json"
    [ "$status" -eq 1 ]
    [ -z "$stderr" ]
    [ "${lines[-1]}" = "sweep: 07_hopper against 06_cudnn: geometric mean 2.00 over 1 of 3 shapes (goal <= 0.85); at or below 1.00 at 0 of 3" ]
}
