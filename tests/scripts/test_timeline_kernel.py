#!/usr/bin/env python3
"""scripts/timeline_kernel.py without tracing: the cost line, the errors
for a device that is not the right kind or a missing bpftrace, every path
with its program, and stopping bpftrace (its output read into phases:
test_timeline_hist.py)."""

import os
import sys
import tempfile
import time
import unittest

from testlib import main
import timeline_kernel as tk

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
