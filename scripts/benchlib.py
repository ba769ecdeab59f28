#!/usr/bin/env python3
"""The records of one `scripts/bench` run and its text report: what each
section declared (its title, ratios, targets, spreads, lean probe) and
every figure measured, kept in memory while it runs (bench_run.py adds
them) and saved beside the report as JSON, from which perfreport.py
renders the page again:

  benchlib.py report RECORDS.json [--md FILE]
      print the per-section tables (medians over rounds, ratios, targets)

A record is a tuple, its kind first (Records.add takes it; a run's JSON
file is the list of them, and the page's, docs/performance.json, the list
of the runs its sections come from: merge_runs, save_runs):
  header   key        value
  meta     key        value     (for the page of --report: perfreport.py)
  section  ID         title     [bench section]
  probe    ID         label     what it is
      LABEL is the section's lean probe: the same transport driven by a
      client that does nothing else (pipe-probe, ring-client), no fio
  value    ID         label   round   metric  value
  ratio    ID         metric  num     den                  (informational)
  target   ID         metric  num     den     op  threshold
  diff     ID         metric  num     den
      NUM - DEN, the median of the rounds' own differences (what NUM
      adds per I/O: TLS's own cost, TLS - plain)
  spread   ID         metric  label   [op threshold [reference]]
      stats.spread of LABEL's rounds (a target when op and threshold are
      given). With a reference label the target is judged only where the
      reference's own spread meets it too: when both miss, the verdict is
      NOT JUDGED (counted apart from PASS and MISS)
The statistics are scripts/stats.py's.
"""

import collections
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402

# metric -> (row title, format)
METRICS = {
    "iops": ("IOPS", "{:.1f}k", 1e-3),
    "bw_mib": ("bandwidth MiB/s", "{:.0f}", 1),
    "cpu_us_per_io": ("CPU us per I/O", "{:.3f}", 1),
    "clat_mean_us": ("clat mean us", "{:.2f}", 1),
    "lat_mean_us": ("lat mean us", "{:.2f}", 1),
    "cpu_pct": ("fio usr+sys %", "{:.1f}", 1),
    "server_cpu_us_per_io": ("server CPU us/IO", "{:.3f}", 1),
    "server_cpu_pct": ("server CPU %", "{:.1f}", 1),
    "seconds": ("seconds", "{:.2f}", 1),
    "speed_probe_ms": ("CPU probe ms", "{:.0f}", 1),
}
METRIC_ORDER = list(METRICS)


def fmt(metric, v):
    if v is None:
        return "-"
    _, f, scale = METRICS.get(metric, (metric, "{:.4g}", 1))
    return f.format(v * scale)


def rounds_of(vals, label, metric):
    """LABEL's rounds of METRIC in VALS ({label: {metric: [...]}})."""
    return vals.get(label, {}).get(metric, [])


def paired_ratio(vals, num, den, metric):
    """NUM over DEN for METRIC (stats.ratio: the median of the rounds' own
    ratios when both ran every round, else the ratio of the medians)."""
    return stats.ratio(rounds_of(vals, num, metric), rounds_of(vals, den, metric))


def interval_text(vals, num, den, metric):
    """" (95%: low–high)" for a target's ratio over six rounds or more
    (median_interval of the rounds' own ratios), else ""."""
    ci = stats.median_interval(stats.paired_ratios(rounds_of(vals, num, metric),
                                                   rounds_of(vals, den, metric)))
    return f" (95%: {ci[0]:.2f}–{ci[1]:.2f})" if ci else ""


def paired_diffs(vals, num, den, metric):
    """NUM - DEN for METRIC in each round when both ran every round, else
    the difference of the medians alone; [] when either is missing."""
    a = vals.get(num, {}).get(metric, [])
    b = vals.get(den, {}).get(metric, [])
    if not a or not b:
        return []
    if len(a) == len(b):
        return [x - y for x, y in zip(a, b)]
    return [statistics.median(a) - statistics.median(b)]


def fmt_diff(metric, v):
    """A difference in METRIC's format, signed: +0.512, -1.2k."""
    text = fmt(metric, abs(v))
    return ("-" if v < 0 else "+") + text


def positive(values, label, metric):
    """LABEL's rounds of METRIC that measured something."""
    return [v for v in values.get(label, {}).get(metric, []) if v > 0]


def compare(v, op, threshold):
    return v <= threshold if op == "<=" else v >= threshold


class Records:
    """The records of one bench run (see the module's doc). A section
    measured in the free placement is named ID@free (split_sid). .all is
    every record in the order added (what save() writes)."""

    def __init__(self, records=()):
        self.header, self.meta, self.order = [], {}, []
        self.titles, self.commands, self.probes = {}, {}, {}
        self.values, self.ratios, self.spreads = {}, {}, {}
        self.diffs = {}
        self.all = []
        for rec in records:
            self.add(*rec)

    def add(self, kind, *fields):
        """One record (KIND and its fields, as in the module's doc);
        ValueError names a malformed one."""
        rec = (kind,) + tuple(str(f) if not isinstance(f, (int, float)) else f
                              for f in fields)
        try:
            _add(self, [kind] + [str(f) for f in fields])
        except (ValueError, IndexError):
            raise ValueError(f"not a bench record: {rec!r}")
        self.all.append(rec)

    def save(self, path):
        """Write the records to PATH as JSON (load() reads them back)."""
        with open(path, "w") as f:
            json.dump(self.all, f, indent=0)
            f.write("\n")


