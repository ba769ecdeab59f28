#!/usr/bin/env python3
"""scripts/timeline_kernel.py without tracing: its reading of bpftrace's
output (a captured kernel-loop run, cut down), the histogram's buckets
against the .bt files' formula, nearest-rank percentiles, the phase list
and its fallback when FUSE requests cannot be linked, the cost line, and
the errors for a device that is not the right kind or a missing bpftrace."""

import os
import re
import sys
import tempfile
import time
import unittest

from testlib import main
import timeline_kernel as tk

# What bpftrace prints at the end of a kernel-loop trace (4 KiB randread,
# depth 4), most of the histogram left out, one bucket moved into phase 1.
CAPTURED = """Attaching 11 probes...
ready
E issued 7730 linked 7730 orphans 0



@h[0, 617]: 1
@h[0, 645]: 1
@h[0, 566]: 7717
@h[2, 900]: 7000
@h[2, 901]: 719
@h[3, 1100]: 7719
@h[4, 950]: 7719
@h[5, 960]: 7719
@h[6, 1150]: 4000
@h[6, 1151]: 3719
@h[7, 1120]: 7719
@h[1, 40]: 3
"""


def bt_bucket(v):
    """The .bt files' bucket of V ns, as they compute it."""
    m, x = 0, v
    for bits in (32, 16, 8, 4, 2, 1):
        if x >= 1 << bits:
            m += bits
            x >>= bits
    return v if m < 6 else (m - 5) * 64 + (v >> (m - 6)) - 64


class Parse(unittest.TestCase):
    def test_captured(self):
        p = tk.parse_output(CAPTURED)
        self.assertEqual(p["end"], {"issued": 7730, "linked": 7730, "orphans": 0})
        self.assertEqual(sorted(p["hist"]), [0, 1, 2, 3, 4, 5, 6, 7])
        self.assertEqual(p["hist"][0], {617: 1, 645: 1, 566: 7717})
        self.assertEqual(p["hist"][2], {900: 7000, 901: 719})

    def test_no_summary(self):
        self.assertIsNone(tk.parse_output("Attaching 11 probes...\nready\n")["end"])


class Buckets(unittest.TestCase):
    def test_values_fall_in_their_bucket(self):
        values = list(range(0, 300)) + [1000, 4095, 4096, 65535, 65536, 999_999,
                                         10**9, 2**32 - 1, 2**32, 5 * 10**10]
        values += [int(1.37 ** k) for k in range(1, 80)]
        for v in values:
            b = bt_bucket(v)
            lo, hi = tk.bucket_edges(b)
            self.assertTrue(lo <= v < hi, f"{v} ns not in bucket {b} [{lo}, {hi})")
            self.assertLessEqual(hi - lo, max(1, lo / 64), f"bucket {b} wider than 1/64")

    def test_buckets_are_contiguous(self):
        for b in range(0, 64 * 40):
            self.assertEqual(tk.bucket_edges(b)[1], tk.bucket_edges(b + 1)[0], b)

    def test_programs_compute_it_so(self):
        # the formula tested above is the one every program carries
        formula = "$b = $m < 6 ? $v : ($m - 5) * 64 + ($v >> ($m - 6)) - 64;"
        for spec in tk.PATHS.values():
            prog = os.path.join(tk.BPF_DIR, spec["program"])
            if not os.path.exists(prog):
                continue
            with open(prog) as f:
                text = f.read()
            self.assertIn(formula, text, prog)
            self.assertEqual(len(re.findall(r"if \(\$x >= (\d+)\)", text)) % 6, 0, prog)


