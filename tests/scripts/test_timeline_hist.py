#!/usr/bin/env python3
"""scripts/timeline_hist.py: its reading of bpftrace's output (a captured
kernel-loop run, cut down), the histogram's buckets against the .bt files'
formula (and every program carrying it), nearest-rank percentiles, the
phase list and its fallback when FUSE requests cannot be linked."""

import os
import re
import unittest

from testlib import main
import timeline_hist as th
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
        p = th.parse_output(CAPTURED)
        self.assertEqual(p["end"], {"issued": 7730, "linked": 7730, "orphans": 0})
        self.assertEqual(sorted(p["hist"]), [0, 1, 2, 3, 4, 5, 6, 7])
        self.assertEqual(p["hist"][0], {617: 1, 645: 1, 566: 7717})
        self.assertEqual(p["hist"][2], {900: 7000, 901: 719})

    def test_no_summary(self):
        self.assertIsNone(th.parse_output("Attaching 11 probes...\nready\n")["end"])


class Buckets(unittest.TestCase):
    def test_values_fall_in_their_bucket(self):
        values = list(range(0, 300)) + [1000, 4095, 4096, 65535, 65536, 999_999,
                                         10**9, 2**32 - 1, 2**32, 5 * 10**10]
        values += [int(1.37 ** k) for k in range(1, 80)]
        for v in values:
            b = bt_bucket(v)
            lo, hi = th.bucket_edges(b)
            self.assertTrue(lo <= v < hi, f"{v} ns not in bucket {b} [{lo}, {hi})")
            self.assertLessEqual(hi - lo, max(1, lo / 64), f"bucket {b} wider than 1/64")

    def test_buckets_are_contiguous(self):
        for b in range(0, 64 * 40):
            self.assertEqual(th.bucket_edges(b)[1], th.bucket_edges(b + 1)[0], b)

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
        lo, hi = th.bucket_edges(70)
        e = th.phase_entry("x", "kernel", 100, 100 * 15, hist)
        self.assertEqual((e["p50_us"], e["p99_us"], e["p99.9_us"]),
                         (0.01, 0.02, round((lo + hi) / 2 / 1000, 3)))
        self.assertEqual(th.bucket_value(10), 10)
        self.assertEqual(th.bucket_value(70), (lo + hi) / 2)

    def test_entry(self):
        e = th.phase_entry("reap", "kernel", 4, 4000, {100: 3, 102: 1})
        self.assertEqual(e["mean_us"], 1.0)
        self.assertEqual(e["histogram"]["counts"], [3, 0, 1])
        self.assertEqual(len(e["histogram"]["edges_ns"]), 4)
        self.assertEqual(e["histogram"]["edges_ns"][0], th.bucket_edges(100)[0])
        self.assertEqual(e["p50_us"], round(sum(th.bucket_edges(100)) / 2 / 1000, 3))


class Summary(unittest.TestCase):
    def test_kernel_loop(self):
        phases = th.summarize(th.parse_output(CAPTURED), tk.LOOP_PHASES, tk.LOOP_UNLINKED)
        self.assertEqual([(p["name"], p["where"]) for p in phases], [
            ("submit", "kernel"), ("block queue", "kernel"), ("loop to FUSE", "kernel"),
            ("nbdfuse and server", "server-and-wire"), ("FUSE to loop", "kernel"),
            ("reap", "kernel"), ("total", "total")])
        self.assertEqual([p["count"] for p in phases], [7719, 3, 7719, 7719, 7719, 7719, 7719])
        # values below 64 ns are exact; above, each counts as its bucket's midpoint
        self.assertEqual(phases[1]["mean_us"], 0.04)
        lo, hi = th.bucket_edges(1100)
        self.assertEqual(phases[3]["mean_us"], round((lo + hi) / 2 / 1000, 3))
        lo0, hi0 = th.bucket_edges(900)
        lo1, hi1 = th.bucket_edges(901)
        mean = (7000 * (lo0 + hi0) / 2 + 719 * (lo1 + hi1) / 2) / 7719
        self.assertEqual(phases[2]["mean_us"], round(mean / 1000, 3))
        for key in ("mean_us", "p50_us", "p99_us", "p99.9_us"):
            self.assertIn(key, phases[0])

    def test_hist_sum(self):
        self.assertEqual(th.hist_sum({5: 2, 64: 1, 128: 2}),
                         (5, 2 * 5 + 64.5 + 2 * 129))

    def test_unlinked(self):
        text = CAPTURED.replace("orphans 0", "orphans 12")
        phases = th.summarize(th.parse_output(text), tk.LOOP_PHASES, tk.LOOP_UNLINKED)
        self.assertEqual([p["name"] for p in phases], [
            "submit", "block queue", "loop, FUSE, nbdfuse and server", "reap", "total"])
        lo, hi = th.bucket_edges(1120)
        self.assertEqual(phases[2]["mean_us"], round((lo + hi) / 2 / 1000, 3))


if __name__ == "__main__":
    main()
