#!/usr/bin/env python3
"""Unit tests of scripts/benchlib.py, the records of a bench run and its
report: paired ratios against targets, and the spread target judged only
where the reference label's own spread meets it (PASS, MISS, NOT JUDGED);
the records saved as JSON and loaded again."""

import contextlib
import io
import os
import tempfile
import unittest

from testlib import main
import benchlib


def report(records):
    """The printed report for RECORDS (tuples of fields)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        benchlib.report(benchlib.Records(records))
    return out.getvalue()


def spread_section(engine, builtin):
    recs = [("section", "s", "a section"),
            ("spread", "s", "cpu_us_per_io", "torus", "<=", "1.25", "builtin"),
            ("spread", "s", "cpu_us_per_io", "builtin")]
    for i, (e, b) in enumerate(zip(engine, builtin), 1):
        recs.append(("value", "s", "builtin", i, "cpu_us_per_io", b))
        recs.append(("value", "s", "torus", i, "cpu_us_per_io", e))
    return report(recs)


class Spread(unittest.TestCase):
    def test_steady_engine_passes(self):
        out = spread_section([10, 11, 12], [20, 30, 40])
        self.assertIn("torus CPU us per I/O spread (max/min over 3 rounds) 1.20 "
                      "(target <= 1.25: PASS)", out)
        self.assertIn("targets: 1 PASS, 0 MISS\n", out)

    def test_engine_alone_unsteady_misses(self):
        out = spread_section([10, 15, 12], [20, 21, 22])
        self.assertIn("spread (max/min over 3 rounds) 1.50 (target <= 1.25: MISS)", out)
        self.assertIn("targets: 0 PASS, 1 MISS\n", out)

    def test_both_unsteady_not_judged(self):
        out = spread_section([10, 15, 12], [20, 30, 22])
        self.assertIn("spread (max/min over 3 rounds) 1.50 (target <= 1.25 where builtin's is; "
                      "builtin's own is 1.50: NOT JUDGED)", out)
        self.assertIn("targets: 0 PASS, 0 MISS, 1 NOT JUDGED\n", out)

    def test_one_round_misses(self):
        out = spread_section([10], [20])
        self.assertIn("torus CPU us per I/O spread n/a (fewer than 2 rounds) "
                      "(target <= 1.25: MISS)", out)


class Ratio(unittest.TestCase):
    def test_paired_median_against_target(self):
        recs = [("section", "s", "a section"),
                ("target", "s", "cpu_us_per_io", "torus", "builtin", "<=", "0.55")]
        # per-round ratios 0.5, 0.6, 0.5: median 0.5
        for i, (e, b) in enumerate([(5, 10), (6, 10), (10, 20)], 1):
            recs.append(("value", "s", "builtin", i, "cpu_us_per_io", b))
            recs.append(("value", "s", "torus", i, "cpu_us_per_io", e))
        out = report(recs)
        self.assertIn("torus/builtin 0.50 (target <= 0.55: PASS)", out)

    def test_interval_of_the_median(self):
        recs = [("section", "s", "a section"),
                ("target", "s", "cpu_us_per_io", "on", "off", "<=", "1.05")]
        # 12 rounds: the median is the mean of the 6th and 7th ratio (1.03), its
        # interval the 3rd and the 10th
        on = [111, 100, 103, 102, 108, 103, 101, 110, 104, 103, 105, 102]
        for i, v in enumerate(on, 1):
            recs.append(("value", "s", "off", i, "cpu_us_per_io", 100))
            recs.append(("value", "s", "on", i, "cpu_us_per_io", v))
        out = report(recs)
        self.assertIn("on/off 1.03 (95%: 1.02–1.08) (target <= 1.05: PASS)", out)
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "r.md")
            with contextlib.redirect_stdout(io.StringIO()):
                benchlib.report(benchlib.Records(recs), md)
            with open(md) as f:
                self.assertIn("| on/off 1.03 (95%: 1.02–1.08) | <= 1.05 **PASS** |", f.read())

    # The median's 95% interval by rank is tested in test_stats.py
    # (stats.median_interval, which the report uses).
    def test_ratio_of_unpaired_rounds(self):
        # rounds that do not pair: the ratio of the medians, no interval
        vals = {"a": {"m": [2.0, 3.0]}, "b": {"m": [1.0]}}
        self.assertEqual(benchlib.paired_ratio(vals, "a", "b", "m"), 2.5)
        self.assertEqual(benchlib.interval_text(vals, "a", "b", "m"), "")


class Saved(unittest.TestCase):
    def test_save_and_load(self):
        recs = [("meta", "command", "scripts/bench --report"),
                ("section", "s", "a section", "s"),
                ("target", "s", "iops", "a", "b", ">=", 0.95),
                ("value", "s", "a", 1, "iops", 1000.5)]
        r = benchlib.Records(recs)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            r.save(path)
            again = benchlib.load(path)
        self.assertEqual(again.all, r.all)
        self.assertEqual(again.values, {"s": {"a": {"iops": [1000.5]}}})
        self.assertEqual(again.ratios, {"s": [("iops", "a", "b", ">=", 0.95)]})

    def test_bad_records_are_named(self):
        with self.assertRaisesRegex(ValueError, "not a bench record"):
            benchlib.Records([("value", "s", "a")])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                f.write('[["section", "s", "t"], ["nonsense", 1]]')
            with self.assertRaisesRegex(ValueError, "record 2: not a record a bench run saves"):
                benchlib.load(path)
            with open(path, "w") as f:
                f.write("section\ts\tt\n")
            with self.assertRaisesRegex(ValueError, "not the records a bench run saves"):
                benchlib.load(path)


class Diff(unittest.TestCase):
    def test_median_of_the_rounds_own(self):
        recs = [("section", "s", "a section"),
                ("ratio", "s", "cpu_us_per_io", "tls", "plain"),
                ("diff", "s", "cpu_us_per_io", "tls", "plain"),
                ("diff", "s", "iops", "tls", "plain")]
        # per-round differences 1.0, 0.25, 0.5: median 0.5 (the medians' 0.4)
        for i, (t, p) in enumerate([(3.0, 2.0), (2.75, 2.5), (2.5, 2.0)], 1):
            recs.append(("value", "s", "plain", i, "cpu_us_per_io", p))
            recs.append(("value", "s", "tls", i, "cpu_us_per_io", t))
            recs.append(("value", "s", "plain", i, "iops", 2000))
            recs.append(("value", "s", "tls", i, "iops", 1500))
        out = report(recs)
        self.assertIn("tls/plain 1.25; tls-plain +0.500", out)
        self.assertIn("tls-plain -0.5k", out)
        self.assertEqual(benchlib.paired_diffs({"a": {"m": [1.0]}}, "a", "b", "m"), [])
        self.assertEqual(benchlib.paired_diffs({"a": {"m": [4.0, 2.0]}, "b": {"m": [1.0]}},
                                               "a", "b", "m"), [2.0])


if __name__ == "__main__":
    main()
