#!/usr/bin/env python3
"""compare.py: the course at a glance. Every stage at one shape, one table, one bar chart.

    bench/compare.py run [--shape BxHxSxD] [--outdir DIR]   (what `make compare` runs; needs a GPU)
    bench/compare.py render SUMMARY_FILE OUTDIR              (renders canned lines; CPU only)
    bench/compare.py preflight [--shape BxHxSxD]             (make compare's checks, no run)

`run` runs each built stage (./NN_x/run at the shape, default the blog's 8x16x1024x64), keeps
what they print in OUTDIR/compare_summary.txt, then renders it like `render`: a table
on stdout, OUTDIR/compare.md (the same table in Markdown), OUTDIR/compare.svg (GPU time per
stage as horizontal bars on a log axis, the GPU activities per step written on each bar) and
OUTDIR/roofline.svg (each stage at its FLOP per DRAM byte and TFLOP/s under the H200's bf16
tensor, FP32 CUDA-core and bandwidth roofs; stages without counters are left out).
Every number comes from the stages' summary lines (README.md, "What a run prints"), the tensor
pipe % from their tables and kernel details (TENSOR_PIPE_HELP below, tensor_pipe() says how);
nothing is re-measured here. A stage's whole printed output is a summary file too
(docs/h200/NN_x.txt, one or all of them).

The summary file holds, one per line (other lines are ignored):
    result stage=... shape=... kernels_per_step=... gpu_us=... ...   (a stage's last stdout line)
    the stage's printed table and kernel details, before its result line (the tensor-pipe column)
    idea stage=NN_x text=ONE LINE                                     (the stage's idea, from --help)
    unsupported stage=NN_x shape=BxHxSxD exit=2 message=ONE LINE      (the stage refused the shape)
    failed stage=NN_x shape=BxHxSxD exit=N message=ONE LINE           (check failed or a call failed)
    notbuilt stage=NN_x message=ONE LINE
Exit status: 0; 1 when a stage failed; 2 on bad input (a flag argparse refuses, a --shape the
stages' flags refuse such as 99999999999x1x1x1, ATTN_SANITIZE other than unset, 0 or 1, an OUTDIR
that cannot be created or written, a SUMMARY_FILE that is not UTF-8 text or holds a shape too
large for its FLOP count) or no CUDA device: one line on stderr, nothing written; bad input is
reported before the device is looked at.
`preflight` checks what `run` would check before its first stage (ATTN_SANITIZE, the shape, then
the device) and prints the reason on stderr without the "compare: " prefix, exit 2, or nothing,
exit 0: make compare puts that line in its one "*** make compare: ..." line.
Python 3 standard library only.
"""
import math
import os
import re
import subprocess
import sys

from benchlib import (ROOT, SHAPE_RE, STAGE_RE, decimal_bytes, dir_problem, human_bytes, intensity,
                      one_line_parser, sanitize_env_problem, shape_flag_problem, shape_size_problem,
                      traffic, write_problem)
BLOG_SHAPE = "8x16x1024x64"
STAGE_TIMEOUT_S = 600
# Line kinds whose last field runs to the end of the line (it holds spaces).
TAIL_KEY = {"idea": "text", "unsupported": "message", "failed": "message", "notbuilt": "message"}


def escape(text):
    """TEXT as XML character data: &, < and > written as entities (xml.sax.saxutils.escape's rule,
    without that module's start-up: it imports urllib and http)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


PREFLIGHT = False   # `preflight` mode: die() prints the bare reason on stderr (for make)


def die(msg, code=2):
    """One line on stderr, then exit (2: bad input or no device). Under `preflight` the reason
    alone, without the prefix, for make's $(error)."""
    if PREFLIGHT:
        print(" ".join(msg.split()), file=sys.stderr, flush=True)
    else:
        print(f"compare: {' '.join(msg.split())}", file=sys.stderr, flush=True)
    sys.exit(code)


# argparse with its errors on one line ("compare: ...", exit 2) instead of usage + error.
OneLineParser = one_line_parser(die, "bench/compare.py --help")

TENSOR_PIPE_HELP = (
    "The tensor pipe % column comes from the counter pass of each stage's run: every kernel's "
    "`counters:` line under the kernel details (\"tensor pipe X% active\": CUPTI's "
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active, kernel replay), averaged "
    "over the stage's kernels weighted by each kernel's CUDA total in the stage's table. Where a "
    "kernel has no counters value, the stage takes every kernel's `timeline:` mean instead (the "
    "PM-sampling pass, sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed) and the "
    "table says so; - where the summary file holds no kernel details (--quiet runs, summary "
    "lines alone).")


