#!/usr/bin/env python3
"""render.py: every number table of the course, rendered from one results file.

    python3 bench/render.py [--check] [--results FILE] [--root DIR]
    python3 bench/render.py collect RUNDIR        (bench/reference_runs.sh: writes RUNDIR/results.txt)

The results file (default docs/h200/results.txt) holds measured runs: a `run` line per run (date,
GPU, driver, library versions), the stages' `result ...` summary lines (README.md, "What a run
prints") and `peers ...` lines (bench/peers.py: ours beside PyTorch at one shape). Every other
line is a comment. With one run line, every line belongs to it. With more, each run line has a
unique `id=ID` and each result and peers line says `run=ID`; a line naming no run or an unknown
one, a run no line names, or two lines for the same stage and shape of one kind is bad input.

The Markdown files (README.md, NN_x/README.md, docs/*.md) hold markers; what lies between a
marker and the next `<!-- end -->` is rewritten:

    <!-- results:compare 8x16x1024x64 -->   ...  <!-- end -->   the course table at one shape
    <!-- results:peers -->                  ...  <!-- end -->   ours / peer µs and ratio, every shape
    <!-- results:run [ID] -->               ...  <!-- end -->   where and with what it was measured
                                                                  (every run, or run ID alone)
    <!-- results:value STAGE SHAPE FIELD -->X<!-- end -->        one field of a summary line (or
                                                                  dram_bytes, flop_per_byte: as the
                                                                  course table prints them)
    <!-- results:peer STAGE SHAPE FIELD -->X<!-- end -->         ours_us, peer_us or ratio

A marker whose text starts with a newline is a block (a table, on lines of its own); one on a
single line is a value inside prose. `--check` rewrites nothing: it names every marker whose
text differs from the file's numbers and exits 1 (0 when all agree). `collect` reads the
outputs of bench/reference_runs.sh (RUNDIR/NN_x.txt, RUNDIR/shapes/*.txt, RUNDIR/peers.md,
RUNDIR/run.txt) and writes RUNDIR/results.txt. Bad input (a missing or unreadable file, a page or
RUNDIR/results.txt that cannot be written, an empty --results, a result or peers line whose
shape is not BxHxSxD or too large for its FLOP count or a peers line without its numbers, a
marker that names a stage, shape or field the results file lacks, an unknown kind, a flag
argparse refuses): one line on stderr, exit 2. `collect --help` prints its usage. The table
units are bench/compare.py's (benchlib.py). Python 3 standard library only.
"""
import glob
import os
import re
import shlex
import sys

from benchlib import (ROOT, SHAPE_RE, decimal_bytes, human_bytes, intensity, one_line_parser,
                      shape_size_problem, traffic, write_problem)

RESULTS = os.path.join("docs", "h200", "results.txt")
MARKER = re.compile(r"<!-- results:([^>]*?) -->(.*?)<!-- end -->", re.S)
SHAPES = ["8x16x1024x64", "4x16x2048x64", "2x16x4096x128"]
PEER_NAMES = {"naive": "naive module", "naive-inplace": "naive, `masked_fill_`",
              "SDPA math": "SDPA math", "SDPA efficient": "SDPA efficient (cutlassF)",
              "SDPA flash": "SDPA flash (FlashAttention-2)", "SDPA cuDNN": "SDPA cuDNN"}


PEERS_FIELDS = ("peer", "ours_us", "peer_us", "ratio")   # what the peers table prints


class Bad(Exception):
    """Bad input: main prints it on one line and exits 2."""


def die(msg):
    """Bad input: one line on stderr, exit 2."""
    print(f"render: {' '.join(str(msg).split())}", file=sys.stderr, flush=True)
    sys.exit(2)


# argparse with its errors on one line ("render: ...", exit 2) instead of usage + error.
OneLineParser = one_line_parser(die, "bench/render.py --help")


def read_text(path, errors="strict"):
    """The text of PATH; an unreadable file (missing, a directory, not UTF-8) is Bad."""
    try:
        with open(path, encoding="utf-8", errors=errors) as f:
            return f.read()
    except OSError as e:
        raise Bad(f"cannot read {path}: {e.strerror or e}")
    except UnicodeDecodeError:
        raise Bad(f"cannot read {path}: not a UTF-8 text file")
    except ValueError as e:          # a NUL in the path
        raise Bad(f"cannot read {path!r}: {e}")


def write_text(path, text):
    """TEXT into PATH; a failure (a directory there, permissions, disk full) is Bad."""
    problem = write_problem(path, text)
    if problem:
        raise Bad(problem)


# ---- the results file ------------------------------------------------------------------------

