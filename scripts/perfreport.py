#!/usr/bin/env python3
"""The page of `scripts/bench --report` (docs/performance.md by default),
from the records of the runs its sections come from (benchlib.py describes
them; a run saves them beside its report as JSON, the page beside it as
PAGE.json, docs/performance.json):

  perfreport.py RECORDS.json PAGE

The page says when, where (CPU, cores, kernel, fio, the commit) and how
(mode, rounds, the command) each run was measured, then for each section its
ratios (the median of each round's own ratio, with their min-max) in every
placement measured (pinned: servers on one CPU, clients on another; free:
no pinning, as users run them), its absolute figures as context (medians
with min-max), its lean probe (the same transport driven by a client that
does nothing else: the limit on this machine), and the command that
re-runs it. render() builds the text; nothing here runs a benchmark.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import stats  # noqa: E402

PLACES = ("pinned", "free")
PLACE_TEXT = {
    "pinned": "pinned: servers on CPU 0, clients (fio, the probes) on CPU 1",
    "free": "free: no pinning, the scheduler places servers and clients, as users run them",
}
OPS = {"<=": "≤", ">=": "≥"}
HISTORY = "performance-history.md"
# what the summary sets against the lean probe: how much, and how fast
LIMIT_METRICS = ("iops", "bw_mib", "lat_mean_us")
# A server at this much of a CPU (its median) under both clients of a
# ratio to the lean probe is the bound: the ratio is marked BOUND_MARK.
SERVER_BOUND_PCT = 90.0
BOUND_MARK = "‡"
BOUND_NOTE = (f"{BOUND_MARK} server-bound: the server ran at {SERVER_BOUND_PCT:.0f}% of a CPU or "
              "more under both clients (its `server CPU %` median), so the ratio says how "
              "each client's traffic lets the server work, not the client's gap to the "
              "transport's limit.")


def ratio_range(vals, num, den, metric):
    """(median, min, max) of NUM/DEN for METRIC over the rounds: each
    round's own ratio when both ran every round, else the ratio of the
    medians with no range (min and max None); None when either is
    missing."""
    rs = stats.paired_ratios(benchlib.rounds_of(vals, num, metric),
                             benchlib.rounds_of(vals, den, metric))
    if rs:
        return tuple(stats.summary(rs))
    r = benchlib.paired_ratio(vals, num, den, metric)
    return (r, None, None) if r is not None else None


def ratio_text(r):
    if r is None:
        return "n/a"
    med, lo, hi = r
    if lo is None or lo == hi:
        return f"{med:.2f}"
    return f"{med:.2f} [{lo:.2f}–{hi:.2f}]"


def figure_text(metric, vs):
    """Median [min–max] of VS in METRIC's format."""
    s = stats.summary(vs)
    if s is None:
        return "–"
    med = benchlib.fmt(metric, s.median)
    if len(vs) < 2 or s.min == s.max:
        return med
    return f"{med} [{benchlib.fmt(metric, s.min)}–{benchlib.fmt(metric, s.max)}]"


def metric_title(metric):
    return benchlib.METRICS.get(metric, (metric,))[0]


def verdict(value, op, thr):
    return "PASS" if value is not None and benchlib.compare(value, op, thr) else "MISS"


class Section:
    """One section of the page: its id, title, bench section, and per
    placement its values, ratios, spreads and probes."""

    def __init__(self, sid):
        self.sid, self.title, self.command = sid, sid, sid
        self.places = {}        # placement -> the run's sid in the records
        self.probes = []        # (label, what it is)


def sections(rec):
    """The page's Sections in the order of the run, each with the
    placements it was measured in."""
    out, by_id = [], {}
    for sid in rec.order:
        base, place = benchlib.split_sid(sid)
        s = by_id.get(base)
        if s is None:
            s = by_id[base] = Section(base)
            out.append(s)
        if place == "pinned" or s.title == base:
            s.title = rec.titles[sid]
        s.command = rec.commands.get(sid, s.command)
        s.places[place] = sid
        for p in rec.probes.get(sid, []):
            if p not in s.probes:
                s.probes.append(p)
    return out


class Row:
    """One line of a section's table of ratios: TEXT, CELLS {placement:
    text}, TARGET (text, or None), VERDICTS {placement: verdict}, PROBE
    (a ratio to the lean probe), METRIC and DEN (its denominator)."""

    def __init__(self, text, cells, target=None, verdicts=None, probe=False, metric=None,
                 den=None):
        self.text, self.cells, self.target = text, cells, target
        self.verdicts, self.probe = verdicts or {}, probe
        self.metric, self.den = metric, den


