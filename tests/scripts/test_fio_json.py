#!/usr/bin/env python3
"""Unit tests of scripts/fio_json.py: fio's JSON behind a preamble, the
summary's figures, fio_figure, running fio, and its command line.
"""

import json
import os
import shutil
import unittest

from testlib import Tmp, main, script
import fio_json


def fio_output(jobs):
    return {"fio version": "fio-3.33", "jobs": jobs}


def ddir(ios, iops, bw, clat_mean, lat_mean, io_bytes=0, pct=None):
    d = {"total_ios": ios, "iops": iops, "bw_bytes": bw, "io_bytes": io_bytes,
         "clat_ns": {"mean": clat_mean}, "lat_ns": {"mean": lat_mean}}
    if pct:
        d["clat_ns"]["percentile"] = pct
    return d


ONE_JOB = fio_output([{
    "jobname": "j", "error": 0, "job_runtime": 2000, "usr_cpu": 10.0, "sys_cpu": 15.0,
    "read": ddir(3000, 1500.0, 1500 * 4096, 40000.0, 41000.0,
                 pct={"50.000000": 38912, "99.000000": 70144, "99.900000": 120320}),
    "write": ddir(1000, 500.0, 500 * 4096, 60000.0, 62000.0),
    "trim": ddir(0, 0.0, 0, 0.0, 0.0),
}])


