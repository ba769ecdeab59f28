"""The command scripts/bench: its help (HELP), its options (checked, with
their defaults), the programs the chosen sections need, the run's header
(the machine, the versions, the command), each section in each placement
(bench_run.Bench), and at the end the report (benchlib.report), the
records saved as JSON and the page of --report (perfreport.render).
"""

import argparse
import datetime
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import bench_run  # noqa: E402
import harness  # noqa: E402
import procs  # noqa: E402
import perfreport  # noqa: E402

HELP = """Benchmark libtorus.so: against fio's built-in nbd engine (and nbdcopy),
and through it the NBD shim's profiles and the TCMU ring.

  scripts/bench [--runtime S] [--rounds N] [--quick] [--sections LIST]
                [--placements LIST] [--report [PAGE]] [--build DIR]
                [--engine PATH] [--engine-opt OPT]... [--size SIZE]
                [--tcmu-size SIZE] [--out FILE] [--keep] [--quiet-wait S]
                [--no-speed-probe]

--report writes the page every published figure comes from, PAGE (default
docs/performance.md; scripts/perfreport.py renders it): the date, the
machine, the mode and rounds, and for each section its ratios (median and
min-max of the rounds' own), its figures, its lean probe and the command
that re-runs it. It runs every section (unless --sections says otherwise)
in both placements (unless --placements does) and replaces those sections
on the page, keeping the others as their run measured them: their records
are in PAGE's .json (docs/performance.json), and the page lists each run
its sections come from. With --quick (--runtime 2 --rounds 1 --size 1G)
the page says it is a smoke run.

Placements: pinned runs the servers on CPU 0 and the clients (fio,
nbdcopy, the probes) on CPU 1; free pins nothing, as users run them. Each
section runs in each placement in turn, its servers started afresh.

In every section the clients take turns, the order rotated each round
(bench_run.in_turn), so that drift on the machine hits them alike; the
report gives the median over rounds and the ratios (the median of each
round's own ratio, scripts/stats.py), with PASS/MISS for each target. It
is printed and written to results/bench-DATE.md (--out), its records
beside it as .json (`scripts/perfreport.py RECORDS.json PAGE` renders the
page from them again; --keep also keeps every fio JSON). Before each run
it waits up to --quiet-wait s (default 20, 0 = never) for an idle machine;
around each fio run a fixed loop times the client CPU's speed (CPU probe
ms; --no-speed-probe leaves it out).

Every section has a lean probe: the same transport driven by a client
that does nothing else, no fio (pipe-probe for NBD, each round once
sleeping for replies and once busy-polling, the faster counting;
ring-client --bench over the TCMU ring): the engine's gap to the
transport's limit is reported beside its gap to fio's engine.

--build DIR takes the engine, the shims, pipe-probe and ring-client from
DIR (default build; NBD_SHIM, PIPE_PROBE, TCMU_SHIM, RING_CLIENT and
--engine name one each). --engine-opt options apply to every run of the
engine. CPU per I/O = (fio usr+sys % / 100 * job runtime) / I/Os: the fio
process's CPU per I/O, the server's excluded. Server CPU per I/O = the
server process's utime + stime (/proc/PID/stat, every thread) over the run
/ I/Os.

The sections are the records of SECTIONS in scripts/bench_sections.py
(each its servers, its clients, its lean probe and its targets, in its run
function); to add one, write its function and add its record. The NBD
shim's sections are the group shims (--sections shims). The engine of two
commits in paired runs is scripts/bench-builds (benchpair.py: it builds
the commits first), whose statistics come from scripts/stats.py as these
do.
"""

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NAME = "bench"
PLACEMENTS = ("pinned", "free")
BenchError = bench_run.BenchError


# ------------------------------------------------------------ options

