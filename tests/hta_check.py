"""Kineto's analysis tools read our trace: HolisticTraceAnalysis (HTA, the PyTorch ecosystem's
trace analyser) loads it, finds the iterations (the ProfilerStep#N ranges) and gives the same
per-kernel times as our table.

usage: hta_check.py TRACE TABLE
       hta_check.py counters TRACE
  TRACE   one of our Chrome traces
  TABLE   the stage's stdout (or a table printed by the unit binary) from the same profile

Prints "iterations 2 3 4", then one line per kernel of the table: "kernel NAME hta=TIME
table=TIME calls=N" with both times in the table's format (sum over the active steps). Exit 0
when every kernel agrees to the table's last digit; 1 on a difference; 3 when HTA is not
importable (the Bats test then skips: HTA is not a project dependency). HTA rounds traces with
sub-microsecond times to whole microseconds unless HTA_DISABLE_NS_ROUNDING=1: set here.
`counters TRACE`: HTA's CUPTI counter analysis (get_cupti_counter_data_with_operators) maps
each kernel with counters to the operators that launched it. Prints "counters rows=N ranges=M
...", then one line per row: "row KERNEL top=OP bottom=OP"; exit 0 when there is a row for every
`cuda_profiler_range` event of the set-up and the profiled steps (those of the timeline pass may
be left out) and every row has a top-level operator, 1 otherwise
(HTA returns nothing when it cannot pair the kernels with their launches), 3 without HTA.
HTA 0.5.0's call graph needs numpy < 2 and pandas < 2.3 (with pandas 3 it fails on PyTorch's
own traces too).
"""
import json
import os
import re
import shutil
import sys
import tempfile

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
try:
    from hta.trace_analysis import TraceAnalysis
except ImportError as e:  # not installed here: the caller skips
    print(f"HolisticTraceAnalysis is not importable: {e}", file=sys.stderr)
    sys.exit(3)

NAME_CUT = 52


def fmt_time(us):
    """table.c's table_format_time (torch's _format_time)."""
    if us >= 1e6:
        return "%.3fs" % (us / 1e6)
    if us >= 1e3:
        return "%.3fms" % (us / 1e3)
    return "%.3fus" % us


def cut(name):
    return name[:NAME_CUT] + "..." if len(name) >= NAME_CUT else name


def table_kernels(path, names):
    """{cut name: (self cuda text, calls)} for the table rows whose name is one of `names`."""
    rows = {}
    for line in open(path, encoding="utf-8"):
        cols = re.split(r"\s{2,}", line.strip())
        if len(cols) == 11 and cols[0] in names:
            rows[cols[0]] = (cols[6], int(cols[10]))
    return rows


def counters(trace):
    with open(trace, encoding="utf-8") as f:
        rng = [e for e in json.load(f)["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") == "cuda_profiler_range"]
    ranges = len(rng)
    # the set-up's and the profiled steps' kernels; HTA may leave out the timeline pass's (step -2)
    need = sum(1 for e in rng if (e.get("args") or {}).get("step") != -2)
    work = tempfile.mkdtemp(prefix="hta_check.")
    try:
        shutil.copy(trace, os.path.join(work, "rank0.json"))
        a = TraceAnalysis(trace_dir=work, include_last_profiler_step=True)
        dfs = a.get_cupti_counter_data_with_operators(ranks=[0])
        df = dfs[0] if dfs else None
        if df is None:
            print(f"counters rows=0 ranges={ranges}: HTA paired no kernel with its launch")
            return 1
        print(f"counters rows={len(df)} ranges={ranges} outside the timeline pass={need}")
        bad = not (need <= len(df) <= ranges) or need == 0
        for _, r in df.iterrows():
            print(f"row {cut(r['name'])} top={r['top_level_op'] or '-'} bottom={r['bottom_level_op'] or '-'}")
            bad = bad or not r["top_level_op"]
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv):
    if len(argv) == 2 and argv[0] == "counters":
        return counters(argv[1])
    if len(argv) != 2:
        sys.exit(__doc__)
    trace, table = argv[0], argv[1]
    work = tempfile.mkdtemp(prefix="hta_check.")
    try:
        shutil.copy(trace, os.path.join(work, "rank0.json"))
        a = TraceAnalysis(trace_dir=work, include_last_profiler_step=True)
        iters = a.t.get_iterations()
        print("iterations", " ".join(str(i) for i in iters))
        df = a.t.get_trace(0)
        sym = a.t.symbol_table.sym_table
        df = df.assign(n=df["name"].map(lambda i: sym[i]), c=df["cat"].map(lambda i: sym[i]))
        k = df[(df["c"] == "kernel") & (df["iteration"] >= 0)]
        hta = {}
        for name, g in k.groupby("n"):
            hta[cut(name)] = (float(g["dur"].sum()), len(g))
        ours = table_kernels(table, set(hta))
        bad = 0
        for name in sorted(hta):
            us, n = hta[name]
            t_text, t_calls = ours.get(name, ("missing", 0))
            ok = fmt_time(us) == t_text and n == t_calls
            bad += not ok
            print(f"kernel {name} hta={fmt_time(us)} table={t_text} calls={n}/{t_calls}"
                  f"{'' if ok else '  <-- differs'}")
        if not iters or not hta:
            print("no iterations or no kernels found")
            bad += 1
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
