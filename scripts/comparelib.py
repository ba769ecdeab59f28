"""scripts/compare: run one fio job through every path to the same storage and compare them.

  scripts/compare JOB.fio [--uri URI | --store SPEC] [--size SIZE]
                  [--paths LIST] [--results DIR] [--seconds N]
                  [--kernel auto|native|guest] [--engine-in-guest]
                  [--fs auto|none|ext4|xfs] [--mount-options OPTS]
                  [--rounds N] [--as-written] [--job-direct] [--timeline]
                  [--engine PATH] [--sweep [KEY=V1,V2 ...]] [--resume DIR]
                  [--fio PATH] [--nbd-shim PATH] [--tcmu-shim PATH] [--list]

Paths (--paths takes a comma-separated list of these; default: all; each
is one record of PATHS in compare_paths.py, which --help lists):

{paths}

The target: --uri names an NBD server to use; otherwise one server is
started for all paths: the project's nbd-shim --profile standard with
--store SPEC (memory by default; null, file:PATH) and --size (default
256M), on a private Unix socket (nbdkit memory when nbd-shim is not built).

The job is the user's: each path runs a copy of it with ioengine, filename,
uri and (kernel paths) direct=1 set in every job section, runtime=--seconds
with time_based=1, and group_reporting=1 (--as-written: the job's own
runtime; --job-direct: the job's own direct=). The engine's own options
(conns, poll_us, ...) are dropped for the kernel paths. With --fs (auto: ext4
for the documents' filesystem tests in jobs/documents.tsv) the kernel paths
run the job in a directory of a filesystem made on the device and mounted
with --mount-options (default discard,noatime), with the job's direct=.

Rounds: --rounds N (default 3) runs the paths in alternation, every path
once per round (ABC ABC ABC), each round setting its path up and tearing
it down. Each figure is the median of the rounds with its min-max; a ratio
against another path is the median of each round's own ratio (the two runs
of the same round) with its min-max. A path whose IOPS or mean latency
moved more than 1.25x (max/min) between rounds is flagged in the table and
the picture. scripts/bench_run.py's CPU-speed probe runs before the first
round and after each, as context for the spread.

Latency: a job that turns fio's latency recording off (gtod_reduce=1,
disable_clat=1) runs with it on (gtod_reduce=0, disable_clat=0), and the
report says so; --as-written keeps the job's setting.

kernel-nbd and kernel-tcmu run natively when the running kernel has the
modules and we are root (--kernel native forces it, --kernel guest forces
the guest); otherwise inside scripts/guest (guest-virtio always), where
software emulation (TCG) makes their timings meaningless: such results are
marked "functional only" in the table and the picture. In the guest,
kernel-nbd and kernel-tcmu reach the same server as the other paths through
qemu's user-mode network (the host's 127.0.0.1 is 10.0.2.2 there); a server
on a Unix socket is relayed to a TCP port by socat for them.

Output, in the results folder (default results/compare-<date-time>):
  report.md     the side-by-side table: IOPS, MiB/s, completion latency
                (mean, p50, p99, p99.9), CPU per I/O (fio's, and the whole
                machine's), engine-tcmu's kernel's shares (the submission
                work a kworker would do and the completion work the
                kernel would do in the handler's notify, both done in
                fio's thread), each as median (min-max); each kernel path's
                cost against the engine on the same transport, and
                engine-tcmu's against engine-nbd (ratios, and microseconds
                per I/O); every round's IOPS; the CPU-speed probe; the
                syncs and trims each path issued, a path whose syncs per
                write or trims per I/O are more than 10% off the others'
                marked "differs" (results.json: issued_differ)
  report.png    latency percentiles and bandwidth per path (bars: medians,
                error bars: min-max)
  results.json  all of it, machine-readable, with every round's figures
  <path>.rN.json  fio's JSON (json+) of each path in round N; .rN.log its
                messages; .rN.fio the job as it ran; <path>.json and
                <path>.fio: those of its median round; servers.log

--timeline: where the time of one I/O goes (docs/timeline.md). Each
path-round gets a directory <path>.rN.timeline: the engine paths run with
timeline=DIR and lat_percentiles=1 (fio's medians, for the check of the
total against fio), engine-tcmu's tcmu-shim and the started nbd-shim with
--timeline (the server's records of a run's connections move into its
directory); scripts/timelinelib.py joins them into phases (client, wire,
server, storage). Kernel paths are traced by scripts/timeline_kernel.py
(bpftrace) when it can. results.json gains "timeline" per path (the median
round's phases), report.md a table of them, report.png a stacked bar each.

--sweep bs=4k,64k iodepth=1,16 (any job parameter: rw=, numjobs=, ...; no
values: the default grid, bs=4k,16k,64k,256k iodepth=1,4,16,64): every
path of --paths (default for a sweep: engine-nbd, engine-tcmu, kernel-loop)
in its --rounds (alternating, as above; --seconds default 3 for a sweep) at
every cell of the grid, against the same server. Each cell runs the user's
job with only the swept parameters set. Output (default
results/sweep-<date-time>): cells/<cell>/ holds compare's files of each
cell, written as it finishes; results.json every finished cell; report.md
the crossover (where each kernel path's extra share of latency falls below
10% and 25%) in its first lines, then the tables; report.png the heat maps
and latency lines. A progress line per cell says cell n of N, elapsed and
ETA. Ctrl-C stops cleanly and reports the finished cells; --resume DIR (alone,
or with the same command) carries the sweep on without re-running them.

Progress goes to stderr; the table to stdout too. Exit status: 0 when every
path that could be set up ran (skipped ones are listed with the reason), 1
when one failed, 2 on usage errors or a missing prerequisite for all paths.
"""

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import bench_run
import compare_sweep
import harness
import issued
import procs
import sweep_report
import timeline_runs
from compare_job import REPO, resolve_fs
from compare_paths import BY_NAME, NAMES, PATHS, SCRIPT, paths_text, run_path
from compare_report import fmt, latency_text, table, write_picture, write_report
from compare_rounds import ROUNDS, SPREAD_LIMIT, add_costs, merge_rounds, schedule
from compare_run import INSTALL, Context, log, start_target
from compare_sweep import DEFAULT_PATHS, DEFAULT_SECONDS, GridError