def parser(epilog=""):
    p = argparse.ArgumentParser(
        prog="scripts/bench", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=HELP, epilog=epilog)
    p.add_argument("--runtime", type=int, default=8, help="seconds per run (default 8)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per section (default 3)")
    p.add_argument("--quick", action="store_true",
                   help="--runtime 2 --rounds 1 --size 1G: a smoke run; figures are noisy")
    p.add_argument("--sections", help="ids and groups (engine, shims, tcmu, all), comma-"
                   "separated (default engine; with --report all)")
    p.add_argument("--placements", help="pinned, free or pinned,free (default pinned; with "
                   "--report pinned,free)")
    p.add_argument("--report", nargs="?", const=os.path.join(REPO, "docs", "performance.md"),
                   metavar="PAGE", help="write the page (default docs/performance.md)")
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="take the engine, shims, pipe-probe and ring-client from DIR")
    p.add_argument("--engine", help="the engine (default BUILD/engines/libtorus.so)")
    p.add_argument("--engine-opt", action="append", default=[], metavar="OPT",
                   help="an option for every run of the engine (repeatable)")
    p.add_argument("--size", default=None, help="server size (default 8G; nbdcopy's copy)")
    p.add_argument("--tcmu-size", default="1G", help="the tcmu sections' stores (default 1G)")
    p.add_argument("--out", help="the report (default results/bench-DATE.md)")
    p.add_argument("--keep", action="store_true", help="keep every fio JSON beside the report")
    p.add_argument("--quiet-wait", type=int, default=20, metavar="S",
                   help="wait up to S s for an idle machine before each run (0: never)")
    p.add_argument("--no-speed-probe", dest="speed_probe", action="store_false",
                   help="no CPU-speed probe around the runs")
    return p


class Options:
    """The parsed options, checked, with their defaults resolved."""

    def __init__(self, argv, groups, known, listing=""):
        a = parser(sections_help(groups, listing)).parse_args(argv)
        self.argv = list(argv)
        self.known = list(known)
        self.mode = "quick" if a.quick else "full"
        self.runtime = 2 if a.quick and "--runtime" not in argv else a.runtime
        self.rounds = 1 if a.quick and "--rounds" not in argv else a.rounds
        self.size = a.size or ("1G" if a.quick else "8G")
        if self.runtime <= 0:
            raise BenchError(f"--runtime wants whole seconds, got '{self.runtime}'")
        if self.rounds <= 0:
            raise BenchError(f"--rounds wants a positive number, got '{self.rounds}'")
        if a.quiet_wait < 0:
            raise BenchError(f"--quiet-wait wants whole seconds, got '{a.quiet_wait}'")
        try:
            self.size_bytes = harness.parse_size(self.size)
            harness.parse_size(a.tcmu_size)
        except ValueError as e:
            raise BenchError(f"--size/--tcmu-size: {e}")
        self.tcmu_size = a.tcmu_size
        self.quiet_wait, self.speed_probe, self.keep = a.quiet_wait, a.speed_probe, a.keep
        self.report = a.report
        if self.report and not os.path.isdir(os.path.dirname(os.path.abspath(self.report))):
            raise BenchError(f"--report {self.report}: no directory "
                             f"{os.path.dirname(self.report)}: give a file in an existing "
                             "directory")
        build = os.path.abspath(a.build)
        self.build = build
        self.engine = os.path.abspath(a.engine or os.path.join(build, "engines/libtorus.so"))
        self.engine_opts = a.engine_opt
        env = os.environ.get
        self.nbd_shim = env("NBD_SHIM") or os.path.join(build, "shims/nbd/nbd-shim")
        self.pipe_probe = env("PIPE_PROBE") or os.path.join(build, "tests/shims/pipe-probe")
        self.tcmu_shim = env("TCMU_SHIM") or os.path.join(build, "shims/tcmu/tcmu-shim")
        self.ring_client = env("RING_CLIENT") or os.path.join(build, "tests/tcmu/ring-client")
        wanted = a.sections or ("all" if self.report else "engine")
        self.sections = []
        for s in wanted.split(","):
            for sid in groups.get(s, [s]):
                if sid not in known:
                    raise BenchError(f"unknown section '{s}' (have: {' '.join(groups)} "
                                     f"{' '.join(known)})")
                self.sections.append(sid)
        if not self.sections:
            raise BenchError("--sections: no section given")
        places = a.placements or ("pinned,free" if self.report else "pinned")
        self.placements = []
        for p in places.split(","):
            if p not in PLACEMENTS:
                raise BenchError(f"--placements: unknown placement '{p}': use pinned, free or "
                                 "pinned,free")
            if p == "pinned" and os.cpu_count() < 2:
                print(f"{NAME}: warning: one CPU only, no pinned placement", file=sys.stderr)
                continue
            self.placements.append(p)
        self.placements = self.placements or ["free"]
        self.out = a.out