def fields_of(rest):
    """key=value pairs of a line (values may be quoted: gpu="NVIDIA H200")."""
    out = {}
    for tok in shlex.split(rest):
        key, eq, val = tok.partition("=")
        if eq:
            out[key] = val
    return out


def load(path):
    """{'runs': {id: {...}}, 'result': {(stage, shape): {...}}, 'peers': {(stage, shape): {...}}}.

    Each result and peers line gets its run's id in its 'run' field ('' for a lone run line
    without an id)."""
    lines = read_text(path).splitlines()
    res = {"runs": {}, "result": {}, "peers": {}}
    where = {}                                    # (kind, stage, shape) or run id -> line number
    for n, line in enumerate(lines, 1):
        kind, _, rest = line.partition(" ")
        if kind not in ("run", "result", "peers"):
            continue
        try:
            f = fields_of(rest)
        except ValueError as e:
            raise Bad(f"{path}:{n}: {e}")
        if kind == "run":
            rid = f.get("id", "")
            if rid in res["runs"]:
                raise Bad(f"{path}:{n}: a second run line with id={rid!r} (line {where[rid]} has it)")
            res["runs"][rid], where[rid] = f, n
        elif "stage" in f and "shape" in f:
            if not SHAPE_RE.match(f["shape"]):
                raise Bad(f"{path}:{n}: shape={f['shape'][:40]} is not BxHxSxD with positive integers")
            if shape_size_problem(f["shape"]):
                raise Bad(f"{path}:{n}: {shape_size_problem(f['shape'])}")
            missing = [x for x in PEERS_FIELDS if x not in f] if kind == "peers" else []
            if missing:
                raise Bad(f"{path}:{n}: a peers line needs {'=, '.join(missing)}=")
            key = (kind, f["stage"], f["shape"])
            if key in where:
                raise Bad(f"{path}:{n}: a second {kind} line for {f['stage']} at {f['shape']} "
                          f"(line {where[key]} has one)")
            res[kind][(f["stage"], f["shape"])], where[key] = f, n
        else:
            raise Bad(f"{path}:{n}: a {kind} line needs stage= and shape=")
    if not res["result"] and not res["peers"]:
        raise Bad(f"{path}: no result or peers lines")
    runs = res["runs"]
    if len(runs) > 1 and "" in runs:
        raise Bad(f"{path}:{where['']}: with more than one run line, each needs id=")
    named = set()
    for kind in ("result", "peers"):
        for (stage, shape), f in res[kind].items():
            n = where[(kind, stage, shape)]
            if len(runs) <= 1 and "run" not in f:
                f["run"] = next(iter(runs), "")
            elif "run" not in f:
                raise Bad(f"{path}:{n}: with more than one run line, a {kind} line needs run=ID")
            elif f["run"] not in runs:
                raise Bad(f"{path}:{n}: run={f['run']}: no run line has that id")
            named.add(f["run"])
    for rid in runs:
        if rid not in named and len(runs) > 1:
            raise Bad(f"{path}:{where[rid]}: run id={rid}: no result or peers line names it")
    return res


# ---- formatting (the units of bench/compare.py: benchlib.py) ---------------------------------

def dram(r):
    """(DRAM bytes per forward, FLOP per byte) as the table prints them, or ('-', '-')."""
    total, ai = traffic(r), intensity(r)
    if total:
        return decimal_bytes(total), f"{ai:.1f}" if ai else "-"
    if "dram_total" in r:         # a line rebuilt from a printed table: its two columns
        try:
            return decimal_bytes(float(r["dram_total"])), r.get("flop_per_byte", "-")
        except ValueError:
            raise Bad(f"dram_total={r['dram_total'][:40]} is not a number")
    return "-", "-"


def pretty(shape):
    return shape.replace("x", "×")


