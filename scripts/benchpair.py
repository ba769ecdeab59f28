"""scripts/bench-builds: paired old/new runs of libtorus.so, CPU per I/O and IOPS.

  scripts/bench-builds [--old REV] [--new REV | --new-engine PATH] [--together]
                       [--rounds N] [--runtime S] [--cases LIST] [--out FILE]
                       [--build DIR] [--tcmu-shim PATH] [--scratch DIR]

The old engine is libtorus.so built at --old REV; without --old, the
merge-base of HEAD with origin/main (an error when there is no origin/main).
A REV is built in a scratch git worktree, SCRATCH/REV-SHORTHASH (default
SCRATCH: build/bench-builds; its .deps a link to ours), with `meson setup
-Dfio_src=` taken from the --build directory's configuration (else
.deps/fio), and reused when that commit is already built there. The new
engine is the working tree's: `ninja -C BUILD engines/libtorus.so
shims/tcmu/tcmu-shim` first (BUILD: --build, default build); or --new REV,
built like --old; or --new-engine PATH, as it is (the tcmu-shim of the
build it sits in).

Servers: `nbdkit null 4G` on a Unix socket and the NEW build's tcmu-shim
--store null --size 4G (the same server binary for both engines; or
--tcmu-shim PATH), pinned to the first CPU we may use, fio to the second
(no pinning, with a note, on one CPU).

Cases (--cases takes a comma-separated list of these; default: all):

{cases}

Each round runs every case with both engines back to back, old first in
odd rounds and new first in even ones. With --together, both engines run
at once instead, as two jobs of one fio run (each with its own connection,
fio on its one CPU; the job listed first alternates): they share every
change of the machine's speed, which runs taken in turn do not, so a
difference of a few percent shows (each job then has half the CPU).
CPU per I/O is the fio process's usr+sys time over its I/Os (the servers'
CPU excluded), IOPS fio's own.
The ratio new/old is taken per round, then its median and min-max over the
rounds. The report (a markdown table, the machine, the date, both
commits, the command line, the load average before and after) is written
to --out (default results/bench-builds-DATE.md) and printed.

On a shared machine single runs vary a lot: read the paired ratios and
their spread, not one round's figures. Exit status: 0 done, 1 a build or a
run failed, 2 usage errors.
"""

import argparse
import collections
import datetime
import glob
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import fio_json
import procs
import servers
import stats

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

Case = collections.namedtuple("Case", "name label transport fio_args")

CASES = (
    Case("nbd-4k", "nbd 4k randread QD16", "nbd", ("--rw=randread", "--bs=4k", "--iodepth=16")),
    Case("nbd-64k", "nbd 64k randrw QD64", "nbd", ("--rw=randrw", "--bs=64k", "--iodepth=64")),
    Case("tcmu-4k", "tcmu 4k randread QD16", "tcmu",
         ("--rw=randread", "--bs=4k", "--iodepth=16")),
    Case("tcmu-64k", "tcmu 64k randrw QD64", "tcmu",
         ("--rw=randrw", "--bs=64k", "--iodepth=64")),
)
BY_NAME = {c.name: c for c in CASES}
TARGETS = ("engines/libtorus.so", "shims/tcmu/tcmu-shim")
SERVER_SIZE = "4G"


class UsageError(Exception):
    """Bad input: the message names the problem and the fix."""


def usage_text():
    cases = "\n".join(f"  {c.name:<10} {c.label}" for c in CASES)
    return __doc__.format(cases=cases)


def parse_cases(text):
    """The cases named in TEXT (comma-separated, 'all' for every one), in
    the order of CASES, each once."""
    names = [n.strip() for n in (text or "all").split(",") if n.strip()]
    if not names:
        raise UsageError("--cases is empty: name at least one of " + ", ".join(BY_NAME))
    if "all" in names:
        return list(CASES)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise UsageError(f"--cases: unknown case {', '.join(unknown)}: "
                         f"use a comma-separated list of {', '.join(BY_NAME)} (or all)")
    return [c for c in CASES if c.name in names]


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see scripts/bench-builds --help)")


