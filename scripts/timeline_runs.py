"""The timeline of the scripts' runs. scripts/compare --timeline: every
path-round gets a timeline directory, <path>.rN.timeline in the results
folder. Engine paths run the job with timeline=DIR; engine-tcmu's tcmu-shim writes
there too; the server that compare starts for all paths writes into
servers.timeline, and the files of the connections a run opened move into
its directory after it. Kernel paths are traced by
scripts/timeline_kernel.py when it is there. rerun-documents --timeline
does the same per test (run_entry, report_lines). Reading and joining the
records is timelinelib.py's."""

import os
import time

import fio_json
from kernel_shares import KEYS as SHARE_KEYS
from timelinelib import ENGINES, JOIN_WARN, KERNEL_RUNS, KERNEL_RUNS_HEAD, KERNEL_RUNS_NOTE, \
    NO_FIO_LATENCY, TimelineError, analyse, kernel_runs, text_table, write_json

SERVERS_DIR = "servers.timeline"
# a record file is taken as complete once its size held this long
SETTLE_S = 0.2
SETTLE_MAX_S = 3.0


def round_dir(ctx, path):
    """The timeline directory of PATH's round being run (made here)."""
    d = ctx.rout(path, "timeline")
    os.makedirs(d, exist_ok=True)
    return d


def servers_dir(ctx):
    """Where the server compare starts writes its records (made here)."""
    d = ctx.out(SERVERS_DIR)
    os.makedirs(d, exist_ok=True)
    return d


def _sizes(dirs):
    out = {}
    for d in dirs:
        try:
            for n in os.listdir(d):
                if n.endswith(".rec"):
                    out[os.path.join(d, n)] = os.path.getsize(os.path.join(d, n))
        except OSError:
            pass
    return out


def settle(dirs, hold=SETTLE_S, limit=SETTLE_MAX_S):
    """Wait until the record files of DIRS stop growing: a writer writes
    its last records when its connection or ring closes, moments after fio
    has gone."""
    import time
    deadline = time.monotonic() + limit
    last, since = _sizes(dirs), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = _sizes(dirs)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= hold:
            return


def kernel_tracer():
    """scripts/timeline_kernel.py, or (None, why not)."""
    try:
        import timeline_kernel
    except ImportError as e:
        return None, f"scripts/timeline_kernel.py cannot be loaded ({e})"
    return timeline_kernel, None


def server_files(servers):
    """The names in the servers' directory now: pass to run_entry() as
    BEFORE, taken before fio starts."""
    return set(os.listdir(servers)) if os.path.isdir(servers) else set()


def run_entry(run_dir, servers, before, fio_out, path, rel):
    """One engine run's timeline entry, for compare's and rerun-documents'
    results: the server's record files its connections wrote (new in
    SERVERS since BEFORE) moved into RUN_DIR once they stop growing, the
    join, timeline.json and timeline.txt written there, and PATH's phase
    summary and what it rests on; {"none": why} when there is none. REL
    names RUN_DIR in the results."""
    settle([run_dir, servers])
    if os.path.isdir(servers):
        for n in sorted(set(os.listdir(servers)) - before):
            if n.endswith(".rec"):
                os.replace(os.path.join(servers, n), os.path.join(run_dir, n))
    try:
        res = analyse(run_dir, fio_out)
        r = res["paths"].get(path)
        if r and r["server"] and r["join_rate"] < JOIN_WARN:
            settle([run_dir], hold=1.0)      # a late close: once more
            res = analyse(run_dir, fio_out)
    except (TimelineError, fio_json.FioError, OSError) as e:
        return {"dir": rel, "none": f"no timeline: {e}"}
    write_json(res, os.path.join(run_dir, "timeline.json"))
    with open(os.path.join(run_dir, "timeline.txt"), "w") as f:
        f.write(text_table(res))
    r = res["paths"].get(path)
    if not r:
        return {"dir": rel, "none": f"no {path} records in {rel}"}
    out = {"dir": rel, "source": "records", **{k: r.get(k) for k in (
        "server", "form", "records", "incomplete", "joined", "join_rate", "phases",
        "negative", "beyond_error", "fio", "storage_split")}}
    out["warnings"] = res["warnings"]
    return out