def ratio_rows(rec, s, places):
    """The Rows of every ratio section S declares, each once, those to
    the lean probe last."""
    probes = {label for label, _ in s.probes}
    seen, rows = set(), []
    for place in places:
        for (m, num, den, op, thr) in rec.ratios.get(s.places[place], []):
            if (m, num, den) in seen:
                continue
            seen.add((m, num, den))
            cells = {p: ratio_range(rec.values.get(s.places[p], {}), num, den, m)
                     for p in places}
            text = f"{metric_title(m)}: {num} / {den}"
            if den in probes:
                text += " (the lean probe)"
            elif den == "builtin":
                text += " (fio's own engine)"
            row = Row(text, {p: ratio_text(c) for p, c in cells.items()}, probe=den in probes,
                      metric=m, den=den)
            if row.probe and m in LIMIT_METRICS:
                for p in places:
                    if cells[p] and server_bound(rec.values.get(s.places[p], {}), num, den):
                        row.cells[p] += " " + BOUND_MARK
            if op:
                row.verdicts = {p: verdict(cells[p] and cells[p][0], op, thr) for p in places}
                row.target = f"{OPS.get(op, op)} {thr:.2f}"
                for p in places:
                    row.cells[p] += benchlib.interval_text(rec.values.get(s.places[p], {}),
                                                           num, den, m)
            rows.append(row)
    rows.sort(key=lambda r: r.probe)
    return rows


def diff_text(metric, ds):
    """Median [min–max] of the differences DS, signed, in METRIC's format."""
    s = stats.summary(ds)
    if s is None:
        return "n/a"
    med = benchlib.fmt_diff(metric, s.median)
    if len(ds) < 2 or s.min == s.max:
        return med
    return f"{med} [{benchlib.fmt_diff(metric, s.min)}–{benchlib.fmt_diff(metric, s.max)}]"


def diff_rows(rec, s, places):
    """The Rows of section S's differences (NUM − DEN: what NUM adds per
    I/O), each the median of the rounds' own with their min–max."""
    seen, rows = set(), []
    for place in places:
        for (m, num, den) in rec.diffs.get(s.places[place], []):
            if (m, num, den) in seen:
                continue
            seen.add((m, num, den))
            cells = {p: diff_text(m, benchlib.paired_diffs(rec.values.get(s.places[p], {}),
                                                           num, den, m)) for p in places}
            rows.append(Row(f"{metric_title(m)}: {num} − {den}", cells, metric=m, den=den))
    return rows


def spread_rows(rec, s, places):
    """The Rows of section S's spreads (the largest round over the
    smallest); a target is judged only where the reference's own spread
    meets it (else NOT JUDGED)."""
    seen, rows = set(), []
    for place in places:
        for (m, label, op, thr, ref) in rec.spreads.get(s.places[place], []):
            if (m, label) in seen:
                continue
            seen.add((m, label))
            cells, verdicts = {}, {}
            for p in places:
                vals = rec.values.get(s.places[p], {})
                sp = stats.spread(benchlib.positive(vals, label, m))
                cells[p] = "n/a" if sp is None else f"{sp:.2f}"
                if op and sp is None:
                    verdicts[p] = "n/a"     # one round: no spread to judge
                elif op:
                    v = verdict(sp, op, thr)
                    rr = stats.spread(benchlib.positive(vals, ref, m)) if ref else None
                    if v == "MISS" and rr is not None and not benchlib.compare(rr, op, thr):
                        v = "NOT JUDGED"
                    verdicts[p] = v
            target = None
            if op:
                target = f"{OPS.get(op, op)} {thr:.2f}" + (f" where {ref}'s is" if ref else "")
            rows.append(Row(f"{metric_title(m)}: {label}, max / min over the rounds", cells,
                            target, verdicts))
    return rows


def target_text(row):
    if not row.target:
        return ""
    return f"{row.target}: " + ", ".join(f"{v if v == 'n/a' else f'**{v}**'} {p}"
                                         for p, v in row.verdicts.items())


def labels_of(rec, s, places):
    out = []
    for p in places:
        for label in rec.values.get(s.places[p], {}):
            if label not in out:
                out.append(label)
    return out


def server_bound(vals, num, den):
    """Whether the server ran at SERVER_BOUND_PCT or more (median) under
    both NUM and DEN in the values VALS of one placement."""
    for label in (num, den):
        pct = vals.get(label, {}).get("server_cpu_pct", [])
        if not pct or stats.summary(pct).median < SERVER_BOUND_PCT:
            return False
    return True


def bound_note(rows):
    """BOUND_NOTE, as lines after a table, when a row of ROWS is marked."""
    if any(c.endswith(" " + BOUND_MARK) for r in rows for c in r.cells.values()):
        return [BOUND_NOTE, ""]
    return []


