"""scripts/compare's run of the job on one path: the run's context (its
arguments, the target, what a path needs and the Skip that says what is
missing), the target server, fio on the path (or on a block device it
made) and the figures of one run."""

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.parse

import fio_json
import issued
import kernel_shares
import procs
import servers
import timeline_runs
from compare_job import HERE, AS_WRITTEN, OVERRIDDEN, engine_options, latency_off, latency_on, \
    rewrite_job

PERCENTILES = (50.0, 99.0, 99.9)
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


# ------------------------------------------------------ figures

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


def summarize(data, name):
    """The table's figures of one fio run (all its jobs together):
    fio_json.fio_summary's, fio's CPU per I/O as fio_cpu_us_per_io, the
    completion latency percentiles over every job and direction, and the
    writes, syncs, trims and I/Os it issued (issued.FIGURE's keys)."""
    s = fio_json.fio_summary(data, name, all_jobs=True)
    out = {"iops": s["iops"], "bw_mib": s["bw_mib"],
           "clat_mean_us": s["clat_mean_us"] if clat_recorded(data) else None,
           "ios": s["ios"], "runtime_s": s["runtime_s"],
           "fio_cpu_us_per_io": s["cpu_us_per_io"]}
    pcts, how = fio_json.merged_clat_percentiles(data, PERCENTILES)
    for p, v in pcts.items():
        out[f"clat_{p}_us"] = v
    out["percentiles_from"] = how
    out.update(issued.as_figures(issued.counts(data)))
    return out


# ------------------------------------------------------ context

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

    def kernel_where(self, path, modules):
        """'native' or 'guest' for the kernel path PATH that needs MODULES,
        per --kernel and what this kernel has; raises Skip when neither can
        work."""
        mode = self.args.kernel
        if self.in_guest:
            return "native"
        missing = self.modules_missing(modules)
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
            relay = servers.tcp_to_unix(sock, log=self.server_log or self.out("servers.log"),
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


# --------------------------------------------------- the target

def start_target(ctx, stack):
    a = ctx.args
    if a.uri:
        ctx.target, ctx.target_kind = a.uri, "uri"
        ctx.target_desc = f"the NBD server at {a.uri}"
        return
    ctx.target_kind = "default"
    sock = os.path.join(ctx.tmp, "nbd.sock")
    store = a.store or "memory"
    ctx.server_log = open(ctx.out("servers.log"), "a")
    stack.callback(ctx.server_log.close)
    if a.nbd_shim and os.access(a.nbd_shim, os.X_OK):
        srv = servers.nbd_shim(a.nbd_shim, "standard", store=store,
                               size=None if store.startswith("file:") else a.size,
                               socket=sock, log=ctx.server_log, log_header=True,
                               timeline=timeline_runs.servers_dir(ctx) if a.timeline else None)
        ctx.target_desc = (f"nbd-shim --profile standard --store {store} "
                           f"--size {a.size} on {sock}")
    elif store == "memory" and shutil.which("nbdkit"):
        srv = servers.nbdkit("memory", str(a.size), socket=sock, log=ctx.server_log,
                             log_header=True)
        ctx.target_desc = f"nbdkit memory {a.size} on {sock} (nbd-shim is not built)"
    else:
        raise SystemExit(f"compare: no server to start: nbd-shim is missing ({a.nbd_shim}): "
                         f"{INSTALL['nbd-shim']}; or give --uri")
    stack.callback(srv.stop)
    ctx.servers.append(srv)
    ctx.target = srv.uri
    log(f"target: {ctx.target_desc}")


# ------------------------------------------------------ fio run

def run_job(ctx, path, overrides, drop=frozenset(), env=None, watch=(), keep=(), device=None):
    """Run the job for PATH with OVERRIDES; WATCH: pids whose CPU counts
    as the path's; KEEP: job options of OVERRIDDEN the job keeps; DEVICE:
    the block device it runs on (kernel paths). Returns the result's
    figures (with --timeline, its phases as "timeline")."""
    ov = dict(overrides)
    tl = timeline_runs.CompareRun(ctx, path) if ctx.args.timeline else None
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
    before = {p: procs.proc_cpu_ticks(p) for p in watch}
    m0 = machine_ticks()
    t0 = time.monotonic()
    timeout = ctx.seconds * (6 if ctx.args.as_written else 3) + 120
    traced = tl.around_fio({"device": device, "server_pids": watch, "jobfile": jobfile,
                            "seconds": ctx.seconds, "round": ctx.round}) if tl \
        else contextlib.nullcontext()
    try:
        with traced:
            fio_json.run_fio(["--output-format=json+", "--eta=never", jobfile], json=False,
                             env=env, timeout=timeout, fio=ctx.fio, output=out,
                             log=errlog, cwd=ctx.tmp)
    except fio_json.FioError as e:
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
    after = {p: procs.proc_cpu_ticks(p) for p in watch}
    data = fio_json.load_fio_json(out)
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
            s.update(kernel_shares.figures(f.read(), s["ios"]))
    except OSError:
        s.update(dict.fromkeys(kernel_shares.KEYS.values()))
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


def run_cmd(argv, what, timeout=60):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise PathFailed(f"{what} failed ({procs.status_text(r.returncode)}): "
                         f"{(r.stderr or r.stdout).strip()[-400:]}; command: "
                         f"{' '.join(argv)}")
    return r.stdout.strip()