def split_sid(sid):
    """(ID, placement) of a section's name: ID@free is ID's free placement,
    anything else the pinned one."""
    base, _, place = sid.partition("@")
    return base, place or "pinned"


def record_sid(rec):
    """The section (its id without @placement) a record belongs to; None for
    a run's header and meta."""
    if rec[0] in ("header", "meta"):
        return None
    return split_sid(str(rec[1]))[0]


def merge_runs(runs, new):
    """The page's RUNS (each a run's records, oldest first) with the run
    NEW added: a section is kept from the newest run that measured it, in
    every placement that run measured; a run left with none is dropped."""
    newer = {record_sid(r) for r in new if r[0] == "section"}
    out = []
    for run in runs:
        kept = [r for r in run if record_sid(r) not in newer]
        if any(r[0] == "section" for r in kept):
            out.append(kept)
    return out + [list(new)]


def _json_list(path):
    """The JSON list in the file PATH; ValueError when it is none."""
    with open(path) as f:
        try:
            data = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path}: not the records a bench run saves: {e}")
    if not isinstance(data, list):
        raise ValueError(f"{path}: not the records a bench run saves (no list)")
    return data


def load_runs(path):
    """The runs a page's records file holds (save_runs), or the one run
    of a run's own file (Records.save): lists of records, oldest first.
    ValueError names a bad one."""
    data = _json_list(path)
    runs = data if data and isinstance(data[0], list) and data[0] and \
        isinstance(data[0][0], list) else [data]
    for n, run in enumerate(runs, 1):
        if not isinstance(run, list):
            raise ValueError(f"{path}: run {n}: not a list of records")
        for m, rec in enumerate(run, 1):
            if not isinstance(rec, list) or not rec:
                raise ValueError(f"{path}: run {n}, record {m}: not a record a bench run "
                                 f"saves: {rec!r}")
            try:
                Records().add(*rec)
            except ValueError:
                raise ValueError(f"{path}: run {n}, record {m}: not a record a bench run "
                                 f"saves: {rec!r}")
    return runs


def save_runs(path, runs):
    """Write RUNS (lists of records) to PATH, a record a line, so that a
    partial re-run's diff shows the sections it replaced."""
    with open(path, "w") as f:
        f.write("[\n")
        for i, run in enumerate(runs):
            f.write("[\n" + ",\n".join(json.dumps(list(r)) for r in run) + "\n]")
            f.write(",\n" if i < len(runs) - 1 else "\n")
        f.write("]\n")


def load(path):
    """The Records saved in the file PATH; ValueError names a bad one."""
    recs = _json_list(path)
    r = Records()
    for n, rec in enumerate(recs, 1):
        if not isinstance(rec, list) or not rec:
            raise ValueError(f"{path}: record {n}: not a record a bench run saves: {rec!r}")
        try:
            r.add(*rec)
        except ValueError:
            raise ValueError(f"{path}: record {n}: not a record a bench run saves: {rec!r}")
    return r


def _add(r, rec):
    kind, rest = rec[0], rec[1:]
    if kind == "header":
        r.header.append((rest[0], rest[1]))
    elif kind == "meta":
        r.meta[rest[0]] = rest[1]
    elif kind == "section":
        r.order.append(rest[0])
        r.titles[rest[0]] = rest[1]
        if len(rest) > 2 and rest[2]:
            r.commands[rest[0]] = rest[2]
    elif kind == "probe":
        r.probes.setdefault(rest[0], []).append((rest[1], rest[2]))
    elif kind == "value":
        sid, label, _, metric, v = rest
        r.values.setdefault(sid, {}).setdefault(label, {}).setdefault(metric, []).append(float(v))
    elif kind == "ratio":
        sid, metric, num, den = rest
        r.ratios.setdefault(sid, []).append((metric, num, den, None, None))
    elif kind == "target":
        sid, metric, num, den, op, thr = rest
        r.ratios.setdefault(sid, []).append((metric, num, den, op, float(thr)))
    elif kind == "diff":
        sid, metric, num, den = rest
        r.diffs.setdefault(sid, []).append((metric, num, den))
    elif kind == "spread":
        sid, metric, label = rest[:3]
        op, thr = (rest[3], float(rest[4])) if len(rest) > 4 else (None, None)
        ref = rest[5] if len(rest) > 5 else None
        r.spreads.setdefault(sid, []).append((metric, label, op, thr, ref))
    else:
        raise ValueError(kind)


