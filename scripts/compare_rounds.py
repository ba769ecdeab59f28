"""scripts/compare's rounds: every path once per round in alternation, a
path's rounds merged into its figures (the medians, their min-max, the
spread and its flag, over scripts/stats.py), and each path's cost against
the engine on its transport from the rounds' own ratios."""

import stats
import timeline_runs
from compare_paths import BY_NAME

ROUNDS = 3
# a path whose rounds moved more than this (max/min) is flagged
SPREAD_LIMIT = 1.25
# the figures its spread is judged on (bandwidth moves with IOPS)
SPREAD_KEYS = (("iops", "IOPS"), ("clat_mean_us", "mean latency"))
# the two engines, one per transport, from the same server: the second is
# costed against the first as the kernel paths are against their engine
TRANSPORTS = ("engine-tcmu", "engine-nbd")
COSTS = (("clat_mean_us", "latency"), ("machine_cpu_us_per_io", "cpu"),
         ("fio_cpu_us_per_io", "fio_cpu"))


def schedule(paths, rounds):
    """The runs in order, as (round, path): every path once per round, in
    the order asked (ABC ABC ABC), so that a slow spell of the machine
    falls on every path rather than on one."""
    return [(r, p) for r in range(1, rounds + 1) for p in paths]


def combine(rounds):
    """The figures of several rounds (dicts) as (medians, {key: [min, max]});
    a figure that is not a number (how the percentiles were taken) is the
    first round's that has one."""
    keys = list(dict.fromkeys(k for r in rounds for k in r))
    figures, ranges = {}, {}
    for key in keys:
        vals = [r.get(key) for r in rounds]
        s = stats.summary(vals)
        if s:
            figures[key], ranges[key] = s.median, [s.min, s.max]
        else:
            figures[key] = next((v for v in vals if v is not None), None)
    return figures, ranges


def spreads(ranges):
    """The spread (stats.spread) of each figure of SPREAD_KEYS that has a
    range (None when its smallest is 0)."""
    return {k: stats.spread(ranges[k]) for k, _ in SPREAD_KEYS if k in ranges}


def median_round(rounds):
    """The round (1-based) whose IOPS is the median (the lower middle one
    for an even number of rounds): its fio JSON stands for the path."""
    return stats.median_low_index([r["iops"] for r in rounds]) + 1


def merge_rounds(runs):
    """One path's result from its runs (run_path's results, round 1 first):
    figures are the medians of the rounds, range their [min, max], spread
    and flagged the headline figures' max/min and those over SPREAD_LIMIT;
    every round's own figures are in rounds. A path that could not run in
    some round has no figures: it is skipped (round 1) or failed (later)."""
    res = {k: runs[0][k] for k in ("path", "transport", "where", "functional_only")}
    res["notes"] = []
    for r in runs:
        res["notes"] += [n for n in r["notes"] if n not in res["notes"]]
        res["functional_only"] = res["functional_only"] or r["functional_only"]
        if r.get("filesystem"):
            res["filesystem"] = r["filesystem"]
    res["rounds"] = [{"round": i, "status": r["status"], "figures": r["figures"],
                      "fio_json": r.get("fio_json"), "speed_probe_ms": r.get("speed_probe_ms")}
                     for i, r in enumerate(runs, 1)]
    bad = next(((i, r) for i, r in enumerate(runs, 1) if r["status"] != "ok"), None)
    if bad:
        i, r = bad
        res["status"] = r["status"] if i == 1 else "failed"
        res["reason"] = r["reason"] if i == 1 else f"round {i}: {r['reason']}"
        res["figures"] = None
        return res
    res["status"], res["reason"] = "ok", None
    figs = [r["figures"] for r in runs]
    res["figures"], res["range"] = combine(figs)
    res["spread"] = spreads(res["range"])
    res["flagged"] = [k for k, v in res["spread"].items() if v and v > SPREAD_LIMIT]
    res["median_round"] = median_round(figs)
    timeline_runs.merge_rounds(res)
    return res


def baseline_of(path):
    """The path PATH is costed against: a kernel path's engine on the same
    transport; engine-tcmu's, engine-nbd (TRANSPORTS)."""
    spec = BY_NAME.get(path)
    if spec and spec.baseline:
        return spec.baseline
    return TRANSPORTS[1] if path == TRANSPORTS[0] else None


def round_cost(f, b):
    """One round's cost of figures F against the baseline's B: ratios, and
    the extra microseconds per I/O of latency and CPU."""
    c = {}
    for key, name in COSTS:
        if f.get(key) is not None and b.get(key):
            c[f"{name}_ratio"] = f[key] / b[key]
            c[f"{name}_extra_us"] = f[key] - b[key]
    c["iops_ratio"] = f["iops"] / b["iops"] if b.get("iops") else None
    return c


def round_figures(r):
    return [x["figures"] for x in r["rounds"]] if r.get("rounds") else [r["figures"]]


def add_costs(results):
    """vs_engine of every path with a baseline that ran in the same place:
    each ratio the median of the rounds' own ratios (round N against the
    baseline's round N, run moments apart), with range [min, max] and
    every round's in rounds."""
    by = {r["path"]: r for r in results}
    for r in results:
        base = by.get(baseline_of(r["path"]))
        if r["status"] != "ok" or not base or base["status"] != "ok":
            continue
        if r["where"] != base["where"]:
            # an emulated guest against the host says nothing about the kernel
            r["vs_engine"] = {"baseline": base["path"],
                              "none_because": f"{r['path']} ran {r['where']}, "
                                              f"{base['path']} {base['where']} "
                                              "(--engine-in-guest compares them there)"}
            continue
        per = [round_cost(f, b) for f, b in zip(round_figures(r), round_figures(base))]
        cost, ranges = {"baseline": base["path"]}, {}
        for key in dict.fromkeys(k for c in per for k in c):
            s = stats.summary([c.get(key) for c in per])
            cost[key] = s.median if s else None
            if s:
                ranges[key] = [s.min, s.max]
        cost["range"], cost["rounds"] = ranges, per
        r["vs_engine"] = cost
