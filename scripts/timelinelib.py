"""The timeline (issue 23; docs/timeline.md): where the time of one I/O goes.

The engine (timeline=DIR) and the shims (--timeline DIR) each write record
files into one directory (timeline/timeline_rec.h: a 512-byte header, then
one 64-byte record per wire command, stamped on CLOCK_MONOTONIC;
timeline_rec.py reads them). This module reads such a directory, joins
every engine record with the server's record of the same command, cuts
each I/O's life into phases between
consecutive stamps (so that the phases add up to the total by
construction: the engine's own phases as it names them in engine-N.json,
its server-and-wire phase split into the server's parts when the server
stamps too), and summarises them per path: mean, p50, p99, p99.9
(nearest rank on the exact values). scripts/timeline is its command;
scripts/compare --timeline calls it for every engine path and round.

The join (one rule for every source): the same key (NBD cookie, TCMU
cmd_id), offset, length and op, and every one of the server's stamps inside
the engine's window ([sent, header] for NBD, [published, seen] for TCMU,
[queued, callback] for libnbd). Each stamp is read on the causal side of
the event it dates (the engine's before its send, the server's after the
request came and before its reply went, the engine's after it read the
reply), so the server's lie inside the window but for the error of the
engine's own clock (SLACK_NS): a server record that far outside it still
joins, the nearest one when several could (a key is never reused while in
flight, so two uses of one key are at least a whole I/O apart). An I/O
whose stamps cross shows a negative phase (counted, and said).
"""

import json
import operator
import os
import sys

import fio_json
import stats
from timeline_rec import NR_STAMPS, TimelineError, read_dir

PERCENTILES = (50.0, 99.0, 99.9)
# a join rate below this is said loudly: the phases are then those of a part
JOIN_WARN = 0.95
# Every stamp is CLOCK_MONOTONIC on one host, most of them clock_gettime()
# itself. The engine's ENGINE_CLOCK stamps are the TSC mapped onto it
# (timeline/timeline_clock.c): from a pair of reads at most
# TL_CLOCK_PAIR_MAX_NS (1 µs) apart taken at its midpoint, so off by 500 ns
# at most, plus the rate's error over the millisecond until the next pair
# (a rate from pairs 0.1 s apart: 10 ns): CLOCK_ERROR_NS. Another stamp of
# the same value is the same read (TCMU's published is its request's queued
# for the first command ->queue puts in at once).
CLOCK_ERROR_NS = 600
ENGINE_CLOCK = ("queued", "handed")
# how far outside the engine's window a server's stamps may be (above)
SLACK_NS = CLOCK_ERROR_NS
# the check against fio (fio_check()): how far the timeline's total may be
# from fio's latency, and how far its mean may be above fio's
FIO_TOLERANCE = 0.10
FIO_MEAN_ABOVE = 0.05

# Phases: (name, where, from stamp, to stamp), in the order of the I/O's
# life; each ends where the next begins. The engine names its own: it
# writes them, with their stamps, in engine-N.json (engines/timeline.c,
# the one table of them), and engine_phases() reads them there. A server's
# records split the engine's server-and-wire phase into these parts (the
# server's stamp names are distinct from the engine's, so one joined I/O is
# one dict of stamps):
SERVER_PARTS = {
    ("engine-nbd", "nbd-shim"): (
        ("wire out", "wire", "sent", "received"),
        ("server queue", "server", "received", "started"),
        ("storage", "server", "started", "stored"),
        ("server reply", "server", "stored", "replied"),
        ("wire back", "wire", "replied", "header"),
    ),
    ("engine-tcmu", "tcmu-shim"): (
        ("wake-up out", "wire", "published", "picked"),
        ("server queue", "server", "picked", "started"),
        ("storage", "server", "started", "stored"),
        ("server reply", "server", "stored", "completed"),
        ("wake-up back", "wire", "completed", "seen"),
    ),
    # transport=libnbd: libnbd sends inside ->queue and reads inside
    # ->getevents, so the engine sees only when its callback ran
    ("engine-libnbd", "nbd-shim"): (
        ("client and libnbd out", "wire", "queued", "received"),
        ("server queue", "server", "received", "started"),
        ("storage", "server", "started", "stored"),
        ("server reply", "server", "stored", "replied"),
        ("libnbd back", "wire", "replied", "callback"),
    ),
}
# the engine's phase a server's records split, by its "where"
SPLIT = "server-and-wire"
# the server that serves each engine path
SERVER_OF = {"engine-nbd": "nbd-shim", "engine-tcmu": "tcmu-shim",
             "engine-libnbd": "nbd-shim"}
