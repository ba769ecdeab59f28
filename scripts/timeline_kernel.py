#!/usr/bin/env python3
"""The kernel paths' timeline (issue 23): where one I/O's time goes inside
the kernel, measured by bpftrace on tracepoints (no kprobes: the programs in
scripts/bpf/, one per path, read only what the tracepoints carry).

    ok, why = supported(path)
    with trace(path, outdir, info) as t:   # around the fio run
        ...
    t.phases()      # the phase summary list (docs/timeline.md's schema)
    t.cost_note()   # one line: what the tracing cost

info is a dict: "device" (the block device fio runs on, e.g. /dev/loop3)
is required; the rest (fio's pid, the servers' pids...) is only recorded.
In outdir: <path>.bpftrace.txt and .err (bpftrace's output) and
<path>.kernel-timeline.json (info, the phases, the notes, the cost line).

Each phase's durations go into a log-linear histogram inside the kernel (64
buckets per power of two, at most 1/64 = 1.6% wide), so the kernel sends
nothing to userspace per I/O; bpftrace prints the maps when it is stopped,
and timeline_hist.py reads them into the phases.

From the command line (root):
    timeline_kernel.py check PATH
    timeline_kernel.py trace PATH DEVICE OUTDIR -- COMMAND...
        trace COMMAND (e.g. fio) on DEVICE, print the phases as JSON
"""

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

import procs
from timeline_hist import parse_output, summarize

HERE = os.path.dirname(os.path.abspath(__file__))
BPF_DIR = os.path.join(HERE, "bpf")
TRACEFS = "/sys/kernel/tracing"
BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"
# bpftrace's maps hold at most this many keys; the histograms need more than
# its default (4096) when every phase spreads over several powers of two.
MAP_KEYS = "65536"
ATTACH_SECONDS = 120
STOP_SECONDS = 30
RESIGNAL_SECONDS = 0.5
FIX_DEPS = "scripts/deps.sh installs it"

# Phases per path: the program's phase number, name, where. In the order of
# the I/O's life; the total last. Numbers are the .bt files' (see there).
LOOP_PHASES = [
    (0, "submit", "kernel"),
    (1, "block queue", "kernel"),
    (2, "loop to FUSE", "kernel"),
    (3, "nbdfuse and server", "server-and-wire"),
    (4, "FUSE to loop", "kernel"),
    (5, "reap", "kernel"),
    (6, "total", "total"),
]
# Issued -> completed: 2, 3 and 4 in one, when FUSE requests cannot be
# linked to loop requests.
LOOP_UNLINKED = (7, "loop, FUSE, nbdfuse and server", "server-and-wire")

NBD_PHASES = [
    (0, "submit", "kernel"),
    (1, "block queue", "kernel"),
    (2, "nbd send", "kernel"),
    (3, "server and wire", "server-and-wire"),
    (4, "nbd receive", "kernel"),
    (5, "reap", "kernel"),
    (6, "total", "total"),
]

BLOCK_PHASES = [
    (0, "submit", "kernel"),
    (1, "block queue", "kernel"),
    (2, "device", "server-and-wire"),
    (5, "reap", "kernel"),
    (6, "total", "total"),
]

COMMON_TPS = ["syscalls:sys_enter_io_submit", "syscalls:sys_exit_io_submit",
              "syscalls:sys_enter_io_getevents", "syscalls:sys_exit_io_getevents",
              "syscalls:sys_enter_getppid",
              "block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"]

PATHS = {
    "kernel-loop": {
        "program": "kernel-loop.bt",
        "tracepoints": COMMON_TPS + ["fuse:fuse_request_send", "fuse:fuse_request_end"],
        "phases": LOOP_PHASES,
        "missing": "this kernel has no FUSE tracepoints: they came with recent kernels "
                   "(Debian 12's 6.1 has none, 6.18 has them); modprobe fuse if it is a "
                   "module, else boot a newer kernel",
    },
    "kernel-nbd": {
        "program": "kernel-nbd.bt",
        "tracepoints": COMMON_TPS + ["nbd:nbd_send_request", "nbd:nbd_header_sent",
                                     "nbd:nbd_header_received"],
        "phases": NBD_PHASES,
        "missing": "this kernel has no nbd tracepoints until nbd.ko is loaded (modprobe "
                   "nbd, or scripts/nbd-kernel attach); this machine's kernel has no nbd.ko "
                   "at all: kernel-nbd runs inside scripts/guest, where the timeline is "
                   "functional only (TCG)",
    },
    "kernel-tcmu": {
        "program": "kernel-block.bt",
        "tracepoints": COMMON_TPS,
        "phases": BLOCK_PHASES,
        "missing": "",
    },
}


