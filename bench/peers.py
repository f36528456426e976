#!/usr/bin/env python3
"""peers.py: our stages beside their PyTorch peers, same shapes, same timing, ratios.

    python3 bench/peers.py [--shapes 8x16x1024x64,4x16x2048x64,2x16x4096x128] [--out traces/peers.md]
    python3 bench/peers.py --sweep [--out traces/peers-sweep.md] [--json traces/peers-sweep.json]
    python3 bench/peers.py --sweep --list           the sweep's grid and time estimate; runs nothing
    python3 bench/peers.py --sweep --from FILE      a saved sweep's summary again; runs nothing

Runs on the GPU machine, where PyTorch is installed; elsewhere (no PyTorch, or no CUDA device)
it prints why on one line on stderr and exits 2, having run and written nothing. Pairs (README.md, "The course at a glance"; docs/pytorch-h200/):
    01_naive     <-> naive        the blog's module: Q@Kᵀ, * scale, masked_fill (out of place, the
                                  causal mask built once), softmax, @V
    02_inplace   <-> naive-inplace  the same with masked_fill_
    03_math      <-> SDPA math     F.scaled_dot_product_attention(is_causal=True) under
    04_efficient <-> SDPA efficient  torch.nn.attention.sdpa_kernel(SDPBackend.X)
    05_flash     <-> SDPA flash
    06_cudnn     <-> SDPA cuDNN
    07_hopper    <-> SDPA cuDNN    (the hand-written Hopper kernel against cuDNN's generated one)
Inputs are bf16 [batch, heads, seq, head_dim]. Our side is `./NN_x/run --quiet --trace none
--check-rows 64` at the shape; its summary line gives gpu_us and cpu_us. The peers are timed here
the way common/run.c times a stage: after 3 warm-up calls, CUDA events around 20 back-to-back calls
(the queue kept full), GPU time per call = elapsed / 20, median over 10 such batches (stopping after
3 once 2 s have passed, for slow calls); host time per call = median wall time of one call's
Python dispatch inside those batches (no synchronization inside a batch). The sdpa_kernel context
is entered once around all of a peer's calls. FLOPs = 4·B·H·S²·D / 2 (causal).
Prints one table per shape (flushed as it goes) and writes them to traces/peers.md.
Exit status: 0; 1 when one of our stages failed its run (check or CUDA error); 2 on bad flags
(--shapes outside the stages' limits, an --out that cannot be written, ATTN_SANITIZE other than
unset, 0 or 1), without PyTorch or without a CUDA device: one line on stderr. Bad input is
reported before PyTorch and the device are looked at.

--sweep: over the grid of bench/sweep.py (its doc: the shapes, why each, the time estimate),
07_hopper and 06_cudnn (run as above, without the counter and timeline passes, which do not touch
the timing) against SDPA cuDNN and SDPA flash (timed as above). Every side is checked: ours by its
own check (check=PASS in its summary line), each peer's output against a float64 reference on 64
sampled query rows (rel_l2 within 1e-2, the harness's default bound). One line per shape as it
finishes (each side's GPU µs and check, the ratios 07/cuDNN, 07/flash, 07/06, 06/cuDNN), then a
table and the geometric mean of each ratio, a ratio counting only where both sides passed. The
results are saved as JSON (--json, rewritten after each shape) and the table as Markdown (--out).
Exit status as above; 1 also when a peer fails its check. --sweep takes --out, --json,
--system-cudnn, --list, --from; not --shapes. --list and --from run nothing and take neither
--out nor --json (--from: nor --system-cudnn); --from's file must be a saved sweep (exit 2).
"""
import contextlib
import json
import math
import os
import subprocess
import sys
import time

import sweep
from benchlib import (ROOT, SHAPE_RE, file_problem, one_line_parser, sanitize_env_problem,
                      shape_flag_problem)

SHAPES = "8x16x1024x64,4x16x2048x64,2x16x4096x128"
PAIRS = [("01_naive", "naive"), ("02_inplace", "naive-inplace"), ("03_math", "SDPA math"),
         ("04_efficient", "SDPA efficient"), ("05_flash", "SDPA flash"), ("06_cudnn", "SDPA cuDNN"),
         ("07_hopper", "SDPA cuDNN")]