def sections_help(groups, listing):
    return ("sections (--sections takes these ids and the groups " + ", ".join(groups) +
            "):\n" + listing + "\n" +
            "\n".join(f"  {g}: {' '.join(ids)}" for g, ids in groups.items()) +
            "\n--report: --sections all --placements pinned,free; the page "
            "docs/performance.md")


# ------------------------------------------------------------ main

def check_tools(opts, needs):
    for tool in dict.fromkeys(needs):
        if "/" in tool:
            if not os.access(tool, os.X_OK):
                raise BenchError(f"{tool} is missing: ninja -C {opts.build}")
        elif shutil.which(tool) is None:
            raise BenchError(f"{tool} not found: run scripts/deps.sh")
    if not os.path.isfile(opts.engine):
        raise BenchError(f"no engine at {opts.engine}: build it with\n  scripts/fio-source.sh "
                         "&& meson setup build -Dfio_src=$PWD/.deps/fio && ninja -C build")
    r = subprocess.run(["fio", f"--enghelp={opts.engine}"], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"{r.stdout}{r.stderr}fio cannot load {opts.engine} (above)")


def first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True)
        return (r.stdout or r.stderr).splitlines()[0]
    except (OSError, IndexError):
        return ""


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def commit_text():
    r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", REPO, "diff", "--quiet"]).returncode != 0
    return r.stdout.strip() + (" (dirty tree)" if dirty else "")


