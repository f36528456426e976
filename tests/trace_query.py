"""Facts about one of our Chrome traces, for the Bats suites.

usage: trace_query.py PATH WHAT
WHAT:
  valid          exit 0 when the file is JSON with traceEvents, schemaVersion, deviceProperties
  kernels        the name of every `kernel` event, one per line
  count CAT      the number of complete events (ph X) in category CAT
  ranges NAME    the number of host ranges (user_annotation or cpu_op) named NAME
  flows          the number of ac2g flow starts (ph s)
  launch-apis    the `launch api` arg of every kernel event, one per line
  occupancy      the `est. achieved occupancy %` arg of every kernel event, one per line
"""
import json
import sys


def main():
    path, what = sys.argv[1], sys.argv[2]
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    if what == "valid":
        ok = isinstance(ev, list) and "schemaVersion" in doc and "deviceProperties" in doc
        sys.exit(0 if ok else 1)
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
    else:
        sys.exit("trace_query.py: unknown query " + what)


if __name__ == "__main__":
    main()
