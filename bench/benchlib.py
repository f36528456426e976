"""benchlib.py: what the bench/ scripts share, so that they refuse the same things with the same
words and print the same numbers the same way.

The input checks (bench/compare.py, bench/peers.py, bench/ladder.py), before any stage runs:

  SHAPE_RE                       the form BxHxSxD (positive decimal integers)
  sanitize_env_problem(prog)     ATTN_SANITIZE other than unset, 0 or 1
  dir_problem(path, what)        a directory that must take new files (existing or creatable)
  file_problem(path, what)       a file to be written (existing and writable, or creatable)
  shape_flag_problem(values)     the stages' own shape limits: a built stage's --validate

Each returns the reason as one line, or None. Nothing is left behind: a probe file or directory
is created and removed. The limits live in one place, common/cli.c; here they are asked, not
copied.

  one_line_parser(die, hint)     an argparse parser class whose errors are one line through die
  write_problem(path, text)      text written into path, or why it could not be (one line)

The units of the course's tables (bench/compare.py's `make compare` table, bench/render.py's
rendered tables), from a stage's summary line (README.md, "What a run prints"):

  human_bytes(n)                 device memory in binary units: 0, 256 B, 12.0 KiB, 1.29 GiB
  decimal_bytes(n)               bytes moved in the counters' decimal units: 4.10 kB, 66.1 MB
  flops_per_forward(r)           2·B·H·S²·D of its shape (FlashAttention's convention, causal)
  shape_size_problem(shape)      a BxHxSxD whose 2·B·H·S²·D is too large for a float (or None)
  traffic(r), intensity(r)       DRAM bytes per forward, FLOP per DRAM byte (None without counters)

Python 3 standard library only.
"""
import argparse
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE_RE = re.compile(r"^([1-9][0-9]*)x([1-9][0-9]*)x([1-9][0-9]*)x([1-9][0-9]*)\Z")
STAGE_RE = re.compile(r"^[0-9][0-9]_[A-Za-z0-9_]+$")


def _last_line(text):
    """The last non-empty line of text, whitespace collapsed ('' if none)."""
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return " ".join(lines[-1].split()) if lines else ""


def sanitize_env_problem(prog):
    """ATTN_SANITIZE must be unset, 0 or 1 (the stages refuse anything else): its own line, before
    any stage runs, rather than a stage's refusal blamed on the shape."""
    v = os.environ.get("ATTN_SANITIZE")
    if v is not None and v not in ("0", "1"):
        return f"ATTN_SANITIZE={v!r} must be unset, 0 or 1 ({prog} runs the stages, which refuse it)"
    return None