# ---- summary lines ---------------------------------------------------------------------------

def parse_line(line):
    """(kind, fields) of one summary-file line, or None for a line of another kind.
    `result` lines are space-separated key=value pairs; the other kinds end in a free-text field."""
    line = line.rstrip("\n")
    kind, _, rest = line.partition(" ")
    if kind == "result":
        fields = {}
        for tok in rest.split():
            key, eq, val = tok.partition("=")
            if eq:
                fields[key] = val
        return kind, fields
    if kind in TAIL_KEY:
        marker = TAIL_KEY[kind] + "="
        head, sep, tail = rest.partition(" " + marker) if not rest.startswith(marker) else ("", marker, rest[len(marker):])
        if not sep:
            return None
        fields = {}
        for tok in head.split():
            key, eq, val = tok.partition("=")
            if eq:
                fields[key] = val
        fields[TAIL_KEY[kind]] = tail.strip()
        return kind, fields
    return None


# ---- the tensor-pipe column: from a stage's printed table and kernel details -----------------
# A stage's output (common/table.c) holds, before its result line: the profiler table, whose
# kernel rows give each kernel's CUDA total over the profiled steps (a name of 52 characters or
# more cut to its first 52 + "..."), and the kernel details, one entry per launch configuration
# with the full name ("  NAME: grid [...") and under it
#     "    counters: ... tensor pipe X% active ..."   the counter pass (CUPTI Range Profiler,
#         sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active, per kernel)
#     "    timeline: tensor pipe |...| mean Y%, ..."  the timeline pass (CUPTI PM sampling,
#         GPU-wide, ..._elapsed, over the kernel's first launch)
TIME_RE = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
DETAIL_RE = re.compile(r"^  (\S.*?): grid \[")
COUNTERS_TP_RE = re.compile(r"^    counters(?: \([^)]*\))?: .*\btensor pipe (\S+) active\b")
TIMELINE_TP_RE = re.compile(r"^    timeline: tensor pipe \|[^|]*\| mean (\S+?)%")
TIME_UNIT = {"us": 1.0, "ms": 1e3, "s": 1e6}
STAGE_HEADER_RE = re.compile(r"^stage (\d\d_[a-z0-9_]+): (.+)$")


def table_time_us(text):
    """A table time ("158.497us", "2.081ms", "1.000s") in µs, or None."""
    m = TIME_RE.match(text)
    return float(m.group(1)) * TIME_UNIT[m.group(2)] if m else None


def table_row(line):
    """(name, CUDA total in µs) of one profiler-table row, or None for any other line. The ten
    numeric columns are the last ten fields; the name (which may hold spaces) is the rest."""
    parts = line.rsplit(None, 10)
    if len(parts) != 11 or not parts[10].isdigit():
        return None
    cuda_total = table_time_us(parts[8])
    return (parts[0].strip(), cuda_total) if cuda_total is not None else None


def pct_value(text):
    """"38.8%" or "38.8" -> 38.8; "-" and anything else -> None."""
    try:
        v = float(text.rstrip("%"))
    except ValueError:
        return None
    return v if math.isfinite(v) and 0.0 <= v <= 100.0 else None


def weighted_tensor_pipe(rows, kernels, key):
    """The mean of each kernel's KEY value ("counters" or "timeline") weighted by its table row's
    CUDA total, as (pct, problem): problem names a kernel without a value or a row, else "".
    A name the details list under several launch configurations shares its row's time equally
    among them (the table keeps one row per name)."""
    configs = {}
    for k in kernels:
        configs[k["name"]] = configs.get(k["name"], 0) + 1
    total = weighted = 0.0
    for k in kernels:
        v = k.get(key)
        if v is None:
            return None, f"{k['name'][:40]} has no {key} value"
        t = None
        for name, us in rows:
            if name == k["name"] or (name.endswith("...") and k["name"].startswith(name[:-3])):
                t = us
                break
        if t is None:
            return None, f"{k['name'][:40]} has no table row"
        total += t / configs[k["name"]]
        weighted += v * t / configs[k["name"]]
    if not kernels or total <= 0:
        return None, "no kernels"
    return weighted / total, ""