def report(r, md_path=None):
    """Print the report of the Records R (and write it as markdown to
    MD_PATH); the number of targets missed."""
    header, order, titles = r.header, r.order, r.titles
    values, ratios, spreads, diffs = r.values, r.ratios, r.spreads, r.diffs

    out, md = [], []
    verdicts = collections.Counter()
    md.append("# torus benchmark\n")
    for k, v in header:
        out.append(f"{k}: {v}")
        md.append(f"- {k}: {v}")
    for sid in order:
        labels = list(values.get(sid, {}))
        med = {l: {m: statistics.median(vs) for m, vs in ms.items()}
               for l, ms in values.get(sid, {}).items()}
        rounds = max((len(vs) for ms in values.get(sid, {}).values() for vs in ms.values()), default=0)
        out.append("")
        title = titles[sid] + (", free placement" if split_sid(sid)[1] == "free" else "")
        out.append(f"== {title} [{sid}] (median of {rounds} round{'s' if rounds != 1 else ''})")
        # columns of 12, wider for a long label (torus-1gbit)
        w = max([12] + [len(l) + 2 for l in labels])
        head = f"  {'':18}" + "".join(f"{l:>{w}}" for l in labels) + "   ratio"
        out.append(head)
        md.append(f"\n## {title} (`{sid}`, median of {rounds} rounds)\n")
        md.append("| metric | " + " | ".join(labels) + " | ratio | target |")
        md.append("|---|" + "---|" * len(labels) + "---|---|")
        metrics = [m for m in METRIC_ORDER if any(m in med[l] for l in labels)]
        for m in metrics:
            cells = [fmt(m, med[l].get(m)) for l in labels]
            notes, mdr, mdt = [], [], []
            for (rm, num, den, op, thr) in ratios.get(sid, []):
                if rm != m:
                    continue
                r = paired_ratio(values.get(sid, {}), num, den, m)
                if r is None:
                    s = f"{num}/{den} n/a"
                else:
                    s = f"{num}/{den} {r:.2f}"
                if op:
                    s += interval_text(values.get(sid, {}), num, den, m)
                mdr.append(s)
                if op:
                    verdict = "PASS" if r is not None and compare(r, op, thr) else "MISS"
                    verdicts[verdict] += 1
                    s += f" (target {op} {thr:.2f}: {verdict})"
                    mdt.append(f"{op} {thr:.2f} **{verdict}**")
                notes.append(s)
            for (dm, num, den) in diffs.get(sid, []):
                if dm != m:
                    continue
                ds = paired_diffs(values.get(sid, {}), num, den, m)
                s = f"{num}-{den} " + (fmt_diff(m, statistics.median(ds)) if ds else "n/a")
                mdr.append(s)
                notes.append(s)
            title = METRICS.get(m, (m,))[0]
            out.append(f"  {title:18}" + "".join(f"{c:>{w}}" for c in cells) + "   " + "; ".join(notes))
            md.append(f"| {title} | " + " | ".join(cells) + f" | {'; '.join(mdr)} | {'; '.join(mdt)} |")
        for (m, label, op, thr, ref) in spreads.get(sid, []):
            vs = positive(values.get(sid, {}), label, m)
            r = stats.spread(vs)
            title = METRICS.get(m, (m,))[0]
            if r is None:
                s = f"{label} {title} spread n/a (fewer than 2 rounds)"
            else:
                s = f"{label} {title} spread (max/min over {len(vs)} rounds) {r:.2f}"
            if op:
                verdict = "PASS" if r is not None and compare(r, op, thr) else "MISS"
                rr = stats.spread(positive(values.get(sid, {}), ref, m)) if ref else None
                if verdict == "MISS" and rr is not None and not compare(rr, op, thr):
                    verdict = "NOT JUDGED"
                    s += f" (target {op} {thr:.2f} where {ref}'s is; {ref}'s own is {rr:.2f}: NOT JUDGED)"
                else:
                    s += f" (target {op} {thr:.2f}: {verdict})"
                verdicts[verdict] += 1
            out.append(f"  {s}")
            md.append(f"\n- {s.replace('MISS', '**MISS**').replace('PASS', '**PASS**').replace('NOT JUDGED', '**NOT JUDGED**')}")
        # every round, for judging the noise
        md.append("\nRounds:\n")
        for l in labels:
            for m in metrics:
                vs = values[sid][l].get(m)
                if vs:
                    md.append(f"- {l} {METRICS.get(m, (m,))[0]}: " + ", ".join(fmt(m, v) for v in vs))
    out.append("")
    tally = f"targets: {verdicts['PASS']} PASS, {verdicts['MISS']} MISS"
    if verdicts["NOT JUDGED"]:
        tally += f", {verdicts['NOT JUDGED']} NOT JUDGED"
    out.append(tally)
    md.append(f"\n{tally}")
    print("\n".join(out))
    if md_path:
        with open(md_path, "w") as f:
            f.write("\n".join(md) + "\n")
    return verdicts["MISS"]


def main(argv):
    if len(argv) >= 2 and argv[0] == "report":
        md = None
        if len(argv) >= 4 and argv[2] == "--md":
            md = argv[3]
        report(load(argv[1]), md)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (ValueError, KeyError, OSError) as e:
        print(f"benchlib: {e}", file=sys.stderr)
        sys.exit(1)
