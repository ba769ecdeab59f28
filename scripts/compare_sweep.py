"""scripts/compare --sweep's grid and bookkeeping: the grid's syntax
(KEY=V1,V2 ...), its cells and the job of each (the user's job with only
the swept parameters set), the loop over the cells (progress and ETA,
results.json written as each finishes, Ctrl-C), --resume's check of a
results folder, each kernel path's extra share of latency per cell, and
the crossover rule. Nothing here runs a path: comparelib.run_cell does
(run() is handed it), sweep_report.py writes the report."""

import datetime
import hashlib
import itertools
import json
import os
import re
import subprocess
import time

import harness
import stats
from compare_job import OVERRIDDEN, REPO, rewrite_job
from compare_rounds import SPREAD_LIMIT
from compare_run import log

# the default grid: randrw-style block sizes and queue depths, 16 cells;
# with DEFAULT_PATHS at 3 rounds of DEFAULT_SECONDS, 10 minutes on a loaded
# 2-CPU machine (docs/compare.md)
DEFAULT_GRID = ("bs=4k,16k,64k,256k", "iodepth=1,4,16,64")
DEFAULT_PATHS = ("engine-nbd", "engine-tcmu", "kernel-loop")
DEFAULT_SECONDS = 3
# the crossover's thresholds of the kernel's extra share of latency
THRESHOLDS = (0.10, 0.25)
# fio's other names of a parameter: the grid says the first
ALIASES = {"blocksize": "bs", "readwrite": "rw"}
# what the job may say that would override (or replace) a swept parameter:
# commented out of the cell's job with it
REPLACES = {"bs": ("blocksize", "bssplit", "bsrange", "blocksize_range"),
            "rw": ("readwrite",)}
# compare's own per-path settings, and the engine's target: not sweepable
NOT_SWEPT = OVERRIDDEN | {"uri", "timeline"}
STATE = "results.json"
CELLS_DIR = "cells"


class GridError(ValueError):
    """A grid the sweep cannot run; the message names the problem and the fix."""


def sorted_values(values):
    """VALUES in ascending order when every one is a size or a number
    (4k, 64k, 1M; 1, 16), else as written: the crossover's "smallest"."""
    try:
        sizes = [harness.parse_size(v) for v in values]
    except ValueError:
        return list(values)
    return [v for _, v in sorted(zip(sizes, values), key=lambda x: x[0])]


def parse_grid(items):
    """The grid from --sweep's ITEMS ("bs=4k,16k", "iodepth=1,4"; none: the
    default grid): [(key, [values, ascending])], the keys in the order
    given. Raises GridError."""
    items = [w for it in (items or DEFAULT_GRID) for w in it.split()]
    grid, seen = [], set()
    for it in items:
        key, eq, vals = it.partition("=")
        key = ALIASES.get(key.strip().lower(), key.strip().lower())
        if not eq:
            hint = (" (the job file goes before --sweep: scripts/compare JOB --sweep ...)"
                    if os.path.isfile(it) else "")
            raise GridError(f"--sweep {it}: not KEY=V1,V2,... (e.g. bs=4k,64k iodepth=1,16)"
                            + hint)
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
            raise GridError(f"--sweep {it}: {key!r} is not a fio option name")
        if key in NOT_SWEPT:
            raise GridError(f"--sweep {it}: compare sets {key} itself for every path; sweep "
                            "a job parameter (bs, iodepth, rw, numjobs, ...)")
        if key in seen:
            raise GridError(f"--sweep: {key} is given twice: list its values once, "
                            f"{key}=A,B,C")
        values = [v.strip() for v in vals.split(",")]
        if not vals.strip() or any(not v for v in values):
            raise GridError(f"--sweep {it}: an empty value: give {key}=V1,V2,...")
        bad = [v for v in values if re.search(r"[\s;#=\[\]]", v)]
        if bad:
            raise GridError(f"--sweep {it}: {bad[0]!r} is not a job value")
        if len(set(values)) != len(values):
            raise GridError(f"--sweep {it}: a value is given twice")
        seen.add(key)
        grid.append((key, sorted_values(values)))
    return grid