def parse_size(text):
    try:
        return harness.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def cpu_probe():
    """The bench's CPU-speed probe (bench_run.cpu_probe): the milliseconds
    a fixed loop takes (lower is faster), or None when it cannot run."""
    try:
        return bench_run.cpu_probe()
    except OSError:
        return None


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="compare", description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1].replace("{paths}", paths_text()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("job", help="the fio job file")
    t = ap.add_mutually_exclusive_group()
    t.add_argument("--uri", help="an NBD server to use (nbd://HOST[:PORT]/NAME, "
                   "nbd+unix:///NAME?socket=PATH) instead of starting one")
    t.add_argument("--store", help="the started server's store: memory (default), null, "
                   "file:PATH")
    t.add_argument("--backend", dest="store", help=argparse.SUPPRESS)  # old spelling of --store
    ap.add_argument("--size", type=parse_size, default=256 * 2**20,
                    help="the started server's size (default 256M)")
    ap.add_argument("--paths",
                    help=f"comma-separated, from: {', '.join(NAMES)} (default: all; "
                         f"--sweep: {','.join(DEFAULT_PATHS)})")
    ap.add_argument("--results", help="results folder (default results/compare-<date-time>; "
                                      "--sweep: results/sweep-<date-time>)")
    ap.add_argument("--seconds", type=int,
                    help=f"runtime per path (default 10; --sweep: {DEFAULT_SECONDS})")
    ap.add_argument("--rounds", type=int, default=ROUNDS, metavar="N",
                    help=f"rounds of every path, run in alternation (default {ROUNDS}): each "
                         "figure is their median with its min-max")
    ap.add_argument("--kernel", choices=("auto", "native", "guest"), default="auto",
                    help="where the kernel paths run (default auto: natively when this "
                         "kernel has the modules and we are root)")
    ap.add_argument("--fs", choices=("auto", "none", "ext4", "xfs"), default="auto",
                    help="the kernel paths run the job on a filesystem of this type made "
                         "and mounted on the device (default auto: ext4 for the documents' "
                         "filesystem tests in jobs/documents.tsv, none otherwise)")
    ap.add_argument("--mount-options", default="discard,noatime",
                    help="mount options for --fs (default discard,noatime, the torus "
                         "document's)")
    ap.add_argument("--as-written", action="store_true",
                    help="leave runtime, time_based and group_reporting to the job (as "
                         "scripts/rerun-documents runs the documents' jobs); --seconds only "
                         "bounds how long a path may take")
    ap.add_argument("--job-direct", action="store_true",
                    help="the block-device paths keep the job's direct= (default: direct=1)")
    ap.add_argument("--engine-in-guest", action="store_true",
                    help="run the engine paths in the guest too, so that they share the "
                         "kernel paths' conditions there")
    ap.add_argument("--guest-mem", type=int, default=1024, help="the guest's MiB (default 1024)")
    ap.add_argument("--engine", default=os.path.join(REPO, "build", "engines", "libtorus.so"))
    ap.add_argument("--fio", default=shutil.which("fio") or "fio")
    ap.add_argument("--nbd-shim", default=os.path.join(REPO, "build", "shims", "nbd", "nbd-shim"))
    ap.add_argument("--tcmu-shim",
                    default=os.path.join(REPO, "build", "shims", "tcmu", "tcmu-shim"))
    ap.add_argument("--timeline", action="store_true",
                    help="record where the time of each I/O goes (docs/timeline.md): a "
                         "timeline directory per path and round, the phases in the report")
    ap.add_argument("--sweep", nargs="*", metavar="KEY=V1,V2",
                    help="run every path at every cell of this grid of job parameters "
                         "(default grid: " + " ".join(compare_sweep.DEFAULT_GRID) + ")")
    ap.add_argument("--resume", metavar="DIR",
                    help="carry on the interrupted sweep in DIR (its cells that finished "
                         "are kept)")
    ap.add_argument("--list", action="store_true", help="list the paths and exit")
    ap.add_argument("--in-guest", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--round", type=int, default=1, help=argparse.SUPPRESS)
    if "--list" in argv:
        for p in PATHS:
            print(p.name)
        sys.exit(0)
    argv = sys.argv[1:] if argv is None else argv
    resume = next((argv[i + 1] for i, x in enumerate(argv[:-1]) if x == "--resume"), None) or \
        next((x.split("=", 1)[1] for x in argv if x.startswith("--resume=")), None)
    if resume:
        try:
            argv = compare_sweep.resume_argv(argv, resume)
        except GridError as e:
            ap.error(str(e))
    a = ap.parse_args(argv)
    old = "--backend"  # old spelling of --store
    if any(x == old or x.startswith(old + "=") for x in argv or sys.argv[1:]):
        print("compare: --backend is deprecated: use --store", file=sys.stderr)
    sweep = a.sweep is not None
    if a.resume and not sweep:
        ap.error("--resume carries on a sweep: give only --resume DIR, or the sweep's own "
                 "command (with its --sweep) and --resume DIR")
    if a.paths is None:
        a.paths = ",".join(DEFAULT_PATHS if sweep else NAMES)
    if a.seconds is None:
        a.seconds = DEFAULT_SECONDS if sweep else 10
    a.paths = [p.strip() for p in a.paths.split(",") if p.strip()]
    bad = [p for p in a.paths if p not in BY_NAME]
    if bad:
        ap.error(f"unknown path(s) {', '.join(bad)}: choose from {', '.join(NAMES)}")
    if not os.path.isfile(a.job):
        ap.error(f"no job file {a.job}")
    if a.seconds < 1:
        ap.error("--seconds must be at least 1")
    if a.rounds < 1:
        ap.error(f"--rounds must be at least 1 (default {ROUNDS}; 1 runs every path once, "
                 "with no spread)")
    a.engine = os.path.abspath(a.engine)
    a.job = os.path.abspath(a.job)
    a.fs, a.fs_why = resolve_fs(a.fs, a.job)
    if sweep:
        sweep_args(ap, a, argv)
    return a


def sweep_args(ap, a, argv):
    """--sweep's grid (a.grid), the command to save for --resume (a.argv)
    and, with --resume, the results folder and its finished cells (a.done)."""
    try:
        a.grid = compare_sweep.parse_grid(a.sweep)
    except GridError as e:
        ap.error(str(e))
    a.argv, skip = [], 0
    for x in argv:
        if skip:
            skip -= 1
        elif x in ("--resume", "--results"):
            skip = 1
        elif not x.startswith(("--resume=", "--results=")):
            # the job by its full name: --resume may run from elsewhere
            a.argv.append(a.job if not x.startswith("-") and os.path.abspath(x) == a.job
                          else x)
    a.done = {}
    if a.resume:
        if a.results and os.path.abspath(a.results) != os.path.abspath(a.resume):
            ap.error("--resume DIR writes into DIR: leave --results out")
        a.results = os.path.abspath(a.resume)
        try:
            a.state_was = compare_sweep.load_state(a.results)
            a.done = compare_sweep.resumed_cells(a.state_was, compare_sweep.settings(a))
        except GridError as e:
            ap.error(str(e))


def main_in_guest(a):
    """--in-guest: run one kernel path here, against --uri (the host's
    server as the guest reaches it, or the guest's --nbd-disk), and leave
    PATH.guest-result.json."""
    ctx = Context(a)
    path = a.paths[0]
    with tempfile.TemporaryDirectory(prefix="compare-guest-") as tmp, \
            contextlib.ExitStack() as stack:
        ctx.tmp, ctx.stack = tmp, stack
        ctx.target, ctx.target_kind = a.uri, "uri"
        res = run_path(ctx, path)
    with open(ctx.out(f"{path}.guest-result.json"), "w") as f:
        json.dump(res, f)
    return 0


def run_rounds(ctx):
    """Every path in every round, in schedule()'s order, the CPU-speed probe
    before round 1 and after each (ctx.probes); a path that could not run
    in a round is not run again. Returns {path: [run_path's result, ...]}."""
    a = ctx.args
    runs = {p: [] for p in a.paths}
    ctx.probes, ctx.round = [cpu_probe()], 0
    for r, p in schedule(a.paths, a.rounds):
        if r != ctx.round:
            if r > 1:
                ctx.probes.append(cpu_probe())
            ctx.round = r
            log(f"round {r} of {a.rounds} (CPU-speed probe {fmt(ctx.probes[-1], 0)} ms)")
        if runs[p] and runs[p][-1]["status"] != "ok":
            continue
        res = run_path(ctx, p)
        res["speed_probe_ms"] = {"before_round": ctx.probes[r - 1]}
        runs[p].append(res)
    ctx.probes.append(cpu_probe())
    for rs in runs.values():
        for i, res in enumerate(rs):
            res["speed_probe_ms"]["after_round"] = ctx.probes[i + 1]
    return runs


def keep_median_round(ctx, res):
    """<path>.json and <path>.fio: copies of the median round's, the files
    that stand for the path."""
    n = res.get("median_round")
    if res["status"] != "ok" or not n:
        return
    for ext in ("json", "fio"):
        src = ctx.out(f"{res['path']}.r{n}.{ext}")
        if os.path.exists(src):
            shutil.copyfile(src, ctx.out(f"{res['path']}.{ext}"))
            if ext == "json":
                res["fio_json"] = f"{res['path']}.json"


def run_cell(ctx, cell, folder):
    """One cell of a sweep: its job written into FOLDER, every path in its
    rounds there (run_rounds), merged and costed; returns its record."""
    a = ctx.args
    job, top = a.job, ctx.results
    shutil.rmtree(folder, ignore_errors=True)      # an interrupted cell's leftovers
    os.makedirs(folder)
    if a.timeline:                                 # the server's records stay in one place
        os.symlink(os.path.relpath(timeline_runs.servers_dir(ctx), folder),
                   os.path.join(folder, timeline_runs.SERVERS_DIR))
    try:
        ctx.results, a.job = folder, os.path.join(folder, "job.fio")
        compare_sweep.write_cell_job(job, a.job, cell)
        runs = run_rounds(ctx)
        results = [merge_rounds(runs[p]) for p in a.paths]
        for r in results:
            keep_median_round(ctx, r)
        add_costs(results)
        write_report(ctx, results, table(results), False, ctx.probes)
    finally:
        ctx.results, a.job = top, job
    return {"id": compare_sweep.cell_id(cell), "params": cell, "status": "done",
            "dir": os.path.relpath(folder, top), "speed_probe_ms": ctx.probes,
            "kernel": compare_sweep.kernel_costs(results), "paths": results}


def run_sweep(ctx):
    """--sweep: every cell of the grid in turn (compare_sweep.run over
    run_cell), then the report. Ctrl-C (or SIGTERM) stops it after the
    paths' tear-downs and reports what finished. Returns the exit status."""
    a = ctx.args

    def stop(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    state = compare_sweep.run(a, ctx.target_desc,
                              lambda cell, folder: run_cell(ctx, cell, folder))
    print(sweep_report.write(a.results, state))
    log(f"sweep: {len(state['cells'])} of {state['sweep']['cells_total']} cells in "
        f"{compare_sweep.hms(state['elapsed_s'])}; results in {a.results} (report.md, "
        "report.png, results.json, cells/)")
    return compare_sweep.exit_status(state)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--in-guest" not in argv and "-h" not in argv and "--help" not in argv:
        harness.reexec_for_matplotlib(SCRIPT, argv, "TORUS_COMPARE_REEXEC")
    a = parse_args(argv)
    if a.in_guest:
        return main_in_guest(a)
    if not shutil.which(a.fio) and not os.access(a.fio, os.X_OK):
        log(f"fio is missing: {INSTALL['fio']}")
        return 2
    a.results = os.path.abspath(a.results or os.path.join(
        REPO, "results", ("sweep-" if a.sweep is not None else "compare-")
        + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    os.makedirs(a.results, exist_ok=True)
    ctx = Context(a)
    results = []
    with tempfile.TemporaryDirectory(prefix="compare-") as tmp, contextlib.ExitStack() as stack:
        ctx.tmp, ctx.stack = tmp, stack
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda s, f: sys.exit(128 + s))   # tear down on the way out
        if a.fs != "none":
            log(f"kernel paths: on {a.fs}, mount -o {a.mount_options}"
                + (f" ({a.fs_why})" if a.fs_why else ""))
        try:
            start_target(ctx, stack)
        except procs.HarnessError as e:
            log(f"cannot start the server: {e}")
            return 2
        if ctx.latency_found:
            log(latency_text(ctx.latency_found, ctx.latency_on))
        if a.sweep is not None:
            return run_sweep(ctx)
        runs = run_rounds(ctx)
    results = [merge_rounds(runs[p]) for p in a.paths]
    for r in results:
        keep_median_round(ctx, r)
    add_costs(results)
    text = table(results)
    picture = write_picture(ctx, results)
    write_report(ctx, results, text, picture, ctx.probes)
    summary = {"job": a.job, "target": ctx.target, "target_desc": ctx.target_desc,
               "seconds": a.seconds, "rounds": a.rounds, "order": a.paths,
               "speed_probe_ms": ctx.probes,
               "latency": {"job_turns_off": ctx.latency_found, "set": ctx.latency_on}
               if ctx.latency_found else None,
               "spread_limit": SPREAD_LIMIT,
               "issued_differ": issued.differing(issued.of_results(results)),
               "size": a.size, "kernel": os.uname().release,
               "filesystem": None if a.fs == "none" else
               {"type": a.fs, "mount_options": a.mount_options, "why": a.fs_why},
               "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "picture": "report.png" if picture else None, "paths": results}
    with open(ctx.out("results.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(text)
    log(f"results in {a.results} (report.md, report.png, results.json, <path>.rN.json)")
    if any(r["status"] == "failed" for r in results):
        return 1
    if not any(r["status"] == "ok" for r in results):
        return 2
    return 0