def _creatable_problem(path, what, kind):
    """A missing PATH: its nearest existing parent must be a directory that takes a new one."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"{what} {path}: {parent} is not a directory"
    import tempfile   # here: only the probes need it (it imports shutil and random)
    try:
        os.rmdir(tempfile.mkdtemp(dir=parent))
    except OSError as e:
        return f"{what} {path}: cannot create {kind} in {parent} ({e.strerror or e})"
    return None


def dir_problem(path, what):
    """Why the directory PATH cannot hold our files, or None: an existing directory must take a new
    file; a missing one, its nearest existing parent a new directory."""
    if not path:
        return f"{what} is empty"
    if "\0" in path:
        return f"{what} {path!r} holds a NUL byte"
    try:
        if os.path.exists(path):
            if not os.path.isdir(path):
                return f"{what} {path} is not a directory"
            import tempfile   # here, as in _creatable_problem
            try:
                with tempfile.TemporaryFile(dir=path):
                    pass
            except OSError as e:
                return f"{what} {path}: cannot write there ({e.strerror or e})"
            return None
        return _creatable_problem(path, what, "a directory")
    except OSError as e:
        return f"{what} {path}: {e.strerror or e}"


def file_problem(path, what):
    """Why the file PATH cannot be written, or None: an existing one must be a writable file; a
    missing one, creatable (its nearest existing parent takes a new directory)."""
    if not path:
        return f"{what} is empty"
    if "\0" in path:
        return f"{what} {path!r} holds a NUL byte"
    try:
        if os.path.isdir(path):
            return f"{what} {path} is a directory (a file name is expected)"
        if os.path.exists(path):
            return None if os.access(path, os.W_OK) else f"{what} {path}: not writable"
        return _creatable_problem(path, what, "it")
    except OSError as e:
        return f"{what} {path}: {e.strerror or e}"


def built_stages():
    """The stage directories (NN_x/) whose ./run is built, in order."""
    found = sorted(d for d in os.listdir(ROOT) if STAGE_RE.match(d) and os.path.isdir(os.path.join(ROOT, d)))
    return [d for d in found if os.access(os.path.join(ROOT, d, "run"), os.X_OK)]


def shape_flag_problem(values):
    """The shared flag parser's refusal of the shape (b, h, s, d as strings), e.g. "--batch:
    99999999999 is out of range (expected 1 to 65535)", or None: the last built stage's
    --validate, which checks the flags and exits before any device is looked for (every stage
    shares the flag parser; the last ones start fastest: 01-03 load cuBLAS first). A refusal that
    is one stage's own (a head_dim it does not run) is not the shape's problem: None. No stage
    built: None (the stages will say it when they run)."""
    for stage in reversed(built_stages()):
        flags = [x for f, v in zip(["--batch", "--heads", "--seq", "--head-dim"], values)
                 for x in (f, str(v))]
        try:
            p = subprocess.run([os.path.join(ROOT, stage, "run"), "--validate"] + flags +
                               ["--trace", "none"], cwd=ROOT, capture_output=True, text=True,
                               timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        line = _last_line(p.stderr)
        return line if p.returncode == 2 and line.startswith("--") else None
    return None


def one_line_parser(die, hint):
    """An argparse.ArgumentParser subclass whose error() is die(f"{message} ({hint})") (one line,
    the script's prefix and exit status 2 are die's) instead of usage + error on two lines. Its
    sub-parsers are of the same class."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message):
            die(f"{message} ({hint})")

    return OneLineParser


def write_problem(path, text):
    """TEXT written into the file PATH (UTF-8): None, or why it could not be (a directory there,
    permissions, disk full) as one line."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    return None


# ---- the tables' units -----------------------------------------------------------------------

def human_bytes(n):
    """Device bytes in binary units: 0, 256 B, 12.0 KiB, 545.0 MiB, 1.29 GiB; "?" when n is not an
    integer."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        return "?"
    if n == 0:
        return "0"
    if n < 1024:
        return f"{n} B"
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    if n < 1024 ** 3:
        return f"{n / 1024 ** 2:.1f} MiB"
    return f"{n / 1024 ** 3:.2f} GiB"


def decimal_bytes(n):
    """Bytes moved, in the counters' decimal units: 512 B, 4.10 kB, 66.1 MB, 1.13 GB."""
    if n < 1e3:
        return f"{n:.0f} B"
    if n < 1e6:
        return f"{n / 1e3:.2f} kB"
    if n < 1e9:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e9:.2f} GB"


def flops_per_forward(r):
    """FlashAttention's convention, halved for causal (the stages' tflops=): 2·B·H·S²·D of the
    summary fields' shape, or None when it is not BxHxSxD."""
    m = SHAPE_RE.match(r.get("shape", ""))
    if not m:
        return None
    b, h, s, d = (int(x) for x in m.groups())
    return 2.0 * b * h * s * s * d


def shape_size_problem(shape):
    """A BxHxSxD shape whose FLOP count (flops_per_forward) overflows a float, e.g. 400-digit
    numbers in a hand-edited summary line: the reason as one line, or None (also for a shape
    that is not BxHxSxD: SHAPE_RE says that)."""
    try:
        flops_per_forward({"shape": shape})
    except OverflowError:
        return f"shape={shape[:40]}...: its numbers are too large (2·B·H·S²·D overflows a float)"
    return None


def traffic(r):
    """DRAM bytes per forward (dram_read + dram_write of the summary line: the counter pass's
    kernels plus the step's copies and memsets), or None without counters ("-", "off")."""
    try:
        t = float(int(r["dram_read"]) + int(r["dram_write"]))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return t if t > 0 else None


def intensity(r):
    """FLOP per DRAM byte of one forward, or None."""
    f, t = flops_per_forward(r), traffic(r)
    return f / t if f and t else None
