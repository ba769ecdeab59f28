"""scripts/rerun-documents: re-run every test of the five benchmark documents through the engine and
put our figures beside the documents'.

  scripts/rerun-documents [--short] [--results DIR] [--seconds N]
                          [--size-cap SIZE] [--only REGEX] [--engine PATH]
                          [--nbd-shim PATH] [--tcmu-shim PATH]
                          [--redis-servers N] [--skip-missing]
                          [--kernel-paths LIST] [--kernel auto|native|guest]
                          [--timeline] [--sweep ID] [--list]

Each test of the documents (docs/documents.md, listed in jobs/documents.tsv)
has a job file in jobs/ (see jobs/README.md). This command runs every one of
them with the engine (libtorus.so) against the server that matches its
document, all on this machine over TCP on loopback:

  torus tests            nbd-shim --profile coreos, replication 2, shaped to 1 GbE
  ZeroOS baseline        the official nbd-server, exporting a sparse file
  0-Disk tests           nbd-shim --profile zeroos on Redis (deduped layout,
                         8 storage servers + 1 metadata server as in the document)
  GlusterFS, Lustre      nbdkit memory

The torus document measured each test through NBD and through TCMU, so its
tests run twice: over NBD (the engine's NBD client to the torus shim), then
over TCMU (ids <test>-tcmu: the engine's TCMU transport,
tcmu+unix:///?socket=PATH, to tcmu-shim --store nbd:<the torus shim's URI>,
one tcmu-shim for the four, in front of the same torus shim). Each row of the
report stands beside the document's figures of its own front end.

With --kernel-paths (compare's paths through the kernel, docs/compare.md:
{kernel_paths}), each NBD test also runs in its kernel-path form through
scripts/compare against the same server, in further columns of the report:
on the raw device with the job's own direct= for device and block-level
tests, and in a directory of an ext4 filesystem made on the device and
mounted -o discard,noatime for the filesystem tests (a new filesystem per
test, so ddreadback reads a file fio lays out itself). Kernel paths that run
in the emulated guest are marked functional only. libnbd-based paths
(kernel-loop's nbdfuse) cannot talk to the torus and 0-Disk servers; those
cells say why.

With --sweep ID, the test ID's job is swept around its own point instead:
scripts/compare --sweep with bs and iodepth at a quarter of the job's, the
job's and four times it (3 x 3 cells), scaled as the test is, against
compare's own server, on the paths of --kernel-paths and their engines
(default: compare's sweep paths); see docs/compare.md.

With --timeline each engine test's mean latency is split into phases
(docs/timeline.md): the engine runs with timeline=<id>.timeline, the shims
this command starts (torus and 0-Disk nbd-shims, tcmu-shim) with --timeline,
and their records are joined per test; nbd-server and nbdkit keep no
records, so their tests show the server and the wire as one phase. The
kernel paths get compare --timeline. report.md gains a section of phases
per test, results.json a "timeline" entry per test (and per kernel path).

The documents' sizes and runtimes do not fit a test machine (200 GiB files,
180 s runs), so each job is scaled through its environment variables
(TORUS_SIZE, TORUS_RUNTIME, TORUS_NRFILES; jobs/README.md): sizes are capped
at --size-cap (default: an eighth of the memory available, --short: 64 MiB),
runtimes at --seconds (default 60, --short 3), the small-file test runs 2000
files (--short: 200). Rates (MB/s, IOPS) are compared as they are; the
small-file times are scaled to the document's amount of data.

Output, in the results folder (default results/<date-time>):
  report.md     the table: document, test, the documents' figures, ours,
                units, server, notes; the syncs and trims each run issued,
                a test whose runs' syncs per write or trims per I/O are
                more than 10% apart flagged (results.json: issued_differ)
  report.png    ours against the documents' (log scale, one panel per unit)
  results.json  every figure, machine-readable
  <id>.json     fio's JSON output of each test; <id>.log its stderr;
  kernel/<id>/  scripts/compare's results of the kernel paths (--kernel-paths)
  <id>.timeline/  the test's records and their join (--timeline)
  servers.log   what the servers printed

Progress goes to stdout, one line per test. Exit status: 0 when every test
ran, 1 when one failed (the report is still written), 2 on a usage error or
when a server the chosen tests need is missing (the message names the Debian
package or the build step).
"""

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import compare_paths
import docs_tests
import fio_json
import harness
import issued
import procs
import servers
import timeline_runs
from docs_tests import KiB, MiB, GiB

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# the command (it runs itself again under the system python for the picture)
SCRIPT = os.path.join(HERE, "rerun-documents")

JOBS = os.path.join(REPO, "jobs")

# What provides each program, for the error when it is missing.
PROVIDERS = {
    "fio": "install the Debian package fio (scripts/deps.sh)",
    "nbdkit": "install the Debian package nbdkit (scripts/deps.sh)",
    "nbd-server": "install the Debian package nbd-server (scripts/deps.sh)",
    "redis-server": "install the Debian package redis-server (scripts/deps.sh)",
    "nbd-shim": "build it: scripts/fio-source.sh && meson setup build "
                "-Dfio_src=$PWD/.deps/fio && ninja -C build",
    "tcmu-shim": "build it: scripts/fio-source.sh && meson setup build "
                 "-Dfio_src=$PWD/.deps/fio && ninja -C build",
    "libtorus.so": "build it: scripts/fio-source.sh && meson setup build "
                   "-Dfio_src=$PWD/.deps/fio && ninja -C build",
}

