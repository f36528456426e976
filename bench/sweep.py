"""sweep.py: the grid of `bench/peers.py --sweep`, its time estimate, and the arithmetic and text of
its summary (ratios, geometric means), apart from any device so that they can be tested anywhere.

The grid covers the shapes users run (bf16 [batch, heads, seq, head_dim], causal): seq 512 to
16384, head_dim 64 and 128, batch x heads from 1 to 512, grids of fewer query tiles than the
H200's 132 SMs (one tile = 128 query rows, 07_hopper's block), and seq that is not a multiple of
the tile. At each shape 07_hopper and 06_cudnn run (their own check and timing) and PyTorch's SDPA
cuDNN and SDPA flash are timed the same way and checked against a float64 reference on sampled
rows (peers.py).

Time estimate (`--sweep --list`): at each shape a call takes t = FLOPs / rate, for a rate of
600 TFLOP/s (fast) and 300 TFLOP/s (slow); each of the four sides is timed as common/run.c does
(3 warm-ups, then batches of 20 calls, 10 batches, or 3 once 2 s have passed); each of our two
stage runs adds about 2 s of process overhead (start-up, inputs generated on the host, the
check, the plan build) and 8 more calls (the checked one, the profiler's 5 steps, 2 spare). The
once-per-sweep start of PyTorch is not in it.

Saved results (JSON, what `--sweep` writes and `--sweep --from FILE` reads back):
    {"format": "peers-sweep 1", "header": "<device, versions>",
     "shapes": [{"shape": "8x16x1024x64",
                 "07_hopper": {"gpu_us": 55.1, "cpu_us": 4.8, "check": "PASS", "note": ""},
                 "06_cudnn": {...}, "SDPA cuDNN": {...}, "SDPA flash": {...}}, ...]}
A side that did not run has no gpu_us and says why in note; check is PASS or FAIL when it ran.
Python 3 standard library only.
"""
import json
import math

from benchlib import SHAPE_RE

# (batch, heads, seq, head_dim), in the order they run; why each is there, for the listing.
GRID = [
    ((1, 1, 512, 64), "one head, short: launch and host cost"),
    ((32, 16, 512, 64), "batch x heads 512, short"),
    ((8, 16, 1024, 64), "the blog's shape"),
    ((8, 16, 1023, 64), "odd seq: a last tile of 127 rows"),
    ((4, 16, 2048, 64), "bench shape"),
    ((1, 1, 4096, 64), "32 query tiles: grid below the SM count"),
    ((8, 12, 1024, 64), "12 heads of 64 (BERT-base, GPT-2 small)"),
    ((4, 16, 6000, 64), "odd seq, long: a last tile of 112 rows"),
    ((2, 16, 8192, 64), "long"),
    ((1, 8, 16384, 64), "longest"),
    ((1, 4, 512, 128), "16 query tiles: grid below the SM count"),
    ((16, 32, 512, 128), "batch x heads 512, short"),
    ((4, 32, 1024, 128), "32 heads"),
    ((1, 4, 2048, 128), "64 query tiles: grid below the SM count"),
    ((2, 16, 3001, 128), "odd seq: a last tile of 57 rows"),
    ((2, 16, 4096, 128), "bench shape"),
    ((1, 32, 4096, 128), "32 heads of 128 (a 7B model's prefill)"),
    ((1, 16, 8192, 128), "long"),
    ((1, 16, 16384, 128), "longest"),
    ((1, 1, 16384, 128), "one head, longest: 128 query tiles, below the SM count"),
]
STAGES = ["07_hopper", "06_cudnn"]
PEERS = ["SDPA cuDNN", "SDPA flash"]
SIDES = STAGES + PEERS
SHORT = {"07_hopper": "07", "06_cudnn": "06", "SDPA cuDNN": "cuDNN", "SDPA flash": "flash"}
# (name, numerator, denominator): the ratios printed at each shape, below 1 = the numerator faster
RATIOS = [("07/cuDNN", "07_hopper", "SDPA cuDNN"), ("07/flash", "07_hopper", "SDPA flash"),
          ("07/06", "07_hopper", "06_cudnn"), ("06/cuDNN", "06_cudnn", "SDPA cuDNN")]
GOAL = 0.85            # the geometric mean 07 aims at, against SDPA cuDNN and against 06_cudnn
H200_SMS = 132
BLOCK_M = 128          # query rows per tile (07_hopper)
FAST_TFLOPS, SLOW_TFLOPS = 600.0, 300.0
STAGE_OVERHEAD_S = 2.0
STAGE_EXTRA_CALLS = 8
WARMUP, CALLS, BATCHES, MIN_BATCHES, BUDGET_S = 3, 20, 10, 3, 2.0   # as common/run.c
FORMAT = "peers-sweep 1"


def name(shape):
    return "x".join(str(x) for x in shape)


