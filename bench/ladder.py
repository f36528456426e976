#!/usr/bin/env python3
"""ladder.py: chapter 07's ladder table, every rung of ./07_hopper/run at one shape.

    bench/ladder.py run [--shape BxHxSxD] [--outdir DIR]   (what `make ladder` runs; needs a Hopper GPU)
    bench/ladder.py render SUMMARY_FILE OUTDIR              (renders saved lines; CPU only)

`run` runs ./07_hopper/run --rung N for every rung in --help (default shape: the blog's
8x16x1024x64), with the counter pass, and keeps for each rung its lines in
OUTDIR/ladder_<shape>.txt (default OUTDIR: 07_hopper/ladder, where the chapter reads it), then
renders them like `render`: the table on stdout and OUTDIR/ladder_<shape>.md.
Columns: rung, idea, GPU us and TFLOP/s (the summary line), registers at launch and shared
memory (the kernel details line), DRAM read per forward, achieved occupancy, tensor pipe active %
and GMMA instructions (the counter pass's `counters:` line; `-` without counters).

The summary file holds, per rung, in this order (other lines are ignored):
    rung N IDEA                                  (from --help)
    the rung's kernel details line                "  flash3_...(flash3_params): grid ..."
    its counters line                             "    counters: DRAM read ..."
    its summary line                              "result stage=07_hopper ..."
  or, for a rung that refused the shape:
    unsupported rung=N message=ONE LINE
Exit status: 0; 1 when a rung failed; 2 on bad input (a flag argparse refuses, a --shape the
stage refuses, an OUTDIR that cannot be created or written, a SUMMARY_FILE that cannot be read or
whose summary line has no BxHxSxD shape, or whose rungs' summary lines name different shapes)
or no GPU: one line on stderr, nothing written; `run` reports bad input before any rung runs.
Python 3 standard library only.
"""
import os
import re
import subprocess
import sys

from benchlib import ROOT, SHAPE_RE, dir_problem, one_line_parser, write_problem

BLOG_SHAPE = "8x16x1024x64"
RUN = os.path.join(ROOT, "07_hopper", "run")
HELP_RUNG_RE = re.compile(r"^\s+([1-9][0-9]*)\s+(\S.*?)\s{2,}([0-9, ]+)$")
DETAILS_RE = re.compile(r"^\s+(flash3_\w+)\(flash3_params\): .*?(\d+) registers/thread, "
                        r"shared memory (\d+) \+ (\d+) B")
DRAM_RE = re.compile(r"DRAM read ([0-9.]+ [kMGT]?B)")
ACHIEVED_RE = re.compile(r"achieved occupancy (\S+)")
TENSOR_RE = re.compile(r"tensor pipe (\S+) active")
GMMA_RE = re.compile(r"([0-9,]+) GMMA")
RUNG_TIMEOUT_S = 600


def die(msg, code=2):
    """One line on stderr, then exit (2: bad input or no device)."""
    print(f"ladder: {' '.join(str(msg).split())}", file=sys.stderr, flush=True)
    sys.exit(code)


# argparse with its errors on one line ("ladder: ...", exit 2) instead of usage + error.
OneLineParser = one_line_parser(die, "bench/ladder.py --help")


def write_file(path, text):
    """TEXT into PATH; a failure (disk full, permissions) is one line, exit 2."""
    problem = write_problem(path, text)
    if problem:
        die(problem)


def make_outdir(outdir, what):
    """OUTDIR checked (benchlib.dir_problem) and created; a problem is one line, exit 2."""
    problem = dir_problem(outdir, what)
    if problem:
        die(problem)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        die(f"cannot create {outdir}: {e.strerror or e}")


def fields(line):
    """key=value fields of a summary line."""
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def parse(lines):
    """Rows (dicts) of a summary file, one per rung, in rung order."""
    rows, cur = [], None
    for raw in lines:
        line = raw.rstrip("\n")
        m = re.match(r"^rung ([1-9][0-9]*) (.*)$", line)
        if m:
            cur = {"rung": m.group(1), "idea": m.group(2).strip()}
            rows.append(cur)
            continue
        m = re.match(r"^unsupported rung=([1-9][0-9]*) message=(.*)$", line)
        if m:
            for r in rows:
                if r["rung"] == m.group(1):
                    r["message"] = m.group(2)
            continue
        if cur is None:
            continue
        m = DETAILS_RE.match(line)
        if m:
            cur.update(kernel=m.group(1), regs=m.group(2), smem=int(m.group(3)) + int(m.group(4)))
        elif line.lstrip().startswith("counters") and not cur.get("counters_seen"):
            # the rung's forward kernel's counters: the first counters line after its details
            # (a splitting rung's combine kernel has its own line after it); a value the line
            # does not give stays "-", never the combine kernel's
            cur["counters_seen"] = True
            for key, rx in (("dram", DRAM_RE), ("achieved", ACHIEVED_RE), ("tensor", TENSOR_RE), ("gmma", GMMA_RE)):
                mm = rx.search(line)
                if mm:
                    cur[key] = mm.group(1)
        elif line.startswith("result "):
            if cur.get("has_result"):
                die(f"rung {cur['rung']} has two summary lines ('result ...'): one run per rung")
            cur.update(fields(line), has_result=True)
    return rows


def cell(text):
    """Text as one Markdown table cell: a '|' inside it escaped, so it is not a column break."""
    return str(text).replace("|", "\\|")