ENGINES = tuple(SERVER_OF)

# Where the kernel (6.1, tcm_loop) runs each of engine-tcmu's phases, for
# the tables' last column: the engine runs the ring's kernel side in fio's
# thread, the kernel in a kworker (the ring's entry, a write's copy) and in
# the handler's notify write() (completions, reads copied out); display
# only, docs/tcmu.md says which functions.
KERNEL_RUNS = {
    "engine-tcmu": {
        "client submit": "initiator → kworker",
        "handler and wake-ups": "kworker → handler → handler's notify",
        "wake-up out": "kworker → handler",
        "server queue": "handler",
        "storage": "handler",
        "server reply": "handler",
        "wake-up back": "handler's notify",
        "hand back": "handler's notify → kworker → initiator",
    },
}
KERNEL_RUNS_HEAD = "kernel runs it in"
KERNEL_RUNS_NOTE = (
    "kernel runs it in: where Linux 6.1 with tcm_loop runs each phase (docs/tcmu.md); here "
    "every client phase runs in fio's thread. initiator: fio's thread (the CDB; the "
    "completion's last step); kworker: target_queued_submit_work → tcmu_queue_cmd → "
    "queue_cmd_ring (a cmd_id, data blocks, the entry, a write's data copied in, cmd_head, "
    "uio_event_notify: in wake-up out here, or handler and wake-ups without server records; "
    "in client submit under hold_batch), and "
    "target_complete_ok_work after the notify; handler's notify: its write() to the UIO "
    "fd, tcmu_irqcontrol → tcmu_handle_completions (completions walked, reads copied out, "
    "blocks and cmd_ids freed, target_complete_cmd queueing the rest: in hand back here)")


def kernel_runs(path, phase):
    """Where the kernel runs PATH's PHASE (a name), or "" (KERNEL_RUNS)."""
    return KERNEL_RUNS.get(path, {}).get(phase, "")


# ------------------------------------------------------------- figures

def summary(name, where, values_ns):
    """One phase's entry of the phase summary (T-common's schema)."""
    vs = sorted(values_ns)
    out = {"name": name, "where": where, "count": len(vs),
           "mean_us": sum(vs) / len(vs) / 1e3 if vs else None}
    for p in PERCENTILES:
        out[f"p{p:g}_us"] = stats.percentile(vs, p / 100.0) / 1e3 if vs else None
    return out


# ------------------------------------------------------------- the join

def engine_phases(rf):
    """The phases of the engine that wrote the record file RF, as it names
    them in the engine-N.json beside it: ((name, where, from stamp, to
    stamp), ...), its total last."""
    path = rf.path[:-len(".rec")] + ".json"
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise TimelineError(f"timeline: cannot read {path} ({e.strerror}): the engine names "
                            f"its phases there when its job ends; was fio stopped before? "
                            "Run the job again to its end")
    except ValueError as e:
        raise TimelineError(f"timeline: {path} is not JSON ({e}): the engine did not finish "
                            "writing it; run the job again to its end")
    try:
        phases = tuple((p["name"], p["where"], p["from"], p["to"]) for p in data)
    except (KeyError, TypeError):
        raise TimelineError(f"timeline: {path} does not name its phases' stamps (from, to): "
                            "written by another version; read it with the scripts of the "
                            "build that wrote it")
    if len(phases) < 2 or phases[-1][1] != "total":
        raise TimelineError(f"timeline: {path} has no phases before its total: the "
                            "file is damaged")
    return phases


