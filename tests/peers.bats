#!/usr/bin/env bats
# CPU-only: bench/peers.py runs on the GPU machine where PyTorch is installed; anywhere else it
# must say why and exit 0 (so a plain `python3 bench/peers.py` never fails a machine without
# PyTorch or a GPU). A stand-in `torch` package on PYTHONPATH makes both cases happen everywhere.
load helpers

# fake_torch BODY: a package `torch` whose __init__.py is BODY, first on PYTHONPATH.
fake_torch() {
    mkdir -p "$BATS_TEST_TMPDIR/fake/torch"
    printf '%s\n' "$1" > "$BATS_TEST_TMPDIR/fake/torch/__init__.py"
}

@test "peers: without PyTorch: the message, exit 0, nothing written" {
    fake_torch 'raise ImportError("No module named torch (stand-in)")'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run python3 "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "peers: PyTorch is not installed here"*"runs on the GPU machine"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/peers.md" ]
}

@test "peers: PyTorch without a CUDA device: the message, exit 0, nothing written" {
    fake_torch $'__version__ = "2.11.0+stand-in"\nclass cuda:\n    @staticmethod\n    def is_available():\n        return False'
    PYTHONPATH="$BATS_TEST_TMPDIR/fake" run python3 "$ROOT/bench/peers.py" --out "$BATS_TEST_TMPDIR/peers.md"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "peers: PyTorch 2.11.0+stand-in sees no CUDA device; bench/peers.py runs on the GPU machine. Nothing to compare." ]
    [ ! -e "$BATS_TEST_TMPDIR/peers.md" ]
}

@test "peers: where PyTorch really is missing, the plain command exits 0 with the message" {
    if python3 -c 'import torch' 2>/dev/null; then
        skip "PyTorch is installed here (the stand-in tests above cover the message)"
    fi
    run python3 "$ROOT/bench/peers.py"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "peers: PyTorch is not installed here"* ]]
}

@test "peers: bad --shapes -> exit 2 with one line" {
    run python3 "$ROOT/bench/peers.py" --shapes 8x16x1024
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "peers: --shapes: '8x16x1024' is not BxHxSxD with positive integers" ]
}