def tensor_pipe(lines):
    """{stage: (pct or None, source)}: each stage's time-weighted mean tensor-pipe % over its
    kernels, from the lines before its result line: the counters lines where every kernel has
    one (source "counters"), else the timeline lines' means (source "timeline"), else None
    (source: why). A summary file of result lines alone gives {}."""
    out = {}
    rows, kernels, in_table = [], [], False
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("result "):
            stage = parse_line(line)[1].get("stage")
            if stage and (rows or kernels):
                pct, why = weighted_tensor_pipe(rows, kernels, "counters")
                if pct is not None:
                    out[stage] = (pct, "counters")
                else:
                    pct, why_tl = weighted_tensor_pipe(rows, kernels, "timeline")
                    out[stage] = (pct, "timeline") if pct is not None else (None, why)
            rows, kernels, in_table = [], [], False
            continue
        if line.lstrip().startswith("Name ") and line.rstrip().endswith("# of Calls"):
            rows, kernels, in_table = [], [], True
            continue
        if line.startswith("Self CPU time total:"):
            in_table = False
            continue
        if in_table:
            r = table_row(line)
            if r:
                rows.append(r)
            continue
        m = DETAIL_RE.match(line)
        if m:
            kernels.append({"name": m.group(1)})
            continue
        m = COUNTERS_TP_RE.match(line)
        if m and kernels:
            kernels[-1]["counters"] = pct_value(m.group(1))
            continue
        m = TIMELINE_TP_RE.match(line)
        if m and kernels:
            kernels[-1]["timeline"] = pct_value(m.group(1))
    return out


def load_rows(lines):
    """Rows in stage order: dicts with stage, status (ok, unsupported, failed, notbuilt), the
    summary fields, idea, message and tensor_pipe (tensor_pipe(): None without kernel details).
    A stage's last line of each kind wins."""
    rows, ideas = {}, {}
    for line in lines:
        m = STAGE_HEADER_RE.match(line)
        if m:                     # a stage's printed output: "stage NN_x: idea" over its table
            ideas.setdefault(m.group(1), m.group(2).strip())
            continue
        parsed = parse_line(line)
        if not parsed:
            continue
        kind, f = parsed
        stage = f.get("stage")
        if not stage:
            continue
        if kind == "idea":
            ideas[stage] = f["text"]     # wins over the stage header's
            continue
        if kind == "result" and f.get("check") != "PASS":
            kind, f = "failed", dict(f, message=f"check={f.get('check', '?')} rel_l2={f.get('rel_l2', '?')}")
        status = {"result": "ok"}.get(kind, kind)
        rows[stage] = dict(f, stage=stage, status=status)
    pipe = tensor_pipe(lines)
    out = []
    for stage in sorted(rows):
        r = rows[stage]
        r["idea"] = ideas.get(stage) or idea_from_help(stage)
        r["tensor_pipe"], r["tensor_pipe_source"] = pipe.get(stage, (None, "no kernel details"))
        out.append(r)
    return out


def idea_from_help(stage):
    """The stage's idea from `./NN_x/run --help` ("NN_x: idea" line), or "" if not built."""
    exe = os.path.join(ROOT, stage, "run")
    if not os.access(exe, os.X_OK):
        return ""
    try:
        p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in p.stdout.splitlines():
        if line.startswith(stage + ": "):
            return line[len(stage) + 2:].strip()
    return ""


# ---- formatting (the units: benchlib's human_bytes, decimal_bytes, traffic, intensity) -------

COLUMNS = ["stage", "idea", "GPU ops/step", "GPU µs/step", "host µs/call", "TFLOP/s",
           "% of peak", "tensor pipe %", "DRAM bytes/fwd", "FLOP/byte", "extra device memory", "rel. error"]


def cells(r):
    """The table cells of one row (COLUMNS order)."""
    if r["status"] != "ok":
        word = {"unsupported": "not supported", "notbuilt": "not built"}.get(r["status"], "FAILED")
        return [r["stage"], r["idea"], word] + [""] * (len(COLUMNS) - 3)
    t, ai, tp = traffic(r), intensity(r), r.get("tensor_pipe")
    return [r["stage"], r["idea"], r.get("kernels_per_step", "?"), r.get("gpu_us", "?"),
            r.get("cpu_us", "?"), r.get("tflops", "?"), r.get("pct_peak", "?"),
            f"{tp:.1f}" if tp is not None else "-", decimal_bytes(t) if t else "-", f"{ai:.1f}" if ai else "-",
            human_bytes(r.get("extra_bytes", 0)), r.get("rel_l2", "?")]


