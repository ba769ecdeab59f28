#!/usr/bin/env python3
"""scripts/benchpair.py's own logic, without fio, a server or a build: the
cases, the options and their errors, the order per round, CPU per I/O from
fio's JSON, the per-round ratios with their median and min-max, and the
table."""

import os
import subprocess
import tempfile
import unittest

from testlib import SRC, main
import benchpair


def fio_json(read_ios, write_ios, usr, sys_, runtime_ms, iops):
    def ddir(n):
        return {"total_ios": n, "iops": iops * n / (read_ios + write_ios), "bw_bytes": n,
                "clat_ns": {"mean": 1000.0}, "lat_ns": {"mean": 1100.0}}
    return {"jobs": [{"jobname": "b", "error": 0, "usr_cpu": usr, "sys_cpu": sys_,
                      "job_runtime": runtime_ms, "read": ddir(read_ios),
                      "write": ddir(write_ios), "trim": {"total_ios": 0}}]}


class Cases(unittest.TestCase):
    def test_default_is_all_four(self):
        self.assertEqual([c.label for c in benchpair.parse_cases("all")],
                         ["nbd 4k randread QD16", "nbd 64k randrw QD64",
                          "tcmu 4k randread QD16", "tcmu 64k randrw QD64"])
        self.assertEqual(len(benchpair.parse_cases(None)), 4)

    def test_list_keeps_table_order_once(self):
        got = benchpair.parse_cases("tcmu-64k, nbd-4k,tcmu-64k")
        self.assertEqual([c.name for c in got], ["nbd-4k", "tcmu-64k"])
        self.assertEqual(got[1].fio_args, ("--rw=randrw", "--bs=64k", "--iodepth=64"))

    def test_unknown_case_names_the_choices(self):
        with self.assertRaises(benchpair.UsageError) as e:
            benchpair.parse_cases("nbd-4k,nbd-8k")
        self.assertEqual(str(e.exception), "--cases: unknown case nbd-8k: use a comma-separated "
                         "list of nbd-4k, nbd-64k, tcmu-4k, tcmu-64k (or all)")

    def test_empty(self):
        with self.assertRaises(benchpair.UsageError) as e:
            benchpair.parse_cases(" , ")
        self.assertIn("--cases is empty", str(e.exception))