def path_phases(engine, path, server):
    """(phases, total, window) of PATH: the ENGINE's phases (engine_phases())
    with its server-and-wire phase split into SERVER_PARTS[(PATH, SERVER)]
    when SERVER's records are there; WINDOW: that phase's (from, to), the
    engine's window on the server."""
    *own, total = engine
    at = [i for i, p in enumerate(own) if p[1] == SPLIT]
    if len(at) != 1:
        raise TimelineError(f"timeline: the engine's phases of {path} "
                            f"({', '.join(p[0] for p in own)}) have {len(at)} {SPLIT} "
                            "phases, not one: read them with the scripts of the build that "
                            "wrote them")
    i = at[0]
    window = tuple(own[i][2:])
    if server:
        parts = SERVER_PARTS[(path, server)]
        if (parts[0][2], parts[-1][3]) != window:
            raise TimelineError(f"timeline: {server}'s parts of {path} run from "
                                f"{parts[0][2]} to {parts[-1][3]}, the engine's {own[i][0]} "
                                f"from {window[0]} to {window[1]}: SERVER_PARTS in "
                                "scripts/timelinelib.py must follow engines/timeline.c")
        own[i:i + 1] = parts
    return tuple(own), total, window


def chain(phases):
    """The stamps PHASES run through, in order: each phase ends where the
    next begins, so phase i is chain[i + 1] - chain[i] and the total
    chain[-1] - chain[0]."""
    names = [phases[0][2]]
    for _, _, a, b in phases:
        if a != names[-1]:
            raise ValueError(f"phase {a}->{b} does not start where the last ended")
        names.append(b)
    return names


def _getter(names, *files):
    """An itemgetter of the stamps NAMES out of the records of FILES put end
    to end (rec_a + rec_b), each name from the first file that has it."""
    idx, base = {}, 0
    for f in files:
        for i, n in enumerate(f.stamps):
            idx.setdefault(n, base + 5 + i)
        base += 5 + NR_STAMPS
    at = [idx[n] for n in names]
    if len(at) == 1:                    # itemgetter of one gives no tuple
        return lambda rec: (rec[at[0]],)
    return operator.itemgetter(*at)


def _filled(rec, at):
    """REC with each stamp of AT (indices, in the chain's order) not taken
    set to the one before it, so that its phase is 0."""
    rec = list(rec)
    for prev, i in zip(at, at[1:]):
        if not rec[i]:
            rec[i] = rec[prev]
    return tuple(rec)


def _near(cands, lo, hi, allowed=None):
    """The candidates CANDS (server records of one key, offset, length and
    op) not yet joined, of the server files ALLOWED (all: None), within
    SLACK_NS of the window [LO, HI], as (distance, candidate), nearest
    first."""
    if len(cands) == 1:                 # the usual case, quickly
        c = cands[0]
        if c[4] or (allowed is not None and c[3] not in allowed):
            return []
        d = max(0, lo - c[0]) + max(0, c[1] - hi)
        return [(d, c)] if d <= SLACK_NS else []
    out = []
    for c in cands:
        if c[4] or (allowed is not None and c[3] not in allowed):
            continue
        d = max(0, lo - c[0]) + max(0, c[1] - hi)
        if d <= SLACK_NS:
            out.append((d, c))
    out.sort(key=lambda x: x[0])
    return out