def grid_text(grid):
    return " ".join(f"{k}={','.join(vs)}" for k, vs in grid)


def cells(grid):
    """Every cell of GRID, as {key: value} in the grid's order, the first
    key outermost (bs=4k with each iodepth, then bs=16k...)."""
    keys = [k for k, _ in grid]
    return [dict(zip(keys, combo)) for combo in itertools.product(*(vs for _, vs in grid))]


def cell_id(cell):
    """A cell's name and directory: bs4k_iodepth16 (no '=' or ',', which
    qemu's -virtfs would take apart when a guest shares it)."""
    return "_".join(k + re.sub(r"[^A-Za-z0-9.+-]", "-", v) for k, v in cell.items())


def cell_label(cell):
    return " ".join(f"{k}={v}" for k, v in cell.items())


def write_cell_job(src, dst, cell):
    """The user's job SRC with only CELL's parameters set (in every job
    section; what the job said for them, or for their aliases, commented
    out), to DST: each path then rewrites it as compare does."""
    drop = {a for k in cell for a in REPLACES.get(k, ())}
    rewrite_job(src, dst, cell, drop=drop,
                header=f"scripts/compare --sweep's cell {cell_label(cell)}")


# ------------------------------------------------------- the state

def job_digest(job):
    with open(job, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def settings(a):
    """What must be the same for --resume to carry a sweep on: the job (and
    its text), the grid, the paths, the rounds and every run's conditions."""
    return {"job": a.job, "job_sha256": job_digest(a.job), "grid": [[k, vs] for k, vs in a.grid],
            "paths": list(a.paths), "rounds": a.rounds, "seconds": a.seconds,
            "uri": a.uri, "store": a.store, "size": a.size, "kernel": a.kernel, "fs": a.fs,
            "mount_options": a.mount_options, "as_written": a.as_written,
            "job_direct": a.job_direct, "engine_in_guest": a.engine_in_guest,
            "timeline": a.timeline, "engine": a.engine}


def load_state(folder):
    """The sweep's results.json in FOLDER; GridError when there is none."""
    path = os.path.join(folder, STATE)
    try:
        with open(path) as f:
            state = json.load(f)
    except (OSError, ValueError) as e:
        raise GridError(f"--resume {folder}: no sweep to carry on ({path}: {e})")
    if "sweep" not in state or "cells" not in state:
        raise GridError(f"--resume {folder}: {path} is not a sweep's (scripts/compare --sweep)")
    return state


def resumed_cells(state, now):
    """The finished cells of STATE ({id: cell}) when its settings are NOW's;
    GridError naming what differs otherwise."""
    was = state["sweep"]["settings"]
    diff = [k for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k)]
    if diff:
        said = "; ".join(f"{k}: {was.get(k)!r} then, {now.get(k)!r} now" for k in diff)
        raise GridError(f"--resume: the sweep in that folder ran otherwise ({said}): run the "
                        "same command with --resume, or start a new sweep")
    return {c["id"]: c for c in state["cells"] if c.get("status") == "done"}


def todo(all_cells, done):
    """The cells of ALL_CELLS not in DONE ({id: ...}), in order."""
    return [c for c in all_cells if cell_id(c) not in done]


def resume_argv(argv, folder):
    """The command line of a --resume run: the sweep's own (saved in
    FOLDER) when ARGV is only --resume DIR, else ARGV itself (checked
    against the saved settings later)."""
    rest = list(argv)
    for i, x in enumerate(rest):
        if x == "--resume":
            del rest[i:i + 2]
            break
        if x.startswith("--resume="):
            del rest[i]
            break
    if rest:
        return list(argv)
    return load_state(folder)["sweep"]["argv"] + ["--resume", folder]


def write_state(folder, state):
    """results.json, replaced whole (a reader never sees half of it)."""
    path = os.path.join(folder, STATE)
    with open(path + ".tmp", "w") as f:
        json.dump(state, f, indent=1)
    os.replace(path + ".tmp", path)