def section_text(rec, s, rerun, run=None):
    places = [p for p in PLACES if p in s.places]
    lines = [f"## {s.title} (`{s.sid}`)", ""]
    if run:
        lines += [f"Measured in run {run}.", ""]
    cmd = f"scripts/bench --sections {s.command} --placements {','.join(places)}"
    lines.append(f"Re-run: `{cmd}{' ' + rerun if rerun else ''}`")
    lines.append("")
    for label, what in s.probes:
        lines += [f"Lean probe (`{label}`): {what}.", ""]
    ratios = ratio_rows(rec, s, places)
    rows = [r for r in ratios if not r.probe] + diff_rows(rec, s, places) + \
        [r for r in ratios if r.probe] + spread_rows(rec, s, places)
    if rows:
        lines.append("| ratio, median [min–max] of the rounds' own | " +
                     " | ".join(places) + " | target |")
        lines.append("|---|" + "---|" * len(places) + "---|")
        for row in rows:
            lines.append(f"| {row.text} | " + " | ".join(row.cells[p] for p in places)
                         + f" | {target_text(row)} |")
        lines.append("")
        lines += bound_note(rows)
    labels = labels_of(rec, s, places)
    metrics = [m for m in benchlib.METRIC_ORDER
               if any(m in rec.values.get(s.places[p], {}).get(l, {})
                      for p in places for l in labels)]
    if metrics:
        lines.append("| figure, median [min–max] | placement | " + " | ".join(labels) + " |")
        lines.append("|---|---|" + "---|" * len(labels))
        for m in metrics:
            for p in places:
                vals = rec.values.get(s.places[p], {})
                lines.append(f"| {metric_title(m)} | {p} | " + " | ".join(
                    figure_text(m, vals.get(l, {}).get(m, [])) for l in labels) + " |")
        lines.append("")
    return lines


def summary_text(rec, secs):
    """Every target, every ratio to a lean probe in IOPS, bandwidth or
    latency and, beside it, the ratio to fio's own engine on the same
    metric, and every difference (what one client adds per I/O, such as
    TLS): one line each."""
    shown = [p for p in PLACES if any(p in s.places for s in secs)]
    lines = ["| section | ratio | " + " | ".join(shown) + " | target |",
             "|---|---|" + "---|" * len(shown) + "---|"]
    tally = {p: {"PASS": 0, "MISS": 0, "NOT JUDGED": 0} for p in PLACES}
    shown_rows = []
    for s in secs:
        places = [p for p in PLACES if p in s.places]
        rows = ratio_rows(rec, s, places) + spread_rows(rec, s, places)
        probed = {r.metric for r in rows if r.probe and r.metric in LIMIT_METRICS}
        diffs = diff_rows(rec, s, places)
        for row in rows + diffs:
            if not (row.target or row in diffs or
                    row.metric in probed and (row.probe or row.den == "builtin")):
                continue
            lines.append(f"| `{s.sid}` | {row.text} | " + " | ".join(
                row.cells.get(p, "–") for p in shown) + f" | {target_text(row)} |")
            shown_rows.append(row)
            for p, v in row.verdicts.items():
                if v in tally[p]:
                    tally[p][v] += 1
    lines.append("")
    lines += bound_note(shown_rows)
    for p in PLACES:
        t = tally[p]
        if sum(t.values()):
            lines.append(f"Targets, {p}: {t['PASS']} PASS, {t['MISS']} MISS"
                         + (f", {t['NOT JUDGED']} NOT JUDGED" if t["NOT JUDGED"] else "") + ".")
    return lines


def mode_text(meta):
    rounds, runtime = meta.get("rounds", "?"), meta.get("runtime", "?")
    runs = f"{rounds} round{'s' if rounds != '1' else ''} of {runtime} s per client"
    if meta.get("mode") == "quick":
        return (f"quick ({runs}): a smoke run, its figures noisy and without spread; "
                "the full mode is `scripts/bench --report`")
    return f"full ({runs})"


def busy_text(meta):
    parts = meta.get("busy", "").split()
    if len(parts) != 3:
        return "not recorded"
    busy, total, wait = parts
    if wait == "0":
        return "not checked (--quiet-wait 0)"
    return f"{busy} of {total} runs started with a CPU over 15% busy after waiting {wait} s"


