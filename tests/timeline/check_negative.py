#!/usr/bin/env python3
"""Checks compare --timeline's results for phases below zero.

  check_negative.py RESULTS_DIR PATH...

Every PATH of RESULTS_DIR/results.json ran and has its phases; none is
below zero beyond the clocks' error as timelinelib.below_zero() says (not
a mean or median, nor one I/O's phase); an engine path joined every I/O with its server's record (the
join is strict: a server stamp outside the engine's window is a stamp on
the wrong side of its event). Prints what is wrong and exits 1; else
prints each path's phases' means.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import timelinelib  # noqa: E402


def main():
    d, paths = sys.argv[1], sys.argv[2:]
    res = json.load(open(os.path.join(d, "results.json")))
    by = {r["path"]: r for r in res["paths"]}
    bad = []
    for path in paths:
        r = by.get(path)
        t = (r or {}).get("timeline") or {}
        if not r or r.get("status") != "ok" or not t.get("phases"):
            bad.append(f"{path}: no phases ({(r or {}).get('status')}, "
                       f"{t.get('none', t)})")
            continue
        bad += [f"{path}: {w}" for w in timelinelib.below_zero(t)]
        if path in timelinelib.ENGINES and t.get("join_rate") != 1.0:
            bad.append(f"{path}: {t.get('joined')} of {t.get('records')} I/Os joined "
                       f"with their {t.get('server')} record, expected all (the others "
                       "have a server stamp outside the engine's window: a phase below "
                       "zero beyond the clocks' error)")
        print(f"{path}: " + ", ".join(f"{p['name']} {p['mean_us']:.2f}"
                                      for p in t["phases"]))
    for b in bad:
        print(f"FAIL: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