SERVER_NEEDS = {
    "torus": ["nbd-shim"],
    "zeroos": ["nbd-shim", "redis-server"],
    "nbd-server": ["nbd-server"],
    "nbdkit": ["nbdkit"],
}


# the kernel paths scripts/compare can add (--kernel-paths): its paths
# through the kernel (not the engine's, engine-libnbd's included), those
# that run on this machine first
KERNEL_PATHS = tuple(p.name for p in sorted(compare_paths.PATHS, key=lambda p: p.where != "host")
                     if p.baseline and not p.name.startswith("engine-"))

# and what a transport adds in front of the server
TRANSPORT_NEEDS = {"nbd": [], "tcmu": ["tcmu-shim"]}


def needs(test):
    return SERVER_NEEDS[test["server"]] + TRANSPORT_NEEDS[test["transport"]]


def report_order(results):
    """The runs of one document test side by side (NBD, then TCMU), in the
    documents' order."""
    first = {}
    for i, t in enumerate(docs_tests.TESTS):
        first.setdefault(t["base"], i)
    return sorted(results, key=lambda r: (first.get(r["base"], len(first)),
                                          r["transport"] != "nbd"))


class Missing(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def human_bytes(n):
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def parse_size(text):
    try:
        return harness.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * KiB
    except OSError:
        pass
    return 8 * GiB


def find_program(name, override=None):
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which(name)


# ----------------------------------------------------------------- servers

class Servers:
    """Starts the servers the tests need (scripts/servers.py), their output
    in servers.log, and stops every one it started (by its own process id,
    never by name)."""

    def __init__(self, args, workdir, logf):
        self.args = args
        self.workdir = workdir
        self.logf = logf
        self.running = []        # servers.Server objects we started

    def _start(self, starter, *a, what, **kw):
        if starter in (servers.nbd_shim, servers.tcmu_shim) and self.args.timeline:
            kw["timeline"] = self.args.servers_timeline
        srv = starter(*a, what=what, log=self.logf, log_header=True, cwd=self.workdir,
                      timeout=15.0, **kw)
        self.running.append(srv)
        return srv

    def stop(self, which=None):
        targets = list(self.running if which is None else which)
        servers.stop_all(targets)
        self.running = [s for s in self.running if s not in targets]

    # nbdkit memory, one per test (a fresh, empty disk each time)
    def nbdkit(self, size):
        srv = self._start(servers.nbdkit, "memory", f"size={size}", program=self.args.nbdkit,
                          what="nbdkit memory")
        return srv.uri, [srv]

    # the torus shim: one for all torus tests (ddreadback reads what ddwrite wrote)
    def torus(self, size):
        size = -(-size // (512 * KiB)) * 512 * KiB      # torus: whole 512 KiB blocks
        srv = self._start(servers.nbd_shim, self.args.nbd_shim, "coreos", store="memory",
                          size=size, export="torus",
                          extra=["--replicas", "2", "--bandwidth", "1gbit"],
                          what="nbd-shim torus")
        return srv.uri, [srv]

    # tcmu-shim in front of an NBD server (the torus shim): its NBD store opens
    # one connection per ring, so the rings of one test after another take
    # the torus volume in turn
    def tcmu(self, nbd_uri, name):
        srv = self._start(servers.tcmu_shim, self.args.tcmu_shim,
                          os.path.join(self.workdir, f"tcmu-{name}.sock"),
                          store=f"nbd:{nbd_uri}", what=f"tcmu-shim ({name})")
        return srv.uri, [srv]

    # the 0-Disk shim on Redis: N storage servers and one metadata server
    def zeroos(self, size):
        redis = [self._start(servers.redis_server, os.path.join(self.workdir, f"redis-{i}"),
                             program=self.args.redis_server, ready=False,
                             what=f"redis-server {i}")
                 for i in range(self.args.redis_servers + 1)]
        for srv in redis:
            srv.wait_ready()
        storage = ",".join(srv.address for srv in redis[:-1])
        shim = self._start(servers.nbd_shim, self.args.nbd_shim, "zeroos",
                           store=f"redis:{storage}", size=size, export="default",
                           extra=["--redis-meta", redis[-1].address], what="nbd-shim zeroos")
        return shim.uri, redis + [shim]

    # the official nbd-server, exporting a sparse file (the document: 4 GiB);
    # it forks a daemon, stopped through its pid file
    def nbd_server(self, size):
        srv = self._start(servers.nbd_server, os.path.join(self.workdir, "nbd-server.img"),
                          self.workdir, size=size, program=self.args.nbd_server,
                          what="nbd-server")
        return srv.uri, [srv]


# ------------------------------------------------------------------ scaling

def plan(test, args):
    """The environment for one test and the export size it needs."""
    env = {}
    doc_runtime = test["runtime"]
    runtime = args.seconds if not doc_runtime else min(doc_runtime, args.seconds)
    if args.seconds == 0:
        runtime = doc_runtime
    env["TORUS_RUNTIME"] = str(runtime)
    need = 0
    if test.get("nrfiles"):
        nrfiles = test["nrfiles"] if not args.short else max(1, test["nrfiles"] // 10)
        env["TORUS_NRFILES"] = str(nrfiles)
        need = 64 * KiB
        scale = {"amount": nrfiles * docs_tests.SMALLFILE_BYTES_PER_FILE,
                 "doc_amount": test["nrfiles"] * docs_tests.SMALLFILE_BYTES_PER_FILE}
    else:
        scale = None
    if test["size"]:
        if test["id"] == "gluster-smallfiles-delete":
            # trim as much as the extract wrote (its share of the files)
            nrfiles = docs_tests.SMALLFILE_NRFILES if not args.short else \
                docs_tests.SMALLFILE_NRFILES // 10
            size = nrfiles * docs_tests.SMALLFILE_BYTES_PER_FILE
            scale = {"amount": size, "doc_amount": test["size"]}
        else:
            size = min(test["size"], args.size_cap)
            size -= size % test["maxbs"]
            size = max(size, test["maxbs"])
        env["TORUS_SIZE"] = str(size)
        need = max(need, size)
    if getattr(args, "kernel_paths", None) and test["kind"] == "filesystem":
        # the kernel paths' filesystem around the files, one per job section
        need *= max(1, len({m.get("job") for m in test["metrics"]}))
        need += need // 8 + 64 * MiB
    return env, need, scale


# ----------------------------------------------------------------- figures

def figure(metric, data, scale):
    return fio_json.fio_figure(data, metric["kind"], metric["ddir"], metric.get("job"), scale)


# ------------------------------------------------------------------ report

def fmt(v):
    if v is None:
        return "—"
    if v >= 10000:
        return f"{v / 1000:.1f}k"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def doc_text(doc):
    if not doc:
        return "—"
    return ", ".join(f"{fmt(v)} ({label})" for label, v in doc)


def write_report(results, args, outdir, started, duration):
    mode = "short" if args.short else "full"
    results = report_order(results)
    lines = [
        "# The documents' tests, re-run through the engine",
        "",
        f"Run {started:%Y-%m-%d %H:%M:%S}, {mode} mode, {duration:.0f} s. "
        + (f"Runtimes capped at {args.seconds} s" if args.seconds
           else "The documents' runtimes")
        + f", sizes capped at {human_bytes(args.size_cap)}; "
        "every test through libtorus.so over TCP on loopback, server and fio on this "
        "machine.",
        "",
        "Filesystem tests (dd, the small files, Lustre, the 0-Disk filesystem tests) "
        "ran on a filesystem in the documents; the engine has no filesystem, so their "
        "figures here measure the block I/O pattern only (no page cache, readahead, "
        "writeback or metadata). The documents measured whole clusters (torus: 6 nodes "
        "on 1 GbE; 0-Disk: 9 ARDB servers; Lustre: InfiniBand and raidz) where we run "
        "one server on loopback: read the columns as context, not as a race.",
        "",
        "The torus document's tests ran over NBD and over TCMU (the engine's TCMU "
        "transport to tcmu-shim, whose NBD store forwards to the same torus shim); "
        "each row stands beside the document's figures for its front end.",
        "",
        "| document | test | metric | transport | documents' figure | ours | units | "
        "server | scaled to | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = docs_tests.by_id(r["id"])
        for m in t["metrics"]:
            ours = r["figures"].get(m["key"])
            ours_text = fmt(ours) if ours is not None else f"failed: {r.get('error', '?')}"
            if r.get("skipped"):
                ours_text = f"skipped: {r['skipped']}"
            lines.append(
                f"| {t['doc']} | {t['test']} | {m['label']} | "
                f"{docs_tests.TRANSPORTS[t['transport']]} | {doc_text(m['doc'])} | "
                f"{ours_text} | {docs_tests.UNITS[m['kind']]} | "
                f"{docs_tests.server_text(t)} | {r.get('scaled', '')} | "
                f"{t['note']} |")
    if args.kernel_paths:
        lines += ["", "## The kernel paths", "",
                  "Each NBD test's kernel-path form through scripts/compare (docs/compare.md) "
                  "against the same server: the raw device with the job's own direct= for "
                  "device and block-level tests, a directory of an ext4 filesystem mounted "
                  "-o discard,noatime for the filesystem tests (the page cache included). "
                  "Cells marked (functional only) ran in the emulated guest.", "",
                  "| test | metric | documents' figure | ours (engine, NBD) | "
                  + " | ".join(args.kernel_paths) + " |",
                  "|---|---|---|---|" + "---|" * len(args.kernel_paths)]
        for r in results:
            if "kernel" not in r:
                continue
            t = docs_tests.by_id(r["id"])
            for m in t["metrics"]:
                cells = [kernel_cell(r["kernel"].get(p), m) for p in args.kernel_paths]
                lines.append(f"| {t['test']} | {m['label']} ({docs_tests.UNITS[m['kind']]}) | "
                             f"{doc_text(m['doc'])} | {fmt(r['figures'].get(m['key']))} | "
                             + " | ".join(cells) + " |")
        why = [(r["id"], p, " ".join((k.get("reason") or "?").split()))
               for r in results for p, k in (r.get("kernel") or {}).items()
               if k.get("status") != "ok"]
        if why:
            lines += [""] + [f"- {i}, {p}: {w}" for i, p, w in why]
    counted = issued.grouped_lines(issued_groups(results))
    if counted:
        lines += ["", "## Syncs and trims", "",
                  "The syncs and trims each run issued (fio's JSON): the test's engine runs "
                  "and its kernel paths. " + issued.intro(), ""] + counted
    if args.timeline:
        lines += [""] + timeline_lines(results)
    lines += ["", "![ours against the documents'](report.png)", ""]
    lines += ["Job files: jobs/ (jobs/README.md); fio's output per test: <id>.json.", ""]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(lines))


def issued_groups(results):
    """{test: {path: counts}} of RESULTS: each document test's engine runs
    (engine-nbd, and engine-tcmu where it ran over TCMU too) and its
    kernel paths, with the syncs and trims each issued (issued.counts)."""
    groups = {}
    for r in report_order(results):
        by = groups.setdefault(r["base"], {})
        by[engine_path(r)] = r.get("issued")
        for p, k in (r.get("kernel") or {}).items():
            by[p] = k.get("issued")
    return groups


def kernel_cell(k, metric):
    if not k:
        return "—"
    if k.get("status") != "ok":
        return k.get("status", "failed") + " (below)"
    v = k["figures"].get(metric["key"])
    return fmt(v) + (" (functional only)" if k.get("functional_only") else "")


def write_chart(results, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("rerun-documents: matplotlib is missing (Debian package python3-matplotlib): "
            "no report.png")
        return False
    rows = {}
    for r in report_order(results):
        t = docs_tests.by_id(r["id"])
        for m in t["metrics"]:
            unit = docs_tests.UNITS[m["kind"]]
            ours = r["figures"].get(m["key"])
            docs = [v for _, v in m["doc"]]
            if ours is None and not docs:
                continue
            kernel = [(p, k["figures"].get(m["key"]), k.get("functional_only"))
                      for p, k in (r.get("kernel") or {}).items() if k.get("status") == "ok"]
            rows.setdefault(unit, []).append((f"{t['id']} {m['label']}", ours, docs,
                                              t["transport"], kernel))
    if not rows:
        return False
    units = [u for u in ("MB/s", "MiB/s", "IOPS", "s") if u in rows]
    heights = [max(1.5, 0.45 * len(rows[u]) + 0.8) for u in units]
    fig, axes = plt.subplots(len(units), 1, figsize=(10, sum(heights) + 1.05),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    seen = set()
    for ax, unit in zip(axes[:, 0], units):
        labels = [name for name, _, _, _, _ in rows[unit]]
        ys = list(range(len(labels)))
        values = []
        for y, (_, ours, docs, transport, kernel) in zip(ys, rows[unit]):
            for path, v, emulated in kernel:
                if not v or v <= 0 or emulated:
                    continue        # emulated timings would only mislead here
                ax.scatter([v], [y], s=55, marker="o", facecolors="none",
                           edgecolors="#7b2d8b", zorder=3,
                           label="kernel paths (scripts/compare)" if "k" not in seen else None)
                seen.add("k")
                ax.annotate(path.replace("kernel-", "k-"), (v, y), xytext=(0, -10),
                            ha="center", textcoords="offset points", fontsize=6,
                            color="#7b2d8b")
                values.append(v)
            if docs:
                lo, hi = min(docs), max(docs)
                if hi > lo:
                    ax.plot([lo, hi], [y, y], color="#9aa9c2", lw=2, zorder=1,
                            label="documents' range" if "r" not in seen else None)
                    seen.add("r")
                ax.scatter(docs, [y] * len(docs), s=22, color="#2c3e66", zorder=2,
                           label="documents' setups" if "d" not in seen else None)
                seen.add("d")
                values += docs
            if ours is not None and ours > 0:
                # TCMU runs (tcmu-shim in front of the server) apart from NBD ones
                marker, color, dark, name = {
                    "nbd": ("D", "#d9822b", "#a0561a", "ours (engine, NBD)"),
                    "tcmu": ("s", "#2a9d8f", "#1d6e64", "ours (engine, TCMU)"),
                }[transport]
                ax.scatter([ours], [y], s=70, marker=marker, color=color, zorder=3,
                           label=name if transport not in seen else None)
                seen.add(transport)
                ax.annotate(fmt(ours), (ours, y), xytext=(0, 7), ha="center",
                            textcoords="offset points", fontsize=7, color=dark)
                values.append(ours)
        if values:
            ax.set_xlim(min(values) / 2.5, max(values) * 2.5)
        ax.set_ylim(len(ys) - 0.5, -0.7)
        ax.set_xscale("log")
        ax.set_yticks(ys)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_xlabel(unit + (" (lower is better)" if unit == "s" else ""), fontsize=9)
        ax.grid(axis="x", which="both", alpha=0.3)
    handles, labels = [], []
    for ax in axes[:, 0]:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.suptitle("The documents' tests through libtorus.so: ours against the documents'",
                 fontsize=10, x=0.02, ha="left")
    fig.legend(handles, labels, loc="upper right", fontsize=8, ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / (sum(heights) + 1.05)))
    fig.savefig(os.path.join(outdir, "report.png"), dpi=110)
    plt.close(fig)
    return True


# -------------------------------------------------------------------- main

def check_programs(tests, args):
    need = {"fio", "libtorus.so"}
    for t in tests:
        need.update(needs(t))
    found = {
        "fio": args.fio,
        "libtorus.so": args.engine if os.path.isfile(args.engine) else None,
        "nbd-shim": args.nbd_shim if args.nbd_shim and os.access(args.nbd_shim, os.X_OK)
        else None,
        "tcmu-shim": args.tcmu_shim if args.tcmu_shim and os.access(args.tcmu_shim, os.X_OK)
        else None,
        "nbdkit": args.nbdkit, "nbd-server": args.nbd_server,
        "redis-server": args.redis_server,
    }
    return {prog: PROVIDERS[prog] for prog in sorted(need) if not found.get(prog)}


def run_fio(test, uri, env, args, outdir):
    out = os.path.join(outdir, test["id"] + ".json")
    errlog = os.path.join(outdir, test["id"] + ".log")
    # On a terminal fio's own progress line (--eta) shows how far the test is;
    # with --output, that line is all fio writes to stdout.
    tty = sys.stdout.isatty()
    fio_args = [f"--ioengine=external:{args.engine}", f"--uri={uri}",
                "--eta=always" if tty else "--eta=never", os.path.join(JOBS, test["job"])]
    if args.timeline:
        # engine options follow --ioengine (fio learns them once it is
        # loaded); fio's lat percentiles hold the total to fio's median
        fio_args[2:2] = [f"--timeline={timeline_dir(test, outdir)}", "--lat_percentiles=1"]
    # only this test's scaling variables, none of ours
    fio_env = {k: None for k in ("TORUS_SIZE", "TORUS_RUNTIME", "TORUS_NRFILES")}
    fio_env.update(env)
    runtime = int(env.get("TORUS_RUNTIME", "0")) or 600
    groups = max(1, len({m.get("job") for m in test["metrics"]}))
    timeout = groups * runtime + 120
    return fio_json.run_fio(fio_args, env=fio_env, timeout=timeout, fio=args.fio, output=out,
                            log=errlog, cwd=args.workdir, progress=tty).data


def timeline_dir(test, outdir):
    return os.path.join(outdir, test["id"] + ".timeline")


def engine_path(test):
    """The compare path a test's engine run is: its records' source."""
    return "engine-tcmu" if test["transport"] == "tcmu" else "engine-nbd"


def test_timeline(test, args, outdir, before):
    """The engine test's timeline entry (timeline_runs.run_entry): its records
    joined with the records of the server connections it opened."""
    return timeline_runs.run_entry(timeline_dir(test, outdir), args.servers_timeline, before,
                                   os.path.join(outdir, test["id"] + ".json"), engine_path(test),
                                   test["id"] + ".timeline")


def timeline_lines(results):
    """report.md's phases per test (and per kernel path), from timeline_runs.py's
    table of compare's form."""
    rows = []
    for r in report_order(results):
        if r.get("timeline"):
            rows.append({"path": f"{r['id']} ({engine_path(r)})", "status": "ok",
                         "timeline": r["timeline"]})
        for p, k in (r.get("kernel") or {}).items():
            if k.get("status") == "ok" and k.get("timeline"):
                rows.append({"path": f"{r['id']} ({p})", "status": "ok",
                             "functional_only": k.get("functional_only"),
                             "timeline": k["timeline"]})
    return timeline_runs.report_lines(rows)


def run_kernel_paths(test, uri, env, args, outdir):
    """The test's kernel-path form (docs/compare.md) through scripts/compare
    against URI: {path: that path's entry of compare's results.json, with
    figures for the test's metrics}."""
    res_dir = os.path.join(outdir, "kernel", test["id"])
    fs = "ext4" if test["kind"] == "filesystem" else "none"
    runtime = int(env.get("TORUS_RUNTIME", "0")) or 600
    cmd = [os.path.join(HERE, "compare"), os.path.join(JOBS, test["job"]), "--uri", uri,
           "--paths", ",".join(args.kernel_paths), "--results", res_dir, "--as-written",
           "--job-direct", "--fs", fs, "--seconds", str(runtime), "--kernel", args.kernel,
           "--rounds", "1",     # one run, as the documents' own and the engine's here
           "--engine", args.engine, "--fio", args.fio, "--nbd-shim", args.nbd_shim,
           "--tcmu-shim", args.tcmu_shim] + (["--timeline"] if args.timeline else [])
    full_env = {k: v for k, v in os.environ.items() if k not in
                ("TORUS_SIZE", "TORUS_RUNTIME", "TORUS_NRFILES")}
    full_env.update(env)
    os.makedirs(res_dir, exist_ok=True)
    groups = max(1, len({m.get("job") for m in test["metrics"]}))
    timeout = len(args.kernel_paths) * (groups * runtime * 6 + 900)
    with open(os.path.join(res_dir, "compare.log"), "w") as logf:
        try:
            subprocess.run(cmd, env=full_env, stdout=logf, stderr=logf, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {p: {"status": "failed", "reason": f"scripts/compare took over {timeout} s"}
                    for p in args.kernel_paths}
    try:
        with open(os.path.join(res_dir, "results.json")) as f:
            paths = {p["path"]: p for p in json.load(f)["paths"]}
    except (OSError, ValueError, KeyError):
        return {p: {"status": "failed", "reason": "scripts/compare wrote no results.json: see "
                    f"kernel/{test['id']}/compare.log"} for p in args.kernel_paths}
    out = {}
    for p in args.kernel_paths:
        k = paths.get(p) or {"status": "failed", "reason": "not in compare's results"}
        k = {key: k.get(key) for key in ("status", "reason", "where", "functional_only",
                                         "notes", "timeline")}
        if k["status"] == "ok":
            try:
                data = fio_json.load_fio_json(os.path.join(res_dir, f"{p}.json"))
                k["figures"] = {m["key"]: figure(m, data, plan(test, args)[2])
                                for m in test["metrics"]}
                k["issued"] = issued.counts(data)
            except procs.HarnessError as e:
                k.update(status="failed", reason=str(e))
        out[p] = k
    return out


def job_point(job):
    """The job file JOB's own point: its first bs= and iodepth= (fio's
    defaults, 4k and 1, when it sets none)."""
    point = {}
    with open(job) as f:
        for line in f:
            key, eq, val = line.strip().partition("=")
            key = {"blocksize": "bs"}.get(key.strip().lower(), key.strip().lower())
            if eq and key in ("bs", "iodepth") and key not in point:
                point[key] = val.strip()
    return {"bs": point.get("bs", "4k"), "iodepth": point.get("iodepth", "1")}


def sweep_grid(point):
    """The grid around POINT: bs and iodepth at a quarter of it, it, and four
    times it (iodepth at least 1, bs at least 512 bytes), as --sweep items."""
    bs = harness.parse_size(point["bs"])
    qd = int(point["iodepth"])
    sizes = sorted({max(512, bs // 4), bs, bs * 4})
    depths = sorted({max(1, qd // 4), qd, qd * 4})
    return [f"bs={','.join(size_text(b) for b in sizes)}",
            f"iodepth={','.join(str(d) for d in depths)}"]


def size_text(n):
    for unit, div in (("g", GiB), ("m", MiB), ("k", KiB)):
        if n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def run_sweep(test, args, seconds):
    """--sweep ID: the test's job through scripts/compare --sweep around its
    own point (sweep_grid), scaled as the test is (plan), against compare's
    own server; compare's progress and report as they come. Returns its
    exit status."""
    job = os.path.join(JOBS, test["job"])
    try:
        grid = sweep_grid(job_point(job))
    except ValueError as e:
        print(f"rerun-documents: --sweep {test['id']}: {test['job']}'s point: {e}",
              file=sys.stderr)
        return 2
    env, need, _ = plan(test, args)
    res = args.results or os.path.join(REPO, "results", f"sweep-{test['id']}-"
                                       f"{datetime.datetime.now():%Y%m%d-%H%M%S}")
    cmd = [os.path.join(HERE, "compare"), job, "--sweep"] + grid + [
        "--size", str(max(256 * MiB, need + need // 8 + 64 * MiB)), "--results", res,
        "--kernel", args.kernel, "--engine", args.engine, "--nbd-shim", args.nbd_shim,
        "--tcmu-shim", args.tcmu_shim] + (["--seconds", str(seconds)] if seconds else []) + \
        (["--timeline"] if args.timeline else [])
    if args.kernel_paths:
        bases = [compare_paths.BY_NAME[p].baseline for p in args.kernel_paths]
        cmd += ["--paths", ",".join(dict.fromkeys(bases + args.kernel_paths))]
    full_env = {k: v for k, v in os.environ.items() if k not in
                ("TORUS_SIZE", "TORUS_RUNTIME", "TORUS_NRFILES")}
    full_env.update(env)
    log(f"rerun-documents: {test['id']} ({test['job']}, {', '.join(grid)} around its point; "
        f"{', '.join(f'{k}={v}' for k, v in sorted(env.items()))}): " + " ".join(cmd))
    return subprocess.run(cmd, env=full_env, stdin=subprocess.DEVNULL).returncode


def help_text():
    """--help's text after its first line: the docstring, with the kernel
    paths named from compare's PATHS (KERNEL_PATHS)."""
    paras = __doc__.split("\n\n")[1:]
    return "\n\n".join(textwrap.fill(" ".join(p.split()).replace(
        "{kernel_paths}", ", ".join(KERNEL_PATHS)), 78) if "{kernel_paths}" in p else p
        for p in paras)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "-h" not in argv and "--help" not in argv:
        harness.reexec_for_matplotlib(SCRIPT, argv, "RERUN_DOCUMENTS_REEXEC")
    ap = argparse.ArgumentParser(
        prog="rerun-documents",
        description="Re-run the five documents' tests through the engine and compare.",
        epilog=help_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true",
                    help="a few seconds per test and small sizes (a smoke run)")
    ap.add_argument("--results", metavar="DIR",
                    help="results folder (default results/<date-time>)")
    ap.add_argument("--seconds", type=int, metavar="N",
                    help="cap every test's runtime at N seconds (default 60, --short 3; "
                         "0: the documents' runtimes)")
    ap.add_argument("--size-cap", type=parse_size, metavar="SIZE",
                    help="cap every test's size (default: 1/8 of available memory, "
                         "--short 64M)")
    ap.add_argument("--only", metavar="REGEX", help="run only the tests whose id matches")
    ap.add_argument("--engine", default=os.path.join(REPO, "build", "engines", "libtorus.so"),
                    help="the engine (default build/engines/libtorus.so)")
    ap.add_argument("--nbd-shim", default=os.path.join(REPO, "build", "shims", "nbd",
                                                       "nbd-shim"),
                    help="the shim (default build/shims/nbd/nbd-shim)")
    ap.add_argument("--tcmu-shim", default=os.path.join(REPO, "build", "shims", "tcmu",
                                                        "tcmu-shim"),
                    help="the TCMU handler host for the TCMU runs (default "
                         "build/shims/tcmu/tcmu-shim)")
    ap.add_argument("--redis-servers", type=int, default=8, metavar="N",
                    help="Redis storage servers for the 0-Disk tests (default 8, as the "
                         "document; one more holds the metadata)")
    ap.add_argument("--skip-missing", action="store_true",
                    help="skip the tests whose server is missing instead of stopping")
    ap.add_argument("--kernel-paths", metavar="LIST", default="",
                    help="also run each NBD test through these kernel paths (comma-separated: "
                         + ", ".join(KERNEL_PATHS) + "), as further columns")
    ap.add_argument("--kernel", choices=("auto", "native", "guest"), default="auto",
                    help="where the kernel paths run (scripts/compare --kernel; default auto)")
    ap.add_argument("--timeline", action="store_true",
                    help="split each test's latency into phases (docs/timeline.md)")
    ap.add_argument("--sweep", metavar="ID",
                    help="sweep the test ID's job around its own point through scripts/compare "
                         "--sweep (bs and iodepth at a quarter, the point and four times; "
                         "docs/compare.md) instead of re-running the documents")
    ap.add_argument("--list", action="store_true", help="list the tests and exit")
    args = ap.parse_args(argv)
    args.kernel_paths = [p.strip() for p in args.kernel_paths.split(",") if p.strip()]
    bad = [p for p in args.kernel_paths if p not in KERNEL_PATHS]
    if bad:
        ap.error(f"--kernel-paths: unknown {', '.join(bad)}: choose from "
                 f"{', '.join(KERNEL_PATHS)}")

    tests = docs_tests.TESTS
    if args.only:
        try:
            rx = re.compile(args.only)
        except re.error as e:
            ap.error(f"--only: {e}")
        tests = [t for t in tests if rx.search(t["id"])]
        if not tests:
            ap.error(f"--only {args.only!r} matches no test (see --list)")
    if args.list:
        for t in tests:
            print(f"{t['id']:28} {t['doc']:34} {t['job']:32} {t['server']}"
                  f"{' (TCMU)' if t['transport'] == 'tcmu' else ''}")
        return 0
    if args.sweep:
        try:
            test = docs_tests.by_id(args.sweep)
        except KeyError:
            ap.error(f"--sweep {args.sweep}: no such test (see --list)")
        if args.size_cap is None:
            args.size_cap = 64 * MiB if args.short else max(64 * MiB, mem_available() // 8)
        args.fio = find_program("fio") or "fio"
        args.engine, args.nbd_shim, args.tcmu_shim = (
            os.path.abspath(p) for p in (args.engine, args.nbd_shim, args.tcmu_shim))
        seconds = args.seconds if args.seconds is not None else (3 if args.short else None)
        args.seconds = seconds or 3      # plan()'s runtime; compare's --seconds governs
        return run_sweep(test, args, seconds)
    if args.seconds is None:
        args.seconds = 3 if args.short else 60
    if args.seconds < 0:
        ap.error("--seconds must be 0 or more")
    if args.size_cap is None:
        args.size_cap = 64 * MiB if args.short else max(64 * MiB, mem_available() // 8)
    if args.redis_servers < 1:
        ap.error("--redis-servers must be at least 1")

    args.fio = find_program("fio")
    args.nbdkit = find_program("nbdkit")
    args.nbd_server = find_program("nbd-server")
    args.redis_server = find_program("redis-server")
    args.engine = os.path.abspath(args.engine)
    args.nbd_shim = os.path.abspath(args.nbd_shim)
    args.tcmu_shim = os.path.abspath(args.tcmu_shim)

    missing = check_programs(tests, args)
    if missing:
        for prog, how in missing.items():
            print(f"rerun-documents: {prog} not found: {how}", file=sys.stderr)
        hard = {"fio", "libtorus.so"} & set(missing)
        if hard or not args.skip_missing:
            if not hard:
                print("rerun-documents: (--skip-missing runs the other tests)", file=sys.stderr)
            return 2

    started = datetime.datetime.now()
    outdir = args.results or os.path.join(REPO, "results", f"{started:%Y%m%d-%H%M%S}")
    os.makedirs(outdir, exist_ok=True)
    outdir = os.path.abspath(outdir)
    args.workdir = tempfile.mkdtemp(prefix="rerun-documents.")
    args.servers_timeline = os.path.join(outdir, timeline_runs.SERVERS_DIR)
    if args.timeline:
        os.makedirs(args.servers_timeline, exist_ok=True)

    mode = "short" if args.short else "full"
    log(f"rerun-documents: {len(tests)} tests, {mode} mode, runtimes capped at "
        f"{args.seconds or 'the documents'} s, sizes at {human_bytes(args.size_cap)}; "
        f"results in {outdir}")

    logf = open(os.path.join(outdir, "servers.log"), "w")
    servers = Servers(args, args.workdir, logf)
    results = []
    failed = 0
    t0 = time.monotonic()
    # Shared servers (torus: ddreadback reads what ddwrite wrote; 0-Disk: one
    # volume on one Redis cluster, as in the document), sized for their tests.
    shared_size = {}
    for t in tests:
        _, need, _ = plan(t, args)
        shared_size[t["server"]] = max(shared_size.get(t["server"], 0), need)
    shared = {}

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    try:
        for i, t in enumerate(tests, 1):
            env, need, scale = plan(t, args)
            scaled = ", ".join(f"{k[6:].lower()}={human_bytes(int(v)) if k == 'TORUS_SIZE' else v}"
                               for k, v in sorted(env.items()))
            rec = {"id": t["id"], "base": t["base"], "doc": t["doc"], "test": t["test"],
                   "job": t["job"], "server": t["server"], "transport": t["transport"],
                   "env": env, "scaled": scaled, "figures": {}}
            prefix = f"[{i}/{len(tests)}] {t['id']}"
            if set(needs(t)) & set(missing):
                rec["skipped"] = "server missing"
                log(f"{prefix}: skipped ({', '.join(sorted(set(needs(t)) & set(missing)))} "
                    "missing)")
                results.append(rec)
                continue
            log(f"{prefix}: {t['job']} on {docs_tests.server_text(t)} ({scaled}) ...")
            start = time.monotonic()
            own = []
            try:
                if t["server"] == "nbdkit":
                    uri, own = servers.nbdkit(max(need, 1 * MiB))
                elif t["server"] not in shared:
                    size = max(shared_size[t["server"]], 1 * MiB)
                    if t["server"] == "torus":
                        shared["torus"] = servers.torus(size)[0]
                    elif t["server"] == "zeroos":
                        shared["zeroos"] = servers.zeroos(size)[0]
                    else:
                        # the document exported a 4 GiB file
                        shared["nbd-server"] = servers.nbd_server(max(size, 4 * GiB))[0]
                    uri = shared[t["server"]]
                else:
                    uri = shared[t["server"]]
                if t["transport"] == "tcmu":
                    # one tcmu-shim per server, in front of the shared one
                    key = "tcmu:" + t["server"]
                    if key not in shared:
                        shared[key] = servers.tcmu(uri, t["server"])[0]
                    uri = shared[key]
                before = timeline_runs.server_files(args.servers_timeline)
                data = run_fio(t, uri, env, args, outdir)
                rec["issued"] = issued.counts(data)
                if args.timeline:
                    rec["timeline"] = test_timeline(t, args, outdir, before)
                for m in t["metrics"]:
                    rec["figures"][m["key"]] = figure(m, data, scale)
                took = time.monotonic() - start
                shown = ", ".join(
                    f"{m['label']} {fmt(rec['figures'][m['key']])} "
                    f"{docs_tests.UNITS[m['kind']]}"
                    + (f" (doc {fmt(m['doc'][0][1])})" if m["doc"] else "")
                    for m in t["metrics"])
                log(f"{prefix}: {shown} [{took:.1f} s]")
                if args.kernel_paths and t["transport"] == "nbd":
                    rec["kernel"] = run_kernel_paths(t, uri, env, args, outdir)
                    log(f"{prefix}: kernel paths: " + "; ".join(
                        f"{p} " + (kernel_cell(k, t["metrics"][0]) if k["status"] == "ok"
                                   else f"{k['status']}: " + " ".join(
                                       (k.get("reason") or "?").split())[:160])
                        for p, k in rec["kernel"].items()))
            except procs.HarnessError as e:
                failed += 1
                rec["error"] = str(e)
                log(f"{prefix}: FAILED: {e}")
            finally:
                if own:
                    servers.stop(own)
            results.append(rec)
    except KeyboardInterrupt:
        log("rerun-documents: interrupted; writing the report of what ran")
        failed += 1
    finally:
        servers.stop()
        logf.close()
        shutil.rmtree(args.workdir, ignore_errors=True)

    duration = time.monotonic() - t0
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump({"started": started.isoformat(timespec="seconds"), "mode": mode,
                   "seconds_cap": args.seconds, "size_cap": args.size_cap,
                   "issued_differ": {g: d for g, by in issued_groups(results).items()
                                     if (d := issued.differing(by))},
                   "tests": results}, f, indent=1)
    write_report(results, args, outdir, started, duration)
    chart = write_chart(results, outdir)
    skipped = sum(1 for r in results if r.get("skipped"))
    ran = sum(1 for r in results if not r.get("skipped") and not r.get("error"))
    log(f"rerun-documents: {ran} of {len(tests)} tests ran"
        f"{'' if not failed else f', {failed} failed'}"
        f"{'' if not skipped else f', {skipped} skipped'} in {duration:.0f} s; "
        f"report: {os.path.join(outdir, 'report.md')}"
        f"{' and report.png' if chart else ''}")
    return 1 if failed else 0