WARMUP, CALLS, BATCHES, MIN_BATCHES, BUDGET_S = 3, 20, 10, 3, 2.0   # as common/run.c
STAGE_TIMEOUT_S = 300


def say(*args):
    print(*args, flush=True)


def die(msg):
    """Bad input: one line on stderr, exit 2."""
    print(f"peers: {' '.join(str(msg).split())}", file=sys.stderr, flush=True)
    sys.exit(2)


# argparse with its errors on one line ("peers: ...", exit 2) instead of usage + error.
OneLineParser = one_line_parser(die, "bench/peers.py --help")


def flops(b, h, s, d):
    """FlashAttention's convention, 4·B·H·S²·D, halved for causal."""
    return 2.0 * b * h * s * s * d


# ---- our side --------------------------------------------------------------------------------

def ensure_built(stages=tuple(s for s, _ in PAIRS)):
    """Build missing stages once with `make all`; returns {stage: note} for those still missing."""
    missing = [s for s in stages if not os.access(os.path.join(ROOT, s, "run"), os.X_OK)]
    if missing:
        say(f"peers: {', '.join(missing)} not built: running make all")
        p = subprocess.run(["make", "-j", str(os.cpu_count() or 4), "all"], cwd=ROOT,
                           stdout=sys.stderr, stderr=sys.stderr)
        if p.returncode != 0:
            say(f"peers: make all failed (exit {p.returncode}); stages not built are skipped")
    return {s: f"./{s}/run not built (make {s})" for s in stages
            if not os.access(os.path.join(ROOT, s, "run"), os.X_OK)}


def torch_cudnn_dir():
    """The folder of the cuDNN PyTorch loads (pip's nvidia-cudnn wheel), or None. 06_cudnn runs
    against it so that both sides of the cuDNN pair use the same library: on the H200 machine the
    system cuDNN is 9.14 and PyTorch's 9.19, and 9.19's kernel is ~6% faster at 8x16x1024x64
    (63.4 -> 59.1 µs, measured), which is the library's gain, not ours."""
    try:
        import nvidia.cudnn  # noqa: F401  (the wheel PyTorch depends on)
    except ImportError:
        return None
    for base in getattr(nvidia.cudnn, "__path__", []):
        lib = os.path.join(base, "lib")
        if os.path.isdir(lib):
            return lib
    return None


def run_ours(stage, shape, cudnn_dir=None, extra=()):
    """(fields, note, failed): our stage's summary fields, or None and why; failed is True when
    the stage ran and failed (exit 1, a timeout), not when it refused the shape (exit 2).
    cudnn_dir: for 06_cudnn, load cuDNN from there (LD_LIBRARY_PATH) instead of the system's.
    extra: more flags for the stage."""
    b, h, s, d = shape
    cmd = [os.path.join(ROOT, stage, "run"), "--quiet", "--trace", "none", "--check-rows", "64",
           "--batch", str(b), "--heads", str(h), "--seq", str(s), "--head-dim", str(d)]
    cmd += list(extra)
    env = dict(os.environ)
    if cudnn_dir and stage == "06_cudnn":
        env["LD_LIBRARY_PATH"] = cudnn_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=STAGE_TIMEOUT_S,
                           env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {STAGE_TIMEOUT_S} s", True
    err = [x for x in p.stderr.splitlines() if x.strip()]
    msg = err[-1].strip() if err else ""
    lines = [x for x in p.stdout.splitlines() if x.startswith("result ")]
    if p.returncode == 2:
        return None, f"not supported: {msg}", False
    if p.returncode != 0 or not lines:
        return None, f"FAILED (exit {p.returncode}): {msg or 'no summary line'}", True
    fields = dict(tok.split("=", 1) for tok in lines[-1].split()[1:] if "=" in tok)
    return fields, "", False


# ---- the peers -------------------------------------------------------------------------------

