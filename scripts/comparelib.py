"""scripts/compare: run one fio job through every path to the same storage and compare them.

  scripts/compare JOB.fio [--uri URI | --backend SPEC] [--size SIZE]
                  [--paths LIST] [--results DIR] [--seconds N]
                  [--kernel auto|native|guest] [--engine-in-guest]
                  [--fs auto|none|ext4|xfs] [--mount-options OPTS]
                  [--rounds N] [--as-written] [--job-direct] [--timeline]
                  [--engine PATH]
                  [--fio PATH] [--nbd-shim PATH] [--tcmu-shim PATH] [--list]

Paths (--paths takes a comma-separated list of these; default: all; each
is one record of PATHS below, which --help lists):

{paths}

The target: --uri names an NBD server to use; otherwise one server is
started for all paths: the project's nbd-shim --profile standard with
--backend SPEC (memory by default; null, file:PATH) and --size (default
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
the picture. scripts/benchlib.sh's CPU-speed probe runs before the first
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
                machine's), engine-tcmu's kernel's share (the completion
                work the kernel would do in the handler's notify, done in
                fio's thread), each as median (min-max); each kernel path's
                cost against the engine on the same transport, and
                engine-tcmu's against engine-nbd (ratios, and microseconds
                per I/O); every round's IOPS; the CPU-speed probe
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

Progress goes to stderr; the table to stdout too. Exit status: 0 when every
path that could be set up ran (skipped ones are listed with the reason), 1
when one failed, 2 on usage errors or a missing prerequisite for all paths.
"""

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse

import harness
import timelinelib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# the command (it runs itself in the guest, and again under the system python)
SCRIPT = os.path.join(HERE, "compare")

PERCENTILES = (50.0, 99.0, 99.9)
# the engine's options (fio --enghelp), dropped from the job for kernel paths
ENGINE_OPTIONS = {"uri", "transport", "fua", "request_timeout", "conns", "handshake",
                  "structured_replies", "poll_us", "ring_size", "data_size",
                  "max_transfer", "trim_mode", "hold_batch", "ring", "timeline"}
# options every path sets itself
OVERRIDDEN = {"ioengine", "filename", "filename_format", "directory", "opendir", "runtime",
              "time_based", "group_reporting", "direct", "buffered", "output",
              "output-format"}
# what --as-written leaves to the job
AS_WRITTEN = {"runtime", "time_based", "group_reporting"}
# fio's switches that turn completion-latency recording off, and the value
# each is run with so that the table has latencies
LATENCY_SWITCHES = {"gtod_reduce": "0", "disable_clat": "0"}
ROUNDS = 3
# a path whose rounds moved more than this (max/min) is flagged
SPREAD_LIMIT = 1.25
# the figures its spread is judged on (bandwidth moves with IOPS)
SPREAD_KEYS = (("iops", "IOPS"), ("clat_mean_us", "mean latency"))
FLAG = "‡"
# the two engines, one per transport, from the same server: the second is
# costed against the first as the kernel paths are against their engine
TRANSPORTS = ("engine-tcmu", "engine-nbd")
# the environment the documents' jobs are scaled with (jobs/README.md),
# passed on into a guest
JOB_ENV = ("TORUS_SIZE", "TORUS_RUNTIME", "TORUS_NRFILES")
INSTALL = {
    "fio": "install the Debian package fio (scripts/deps.sh)",
    "nbdfuse": "install the Debian package libnbd-bin",
    "losetup": "install the Debian package mount (util-linux)",
    "nbdkit": "install the Debian package nbdkit",
    "nbd-client": "install the Debian package nbd-client",
    "socat": "install the Debian package socat",
    "qemu-system-x86_64": "install the Debian package qemu-system-x86",
    "libtorus.so": "build it: scripts/build.sh (or ninja -C build)",
    "tcmu-shim": "build it with the shims: meson configure build -Dshims=true && ninja -C build",
    "nbd-shim": "build it with the shims: meson configure build -Dshims=true && ninja -C build",
}


def log(msg):
    print(f"compare: {msg}", file=sys.stderr, flush=True)


class Skip(Exception):
    """This path cannot be set up here; the message says why and what to do."""


class PathFailed(Exception):
    pass


def parse_size(text):
    try:
        return harness.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


# ------------------------------------------------------------- the job

def rewrite_job(src, dst, overrides, drop=()):
    """Copy the fio job file SRC to DST with the keys of OVERRIDES (and those
    in DROP) removed from every section, then OVERRIDES set in every job
    section (not [global]). Returns the job sections' names."""
    with open(src) as f:
        lines = f.read().splitlines()
    drop = {k.lower() for k in drop} | {k.lower() for k in overrides}
    # first in a [global] of their own, so that the engine is known before
    # the job's own [global] names its options; then in every job section
    out, jobs = ["; scripts/compare's settings for this path", "[global]"], []
    out += [f"{k}={v}" if v is not None else k for k, v in overrides.items()]
    for line in lines:
        s = line.strip()
        m = re.fullmatch(r"\[([^\]]+)\]", s)
        if m:
            out.append(line)
            if m.group(1).strip().lower() != "global":
                jobs.append(m.group(1).strip())
                out += [f"{k}={v}" if v is not None else k for k, v in overrides.items()]
            continue
        if s and not s.startswith((";", "#")):
            key = re.split(r"[=\s]", s, 1)[0].strip().lower()
            if key in drop:
                out.append("; (scripts/compare) " + s)
                continue
        out.append(line)
    if not jobs:
        raise SystemExit(f"compare: {src} has no job section ([name] other than [global])")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    return jobs


def links_libnbd(engine):
    """Whether the engine ENGINE was built with transport=libnbd: it then
    needs libnbd.so (its dynamic section names it)."""
    try:
        with open(engine, "rb") as f:
            return b"libnbd.so" in f.read()
    except OSError:
        return False


def engine_options(ctx):
    """The engine's options, from fio --enghelp (the fixed list when that fails)."""
    try:
        r = subprocess.run([ctx.fio, f"--enghelp={ctx.engine}"], capture_output=True,
                           text=True, timeout=20)
        names = {l.split()[0] for l in r.stdout.splitlines() if l.strip()}
        if r.returncode == 0 and "uri" in names:
            return names
    except (OSError, subprocess.TimeoutExpired):
        pass
    return ENGINE_OPTIONS


def latency_off(job):
    """The settings of the fio job file JOB that turn completion-latency
    recording off (LATENCY_SWITCHES set to anything but false), as written
    there, each once: ["gtod_reduce=1"], or []."""
    found = []
    with open(job) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith((";", "#", "[")):
                continue
            key, _, val = s.partition("=")
            key, val = key.strip().lower(), val.strip()
            if key not in LATENCY_SWITCHES or val.lower() in ("0", "false", "no", "off"):
                continue
            text = f"{key}={val}" if val else key
            if text not in found:
                found.append(text)
    return found


def latency_on(found):
    """The overrides that turn back on what latency_off FOUND."""
    return {k: LATENCY_SWITCHES[k] for k in (t.split("=")[0] for t in found)}


