"""The measuring of scripts/bench: the placements (pinned or free), the
servers of a placement (scripts/servers.py starts them), waiting for a
quiet machine, the CPU-speed probe, one measured run of each kind of client
(fio through fio_json.run_fio, pipe-probe, ring-client, nbdcopy) with the
server's CPU around it, the rotation of the clients round by round, and
the records they make (benchlib.Records). What is measured, section by
section, is bench_sections.SECTIONS; the command around it (options, the
run's header, the report and the page) is bench_cli.py.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import fio_json  # noqa: E402
import procs  # noqa: E402
import servers  # noqa: E402
import stats  # noqa: E402
import tls  # noqa: E402

QUIET_PCT = 15          # a CPU busier than this is a busy machine
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A run cannot go on; the message says why and what to do."""


# ------------------------------------------------------------ the machine

def cpu_times():
    """{cpuN: (total, idle + iowait)} from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3:4].isdigit():
                name, *ticks = line.split()
                ticks = [int(t) for t in ticks]
                out[name] = (sum(ticks), ticks[3] + ticks[4])
    return out


def busiest_cpu_pct(interval=0.5):
    """The highest busy share (%) of any CPU over INTERVAL seconds."""
    a = cpu_times()
    time.sleep(interval)
    b = cpu_times()
    busiest = 0.0
    for cpu, (t1, i1) in b.items():
        t0, i0 = a.get(cpu, (t1, i1))
        dt, di = t1 - t0, i1 - i0
        if dt > 0:
            busiest = max(busiest, (dt - di) * 100.0 / dt)
    return busiest


def cpu_probe(cpu=None, loops=1500000):
    """Milliseconds a fixed loop takes in this process (on CPU CPU when
    given). These VMs' CPUs switch between two speeds (about 1.8x apart)
    every few seconds whatever runs on them; the probe before and after
    each run (their mean: speed_probe_ms, in the report's rounds) says
    which speed the machine was at. Scaling the figures by it did not make
    them steadier (the speed also changes within a run): it is context."""
    saved = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    try:
        t = time.perf_counter()
        x = 0
        for i in range(loops):
            x += i
        return round((time.perf_counter() - t) * 1e3, 1)
    finally:
        if cpu is not None:
            os.sched_setaffinity(0, saved)


def timed_run(argv, stdout, stderr):
    """Run ARGV, its output to the files STDOUT and STDERR: (exit status,
    its user + system CPU seconds)."""
    with open(stdout, "w") as out, open(stderr, "w") as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        except OSError as e:
            raise BenchError(f"cannot run {argv[0]}: {e}")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def in_turn(round_no, runs):
    """RUNS (callables) one after the other, the order rotated by one each
    round: round 1 A B C, round 2 B C A, round 3 C A B. Over as many rounds
    as there are runs each takes each place once. In a fixed order the
    later runs of a round came out slower on these VMs."""
    n = len(runs)
    for i in range(n):
        runs[(i + round_no - 1) % n]()


def tail(path, lines=5):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# ------------------------------------------------------------ the run

class Bench:
    """One run: the options, the records, and the state of the placement
    being measured (its pinning, scratch directory and servers)."""

    def __init__(self, opts, tmp):
        self.o = opts
        self.records = benchlib.Records()
        self.tmp_base = tmp
        self.tmp = tmp
        self.section = None
        self.suffix = ""
        self.pin_server = self.pin_client = None
        self.servers = []
        self.shared = {}            # servers the sections of a placement share
        self.runs_total = self.runs_busy = 0
        self.tls = None

    # --- records

    def record(self, kind, sid, *fields):
        """A section's record: its id SID@free in the free placement; a
        section record also names the bench section, for the re-run
        command."""
        fields = (sid + self.suffix,) + fields
        if kind == "section":
            fields += (self.section,)
        self.records.add(kind, *fields)

    def value(self, sid, label, round_no, metric, v):
        self.record("value", sid, label, round_no, metric, v)

    def derive_diff(self, sid, label, num, den, metric):
        """LABEL's rounds of METRIC in section SID: NUM's less DEN's, round
        by round (stats.paired_differences), recorded as values like any
        client's, so that a target can be a ratio of them (the engine's own
        CPU per I/O, fio's null engine's taken away, over ring-client's).
        The differences, or [] when NUM and DEN did not run every round."""
        vals = self.records.values.get(sid + self.suffix, {})
        ds = stats.paired_differences(vals.get(num, {}).get(metric, []),
                                      vals.get(den, {}).get(metric, []))
        for r, d in enumerate(ds, 1):
            self.value(sid, label, r, metric, d)
        return ds

    def say(self, sid, label, round_no, text):
        print(f"  {sid:<17} {label:<15} round {round_no}: {text}", flush=True)

    # --- placements and servers

    def place(self, placement, section):
        """Run what follows pinned (servers on CPU 0, clients on CPU 1) or
        free, in a scratch directory of its own, its servers afresh."""
        self.placement, self.section = placement, section
        pinned = placement == "pinned"
        self.pin_server, self.pin_client = (0, 1) if pinned else (None, None)
        self.suffix = "" if pinned else "@free"
        self.tmp = os.path.join(self.tmp_base, f"{section}.{placement}")
        os.makedirs(os.path.join(self.tmp, "json"), exist_ok=True)
        self.shared = {}

    def path(self, name):
        return os.path.join(self.tmp, name)

    def start(self, factory, *args, log, **kw):
        """A server started by the servers.py function FACTORY on the server
        CPU, its output in LOG (in the placement's directory); stopped with
        the placement."""
        srv = factory(*args, pin=self.pin_server, log=self.path(log), **kw)
        self.servers.append(srv)
        return srv

    def need(self, key, start):
        """The server KEY of this placement, started by START() the first
        time a section needs it."""
        if key not in self.shared:
            self.shared[key] = start()
        return self.shared[key]

    def stop_servers(self):
        servers.stop_all(self.servers)
        self.servers = []
        self.shared = {}

    def client_died(self, what):
        """A client failed: the last lines of each server's log."""
        text = []
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith(".log") and name not in ("fio.log", "prefill.log",
                                                      "nbdcopy.log"):
                t = tail(self.path(name))
                if t:
                    text.append(f"--- the last lines of {name}:\n{t}")
        raise BenchError("".join(text) + what)

    # --- around each run

    def wait_quiet(self):
        """Wait up to --quiet-wait s for every CPU to be under QUIET_PCT
        busy: other work on the machine skews the figures."""
        if self.o.quiet_wait <= 0:
            return
        self.runs_total += 1
        waited = 0
        while True:
            busy = busiest_cpu_pct()
            if busy <= QUIET_PCT:
                return
            if waited >= self.o.quiet_wait:
                self.runs_busy += 1
                print(f"  (machine still busy, {busy:.0f}% on one CPU: running anyway)")
                return
            time.sleep(1.5)
            waited += 2

    def speed(self):
        return cpu_probe(self.pin_client) if self.o.speed_probe else None

    def server_ticks(self, server):
        if server is None:
            return None
        t = procs.proc_cpu_ticks(server.pid)
        if t is None:
            raise BenchError(f"server {server.what} ({server.pid}) has gone")
        return t

    def server_end(self, sid, label, round_no, server, ticks, ios):
        """Record the server's CPU over a run of TICKS clock ticks:
        server_cpu_us_per_io and server_cpu_pct (over --runtime); the
        note for the progress line."""
        if server is None:
            return ""
        us = ticks / CLK_TCK * 1e6 / ios if ios > 0 else 0.0
        pct = ticks / CLK_TCK / self.o.runtime * 100
        self.value(sid, label, round_no, "server_cpu_us_per_io", us)
        self.value(sid, label, round_no, "server_cpu_pct", pct)
        return f", server {us:.3f} us CPU/IO ({pct:.0f}%)"

    # --- fio

    def fio_timed(self, sid, tag, round_no, args, server=None, env=None):
        """One time-based fio run on the client CPU, ARGS after the options
        every run shares: (fio's JSON, the CPU probe's mean, the server's
        ticks over it). A fio killed by a signal from outside is run once
        more."""
        out = self.path(f"json/{sid}{self.suffix}-{tag}-{round_no}.json")
        argv = ["--time_based", f"--runtime={self.o.runtime}", "--norandommap",
                "--randrepeat=0"] + list(args)
        for attempt in (1, 2):
            self.wait_quiet()
            p0 = self.speed()
            t0 = self.server_ticks(server)
            run = fio_json.run_fio(argv, env=env, output=out, log=self.path("fio.log"),
                                  pin=self.pin_client, check=False)
            if not (run.returncode < 0 and attempt == 1):
                break
            print(f"  ({sid} {tag} round {round_no}: fio killed by signal "
                  f"{-run.returncode}, retrying)")
        if run.returncode != 0:
            said = tail(self.path("fio.log"), 20)
            if os.path.exists(out):
                said += fio_json.fio_messages(out)
            self.client_died(f"{said}fio failed: {sid}, {tag}, round {round_no} "
                             f"(exit status {run.returncode}; its output above)")
        ticks = self.server_ticks(server) - t0 if server is not None else None
        p1 = self.speed()
        return run.data, (None if p0 is None else round((p0 + p1) / 2, 1)), ticks

    def fio_record(self, sid, label, round_no, summary, speed, server=None, ticks=None):
        if speed is not None:
            self.value(sid, label, round_no, "speed_probe_ms", speed)
        for metric, v in summary.items():
            self.value(sid, label, round_no, metric, v)
        note = self.server_end(sid, label, round_no, server, ticks, summary["ios"])
        self.say(sid, label, round_no,
                 f"{summary['iops'] / 1000:.1f}k IOPS {summary['cpu_us_per_io']:.3f} us CPU/IO "
                 f"clat {summary['clat_mean_us']:.2f} us{note}")

    def fio(self, sid, label, round_no, args, server=None, env=None):
        """One fio run of one job (ARGS: the engine, the target, the
        workload), recorded as LABEL's in round ROUND_NO of section SID."""
        data, speed, ticks = self.fio_timed(sid, label, round_no,
                                            ["--group_reporting", f"--name={sid}"] + list(args),
                                            server, env)
        summary = fio_json.fio_summary(data, f"fio's output for {sid}, {label}")
        self.fio_record(sid, label, round_no, summary, speed, server, ticks)

    def fio_jobs(self, sid, round_no, every, args, server=None):
        """One fio run whose jobs (--name=LABEL in ARGS) run side by side:
        each job's figures as its LABEL's, the run's as EVERY's (with the
        server's CPU). Jobs in one run share every change of the VM's
        speed, which runs taken in turn do not."""
        labels = [a.split("=", 1)[1] for a in args if a.startswith("--name=")]
        data, speed, ticks = self.fio_timed(sid, every, round_no, args, server)
        for label in labels:
            s = fio_json.fio_summary(data, f"fio's output for {sid}", jobname=label)
            self.fio_record(sid, label, round_no, s, speed)
        s = fio_json.fio_summary(data, f"fio's output for {sid}", all_jobs=True)
        self.fio_record(sid, every, round_no, s, speed, server, ticks)

    def engine_args(self, uri, *args):
        return [f"--ioengine=external:{self.o.engine}", f"--uri={uri}"] + \
            list(self.o.engine_opts) + list(args)

    def prefill(self, uri):
        """Write the whole store once (unmeasured), so that the reads
        measured later find its pages in place."""
        run = fio_json.run_fio(["--name=prefill", f"--ioengine=external:{self.o.engine}",
                               f"--uri={uri}", "--rw=write", "--bs=1m", "--iodepth=8",
                               f"--size={self.o.tcmu_size}"], json=False,
                              log=self.path("prefill.log"), pin=self.pin_client, check=False)
        if run.returncode != 0:
            raise BenchError(f"{tail(self.path('prefill.log'), 20)}prefilling {uri} failed "
                             "(above)")

    # --- the lean clients

    def pin(self, argv):
        return (["taskset", "-c", str(self.pin_client)] if self.pin_client is not None
                else []) + argv

    def lean_record(self, sid, label, round_no, iops, cpu_s, server, ticks):
        """A lean client's run of --runtime s (pipe-probe, ring-client):
        its IOPS, its CPU per I/O from its user + system seconds, and the
        server's."""
        cpu = cpu_s * 1e6 / (iops * self.o.runtime) if iops else 0.0
        self.value(sid, label, round_no, "iops", iops)
        self.value(sid, label, round_no, "cpu_us_per_io", cpu)
        note = self.server_end(sid, label, round_no, server, ticks,
                               int(iops * self.o.runtime))
        self.say(sid, label, round_no, f"{iops / 1000:.1f}k IOPS {cpu:.3f} us CPU/IO{note}")

    def probe_once(self, where, qd, bs, mix, spin, server):
        """One pipe-probe run: (IOPS, its CPU seconds, the server's
        ticks), or None when it failed."""
        self.wait_quiet()
        t0 = self.server_ticks(server)
        argv = [self.o.pipe_probe, where, "-q", str(qd), "-b", str(bs)]
        argv += ["-m", str(mix)] if mix else []
        argv += ["-t", str(self.o.runtime)] + (["-p"] if spin else [])
        rc, cpu_s = timed_run(self.pin(argv), self.path("probe.out"), self.path("probe.err"))
        if rc != 0:
            return None
        with open(self.path("probe.out")) as f:
            iops = float(f.read().strip())
        ticks = self.server_ticks(server) - t0 if server is not None else None
        return iops, cpu_s, ticks

    def probe(self, sid, label, round_no, where, qd=64, bs=4096, mix=None, server=None):
        """pipe-probe on WHERE (unix:PATH or tcp:HOST:PORT), reads of BS
        (MIX: the percentage of reads in a mix with writes) at QD, run
        twice, sleeping for replies and busy-polling, in turn first: the
        faster run is the limit (a client that sleeps pays a wake-up per
        batch of replies, one that spins pays none but takes a CPU)."""
        ways = ["sleeping", "spinning"]
        if round_no % 2 == 0:
            ways.reverse()
        best = None
        for w in ways:
            r = self.probe_once(where, qd, bs, mix, w == "spinning", server)
            if r is None:
                self.client_died(f"{tail(self.path('probe.err'))}pipe-probe ({w}) failed: "
                                 f"{sid}, {label}, round {round_no}")
            if best is None or r[0] > best[0]:
                best = r + (w,)
        iops, cpu_s, ticks, way = best
        self.value(sid, label, round_no, "bw_mib", iops * bs / 2**20)
        self.lean_record(sid, label, round_no, iops, cpu_s, server, ticks)
        print(f"    (the {way} probe was the faster)")

    def probe_qd1(self, sid, label, round_no, where):
        """pipe-probe -q 1 -p (busy-polling, no fio): the lowest QD1
        latency any client gets from the server, as lat_mean_us (1 /
        IOPS)."""
        self.wait_quiet()
        rc, _ = timed_run(self.pin([self.o.pipe_probe, where, "-q", "1", "-b", "4096", "-p",
                                    "-t", str(self.o.runtime)]),
                          self.path("probe.out"), self.path("probe.err"))
        if rc != 0:
            self.client_died(f"{tail(self.path('probe.err'))}pipe-probe failed: {sid}, "
                             f"{label}, round {round_no}")
        with open(self.path("probe.out")) as f:
            iops = float(f.read().strip())
        self.value(sid, label, round_no, "iops", iops)
        self.value(sid, label, round_no, "lat_mean_us", 1e6 / iops)
        self.say(sid, label, round_no, f"{1e6 / iops:.1f} us per read")

    def ring_client(self, sid, label, round_no, sock, server=None):
        """ring-client --bench, 4 KiB random reads at QD32."""
        self.wait_quiet()
        t0 = self.server_ticks(server)
        out = self.path("ring-client.out")
        rc, cpu_s = timed_run(self.pin([self.o.ring_client, "--socket", sock, "--bench",
                                        str(self.o.runtime), "--qd", "32", "--bs", "4096"]),
                              out, out)
        ticks = self.server_ticks(server) - t0 if server is not None else None
        iops = None
        with open(out, errors="replace") as f:
            for line in f:
                if line.startswith("iops "):
                    iops = float(line.split()[1])
        if rc != 0 or iops is None:
            self.client_died(f"{tail(out)}ring-client failed: {sid}, {label}, round {round_no}")
        self.lean_record(sid, label, round_no, iops, cpu_s, server, ticks)

    def nbdcopy(self, sid, round_no, uri):
        """Read the whole server with nbdcopy --no-extents, timed."""
        self.wait_quiet()
        log = self.path("nbdcopy.log")
        t0 = time.monotonic()
        rc, _ = timed_run(self.pin(["nbdcopy", "--no-extents", uri, "null:"]), log, log)
        secs = time.monotonic() - t0
        if rc != 0:
            raise BenchError(f"{tail(log)}nbdcopy failed (above)")
        self.value(sid, "nbdcopy", round_no, "seconds", secs)
        self.value(sid, "nbdcopy", round_no, "bw_mib", self.o.size_bytes / 2**20 / secs)
        self.say(sid, "nbdcopy", round_no, f"{secs:.6f} s for {self.o.size}")

    # --- TLS credentials, made once per run

    def tls_keys(self):
        """(certificates directory, PSK file, a HOME with libnbd's client
        certificates for fio's nbd engine)."""
        if self.tls is None:
            d = os.path.join(self.tmp_base, "tls")
            self.tls = (tls.tls_certificates(d),
                        tls.tls_psk(os.path.join(self.tmp_base, "tls.psk"), user="torus"),
                        tls.libnbd_home(os.path.join(self.tmp_base, "tls-home"), d))
        return self.tls