def flops(b, h, s, d):
    """FlashAttention's convention, 4·B·H·S²·D, halved for causal."""
    return 2.0 * b * h * s * s * d


def query_tiles(b, h, s, d):
    """Blocks of a one-tile-per-block grid: batch x heads x ceil(seq / 128)."""
    return b * h * ((s + BLOCK_M - 1) // BLOCK_M)


def timed_s(t):
    """Seconds common/run.c's timing takes for a call of t seconds (see the module doc)."""
    b = 0
    while b < BATCHES and (b < MIN_BATCHES or b * CALLS * t < BUDGET_S):
        b += 1
    return (WARMUP + b * CALLS) * t


def estimate_s(shape, tflops):
    """The sweep's seconds at one shape when every side runs at tflops (module doc)."""
    t = flops(*shape) / (tflops * 1e12)
    ours = STAGE_OVERHEAD_S + STAGE_EXTRA_CALLS * t + timed_s(t)
    return len(STAGES) * ours + len(PEERS) * timed_s(t)


def list_lines(grid=GRID):
    """The `--sweep --list` text: one line per shape, then the total estimate."""
    head = ["shape", "GFLOP", "query tiles", "est. s", "why"]
    rows = []
    for shape, why in grid:
        tiles = query_tiles(*shape)
        rows.append([name(shape), f"{flops(*shape) * 1e-9:.1f}",
                     f"{tiles}" + (" < SMs" if tiles < H200_SMS else ""),
                     f"{estimate_s(shape, FAST_TFLOPS):.1f}-{estimate_s(shape, SLOW_TFLOPS):.1f}",
                     why])
    fast = sum(estimate_s(s, FAST_TFLOPS) for s, _ in grid)
    slow = sum(estimate_s(s, SLOW_TFLOPS) for s, _ in grid)
    lines = [f"sweep: {len(grid)} shapes (batch x heads x seq x head_dim, bf16, causal); at each "
             f"{', '.join(STAGES)} against {', '.join(PEERS)}; query tiles of {BLOCK_M} rows "
             f"against the H200's {H200_SMS} SMs"]
    lines += table(head, rows, left=(0, 4))
    lines.append(f"sweep: estimate {fast:.0f}-{slow:.0f} s (at most {slow / 60:.1f} min) "
                 f"at {FAST_TFLOPS:.0f}-{SLOW_TFLOPS:.0f} TFLOP/s plus {STAGE_OVERHEAD_S:.0f} s "
                 "per stage run, PyTorch's start not included")
    return lines


def table(head, rows, left=(0,)):
    """Aligned text: columns in left are left-aligned, the others right-aligned."""
    body = [head] + rows
    w = [max(len(r[c]) for r in body) for c in range(len(head))]
    out = []
    for i, r in enumerate(body):
        out.append("  ".join(r[c].ljust(w[c]) if c in left else r[c].rjust(w[c])
                             for c in range(len(head))).rstrip())
        if i == 0:
            out.append("-" * len(out[0]))
    return out


# ---- results ---------------------------------------------------------------------------------

def results_problem(doc):
    """Why doc (parsed JSON) is not a saved sweep, or None."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return f"not a saved sweep (expected \"format\": \"{FORMAT}\")"
    shapes = doc.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        return "no \"shapes\" list (or an empty one)"
    for i, r in enumerate(shapes):
        if not isinstance(r, dict) or not isinstance(r.get("shape"), str):
            return f"shapes[{i}]: no \"shape\""
        if not SHAPE_RE.match(r["shape"]) or not positive_number(shape_flops(r["shape"])):
            return f"shapes[{i}]: shape {r['shape'][:40]!r} is not BxHxSxD with positive integers"
        for side in SIDES:
            e = r.get(side)
            if not isinstance(e, dict):
                return f"{r['shape']}: no \"{side}\" entry"
            us = e.get("gpu_us")
            if us is not None and not positive_number(us):
                return f"{r['shape']}: {side}: gpu_us {repr(us)[:40]} is not a positive number"
            if us is not None and e.get("check") not in ("PASS", "FAIL"):
                return f"{r['shape']}: {side}: check {e.get('check')!r} is not PASS or FAIL"
    return None


def shape_flops(text):
    """flops() of a BxHxSxD text, or None where it is not one or its FLOPs overflow a float."""
    m = SHAPE_RE.match(text)
    try:
        return flops(*(int(x) for x in m.groups())) if m else None
    except OverflowError:
        return None


def positive_number(x):
    """True for a JSON number that is a finite float > 0 (not a bool, NaN, inf, or an integer too
    large for a float)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        v = float(x)
    except OverflowError:
        return False
    return v > 0 and not math.isinf(v)


def load(path):
    """(doc, problem): a saved sweep read from path, or None and why (one line)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"
    except ValueError as e:          # not JSON, not UTF-8, a NUL in the path
        return None, f"{path}: not JSON ({e})"
    except RecursionError:
        return None, f"{path}: not JSON (nested too deeply)"
    problem = results_problem(doc)
    return (None, f"{path}: {problem}") if problem else (doc, None)


def ok_us(entry):
    """The side's GPU µs when it ran and passed its check, else None."""
    return entry.get("gpu_us") if entry.get("check") == "PASS" else None


def ratio(r, num, den):
    a, b = ok_us(r[num]), ok_us(r[den])
    return a / b if a and b else None


def countable(x):
    """True for a ratio a geometric mean can take: finite and > 0 (not None, not a ratio that
    underflowed to 0 or overflowed to inf, e.g. gpu_us 1e-300 over 1e300)."""
    return x is not None and math.isfinite(x) and x > 0


def geomean(xs):
    """exp(mean(log x)) of the finite positive ratios in xs (countable(); None, 0, inf and NaN
    skipped); None when there are none. The "(k/n)" and "over k of n" counts use the same test."""
    xs = [x for x in xs if countable(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def failed(doc):
    """True when a side ran and failed its check, or one of our stages failed to run."""
    return any(r[s].get("check") == "FAIL" or r[s].get("failed") for r in doc["shapes"]
               for s in SIDES)


def shape_line(r):
    """The line printed as each shape finishes: every side's µs and check, then the ratios."""
    parts = []
    for side in SIDES:
        e = r[side]
        us = e.get("gpu_us")
        parts.append(f"{side} {us:.1f} µs {e.get('check')}" if us is not None
                     else f"{side} - ({e.get('note') or 'did not run'})")
    parts += [f"{n} {fmt(ratio(r, a, b))}" for n, a, b in RATIOS]
    return f"sweep: {r['shape']}: " + ", ".join(parts)


def fmt(x, spec="{:.2f}"):
    return spec.format(x) if x is not None else "-"


def summary_rows(doc):
    """(head, rows): the summary table, one row per shape then the geometric means."""
    head = (["shape"] + [f"{SHORT[s]} µs" for s in SIDES]
            + [n for n, _, _ in RATIOS] + ["07 TFLOP/s", "checks"])
    rows = []
    for r in doc["shapes"]:
        dims = [int(x) for x in r["shape"].split("x")]
        us7 = ok_us(r["07_hopper"])
        checks = [r[s].get("check") for s in SIDES if r[s].get("gpu_us") is not None]
        rows.append([r["shape"]] + [fmt(r[s].get("gpu_us"), "{:.1f}") for s in SIDES]
                    + [fmt(ratio(r, a, b)) for _, a, b in RATIOS]
                    + [fmt(flops(*dims) / us7 * 1e-6 if us7 else None, "{:.0f}"),
                       f"{checks.count('PASS')}/{len(SIDES)} PASS"])
    n = len(doc["shapes"])
    gm = []
    for _, a, b in RATIOS:
        xs = [ratio(r, a, b) for r in doc["shapes"]]
        k = sum(countable(x) for x in xs)
        gm.append(fmt(geomean(xs)) + (f" ({k}/{n})" if k < n else ""))
    rows.append(["geomean"] + [""] * len(SIDES) + gm + ["", ""])
    return head, rows


def summary_lines(doc):
    """The summary printed at the end of a sweep (and by --from): the table, then the goal lines."""
    head, rows = summary_rows(doc)
    lines = table(head, rows)
    n = len(doc["shapes"])
    for label, den in (("SDPA cuDNN", "SDPA cuDNN"), ("06_cudnn", "06_cudnn")):
        xs = [ratio(r, "07_hopper", den) for r in doc["shapes"]]
        k = sum(countable(x) for x in xs)
        at_or_below = sum(countable(x) and x <= 1.0 for x in xs)
        g = geomean(xs)
        lines.append(f"sweep: 07_hopper against {label}: geometric mean {fmt(g)} over {k} of {n} "
                     f"shapes (goal <= {GOAL:.2f}); at or below 1.00 at {at_or_below} of {n}")
    return lines


def md_lines(doc):
    """The summary as a Markdown table, with the notes of sides that did not run."""
    head, rows = summary_rows(doc)
    out = ["# bench/peers.py --sweep", "", doc.get("header", ""), "",
           "Ratio = first / second, GPU µs per call (below 1: the first is faster); a ratio needs "
           "both sides checked (check=PASS).", "",
           "| " + " | ".join(head) + " |", "|:---|" + "---:|" * (len(head) - 1)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += [""] + summary_lines(doc)[-2:]
    notes = [f"- {r['shape']} {s}: {r[s]['note']}" for r in doc["shapes"] for s in SIDES
             if r[s].get("note")]
    return out + ([""] + notes if notes else []) + [""]
