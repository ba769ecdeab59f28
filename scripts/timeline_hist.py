"""The kernel paths' timeline from bpftrace's histograms
(timeline_kernel.py runs the programs of scripts/bpf/): their output
parsed, each bucket's edges (the .bt files' scheme), and the phase summary
(docs/timeline.md's schema).

Each phase's durations go into a log-linear histogram inside the kernel (64
buckets per power of two, at most 1/64 = 1.6% wide). Counts, means and
percentiles come from that histogram, each value taken as its bucket's
midpoint (within 0.8%); percentiles are nearest-rank
(stats.hist_percentile).
"""

import re

import stats

HIST_RE = re.compile(r"^@h\[(\d+), (\d+)\]: (\d+)$")
END_RE = re.compile(r"^E issued (\d+) linked (\d+) orphans (\d+)$")


def bucket_edges(b):
    """[low, high) in ns of histogram bucket B (the .bt files' scheme)."""
    if b < 64:
        return b, b + 1
    shift, sub = divmod(b - 64, 64)
    return (64 + sub) << shift, (65 + sub) << shift


def parse_output(text):
    """bpftrace's output: {"hist": {phase: {bucket: count}},
    "end": {issued, linked, orphans}}."""
    out = {"hist": {}, "end": None}
    for line in text.splitlines():
        line = line.strip()
        m = HIST_RE.match(line)
        if m:
            p, b, c = map(int, m.groups())
            h = out["hist"].setdefault(p, {})
            h[b] = h.get(b, 0) + c
            continue
        m = END_RE.match(line)
        if m:
            issued, linked, orphans = map(int, m.groups())
            out["end"] = {"issued": issued, "linked": linked, "orphans": orphans}
    return out


def bucket_value(b):
    """The value histogram bucket B stands for, in ns: its midpoint (exact
    below 64 ns)."""
    lo, hi = bucket_edges(b)
    return lo if b < 64 else (lo + hi) / 2


def phase_entry(name, where, count, total_ns, hist):
    """One entry of the phase summary schema."""
    lo, hi = min(hist), max(hist)
    edges = [bucket_edges(b)[0] for b in range(lo, hi + 1)] + [bucket_edges(hi)[1]]
    return {
        "name": name, "where": where, "count": count,
        "mean_us": round(total_ns / count / 1000, 3),
        "p50_us": round(bucket_value(stats.hist_percentile(hist, 0.50, count)) / 1000, 3),
        "p99_us": round(bucket_value(stats.hist_percentile(hist, 0.99, count)) / 1000, 3),
        "p99.9_us": round(bucket_value(stats.hist_percentile(hist, 0.999, count)) / 1000, 3),
        "histogram": {"edges_ns": edges, "counts": [hist.get(b, 0) for b in range(lo, hi + 1)]},
    }


def summarize(parsed, phases, unlinked=None):
    """The phase summary list for PHASES from parse_output's result; phases
    nothing went through are left out. With UNLINKED (a phase tuple), when
    the program says FUSE requests outnumbered the loop requests they were
    linked to, the linked phases give way to UNLINKED."""
    use = list(phases)
    end = parsed["end"] or {}
    if unlinked is not None and end.get("orphans", 0) > 0:
        linked = {2, 3, 4}
        i = next(i for i, p in enumerate(use) if p[0] in linked)
        use = [p for p in use if p[0] not in linked]
        use.insert(i, unlinked)
    result = []
    for num, name, where in use:
        hist = parsed["hist"].get(num)
        if not hist:
            continue
        count, total = hist_sum(hist)
        result.append(phase_entry(name, where, count, total, hist))
    return result


def hist_sum(hist):
    """(count, total ns) of a {bucket: count} histogram, each value its
    bucket's midpoint (exact below 64 ns)."""
    count = total = 0
    for b, c in hist.items():
        count += c
        total += c * bucket_value(b)
    return count, total