class CompareRun:
    """One path-round's timeline in scripts/compare: job_options() before the
    job is written, around_fio() around fio, result() after it."""

    def __init__(self, ctx, path):
        self.ctx, self.path = ctx, path
        self.engine = path in ENGINES
        self.dir = round_dir(ctx, path)
        self.servers = ctx.out(SERVERS_DIR)
        self.before = set()
        self.none = None            # why this run has no timeline
        self.tracer = self.trace = None

    def job_options(self):
        # fio's lat percentiles: the median that fio_check() holds the
        # total to
        return {"timeline": self.dir, "lat_percentiles": "1"} if self.engine else {}

    def around_fio(self, info):
        """A context manager around fio's run; INFO (device, server_pids,
        jobfile, seconds, round) goes to the kernel tracer."""
        import contextlib
        self.before = server_files(self.servers)
        if self.engine:
            return contextlib.nullcontext()
        mod, why = kernel_tracer()
        if mod is None:
            self.none = f"no kernel timeline: {why}"
            return contextlib.nullcontext()
        ok, reason = mod.supported(self.path)
        if not ok:
            self.none = f"no kernel timeline: {reason}"
            return contextlib.nullcontext()
        self.tracer = mod
        return self._traced(mod, info)

    def _traced(self, mod, info):
        import contextlib

        @contextlib.contextmanager
        def run():
            with mod.trace(self.path, self.dir, info) as t:
                self.trace = t
                yield t
        return run()


    def result(self, fio_out):
        """This round's timeline entry for compare's results: the phase
        summary and what it rests on, or {"none": why}."""
        rel = os.path.relpath(self.dir, self.ctx.results)
        if self.none:
            return {"dir": rel, "none": self.none}
        if not self.engine:
            try:
                return {"dir": rel, "source": "kernel", "phases": self.trace.phases(),
                        "cost_note": self.trace.cost_note(),
                        "notes": self.trace.notes() if hasattr(self.trace, "notes") else []}
            except Exception as e:          # the tracer's failure is not the path's
                return {"dir": rel, "none": f"no kernel timeline: {e}"}
        return run_entry(self.dir, self.servers, self.before, fio_out, self.path, rel)


def merge_rounds(res):
    """compare's result RES of one path gets "timeline": its median round's
    entry (with "round"); every round keeps its own in rounds[].figures."""
    rounds = res.get("rounds") or []
    for r in rounds:
        if r.get("figures") and "timeline" in r["figures"]:
            r["timeline"] = r["figures"].pop("timeline")
    if res.get("figures"):
        res["figures"].pop("timeline", None)
    n = res.get("median_round")
    if n and len(rounds) >= n and rounds[n - 1].get("timeline"):
        res["timeline"] = dict(rounds[n - 1]["timeline"], round=n)


def report_lines(results):
    """report.md's section on where the time goes: a table of phases per
    path (µs per I/O, the median round), the join rates and fio's check."""
    rows, notes = [], []
    for r in results:
        t = r.get("timeline")
        if r.get("status") != "ok" or not t:
            continue
        fo = " (functional only)" if r.get("functional_only") else ""
        if t.get("none"):
            notes.append(f"- {r['path']}: {t['none']}")
            continue
        for p in t.get("phases") or []:
            name = f"**{p['name']}**" if p["where"] == "total" else p["name"]
            rows.append(f"| {r['path']}{fo} | {name} | {p['where']} | {fmt(p['mean_us'])} | "
                        f"{fmt(p['p50_us'])} | {fmt(p['p99_us'])} | "
                        f"{kernel_runs(r['path'], p['name'])} |")
        if t.get("server"):
            notes.append(f"- {r['path']}: {t['joined']} of {t['records'] - t['incomplete']} "
                         f"I/Os joined with their {t['server']} record "
                         f"({100 * t['join_rate']:.1f}%"
                         + (", BELOW 95%: the phases are of those only" if
                            t["join_rate"] < JOIN_WARN else "") + ")")
        elif t.get("form"):
            notes.append(f"- {r['path']}: no server records (the server and the wire are "
                         "one phase)")
        sp = t.get("storage_split")
        if sp:
            notes.append(f"- {r['path']}: its storage, split at the NBD request of {sp['matched']} "
                         f"of {sp['of']} commands (nbd-shim's records): " + ", ".join(
                             f"{p['name']} {fmt(p['mean_us'])} µs" for p in sp["phases"]))
        if t.get("fio") and t["fio"]["ratio"] is None:
            notes.append(f"- {r['path']}: {NO_FIO_LATENCY}")
        elif t.get("fio"):
            f = t["fio"]
            line = (f"- {r['path']}: the phases' total {fmt(f['total_mean_us'])} µs "
                    f"against fio's mean latency {fmt(f['lat_mean_us'])} µs "
                    f"({100 * (f['ratio'] - 1):+.1f}%)")
            if "fio_p50_us" in f:
                lo, hi = f["fio_p50_us"]
                line += (f"; its median {fmt(f['total_p50_us'])} µs against fio's clat and lat "
                         f"medians {fmt(lo)} to {fmt(hi)} µs")
            notes.append(line + ("" if f["within"] else
                                 ": NOT the same run's, or records are missing "
                                 "(docs/timeline.md, the check against fio)"))
        for n in t.get("notes") or []:
            notes.append(f"- {r['path']}: {n}")
        if t.get("cost_note"):
            notes.append(f"- {r['path']}: {t['cost_note']}")
        if t.get("phases") and r["path"] in KERNEL_RUNS:
            notes += shares_notes(r, t)
    if not rows and not notes:
        return []
    out = ["## Where the time goes", "",
           "Each I/O's life cut at the stamps of the engine, the server and (kernel paths) "
           "the kernel's tracepoints, in microseconds per I/O (the median round; "
           "docs/timeline.md says what each phase is):", ""]
    if rows:
        out += [f"| path | phase | where | mean µs | p50 | p99 | {KERNEL_RUNS_HEAD} |",
                "|---|---|---|---|---|---|---|"]
        out += rows
    return out + ([""] + notes if notes else []) + [""]