def compare_table(res, shape):
    rows = sorted((k, r) for k, r in res["result"].items() if k[1] == shape)
    if not rows:
        raise Bad(f"no result lines at shape {shape}")
    out = ["| stage | GPU ops/step | GPU µs/step | host µs/call | TFLOP/s | % of peak | "
           "DRAM bytes/fwd | FLOP/byte | extra device memory | rel. error |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for (stage, _), r in rows:
        by, fpb = dram(r)
        out.append(f"| {stage} | {r.get('kernels_per_step', '?')} | {r.get('gpu_us', '?')} | "
                   f"{r.get('cpu_us', '?')} | {r.get('tflops', '?')} | {r.get('pct_peak', '?')} | "
                   f"{by} | {fpb} | {human_bytes(r.get('extra_bytes', 0))} | {r.get('rel_l2', '?')} |")
    return out


def peers_table(res):
    shapes = [s for s in SHAPES if any(k[1] == s for k in res["peers"])]
    shapes += sorted({k[1] for k in res["peers"]} - set(shapes))
    if not shapes:
        raise Bad("no peers lines")
    stages = sorted({k[0] for k in res["peers"]})
    out = ["| stage | PyTorch peer | " + " | ".join(f"{pretty(s)}: ours / peer µs | ratio"
                                                  for s in shapes) + " |",
           "|---|---|" + "---|---|" * len(shapes)]
    for stage in stages:
        name = next(res["peers"][(stage, s)]["peer"] for s in shapes if (stage, s) in res["peers"])
        cells = [stage, PEER_NAMES.get(name, name)]
        for s in shapes:
            p = res["peers"].get((stage, s))
            cells += [f"{p['ours_us']} / {p['peer_us']}", p["ratio"]] if p else ["-", "-"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def shape_list(shapes):
    ordered = [x for x in SHAPES if x in shapes] + sorted(set(shapes) - set(SHAPES))
    names = [pretty(x) for x in ordered]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def run_sentence(res, rid, alone):
    """One run's line: what it measured (when the file holds several runs), where, with what."""
    r = res["runs"][rid]
    kinds = {k: sorted({key[1] for key, f in res[k].items() if f["run"] == rid})
             for k in ("result", "peers")}
    what = []
    if kinds["result"]:
        what.append(f"the stages' summary lines at {shape_list(kinds['result'])} (the course "
                    f"table and the values quoted in the pages)")
    if kinds["peers"]:
        what.append(f"ours beside PyTorch at {shape_list(kinds['peers'])} (the peers table)")
    if alone:
        text = "Measured"
    else:
        what = " and ".join(what)
        text = what[0].upper() + what[1:] + ": measured"
    text += (f" on {r.get('date', '?')} on one {r.get('gpu', '?')} (driver {r.get('driver', '?')}, "
             f"CUDA {r.get('cuda', '?')}, the system's cuDNN {r.get('cudnn', '?')}")
    if kinds["peers"]:
        text += (f"; PyTorch {r.get('torch', '?')} with its cuDNN {r.get('torch_cudnn', '?')} "
                 f"for the peers, and for 06_cudnn beside them")
    text += f"), code at commit {r.get('commit', '?')}"
    src = r.get("source", "")
    if src == "reconstructed":
        text += (". These numbers were rebuilt from that run's printed tables "
                 "(docs/h200/results.txt says how).")
    elif src:
        text += f", by `{src}`."
    else:
        text += "."
    return text


def run_line(res, args):
    runs = res["runs"]
    if not runs:
        raise Bad("the results file has no run line")
    if len(args) > 1:
        raise Bad(f"results:run takes at most one run id, got {' '.join(args)!r}")
    if args:
        if args[0] not in runs:
            raise Bad(f"no run line with id={args[0]}")
        return [run_sentence(res, args[0], len(runs) == 1)]
    out = []
    for rid in runs:                               # one paragraph per run, in the file's order
        out += ([""] if out else []) + [run_sentence(res, rid, len(runs) == 1)]
    return out


def value(res, args, kind):
    if len(args) != 3:
        raise Bad(f"results:{kind} takes STAGE SHAPE FIELD, got {' '.join(args)!r}")
    stage, shape, field = args
    table = res["result" if kind == "value" else "peers"]
    r = table.get((stage, shape))
    if r is None:
        raise Bad(f"no {'result' if kind == 'value' else 'peers'} line for {stage} at {shape}")
    if kind == "value" and field in ("dram_bytes", "flop_per_byte"):
        return dram(r)[0 if field == "dram_bytes" else 1]     # derived, as the table prints them
    if field not in r:
        raise Bad(f"the {stage} {shape} line has no field {field}")
    return r[field]


def rendered(res, spec):
    """The text a marker's spec stands for: a list of lines (block) or a string (value)."""
    if not spec.split():
        raise Bad("a marker names no kind (compare, peers, run, value, peer)")
    kind, *args = spec.split()
    if kind == "compare":
        return compare_table(res, args[0] if args else SHAPES[0])
    if kind == "peers":
        return peers_table(res)
    if kind == "run":
        return run_line(res, args)
    if kind in ("value", "peer"):
        return value(res, args, kind)
    raise Bad(f"unknown marker kind results:{kind}")


# ---- the Markdown files ----------------------------------------------------------------------

def pages(root):
    found = [os.path.join(root, "README.md")]
    found += sorted(glob.glob(os.path.join(root, "[0-9][0-9]_*", "README.md")))
    found += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [p for p in found if os.path.isfile(p)]


def render_text(text, res, where):
    """(new text, [names of the markers whose text changed])."""
    changed = []

    def one(m):
        spec, old = m.group(1).strip(), m.group(2)
        try:
            new = rendered(res, spec)
        except Bad as e:
            raise Bad(f"{where}: <!-- results:{spec} -->: {e}")
        block = old.startswith("\n")
        if isinstance(new, str):
            if block:
                raise Bad(f"{where}: <!-- results:{spec} --> is a value: keep it on one line")
            body = new
        else:
            body = "\n" + "\n".join(new) + "\n"
        if body != old:
            line = text.count("\n", 0, m.start()) + 1
            changed.append(f"{where}:{line}: results:{spec}")
        return f"<!-- results:{m.group(1)} -->{body}<!-- end -->"

    return MARKER.sub(one, text), changed


def render_all(root, results, check):
    """(markers, [the markers that differ]); unless check, the pages that differ rewritten, once
    every page has rendered (bad input in any page: nothing is rewritten)."""
    res = load(results)
    differ, count, rewrite = [], 0, []
    for path in pages(root):
        text = read_text(path)
        where = os.path.relpath(path, root)
        new, changed = render_text(text, res, where)
        count += len(MARKER.findall(text))
        differ += changed
        if changed:
            rewrite.append((path, new))
    for path, new in rewrite if not check else []:
        write_text(path, new)
    return count, differ


# ---- collect: a reference run's outputs -> results.txt ---------------------------------------

PEERS_ROW = re.compile(r"^\| (\d\d_\w+) \| ([^|]+?) \| ([0-9.]+|-) \| ([0-9.]+|-) \| ([0-9.]+|-) \|"
                       r" [^|]* \| [^|]* \| ([0-9.]+|-) \| ([0-9.]+|-) \|")


def last_result(path):
    lines = [x for x in read_text(path, errors="replace").splitlines() if x.startswith("result ")]
    return lines[-1] if lines else None


def collect(rundir):
    """RUNDIR/results.txt from a bench/reference_runs.sh directory."""
    def need(p):
        if not os.path.isfile(p):
            raise Bad(f"{p} is missing (bench/reference_runs.sh writes it)")
        return p
    run = [x for x in read_text(need(os.path.join(rundir, "run.txt"))).splitlines()
           if x.startswith("run ")]
    if not run:
        raise Bad(f"{rundir}/run.txt holds no run line")
    out = ["# docs/h200/results.txt: the measured run that every number table of the course is "
           "rendered from", "# (python3 bench/render.py). Written by python3 bench/render.py "
           "collect from bench/reference_runs.sh's outputs.", run[-1]]
    results = sorted(glob.glob(os.path.join(rundir, "shapes", "*.txt")))
    if not results:
        raise Bad(f"{rundir}/shapes/ holds no stage outputs")
    for p in results:
        line = last_result(p)
        if line:
            out.append(line)
    shape = None
    for line in read_text(need(os.path.join(rundir, "peers.md"))).splitlines():
        if line.startswith("## "):
            shape = line[3:].strip()
        m = PEERS_ROW.match(line)
        if m and shape:
            stage, peer, ours, theirs, ratio, ocpu, pcpu = m.groups()
            out.append(f"peers shape={shape} stage={stage} peer={shlex.quote(peer)} "
                       f"ours_us={ours} peer_us={theirs} ratio={ratio} ours_cpu_us={ocpu} "
                       f"peer_cpu_us={pcpu}")
    path = os.path.join(rundir, "results.txt")
    write_text(path, "\n".join(out) + "\n")
    print(f"render: wrote {path} ({len(out) - 3} lines)")


def main(argv):
    if argv[:1] == ["collect"]:
        if argv[1:] in (["--help"], ["-h"]):
            print("usage: bench/render.py collect RUNDIR  (writes RUNDIR/results.txt from "
                  "bench/reference_runs.sh's outputs)")
            return 0
        if len(argv) != 2:
            raise Bad("usage: bench/render.py collect RUNDIR")
        collect(argv[1])
        return 0
    ap = OneLineParser(prog="render.py", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="name the tables that differ; exit 1")
    ap.add_argument("--results", default=None, help=f"default ROOT/{RESULTS}")
    ap.add_argument("--root", default=ROOT, help="the course's top directory")
    a = ap.parse_args(argv)
    if a.results == "":
        raise Bad("--results: an empty path (give the results file, or leave --results out)")
    results = a.results or os.path.join(a.root, RESULTS)
    count, differ = render_all(a.root, results, a.check)
    if count == 0:
        raise Bad(f"no <!-- results:... --> markers under {a.root}")
    for d in differ:
        print(f"render: {'differs' if a.check else 'rewrote'}: {d}")
    if a.check:
        print(f"render: {count} markers, {len(differ)} differ from {os.path.relpath(results, a.root)}")
        return 1 if differ else 0
    print(f"render: {count} markers, {len(differ)} rewritten from {os.path.relpath(results, a.root)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Bad as e:
        die(e)
