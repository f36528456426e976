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