def table(rows):
    """The ladder as Markdown (the same text goes to stdout)."""
    shape = next((r["shape"] for r in rows if "shape" in r), "-")
    out = [f"07_hopper ladder at {shape} (`make ladder SHAPE={shape}`)", "",
           "| rung | idea | GPU µs | TFLOP/s | registers | shared memory (B) | DRAM read "
           "| achieved occupancy | tensor pipe | GMMA instructions |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "message" in r:
            out.append(f"| {r['rung']} | {cell(r['idea'])} | {cell(r['message'])} | | | | | | | |")
            continue
        cells = [r["rung"], r["idea"], r.get("gpu_us", "-"), r.get("tflops", "-"),
                 r.get("regs", "-"), str(r.get("smem", "-")), r.get("dram", "-"), r.get("achieved", "-"),
                 r.get("tensor", "-"), r.get("gmma", "-")]
        out.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def render(lines, outdir):
    """Print the table; write OUTDIR/ladder_<shape>.md when a rung has a summary line."""
    rows = parse(lines)
    if not rows:
        die("no rung lines ('rung N IDEA') to render")
    for r in rows:
        if r.get("has_result") and "shape" not in r:
            die(f"rung {r['rung']}'s summary line has no shape= (BxHxSxD)")
    shapes = sorted({r["shape"] for r in rows if "shape" in r})
    if len(shapes) > 1:
        die(f"the rungs' summary lines name different shapes ({', '.join(x[:40] for x in shapes)}): "
            "one ladder is one shape")
    shape = shapes[0] if shapes else None
    if shape is not None and not SHAPE_RE.match(shape):
        die(f"a summary line's shape={shape[:40]} is not BxHxSxD with positive integers")
    if shape:
        make_outdir(outdir, "OUTDIR")
    text = table(rows)
    if shape:
        write_file(os.path.join(outdir, f"ladder_{shape}.md"), text)
    sys.stdout.write(text)


def rungs():
    """(number, idea) of every rung, from ./07_hopper/run --help."""
    try:
        p = subprocess.run([RUN, "--help"], capture_output=True, text=True, timeout=30)
    except OSError:
        die(f"{RUN} is not built (make 07_hopper)")
    except subprocess.TimeoutExpired:
        die("./07_hopper/run --help did not answer in 30 s")
    found = [(m.group(1), m.group(2)) for m in map(HELP_RUNG_RE.match, p.stdout.splitlines()) if m]
    if not found:
        die("./07_hopper/run --help lists no rungs")
    return found


def run(shape, outdir):
    if not SHAPE_RE.match(shape):
        die(f"--shape {shape!r} is not BxHxSxD with positive integers (e.g. {BLOG_SHAPE})")
    problem = dir_problem(outdir, "--outdir")
    if problem:
        die(problem)
    b, h, s, d = SHAPE_RE.match(shape).groups()
    # the stage's own input check first (no device needed): a shape no rung runs is refused
    # with the stage's one line, before anything runs or is written
    try:
        v = subprocess.run([RUN, "--validate", "--batch", b, "--heads", h, "--seq", s,
                            "--head-dim", d], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        die(f"{RUN} is not built (make 07_hopper)")
    except subprocess.TimeoutExpired:
        die("./07_hopper/run --validate did not answer in 30 s")
    if v.returncode != 0:
        err = [x for x in v.stderr.splitlines() if x.strip()]
        die(err[-1] if err else f"./07_hopper/run --validate exited {v.returncode}")
    lines, failed = [], False
    for n, idea in rungs():
        lines.append(f"rung {n} {idea}")
        cmd = [RUN, "--rung", n, "--batch", b, "--heads", h, "--seq", s, "--head-dim", d,
               "--trace", "none"]
        try:
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=RUNG_TIMEOUT_S)
            rc, out, err = p.returncode, p.stdout, [x for x in p.stderr.splitlines() if x.strip()]
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", [f"timed out after {RUNG_TIMEOUT_S} s"]
        if rc == 2:
            msg = err[-1] if err else "(no message)"
            if msg.startswith("no CUDA device"):
                die(msg)
            lines.append(f"unsupported rung={n} message={msg}")
            continue
        keep = [x for x in out.splitlines()
                if DETAILS_RE.match(x) or x.lstrip().startswith("counters") or x.startswith("result ")]
        lines.extend(keep)
        if rc != 0:
            failed = True
            print(f"ladder: rung {n} failed (exit {rc}): {err[-1] if err else ''}",
                  file=sys.stderr)
    if not any(x.startswith("result ") for x in lines):
        die(f"no rung of ./07_hopper/run ran {shape}")
    make_outdir(outdir, "--outdir")
    write_file(os.path.join(outdir, f"ladder_{shape}.txt"), "\n".join(lines) + "\n")
    render(lines, outdir)
    return 1 if failed else 0


def main():
    ap = OneLineParser(prog="ladder.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--shape", default=BLOG_SHAPE)
    r.add_argument("--outdir", default=os.path.join(ROOT, "07_hopper", "ladder"))
    rd = sub.add_parser("render")
    rd.add_argument("summary")
    rd.add_argument("outdir")
    a = ap.parse_args()
    if a.cmd == "run":
        sys.exit(run(a.shape, a.outdir))
    try:
        with open(a.summary, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        die(f"cannot read {a.summary}: {e.strerror or e}")
    except UnicodeDecodeError:
        die(f"cannot read {a.summary}: not a UTF-8 text file (summary lines expected)")
    except ValueError as e:   # a NUL in the path
        die(f"cannot read {a.summary!r}: {e}")
    render(lines, a.outdir)


if __name__ == "__main__":
    main()