def stuck_where(pid):
    """What a process that does not exit is doing: its state and the
    kernel function it waits in (/proc), for the message."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read().strip() or "-"
    except OSError as e:
        return f"its state unreadable: {e.strerror}"
    return f"state {state}, waiting in {wchan}"


class TraceError(Exception):
    """A trace could not start or its output could not be read; the message
    says why and what to do."""


def _run(argv, timeout=60):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    return r, None


def tracefs_ready():
    """Mount tracefs if it is not; (True, "") or (False, why)."""
    if os.path.isdir(os.path.join(TRACEFS, "events")):
        return True, ""
    if not os.path.isdir(TRACEFS):
        return False, f"{TRACEFS} does not exist (a kernel without tracefs: CONFIG_TRACING)"
    r, err = _run(["mount", "-t", "tracefs", "nodev", TRACEFS])
    if r is None or r.returncode != 0 or not os.path.isdir(os.path.join(TRACEFS, "events")):
        said = err or (r.stderr.strip() if r else "")
        return False, (f"cannot mount tracefs on {TRACEFS}: {said or 'no events directory'} "
                       f"(run as root: mount -t tracefs nodev {TRACEFS})")
    return True, ""


def listed_tracepoints(patterns):
    """The tracepoints bpftrace -l lists for PATTERNS (e.g. block:*)."""
    found = set()
    for pat in patterns:
        r, err = _run(["bpftrace", "-l", f"tracepoint:{pat}"])
        if r is None:
            raise TraceError(f"bpftrace -l failed: {err}")
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("tracepoint:"):
                found.add(line[len("tracepoint:"):])
    return found


def supported(path):
    """(True, "") if PATH's timeline can be traced on this kernel, else
    (False, what is missing and the fix)."""
    spec = PATHS.get(path)
    if spec is None:
        return False, (f"no kernel timeline for {path}: only {', '.join(sorted(PATHS))} "
                       "(the engine paths have their own stamps)")
    prog = os.path.join(BPF_DIR, spec["program"])
    if not os.path.exists(prog):
        return False, f"not written yet: {prog} does not exist"
    if not shutil.which("bpftrace"):
        return False, f"bpftrace is not installed ({FIX_DEPS})"
    if os.geteuid() != 0:
        return False, "bpftrace needs root: run as root"
    ok, why = tracefs_ready()
    if not ok:
        return False, why
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return False, "this kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF)"
    groups = sorted({tp.split(":")[0] + ":*" for tp in spec["tracepoints"]})
    try:
        have = listed_tracepoints(groups)
    except TraceError as e:
        return False, str(e)
    missing = [tp for tp in spec["tracepoints"] if tp not in have]
    if missing:
        why = f"bpftrace -l does not list tracepoint:{', tracepoint:'.join(missing)}"
        if spec["missing"] and any(not tp.startswith(("block:", "syscalls:")) for tp in missing):
            why += f": {spec['missing']}"
        else:
            why += " (CONFIG_FTRACE_SYSCALLS and the block layer's tracepoints are needed)"
        return False, why
    return True, ""


# ----------------------------------------------------------- devices

def kernel_dev(rdev):
    """A dev_t as the kernel's tracepoints carry it (major << 20 | minor)."""
    return (os.major(rdev) << 20) | os.minor(rdev)