# ------------------------------------------------------------- figures

def machine_ticks():
    """(busy, total) clock ticks of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def clat_recorded(data):
    """False when fio kept no completion latencies (gtod_reduce=1, or
    disable_clat=1): its JSON then says 0, which is not a latency."""
    return any(j.get(d, {}).get("clat_ns", {}).get("N", 0)
               for j in data.get("jobs", []) for d in ("read", "write", "trim"))


KERNEL_SHARE = re.compile(r"torus: tcmu: the kernel's share: (\d+) ns of completion work "
                          r"per command over (\d+) commands")


def kernel_share(text, ios):
    """The TCMU engine's completion work done on the kernel's behalf (its
    one line per job at close, in fio's TEXT), as microseconds per I/O of
    IOS; None when no job said it (paths without one)."""
    found = [(int(ns), int(n)) for ns, n in KERNEL_SHARE.findall(text)]
    if not found or not ios:
        return None
    return sum(ns * n for ns, n in found) / 1000.0 / ios


def summarize(data, name):
    """The table's figures of one fio run (all its jobs together):
    harness.fio_summary's, fio's CPU per I/O as fio_cpu_us_per_io, and the
    completion latency percentiles over every job and direction."""
    s = harness.fio_summary(data, name, all_jobs=True)
    out = {"iops": s["iops"], "bw_mib": s["bw_mib"],
           "clat_mean_us": s["clat_mean_us"] if clat_recorded(data) else None,
           "ios": s["ios"], "runtime_s": s["runtime_s"],
           "fio_cpu_us_per_io": s["cpu_us_per_io"]}
    pcts, how = harness.merged_clat_percentiles(data, PERCENTILES)
    for p, v in pcts.items():
        out[f"clat_{p}_us"] = v
    out["percentiles_from"] = how
    return out


# ------------------------------------------------------------- context

class Context:
    def __init__(self, args):
        self.args = args
        self.results = args.results
        self.fio = args.fio
        self.engine = args.engine
        self.seconds = args.seconds
        self.size = args.size
        self.target = None          # the NBD URI every path uses
        self.target_kind = None     # "default" (started here) or "uri"
        self.target_desc = ""
        self.servers = []
        self.server_log = None
        self.engine_opts = None
        self.root = os.geteuid() == 0
        self.guest = os.path.join(HERE, "guest")
        self.in_guest = args.in_guest
        self.stack = None           # the run's tear-downs (servers, relays)
        self.fs = args.fs           # the kernel paths' filesystem, or "none"
        self._guest_target = None
        self.round = args.round     # the round being run (1..--rounds)
        # the job's switches that turn latency off, and what each path sets
        self.latency_found = latency_off(args.job)
        self.latency_on = {} if args.as_written else latency_on(self.latency_found)

    def out(self, name):
        return os.path.join(self.results, name)

    def rout(self, path, ext):
        """PATH's file EXT of the round being run: <path>.rN.EXT."""
        return self.out(f"{path}.r{self.round}.{ext}")

    def tool(self, name):
        p = shutil.which(name) or (shutil.which(name, path="/usr/sbin:/sbin") if "/" not in name
                                   else None)
        return p

    def need(self, *names):
        missing = [n for n in names if not self.tool(n)]
        if missing:
            raise Skip("; ".join(f"{n} is missing: {INSTALL.get(n, 'install it')}"
                                 for n in missing))

    def need_file(self, path, name):
        if not path or not os.access(path, os.X_OK if not path.endswith(".so") else os.R_OK):
            raise Skip(f"{name} is missing ({path}): {INSTALL[name]}")

    def need_root(self, path):
        if not self.root:
            raise Skip(f"{path} needs root (it attaches a block device): run it with sudo")

    def modules_missing(self, names):
        """The modules this kernel has neither loaded/built in nor can load."""
        missing = []
        for m in names:
            if os.path.isdir(f"/sys/module/{m}"):
                continue
            if m == "fuse" and os.path.exists("/dev/fuse"):
                continue
            if m == "loop" and os.path.exists("/dev/loop-control"):
                continue
            r = subprocess.run(["modprobe", "-n", "-q", m], capture_output=True) \
                if shutil.which("modprobe") else None
            if r is None or r.returncode != 0:
                missing.append(m)
        return missing

    def kernel_where(self, path):
        """'native' or 'guest' for a kernel path, per --kernel and what this
        kernel has; raises Skip when neither can work."""
        mode = self.args.kernel
        if self.in_guest:
            return "native"
        missing = self.modules_missing(BY_NAME[path].modules)
        native_ok = self.root and not missing
        if mode == "native" or (mode == "auto" and native_ok):
            if not self.root:
                raise Skip(f"{path} needs root: run it with sudo (or --kernel guest)")
            if missing:
                raise Skip(f"this kernel ({os.uname().release}) lacks the module(s) "
                           f"{', '.join(missing)}: modprobe them, or use --kernel guest")
            return "native"
        why = ("not root" if not self.root else
               f"this kernel lacks {', '.join(missing)}") if mode == "auto" else "--kernel guest"
        if not os.access(self.guest, os.X_OK) or not shutil.which("qemu-system-x86_64"):
            raise Skip(f"{why}, and the guest helper cannot run: "
                       f"{INSTALL['qemu-system-x86_64']} (see docs/guest.md)")
        return "guest"

    def guest_target(self):
        """The target as a guest reaches it through qemu's user-mode network:
        the host's loopback is 10.0.2.2 there, and a Unix socket is relayed
        to a loopback TCP port (socat, started once and kept for the run)."""
        if self._guest_target:
            return self._guest_target
        u = urllib.parse.urlsplit(self.target)
        if u.scheme == "nbd+unix":
            sock = (urllib.parse.parse_qs(u.query).get("socket") or [None])[0]
            if not sock:
                raise Skip(f"{self.target} names no socket=")
            self.need("socat")
            relay = harness.tcp_to_unix(sock, log=self.server_log or self.out("servers.log"),
                                        log_header=True)
            self.stack.callback(relay.stop)
            log(f"guest network: socat relays {relay.uri} to {sock}")
            uri = f"nbd://10.0.2.2:{relay.port}{u.path}"
        elif u.scheme == "nbd":
            host = u.hostname or "localhost"
            if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
                host = "10.0.2.2"
            uri = f"nbd://{host}:{u.port or 10809}{u.path}"
        else:
            raise Skip(f"a guest cannot reach {self.target} ({u.scheme}:// is not relayed: "
                       "use nbd:// or nbd+unix://)")
        self._guest_target = uri
        return uri

    def engine_uri_opts(self):
        if self.engine_opts is None:
            self.engine_opts = engine_options(self)
        return self.engine_opts


# ----------------------------------------------------------- the target

def start_target(ctx, stack):
    a = ctx.args
    if a.uri:
        ctx.target, ctx.target_kind = a.uri, "uri"
        ctx.target_desc = f"the NBD server at {a.uri}"
        return
    ctx.target_kind = "default"
    sock = os.path.join(ctx.tmp, "nbd.sock")
    backend = a.backend or "memory"
    ctx.server_log = open(ctx.out("servers.log"), "a")
    stack.callback(ctx.server_log.close)
    if a.nbd_shim and os.access(a.nbd_shim, os.X_OK):
        srv = harness.nbd_shim(a.nbd_shim, "standard", backend=backend,
                               size=None if backend.startswith("file:") else a.size,
                               socket=sock, log=ctx.server_log, log_header=True,
                               timeline=timelinelib.servers_dir(ctx) if a.timeline else None)
        ctx.target_desc = (f"nbd-shim --profile standard --backend {backend} "
                           f"--size {a.size} on {sock}")
    elif backend == "memory" and shutil.which("nbdkit"):
        srv = harness.nbdkit("memory", str(a.size), socket=sock, log=ctx.server_log,
                             log_header=True)
        ctx.target_desc = f"nbdkit memory {a.size} on {sock} (nbd-shim is not built)"
    else:
        raise SystemExit(f"compare: no server to start: nbd-shim is missing ({a.nbd_shim}): "
                         f"{INSTALL['nbd-shim']}; or give --uri")
    stack.callback(srv.stop)
    ctx.servers.append(srv)
    ctx.target = srv.uri
    log(f"target: {ctx.target_desc}")


# ------------------------------------------------------------- fio run

def run_job(ctx, path, overrides, drop=frozenset(), env=None, watch=(), keep=(), device=None):
    """Run the job for PATH with OVERRIDES; WATCH: pids whose CPU counts
    as the path's; KEEP: job options of OVERRIDDEN the job keeps; DEVICE:
    the block device it runs on (kernel paths). Returns the result's
    figures (with --timeline, its phases as "timeline")."""
    ov = dict(overrides)
    tl = timelinelib.CompareRun(ctx, path) if ctx.args.timeline else None
    if tl:
        ov.update(tl.job_options())
    keep = set(keep)
    if ctx.args.as_written:
        keep |= AS_WRITTEN
    else:
        ov.update({"runtime": str(ctx.seconds), "time_based": "1", "group_reporting": "1"})
    ov.update(ctx.latency_on)
    jobfile = ctx.rout(path, "fio")
    rewrite_job(ctx.args.job, jobfile, ov, drop=set(drop) | (OVERRIDDEN - keep))
    out = ctx.rout(path, "json")
    errlog = ctx.rout(path, "log")
    watch = [p for p in watch if p]
    before = {p: harness.proc_cpu_ticks(p) for p in watch}
    m0 = machine_ticks()
    t0 = time.monotonic()
    timeout = ctx.seconds * (6 if ctx.args.as_written else 3) + 120
    traced = tl.around_fio({"device": device, "server_pids": watch, "jobfile": jobfile,
                            "seconds": ctx.seconds, "round": ctx.round}) if tl \
        else contextlib.nullcontext()
    try:
        with traced:
            harness.run_fio(["--output-format=json+", "--eta=never", jobfile], json=False,
                            env=env, timeout=timeout, fio=ctx.fio, output=out,
                            log=errlog, cwd=ctx.tmp)
    except harness.FioError as e:
        msg = str(e)
        if "No space left" in msg or "ENOSPC" in msg:
            msg += ("; the job's files do not fit the filesystem on the export: make the "
                    "export larger (--size) or the job smaller (size=, or TORUS_SIZE for the "
                    "documents' jobs)")
        elif "but the export has" in msg and not ctx.args.uri:
            msg += (f"; compare started that server with --size {ctx.size}: pass a larger "
                    "--size (e.g. the job's size=)")
        raise PathFailed(msg)
    wall = time.monotonic() - t0
    m1 = machine_ticks()
    after = {p: harness.proc_cpu_ticks(p) for p in watch}
    data = harness.load_fio_json(out)
    s = summarize(data, os.path.basename(out))
    hz = os.sysconf("SC_CLK_TCK")
    s["machine_cpu_us_per_io"] = (m1[0] - m0[0]) / hz / s["ios"] * 1e6
    s["machine_busy_pct"] = 100.0 * (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
    helpers = [after[p] - before[p] for p in watch
               if before.get(p) is not None and after.get(p) is not None]
    if helpers:
        s["helpers_cpu_us_per_io"] = sum(helpers) / hz / s["ios"] * 1e6
    s["wall_s"] = wall
    try:
        with open(errlog, errors="replace") as f:
            s["kernel_share_us_per_io"] = kernel_share(f.read(), s["ios"])
    except OSError:
        s["kernel_share_us_per_io"] = None
    if tl:
        s["timeline"] = tl.result(out)
    return s


def run_on_device(ctx, stack, res, path, dev, watch=()):
    """Run the job on the block device DEV: raw with direct=1, or, with a
    filesystem (--fs), in a directory of one made and mounted on DEV with
    --mount-options, the job's own direct= and filename_format= kept, so
    the page cache works as it did for the documents."""
    drop = ctx.engine_uri_opts()
    if ctx.fs == "none":
        if ctx.args.job_direct:
            return run_job(ctx, path, {"ioengine": "libaio", "filename": dev}, drop=drop,
                           watch=watch, keep=("direct", "buffered"), device=dev)
        return run_job(ctx, path, {"ioengine": "libaio", "filename": dev, "direct": "1"},
                       drop=drop, watch=watch, device=dev)
    mkfs = f"mkfs.{ctx.fs}"
    ctx.need(mkfs, "mount")
    # no lazy initialisation: ext4lazyinit's writes would land in the run
    opts = {"ext4": ["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
            "xfs": ["-q", "-f"]}[ctx.fs]
    run_cmd([ctx.tool(mkfs)] + opts + [dev], f"{mkfs} {dev}", 300)
    mnt = os.path.join(ctx.tmp, f"{path}.mnt")
    os.makedirs(mnt, exist_ok=True)
    if ctx.tool("modprobe"):                                      # a guest loads it here
        subprocess.run([ctx.tool("modprobe"), ctx.fs], capture_output=True)
    run_cmd(["mount", "-t", ctx.fs, "-o", ctx.args.mount_options, dev, mnt],
            f"mount -o {ctx.args.mount_options} {dev}")

    def umount():
        if subprocess.run(["umount", mnt], capture_output=True).returncode:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    stack.callback(umount)
    log(f"{path}: {mkfs} {dev}, mounted on {mnt} with -o {ctx.args.mount_options}")
    res["notes"].append(f"a filesystem: {mkfs} on {dev}, mount -o {ctx.args.mount_options}; "
                        f"the job's files in it (its own direct=)")
    res["filesystem"] = {"type": ctx.fs, "mount_options": ctx.args.mount_options}
    return run_job(ctx, path, {"ioengine": "libaio", "directory": mnt}, drop=drop,
                   watch=watch, keep=("direct", "buffered", "filename_format"), device=dev)


# ------------------------------------------------------------- the paths

def engine_in_guest(ctx, path, res):
    uri = ctx.guest_target()
    res["notes"].append(f"in the guest (--engine-in-guest), to the server as {uri}")
    return run_in_guest(ctx, path, res, ["--uri", uri], guest_opts=["--net"])


def path_engine_nbd(ctx, stack, res):
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-nbd", res)
    watch = [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-nbd",
                   {"ioengine": f"external:{ctx.engine}", "uri": ctx.target}, watch=watch)


def path_engine_libnbd(ctx, stack, res):
    """The engine on the same server through transport=libnbd: what a
    general client library costs next to the native transport inside the
    same glue (and the one engine path that reaches a TLS server)."""
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    if not links_libnbd(ctx.engine):
        raise Skip(f"{ctx.engine} has no transport=libnbd (built without libnbd-dev: "
                   "scripts/deps.sh, then meson setup again)")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-libnbd", res)
    res["notes"].append("transport=libnbd")
    watch = [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-libnbd",
                   {"ioengine": f"external:{ctx.engine}", "uri": ctx.target,
                    "transport": "libnbd"}, watch=watch)


def path_engine_tcmu(ctx, stack, res):
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-tcmu", res)
    sock = os.path.join(ctx.tmp, "tcmu.sock")
    shim = harness.tcmu_shim(ctx.args.tcmu_shim, sock, backend=f"nbd:{ctx.target}",
                             log=ctx.server_log or ctx.out("servers.log"), log_header=True,
                             what="tcmu-shim (nbd store)",
                             timeline=timelinelib.round_dir(ctx, "engine-tcmu")
                             if ctx.args.timeline else None)
    stack.callback(shim.stop)
    res["notes"].append(f"tcmu-shim --backend nbd:{ctx.target}")
    watch = [shim.pid] + [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-tcmu",
                   {"ioengine": f"external:{ctx.engine}", "uri": shim.uri}, watch=watch)


def run_cmd(argv, what, timeout=60):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise PathFailed(f"{what} failed ({harness.status_text(r.returncode)}): "
                         f"{(r.stderr or r.stdout).strip()[-400:]}; command: "
                         f"{' '.join(argv)}")
    return r.stdout.strip()


def path_kernel_loop(ctx, stack, res):
    ctx.need("fio", "nbdfuse", "losetup")
    ctx.need_root("kernel-loop")
    missing = ctx.modules_missing(BY_NAME["kernel-loop"].modules)
    if missing:
        raise Skip(f"this kernel lacks {', '.join(missing)} (modprobe loop fuse)")
    mnt = os.path.join(ctx.tmp, "fuse")
    os.makedirs(mnt, exist_ok=True)
    flog_name = ctx.rout("kernel-loop", "nbdfuse.log")
    flog = open(flog_name, "w")
    stack.callback(flog.close)
    fuse = subprocess.Popen([ctx.tool("nbdfuse"), mnt, ctx.target], stdin=subprocess.DEVNULL,
                            stdout=flog, stderr=flog)

    def stop_fuse():
        if os.path.ismount(mnt):
            subprocess.run(["umount", mnt], capture_output=True)
        try:
            fuse.wait(5)
        except subprocess.TimeoutExpired:
            fuse.terminate()
            try:
                fuse.wait(5)
            except subprocess.TimeoutExpired:
                fuse.kill()
                fuse.wait()
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    stack.callback(stop_fuse)
    nbdfile = os.path.join(mnt, "nbd")
    deadline = time.monotonic() + 15
    while not (os.path.ismount(mnt) and os.path.exists(nbdfile)):
        if fuse.poll() is not None:
            with open(flog_name, errors="replace") as f:
                said = " ".join(f.read().split())[-200:]
            raise PathFailed(f"nbdfuse exited ({harness.status_text(fuse.returncode)}) "
                             f"before mounting: {said or 'it said nothing'} (libnbd, and so "
                             "nbdfuse, cannot negotiate with some servers, such as the "
                             "torus and 0-Disk ones)")
        if time.monotonic() > deadline:
            raise PathFailed("nbdfuse did not mount the export within 15 s")
        time.sleep(0.05)
    dev = run_cmd(["losetup", "--find", "--show", "--direct-io=on", nbdfile],
                  "losetup --direct-io=on")
    stack.callback(lambda: subprocess.run(["losetup", "-d", dev], capture_output=True))
    log(f"kernel-loop: {ctx.target} -> nbdfuse {nbdfile} -> {dev}")
    try:
        dio = run_cmd(["losetup", "--noheadings", "-O", "DIO", dev], "losetup -O DIO")
        if dio.strip() != "1":
            res["notes"].append("the loop device fell back to buffered I/O (DIO=0)")
    except PathFailed:
        pass
    res["notes"].append(f"nbdfuse {mnt}/nbd + losetup --direct-io=on {dev}")
    watch = [fuse.pid] + [s.pid for s in ctx.servers]
    return run_on_device(ctx, stack, res, "kernel-loop", dev, watch=watch)


def tcmu_kernel_native(ctx, stack, res, backend):
    """LIO user backstore + tcm_loop on this kernel, tcmu-shim --uio with
    BACKEND; fio on the /dev/sdX."""
    ctx.need("fio")
    ctx.need_root("kernel-tcmu")
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    tk = os.path.join(HERE, "tcmu-kernel")
    name = f"cmp{os.getpid() % 100000}"
    size = str(ctx.size)
    uio = run_cmd([tk, "setup", "--name", name, "--size", size], "tcmu-kernel setup", 120)
    shim_holder = {}

    def teardown():
        subprocess.run([tk, "teardown", "--name", name], capture_output=True, timeout=120)
        shim = shim_holder.get("shim")
        if shim is not None:
            try:
                shim.wait(5)           # removing the backstore ends it
            except subprocess.TimeoutExpired:
                shim.terminate()
                try:
                    shim.wait(5)
                except subprocess.TimeoutExpired:
                    shim.kill()
                    shim.wait()
    stack.callback(teardown)
    slog = ctx.rout("kernel-tcmu", "shim.log")
    argv = [ctx.args.tcmu_shim, "--uio", uio, "--backend", backend, "--log", slog]
    if backend in ("memory", "null"):
        argv += ["--size", size]
    shim = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    shim_holder["shim"] = shim
    deadline = time.monotonic() + 10
    while True:
        try:
            with open(slog) as f:
                if "serving" in f.read():
                    break
        except OSError:
            pass
        if shim.poll() is not None:
            raise PathFailed(f"tcmu-shim --uio {uio} exited "
                             f"({harness.status_text(shim.returncode)}); see "
                             f"{os.path.basename(slog)}")
        if time.monotonic() > deadline:
            raise PathFailed(f"tcmu-shim did not serve {uio} within 10 s")
        time.sleep(0.05)
    sd = run_cmd([tk, "attach", "--name", name, "--timeout", "120"], "tcmu-kernel attach", 180)
    log(f"kernel-tcmu: tcmu-shim --uio {uio} --backend {backend} -> tcm_loop {sd}")
    res["notes"].append(f"tcmu-shim --uio {uio} --backend {backend}, tcm_loop {sd}")
    return run_on_device(ctx, stack, res, "kernel-tcmu", sd, watch=[shim.pid])


def run_in_guest(ctx, path, res, extra, guest_opts=()):
    """Run this script inside scripts/guest for PATH (--in-guest), the
    results folder shared; returns the figures, with res['where'] set to
    guest-tcg or guest-kvm."""
    env = [f"--env={k}" for k in JOB_ENV if k in os.environ]
    timeout = ctx.seconds * 3 + 600
    cmd = [ctx.guest, "--timeout", str(timeout), "--share", ctx.results,
           "--mem", str(ctx.args.guest_mem)] + env + list(guest_opts) + [
           "--", "/usr/bin/python3", SCRIPT,
           os.path.abspath(ctx.args.job), "--in-guest", "--paths", path,
           "--results", ctx.results, "--seconds", str(ctx.seconds), "--size", str(ctx.size),
           "--round", str(ctx.round),
           "--engine", ctx.engine, "--fio", ctx.fio, "--tcmu-shim", ctx.args.tcmu_shim,
           "--nbd-shim", ctx.args.nbd_shim or "", "--fs", ctx.fs,
           "--mount-options", ctx.args.mount_options] + extra + \
        (["--as-written"] if ctx.args.as_written else []) + \
        (["--job-direct"] if ctx.args.job_direct else []) + \
        (["--timeline"] if ctx.args.timeline else [])
    log(f"{path}: in the guest (scripts/guest; a boot takes seconds)")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    accel = None
    said = []                                  # scripts/guest's own messages
    for line in proc.stderr:
        sys.stderr.write("  [guest] " + line)
        m = re.match(r"guest: (TCG|KVM) \(", line)
        if m:
            accel = m.group(1).lower()
        elif line.startswith("guest: "):
            said.append(line[7:].strip())
    stdout = proc.stdout.read()
    rc = proc.wait()
    res["where"] = f"guest-{accel or '?'}"
    res["functional_only"] = accel != "kvm"
    frag = ctx.out(f"{path}.guest-result.json")
    if os.path.exists(frag):
        with open(frag) as f:
            inner = json.load(f)
        os.unlink(frag)
        res["notes"] += inner.get("notes", [])
        if inner.get("filesystem"):
            res["filesystem"] = inner["filesystem"]
        if inner["status"] == "skipped":
            raise Skip("in the guest: " + inner["reason"])
        if inner["status"] != "ok":
            raise PathFailed("in the guest: " + inner.get("reason", "failed"))
        return inner["figures"]
    raise PathFailed(guest_failure(rc, said, stdout, timeout))


def guest_failure(rc, said, stdout, timeout):
    """Why a run in scripts/guest left no result, from its exit status and
    its own 'guest:' lines."""
    if rc == 124:
        why = f"scripts/guest timed out (exit 124, --timeout {timeout} s)"
    elif rc == 125:
        why = "the guest failed before the command ran (scripts/guest exit 125)"
    else:
        why = f"scripts/guest exited {rc} without a result"
    if said and rc in (124, 125):
        why += ": " + " / ".join(said[-2:])
    if stdout.strip():
        why += f"; it printed: {stdout.strip()[-300:]}"
    return why


def path_kernel_tcmu(ctx, stack, res):
    if ctx.in_guest:
        return tcmu_kernel_native(ctx, stack, res, f"nbd:{ctx.target}")
    where = ctx.kernel_where("kernel-tcmu")
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    if where == "native":
        return tcmu_kernel_native(ctx, stack, res, f"nbd:{ctx.target}")
    uri = ctx.guest_target()
    res["notes"].append(f"the guest's tcmu-shim reaches the server as {uri} (user-mode network)")
    return run_in_guest(ctx, "kernel-tcmu", res, ["--uri", uri], guest_opts=["--net"])


def path_kernel_nbd(ctx, stack, res):
    script = os.path.join(HERE, "nbd-kernel")
    if not os.access(script, os.X_OK):
        raise Skip("not built yet: scripts/nbd-kernel does not exist")
    where = "native" if ctx.in_guest else ctx.kernel_where("kernel-nbd")
    if where == "guest":
        uri = ctx.guest_target()
        res["notes"].append(f"the guest's nbd-client reaches the server as {uri} "
                            "(user-mode network)")
        return run_in_guest(ctx, "kernel-nbd", res, ["--uri", uri], guest_opts=["--net"])
    ctx.need("fio", "nbd-client")
    ctx.need_root("kernel-nbd")
    dev = run_cmd([script, "attach", ctx.target], "nbd-kernel attach", 120)
    stack.callback(lambda: subprocess.run([script, "detach", dev], capture_output=True,
                                          timeout=120))
    log(f"kernel-nbd: {ctx.target} -> nbd-client -> {dev}")
    res["notes"].append(f"nbd-client (scripts/nbd-kernel) {dev}")
    return run_on_device(ctx, stack, res, "kernel-nbd", dev,
                         watch=[s.pid for s in ctx.servers])


def path_guest_virtio(ctx, stack, res):
    if ctx.in_guest:
        dev = os.environ.get("TORUS_GUEST_DISK")
        if not dev:
            raise PathFailed("the guest has no NBD disk (TORUS_GUEST_DISK is not set)")
        ctx.need("fio")
        log(f"guest-virtio: qemu's NBD client -> virtio-blk {dev}")
        res["notes"].append(f"qemu --nbd-disk (raw, cache=none) as {dev} in the guest")
        return run_on_device(ctx, stack, res, "guest-virtio", dev)
    if ctx.args.kernel == "native":
        raise Skip("--kernel native: guest-virtio always needs a guest (scripts/guest)")
    try:
        helptext = subprocess.run([ctx.guest, "--help"], capture_output=True, text=True,
                                  timeout=30).stdout
    except OSError:
        helptext = ""
    if "--nbd-disk" not in helptext:
        raise Skip("not built yet: scripts/guest cannot attach an NBD export as a virtio disk")
    if not shutil.which("qemu-system-x86_64"):
        raise Skip(f"qemu is missing: {INSTALL['qemu-system-x86_64']}")
    # qemu runs on the host: its NBD client reaches the host's server itself
    return run_in_guest(ctx, "guest-virtio", res, [], guest_opts=["--nbd-disk", ctx.target])


@dataclasses.dataclass(frozen=True)
class Path:
    """One way to the storage: a new path is one record here."""
    name: str
    transport: str          # "nbd" or "tcmu": the table's and the picture's grouping
    baseline: str           # the engine path on the same transport (None: an engine)
    where: str              # "host", "native-or-guest" (--kernel) or "guest"
    modules: tuple          # the kernel modules it needs natively
    runner: object          # runner(ctx, stack, res) -> figures; raises Skip, PathFailed
    what: str               # one line, for --list


PATHS = (
    Path("engine-nbd", "nbd", None, "host", (), path_engine_nbd,
         "libtorus.so over NBD to the server"),
    Path("engine-libnbd", "nbd", "engine-nbd", "host", (), path_engine_libnbd,
         "libtorus.so with transport=libnbd (the NBD client library) to the server; "
         "costed against engine-nbd"),
    Path("engine-tcmu", "tcmu", None, "host", (), path_engine_tcmu,
         "libtorus.so over a TCMU ring to tcmu-shim --backend nbd:<server>"),
    Path("kernel-nbd", "nbd", "engine-nbd", "native-or-guest", ("nbd",), path_kernel_nbd,
         "nbd-client (scripts/nbd-kernel) attaches the export as /dev/nbdN; fio with "
         "libaio, direct I/O"),
    Path("kernel-tcmu", "tcmu", "engine-tcmu", "native-or-guest",
         ("configfs", "target_core_mod", "target_core_user", "uio", "tcm_loop"),
         path_kernel_tcmu, "LIO's user backstore served by tcmu-shim --uio, tcm_loop's "
         "/dev/sdX; fio with libaio, direct I/O"),
    Path("kernel-loop", "nbd", "engine-nbd", "host", ("loop", "fuse"), path_kernel_loop,
         "nbdfuse shows the export as a file, losetup --direct-io=on makes /dev/loopN of it "
         "(one hop more than kernel-nbd, through FUSE); fio with libaio, direct I/O"),
    Path("guest-virtio", "nbd", "engine-nbd", "guest", (), path_guest_virtio,
         "qemu's NBD client as the guest's virtio-blk disk; fio in the guest"),
)
BY_NAME = {p.name: p for p in PATHS}
WHERE = {"host": "on this machine", "native-or-guest": "natively or in the guest",
         "guest": "in the guest"}


def paths_text():
    """The paths for --help, from their records."""
    return "\n".join(textwrap.fill(f"{p.name:13} {p.what} ({WHERE[p.where]})", 78,
                                    initial_indent="  ", subsequent_indent=" " * 16)
                      for p in PATHS)
NAMES = [p.name for p in PATHS]


def run_path(ctx, path):
    res = {"path": path, "transport": BY_NAME[path].transport, "status": "ok", "reason": None,
           "where": "native", "functional_only": False, "notes": [], "figures": None}
    t0 = time.monotonic()
    log(f"{path}: setting up")
    with contextlib.ExitStack() as stack:      # tear-downs, in reverse, always
        try:
            res["figures"] = BY_NAME[path].runner(ctx, stack, res)
            if os.path.exists(ctx.rout(path, "json")):
                res["fio_json"] = os.path.basename(ctx.rout(path, "json"))
        except Skip as e:
            res["status"], res["reason"] = "skipped", str(e)
        except (PathFailed, harness.HarnessError, OSError, subprocess.SubprocessError) as e:
            res["status"], res["reason"] = "failed", str(e)
        except Exception as e:                 # a bug here: keep the other paths going
            import traceback
            traceback.print_exc()
            res["status"], res["reason"] = "failed", f"internal error: {e!r}"
        finally:
            if res["status"] == "ok":
                log(f"{path}: tearing down")
    dt = time.monotonic() - t0
    if res["status"] == "ok":
        f = res["figures"]
        clat = ("not recorded by fio" if f["clat_mean_us"] is None
                else f"{f['clat_mean_us']:.1f} us")
        log(f"{path}: {f['iops']:.0f} IOPS, {f['bw_mib']:.1f} MiB/s, "
            f"mean clat {clat} ({dt:.1f} s)")
    else:
        log(f"{path}: {res['status']}: {res['reason']}")
    return res


# ------------------------------------------------------------- rounds

def schedule(paths, rounds):
    """The runs in order, as (round, path): every path once per round, in
    the order asked (ABC ABC ABC), so that a slow spell of the machine
    falls on every path rather than on one."""
    return [(r, p) for r in range(1, rounds + 1) for p in paths]


def cpu_probe():
    """The bench's CPU-speed probe (bench_run.cpu_probe): the milliseconds
    a fixed loop takes (lower is faster), or None when it cannot run."""
    import bench_run
    try:
        return bench_run.cpu_probe()
    except OSError:
        return None


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def median_range(values):
    """(median, [min, max]) of those of VALUES that are numbers, or
    (None, None) when none is."""
    vs = [v for v in values if is_number(v)]
    if not vs:
        return None, None
    return statistics.median(vs), [min(vs), max(vs)]


def combine(rounds):
    """The figures of several rounds (dicts) as (medians, {key: [min, max]});
    a figure that is not a number (how the percentiles were taken) is the
    first round's that has one."""
    keys = list(dict.fromkeys(k for r in rounds for k in r))
    figures, ranges = {}, {}
    for key in keys:
        vals = [r.get(key) for r in rounds]
        if any(is_number(v) for v in vals):
            figures[key], ranges[key] = median_range(vals)
        else:
            figures[key] = next((v for v in vals if v is not None), None)
    return figures, ranges


def spreads(ranges):
    """The spread (max/min) of each figure of SPREAD_KEYS that has a range
    (None when its smallest is 0)."""
    return {k: (ranges[k][1] / ranges[k][0] if ranges[k][0] > 0 else None)
            for k, _ in SPREAD_KEYS if k in ranges}


def median_round(rounds):
    """The round (1-based) whose IOPS is the median (the lower middle one
    for an even number of rounds): its fio JSON stands for the path."""
    iops = [r["iops"] for r in rounds]
    return iops.index(statistics.median_low(iops)) + 1


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
    timelinelib.merge_rounds(res)
    return res


# ------------------------------------------------------------- report

COSTS = (("clat_mean_us", "latency"), ("machine_cpu_us_per_io", "cpu"),
         ("fio_cpu_us_per_io", "fio_cpu"))


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
            cost[key], rng = median_range([c.get(key) for c in per])
            if rng:
                ranges[key] = rng
        cost["range"], cost["rounds"] = ranges, per
        r["vs_engine"] = cost


def fmt(v, digits=1):
    if v is None:
        return "–"
    if abs(v) >= 10000:
        return f"{v / 1000:.1f}k"
    return f"{v:.{digits}f}"


def cell(value, rng, show, form=fmt, digits=1, unit=""):
    """VALUE as the table shows it (FORM, DIGITS, then UNIT), with its
    min–max when SHOW."""
    if value is None:
        return "–"
    s = form(value, digits) + unit
    if show and rng:
        s += f" ({form(rng[0], digits)}–{form(rng[1], digits)})"
    return s


def fmt_extra(v, digits=1):
    return f"{v:+.{digits}f}"


def table(results):
    """The report's tables: the figures (median and min–max over the rounds),
    the costs against the engine, the spread's footnotes, every round's
    IOPS, the paths that did not run and the notes."""
    ok = [r for r in results if r["status"] == "ok"]
    lines = ["| path | where | rounds | IOPS | MiB/s | clat mean µs | p50 | p99 | p99.9 "
             "| fio CPU µs/IO | machine CPU µs/IO | kernel's share µs/IO |", "|" + "---|" * 12]
    for r in ok:
        f, rng = r["figures"], r.get("range") or {}
        n = len(r.get("rounds") or [1])
        flagged = r.get("flagged") or []

        def c(key, digits=1):
            return cell(f.get(key), rng.get(key), n > 1, digits=digits) + \
                (f" {FLAG}" if key in flagged else "")
        where = r["where"] + (" **functional only**" if r["functional_only"] else "")
        name = r["path"] + (f" {FLAG}" if flagged else "")
        lines.append(f"| {name} | {where} | {n} | {c('iops', 0)} | {c('bw_mib')} | "
                     f"{c('clat_mean_us')} | {c('clat_p50_us')} | {c('clat_p99_us')} | "
                     f"{c('clat_p99.9_us')} | {c('fio_cpu_us_per_io', 2)} | "
                     f"{c('machine_cpu_us_per_io', 2)} | {c('kernel_share_us_per_io', 2)} |")
    costed = [r for r in ok if r.get("vs_engine")]
    if costed:
        lines += ["", "Against the engine (each a median of the rounds' own ratios, min–max):",
                  "", "| path | against | IOPS | clat mean | clat extra µs | machine CPU/IO "
                  "| CPU extra µs/IO |", "|" + "---|" * 7]
        for r in costed:
            cst = r["vs_engine"]
            if "none_because" in cst:
                lines.append(f"| {r['path']} | {cst['baseline']} | not comparable: "
                             f"{cst['none_because']} | – | – | – | – |")
                continue
            rng = cst.get("range") or {}
            show = len(cst.get("rounds") or [1]) > 1

            def ratio(key):
                return cell(cst.get(key), rng.get(key), show, form=fmt, digits=2, unit="x")

            def extra(key):
                return cell(cst.get(key), rng.get(key), show, form=fmt_extra)
            lines.append(f"| {r['path']} | {cst['baseline']} | {ratio('iops_ratio')} | "
                         f"{ratio('latency_ratio')} | {extra('latency_extra_us')} | "
                         f"{ratio('cpu_ratio')} | {extra('cpu_extra_us')} |")
        share = share_text(ok, costed)
        if share:
            lines += ["", share]
    flagged = [r for r in ok if r.get("flagged")]
    if flagged:
        lines += ["", f"{FLAG} The rounds of these paths moved more than {SPREAD_LIMIT}x "
                  "(max/min), so their medians say less than the others': more --rounds, a "
                  "longer --seconds or a quieter machine narrow them.", ""]
        for r in flagged:
            moved = ", ".join(f"{label} {r['spread'][k]:.2f}x" for k, label in SPREAD_KEYS
                              if k in r["flagged"])
            lines.append(f"- {r['path']}: {moved}")
    if any(len(r.get("rounds") or []) > 1 for r in ok):
        lines += ["", "IOPS of every round, in the order run:", ""]
        lines += [f"- {r['path']}: " + ", ".join(fmt(x["figures"]["iops"], 0)
                                                  for x in r["rounds"]) for r in ok]
    other = [r for r in results if r["status"] != "ok"]
    if other:
        lines += ["", "| path | status | why |", "|---|---|---|"]
        lines += [f"| {r['path']} | {r['status']} | {r['reason']} |" for r in other]
    notes = [(r["path"], n) for r in results for n in r["notes"]]
    if notes:
        lines += [""] + [f"- {p}: {n}" for p, n in notes]
    return "\n".join(lines)


def share_text(ok, costed):
    """The line under the costs when engine-tcmu's CPU is in them: its
    figure holds the completion work the kernel does in the handler's
    notify (the kernel's share), or None."""
    tcmu = next((r for r in ok if r["path"] == "engine-tcmu"), None)
    if not tcmu or tcmu["figures"].get("kernel_share_us_per_io") is None:
        return None
    if not any(r["path"] == "engine-tcmu" or r["vs_engine"].get("baseline") == "engine-tcmu"
               for r in costed if "none_because" not in r["vs_engine"]):
        return None
    n = len(tcmu.get("rounds") or [1])
    share = cell(tcmu["figures"]["kernel_share_us_per_io"],
                 (tcmu.get("range") or {}).get("kernel_share_us_per_io"), n > 1, digits=2)
    return (f"engine-tcmu's CPU per I/O includes the kernel's share, {share} µs/IO: the "
            "completion work (finding completions, copying reads out, retiring commands) "
            "that the kernel does inside the handler's notify and charges to the handler, "
            "which the engine does in fio's thread.")


def latency_text(found, on):
    """The report's line on a job that turns latency recording off, or None."""
    if not found:
        return None
    said = ", ".join(found)
    if on:
        return (f"The job turns fio's latency recording off ({said}); compare ran it with "
                f"{', '.join(f'{k}={v}' for k, v in on.items())}, so that every path's "
                "latency is measured (at the cost of reading the clock per I/O).")
    return (f"The job turns fio's latency recording off ({said}) and --as-written keeps it "
            "so: no latency figures.")


def probe_text(probes):
    """The report's line on the CPU-speed probe, PROBES: [before round 1,
    after round 1, ...] in ms (None: it did not run)."""
    if not any(p is not None for p in probes):
        return None
    when = ["before round 1"] + [f"after round {i}" for i in range(1, len(probes))]
    said = "; ".join(f"{w} {p:.0f} ms" for w, p in zip(when, probes) if p is not None)
    return ("CPU-speed probe (scripts/benchlib.sh's cpu_probe: the milliseconds a fixed loop "
            f"takes, lower is faster; context for the spread, figures are not scaled by it): "
            f"{said}.")


def write_report(ctx, results, text, picture, probes):
    rounds = ctx.args.rounds
    lines = [f"# scripts/compare: {os.path.basename(ctx.args.job)}", "",
             f"Target: {ctx.target_desc}. {rounds} round{'s' if rounds != 1 else ''} of "
             f"{ctx.seconds} s per path, in alternation ({', '.join(ctx.args.paths)}, then "
             f"again) ({datetime.datetime.now().isoformat(timespec='seconds')}, "
             f"kernel {os.uname().release}).", "",
             "Each figure is the median of the rounds with its min–max in brackets. "
             "Latency is fio's completion latency (clat) over all directions ('–' where fio "
             "recorded none). fio CPU: the fio process's usr+sys per I/O; machine CPU: every "
             "CPU's busy time during the run per I/O (servers, FUSE, kernel threads "
             "included). Kernel's share (engine-tcmu): the completion work the engine does in "
             "fio's thread where the kernel does it inside the handler's notify, per I/O; it "
             "is inside engine-tcmu's CPU figures. 'Against the engine' compares each kernel path with the engine on "
             "the same transport, and engine-tcmu with engine-nbd: each ratio, and the extra "
             "microseconds per I/O, is the median of the rounds' own (round N against the "
             "other path's round N). A path whose IOPS or mean latency moved more than "
             f"{SPREAD_LIMIT}x (max/min) between rounds is marked {FLAG}. Rows marked "
             "functional only ran under software emulation: their timings mean nothing.", ""]
    for extra in (latency_text(ctx.latency_found, ctx.latency_on), probe_text(probes)):
        if extra:
            lines += [extra, ""]
    if ctx.fs != "none":
        lines += [f"Kernel paths ran the job in a directory of a filesystem ({ctx.fs}) made on "
                  f"the device and mounted with -o {ctx.args.mount_options}"
                  + (f" ({ctx.args.fs_why})" if ctx.args.fs_why else "")
                  + ", with the job's own direct= setting: the page cache is part of "
                  "their figures. The engine paths have no filesystem: fio's requests go "
                  "to the export as they are.", ""]
    lines += [text, ""]
    lines += timelinelib.report_lines(results)
    if picture:
        lines += ["![latency percentiles and bandwidth per path](report.png)", ""]
    with open(ctx.out("report.md"), "w") as f:
        f.write("\n".join(lines))


def write_picture(ctx, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (Debian package python3-matplotlib): no report.png")
        return False
    ok = [r for r in results if r["status"] == "ok"]
    if not ok:
        return False
    timed = [r for r in ok if (r.get("timeline") or {}).get("phases")]
    if timed:                                   # --timeline: a row of stacked bars below
        fig, axes = plt.subplots(2, 2, figsize=(12, 4.4 + 0.6 * (len(ok) + len(timed))),
                                 gridspec_kw={"width_ratios": [3, 2],
                                              "height_ratios": [len(ok), len(timed)]})
        (ax1, ax2), (ax3, ax4) = axes
        ax3.remove()
        ax4.remove()
        timelinelib.draw(fig.add_subplot(2, 1, 2), results)
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 2.2 + 0.6 * len(ok)),
                                       gridspec_kw={"width_ratios": [3, 2]})
    names = [r["path"] + (f" {FLAG}" if r.get("flagged") else "")
             + (" (functional only)" if r["functional_only"] else "") for r in ok]
    ys = list(range(len(ok)))
    keys = [("clat_mean_us", "mean", "o"), ("clat_p50_us", "p50", "s"),
            ("clat_p99_us", "p99", "^"), ("clat_p99.9_us", "p99.9", "v")]
    for key, label, marker in keys:
        xs = [r["figures"].get(key) for r in ok]
        pts = [(x, y) for x, y in zip(xs, ys) if x]
        if pts:
            ax1.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=label,
                        zorder=3)
    for y, r in zip(ys, ok):
        vals = [r["figures"].get(k) for k, _, _ in keys if r["figures"].get(k)]
        if vals:
            ax1.plot([min(vals), max(vals)], [y, y], color="#bbbbbb", zorder=1)
    ax1.set_xscale("log")
    ax1.set_xlabel("completion latency, µs (log; medians of the rounds)")
    ax1.set_yticks(ys)
    ax1.set_yticklabels(names, fontsize=8)
    ax1.set_ylim(len(ok) - 0.5, -0.5)
    ax1.grid(axis="x", which="both", alpha=0.3)
    if ax1.get_legend_handles_labels()[0]:      # none when the job keeps no latencies
        ax1.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4,
                   frameon=False)
    colors = ["#cccccc" if r["functional_only"] else
              ("#2a9d8f" if r["transport"] == "tcmu" else "#d9822b") for r in ok]
    bws = [r["figures"]["bw_mib"] for r in ok]
    # error bars: each bar's min–max over the rounds
    lows = [bw - (r.get("range") or {}).get("bw_mib", [bw, bw])[0] for bw, r in zip(bws, ok)]
    highs = [(r.get("range") or {}).get("bw_mib", [bw, bw])[1] - bw for bw, r in zip(bws, ok)]
    ax2.barh(ys, bws, color=colors, xerr=[lows, highs], capsize=4,
             hatch=None, error_kw={"elinewidth": 1, "ecolor": "#333333"})
    for y, r, bw, hi in zip(ys, ok, bws, highs):
        moved = max((r["spread"][k] for k in r.get("flagged") or []), default=None)
        ax2.annotate(f"{bw:.0f}" + (f" {FLAG} {moved:.2f}x" if moved else "")
                     + (" (functional only)" if r["functional_only"] else ""),
                     (bw + hi, y), xytext=(5, 0), textcoords="offset points", va="center",
                     fontsize=7)
    # room for the labels right of the longest error bar
    ax2.set_xlim(0, max(bw + hi for bw, hi in zip(bws, highs)) * 1.35 or 1)
    ax2.set_yticks(ys)
    ax2.set_yticklabels([])
    ax2.set_ylim(len(ok) - 0.5, -0.5)
    ax2.set_xlabel(f"bandwidth, MiB/s: median, error bars min–max of {ctx.args.rounds} "
                   "round(s)\n(orange: NBD, green: TCMU, grey: emulated)")
    ax2.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{os.path.basename(ctx.args.job)}: each path to the same storage"
                 + (f" ({FLAG}: rounds moved more than {SPREAD_LIMIT}x)"
                    if any(r.get("flagged") for r in ok) else ""),
                 fontsize=10, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(ctx.out("report.png"), dpi=100)
    plt.close(fig)
    return True


