#!/usr/bin/env python3
"""Facts about the regions tracks of a Chrome trace (common/regions.c), one per line.

    regions_query.py TRACE tracks     each track: "<name>\t<events>", then "tracks=N"
    regions_query.py TRACE inside     "outside=N" regions not inside the regions pass's kernel
                                      event, "overlap=N" pairs of regions on one track that
                                      overlap without nesting
    regions_query.py TRACE order      05's barrier order: per block and key tile n, every warp's
                                      n-th "load" after the prologue begins no later than any
                                      warp's n-th S begins: "tiles=N violations=N"
    regions_query.py TRACE first_load 07: per block, the producer's (warpgroup 0) first "TMA K"
                                      ends no later than each consumer's (warpgroups 1, 2; 3 too on rung 10) first
                                      S begins: "blocks=N missing=N violations=N" (missing: a
                                      block without a TMA K or without a consumer's S)
    regions_query.py TRACE pingpong   07's two consumers (warpgroups 1, 2) of each block that has
                                      both: "blocks=N", "pv_overlap=N" pairs of one consumer's
                                      O+=PV and the other's that overlap in time, then per
                                      consumer c (0, 1) "softmax_share_c<c>=F": the fraction of its
                                      softmax time during which the other consumer is inside its
                                      S=QK^T or O+=PV regions (their union), over all blocks
Times are compared in integer ns (the trace's us with 3 decimals); two regions overlap when each
begins before the other ends (touching ends do not overlap). A TRACE that is not such a trace
(missing, not JSON, not an object, traceEvents not a list of objects, a region, kernel or
thread_name event without the fields the queries read, `inside` without a regions pass kernel)
or a usage error: one line on stderr, exit 1.
"""
import json
import sys
from collections import defaultdict


def bad(msg):
    """One line on stderr, exit 1."""
    sys.exit("regions_query.py: " + " ".join(str(msg).split()))


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def event_problem(i, e):
    """Why traceEvents[i] lacks what the queries read, or None."""
    ph, cat = e.get("ph"), e.get("cat")
    region = ph == "X" and cat == "gpu_region"
    kernel = ph == "X" and cat == "kernel"
    thread = ph == "M" and e.get("name") == "thread_name"
    if not (region or kernel or thread):
        return None
    what = "a gpu_region" if region else "a kernel" if kernel else "a thread_name"
    need = ("pid", "tid", "ts", "dur") if region else ("pid", "ts", "dur") if kernel else ("pid", "tid")
    for key in need:
        if not number(e.get(key)):
            return f"traceEvents[{i}] is {what} event without a number {key}"
    a = e.get("args", {})
    if not isinstance(a, dict):
        return f"traceEvents[{i}].args is not an object"
    if thread and not isinstance(a.get("name"), str):
        return f"traceEvents[{i}] is a thread_name event without a string args.name"
    if region and (not isinstance(e.get("name"), str) or "block" not in a
                   or ("warp" not in a and "warpgroup" not in a)):
        return f"traceEvents[{i}] is a gpu_region event without a name, args.block and args.warp or warpgroup"
    return None


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        bad(f"cannot read {path}: {e.strerror or e}")
    except (ValueError, RecursionError) as e:
        bad(f"{path}: not JSON ({str(e)[:80]})")
    if not isinstance(doc, dict):
        bad(f"{path}: the top level is a {type(doc).__name__}, not an object")
    ev = doc.get("traceEvents")
    if not isinstance(ev, list):
        bad(f"{path}: traceEvents is {'missing' if ev is None else 'a ' + type(ev).__name__}, not a list")
    for i, e in enumerate(ev):
        if not isinstance(e, dict):
            bad(f"{path}: traceEvents[{i}] is a {type(e).__name__}, not an object")
        problem = event_problem(i, e)
        if problem:
            bad(f"{path}: {problem}")
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    regions = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_region"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"
               and e["pid"] >= 1000 and e.get("args", {}).get("regions pass") == 1]
    return names, regions, kernels


def ns(x):
    return int(round(x * 1000))


def span(e):
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def unit_of(e):
    a = e["args"]
    return a["warpgroup"] if "warpgroup" in a else a["warp"]


def by_block_unit(regions):
    """{block: {unit: [event, ...]}}"""
    per = defaultdict(lambda: defaultdict(list))
    for e in regions:
        per[e["args"]["block"]][unit_of(e)].append(e)
    return per


