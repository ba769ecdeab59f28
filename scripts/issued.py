"""The syncs and trims each path issued, from fio's JSON, and the paths
whose rates of them differ from the others': scripts/compare's and
rerun-documents' reports show both (docs/compare.md, "Syncs and trims").

fio's JSON counts the fsync= syncs it issued in "sync": "total_ios". It
leaves fdatasync= syncs out there (fio 3.33 and 3.41); only the sync
latency's sample count ("sync": "lat_ns": "N", the syncs completed) holds
them, so that count stands in when total_ios is 0. Trims: "trim":
"total_ios"; I/Os: reads, writes and trims.

The syncs of end_fsync= and fsync_on_close= are in neither.

Runs differ in length (compare's rounds are timed), so paths are judged
on rates: syncs per write and trims per I/O. A path is flagged when
either rate differs from the median of all the paths' rates by more than
LIMIT (10%) of that median: at fsync=8 every path should issue one sync
per 8 writes, whatever its engine. A rate is judged only where some path
issued MIN_COUNT (10) or more: a few are too coarse for a rate (fsync=256
over 500 writes is one sync, over 511 too).

  issued.py FILE...
      one line per fio JSON output: writes syncs trims ios, the two rates;
      exit status 1 when a file's rates differ from the others' by more
      than 10% (at least two files), else 0.
"""

import statistics
import sys

import fio_json
from procs import exit_with

LIMIT = 0.10
MIN_COUNT = 10
COUNTS = ("writes", "syncs", "trims", "ios")
# (what is counted, what it is counted per, the words for the rate)
RATES = (("syncs", "writes", "syncs per write"), ("trims", "ios", "trims per I/O"))
# the keys compare keeps them under in a path's figures
FIGURE = {k: "issued_" + k for k in COUNTS}


def counts(data):
    """{writes, syncs, trims, ios} issued in one fio run (its JSON DATA),
    summed over its jobs."""
    c = dict.fromkeys(COUNTS, 0)
    for job in data.get("jobs", []):
        n = {d: (job.get(d) or {}).get("total_ios", 0) or 0 for d in fio_json.DDIRS}
        sync = job.get("sync") or {}
        c["writes"] += n["write"]
        c["trims"] += n["trim"]
        c["ios"] += sum(n.values())
        c["syncs"] += sync.get("total_ios") or (sync.get("lat_ns") or {}).get("N", 0) or 0
    return c


def as_figures(c):
    """Counts C under compare's figure keys (FIGURE)."""
    return {FIGURE[k]: v for k, v in c.items()}


def of_figures(figures):
    """The counts in compare's FIGURES (medians of the rounds), or None
    when they hold none."""
    if not figures or FIGURE["syncs"] not in figures:
        return None
    return {k: figures.get(FIGURE[k]) or 0 for k in COUNTS}


def of_results(results):
    """{path: counts} of compare's RESULTS (its paths' entries) that ran."""
    return {r["path"]: of_figures(r["figures"]) for r in results if r["status"] == "ok"}


def rate(c, what):
    """C's syncs per write or trims per I/O (WHAT: "syncs" or "trims"), or
    None when nothing was issued to count them per."""
    per = dict((w, p) for w, p, _ in RATES)[what]
    return c[what] / c[per] if c.get(per) else None


def medians(by_path):
    """{what: the median of BY_PATH's rates of it} for "syncs" and "trims",
    over the paths that have the rate (None when none has)."""
    out = {}
    for what, _, _ in RATES:
        known = [v for v in (rate(c, what) for c in by_path.values() if c) if v is not None]
        out[what] = statistics.median(known) if known else None
    return out


def differing(by_path, limit=LIMIT):
    """{path: [what, ...]} of the paths of BY_PATH ({path: counts}) whose
    syncs per write or trims per I/O differ from the median of all the
    paths' by more than LIMIT of that median (any at all when the median
    is 0). Under two paths with a rate, or where no path issued MIN_COUNT
    of them, nothing differs."""
    out = {}
    mids = medians(by_path)
    for what, _, _ in RATES:
        rates = {p: rate(c, what) for p, c in by_path.items() if c}
        known = [v for v in rates.values() if v is not None]
        most = max((c[what] for c in by_path.values() if c), default=0)
        if len(known) < 2 or most < MIN_COUNT:
            continue
        mid = mids[what]
        for p, v in rates.items():
            if v is not None and abs(v - mid) > limit * mid:
                out.setdefault(p, []).append(what)
    return out