def block_dev(device):
    """The kernel dev_t of the block device DEVICE (a path)."""
    try:
        st = os.stat(device)
    except OSError as e:
        raise TraceError(f"cannot stat the device {device}: {e.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise TraceError(f"{device} is not a block device (info['device'] must name the "
                         "device fio runs on, e.g. /dev/loop3)")
    return kernel_dev(st.st_rdev)


def mount_fstype(dev):
    """The filesystem type of the mount whose st_dev is DEV, from mountinfo."""
    want = f"{os.major(dev)}:{os.minor(dev)}"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 2 and fields[2] == want:
                return right.split()[0]
    return None


def mounted(device):
    """The mount point of a filesystem on the block device DEVICE, or None."""
    try:
        rdev = os.stat(device).st_rdev
    except OSError:
        return None
    want = f"{os.major(rdev)}:{os.minor(rdev)}"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[2] == want:
                return fields[4]
    return None


def loop_fuse_conn(device):
    """The FUSE connection (kernel dev_t) behind the loop device DEVICE."""
    name = os.path.basename(os.path.realpath(device))
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            backing = f.read().strip()
    except OSError:
        raise TraceError(f"{device} is not a loop device with a backing file "
                         "(losetup --direct-io=on /dev/loopN FILE first)") from None
    try:
        st = os.stat(backing)
    except OSError as e:
        raise TraceError(f"cannot stat {device}'s backing file {backing}: {e.strerror}") from None
    fstype = mount_fstype(st.st_dev)
    if not fstype or not fstype.startswith("fuse"):
        raise TraceError(f"{device}'s backing file {backing} is on {fstype or 'no known mount'}, "
                         "not on FUSE: kernel-loop's timeline follows the loop device into "
                         "nbdfuse's FUSE mount")
    return kernel_dev(st.st_dev)


# ----------------------------------------------------------- the cost

def prog_stats(pid):
    """Sum of run_time_ns, run_cnt and recursion_misses over the BPF programs
    process PID holds (run_time_ns counts only while bpf_stats_enabled)."""
    tot = {"run_time_ns": 0, "run_cnt": 0, "recursion_misses": 0}
    fddir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fddir)
    except OSError:
        return tot
    for fd in fds:
        try:
            if "bpf-prog" not in os.readlink(f"{fddir}/{fd}"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    key, _, val = line.partition(":")
                    if key in tot:
                        tot[key] += int(val.strip())
        except (OSError, ValueError):
            continue
    return tot


def cpu_seconds(pid):
    """User + system CPU seconds of process PID so far (0 when it has gone)."""
    return (procs.proc_cpu_ticks(pid) or 0) / os.sysconf("SC_CLK_TCK")


def cost_text(stats, ios, total_us, cpu_s, untraced_us=None, traced_us=None):
    """The one-line cost statement."""
    if ios <= 0:
        return "tracing cost: no I/O was traced"
    per = stats["run_time_ns"] / ios / 1000
    text = f"tracing cost: {per:.1f} µs of BPF per I/O"
    if total_us:
        text += f" ({100 * per / total_us:.1f}% of its {total_us:.1f} µs)"
    text += f", bpftrace itself {cpu_s:.2f} s of CPU while tracing"
    if stats["recursion_misses"]:
        text += (f", {stats['recursion_misses']} probe runs skipped (a probe fired while "
                 "another ran on that CPU)")
    if untraced_us and traced_us:
        text += (f"; fio's mean latency {traced_us:.1f} µs traced vs {untraced_us:.1f} µs "
                 f"untraced ({traced_us / untraced_us:.2f}x)")
    return text


# ----------------------------------------------------------- tracing

def program_args(path, info):
    """The .bt file and its positional arguments for PATH."""
    dev = info.get("device")
    if not dev:
        raise TraceError("trace() needs info['device'], the block device fio runs on")
    args = [str(block_dev(dev))]
    if path == "kernel-loop":
        args.append(str(loop_fuse_conn(dev)))
    elif path == "kernel-nbd":
        m = re.fullmatch(r"nbd(\d+)", os.path.basename(os.path.realpath(dev)))
        if not m:
            raise TraceError(f"{dev} is not an NBD device (/dev/nbdN)")
        args.append(m.group(1))
    args.append(str(os.getpid()))
    return os.path.join(BPF_DIR, PATHS[path]["program"]), args


def set_bpf_stats(value):
    """Write VALUE to kernel.bpf_stats_enabled; the old value, or None."""
    try:
        with open(BPF_STATS) as f:
            old = f.read().strip()
        if old != value:
            with open(BPF_STATS, "w") as f:
                f.write(value)
        return old
    except OSError:
        return None


class Trace:
    """One bpftrace run around a fio run (use trace())."""

    def __init__(self, path, outdir, info):
        self.path = path
        self.outdir = outdir
        self.info = dict(info)
        self.proc = None
        self.out_name = os.path.join(outdir, f"{path}.bpftrace.txt")
        self.err_name = os.path.join(outdir, f"{path}.bpftrace.err")
        self.parsed = None
        self.stats = None
        self.cpu = 0.0
        self.old_stats = None
        self.untraced_us = None
        self.traced_us = None
        self.error = None
        self.fs = None
        self.stuck = None

    def said(self):
        with open(self.err_name, errors="replace") as f:
            lines = [ln for ln in f.read().splitlines()
                     if ln.strip() and "RLIMIT_MEMLOCK" not in ln]
        return " / ".join(lines[-3:]) or "it said nothing"

    def start(self):
        if self.path not in PATHS:
            raise TraceError(supported(self.path)[1])
        prog, args = program_args(self.path, self.info)
        self.fs = mounted(self.info["device"])
        os.makedirs(self.outdir, exist_ok=True)
        self.old_stats = set_bpf_stats("1")
        env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX=MAP_KEYS)
        with open(self.out_name, "w") as out, open(self.err_name, "w") as err:
            self.proc = subprocess.Popen(["bpftrace", "-B", "line", prog] + args,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         env=env)
        # bpftrace says "Attaching N probes" before it attaches them; the
        # program's last probe, on getppid from this process, answers
        # "ready" once every probe before it is attached.
        deadline = time.monotonic() + ATTACH_SECONDS
        while True:
            with open(self.out_name, errors="replace") as f:
                text = f.read()
            if "\nready" in text or text.startswith("ready"):
                self.cpu = cpu_seconds(self.proc.pid)
                return
            if self.proc.poll() is not None:
                self.restore()
                raise TraceError(f"bpftrace exited ({self.proc.returncode}) before attaching: "
                                 f"{self.said()}")
            if time.monotonic() > deadline:
                self.stop_process()
                raise TraceError(f"bpftrace did not attach within {ATTACH_SECONDS} s: "
                                 f"{self.said()}")
            if "Attaching" in text:
                os.getppid()
            time.sleep(0.02)

    def stop_process(self):
        """Ask bpftrace to print its summary and exit. Its loop (0.17) sees
        the signal only if it lands inside its 100 ms epoll_wait; one that
        lands between two waits is lost, so it is sent again until bpftrace
        goes. SIGTERM, not SIGINT: once it prints its maps, a second SIGINT
        would kill it mid-summary; SIGTERM only sets the flag again."""
        if self.proc and self.proc.poll() is None:
            deadline = time.monotonic() + STOP_SECONDS
            while self.proc.poll() is None and time.monotonic() < deadline:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(RESIGNAL_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                self.stuck = stuck_where(self.proc.pid)
                self.proc.kill()
                self.proc.wait()
        self.restore()

    def restore(self):
        if self.old_stats is not None and self.old_stats != "1":
            set_bpf_stats(self.old_stats)
        self.old_stats = None

    def stop(self):
        self.stats = prog_stats(self.proc.pid)
        self.cpu = cpu_seconds(self.proc.pid) - self.cpu
        self.stop_process()
        with open(self.out_name, errors="replace") as f:
            self.parsed = parse_output(f.read())
        if self.parsed["end"] is None and self.stuck:
            raise TraceError(f"bpftrace did not exit within {STOP_SECONDS} s of SIGTERM "
                             f"({self.stuck}) and was killed: {self.said()}")
        if self.parsed["end"] is None:
            raise TraceError(f"bpftrace ended without its summary (exit "
                             f"{self.proc.returncode}): {self.said()}")
        self.write_record()

    def write_record(self):
        rec = {"path": self.path, "info": self.info, "phases": self.phases(),
               "notes": self.notes(), "cost_note": self.cost_note(),
               "counts": self.parsed["end"]}
        name = os.path.join(self.outdir, f"{self.path}.kernel-timeline.json")
        try:
            with open(name, "w") as f:
                json.dump(rec, f, indent=1, default=str)
                f.write("\n")
        except OSError as e:
            print(f"timeline_kernel: cannot write {name}: {e.strerror}", file=sys.stderr)

    def check(self):
        if self.error:
            raise TraceError(self.error)

    def phases(self):
        """The phase summary list (docs/timeline.md's schema); TraceError
        if the trace failed (the message says why)."""
        self.check()
        unlinked = LOOP_UNLINKED if self.path == "kernel-loop" else None
        phases = PATHS[self.path]["phases"]
        if self.fs:
            # fio's offsets are the files', not the device's: its reaps
            # cannot be told which request they return
            phases = [p for p in phases if p[0] not in (5, 6)]
        return summarize(self.parsed, phases, unlinked)

    def ios(self):
        total = next((p for p in self.phases() if p["where"] == "total"), None)
        if total:
            return total["count"], total["mean_us"]
        return (self.parsed["end"] or {}).get("issued", 0), None

    def notes(self):
        """What the reader must know about this trace's phases."""
        self.check()
        end = self.parsed["end"] or {}
        notes = []
        if self.path == "kernel-loop" and end.get("orphans"):
            notes.append(f"{end['orphans']} FUSE requests more than loop requests (a loop "
                         "request split into several): loop to FUSE, nbdfuse and server and "
                         "FUSE to loop are reported as one phase")
        if self.fs:
            notes.append(f"a filesystem on {self.info['device']} (mounted on {self.fs}): the "
                         "phases are its block requests', the filesystem's own included; "
                         "fio's reaps cannot be matched to them by offset, so there is no "
                         "reap and no total")
        return notes

    def set_fio_latency(self, untraced_us, traced_us):
        """fio's mean latency of the same job without and with tracing, for
        cost_note() (and the record, written again)."""
        self.untraced_us, self.traced_us = untraced_us, traced_us
        if self.parsed and not self.error:
            self.write_record()

    def cost_note(self):
        """One line: what tracing cost."""
        self.check()
        ios, total_us = self.ios()
        return cost_text(self.stats or prog_stats(0), ios, total_us, self.cpu,
                         self.untraced_us, self.traced_us)


@contextlib.contextmanager
def trace(path, outdir, info):
    """Trace PATH's kernel timeline around the block: starts bpftrace and
    waits until it is attached; on exit stops it and reads its summary.
    A tracer that fails never fails the block: the run goes on untraced and
    phases() raises TraceError saying why."""
    t = Trace(path, outdir, info)
    try:
        t.start()
    except TraceError as e:
        t.error = str(e)
    try:
        yield t
    finally:
        if t.error is None:
            try:
                t.stop()
            except TraceError as e:
                t.error = str(e)
        else:
            t.stop_process()


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        ok, why = supported(argv[1])
        print("supported" if ok else f"not supported: {why}")
        return 0 if ok else 1
    if len(argv) >= 5 and argv[0] == "trace" and "--" in argv:
        path, device, outdir = argv[1:4]
        cmd = argv[argv.index("--") + 1:]
        ok, why = supported(path)
        if not ok:
            print(f"timeline_kernel: {path}: {why}", file=sys.stderr)
            return 1
        with trace(path, outdir, {"device": device}) as t:
            rc = subprocess.run(cmd).returncode
        if t.error:
            print(f"timeline_kernel: {t.error}", file=sys.stderr)
            return 1
        json.dump({"phases": t.phases(), "notes": t.notes(), "cost": t.cost_note()},
                  sys.stdout, indent=1)
        print()
        return rc
    usage = __doc__.split("\n\n")[-1]
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