def join(engine_files, server_files, window, names):
    """The I/Os of ENGINE_FILES (one path's), joined with SERVER_FILES'
    records when there are any, the server's stamps inside the engine's
    WINDOW (its two stamps): (chains, counts). chains: for each complete
    I/O (each joined one, with server files), its stamps NAMES as a tuple.
    counts: records, incomplete (an engine record with a stamp not taken:
    an I/O that failed or was never handed back; left out), joined,
    unmatched_server.

    Two jobs may send the same cookie, offset, length and op at once (fio's
    random offsets meet on a small file), each on its own connection. So
    the first pass learns which server files (connections or rings) each of
    the engine's streams talks to, from the I/Os that have one candidate
    only; the second joins each I/O to the nearest candidate of its
    stream's server files."""
    lo_name, hi_name = window
    mine = [n for n in names if n in engine_files[0].stamps]
    theirs = [n for n in names if n not in mine]
    index = {}
    for si, rf in enumerate(server_files):
        take = _getter(theirs, rf)
        at = [5 + rf.stamps.index(n) for n in theirs]
        for rec in rf.records:
            st = take(rec)
            if 0 in st:
                # a command the server answered without its store has no
                # started or stored: its time there is all "server reply"
                if not st[0] or not st[-1]:
                    continue
                rec = _filled(rec, at)
                st = take(rec)
            index.setdefault(rec[:4], []).append([min(st), max(st), rec, si, False])
    chains, counts = [], {"records": 0, "incomplete": 0, "joined": 0}
    complete = []                       # (engine file index, record)
    for ei, rf in enumerate(engine_files):
        take = _getter(mine, rf)
        counts["records"] += len(rf.records)
        for rec in rf.records:
            if 0 in take(rec):
                counts["incomplete"] += 1
            else:
                complete.append((ei, rec))
    if not server_files:
        alone = [_getter(names, rf) for rf in engine_files]
        return [alone[ei](rec) for ei, rec in complete], dict(counts, unmatched_server=0)
    window = [(5 + rf.stamps.index(lo_name), 5 + rf.stamps.index(hi_name))
              for rf in engine_files]
    streams = {}                        # (engine file, stream) -> server files
    for ei, rec in complete:
        lo_i, hi_i = window[ei]
        near = _near(index.get(rec[:4], ()), rec[lo_i], rec[hi_i])
        if len(near) == 1:
            streams.setdefault((ei, rec[4]), set()).add(near[0][1][3])
    getters = [[_getter(names, rf, sf) for sf in server_files] for rf in engine_files]
    for ei, rec in complete:
        lo_i, hi_i = window[ei]
        near = _near(index.get(rec[:4], ()), rec[lo_i], rec[hi_i], streams.get((ei, rec[4])))
        if near:
            best = near[0][1]
            best[4] = True
            chains.append(getters[ei][best[3]](rec + best[2]))
            counts["joined"] += 1
    counts["unmatched_server"] = sum(1 for cands in index.values() for c in cands
                                     if not c[4])
    return chains, counts


def beyond_error(chains, phases):
    """{phase: I/Os of CHAINS where it is further below zero than the
    clocks allow}: CLOCK_ERROR_NS where one of its two stamps is (has the
    value of) one of the I/O's ENGINE_CLOCK stamps, else 0."""
    at = [i for i, n in enumerate(chain(phases)) if n in ENGINE_CLOCK]
    out = {}
    for c in chains:
        eng = {c[i] for i in at}
        for i, p in enumerate(phases):
            a, b = c[i], c[i + 1]
            if b - a < (-CLOCK_ERROR_NS if a in eng or b in eng else 0):
                out[p[0]] = out.get(p[0], 0) + 1
    return {p[0]: out[p[0]] for p in phases if p[0] in out}


def below_zero(r):
    """What says that a stamp of path result R (analyse()'s, or a kernel
    path's phases alone) was read on the wrong side of its event: a phase
    whose mean or median is further below zero than CLOCK_ERROR_NS, or
    one that is for any I/O further than its clocks allow; as words, one a
    phase ([] when none)."""
    out, lim = [], CLOCK_ERROR_NS / 1e3
    for p in r.get("phases") or []:
        bad = [f"{k[:-3]} {p[k]:.2f} µs" for k in ("mean_us", "p50_us")
               if p.get(k) is not None and p[k] < -lim]
        if bad:
            out.append(f"{p['name']}: {' and '.join(bad)} (below -{lim:g} µs, the "
                       "clocks' error)")
    for name, n in (r.get("beyond_error") or {}).items():
        out.append(f"{name}: below zero for {n} I/Os by more than the clocks' error "
                   f"({CLOCK_ERROR_NS} ns where a stamp is the engine's "
                   f"{' or '.join(ENGINE_CLOCK)} (or its value), else 0)")
    return out