class Options(unittest.TestCase):
    def error(self, argv):
        with self.assertRaises(benchpair.UsageError) as e:
            benchpair.parse_args(argv)
        return str(e.exception)

    def test_defaults(self):
        a = benchpair.parse_args([])
        self.assertEqual((a.old, a.new, a.new_engine, a.rounds, a.runtime, a.out),
                         (None, None, None, 5, 5, None))
        self.assertEqual(len(a.case_list), 4)

    def test_rounds_below_one(self):
        self.assertEqual(self.error(["--rounds", "0"]),
                         "--rounds 0: give at least 1 (e.g. --rounds 5)")

    def test_runtime_below_one(self):
        self.assertIn("--runtime -2: give at least 1 second", self.error(["--runtime", "-2"]))

    def test_not_a_number(self):
        self.assertIn("--rounds: invalid int value: 'many'", self.error(["--rounds", "many"]))
        self.assertIn("see scripts/bench-builds --help", self.error(["--rounds", "many"]))

    def test_new_and_new_engine_exclude_each_other(self):
        msg = self.error(["--new", "HEAD", "--new-engine", "/bin/true"])
        self.assertIn("not allowed with argument --new", msg)

    def test_missing_engine(self):
        self.assertIn("--new-engine /nonexistent/libtorus.so: no such file",
                      self.error(["--new-engine", "/nonexistent/libtorus.so"]))

    def test_new_engine_finds_the_shim_of_its_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            engine = os.path.join(tmp, "engines", "libtorus.so")
            shim = os.path.join(tmp, "shims", "tcmu", "tcmu-shim")
            os.makedirs(os.path.dirname(engine))
            open(engine, "w").close()
            msg = self.error(["--new-engine", engine, "--cases", "nbd-4k,tcmu-4k"])
            self.assertEqual(msg, f"--new-engine {engine}: no tcmu-shim in its build: name the "
                             "TCMU server with --tcmu-shim PATH (or leave the tcmu cases out "
                             "with --cases)")
            a = benchpair.parse_args(["--new-engine", engine, "--cases", "nbd-4k"])
            self.assertIsNone(a.tcmu_shim)
            os.makedirs(os.path.dirname(shim))
            with open(shim, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(shim, 0o755)
            self.assertEqual(benchpair.parse_args(["--new-engine", engine]).tcmu_shim, shim)

    def test_bad_case(self):
        self.assertIn("unknown case x", self.error(["--cases", "x"]))


class Rev(unittest.TestCase):
    def setUp(self):
        r = subprocess.run(["git", "-C", SRC, "rev-parse", "HEAD"], capture_output=True)
        if r.returncode != 0:
            self.skipTest("the source is not a git checkout")

    def test_bad_rev(self):
        with self.assertRaises(benchpair.UsageError) as e:
            benchpair.resolve("no-such-rev-at-all", "--old")
        self.assertIn("--old no-such-rev-at-all: not a commit in", str(e.exception))
        self.assertIn("give a commit, branch or tag", str(e.exception))

    def test_head(self):
        self.assertRegex(benchpair.resolve("HEAD", "--new"), r"^[0-9a-f]{40}$")


class Logic(unittest.TestCase):
    def test_order_alternates(self):
        self.assertEqual([benchpair.order(r) for r in range(3)],
                         [("old", "new"), ("new", "old"), ("old", "new")])

    def test_figures(self):
        # 25% usr + 15% sys of 2 s over 100000 I/Os: 8 us per I/O
        cpu, iops = benchpair.figures(fio_json(60000, 40000, 25.0, 15.0, 2000, 50000.0))
        self.assertAlmostEqual(cpu, 8.0)
        self.assertAlmostEqual(iops, 50000.0)

    def test_figures_of_a_failed_job(self):
        data = fio_json(1, 0, 1.0, 1.0, 1000, 1.0)
        data["jobs"][0]["error"] = 5
        with self.assertRaises(ValueError):
            benchpair.figures(data, "run 1")

    def test_ratios_and_summary(self):
        # new/old per round and their (median, min, max): scripts/stats.py's
        rows = benchpair.summarize({"c": {"old": [(2.0, 1.0), (4.0, 1.0), (5.0, 1.0)],
                                          "new": [(1.0, 1.0), (4.0, 3.0), (10.0, 1.0)]}})
        self.assertEqual(rows[0]["cpu_ratio"], (1.0, 0.5, 2.0))
        self.assertEqual(rows[0]["iops_ratio"], (1.0, 1.0, 3.0))
        self.assertEqual(benchpair._summary_text(None), "n/a")

    def test_ratio_is_per_round_not_of_medians(self):
        rows = benchpair.summarize({"c": {"old": [(10.0, 100.0), (20.0, 50.0), (40.0, 25.0)],
                                          "new": [(5.0, 200.0), (40.0, 25.0), (20.0, 50.0)]}})
        r = rows[0]
        self.assertEqual((r["cpu_old"], r["cpu_new"]), (20.0, 20.0))
        self.assertEqual(r["cpu_ratio"], (0.5, 0.5, 2.0))
        self.assertEqual(r["iops_ratio"], (2.0, 0.5, 2.0))
        self.assertEqual(r["rounds"], 3)

    def test_case_without_runs_is_left_out(self):
        self.assertEqual(benchpair.summarize({"c": {"old": [], "new": []}}), [])

    def test_table(self):
        rows = benchpair.summarize({"nbd 4k randread QD16": {
            "old": [(10.0, 1000.0), (12.0, 900.0)], "new": [(9.0, 1100.0), (9.6, 990.0)]}})
        self.assertEqual(benchpair.table(rows).splitlines(), [
            "| case | CPU/IO old (us) | CPU/IO new (us) | CPU/IO new/old median [min-max] "
            "| IOPS old | IOPS new | IOPS new/old median [min-max] |",
            "|---|---|---|---|---|---|---|",
            "| nbd 4k randread QD16 | 11.00 | 9.30 | 0.850 [0.800-0.900] | 950 | 1045 "
            "| 1.100 [1.100-1.100] |"])

    def test_rounds_table(self):
        results = {"a": {"old": [(10.0, 100.0), (8.0, 200.0)], "new": [(5.0, 300.0)]},
                   "b": {"old": [(2.0, 50.0)], "new": [(3.0, 25.0)]}}
        self.assertEqual(benchpair.rounds_table(results).splitlines()[2:], [
            "| 1 | a | old | 10.00 | 5.00 | 0.500 | 100 | 300 | 3.000 |",
            "| 1 | b | old | 2.00 | 3.00 | 1.500 | 50 | 25 | 0.500 |"])
        results["a"]["new"].append((8.0, 100.0))
        self.assertEqual(benchpair.rounds_table(results).splitlines()[-1],
                         "| 2 | a | new | 8.00 | 8.00 | 1.000 | 200 | 100 | 0.500 |")

    def test_report_names_the_run(self):
        info = {"command": "scripts/bench-builds --old abc", "old": "abc old", "new": "def new",
                "machine": "CPU X, 2 CPUs (nproc), Linux 6", "fio": "fio-3.33",
                "load_before": "1.00, 2.00, 3.00", "load_after": "1.50, 2.00, 3.00",
                "started": "2026-11-27 01:00 UTC", "finished": "01:05 UTC",
                "servers": "nbdkit null 4G", "pinning": "no pinning: one CPU",
                "rounds": 3, "runtime": 4}
        text = benchpair.report(info, [])
        for want in ("`scripts/bench-builds --old abc`", "**Old**: abc old", "**New**: def new",
                     "CPU X, 2 CPUs (nproc), Linux 6; fio-3.33",
                     "before 1.00, 2.00, 3.00, after 1.50, 2.00, 3.00",
                     "2026-11-27 01:00 UTC to 01:05 UTC", "no pinning: one CPU",
                     "3 rounds of 4 s"):
            self.assertIn(want, text)

    def test_together(self):
        case = benchpair.BY_NAME["nbd-4k"]
        args = benchpair.together_args({"old": "/o.so", "new": "/n.so"}, "nbd+unix:///?socket=s",
                                       case, 4, ("new", "old"))
        # the workload for both, then a job per engine in the order given
        self.assertEqual(args, ["--size=1g", "--runtime=4", "--time_based", "--ramp_time=1",
                                "--rw=randread", "--bs=4k", "--iodepth=16",
                                "--name=new", "--ioengine=external:/n.so",
                                "--uri=nbd+unix:///?socket=s",
                                "--name=old", "--ioengine=external:/o.so",
                                "--uri=nbd+unix:///?socket=s"])
        self.assertTrue(benchpair.parse_args(["--together"]).together)
        info = {"command": "c", "old": "o", "new": "n", "machine": "m", "fio": "f",
                "load_before": "l", "load_after": "l", "started": "s", "finished": "f",
                "servers": "s", "pinning": "p", "rounds": 3, "runtime": 4, "together": True}
        self.assertIn("3 rounds of 4 s (after 1 s of ramp) per case, both engines at once "
                      "(two jobs of one fio run, sharing its CPU)", benchpair.report(info, []))

    def test_rev_dir_name(self):
        self.assertEqual(benchpair.rev_dir_name("HEAD~1", "0123456789abcdef0"),
                         "HEAD_1-0123456789ab")
        self.assertEqual(benchpair.rev_dir_name("origin/main", "ab" * 20),
                         "origin_main-" + "ab" * 6)

    def test_help_lists_the_cases(self):
        text = benchpair.usage_text()
        for c in benchpair.CASES:
            self.assertIn(f"{c.name:<10} {c.label}", text)


if __name__ == "__main__":
    main()