def union(spans):
    """The union of [s, t) spans, as sorted disjoint spans."""
    out = []
    for s, t in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t)
        else:
            out.append([s, t])
    return out


def covered(s, t, spans):
    """ns of [s, t) inside the disjoint spans."""
    return sum(max(0, min(t, b) - max(s, a)) for a, b in spans)


PRODUCTS = ("S=QK^T", "O+=PV")


QUERIES = ("tracks", "inside", "order", "first_load", "pingpong")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in QUERIES:
        bad("usage: regions_query.py TRACE " + "|".join(QUERIES))
    path, what = sys.argv[1], sys.argv[2]
    names, regions, kernels = load(path)
    if what == "inside" and not kernels:
        bad(f"{path}: no kernel event of the regions pass (args \"regions pass\": 1)")
    if what == "order" and any("warp" not in e["args"] for e in regions):
        bad(f"{path}: order reads args.warp of every gpu_region event; one has none")
    if what == "tracks":
        count = defaultdict(int)
        for e in regions:
            count[names.get((e["pid"], e["tid"]), "?")] += 1
        for name in sorted(count):
            print("%s\t%d" % (name, count[name]))
        print("tracks=%d" % len(count))
    elif what == "inside":
        k0, k1 = span(kernels[0])
        outside = sum(1 for e in regions if span(e)[0] < k0 or span(e)[1] > k1)
        by_track = defaultdict(list)
        for e in regions:
            by_track[(e["pid"], e["tid"])].append(span(e))
        overlap = 0
        for spans in by_track.values():
            spans.sort(key=lambda s: (s[0], -s[1]))
            stack = []
            for s, t in spans:
                while stack and stack[-1] <= s:
                    stack.pop()
                if stack and t > stack[-1]:
                    overlap += 1
                stack.append(t)
        print("kernels=%d" % len(kernels))
        print("outside=%d" % outside)
        print("overlap=%d" % overlap)
    elif what == "order":
        per = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
        for e in regions:
            a = e["args"]
            per[a["block"]][a["warp"]][e["name"]].append(e["ts"])
        tiles = violations = 0
        for block, warps in per.items():
            n_tiles = max(len(w["S=QK^T"]) for w in warps.values())
            for n in range(n_tiles):
                loads = [sorted(w["load"])[n + 1] for w in warps.values() if len(w["load"]) > n + 1]
                scores = [sorted(w["S=QK^T"])[n] for w in warps.values() if len(w["S=QK^T"]) > n]
                tiles += 1
                if loads and scores and max(loads) > min(scores):
                    violations += 1
        print("tiles=%d violations=%d" % (tiles, violations))
    elif what == "first_load":
        blocks = missing = violations = 0
        for block, units in sorted(by_block_unit(regions).items()):
            blocks += 1
            loads = [span(e)[1] for e in units.get(0, []) if e["name"] == "TMA K"]
            consumers = [c for c in units if c != 0]   # 2, or 3 on rung 10
            firsts = []
            for c in consumers:
                s = [span(e)[0] for e in units.get(c, []) if e["name"] == "S=QK^T"]
                if s:
                    firsts.append(min(s))
            if not loads or len(consumers) < 2 or len(firsts) != len(consumers):
                missing += 1
            elif min(loads) > min(firsts):
                violations += 1
        print("blocks=%d missing=%d violations=%d" % (blocks, missing, violations))
    elif what == "pingpong":
        blocks = overlap = 0
        soft = [0, 0]
        under = [0, 0]
        for block, units in sorted(by_block_unit(regions).items()):
            if 1 not in units or 2 not in units:
                continue
            blocks += 1
            pv = [[span(e) for e in units[c] if e["name"] == "O+=PV"] for c in (1, 2)]
            overlap += sum(1 for a in pv[0] for b in pv[1] if a[0] < b[1] and b[0] < a[1])
            products = [union(span(e) for e in units[c] if e["name"] in PRODUCTS) for c in (1, 2)]
            for i in (0, 1):
                for e in units[1 + i]:
                    if e["name"] == "softmax":
                        s, t = span(e)
                        soft[i] += t - s
                        under[i] += covered(s, t, products[1 - i])
        print("blocks=%d" % blocks)
        print("pv_overlap=%d" % overlap)
        for i in (0, 1):
            print("softmax_share_c%d=%.3f" % (i, under[i] / soft[i] if soft[i] else 0.0))


if __name__ == "__main__":
    main()