def parser():
    p = _Parser(prog="bench-builds", description=usage_text(), add_help=True,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", metavar="REV",
                   help="the old engine's commit (default: merge-base with origin/main)")
    new = p.add_mutually_exclusive_group()
    new.add_argument("--new", metavar="REV", help="build the new engine at REV too")
    new.add_argument("--new-engine", metavar="PATH", help="a built libtorus.so to use as new")
    p.add_argument("--together", action="store_true",
                   help="both engines at once, two jobs of one fio run, in each round")
    p.add_argument("--rounds", type=int, default=5, metavar="N", help="rounds (default 5)")
    p.add_argument("--runtime", type=int, default=5, metavar="S",
                   help="seconds of each fio run, after 1 s of ramp (default 5)")
    p.add_argument("--cases", default="all", metavar="LIST", help="cases (default all)")
    p.add_argument("--out", metavar="FILE", help="report (default results/bench-builds-DATE.md)")
    p.add_argument("--build", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="the working tree's build directory (default build)")
    p.add_argument("--tcmu-shim", metavar="PATH", help="the TCMU server (default: new build's)")
    p.add_argument("--scratch", default=os.path.join(REPO, "build", "bench-builds"),
                   metavar="DIR", help="where REVs are built (default build/bench-builds)")
    return p


def parse_args(argv):
    """The options of ARGV, checked; UsageError on bad input."""
    args = parser().parse_args(argv)
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: give at least 1 (e.g. --rounds 5)")
    if args.runtime < 1:
        raise UsageError(f"--runtime {args.runtime}: give at least 1 second (e.g. --runtime 5)")
    args.case_list = parse_cases(args.cases)
    if args.new_engine and not os.path.isfile(args.new_engine):
        raise UsageError(f"--new-engine {args.new_engine}: no such file: "
                         "name a built libtorus.so (e.g. build/engines/libtorus.so)")
    if args.tcmu_shim and not os.access(args.tcmu_shim, os.X_OK):
        raise UsageError(f"--tcmu-shim {args.tcmu_shim}: not an executable: "
                         "name a built tcmu-shim (e.g. build/shims/tcmu/tcmu-shim)")
    if args.new_engine and not args.tcmu_shim:
        args.tcmu_shim = shim_beside(args.new_engine)
        if not args.tcmu_shim and any(c.transport == "tcmu" for c in args.case_list):
            raise UsageError(f"--new-engine {args.new_engine}: no tcmu-shim in its build: "
                             "name the TCMU server with --tcmu-shim PATH (or leave the tcmu "
                             "cases out with --cases)")
    args.build, args.scratch = os.path.abspath(args.build), os.path.abspath(args.scratch)
    return args


def shim_beside(engine):
    """The tcmu-shim of the build directory ENGINE (BUILD/engines/X.so)
    sits in, or None."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(engine)))
    shim = os.path.join(build, TARGETS[1])
    return shim if os.path.isfile(shim) and os.access(shim, os.X_OK) else None


def order(round_index):
    """Which engine goes first in round ROUND_INDEX (0-based): old in odd
    rounds (1st, 3rd, ...), new in even ones."""
    return ("old", "new") if round_index % 2 == 0 else ("new", "old")


def figures(data, name="fio's output"):
    """(CPU per I/O in us, IOPS) of one fio run's JSON."""
    s = fio_json.fio_summary(data, name)
    return s["cpu_us_per_io"], s["iops"]


def summarize(results):
    """One row per case from RESULTS {label: {"old": [(cpu, iops)...],
    "new": [...]}}: medians of each engine and the new/old ratios of the
    rounds as stats.Summary (median, min, max)."""
    rows = []
    for label, r in results.items():
        o, n = r["old"], r["new"]
        if not o or not n:
            continue
        oc, ni = [x[0] for x in o], [x[1] for x in n]
        nc, oi = [x[0] for x in n], [x[1] for x in o]
        rows.append({"case": label, "rounds": min(len(o), len(n)),
                     "cpu_old": stats.summary(oc).median, "cpu_new": stats.summary(nc).median,
                     "cpu_ratio": stats.summary(stats.paired_ratios(nc, oc)),
                     "iops_old": stats.summary(oi).median, "iops_new": stats.summary(ni).median,
                     "iops_ratio": stats.summary(stats.paired_ratios(ni, oi))})
    return rows


def _summary_text(s):
    if s is None:
        return "n/a"
    return f"{s.median:.3f} [{s.min:.3f}-{s.max:.3f}]"