def make_peers(torch, q, k, v):
    """{peer name: (forward with no arguments, context to enter around its calls)}."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    class NaiveCausalAttention(torch.nn.Module):
        """The blog's naive module: O = softmax(Q·Kᵀ·scale, masked by the causal mask)·V, every
        step a separate eager op; `inplace` applies the mask with masked_fill_ (04_b)."""

        def __init__(self, head_dim, inplace):
            super().__init__()
            self.scale = 1.0 / math.sqrt(head_dim)
            self.inplace = inplace

        def forward(self, q, k, v, mask):
            scores = torch.matmul(q, k.transpose(-2, -1))
            scores = scores * self.scale
            if self.inplace:
                scores.masked_fill_(mask, float("-inf"))
            else:
                scores = scores.masked_fill(mask, float("-inf"))
            return torch.matmul(torch.softmax(scores, dim=-1), v)

    seq, d = q.shape[-2], q.shape[-1]
    mask = torch.triu(torch.ones(seq, seq, device=q.device, dtype=torch.bool), diagonal=1)
    naive = NaiveCausalAttention(d, False).to(q.device, dtype=q.dtype).eval()
    inplace = NaiveCausalAttention(d, True).to(q.device, dtype=q.dtype).eval()

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return {
        "naive": (lambda: naive(q, k, v, mask), contextlib.nullcontext),
        "naive-inplace": (lambda: inplace(q, k, v, mask), contextlib.nullcontext),
        "SDPA math": (sdpa, lambda: sdpa_kernel(SDPBackend.MATH)),
        "SDPA efficient": (sdpa, lambda: sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)),
        "SDPA flash": (sdpa, lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)),
        "SDPA cuDNN": (sdpa, lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)),
    }


def time_peer(torch, fn):
    """(gpu_us, cpu_us, output): common/run.c's timing applied to fn (see the module doc)."""
    out = None
    for _ in range(WARMUP):
        out = fn()
    torch.cuda.synchronize()
    ev0 = torch.cuda.Event(enable_timing=True)
    ev1 = torch.cuda.Event(enable_timing=True)
    gpu, cpu = [], []
    start = time.perf_counter()
    b = 0
    while b < BATCHES and (b < MIN_BATCHES or time.perf_counter() - start < BUDGET_S):
        ev0.record()
        for _ in range(CALLS):
            t0 = time.perf_counter()
            fn()
            cpu.append((time.perf_counter() - t0) * 1e6)
        ev1.record()
        ev1.synchronize()
        gpu.append(ev0.elapsed_time(ev1) * 1e3 / CALLS)
        b += 1
    import statistics   # here: only a timed run needs it, not the checks before PyTorch
    return statistics.median(gpu), statistics.median(cpu), out


def rel_l2(torch, a, ref):
    a, ref = a.float(), ref.float()
    return (torch.linalg.vector_norm(a - ref) / torch.linalg.vector_norm(ref)).item()


# ---- tables ----------------------------------------------------------------------------------

HEAD = ["stage", "peer", "ours µs", "peer µs", "ours/peer", "our TFLOP/s", "peer TFLOP/s",
        "our host µs", "peer host µs"]


def row_cells(r, fl):
    ours, peer = r.get("gpu_us"), r.get("peer_gpu_us")

    def num(x, fmt="{:.1f}"):
        return fmt.format(x) if isinstance(x, float) else "-"

    return [r["stage"], r["peer"], num(ours), num(peer),
            num(ours / peer, "{:.2f}") if ours and peer else "-",
            num(fl / ours * 1e-6 if ours else None), num(fl / peer * 1e-6 if peer else None),
            num(r.get("cpu_us")), num(r.get("peer_cpu_us"))]


def text_table(rows, fl):
    body = [HEAD] + [row_cells(r, fl) for r in rows]
    w = [max(len(x[c]) for x in body) for c in range(len(HEAD))]
    lines = []
    for i, x in enumerate(body):
        lines.append("  ".join([x[0].ljust(w[0]), x[1].ljust(w[1])] +
                               [x[c].rjust(w[c]) for c in range(2, len(x))]))
        if i == 0:
            lines.append("-" * len(lines[0]))
    return lines + [f"{r['stage']}: {r['note']}" for r in rows if r.get("note")]


def md_table(rows, fl):
    out = ["| " + " | ".join(HEAD) + " |", "|:---|:---|" + "---:|" * (len(HEAD) - 2)]
    out += ["| " + " | ".join(row_cells(r, fl)) + " |" for r in rows]
    notes = [f"- {r['stage']}: {r['note']}" for r in rows if r.get("note")]
    return out + ([""] + notes if notes else [])