def run_text(m, places):
    """The bullets that say how the run of meta M was measured."""
    return [
        f"- **Command**: `{m.get('command', 'scripts/bench --report')}`",
        f"- **Mode**: {mode_text(m)}",
        f"- **Date**: {m.get('started', '?')} to {m.get('finished', '?')}",
        f"- **Commit**: {m.get('commit', 'unknown')}",
        f"- **Machine**: {m.get('cpu', 'unknown CPU')}, {m.get('cores', '?')} cores, "
        f"Linux {m.get('kernel', '?')}",
        f"- **Software**: {m.get('versions', '?')}",
        "- **Placements**: " + "; ".join(PLACE_TEXT[p] for p in places),
        f"- **Load average** (1, 5, 15 min): {m.get('load_start', '?')} at the start, "
        f"{m.get('load_end', '?')} at the end; busy machine: {busy_text(m)}",
    ]


def runs_text(runs):
    """The page's account of its runs: RUNS is [(Records, [Section])]."""
    if len(runs) == 1:
        rec, secs = runs[0]
        places = [p for p in PLACES if any(p in s.places for s in secs)]
        return ["## This run", ""] + run_text(rec.meta, places) + [""]
    lines = ["## The runs", "",
             "The sections below come from these runs, each section from the newest run",
             "that measured it:", ""]
    for n, (rec, secs) in enumerate(runs, 1):
        places = [p for p in PLACES if any(p in s.places for s in secs)]
        lines += [f"### Run {n}: {rec.meta.get('started', '?')}", ""]
        lines += run_text(rec.meta, places)
        lines += ["- **Sections**: " + ", ".join(f"`{s.sid}`" for s in secs), ""]
    return lines


def render(rec):
    """The page for the Records REC of one run, as a string."""
    return render_runs([rec])


def render_runs(runs):
    """The page for RUNS (Records, oldest first; a section is taken from
    the newest run that measured it, in the bench's order of sections), as
    a string."""
    owned, taken = [], set()
    # The bench's own order of sections (its newest run's), then the runs'.
    order = runs[-1].meta.get("order", "").split() if runs else []
    for rec in runs:
        order += [s.sid for s in sections(rec) if s.sid not in order]
    for rec in reversed(runs):
        secs = [s for s in sections(rec) if s.sid not in taken]
        taken |= {s.sid for s in secs}
        if secs:
            owned.insert(0, (rec, secs))
    merged, source = benchlib.Records(), {}
    for n, (rec, secs) in enumerate(owned, 1):
        ids = {s.sid for s in secs}
        for r in rec.all:
            if benchlib.record_sid(r) in ids:
                merged.add(*r)
        for sid in ids:
            source[sid] = (n if len(owned) > 1 else None, rec.meta.get("rerun", ""))
    secs = sorted(sections(merged), key=lambda s: order.index(s.sid))
    lines = [
        "# Performance",
        "",
        "Written by `scripts/bench --report`, which replaces the sections it runs (all, unless",
        "--sections says otherwise) and keeps the others, their records in performance.json:",
        "do not edit it, run the command. What was measured before, each figure with its",
        f"commit, date and command, and what the figures led to: [{HISTORY}]({HISTORY}).",
        "",
    ]
    lines += runs_text(owned)
    lines += [
        "## Reading it",
        "",
        "In each section the clients take turns, round by round, so that drift on the",
        "machine hits them alike. A ratio is the median of each round's own ratio (the two",
        "runs of a round are back to back), with the smallest and largest in brackets: that",
        "range is how much the figure moves here. A target's ratio over six rounds or more",
        "also gives the 95% interval of its median (95%: low–high), from the rounds ranked",
        "either side of it; the verdict is the median's. Absolute figures (medians, [min–max]) are",
        "context: they belong to this machine. Each section's lean probe is the physical",
        "limit of the same transport on this machine, a client that drives it and does",
        "nothing else (no fio): pipe-probe over a Unix socket or TCP for NBD (each round",
        "once sleeping for replies and once busy-polling, the faster counting: a client",
        "that sleeps pays a wake-up per batch of replies), ring-client over the TCMU ring.",
        "The engine's ratio to the probe is its gap to that limit,",
        "beside its ratio to fio's own engine. CPU per I/O is the fio process's usr + sys",
        "time over its I/Os (a probe's: its own); server CPU per I/O the server process's",
        "utime + stime over the run, per I/O.",
        "",
        "## Summary: targets, the gap to each lean probe and to fio's own engine",
        "",
    ]
    lines += summary_text(merged, secs)
    lines.append("")
    for s in secs:
        run, rerun = source[s.sid]
        lines += section_text(merged, s, rerun, run)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    text = render_runs([benchlib.Records(r) for r in benchlib.load_runs(argv[0])])
    with open(argv[1], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (ValueError, KeyError, OSError) as e:
        print(f"perfreport: {e}", file=sys.stderr)
        sys.exit(1)