def phase_summary(chains, phases, total):
    """The phase summary of CHAINS (chain()'s stamps of each I/O) with the
    TOTAL phase last, and {phase: I/Os where it is negative}."""
    out, negative = [], {}
    for i, (name, where, _, _) in enumerate(phases):
        vals = [c[i + 1] - c[i] for c in chains]
        neg = sum(1 for v in vals if v < 0)
        if neg:
            negative[name] = neg
        out.append(summary(name, where, vals))
    out.append(summary(total[0], total[1], [c[-1] - c[0] for c in chains]))
    return out, negative


# engine-tcmu through tcmu-shim --store nbd: to an nbd-shim that stamps
# too: its "storage" split at the NBD request the store sent
STORAGE_SPLIT = (
    ("storage: to nbd-shim", "wire", "started", "received"),
    ("storage: nbd-shim", "server", "received", "replied"),
    ("storage: back", "wire", "replied", "stored"),
)


def split_storage(tcmu_files, nbd_files):
    """tcmu-shim's storage (started to stored) split by the NBD request its
    nbd: store sent for each command: the nbd-shim record of the same
    offset, length and op inside [started, stored], as in the join (the
    nearest within SLACK_NS; a command the store split
    in several requests has none).
    {"server", "matched", "of", "phases"} (the phases of the matched
    commands, their total last), or None when none matched."""
    index = {}
    for rf in nbd_files:
        if not {"received", "replied"} <= set(rf.stamps):
            continue
        at = [5 + rf.stamps.index(n) for n in ("received", "replied")]
        for rec in rf.records:
            rx, tx = rec[at[0]], rec[at[1]]
            if rx and tx:
                index.setdefault(rec[1:4], []).append([rx, tx, tx, 0, False])
    chains, of = [], 0
    for rf in tcmu_files:                  # analyse() checked their stamps
        at = [5 + rf.stamps.index(n) for n in ("started", "stored")]
        for rec in rf.records:
            started, stored = rec[at[0]], rec[at[1]]
            if not started or not stored or rec[3] not in (0, 1):
                continue
            of += 1
            near = _near(index.get(rec[1:4], ()), started, stored)
            if near:
                c = near[0][1]
                c[4] = True
                chains.append((started, c[0], c[2], stored))
    if not chains:
        return None
    phases, _ = phase_summary(chains, STORAGE_SPLIT, ("storage", "total", "started", "stored"))
    return {"server": "nbd-shim", "matched": len(chains), "of": of, "phases": phases}


def span(rf):
    """(first, last) stamp over the records of RF (stamps not taken left
    out), or None when it holds none."""
    lo = hi = None
    n = len(rf.stamps)
    for rec in rf.records:
        ts = [t for t in rec[5:5 + n] if t]
        if ts:
            a, b = min(ts), max(ts)
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
    return None if lo is None else (lo, hi)


def _apart(s, lo, hi):
    """How far span S lies outside [LO, HI], in words."""
    if s[1] < lo:
        return f"ended {(lo - s[1]) / 1e9:.1f} s before"
    return f"began {(s[0] - hi) / 1e9:.1f} s after"


def fio_latency(fio_out):
    """fio's latency in the fio JSON file FIO_JSON: {"mean_us": lat_ns
    (submission to completion) over every job and direction, "p50_us":
    [(clat median, lat median) of each job's direction that did I/O]}.
    p50_us is empty unless fio kept lat percentiles (lat_percentiles=1);
    mean_us is 0 when fio recorded no latency."""
    data = fio_json.load_fio_json(fio_out)
    mean = fio_json.fio_summary(data, os.path.basename(fio_out), all_jobs=True)["lat_mean_us"]
    p50 = []
    for job in data.get("jobs") or []:
        for ddir in fio_json.DDIRS:
            d = job.get(ddir) or {}
            pct = [(d.get(k) or {}).get("percentile") or {} for k in ("clat_ns", "lat_ns")]
            if d.get("total_ios") and all("50.000000" in x for x in pct):
                p50.append(tuple(x["50.000000"] / 1e3 for x in pct))
    return {"mean_us": mean, "p50_us": p50}