# ------------------------------------------------------ the loop

def hms(seconds):
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def commit():
    """The checkout's commit (short), '+' when it has changes; None outside git."""
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+" if dirty else "")) or None


def new_state(a, target, total):
    """results.json's head for this session: the settings (what --resume
    checks), the command, the target, when and at which commit; a resumed
    sweep keeps its first session's start and lists this one."""
    now = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit()}
    sweep = {"settings": settings(a), "argv": a.argv, "grid": grid_text(a.grid),
             "target": target, "started": now["date"], "kernel": os.uname().release,
             "commit": now["commit"], "resumed": [], "spread_limit": SPREAD_LIMIT,
             "cells_total": total}
    if getattr(a, "resume", None):
        was = a.state_was["sweep"]
        sweep.update(started=was["started"], commit=was["commit"],
                     resumed=was.get("resumed", []) + [now])
    return {"sweep": sweep, "cells": [], "interrupted": False}


def run(a, target, run_one, clock=time.monotonic):
    """Every cell of a.grid not in a.done (--resume's), in order: a progress
    line (cell n of N, elapsed, ETA), RUN_ONE(cell, its folder) -> its
    record, results.json written after each. Ctrl-C (KeyboardInterrupt)
    ends the loop with what finished. Returns the state (results.json's)."""
    all_cells = cells(a.grid)
    left = todo(all_cells, a.done)
    state = new_state(a, target, len(all_cells))
    done = dict(a.done)

    def finished():
        return [done[cell_id(c)] for c in all_cells if cell_id(c) in done]
    log(f"sweep: {len(all_cells)} cells ({grid_text(a.grid)}) of {', '.join(a.paths)}, "
        f"{a.rounds} round(s) of {a.seconds} s"
        + (f"; {len(done)} finished before (--resume)" if done else ""))
    guess = len(a.paths) * a.rounds * (a.seconds + 1.5)      # a run's set-up: about 1.5 s
    t0, ran = clock(), 0
    state["cells"] = finished()
    write_state(a.results, state)          # --resume works from the start
    try:
        for n, cell in enumerate(all_cells, 1):
            cid = cell_id(cell)
            if cid in done:
                continue
            elapsed = clock() - t0
            eta = (elapsed / ran if ran else guess) * (len(left) - ran)
            log(f"sweep: cell {n} of {len(all_cells)} ({cell_label(cell)}): elapsed "
                f"{hms(elapsed)}, ETA {hms(eta)}" + ("" if ran else " (a guess)"))
            done[cid] = run_one(cell, os.path.join(a.results, CELLS_DIR, cid))
            ran += 1
            state["cells"] = finished()
            write_state(a.results, state)
    except KeyboardInterrupt:
        state["interrupted"] = True
        log(f"sweep: interrupted; {len(done)} of {len(all_cells)} cells finished: carry on "
            f"with scripts/compare --resume {a.results}")
    state["cells"] = finished()
    # the sweep's time over its sessions
    state["elapsed_s"] = clock() - t0 + (a.state_was.get("elapsed_s") or 0
                                         if getattr(a, "resume", None) else 0)
    if getattr(a, "resume", None) and not ran:    # nothing left: the report written again
        state["sweep"]["resumed"].pop()
    write_state(a.results, state)
    return state


def exit_status(state):
    """130 when interrupted, 1 when a path failed in a cell, 2 when none ran."""
    if state["interrupted"]:
        return 130
    statuses = [r["status"] for c in state["cells"] for r in c["paths"]]
    if "failed" in statuses:
        return 1
    return 0 if "ok" in statuses else 2


# ------------------------------------------------ shares, crossover

def is_kernel(path):
    """A path through the kernel (costed against its engine), as against
    the engines (engine-tcmu and engine-libnbd are costed too)."""
    return not path.startswith("engine-")