# ---- the sweep -------------------------------------------------------------------------------

SWEEP_CHECK_ROWS = 64
SWEEP_BOUND = 1e-2          # the harness's default rel_l2 bound (common/run.c)
SWEEP_STAGE_FLAGS = ("--no-counters", "--no-timeline")   # passes after the timing: not needed


def check_rows(torch, shape, n=SWEEP_CHECK_ROWS, seed=0):
    """n distinct (batch, head, row) triples: the first and the last row of the tensor, the rest
    drawn with a seeded generator (the same at every run)."""
    b, h, s, _ = shape
    total = b * h * s
    g = torch.Generator().manual_seed(seed)
    picks = {0, total - 1}
    while len(picks) < min(n, total):
        picks.add(int(torch.randint(total, (1,), generator=g).item()))
    return [(x // (h * s), x // s % h, x % s) for x in sorted(picks)]


def peer_check(torch, q, k, v, out, rows):
    """rel_l2 of out against a float64 causal-attention reference on the given rows:
    o_i = softmax(q_i · K[0..i]ᵀ / sqrt(D)) · V[0..i], each row on its own (no S materialized)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    got, want = [], []
    for b, h, i in rows:
        sc = (k[b, h, :i + 1].double() @ q[b, h, i].double()) * scale
        want.append(torch.softmax(sc, dim=0) @ v[b, h, :i + 1].double())
        got.append(out[b, h, i].double())
    got, want = torch.stack(got), torch.stack(want)
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def write_text(path, text):
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        die(f"cannot write {path}: {e.strerror or e}")


def main_sweep(a):
    """--sweep: --list, --from, or the run (flags already checked by flags_problem)."""
    if a.list:
        for line in sweep.list_lines():
            say(line)
        return 0
    if a.from_file is not None:
        doc, problem = sweep.load(a.from_file)
        if problem:
            die(f"--from {problem}")
        say(f"sweep: {doc.get('header', '')} (saved in {a.from_file})")
        for r in doc["shapes"]:
            say(sweep.shape_line(r))
        say("")
        for line in sweep.summary_lines(doc):
            say(line)
        return 1 if sweep.failed(doc) else 0
    problem = sanitize_env_problem("peers.py")
    if problem:
        die(problem)
    a.out = a.out if a.out is not None else os.path.join(ROOT, "traces", "peers-sweep.md")
    a.json = a.json if a.json is not None else os.path.join(ROOT, "traces", "peers-sweep.json")
    for path, flag in ((a.out, "--out"), (a.json, "--json")):
        problem = file_problem(path, flag)
        if problem:
            die(problem)
    if os.path.abspath(a.out) == os.path.abspath(a.json):
        die(f"--out and --json name the same file ({a.out})")
    torch = import_torch()
    if torch is None:
        return 2
    return run_sweep(torch, a)


def run_sweep(torch, a):
    """The sweep on the device: each shape of sweep.GRID, our two stages then the two peers."""
    missing = ensure_built(sweep.STAGES)
    dev = torch.cuda.get_device_name(0)
    cudnn_v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    cudnn_dir = None if a.system_cudnn else torch_cudnn_dir()
    ours_cudnn = (f"06_cudnn loads PyTorch's cuDNN ({cudnn_dir})" if cudnn_dir
                  else "06_cudnn uses the system cuDNN")
    header = (f"{dev}, PyTorch {torch.__version__}, cuDNN {cudnn_v}; {ours_cudnn}; GPU µs per "
              f"call with the queue kept full (median of batches of {CALLS}); peers checked on "
              f"{SWEEP_CHECK_ROWS} rows against float64 (rel_l2 <= {SWEEP_BOUND:g}).")
    say(f"sweep: {header}")
    doc = {"format": sweep.FORMAT, "header": header, "shapes": []}
    torch.manual_seed(0)
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"SDPA cuDNN": SDPBackend.CUDNN_ATTENTION, "SDPA flash": SDPBackend.FLASH_ATTENTION}
    for shape, _ in sweep.GRID:
        r = {"shape": sweep.name(shape)}
        for stage in sweep.STAGES:
            if stage in missing:
                r[stage] = {"note": missing[stage], "failed": True}
                continue
            fields, note, bad = run_ours(stage, shape, cudnn_dir, SWEEP_STAGE_FLAGS)
            if fields:
                r[stage] = {"gpu_us": float(fields["gpu_us"]), "cpu_us": float(fields["cpu_us"]),
                            "rel_l2": float(fields["rel_l2"]), "check": fields.get("check", "?"),
                            "note": ""}
            else:
                r[stage] = {"note": note, "failed": bad}
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        rows = check_rows(torch, shape)
        with torch.no_grad():
            for peer in sweep.PEERS:
                try:
                    with sdpa_kernel(backends[peer]):
                        gpu, cpu, out = time_peer(
                            torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                    err = peer_check(torch, q, k, v, out, rows)
                    ok = err <= SWEEP_BOUND            # False for NaN too
                    r[peer] = {"gpu_us": gpu, "cpu_us": cpu, "rel_l2": err,
                               "check": "PASS" if ok else "FAIL",
                               "note": "" if ok else f"rel_l2 {err:.2e} over {SWEEP_BOUND:g}"}
                    del out
                except RuntimeError as e:
                    r[peer] = {"note": f"not available: {str(e).splitlines()[0][:200]}"}
                torch.cuda.empty_cache()
        del q, k, v
        torch.cuda.empty_cache()
        doc["shapes"].append(r)
        say(sweep.shape_line(r))
        write_text(a.json, json.dumps(doc, indent=1) + "\n")
    say("")
    for line in sweep.summary_lines(doc):
        say(line)
    write_text(a.out, "\n".join(sweep.md_lines(doc)))
    say(f"\nsweep: wrote {a.out} and {a.json}")
    return 1 if sweep.failed(doc) else 0


# ---- main ------------------------------------------------------------------------------------

def parse_shapes(text):
    """The --shapes list as (b, h, s, d) tuples; a malformed or out-of-range entry: exit 2."""
    shapes = []
    for part in text.split(","):
        m = SHAPE_RE.match(part.strip().lower())
        if not m:
            die(f"--shapes: '{part}' is not BxHxSxD with positive integers")
        problem = shape_flag_problem(m.groups())   # the stages' own limits (common/cli.c)
        if problem:
            die(f"--shapes: '{part}': {problem}")
        shapes.append(tuple(int(x) for x in m.groups()))
    return shapes


def flags_problem(a):
    """Why the flags do not go together (one line), or None: the --sweep options without --sweep,
    --sweep with --shapes, --list or --from with flags for a run."""
    if not a.sweep:
        for flag, given in (("--list", a.list), ("--from", a.from_file is not None),
                            ("--json", a.json is not None)):
            if given:
                return f"{flag} is a --sweep option (bench/peers.py --help)"
        return None
    if a.shapes is not None:
        return ("--sweep runs its own grid of shapes (bench/peers.py --sweep --list); --shapes is "
                "for a run without --sweep")
    if a.list and a.from_file is not None:
        return "--sweep takes --list or --from, not both"
    mode = "--list" if a.list else "--from" if a.from_file is not None else None
    if mode:
        for flag, given in (("--out", a.out is not None), ("--json", a.json is not None),
                            ("--system-cudnn", a.system_cudnn)):
            if given:
                return f"--sweep {mode} runs nothing; it takes no {flag}"
    return None


def import_torch():
    """PyTorch with a CUDA device, or None after one line on stderr saying which is missing."""
    try:
        import torch
    except ImportError as e:
        print(f"peers: PyTorch is not installed here ({e}); bench/peers.py runs on the GPU machine "
              "where it is (pip install torch). Nothing to compare.", file=sys.stderr, flush=True)
        return None
    if not torch.cuda.is_available():
        print(f"peers: PyTorch {getattr(torch, '__version__', '?')} sees no CUDA device; "
              "bench/peers.py runs on the GPU machine. Nothing to compare.", file=sys.stderr,
              flush=True)
        return None
    return torch


def main(argv):
    ap = OneLineParser(prog="peers.py", description="Our stages beside their PyTorch peers.")
    ap.add_argument("--shapes", default=None, help=f"comma-separated BxHxSxD (default {SHAPES})")
    ap.add_argument("--system-cudnn", action="store_true",
                    help="run 06_cudnn against the system cuDNN instead of PyTorch's")
    ap.add_argument("--out", default=None,
                    help="Markdown tables (default traces/peers.md; with --sweep "
                         "traces/peers-sweep.md)")
    ap.add_argument("--sweep", action="store_true",
                    help="07_hopper and 06_cudnn against SDPA cuDNN and SDPA flash over a grid "
                         "of shapes (bench/sweep.py)")
    ap.add_argument("--list", action="store_true",
                    help="with --sweep: print the grid and its time estimate, run nothing")
    ap.add_argument("--from", dest="from_file", metavar="FILE",
                    help="with --sweep: print the summary of a saved sweep (its --json), run "
                         "nothing")
    ap.add_argument("--json", metavar="FILE",
                    help="with --sweep: the results saved as JSON (default "
                         "traces/peers-sweep.json)")
    a = ap.parse_args(argv)
    # bad input first, before PyTorch and the device are looked at
    problem = flags_problem(a)
    if problem:
        die(problem)
    if a.sweep:
        return main_sweep(a)
    problem = sanitize_env_problem("peers.py")
    if problem:
        die(problem)
    shapes = parse_shapes(a.shapes if a.shapes is not None else SHAPES)
    a.out = a.out if a.out is not None else os.path.join(ROOT, "traces", "peers.md")
    problem = file_problem(a.out, "--out")
    if problem:
        die(problem)

    torch = import_torch()
    if torch is None:
        return 2

    missing = ensure_built()
    dev = torch.cuda.get_device_name(0)
    cudnn_v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    cudnn_dir = None if a.system_cudnn else torch_cudnn_dir()
    ours_cudnn = (f"06_cudnn loads PyTorch's cuDNN ({cudnn_dir})" if cudnn_dir
                  else "06_cudnn uses the system cuDNN")
    header = (f"{dev}, PyTorch {torch.__version__}, cuDNN {cudnn_v}; {ours_cudnn}; GPU µs per "
              f"call with the queue kept full (median of batches of {CALLS}), host µs per call "
              "(median).")
    say(f"peers: {header}")
    md = ["# Our stages beside their PyTorch peers", "",
          f"{header} Ratio = ours / peer (below 1: ours is faster). FLOPs 4·B·H·S²·D/2.", ""]
    failed = False
    torch.manual_seed(0)
    for shape in shapes:
        b, h, s, d = shape
        name = "x".join(map(str, shape))
        fl = flops(*shape)
        rows = []
        say(f"\npeers: {name} (batch x heads x seq x head_dim)")
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        peers = make_peers(torch, q, k, v)
        ref = None
        with torch.no_grad():
            for stage, peer in PAIRS:
                r = {"stage": stage, "peer": peer}
                notes = []
                if stage in missing:
                    notes.append(missing[stage])
                else:
                    fields, note, bad = run_ours(stage, shape, cudnn_dir)
                    failed |= bad
                    if fields:
                        r["gpu_us"], r["cpu_us"] = float(fields["gpu_us"]), float(fields["cpu_us"])
                    else:
                        notes.append(f"ours {note}")
                fn, ctx = peers[peer]
                try:
                    with ctx():
                        r["peer_gpu_us"], r["peer_cpu_us"], out = time_peer(torch, fn)
                    if ref is None:
                        ref = out              # the naive peer: the check for the others
                    else:
                        err = rel_l2(torch, out, ref)
                        if not err <= 2e-2:
                            notes.append(f"peer {peer} differs from naive: rel_l2 {err:.2e}")
                except RuntimeError as e:
                    notes.append(f"peer {peer} not available: {str(e).splitlines()[0][:200]}")
                torch.cuda.empty_cache()
                r["note"] = "; ".join(notes)
                rows.append(r)
                c = row_cells(r, fl)
                say(f"peers: {name} {stage}: ours {c[2]} µs, {peer} {c[3]} µs, ratio {c[4]}"
                    + (f" ({r['note']})" if r["note"] else ""))
        del q, k, v, peers, ref
        torch.cuda.empty_cache()
        say("")
        for line in text_table(rows, fl):
            say(line)
        md += [f"## {name}", ""] + md_table(rows, fl) + [""]
    try:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as f:
            f.write("\n".join(md))
    except OSError as e:
        die(f"cannot write {a.out}: {e.strerror or e}")
    say(f"\npeers: wrote {a.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
