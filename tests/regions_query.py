#!/usr/bin/env python3
"""Facts about the regions tracks of a Chrome trace (common/regions.c), one per line.

    regions_query.py TRACE tracks     each track: "<name>\t<events>", then "tracks=N"
    regions_query.py TRACE inside     "outside=N" regions not inside the regions pass's kernel
                                      event, "overlap=N" pairs of regions on one track that
                                      overlap without nesting
    regions_query.py TRACE order      05's barrier order: per block and key tile n, every warp's
                                      n-th "load" after the prologue begins no later than any
                                      warp's n-th S begins: "tiles=N violations=N"
"""
import json
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    regions = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_region"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"
               and e["pid"] >= 1000 and e.get("args", {}).get("regions pass") == 1]
    return names, regions, kernels


def main():
    path, what = sys.argv[1], sys.argv[2]
    names, regions, kernels = load(path)
    if what == "tracks":
        count = defaultdict(int)
        for e in regions:
            count[names.get((e["pid"], e["tid"]), "?")] += 1
        for name in sorted(count):
            print("%s\t%d" % (name, count[name]))
        print("tracks=%d" % len(count))
    elif what == "inside":
        k = kernels[0]
        k0, k1 = k["ts"], k["ts"] + k["dur"]
        outside = sum(1 for e in regions if e["ts"] < k0 or e["ts"] + e["dur"] > k1)
        by_track = defaultdict(list)
        for e in regions:
            by_track[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
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
    else:
        sys.exit("unknown query %s" % what)


if __name__ == "__main__":
    main()