def table(rows):
    """The markdown table of summarize()'s ROWS."""
    lines = ["| case | CPU/IO old (us) | CPU/IO new (us) | CPU/IO new/old median [min-max] "
             "| IOPS old | IOPS new | IOPS new/old median [min-max] |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['cpu_old']:.2f} | {r['cpu_new']:.2f} | "
                     f"{_summary_text(r['cpu_ratio'])} | {r['iops_old']:.0f} | "
                     f"{r['iops_new']:.0f} | {_summary_text(r['iops_ratio'])} |")
    return "\n".join(lines) + "\n"


def rounds_table(results):
    """The markdown table of every round of RESULTS (as for summarize()),
    round by round, naming which engine ran first."""
    lines = ["| round | case | first | CPU/IO old (us) | CPU/IO new (us) | new/old "
             "| IOPS old | IOPS new | new/old |",
             "|---|---|---|---|---|---|---|---|---|"]
    n = max((min(len(r["old"]), len(r["new"])) for r in results.values()), default=0)
    for i in range(n):
        for label, r in results.items():
            if i >= min(len(r["old"]), len(r["new"])):
                continue
            (oc, oi), (nc, ni) = r["old"][i], r["new"][i]
            lines.append(f"| {i + 1} | {label} | {order(i)[0]} | {oc:.2f} | {nc:.2f} | "
                         f"{nc / oc:.3f} | {oi:.0f} | {ni:.0f} | {ni / oi:.3f} |")
    return "\n".join(lines) + "\n"


def report(info, rows, results=None):
    """The whole report: INFO (a dict: command, started, finished, old, new,
    machine, fio, load_before, load_after, servers, pinning, rounds,
    runtime), the table of ROWS, and with RESULTS every round's figures."""
    return (f"# CPU per I/O and IOPS, old and new libtorus.so (scripts/bench-builds)\n\n"
            f"- **Command**: `{info['command']}`\n"
            f"- **Old**: {info['old']}\n"
            f"- **New**: {info['new']}\n"
            f"- **Machine**: {info['machine']}; {info['fio']}\n"
            f"- **Date**: {info['started']} to {info['finished']}\n"
            f"- **Load average** (1, 5, 15 min): before {info['load_before']}, "
            f"after {info['load_after']}\n"
            f"- **Servers**: {info['servers']}; {info['pinning']}\n"
            f"- **Runs**: {info['rounds']} rounds of {info['runtime']} s (after 1 s of ramp) "
            + ("per case, both engines at once (two jobs of one fio run, sharing its CPU), "
               "old listed first in odd rounds and new in even ones"
               if info.get("together") else
               "per case and engine, back to back, old first in odd rounds and new first in "
               "even ones")
            + "; the ratio new/old is taken per round, then its median and min-max.\n"
            "- **Figures**: CPU per I/O = the fio process's usr+sys time / its I/Os (the "
            "servers' CPU excluded); IOPS = fio's.\n\n"
            + table(rows)
            + (f"\n## Each round\n\n{rounds_table(results)}" if results else ""))


def rev_dir_name(rev, commit):
    """SCRATCH's subdirectory for REV at COMMIT: REV made safe for a file
    name, then the short hash."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", rev).strip(".") or "rev"
    return f"{safe}-{commit[:12]}"


def load_text(load):
    return ", ".join(f"{x:.2f}" for x in load)


# --- what touches git, meson, the servers and fio (not unit-tested) ---

def _git(*args, check=True):
    r = subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r


def resolve(rev, option):
    """The full commit of REV, or UsageError naming OPTION."""
    r = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if r.returncode != 0 or not r.stdout.strip():
        raise UsageError(f"{option} {rev}: not a commit in {REPO}: give a commit, branch or "
                         "tag (git log --oneline shows them)")
    return r.stdout.strip()


def default_old():
    if _git("rev-parse", "--verify", "--quiet", "origin/main", check=False).returncode != 0:
        raise UsageError("--old REV is required: there is no origin/main to take the "
                         "merge-base with (e.g. --old HEAD~1)")
    r = _git("merge-base", "HEAD", "origin/main", check=False)
    if r.returncode != 0:
        raise UsageError("--old REV is required: HEAD and origin/main have no merge-base")
    return r.stdout.strip()


def describe(commit):
    return _git("log", "-1", "--format=%h %s", commit).stdout.strip()


def fio_src(build):
    """-Dfio_src= of BUILD's configuration, else .deps/fio."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            for o in json.load(f):
                if o.get("name") == "fio_src" and o.get("value"):
                    return o["value"]
    except (OSError, ValueError):
        pass
    return os.path.join(REPO, ".deps", "fio")