def _rate_text(v):
    return "–" if v is None else f"{v:.3f}"


WORDS = dict((w, t) for w, _, t in RATES)
HEADER = "writes | syncs | syncs per write | I/Os | trims | trims per I/O | |"


def _row(c, odd):
    """A table row's cells after its path: C's counts and rates, and the
    mark of what differs (ODD: [what, ...])."""
    mark = "**differs**: " + ", ".join(WORDS[w] for w in odd) if odd else ""
    return (f"{c['writes']:.0f} | {c['syncs']:.0f} | {_rate_text(rate(c, 'syncs'))} | "
            f"{c['ios']:.0f} | {c['trims']:.0f} | {_rate_text(rate(c, 'trims'))} | {mark} |")


def _said(by_path, odd):
    """What differs, in words: "PATH: syncs per write R against the
    paths' median M; ..."."""
    mids = medians(by_path)
    return "; ".join(f"{p}: " + ", ".join(f"{WORDS[w]} {_rate_text(rate(by_path[p], w))} "
                                          f"against the paths' median {_rate_text(mids[w])}"
                                          for w in what) for p, what in odd.items())


def _issued_any(by_path):
    return any(c["syncs"] or c["trims"] for c in by_path.values())


def intro(limit=LIMIT):
    """The sentence above a table of counts."""
    return (f"A path whose syncs per write or trims per I/O differ from the median of the "
            f"paths' by more than {limit:.0%} is marked **differs**: its figures are not of "
            "the same work as the others' (docs/compare.md, \"Syncs and trims\").")


def lines(by_path, limit=LIMIT):
    """scripts/compare's table of BY_PATH's counts ({path: counts or None})
    and what differs, as markdown lines; [] when no path issued a sync or a
    trim."""
    by_path = {p: c for p, c in by_path.items() if c}
    if not _issued_any(by_path):
        return []
    odd = differing(by_path, limit)
    out = ["Syncs and trims each path issued (fio's JSON, medians of the rounds). "
           + intro(limit), "", "| path | " + HEADER, "|" + "---|" * 8]
    out += [f"| {p} | " + _row(c, odd.get(p)) for p, c in by_path.items()]
    if odd:
        out += ["", f"**The paths did not issue the same syncs and trims** (more than "
                f"{limit:.0%} apart): {_said(by_path, odd)}."]
    return out


def grouped_lines(groups, limit=LIMIT):
    """One table, a test column first, of GROUPS ({test: {path: counts or
    None}}) whose paths issued a sync or a trim, and below it each test
    whose paths differ; [] when none issued any."""
    groups = {g: {p: c for p, c in by.items() if c} for g, by in groups.items()}
    groups = {g: by for g, by in groups.items() if _issued_any(by)}
    if not groups:
        return []
    out = ["| test | path | " + HEADER, "|" + "---|" * 9]
    odds = {g: differing(by, limit) for g, by in groups.items()}
    for g, by in groups.items():
        out += [f"| {g} | {p} | " + _row(c, odds[g].get(p)) for p, c in by.items()]
    said = [f"- {g}: {_said(groups[g], odd)}" for g, odd in odds.items() if odd]
    if said:
        out += ["", f"**These tests' paths did not issue the same syncs and trims** (more "
                f"than {limit:.0%} apart):", ""] + said
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    by_file = {f: counts(fio_json.load_fio_json(f)) for f in argv}
    for f, c in by_file.items():
        print(f"{f} " + " ".join(f"{k}={c[k]}" for k in COUNTS) + " "
              + " ".join(f"{w}_per_{p.rstrip('s')}={_rate_text(rate(c, w))}"
                         for w, p, _ in RATES))
    odd = differing(by_file)
    for f, what in odd.items():
        print(f"issued: {f}: {', '.join(what)} differ from the others' by more than "
              f"{LIMIT:.0%}", file=sys.stderr)
    return 1 if odd else 0


if __name__ == "__main__":
    exit_with(main, "issued")