class Percentiles(unittest.TestCase):
    def test_nearest_rank(self):
        hist = {10: 50, 20: 49, 70: 1}          # 100 values
        lo, hi = tk.bucket_edges(70)
        e = tk.phase_entry("x", "kernel", 100, 100 * 15, hist)
        self.assertEqual((e["p50_us"], e["p99_us"], e["p99.9_us"]),
                         (0.01, 0.02, round((lo + hi) / 2 / 1000, 3)))
        self.assertEqual(tk.bucket_value(10), 10)
        self.assertEqual(tk.bucket_value(70), (lo + hi) / 2)

    def test_entry(self):
        e = tk.phase_entry("reap", "kernel", 4, 4000, {100: 3, 102: 1})
        self.assertEqual(e["mean_us"], 1.0)
        self.assertEqual(e["histogram"]["counts"], [3, 0, 1])
        self.assertEqual(len(e["histogram"]["edges_ns"]), 4)
        self.assertEqual(e["histogram"]["edges_ns"][0], tk.bucket_edges(100)[0])
        self.assertEqual(e["p50_us"], round(sum(tk.bucket_edges(100)) / 2 / 1000, 3))


class Summary(unittest.TestCase):
    def test_kernel_loop(self):
        phases = tk.summarize(tk.parse_output(CAPTURED), tk.LOOP_PHASES, tk.LOOP_UNLINKED)
        self.assertEqual([(p["name"], p["where"]) for p in phases], [
            ("submit", "kernel"), ("block queue", "kernel"), ("loop to FUSE", "kernel"),
            ("nbdfuse and server", "server-and-wire"), ("FUSE to loop", "kernel"),
            ("reap", "kernel"), ("total", "total")])
        self.assertEqual([p["count"] for p in phases], [7719, 3, 7719, 7719, 7719, 7719, 7719])
        # values below 64 ns are exact; above, each counts as its bucket's midpoint
        self.assertEqual(phases[1]["mean_us"], 0.04)
        lo, hi = tk.bucket_edges(1100)
        self.assertEqual(phases[3]["mean_us"], round((lo + hi) / 2 / 1000, 3))
        lo0, hi0 = tk.bucket_edges(900)
        lo1, hi1 = tk.bucket_edges(901)
        mean = (7000 * (lo0 + hi0) / 2 + 719 * (lo1 + hi1) / 2) / 7719
        self.assertEqual(phases[2]["mean_us"], round(mean / 1000, 3))
        for key in ("mean_us", "p50_us", "p99_us", "p99.9_us"):
            self.assertIn(key, phases[0])

    def test_hist_sum(self):
        self.assertEqual(tk.hist_sum({5: 2, 64: 1, 128: 2}),
                         (5, 2 * 5 + 64.5 + 2 * 129))

    def test_unlinked(self):
        text = CAPTURED.replace("orphans 0", "orphans 12")
        phases = tk.summarize(tk.parse_output(text), tk.LOOP_PHASES, tk.LOOP_UNLINKED)
        self.assertEqual([p["name"] for p in phases], [
            "submit", "block queue", "loop, FUSE, nbdfuse and server", "reap", "total"])
        lo, hi = tk.bucket_edges(1120)
        self.assertEqual(phases[2]["mean_us"], round((lo + hi) / 2 / 1000, 3))


class Cost(unittest.TestCase):
    def test_line(self):
        stats = {"run_time_ns": 25_000_000, "run_cnt": 1, "recursion_misses": 0}
        self.assertEqual(tk.cost_text(stats, 1000, 500.0, 0.01),
                         "tracing cost: 25.0 µs of BPF per I/O (5.0% of its 500.0 µs), "
                         "bpftrace itself 0.01 s of CPU while tracing")
        stats["recursion_misses"] = 3
        line = tk.cost_text(stats, 1000, 500.0, 0.01, untraced_us=400.0, traced_us=500.0)
        self.assertIn("3 probe runs skipped", line)
        self.assertTrue(line.endswith("fio's mean latency 500.0 µs traced vs 400.0 µs "
                                      "untraced (1.25x)"), line)
        self.assertEqual(tk.cost_text(stats, 0, None, 0), "tracing cost: no I/O was traced")