def _run(argv, log):
    print(f"bench-builds: {' '.join(argv)}", file=sys.stderr, flush=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        r = subprocess.run(argv, stdout=f, stderr=f, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (status {r.returncode}): see {log}")


def build_rev(rev, commit, scratch, fio):
    """(libtorus.so, tcmu-shim) built at COMMIT in a worktree under SCRATCH."""
    scratch = os.path.abspath(scratch)
    # the same commit built under another name is reused
    for tree in sorted(glob.glob(os.path.join(scratch, "*-" + commit[:12]))):
        outs = [os.path.join(tree, "build", t) for t in TARGETS]
        if all(os.path.exists(o) for o in outs):
            print(f"bench-builds: {rev}: reusing {tree}/build", file=sys.stderr)
            return outs
    tree = os.path.join(scratch, rev_dir_name(rev, commit))
    build = os.path.join(tree, "build")
    outs = [os.path.join(build, t) for t in TARGETS]
    os.makedirs(scratch, exist_ok=True)
    log = tree + ".log"
    if not os.path.isdir(tree):
        _run(["git", "-C", REPO, "worktree", "add", "--detach", tree, commit], log)
    # the source trees some builds look for in .deps (tcmu-runner's headers)
    deps = os.path.join(tree, ".deps")
    if os.path.isdir(os.path.join(REPO, ".deps")) and not os.path.lexists(deps):
        os.symlink(os.path.join(REPO, ".deps"), deps)
    if not os.path.exists(os.path.join(build, "build.ninja")):
        # a setup that failed leaves a build directory meson will not reuse
        shutil.rmtree(build, ignore_errors=True)
        _run(["meson", "setup", build, tree, f"-Dfio_src={fio}"], log)
    _run(["ninja", "-C", build] + list(TARGETS), log)
    return outs


def build_tree(build):
    """(libtorus.so, tcmu-shim) of the working tree's BUILD, brought up to date."""
    log = os.path.join(tempfile.gettempdir(), "bench-builds-ninja.log")
    _run(["ninja", "-C", build] + list(TARGETS), log)
    return [os.path.join(build, t) for t in TARGETS]


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs (nproc), Linux {platform.release()}"


def fio_version():
    r = subprocess.run(["fio", "--version"], capture_output=True, text=True)
    return r.stdout.strip() or "fio (version unknown)"


def pinning():
    """(server CPU, fio CPU, note): the first two CPUs we may use, or None
    for both on one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None, "no pinning: one CPU"
    return cpus[0], cpus[1], f"servers pinned to CPU {cpus[0]}, fio to CPU {cpus[1]}"


def case_args(case, runtime):
    return ["--size=1g", f"--runtime={runtime}", "--time_based",
            "--ramp_time=1"] + list(case.fio_args)


def run_case(engine, uri, case, runtime, pin):
    args = case_args(case, runtime) + ["--name=b", f"--ioengine=external:{engine}",
                                       f"--uri={uri}"]
    run = fio_json.run_fio(args, pin=pin, timeout=runtime + 120)
    return figures(run.data, f"{case.label} with {engine}")


def together_args(engines, uri, case, runtime, tags):
    """fio's arguments for ENGINES {tag: path} at once, a job named after
    each tag, in the order of TAGS."""
    args = case_args(case, runtime)
    for tag in tags:
        args += [f"--name={tag}", f"--ioengine=external:{engines[tag]}", f"--uri={uri}"]
    return args


def run_together(engines, uri, case, runtime, pin, tags):
    """{tag: (CPU per I/O, IOPS)} of one fio run with every engine at once."""
    run = fio_json.run_fio(together_args(engines, uri, case, runtime, tags), pin=pin,
                          timeout=runtime + 120)
    out = {}
    for tag in tags:
        s = fio_json.fio_summary(run.data, f"{case.label}, job {tag}", jobname=tag)
        out[tag] = s["cpu_us_per_io"], s["iops"]
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        old_commit = resolve(args.old, "--old") if args.old else default_old()
        new_commit = resolve(args.new, "--new") if args.new else None
        if not (new_commit or args.new_engine or
                os.path.exists(os.path.join(args.build, "build.ninja"))):
            raise UsageError(f"{args.build} is not a meson build directory: set one up "
                             "(meson setup build), name one with --build DIR, or build the "
                             "new engine at a commit with --new REV")
        fio = fio_src(args.build)
        old_so, _ = build_rev(args.old or "merge-base", old_commit, args.scratch, fio)
        if new_commit:
            new_so, shim = build_rev(args.new, new_commit, args.scratch, fio)
            new_text = f"{describe(new_commit)} ({new_so})"
        elif args.new_engine:
            new_so, shim = os.path.abspath(args.new_engine), None
            new_text = f"{new_so} (given)"
        else:
            new_so, shim = build_tree(args.build)
            dirty = _git("diff", "--quiet", "HEAD", check=False).returncode != 0
            new_text = (f"the working tree at {describe('HEAD')}"
                        f"{' plus uncommitted changes' if dirty else ''} ({new_so})")
        shim = os.path.abspath(args.tcmu_shim) if args.tcmu_shim else shim
    except UsageError as e:
        print(f"bench-builds: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"bench-builds: {e}", file=sys.stderr)
        return 1

    now = datetime.datetime.now(datetime.timezone.utc)
    out = args.out or os.path.join(REPO, "results", f"bench-builds-{now:%Y%m%d-%H%M%S}.md")
    server_cpu, fio_cpu, pin_note = pinning()
    info = {"command": "scripts/bench-builds " + shlex.join(argv),
            "old": f"{describe(old_commit)} ({old_so})", "new": new_text,
            "machine": machine(), "fio": fio_version(),
            "load_before": load_text(os.getloadavg()),
            "started": f"{now:%Y-%m-%d %H:%M} UTC", "pinning": pin_note,
            "rounds": args.rounds, "runtime": args.runtime, "together": args.together,
            "servers": f"nbdkit null {SERVER_SIZE} on a Unix socket; "
                       f"{shim} --store null --size {SERVER_SIZE}"}
    results = {c.label: {"old": [], "new": []} for c in args.case_list}
    engines = {"old": old_so, "new": new_so}
    failed = None
    with tempfile.TemporaryDirectory(prefix="bench-builds.") as tmp:
        servers = {}
        try:
            log = os.path.join(tmp, "servers.log")
            if any(c.transport == "nbd" for c in args.case_list):
                servers["nbd"] = servers.nbdkit("null", SERVER_SIZE, socket=f"{tmp}/nbd.sock",
                                                pin=server_cpu, log=log)
            if any(c.transport == "tcmu" for c in args.case_list):
                servers["tcmu"] = servers.tcmu_shim(shim, f"{tmp}/tcmu.sock", store="null",
                                                    size=SERVER_SIZE, pin=server_cpu, log=log)
            for r in range(args.rounds):
                for case in args.case_list:
                    uri = servers[case.transport].uri
                    if args.together:
                        pair = run_together(engines, uri, case, args.runtime, fio_cpu, order(r))
                    else:
                        pair = {tag: run_case(engines[tag], uri, case, args.runtime, fio_cpu)
                                for tag in order(r)}
                    for tag in order(r):
                        results[case.label][tag].append(pair[tag])
                    print(f"round {r + 1} {case.label}: old {pair['old'][0]:.2f} us/IO "
                          f"{pair['old'][1]:.0f} IOPS; new {pair['new'][0]:.2f} us/IO "
                          f"{pair['new'][1]:.0f} IOPS", file=sys.stderr, flush=True)
        except (procs.HarnessError, KeyboardInterrupt) as e:
            failed = str(e) or type(e).__name__
            print(f"bench-builds: stopped: {failed}", file=sys.stderr)
        finally:
            servers.stop_all(servers.values())
    # a round cut short keeps only its complete pairs
    for r in results.values():
        n = min(len(r["old"]), len(r["new"]))
        r["old"], r["new"] = r["old"][:n], r["new"][:n]
    info["finished"] = f"{datetime.datetime.now(datetime.timezone.utc):%H:%M} UTC"
    info["load_after"] = load_text(os.getloadavg())
    text = report(info, summarize(results), results)
    if failed:
        text += f"\nStopped early: {failed}\n"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    print(f"bench-builds: written to {out}", file=sys.stderr)
    return 1 if failed else 0
