#!/usr/bin/env python3
"""Unit tests of scripts/issued.py: the syncs and trims of fio's JSON, the
rates paths are judged on, which paths differ by more than 10%, the
report's lines and the command line."""

import json
import unittest

from testlib import Tmp, main, script
import issued


def job(writes=0, reads=0, trims=0, syncs=0, sync_n=None):
    """One job of fio's JSON with these counts (SYNC_N: the sync latency's
    samples, as fio keeps them for fdatasync=)."""
    sync = {"total_ios": syncs, "lat_ns": {"N": syncs if sync_n is None else sync_n}}
    return {"read": {"total_ios": reads}, "write": {"total_ios": writes},
            "trim": {"total_ios": trims}, "sync": sync}


def counts(writes=0, syncs=0, trims=0, ios=None):
    return {"writes": writes, "syncs": syncs, "trims": trims,
            "ios": writes + trims if ios is None else ios}


class Counts(unittest.TestCase):
    def test_summed_over_jobs(self):
        data = {"jobs": [job(writes=1024, syncs=127), job(writes=10, reads=5, trims=3, syncs=1)]}
        self.assertEqual(issued.counts(data),
                         {"writes": 1034, "syncs": 128, "trims": 3, "ios": 1042})

    def test_fdatasync_from_the_latency_samples(self):
        # fio 3.33: total_ios 0 for fdatasync=, the sync latency's N counts them
        data = {"jobs": [job(writes=1024, syncs=0, sync_n=127)]}
        self.assertEqual(issued.counts(data)["syncs"], 127)

    def test_missing_sections(self):
        self.assertEqual(issued.counts({"jobs": [{}]}), dict.fromkeys(issued.COUNTS, 0))
        self.assertEqual(issued.counts({}), dict.fromkeys(issued.COUNTS, 0))

    def test_figures_round_trip(self):
        c = counts(1024, 127, 3)
        self.assertEqual(issued.of_figures(issued.as_figures(c)), c)
        self.assertIsNone(issued.of_figures({"iops": 1.0}))
        self.assertIsNone(issued.of_figures(None))


class Differing(unittest.TestCase):
    def test_the_burst_is_flagged(self):
        by = {"engine-nbd": counts(1024, 665), "engine-tcmu": counts(1024, 127),
              "kernel-loop": counts(1024, 127)}
        self.assertEqual(issued.differing(by), {"engine-nbd": ["syncs"]})

    def test_rates_not_counts(self):
        # timed runs: twice the writes, twice the syncs, the same rate
        by = {"a": counts(2048, 254), "b": counts(1024, 127)}
        self.assertEqual(issued.differing(by), {})

    def test_ten_percent_is_the_edge(self):
        by = {"a": counts(1000, 100), "b": counts(1000, 100), "c": counts(1000, 110)}
        self.assertEqual(issued.differing(by), {})
        by["c"] = counts(1000, 111)
        self.assertEqual(issued.differing(by), {"c": ["syncs"]})

    def test_two_paths_apart_are_both_flagged(self):
        by = {"a": counts(1000, 100), "b": counts(1000, 300)}
        self.assertEqual(issued.differing(by), {"a": ["syncs"], "b": ["syncs"]})

    def test_trims_per_io(self):
        by = {"a": counts(500, 0, 500), "b": counts(500, 0, 500), "c": counts(1000, 0, 0)}
        self.assertEqual(issued.differing(by), {"c": ["trims"]})

    def test_a_few_say_nothing(self):
        # fsync=256 over timed runs of different lengths
        by = {"a": counts(1000, 1), "b": counts(300, 1), "c": counts(5000, 9)}
        self.assertEqual(issued.differing(by), {})
        by["c"] = counts(5000, 10)
        self.assertEqual(issued.differing(by), {"a": ["syncs"], "b": ["syncs"]})

    def test_none_issued_nothing_differs(self):
        self.assertEqual(issued.differing({"a": counts(1000), "b": counts(500)}), {})

    def test_one_path_or_none_with_writes(self):
        self.assertEqual(issued.differing({"a": counts(1000, 500)}), {})
        self.assertEqual(issued.differing({"a": counts(0, 0, ios=100),
                                           "b": counts(0, 0, ios=50), "c": None}), {})


class Lines(unittest.TestCase):
    def test_nothing_issued_no_lines(self):
        self.assertEqual(issued.lines({"a": counts(1000), "b": None}), [])

    def test_table_and_flag(self):
        text = "\n".join(issued.lines({"engine-nbd": counts(1024, 665),
                                       "engine-tcmu": counts(1024, 127),
                                       "kernel-loop": counts(1024, 127), "kernel-nbd": None}))
        self.assertIn("| engine-nbd | 1024 | 665 | 0.649 | 1024 | 0 | 0.000 | "
                      "**differs**: syncs per write |", text)
        self.assertIn("| kernel-loop | 1024 | 127 | 0.124 | 1024 | 0 | 0.000 |  |", text)
        self.assertNotIn("kernel-nbd", text)
        self.assertIn("**The paths did not issue the same syncs and trims** (more than 10% "
                      "apart): engine-nbd: syncs per write 0.649 against the paths' median "
                      "0.124.", text)

    def test_agreeing_paths_no_flag(self):
        text = "\n".join(issued.lines({"a": counts(1024, 127), "b": counts(1000, 125)}))
        self.assertNotIn("| **differs**", text)
        self.assertNotIn("did not issue", text)


class Cli(Tmp):
    def write(self, name, *jobs):
        with open(self.path(name), "w") as f:
            f.write("torus 1.0 (a message before the JSON)\n" + json.dumps({"jobs": list(jobs)}))
        return self.path(name)

    def test_agree(self):
        a = self.write("a.json", job(writes=1024, syncs=127))
        b = self.write("b.json", job(writes=1024, syncs=127))
        r = script("issued.py", a, b)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{a} writes=1024 syncs=127 trims=0 ios=1024 syncs_per_write=0.124 "
                      "trims_per_io=0.000", r.stdout)

    def test_differ(self):
        a = self.write("a.json", job(writes=1024, syncs=127))
        b = self.write("b.json", job(writes=1024, syncs=127))
        c = self.write("c.json", job(writes=1024, syncs=665))
        r = script("issued.py", a, b, c)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"issued: {c}: syncs differ from the others' by more than 10%", r.stderr)

    def test_usage(self):
        self.assertEqual(script("issued.py").returncode, 2)
        r = script("issued.py", self.path("missing.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("issued: ", r.stderr)


if __name__ == "__main__":
    main()