def fio_check(total, lat):
    """The timeline's total phase TOTAL (its summary entry) against fio's
    latency LAT (fio_latency()). An I/O's total (->queue to ->getevents)
    lies inside fio's lat of it (from before fio writes its verify pattern
    to its completion), so its mean may not be above fio's; and it holds fio's
    clat (->commit to the completion) but for the few instructions from
    ->getevents to fio's stamp. With fio's medians, the total's median lies
    between the clat and lat medians: unlike the means, medians do not move
    when fio is preempted between its own stamp and the engine's (the
    other I/Os in flight wait in both, that one in fio's only), as happens
    on a loaded machine. Without them, the two means agree."""
    r = {"lat_mean_us": lat["mean_us"], "total_mean_us": total["mean_us"],
         "ratio": total["mean_us"] / lat["mean_us"]}
    if lat["p50_us"]:
        lo = min(c for c, _ in lat["p50_us"])
        hi = max(x for _, x in lat["p50_us"])
        r.update(fio_p50_us=[lo, hi], total_p50_us=total["p50_us"])
        r["within"] = (lo * (1 - FIO_TOLERANCE) <= total["p50_us"] <= hi * (1 + FIO_TOLERANCE)
                       and r["ratio"] <= 1 + FIO_MEAN_ABOVE)
    else:
        r["within"] = abs(r["ratio"] - 1) <= FIO_TOLERANCE
    return r


def fio_words(f):
    """What fio_check()'s result F compared, in words."""
    if "fio_p50_us" not in f:
        return (f"fio's mean latency (lat): {f['lat_mean_us']:.2f} µs; the timeline's total: "
                f"{f['total_mean_us']:.2f} µs ({100 * (f['ratio'] - 1):+.1f}%"
                + ("" if f["within"] else f", NOT within {100 * FIO_TOLERANCE:.0f}%") + ")")
    lo, hi = f["fio_p50_us"]
    return (f"fio's latency: lat mean {f['lat_mean_us']:.2f} µs, medians from clat's "
            f"{lo:.2f} to lat's {hi:.2f} µs; the timeline's total: mean "
            f"{f['total_mean_us']:.2f} µs ({100 * (f['ratio'] - 1):+.1f}%), median "
            f"{f['total_p50_us']:.2f} µs"
            + ("" if f["within"] else
               f" (NOT between them with {100 * FIO_TOLERANCE:.0f}% leeway, or the mean "
               f"more than {100 * FIO_MEAN_ABOVE:.0f}% above fio's)"))