def notes(rows):
    """One line per stage that has no numbers: why."""
    out = []
    for r in rows:
        if r["status"] == "unsupported":
            out.append(f"{r['stage']}: not supported at {r.get('shape', '?')}: {r.get('message', '')}")
        elif r["status"] == "notbuilt":
            out.append(f"{r['stage']}: not built: {r.get('message', '')}")
        elif r["status"] == "failed":
            out.append(f"{r['stage']}: FAILED (exit {r.get('exit', 1)}): {r.get('message', '')}")
        elif r.get("tensor_pipe_source") == "timeline":
            out.append(f"{r['stage']}: tensor pipe % from the timeline lines' means (no counters)")
    return out


TENSOR_PIPE_NOTE = ("tensor pipe % is the kernels' mean tensor-pipe activity weighted by each "
                    "kernel's CUDA time in the stage's table: each kernel's `counters:` line "
                    "(\"tensor pipe X% active\", the counter pass), or where a stage has none, "
                    "its `timeline:` line's mean (the timeline pass); - where the summary file "
                    "has no kernel details (summary lines alone, or a run with --quiet)")


def common_shape(rows):
    shapes = sorted({r["shape"] for r in rows if r.get("shape")})
    return ", ".join(shapes) if shapes else "?"


def text_table(rows):
    """The terminal table: numbers right-aligned; the idea goes last so long ideas keep the
    columns aligned."""
    order = [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1]
    head = [COLUMNS[i] for i in order]
    body = [[cells(r)[i] for i in order] for r in rows]
    width = [max(len(row[c]) for row in [head] + body) for c in range(len(head) - 1)]

    def fmt(row):
        parts = [row[0].ljust(width[0])] + [row[c].rjust(width[c]) for c in range(1, len(row) - 1)]
        return "  ".join(parts + [row[-1]]).rstrip()

    rule = "-" * len(fmt(head))
    lines = [f"The course at a glance: shape {common_shape(rows)} (batch x heads x seq x head_dim), "
             "bf16, causal", rule, fmt(head), rule] + [fmt(b) for b in body] + [rule]
    lines += notes(rows)
    lines.append(TENSOR_PIPE_NOTE.replace("`", ""))
    return "\n".join(lines) + "\n"


def md_cell(s):
    return s.replace("|", "\\|")


def markdown(rows):
    shape = common_shape(rows)
    out = ["# The course at a glance", "",
           f"Causal attention, bf16, shape {shape} (batch × heads × seq × head_dim). "
           "From each stage's summary line (`./NN_x/run`): GPU ops/step are the GPU "
           "activities (kernels, copies, memsets) of one forward; GPU µs/step is the median GPU "
           "time of one forward with the queue kept full; host µs/call is the median host time "
           "of one forward call; TFLOP/s counts 4·B·H·S²·D/2; " + TENSOR_PIPE_NOTE + "; DRAM "
           "bytes/fwd is what one forward "
           "reads and writes in device memory (`dram_read` + `dram_write`: its kernels from the "
           "counter pass, its copies and memsets from their activity records; - without "
           "counters); FLOP/byte divides the first by the second; extra device memory is what the "
           "stage needs beyond Q, K, V, O; rel. error is the relative L2 error against the "
           "float64 reference.", "",
           "| " + " | ".join(COLUMNS) + " |",
           "|" + "|".join([":---", ":---"] + ["---:"] * (len(COLUMNS) - 2)) + "|"]
    for r in rows:
        c = cells(r)
        c[0] = f"`{c[0]}`"
        out.append("| " + " | ".join(md_cell(x) for x in c) + " |")
    n = notes(rows)
    if n:
        out += [""] + [f"- {md_cell(x)}" for x in n]
    out += ["", "![GPU time per stage, log axis](compare.svg)", "",
            "![Roofline: each stage at its FLOP/byte and TFLOP/s under the H200's roofs](roofline.svg)", ""]
    return "\n".join(out)


# ---- the chart -------------------------------------------------------------------------------

def nice_us(us):
    """A time for an axis label: 10 µs, 100 µs, 1 ms, 10 ms, 1 s."""
    if us >= 1e6:
        return f"{us / 1e6:g} s"
    if us >= 1e3:
        return f"{us / 1e3:g} ms"
    return f"{us:g} µs"


