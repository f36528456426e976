r"""Facts about one of our Chrome traces, for the Bats suites.

usage: trace_query.py PATH WHAT
WHAT:
  valid          exit 0 when the file is a JSON object with traceEvents (a list of objects),
                 schemaVersion and deviceProperties; else exit 1 with the reason on stderr
  kernels        the name of every `kernel` event, one per line
  count CAT      the number of complete events (ph X) in category CAT
  ranges NAME    the number of host ranges (user_annotation or cpu_op) named NAME
  flows          the number of ac2g flow starts (ph s)
  launch-apis    the `launch api` arg of every kernel event, one per line
  occupancy      the `est. achieved occupancy %` arg of every kernel event, one per line
  counter REGEX METRIC  METRIC's value in the kernel events whose name matches REGEX (one per
                 line; "-" where the kernel has no such arg)
  step-counter METRIC  "name<TAB>value" of METRIC for every kernel event of the profiled steps
                 (args step >= 1: not the set-up's), in trace order ("-" where it has no such arg)
  achieved       "name<TAB>achieved<TAB>theoretical" for every kernel with counters: the
                 measured sm__warps_active % and our theoretical occupancy %
  profiler-steps the names of the ProfilerStep ranges, one per line
  rank           distributedInfo's rank
  timeline-kernels  the name of every kernel event of the timeline pass, one per line
  facts         every answer above but counter and achieved, one per line, QUERY<TAB>ARG<TAB>VALUE
                 (a list query one line per entry, in order; count and ranges one line per category
                 or name present; valid 1 or 0): helpers.bash's trace_query reads them instead of
                 starting Python for each query. In ARG and VALUE a backslash, a tab, a line feed
                 and a carriage return are written \\, \t, \n and \r (a name may hold any of them),
                 so that each fact stays one line of three fields.
Every query but timeline-kernels leaves out the timeline pass (the events whose args say
step -2, the profiler's PROF_STEP_TIMELINE): the suites count the profiled steps. A file that
is not such a trace fails every query: exit 1, the reason on one line on stderr; so do usage
errors (no PATH or WHAT, a query without its arguments, a REGEX that does not compile) and
`rank` on a trace without distributedInfo's rank.
"""
import re
import json
import sys


TIMELINE_STEP = -2