def analyse(d, fio_out=None):
    """The timeline of directory D: {"dir", "files", "paths": {engine
    path: its result}, "warnings"}. A path's result: server (or None),
    form ("merged" or "server and wire"), records, incomplete, joined,
    join_rate, phases (the summary, total last), negative, and with
    FIO_JSON (fio's JSON of that run, when D holds one engine path) "fio":
    the total against fio's latency (fio_check())."""
    files = read_dir(d)
    res = {"dir": d, "files": [{"file": f.name, "source": f.source, "key": f.key,
                                "stamps": f.stamps, "records": len(f.records)}
                               for f in files],
           "paths": {}, "warnings": []}
    known = set(ENGINES) | set(SERVER_OF.values())
    for f in files:
        if f.source not in known:
            res["warnings"].append(f"{f.name}: source {f.source!r} is none this reader "
                                   f"joins ({', '.join(sorted(known))}): left out")
    for path in ENGINES:
        eng = [f for f in files if f.source == path]
        if not eng:
            continue
        srv = [f for f in files if f.source == SERVER_OF[path]]
        # A server file from an earlier run into the same directory shares
        # no time with this run's engine records: joined, it would only
        # steal matches, so it is left out, loudly.
        spans = [x for x in map(span, eng) if x]
        if spans:
            lo, hi = min(x[0] for x in spans), max(x[1] for x in spans)
            keep = []
            for f in srv:
                x = span(f)
                if x and (x[1] < lo or x[0] > hi):
                    res["warnings"].append(
                        f"{f.name}: its records {_apart(x, lo, hi)} {path}'s: another "
                        f"run's, left out of the join (give each run an empty directory)")
                else:
                    keep.append(f)
            srv = keep
        server = SERVER_OF[path] if srv else None
        engine = engine_phases(eng[0])
        for f in eng[1:]:
            if engine_phases(f) != engine:
                raise TimelineError(f"timeline: {f.path} and {eng[0].path} name different "
                                    f"phases ({path}): two builds' engines wrote into {d}; "
                                    "give each run an empty directory")
        phases, total, window = path_phases(engine, path, server)
        own = {x for _, _, a, b in engine for x in (a, b)}
        theirs = {x for _, _, a, b in phases for x in (a, b)} - own
        for f, want in [(f, own) for f in eng] + [(f, theirs) for f in srv]:
            missing = sorted(want - set(f.stamps))
            if missing:
                raise TimelineError(f"timeline: {f.path} ({f.source}) lacks the stamp(s) "
                                    f"{', '.join(missing)}: written by another version; "
                                    "read it with the scripts of the build that wrote it")
        names = chain(phases)
        joined, counts = join(eng, srv, window, names)
        r = {"server": server, "form": "merged" if server else "server and wire",
             **counts}
        complete = counts["records"] - counts["incomplete"]
        r["join_rate"] = (counts["joined"] / complete if complete else 0.0) if server \
            else None
        if server and r["join_rate"] < JOIN_WARN:
            res["warnings"].append(
                f"{path}: only {counts['joined']} of {complete} I/Os "
                f"({100 * r['join_rate']:.1f}%, below {100 * JOIN_WARN:.0f}%) found their "
                f"{server} record: the phases below are of those that did. Were the "
                f"engine and the {server} of this run both writing into {d}, and did the "
                "server close its files (end of connection) before this read them?")
        r["phases"], r["negative"] = phase_summary(joined, phases, total) if joined \
            else ([], {})
        if not joined:
            res["warnings"].append(f"{path}: no complete I/O in {d}: no phases")
        r["beyond_error"] = beyond_error(joined, phases) if r["negative"] else {}
        if r["negative"]:
            r["negative_note"] = (
                "I/Os where a stamp came before the one before it: within the clocks' "
                "error, or a stamp read on the wrong side of its event (beyond_error); "
                "the phases still add up to the total")
        for w in below_zero(r):
            res["warnings"].append(f"{path}: {w}: a stamp read on the wrong side of "
                                   "its event")
        nbd = [f for f in files if f.source == "nbd-shim"]
        if path == "engine-tcmu" and srv and nbd:
            split = split_storage(srv, nbd)
            if split:
                r["storage_split"] = split
        res["paths"][path] = r
    if not res["paths"]:
        raise TimelineError(f"timeline: no engine records in {d} (only "
                            f"{', '.join(sorted({f.source for f in files}))}): run fio with "
                            "the engine's timeline=DIR into the same directory")
    if fio_out:
        if len(res["paths"]) != 1:
            res["warnings"].append(f"{d} holds {' and '.join(res['paths'])}: fio's "
                                   "figure is not checked against either")
        else:
            r = next(iter(res["paths"].values()))
            lat = fio_latency(fio_out) if r["phases"] else None
            if r["phases"] and not lat["mean_us"]:
                # gtod_reduce=1 or disable_lat=1: nothing to check against
                r["fio"] = {"lat_mean_us": None, "total_mean_us": r["phases"][-1]["mean_us"],
                            "ratio": None, "within": None}
            elif r["phases"]:
                r["fio"] = fio_check(r["phases"][-1], lat)
                if not r["fio"]["within"]:
                    res["warnings"].append(
                        f"{fio_words(r['fio'])}: are the records and the fio JSON of the "
                        "same run?")
    return res


# ------------------------------------------------------------- output

NO_FIO_LATENCY = ("fio recorded no latency (the job sets gtod_reduce=1 or disable_lat=1): "
                  "the phases' total is not checked against it")