def svg_chart(rows):
    """GPU time per stage: one horizontal bar per stage with numbers, on a log axis spanning whole
    decades; the GPU activities per step on each bar, the time after it."""
    width, left, right, top, row_h, bar_h = 900, 150, 110, 64, 36, 22
    plot_w = width - left - right
    bars = [r for r in rows if r["status"] == "ok" and _float(r.get("gpu_us")) > 0]
    n_rows = max(len(rows), 1)
    height = top + n_rows * row_h + 56
    times = [_float(r["gpu_us"]) for r in bars] or [1.0, 10.0]
    lo = math.floor(math.log10(min(times)))
    if 10 ** lo >= min(times):      # a bar exactly on the axis start would have no length
        lo -= 1
    hi = max(math.ceil(math.log10(max(times))), lo + 1)

    def x_of(us):
        return left + plot_w * (math.log10(us) - lo) / (hi - lo)

    o = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="13">',
         f'<title>GPU time per forward, shape {escape(common_shape(rows))}</title>',
         f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
         f'<text x="{left}" y="24" font-size="16" font-weight="bold">GPU time per forward '
         f'(log scale), shape {escape(common_shape(rows))}</text>',
         f'<text x="{left}" y="44" fill="#555555">median with the queue kept full; '
         'the count on each bar is GPU activities (kernels, copies, memsets) per step</text>']
    axis_y = top + n_rows * row_h + 4
    # grid: whole decades (labelled) and 2..9 within each (faint)
    for d in range(lo, hi + 1):
        for m in range(1, 10):
            us = m * 10 ** d
            if d == hi and m > 1:
                break
            x = x_of(us)
            strong = m == 1
            o.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{axis_y}" '
                     f'stroke="{"#bbbbbb" if strong else "#eeeeee"}" stroke-width="1"/>')
            if strong:
                o.append(f'<text class="tick" x="{x:.1f}" y="{axis_y + 18}" text-anchor="middle" '
                         f'fill="#333333">{escape(nice_us(us))}</text>')
    o.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="#333333"/>')
    o.append(f'<text x="{left + plot_w / 2:.1f}" y="{axis_y + 40}" text-anchor="middle" '
             'fill="#333333">GPU µs per forward (log axis)</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h + (row_h - bar_h) / 2
        mid = y + bar_h / 2 + 4.5
        o.append(f'<text class="stage" x="{left - 10}" y="{mid:.1f}" text-anchor="end" '
                 f'font-family="Menlo, Consolas, monospace">{escape(r["stage"])}</text>')
        if r not in bars:
            word = cells(r)[2] if r["status"] != "ok" else "no GPU time"
            o.append(f'<text class="missing" x="{left + 6}" y="{mid:.1f}" fill="#aa3333">'
                     f'{escape(word)}</text>')
            continue
        us = _float(r["gpu_us"])
        x1 = x_of(us)
        ops = f'{r.get("kernels_per_step", "?")} ops/step'
        fits = (x1 - left) > 8 * len(ops) + 12
        tip = f'{r["stage"]}: {r.get("gpu_us")} µs, {ops}. {r.get("idea", "")}'
        o.append(f'<rect class="bar" x="{left}" y="{y:.1f}" width="{x1 - left:.1f}" height="{bar_h}" '
                 f'fill="{"#e45756" if _ops(r) > 2 else "#4c78a8"}"><title>{escape(tip)}</title></rect>')
        value = f'{r.get("gpu_us")} µs'
        if fits:
            o.append(f'<text class="ops" x="{left + 6}" y="{mid:.1f}" fill="#ffffff" '
                     f'font-weight="bold">{escape(ops)}</text>')
            o.append(f'<text class="value" x="{x1 + 6:.1f}" y="{mid:.1f}">{escape(value)}</text>')
        else:
            o.append(f'<text class="value" x="{x1 + 6:.1f}" y="{mid:.1f}">{escape(value)} · '
                     f'<tspan class="ops" font-weight="bold">{escape(ops)}</tspan></text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


# The H200's roofs for the roofline (measured or datasheet; README "The course at a glance"):
# the dense bf16 tensor-core rate a large cuBLAS GEMM reaches (≈790 TFLOP/s; 989 on the
# datasheet), the FP32 CUDA-core peak that 03_math's FFMA GEMMs are bound by (132 SMs x 128 FP32
# lanes x 2 FLOP x 1.98 GHz ≈ 67 TFLOP/s, the datasheet's 67), the DRAM bandwidth our kernels
# reach (≈4.2 TB/s of the 4.8 on the datasheet).
ROOF_BF16_TFLOPS = 790.0
ROOF_FP32_TFLOPS = 67.0
ROOF_TBPS = 4.2


def svg_roofline(rows):
    """Each stage with counters as a point (FLOP/byte, TFLOP/s) on log-log axes under the
    bandwidth slope and the two compute roofs; the label names the stage."""
    width, height, left, right, top, bottom = 900, 560, 80, 40, 64, 70
    pw, ph = width - left - right, height - top - bottom
    pts = [(r, intensity(r), _float(r.get("tflops"))) for r in rows if r["status"] == "ok"]
    pts = [(r, x, y) for r, x, y in pts if x and y > 0]
    x_lo, x_hi, y_lo, y_hi = -1, 4, -1, 3            # decades: 0.1..10^4 FLOP/B, 0.1..1000 TFLOP/s

    def X(v):
        return left + pw * (math.log10(v) - x_lo) / (x_hi - x_lo)

    def Y(v):
        return top + ph * (1 - (math.log10(v) - y_lo) / (y_hi - y_lo))

    shape = escape(common_shape(rows))
    o = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="13">',
         f'<title>Roofline, shape {shape}</title>',
         f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
         f'<text x="{left}" y="24" font-size="16" font-weight="bold">Roofline on the H200, shape {shape}</text>',
         f'<text x="{left}" y="44" fill="#555555">FLOP/byte = 2·B·H·S²·D / DRAM bytes of one forward '
         '(counter pass); TFLOP/s from gpu_us</text>']
    for d in range(x_lo, x_hi + 1):
        x = X(10 ** d)
        o.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#dddddd"/>')
        o.append(f'<text class="tick" x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">{10 ** d:g}</text>')
    for d in range(y_lo, y_hi + 1):
        y = Y(10 ** d)
        o.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#dddddd"/>')
        o.append(f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** d:g}</text>')
    o.append(f'<text x="{left + pw / 2:.1f}" y="{height - 24}" text-anchor="middle">FLOP per DRAM byte (log)</text>')
    o.append(f'<text x="18" y="{top + ph / 2:.1f}" text-anchor="middle" '
             f'transform="rotate(-90 18 {top + ph / 2:.1f})">TFLOP/s (log)</text>')
    # roofs: min(peak, intensity x bandwidth), drawn from the left edge to the right edge
    for peak, label, color in [(ROOF_BF16_TFLOPS, f"bf16 tensor cores ≈{ROOF_BF16_TFLOPS:g} TFLOP/s", "#4c78a8"),
                               (ROOF_FP32_TFLOPS, f"FP32 CUDA cores ≈{ROOF_FP32_TFLOPS:g} TFLOP/s (03_math)", "#e45756")]:
        ridge = peak / ROOF_TBPS                     # TFLOP/s / (TB/s) = FLOP/byte
        x0 = 10 ** x_lo
        o.append(f'<polyline class="roof" fill="none" stroke="{color}" stroke-width="2" points="'
                 f'{X(x0):.1f},{Y(max(x0 * ROOF_TBPS, 10 ** y_lo)):.1f} {X(ridge):.1f},{Y(peak):.1f} '
                 f'{X(10 ** x_hi):.1f},{Y(peak):.1f}"><title>{escape(label)}; ridge at {ridge:.0f} FLOP/byte</title></polyline>')
        o.append(f'<text class="roof-label" x="{X(10 ** x_hi) - 4:.1f}" y="{Y(peak) - 6:.1f}" '
                 f'text-anchor="end" fill="{color}">{escape(label)}</text>')
    o.append(f'<text class="roof-label" x="{X(0.5):.1f}" y="{Y(0.5 * ROOF_TBPS) - 10:.1f}" fill="#333333" '
             f'transform="rotate(-{math.degrees(math.atan(ph / (y_hi - y_lo) / (pw / (x_hi - x_lo)))):.1f} '
             f'{X(0.5):.1f} {Y(0.5 * ROOF_TBPS) - 10:.1f})">DRAM ≈{ROOF_TBPS:g} TB/s</text>')
    placed = []                                      # label positions, so that close points'
    for r, x, y in pts:                              # labels do not overlap (04/05/06)
        cx, cy = X(min(max(x, 10 ** x_lo), 10 ** x_hi)), Y(min(max(y, 10 ** y_lo), 10 ** y_hi))
        tip = f'{r["stage"]}: {x:.1f} FLOP/byte, {y:g} TFLOP/s'
        o.append(f'<circle class="point" cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="#333333">'
                 f'<title>{escape(tip)}</title></circle>')
        ly = cy + 4
        while any(abs(cx - px) < 110 and abs(ly - py) < 15 for px, py in placed):
            ly += 15
        placed.append((cx, ly))
        o.append(f'<text class="point-label" x="{cx + 9:.1f}" y="{ly:.1f}" '
                 f'font-family="Menlo, Consolas, monospace">{escape(r["stage"])} '
                 f'({x:.0f} FLOP/B, {y:g} TFLOP/s)</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def _float(s):
    """A summary field as a number; 0.0 (missing) for text, inf and nan."""
    try:
        v = float(s)
    except (TypeError, ValueError):
        return 0.0
    return v if math.isfinite(v) else 0.0


def _ops(r):
    try:
        # "6", or "6-7" when the steps differ (older summary lines: "6,7,6")
        return max(int(x) for x in re.split(r"[,-]", str(r.get("kernels_per_step", "0"))))
    except ValueError:
        return 0


def write_file(path, text):
    """Write TEXT to PATH; a failure (disk full, permissions) is one line, exit 2."""
    problem = write_problem(path, text)
    if problem:
        die(problem)


def render(lines, outdir):
    """Print the table; write OUTDIR/compare.md and OUTDIR/compare.svg. Returns the rows."""
    rows = load_rows(lines)
    if not rows:
        die("no summary lines (lines starting 'result stage=...') to render")
    for r in rows:
        problem = shape_size_problem(r.get("shape", ""))
        if problem:
            die(f"{r['stage']}: {problem}")
    problem = dir_problem(outdir, "OUTDIR")
    if problem:
        die(problem)
    files = {"compare.md": markdown(rows), "compare.svg": svg_chart(rows),
             "roofline.svg": svg_roofline(rows)}
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        die(f"cannot create {outdir}: {e.strerror or e}")
    for name, text in files.items():
        write_file(os.path.join(outdir, name), text)
    sys.stdout.write(text_table(rows))
    print(f"wrote {os.path.join(outdir, 'compare.md')}, {os.path.join(outdir, 'compare.svg')} and "
          f"{os.path.join(outdir, 'roofline.svg')}", flush=True)
    for r in rows:
        ai = intensity(r) if r["status"] == "ok" else None
        if ai:
            print(f"roofline {r['stage']}: {ai:.1f} FLOP/byte, {r.get('tflops')} TFLOP/s "
                  f"(bandwidth roof there: {min(ai * ROOF_TBPS, ROOF_BF16_TFLOPS):.1f})", flush=True)
    return rows


# ---- run -------------------------------------------------------------------------------------

def stages():
    return sorted(d for d in os.listdir(ROOT) if STAGE_RE.match(d) and os.path.isdir(os.path.join(ROOT, d)))


def one_line(text):
    """The last non-empty line of a program's stderr (its one-line message)."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[-1] if lines else "(no message)"


def die_no_gpu(reason):
    """No usable CUDA device (reason: the stages' "no CUDA device: ..." line): exit 2."""
    die(f"{reason}. `make compare` needs an NVIDIA GPU (it runs the stages on a GPU machine); "
        "nothing was written (bench/compare.py render SUMMARY_FILE OUTDIR renders saved summary "
        "lines without one)")


def check_device():
    """Before any stage runs (and before any progress line): tests/need_gpu.sh, the device check
    make compare runs too. Without a usable device: its one line, exit 2."""
    try:
        p = subprocess.run(["bash", os.path.join(ROOT, "tests", "need_gpu.sh")], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return                    # no verdict: the runs themselves will say
    if p.returncode == 2:
        reason = one_line(p.stdout)
        if not reason.startswith("no CUDA device"):
            die(reason)           # a stage's run failed for another reason: its own line
        if PREFLIGHT:
            die(reason)
        die_no_gpu(reason)


def preflight(shape, outdir=None):
    """What `run` checks before its first stage, bad input first: ATTN_SANITIZE, the shape (its
    form, then the stages' own flag limits), the output directory, then the device."""
    reason = sanitize_env_problem("compare")
    if reason:
        die(reason)
    if not SHAPE_RE.match(shape):
        die(f"--shape {shape!r} is not BxHxSxD with positive integers (e.g. {BLOG_SHAPE})")
    if outdir is not None:
        problem = dir_problem(outdir, "--outdir")
        if problem:
            die(problem)
    found = stages()
    if not found:
        die(f"no stage directories (NN_x/) under {ROOT}")
    problem = shape_flag_problem(SHAPE_RE.match(shape).groups())
    if problem:
        die(f"--shape {shape}: {problem}; nothing was written")
    check_device()
    return found


def run_stages(shape, outdir):
    b, h, s, d = SHAPE_RE.match(shape).groups()
    found = preflight(shape, outdir)
    summary, failed = [], False
    for stage in found:
        exe = os.path.join(ROOT, stage, "run")
        if not os.access(exe, os.X_OK):
            summary.append(f"notbuilt stage={stage} message=./{stage}/run is missing (make {stage})")
            print(f"compare: {stage}: not built", file=sys.stderr, flush=True)
            continue
        # not --quiet: the table and kernel details hold the tensor-pipe column's numbers
        cmd = [exe, "--batch", b, "--heads", h, "--seq", s, "--head-dim", d]
        print(f"compare: {stage} {shape} ...", file=sys.stderr, flush=True)
        try:
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=STAGE_TIMEOUT_S)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", f"timed out after {STAGE_TIMEOUT_S} s"
        if rc == 2 and "no CUDA device" in err:
            die_no_gpu(one_line(err))
        if rc == 2 and one_line(err).startswith("--"):
            # the shared flag parser refused the shape (e.g. --batch out of range): every stage
            # would say the same; bad input, not a stage that does not support the shape
            die(f"--shape {shape}: {one_line(err)}; nothing was written")
        # the run's own header line "stage NN_x: idea" when it printed one, else --help's (a
        # refused or failed run prints none)
        header = [m.group(2).strip() for m in map(STAGE_HEADER_RE.match, out.splitlines())
                  if m and m.group(1) == stage]
        idea = header[0] if header else idea_from_help(stage)
        if idea:
            summary.append(f"idea stage={stage} text={idea}")
        results = [x for x in out.splitlines() if x.startswith("result ")]
        if rc == 0 and results:
            summary += out.rstrip("\n").splitlines()
            f = parse_line(results[-1])[1]
            print(f"compare: {stage}: gpu_us={f.get('gpu_us')} kernels_per_step="
                  f"{f.get('kernels_per_step')} check={f.get('check')}", file=sys.stderr, flush=True)
        elif rc == 2:
            summary.append(f"unsupported stage={stage} shape={shape} exit=2 message={one_line(err)}")
            print(f"compare: {stage}: not supported: {one_line(err)}", file=sys.stderr, flush=True)
        else:
            failed = True
            msg = one_line(err) if rc != 0 else "no summary line on stdout"
            summary.append(f"failed stage={stage} shape={shape} exit={rc} message={msg}")
            print(f"compare: {stage}: FAILED (exit {rc}): {msg}", file=sys.stderr, flush=True)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        die(f"cannot create {outdir}: {e.strerror or e}")
    path = os.path.join(outdir, "compare_summary.txt")
    write_file(path, "\n".join(summary) + "\n")
    rows = render(summary, outdir)
    print(f"summary lines: {path} (bench/compare.py render {path} {outdir} redraws them)", flush=True)
    if failed or not any(r["status"] == "ok" for r in rows):
        sys.exit(1)


def main(argv):
    global PREFLIGHT
    ap = OneLineParser(prog="compare.py", description="Every stage at one shape: table, Markdown, SVG.",
                       epilog=TENSOR_PIPE_HELP)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run", help="run every built stage (needs a GPU), then render",
                       epilog=TENSOR_PIPE_HELP)
    r.add_argument("--shape", default=BLOG_SHAPE, help="BxHxSxD (default the blog's 8x16x1024x64)")
    r.add_argument("--outdir", default=os.path.join(ROOT, "traces"), help="default traces/")
    p = sub.add_parser("preflight", help="make compare's checks (ATTN_SANITIZE, shape, device); "
                       "the reason on stderr, exit 2")
    p.add_argument("--shape", default=BLOG_SHAPE, help="BxHxSxD (default the blog's 8x16x1024x64)")
    g = sub.add_parser("render", help="render saved summary lines (no GPU needed)",
                       epilog=TENSOR_PIPE_HELP)
    g.add_argument("summary_file")
    g.add_argument("outdir")
    if argv[:1] == ["preflight"]:
        PREFLIGHT = True           # argparse errors too: one bare line on stderr
    a = ap.parse_args(argv)
    if a.mode in ("run", "preflight"):
        shape = a.shape.strip().lower()
        if not SHAPE_RE.match(shape):
            reason = sanitize_env_problem("compare")
            die(reason or f"--shape {a.shape!r} is not BxHxSxD with positive integers (e.g. {BLOG_SHAPE})")
        if a.mode == "preflight":
            preflight(shape)
        else:
            run_stages(shape, a.outdir)
    else:
        try:
            with open(a.summary_file, encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            die(f"cannot read {a.summary_file}: {e.strerror or e}")
        except UnicodeDecodeError:
            die(f"cannot read {a.summary_file}: not a UTF-8 text file (summary lines expected)")
        except ValueError as e:   # an embedded NUL in the path
            die(f"cannot read {a.summary_file!r}: {e}")
        render(lines, a.outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