def built(path):
    return datetime.datetime.fromtimestamp(os.path.getmtime(path)).astimezone().isoformat(
        timespec="seconds")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def header(b, opts):
    """The report's header and the page's meta records of the run."""
    rec = b.records.add
    commit = commit_text()
    ids = opts.sections
    versions = ", ".join([first_line(["fio", "--version"]), first_line(["nbdkit", "--version"]),
                          first_line(["nbdcopy", "--version"])])
    engine_text = opts.engine + (" " + " ".join(opts.engine_opts) if opts.engine_opts else "")
    rec("header", "date", datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    rec("header", "commit", commit)
    rec("header", "engine", f"{engine_text} (built {built(opts.engine)})")
    if any(s.startswith("shim_") or s.startswith("tcmu_vs_nbd") for s in ids):
        rec("header", "nbd-shim", f"{opts.nbd_shim} (built {built(opts.nbd_shim)})")
    if any(s.startswith("tcmu_") for s in ids):
        rec("header", "tcmu-shim", f"{opts.tcmu_shim} (built {built(opts.tcmu_shim)}); "
            f"stores {opts.tcmu_size}")
        rec("header", "server CPU per I/O", "the server's utime + stime (/proc/PID/stat, every "
            "thread) over the run / I/Os")
    cores = os.cpu_count()
    rec("header", "machine", f"{cores} CPUs, {cpu_model()}, kernel {os.uname().release}")
    rec("header", "versions", versions)
    rec("header", "runs", f"{opts.rounds} round(s) of {opts.runtime}s per client, alternating; "
        f"server size {opts.size}; placements: {' '.join(opts.placements)} (pinned: server CPU "
        "0, client CPU 1; free: no pinning)")
    rec("header", "CPU per I/O", "(fio usr+sys % / 100 * runtime) / I/Os, fio process only")
    rec("meta", "command", shlex.join(["scripts/bench"] + opts.argv))
    rerun = ["--rounds", str(opts.rounds), "--runtime", str(opts.runtime), "--size", opts.size]
    if any(s.startswith("tcmu_") for s in ids):
        rerun += ["--tcmu-size", opts.tcmu_size]
    for o in opts.engine_opts:
        rerun += ["--engine-opt", o]
    meta = {"rerun": shlex.join(rerun), "mode": opts.mode, "started": utc_now(),
            "commit": commit, "cpu": cpu_model(), "cores": cores,
            "kernel": os.uname().release, "versions": versions, "rounds": opts.rounds,
            "runtime": opts.runtime, "placements": " ".join(opts.placements),
            "load_start": loadavg(), "order": " ".join(opts.known)}
    for k, v in meta.items():
        rec("meta", k, str(v))
    rec("header", "load average at start", loadavg())


def finish(b, opts, out):
    """The closing records, the report (printed, written to OUT, the
    records beside it as .json) and the page of --report."""
    rec = b.records.add
    rec("header", "load average at end", loadavg())
    rec("meta", "load_end", loadavg())
    rec("meta", "finished", utc_now())
    if opts.quiet_wait:
        rec("header", "busy machine", f"{b.runs_busy} of {b.runs_total} runs started with a "
            f"CPU over {bench_run.QUIET_PCT}% busy after waiting {opts.quiet_wait}s")
    rec("meta", "busy", f"{b.runs_busy} {b.runs_total} {opts.quiet_wait}")
    print()
    benchlib.report(b.records, out)
    base = out[:-3] if out.endswith(".md") else out
    b.records.save(base + ".json")
    print(f"\n{NAME}: report written to {out}, its records to {base}.json")
    if opts.keep:
        os.makedirs(base, exist_ok=True)
        for d in os.listdir(b.tmp_base):
            j = os.path.join(b.tmp_base, d, "json")
            if os.path.isdir(j):
                for name in os.listdir(j):
                    shutil.copy(os.path.join(j, name), base)
    if opts.report:
        write_page(opts.report, b.records)


def page_records(page):
    """The file beside PAGE that holds the records of its sections."""
    return (page[:-3] if page.endswith(".md") else page) + ".json"


def write_page(page, records):
    """PAGE with the sections of RECORDS (a run's) measured anew, the
    others kept from the runs in its records file, which is updated."""
    path = page_records(page)
    runs = []
    if os.path.exists(path):
        try:
            runs = benchlib.load_runs(path)
        except ValueError as e:
            raise BenchError(f"{e}: remove {path} (and re-run every section) or restore it "
                             "from git")
    runs = benchlib.merge_runs(runs, records.all)
    text = perfreport.render_runs([benchlib.Records(r) for r in runs])
    benchlib.save_runs(path, runs)
    with open(page, "w") as f:
        f.write(text)
    print(f"{NAME}: page written to {page} ({len(runs)} run{'s' if len(runs) > 1 else ''}), "
          f"its records to {path}")


def main(argv, sections, groups, listing=""):
    """Run the sections named by ARGV's options. SECTIONS: {id: Section}
    (bench_sections.SECTIONS), GROUPS: {group: [ids]}; LISTING (each
    section's line) for --help."""
    try:
        opts = Options(argv, groups, list(sections), listing)
        needs = ["fio", "taskset"]
        for sid in opts.sections:
            needs += [t if t in ("nbdkit", "nbdcopy", "certtool", "psktool", "redis-server")
                      else getattr(opts, t) for t in sections[sid].needs]
        check_tools(opts, needs)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = opts.out or os.path.join(REPO, "results", f"bench-{stamp}.md")
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{NAME}.") as tmp:
            b = bench_run.Bench(opts, tmp)
            header(b, opts)
            print(f"{NAME}: {opts.rounds} round(s), {opts.runtime}s per run, placements: "
                  f"{' '.join(opts.placements)}, sections: {' '.join(opts.sections)}")
            try:
                for sid in opts.sections:
                    for p in opts.placements:
                        b.place(p, sid)
                        if len(opts.placements) > 1:
                            print(f"{sid}, {p}:")
                        sections[sid].run(b)
                        b.stop_servers()
            finally:
                b.stop_servers()
            finish(b, opts, out)
    except (BenchError, procs.HarnessError, ValueError, OSError) as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