def trace_problem(path):
    """(doc, None) for a readable trace: a JSON object whose traceEvents is a list of objects
    (each one's args, where set, an object; its name, where set, a string; a kernel event with
    a name and an args object), with schemaVersion and deviceProperties; else (None, why)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"
    except (ValueError, RecursionError) as e:
        return None, f"{path}: not JSON ({str(e)[:80]})"
    if not isinstance(doc, dict):
        return None, f"{path}: the top level is a {type(doc).__name__}, not an object"
    ev = doc.get("traceEvents")
    if not isinstance(ev, list):
        return None, f"{path}: traceEvents is {'missing' if ev is None else 'a ' + type(ev).__name__}, not a list"
    for i, e in enumerate(ev):
        if not isinstance(e, dict):
            return None, f"{path}: traceEvents[{i}] is a {type(e).__name__}, not an object"
        if e.get("args") is not None and not isinstance(e["args"], dict):
            return None, f"{path}: traceEvents[{i}].args is not an object"
        if "name" in e and not isinstance(e["name"], str):
            return None, f"{path}: traceEvents[{i}].name is not a string"
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            if "name" not in e:
                return None, f"{path}: traceEvents[{i}] is a kernel event without a name"
            if not isinstance(e.get("args"), dict):
                return None, f"{path}: traceEvents[{i}] is a kernel event without an args object"
    for key in ("schemaVersion", "deviceProperties"):
        if key not in doc:
            return None, f"{path}: no {key}"
    return doc, None


def fact_field(v):
    r"""A fact's ARG or VALUE on one line: str(v) with a backslash, a tab, a line feed and a
    carriage return written as \\, \t, \n, \r (helpers.bash's trace_query reads them back)."""
    return (str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def facts(doc, ev_all, ev):
    """The facts query: prints the lines; 0."""
    out = []
    ok = isinstance(ev, list) and "schemaVersion" in doc and "deviceProperties" in doc
    out.append(("valid", "", 1 if ok else 0))
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    out += [("kernels", "", e["name"]) for e in kernels]
    out += [("launch-apis", "", e["args"].get("launch api", "")) for e in kernels]
    out += [("occupancy", "", e["args"].get("est. achieved occupancy %", "")) for e in kernels]
    counts, ranges, flows = {}, {}, 0
    for e in ev:
        if e.get("ph") == "X":
            if isinstance(e.get("cat"), str):  # the queries name a category as a string
                counts[e["cat"]] = counts.get(e["cat"], 0) + 1
            if e.get("cat") in ("user_annotation", "cpu_op") and isinstance(e.get("name"), str):
                ranges[e["name"]] = ranges.get(e["name"], 0) + 1
            if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"):
                out.append(("profiler-steps", "", e["name"]))
        elif e.get("ph") == "s" and e.get("cat") == "ac2g":
            flows += 1
    out.append(("flows", "", flows))
    out += [("count", c, n) for c, n in counts.items()]
    out += [("ranges", r, n) for r, n in ranges.items()]
    out += [("timeline-kernels", "", e["name"]) for e in ev_all
            if e.get("ph") == "X" and e.get("cat") == "kernel" and (e.get("args") or {}).get("step") == TIMELINE_STEP]
    if isinstance(doc.get("distributedInfo"), dict) and "rank" in doc["distributedInfo"]:
        out.append(("rank", "", doc["distributedInfo"]["rank"]))
    print("\n".join("%s\t%s\t%s" % (q, fact_field(a), fact_field(v)) for q, a, v in out))
    return 0


# the queries that take arguments, and how many
ARGS = {"count": 1, "ranges": 1, "counter": 2, "step-counter": 1}
USAGE = "usage: trace_query.py PATH WHAT [ARG...] (WHAT: see the top of tests/trace_query.py)"


def main():
    """Usage errors (missing PATH, WHAT or a query's arguments, a bad REGEX) and bad traces:
    one line on stderr, exit 1."""
    if len(sys.argv) < 3:
        sys.exit(f"trace_query.py: {USAGE}")
    path, what = sys.argv[1], sys.argv[2]
    need = ARGS.get(what, 0)
    if len(sys.argv) != 3 + need:
        sys.exit(f"trace_query.py: {what} takes {need} argument{'s' if need != 1 else ''}, "
                 f"got {len(sys.argv) - 3}; {USAGE}")
    rx = None
    if what == "counter":
        try:
            rx = re.compile(sys.argv[3])
        except re.error as e:
            sys.exit(f"trace_query.py: counter: REGEX {sys.argv[3][:40]!r} is not a regular expression ({e})")
    doc, problem = trace_problem(path)
    if problem:
        sys.exit(f"trace_query.py: {problem}")
    if what == "valid":
        sys.exit(0)
    ev_all = doc["traceEvents"]
    ev = [e for e in ev_all if (e.get("args") or {}).get("step") != TIMELINE_STEP]
    if what == "facts":
        sys.exit(facts(doc, ev_all, ev))
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if what == "kernels":
        for e in kernels:
            print(e["name"])
    elif what == "count":
        print(sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") == sys.argv[3]))
    elif what == "ranges":
        print(sum(1 for e in ev if e.get("ph") == "X" and e.get("name") == sys.argv[3]
                  and e.get("cat") in ("user_annotation", "cpu_op")))
    elif what == "flows":
        print(sum(1 for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"))
    elif what == "launch-apis":
        for e in kernels:
            print(e["args"].get("launch api", ""))
    elif what == "occupancy":
        for e in kernels:
            print(e["args"].get("est. achieved occupancy %", ""))
    elif what == "counter":
        metric = sys.argv[4]
        for e in kernels:
            if rx.search(e["name"]):
                print(e["args"].get(metric, "-"))
    elif what == "step-counter":
        for e in kernels:
            a = e.get("args") or {}
            step = a.get("step")
            if isinstance(step, int) and not isinstance(step, bool) and step >= 1:
                print("%s\t%s" % (e["name"], a.get(sys.argv[3], "-")))
    elif what == "achieved":
        for e in kernels:
            a = e["args"]
            if "sm__warps_active.avg.pct_of_peak_sustained_active" in a:
                print("%s\t%s\t%s" % (e["name"], a["sm__warps_active.avg.pct_of_peak_sustained_active"],
                                      a.get("theoretical occupancy %", "-")))
    elif what == "profiler-steps":
        for e in ev:
            if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"):
                print(e["name"])
    elif what == "timeline-kernels":
        for e in ev_all:
            if e.get("ph") == "X" and e.get("cat") == "kernel" and (e.get("args") or {}).get("step") == TIMELINE_STEP:
                print(e["name"])
    elif what == "rank":
        info = doc.get("distributedInfo")
        if not isinstance(info, dict) or "rank" not in info:
            sys.exit(f"trace_query.py: {path}: no distributedInfo with a rank")
        print(info["rank"])
    else:
        sys.exit("trace_query.py: unknown query " + what)


if __name__ == "__main__":
    main()