def kernel_costs(results):
    """Per kernel path in one cell's RESULTS (compare's merged results,
    costs added): {path: its cost}: the extra share of latency
    ((kernel - engine) / kernel, the median of the rounds' own, with its
    min-max), the latency and CPU ratios and extra µs, whether it or its
    baseline moved more than the spread limit (flagged), and
    functional_only (no figure: emulated, or not comparable)."""
    by = {r["path"]: r for r in results}
    out = {}
    for r in results:
        cost = r.get("vs_engine")
        if not cost or not is_kernel(r["path"]):
            continue
        base = by.get(cost["baseline"]) or {}
        c = {"baseline": cost["baseline"],
             "functional_only": bool(r.get("functional_only") or base.get("functional_only")
                                     or "none_because" in cost),
             "flagged": bool(r.get("flagged") or base.get("flagged"))}
        if "none_because" in cost:
            c["none_because"] = cost["none_because"]
        rounds = cost.get("rounds") or []
        shares = [1 - 1 / x["latency_ratio"] for x in rounds if x.get("latency_ratio")]
        s = stats.summary(shares)
        c["latency_share"] = list(s) if s else None
        for key in ("latency_extra_us", "latency_ratio", "cpu_extra_us", "cpu_ratio"):
            if cost.get(key) is not None:
                c[key] = [cost[key]] + list((cost.get("range") or {}).get(key) or
                                            [cost[key], cost[key]])
        out[r["path"]] = c
    return out


def crossover(shares, limit):
    """The index of the first of SHARES (a line of the grid, in its order)
    from which every share is known and below LIMIT; None when the line
    never gets there for good (not in the grid)."""
    first = None
    for i, s in enumerate(shares):
        if s is not None and s < limit:
            if first is None:
                first = i
        else:
            first = None
    return first


def lines_of(grid, along):
    """The lines of GRID along the key ALONG: [(fixed {key: value}, [cells in
    ALONG's order])], one per combination of the other keys."""
    keys = [k for k, _ in grid]
    others = [(k, vs) for k, vs in grid if k != along]
    values = dict(grid)[along]
    out = []
    for combo in itertools.product(*(vs for _, vs in others)):
        fixed = dict(zip([k for k, _ in others], combo))
        out.append((fixed, [{k: (v if k == along else fixed[k]) for k in keys}
                            for v in values]))
    return out


def crossovers(grid, cell_costs, thresholds=THRESHOLDS):
    """The crossover of every kernel path: [{path, along, fixed, at:
    {threshold: value or None}, functional_only}] for each key of GRID and
    each line along it. CELL_COSTS: {cell id: kernel_costs(...)}."""
    paths = list(dict.fromkeys(p for c in cell_costs.values() for p in c))
    out = []
    for path in paths:
        for along, values in grid:
            for fixed, line in lines_of(grid, along):
                costs = [cell_costs.get(cell_id(c), {}).get(path) for c in line]
                shares = [c["latency_share"][0] if c and c.get("latency_share") and
                          not c["functional_only"] else None for c in costs]
                at = {}
                for t in thresholds:
                    i = crossover(shares, t)
                    at[t] = None if i is None else values[i]
                out.append({"path": path, "along": along, "fixed": fixed, "at": at,
                            "baseline": next((c["baseline"] for c in costs if c), None),
                            "functional_only": any(c and c["functional_only"] for c in costs),
                            "missing": sum(1 for c in costs if not c)})
    return out


def crossover_text(x):
    """One crossover line of the report."""
    where = " ".join(f"{k}={v}" for k, v in x["fixed"].items())
    head = f"{x['path']} (against {x['baseline']})" + (f", {where}" if where else "") + ":"
    if x["functional_only"]:
        return head + f" functional only (emulated or not comparable): no crossover along " \
                      f"{x['along']}"
    parts = []
    for t, v in x["at"].items():
        pct = f"{100 * t:.0f}%"
        parts.append(f"below {pct} from {x['along']}={v}" if v is not None
                     else f"below {pct} not in the grid")
    return head + " " + "; ".join(parts)