def text_table(res):
    """The phase tables of ANALYSE's result RES, as text."""
    lines = []
    for path, r in res["paths"].items():
        what = f"{path} with {r['server']}" if r["server"] else \
            f"{path} (no server records: the server and the wire are one phase)"
        head = f"{what}: {r['records']} I/Os"
        if r["incomplete"]:
            head += f", {r['incomplete']} without every stamp (left out)"
        if r["server"]:
            head += (f", {r['joined']} joined with their {r['server']} record "
                     f"({100 * r['join_rate']:.1f}%)")
        lines += [head, ""]
        if not r["phases"]:
            lines += ["(no phases)", ""]
            continue
        total = r["phases"][-1]["mean_us"] or 0
        runs = path in KERNEL_RUNS
        lines.append(f"{'phase':22} {'where':16} {'mean µs':>9} {'p50':>9} {'p99':>9} "
                     f"{'p99.9':>9} {'share':>6}" + (f"  {KERNEL_RUNS_HEAD}" if runs else ""))
        for p in r["phases"]:
            share = "" if p["where"] == "total" or not total else \
                f"{100 * p['mean_us'] / total:5.1f}%"
            lines.append((f"{p['name']:22} {p['where']:16} {p['mean_us']:9.2f} "
                          f"{p['p50_us']:9.2f} {p['p99_us']:9.2f} {p['p99.9_us']:9.2f} "
                          f"{share:>6}" + (f"  {kernel_runs(path, p['name'])}" if runs
                                           else "")).rstrip())
        if runs:
            lines.append(f"({KERNEL_RUNS_NOTE})")
        sp = r.get("storage_split")
        if sp:
            lines.append(f"  storage, split at the NBD request of {sp['matched']} of "
                         f"{sp['of']} {r['server']} commands (its nbd-shim's records):")
            for p in sp["phases"]:
                lines.append(f"  {p['name']:20} {p['where']:16} {p['mean_us']:9.2f} "
                             f"{p['p50_us']:9.2f} {p['p99_us']:9.2f} {p['p99.9_us']:9.2f}")
        if r.get("negative"):
            lines.append("negative in " + ", ".join(f"{k}: {v} I/Os"
                                                   for k, v in r["negative"].items())
                         + f" ({r['negative_note']})")
        if r.get("fio") and r["fio"]["ratio"] is None:
            lines.append(NO_FIO_LATENCY)
        elif r.get("fio"):
            lines.append(fio_words(r["fio"]))
        lines.append("")
    for w in res["warnings"]:
        lines.append(f"WARNING: {w}")
    return "\n".join(lines).rstrip() + "\n"


def write_json(res, path):
    with open(path, "w") as f:
        json.dump(res, f, indent=2)


def main(argv=None):
    """scripts/timeline DIR [--fio-json FILE]: the phase table on stdout,
    DIR/timeline.json. Exit 0; 1 when a join rate is below 95% or fio's
    check failed; 2 on a directory or file that cannot be read."""
    import argparse
    ap = argparse.ArgumentParser(
        prog="timeline", description="Where the time of one I/O goes: joins the "
        "engine's (timeline=DIR) and the shims' (--timeline DIR) record files of DIR and "
        "prints each phase's mean, p50, p99 and p99.9 per engine path; writes "
        "DIR/timeline.json. docs/timeline.md says what each phase is.")
    ap.add_argument("dir", help="the timeline directory")
    ap.add_argument("--fio-json", help="fio's JSON of the same run: its latency is "
                    "checked against the timeline's total: with lat_percentiles=1, the "
                    "total's median between fio's clat and lat medians (10%% leeway) and "
                    "its mean not 5%% above fio's lat mean; else the means within 10%%")
    a = ap.parse_args(argv)
    try:
        res = analyse(a.dir, a.fio_json)
    except (TimelineError, fio_json.FioError, OSError) as e:
        print(str(e), file=sys.stderr)
        return 2
    write_json(res, os.path.join(a.dir, "timeline.json"))
    sys.stdout.write(text_table(res))
    for w in res["warnings"]:
        print(f"timeline: {w}", file=sys.stderr)
    bad = any(r["server"] and r["join_rate"] < JOIN_WARN for r in res["paths"].values()) or \
        any(r.get("fio") and r["fio"]["within"] is False for r in res["paths"].values())
    return 1 if bad else 0