def shares_notes(r, t):
    """The notes under the phases of R (engine-tcmu) whose timeline T is
    its median round's: where the kernel runs its phases, and where that
    round's kernel's shares (kernel_shares.py) sit among them."""
    rounds = r.get("rounds") or []
    n = t.get("round") or 0
    fig = (rounds[n - 1].get("figures") if 0 < n <= len(rounds) else r.get("figures")) or {}
    out = [f"- {r['path']}: {KERNEL_RUNS_NOTE}"]
    sub = fig.get(SHARE_KEYS["submission"])
    done = fig.get(SHARE_KEYS["completion"])
    said = []
    out_phase = "wake-up out" if any(p["name"] == "wake-up out" for p in t["phases"]) \
        else "handler and wake-ups"
    if sub is not None:
        said.append(f"the kernel's submission share, {sub:.2f} µs per I/O, is inside "
                    f"{out_phase} (client submit under hold_batch)")
    if done is not None:
        said.append(f"its completion share, {done:.2f} µs per I/O, inside hand back")
    if said:
        out.append(f"- {r['path']}: of these phases, " + "; ".join(said)
                   + " (this round's, from the engine's end-of-job lines)")
    return out


def fmt(v):
    return "–" if v is None else f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


# the colour of a phase in the picture, by where it is
WHERE_COLOURS = {"client": "#d9822b", "wire": "#4c78a8", "server": "#2a9d8f",
                 "server-and-wire": "#9c9c9c", "kernel": "#8e6bbf"}


def draw(ax, results):
    """The stacked bars of report.png: one per path with a timeline, each
    phase's mean (µs per I/O), coloured by where it is. False when no path
    has phases."""
    ok = [r for r in results if r.get("status") == "ok" and (r.get("timeline") or {})
          .get("phases")]
    if not ok:
        return False
    ys = list(range(len(ok)))
    widest = max(sum(max(0.0, p["mean_us"] or 0.0) for p in r["timeline"]["phases"]
                     if p["where"] != "total") for r in ok)
    for y, r in zip(ys, ok):
        left = 0.0
        for p in r["timeline"]["phases"]:
            w = p["mean_us"]
            if p["where"] == "total" or not w or w < 0:     # a negative mean: no bar
                continue
            ax.barh(y, w, left=left, color=WHERE_COLOURS.get(p["where"], "#cccccc"),
                    edgecolor="white", linewidth=0.8)
            if w >= 0.07 * widest:                          # room for its name
                ax.text(left + w / 2, y, p["name"], ha="center", va="center", fontsize=7)
            left += w
        ax.annotate(f"{left:.1f} µs", (left, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["path"] + (" (functional only)" if r.get("functional_only") else "")
                        for r in ok], fontsize=8)
    ax.set_ylim(len(ok) - 0.5, -0.5)
    ax.set_xlabel("where the time goes: µs per I/O, each phase's mean (the median round); "
                  "orange client, blue wire, green server, grey server and wire, "
                  "purple kernel", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return True