# ------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="compare", description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1].replace("{paths}", paths_text()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("job", help="the fio job file")
    t = ap.add_mutually_exclusive_group()
    t.add_argument("--uri", help="an NBD server to use (nbd://HOST[:PORT]/NAME, "
                   "nbd+unix:///NAME?socket=PATH) instead of starting one")
    t.add_argument("--backend", help="the started server's store: memory (default), null, "
                   "file:PATH")
    ap.add_argument("--size", type=parse_size, default=256 * 2**20,
                    help="the started server's size (default 256M)")
    ap.add_argument("--paths", default=",".join(NAMES),
                    help=f"comma-separated, from: {', '.join(NAMES)} (default: all)")
    ap.add_argument("--results", help="results folder (default results/compare-<date-time>)")
    ap.add_argument("--seconds", type=int, default=10, help="runtime per path (default 10)")
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
    ap.add_argument("--list", action="store_true", help="list the paths and exit")
    ap.add_argument("--in-guest", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--round", type=int, default=1, help=argparse.SUPPRESS)
    if "--list" in argv:
        for p in PATHS:
            print(p.name)
        sys.exit(0)
    a = ap.parse_args(argv)
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
    return a


def resolve_fs(fs, job):
    """--fs auto: ext4 when jobs/documents.tsv lists JOB as a filesystem test."""
    if fs != "auto":
        return fs, f"--fs {fs}"
    table = os.path.join(REPO, "jobs", "documents.tsv")
    try:
        with open(table) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and l[0] != "#"]
    except OSError:
        return "none", None
    head = rows[0] if rows else []
    if "job" not in head or "path" not in head:
        return "none", None
    for r in rows[1:]:
        if len(r) == len(head) and r[head.index("job")] == os.path.basename(job) and \
                os.path.dirname(job) == os.path.join(REPO, "jobs"):
            if r[head.index("path")] == "filesystem":
                return "ext4", f"jobs/documents.tsv: {r[head.index('id')]} is a filesystem test"
    return "none", None


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
        REPO, "results", "compare-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
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
        except harness.HarnessError as e:
            log(f"cannot start the server: {e}")
            return 2
        if ctx.latency_found:
            log(latency_text(ctx.latency_found, ctx.latency_on))
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