class Devices(unittest.TestCase):
    def test_kernel_encoding(self):
        self.assertEqual(tk.kernel_dev(os.makedev(7, 3)), (7 << 20) | 3)
        self.assertEqual(tk.kernel_dev(os.makedev(259, 70000)), (259 << 20) | 70000)

    def test_mount_type(self):
        self.assertEqual(tk.mount_fstype(os.stat("/proc").st_dev), "proc")

    def test_not_mounted(self):
        self.assertIsNone(tk.mounted("/dev/null"))
        self.assertIsNone(tk.mounted("/nonexistent"))

    def test_not_a_block_device(self):
        with tempfile.NamedTemporaryFile() as f:
            with self.assertRaisesRegex(tk.TraceError, "is not a block device"):
                tk.block_dev(f.name)
        with self.assertRaisesRegex(tk.TraceError, "cannot stat the device /nonexistent"):
            tk.block_dev("/nonexistent")

    def test_not_a_loop_device(self):
        with self.assertRaisesRegex(tk.TraceError, "not a loop device with a backing file"):
            tk.loop_fuse_conn("/dev/null")

    def test_trace_of_a_wrong_device(self):
        # the run goes on; phases() says why there are none
        with tempfile.TemporaryDirectory() as d:
            with tk.trace("kernel-loop", d, {"device": "/dev/null"}) as t:
                pass
            with self.assertRaisesRegex(tk.TraceError, "/dev/null is not a block device"):
                t.phases()
            with tk.trace("kernel-loop", d, {}) as t:
                pass
            with self.assertRaisesRegex(tk.TraceError, r"needs info\['device'\]"):
                t.cost_note()


class Supported(unittest.TestCase):
    def test_not_a_kernel_path(self):
        ok, why = tk.supported("engine-nbd")
        self.assertFalse(ok)
        self.assertEqual(why, "no kernel timeline for engine-nbd: only kernel-loop, "
                              "kernel-nbd, kernel-tcmu (the engine paths have their own stamps)")

    def test_without_bpftrace(self):
        old = os.environ["PATH"]
        with tempfile.TemporaryDirectory() as empty:
            os.environ["PATH"] = empty
            try:
                ok, why = tk.supported("kernel-loop")
            finally:
                os.environ["PATH"] = old
        self.assertFalse(ok)
        self.assertEqual(why, "bpftrace is not installed (scripts/deps.sh installs it)")

    def test_every_path_has_its_program(self):
        for path, spec in tk.PATHS.items():
            self.assertTrue(os.path.exists(os.path.join(tk.BPF_DIR, spec["program"])), path)
            nums = [p[0] for p in spec["phases"]]
            self.assertEqual(nums, sorted(nums), path)
            self.assertEqual(spec["phases"][-1][2], "total", path)


# A tracer that loses the first stop signal, as bpftrace 0.17 does when it
# lands between two of its epoll_waits; it prints its summary on the next.
LOSES_ONE = """
import signal, sys, time
seen = []
signal.signal(signal.SIGTERM, lambda *a: seen.append(1))
print("ready", flush=True)
while len(seen) < 2:
    time.sleep(0.01)
print("E issued 0 linked 0 orphans 0", flush=True)
"""

# One that never goes: it is killed, and the message says where it waited.
NEVER_GOES = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


class Stop(unittest.TestCase):
    def tracer(self, code):
        import subprocess
        d = tempfile.mkdtemp()
        t = tk.Trace("kernel-loop", d, {"device": "/dev/null"})
        with open(t.out_name, "w") as out, open(t.err_name, "w") as err:
            t.proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err)
        while "ready" not in self.said(t):
            time.sleep(0.01)
        return t

    @staticmethod
    def said(t):
        with open(t.out_name) as f:
            return f.read()

    def test_a_lost_signal_is_sent_again(self):
        t = self.tracer(LOSES_ONE)
        start = time.monotonic()
        t.stop_process()
        self.assertEqual(t.proc.returncode, 0)
        self.assertIsNone(t.stuck)
        self.assertLess(time.monotonic() - start, 5 * tk.RESIGNAL_SECONDS)
        self.assertIn("E issued 0", self.said(t))

    def test_one_that_never_goes_is_killed_and_named(self):
        old = tk.STOP_SECONDS
        tk.STOP_SECONDS = 1
        try:
            t = self.tracer(NEVER_GOES)
            t.stop_process()
        finally:
            tk.STOP_SECONDS = old
        self.assertEqual(t.proc.returncode, -9)
        self.assertRegex(t.stuck, r"^state S, waiting in \S+$")


if __name__ == "__main__":
    main()
