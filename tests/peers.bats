#!/usr/bin/env bats
# CPU-only: bench/peers.py runs on the GPU machine where PyTorch is installed; anywhere else it
# must say why on one line on stderr and exit 2 (a script must not take "nothing compared" for
# success). A stand-in `torch` package on PYTHONPATH makes both cases happen everywhere.
bats_require_minimum_version 1.5.0
load helpers

# fake_torch BODY: a package `torch` whose __init__.py is BODY, first on PYTHONPATH.
fake_torch() {
    mkdir -p "$BATS_TEST_TMPDIR/fake/torch"
    printf '%s\n' "$1" > "$BATS_TEST_TMPDIR/fake/torch/__init__.py"
}

@test "peers: without PyTorch: one line on stderr, exit 2, nothing written" {
    fake_torch 'raise ImportError("No module named torch (stand-in)")'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr python3 "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "peers: PyTorch is not installed here"*"runs on the GPU machine"* ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ ! -e "$BATS_TEST_TMPDIR/peers.md" ]
}

@test "peers: PyTorch without a CUDA device: one line on stderr, exit 2, nothing written" {
    fake_torch $'__version__ = "2.11.0+stand-in"\nclass cuda:\n    @staticmethod\n    def is_available():\n        return False'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr python3 "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
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
    run python3 "$ROOT/bench/peers.py" --shapes 8x16x1024
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
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run --separate-stderr python3 "$ROOT/bench/peers.py" "$@"
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