class FioJson(Tmp):
    PREAMBLE = ("torus: no uri: starting nbdkit memory on /tmp/x.sock\n"
                "fio: engine says {not json} here\n"
                "{broken\n")

    def test_preamble_text(self):
        text = self.PREAMBLE + json.dumps(ONE_JOB, indent=2) + "\ntrailing words\n"
        self.assertEqual(fio_json.load_fio_json(text), ONE_JOB)
        self.assertEqual(fio_json.fio_messages(text), self.PREAMBLE)

    def test_preamble_file(self):
        p = self.path("out.json")
        with open(p, "w") as f:
            f.write(self.PREAMBLE + json.dumps(ONE_JOB, indent=2))
        self.assertEqual(fio_json.load_fio_json(p), ONE_JOB)
        self.assertEqual(fio_json.fio_messages(p), self.PREAMBLE)

    def test_no_json(self):
        p = self.path("none.json")
        with open(p, "w") as f:
            f.write("fio: engine not loadable\n")
        with self.assertRaisesRegex(fio_json.FioJsonError, "none.json: no JSON object"):
            fio_json.load_fio_json(p)
        with self.assertRaises(ValueError):      # what benchlib's callers catch
            fio_json.load_fio_json("fio: nothing\n")

    def test_summary_formulas(self):
        s = fio_json.fio_summary(ONE_JOB)
        ios = 4000
        self.assertEqual(s["ios"], ios)
        self.assertEqual(s["iops"], 2000.0)
        self.assertEqual(s["bw_mib"], 2000 * 4096 / 2**20)
        self.assertEqual(s["cpu_pct"], 25.0)
        self.assertEqual(s["runtime_s"], 2.0)
        self.assertEqual(s["cpu_us_per_io"], 25.0 / 100.0 * 2.0 / ios * 1e6)
        self.assertEqual(s["clat_mean_us"], (40000.0 * 3000 + 60000.0 * 1000) / ios / 1e3)
        self.assertEqual(s["lat_mean_us"], (41000.0 * 3000 + 62000.0 * 1000) / ios / 1e3)
        self.assertEqual(list(s), ["iops", "bw_mib", "cpu_us_per_io", "clat_mean_us",
                                   "lat_mean_us", "cpu_pct", "ios", "runtime_s"])
        p = fio_json.fio_summary(ONE_JOB, percentiles=True)
        self.assertEqual(p["read_clat_p50_us"], 38.912)
        self.assertEqual(p["read_clat_p99.9_us"], 120.32)
        self.assertNotIn("write_clat_p50_us", p)

    def test_summary_refuses(self):
        with self.assertRaisesRegex(fio_json.FioJsonError, "expected one job"):
            fio_json.fio_summary(fio_output([]))
        bad = json.loads(json.dumps(ONE_JOB))
        bad["jobs"][0]["error"] = 5
        with self.assertRaisesRegex(fio_json.FioJsonError, "error 5"):
            fio_json.fio_summary(bad)

    def test_figures(self):
        two = fio_output([
            {"jobname": "a", "job_runtime": 1000, "write": ddir(1, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "a", "job_runtime": 3000, "write": ddir(1, 50.0, 2 * 10**6, 0, 0, 4096)},
            {"jobname": "b", "job_runtime": 9000, "write": ddir(1, 1.0, 1, 0, 0, 1)},
        ])
        self.assertEqual(fio_json.fio_figure(two, "iops", "write", "a"), 150.0)
        self.assertEqual(fio_json.fio_figure(two, "bw_MB", "write", "a"), 3.0)
        self.assertEqual(fio_json.fio_figure(two, "bw_MiB", "write", "a"), 3 * 10**6 / 2**20)
        self.assertEqual(fio_json.fio_figure(two, "elapsed", "write", "a"), 3.0)
        self.assertEqual(fio_json.fio_figure(two, "elapsed", "write", "a",
                                            {"doc_amount": 8192 * 10}), 30.0)
        with self.assertRaisesRegex(fio_json.FioError, "no fio job c"):
            fio_json.fio_figure(two, "iops", "write", "c")

    def test_cli_summary(self):
        p = self.path("out.json")
        with open(p, "w") as f:
            f.write(self.PREAMBLE + json.dumps(ONE_JOB))
        out = script("fio_json.py", "fio-summary", p, check=True).stdout
        lines = dict(l.split() for l in out.splitlines())
        self.assertEqual(lines["iops"], "2000")
        self.assertEqual(lines["cpu_us_per_io"], f"{25.0 / 100.0 * 2.0 / 4000 * 1e6:.6g}")



class RunFio(Tmp):
    @unittest.skipUnless(shutil.which("fio"), "fio is not installed")
    def test_null_engine(self):
        log = self.path("fio.log")
        r = fio_json.run_fio(["--name=n", "--ioengine=null", "--rw=read", "--bs=4k",
                             "--size=1m"], env={"TORUS_UNUSED": "1"}, timeout=60, log=log,
                            cwd=self.tmp)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(fio_json.fio_summary(r.data)["ios"], 256)
        with open(log) as f:
            self.assertTrue(f.readline().startswith("TORUS_UNUSED=1 fio --output-format=json"))

    @unittest.skipUnless(shutil.which("fio"), "fio is not installed")
    def test_failure_names_fio_messages(self):
        with self.assertRaisesRegex(fio_json.FioError, r"fio exited with status 1: .*"
                                                      r"no-such-engine"):
            fio_json.run_fio(["--name=n", "--ioengine=no-such-engine", "--size=1m"],
                            timeout=60, cwd=self.tmp)



class Summaries(Tmp):
    def test_summary_all_jobs(self):
        two = fio_output([
            {"jobname": "a", "job_runtime": 1000, "usr_cpu": 10.0, "sys_cpu": 0.0,
             "write": ddir(100, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "b", "job_runtime": 2000, "usr_cpu": 5.0, "sys_cpu": 5.0,
             "write": ddir(300, 150.0, 2 * 10**6, 0, 0, 4096)}])
        with self.assertRaisesRegex(fio_json.FioJsonError, "expected one job"):
            fio_json.fio_summary(two)
        s = fio_json.fio_summary(two, all_jobs=True)
        self.assertEqual((s["ios"], s["iops"], s["runtime_s"]), (400, 250.0, 2.0))
        # 0.1 * 1 s + 0.1 * 2 s of fio's CPU
        self.assertAlmostEqual(s["cpu_us_per_io"], 0.3 / 400 * 1e6)
        self.assertAlmostEqual(s["cpu_pct"], 15.0)

    def test_summary_one_job_by_name(self):
        two = fio_output([
            {"jobname": "on", "job_runtime": 1000, "usr_cpu": 10.0, "sys_cpu": 0.0,
             "read": ddir(100, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "off", "job_runtime": 1000, "usr_cpu": 5.0, "sys_cpu": 5.0,
             "read": ddir(300, 300.0, 10**6, 0, 0, 4096)}])
        on = fio_json.fio_summary(two, jobname="on")
        self.assertEqual((on["ios"], on["iops"]), (100, 100.0))
        self.assertAlmostEqual(on["cpu_us_per_io"], 0.1 / 100 * 1e6)
        with self.assertRaisesRegex(fio_json.FioJsonError, "no job named 'of' in fio's output"):
            fio_json.fio_summary(two, jobname="of")
        path = os.path.join(self.tmp, "two.json")
        with open(path, "w") as f:
            json.dump(two, f)
        out = script("fio_json.py", "fio-summary", path, "--job", "off")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("ios 300\n", out.stdout)
        both = script("fio_json.py", "fio-summary", path, "--all-jobs")
        self.assertIn("ios 400\n", both.stdout)
        clash = script("fio_json.py", "fio-summary", path, "--job", "on", "--all-jobs")
        self.assertEqual(clash.returncode, 2)
        self.assertIn("not allowed with argument", clash.stderr)


if __name__ == "__main__":
    main()
