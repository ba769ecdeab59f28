#!/usr/bin/env python3
"""scripts/comparelib.py's own logic, without fio or a server: the paths'
records, rewriting a job for a path, fio's figures, the costs against the
engine, the table, the filesystem choice and why a guest run left no
result."""

import argparse
import json
import os
import sys
import tempfile
import unittest

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "scripts"))

import comparelib  # noqa: E402


def ddir(ios, iops, bw, clat_ns, bins=None):
    d = {"total_ios": ios, "iops": iops, "bw_bytes": bw, "io_bytes": bw,
         "clat_ns": {"mean": clat_ns, "N": ios if clat_ns else 0},
         "lat_ns": {"mean": clat_ns + 1000}}
    if bins:
        d["clat_ns"]["bins"] = bins
    return d


def result(path, where="native", status="ok", clat=100.0, cpu=10.0, fio_cpu=5.0, iops=1000.0,
           functional_only=False):
    return {"path": path, "transport": comparelib.BY_NAME[path].transport, "status": status,
            "reason": None if status == "ok" else f"{path} could not", "where": where,
            "functional_only": functional_only, "notes": [],
            "figures": {"iops": iops, "bw_mib": iops * 4 / 1024, "clat_mean_us": clat,
                        "clat_p50_us": clat, "clat_p99_us": clat * 2,
                        "clat_p99.9_us": clat * 3, "fio_cpu_us_per_io": fio_cpu,
                        "machine_cpu_us_per_io": cpu} if status == "ok" else None}


class Records(unittest.TestCase):
    def test_each_path_one_record(self):
        names = [p.name for p in comparelib.PATHS]
        self.assertEqual(names, ["engine-nbd", "engine-tcmu", "kernel-nbd", "kernel-tcmu",
                                 "kernel-loop", "guest-virtio"])
        self.assertEqual(len(set(names)), len(names))
        self.assertEqual(comparelib.NAMES, names)
        for p in comparelib.PATHS:
            self.assertIn(p.transport, ("nbd", "tcmu"), p.name)
            self.assertIn(p.where, ("host", "native-or-guest", "guest"), p.name)
            self.assertTrue(callable(p.runner), p.name)
            self.assertTrue(p.what, p.name)
            if p.name.startswith("engine-"):
                self.assertIsNone(p.baseline, p.name)
            else:
                # a kernel path's baseline: the engine on its own transport
                base = comparelib.BY_NAME[p.baseline]
                self.assertTrue(base.name.startswith("engine-"), p.name)
                self.assertEqual(base.transport, p.transport, p.name)

    def test_modules(self):
        self.assertEqual(comparelib.BY_NAME["kernel-nbd"].modules, ("nbd",))
        self.assertIn("target_core_user", comparelib.BY_NAME["kernel-tcmu"].modules)
        self.assertEqual(comparelib.BY_NAME["kernel-loop"].modules, ("loop", "fuse"))


class RewriteJob(unittest.TestCase):
    JOB = ("; a comment\n[global]\nioengine=psync\nconns=2\nbs=4k\n"
           "runtime = 30\n# conns=9 stays a comment\n\n[first]\nrw=read\n[second]\n"
           "filename=/dev/old\nrw=write\n")

    def rewrite(self, text, overrides, drop=()):
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in.fio"), os.path.join(tmp, "out.fio")
            with open(src, "w") as f:
                f.write(text)
            jobs = comparelib.rewrite_job(src, dst, overrides, drop)
            with open(dst) as f:
                return jobs, f.read()

    def test_overrides_in_every_job_section(self):
        jobs, out = self.rewrite(self.JOB, {"ioengine": "libaio", "filename": "/dev/x",
                                            "direct": "1"}, drop={"conns", "runtime"})
        self.assertEqual(jobs, ["first", "second"])
        lines = out.splitlines()
        self.assertEqual(lines[:5], ["; scripts/compare's settings for this path", "[global]",
                                     "ioengine=libaio", "filename=/dev/x", "direct=1"])
        # the job's own values of overridden or dropped keys, commented out
        for old in ("ioengine=psync", "conns=2", "runtime = 30", "filename=/dev/old"):
            self.assertIn("; (scripts/compare) " + old, lines)
        self.assertIn("# conns=9 stays a comment", lines)
        self.assertIn("bs=4k", lines)
        for section in ("[first]", "[second]"):
            i = lines.index(section)
            self.assertEqual(lines[i + 1:i + 4], ["ioengine=libaio", "filename=/dev/x",
                                                  "direct=1"])
        g = lines.index("[global]", 2)
        self.assertNotEqual(lines[g + 1], "ioengine=libaio")

    def test_bare_option(self):
        _, out = self.rewrite("[j]\nrw=read\n", {"time_based": None})
        self.assertEqual(out.splitlines()[1:], ["[global]", "time_based", "[j]", "time_based",
                                                "rw=read"])

    def test_no_job_section(self):
        with self.assertRaisesRegex(SystemExit, "has no job section"):
            self.rewrite("[global]\nbs=4k\n", {"ioengine": "libaio"})


class Figures(unittest.TestCase):
    def test_summarize_all_jobs(self):
        data = {"jobs": [
            {"jobname": "a", "job_runtime": 2000, "usr_cpu": 10.0, "sys_cpu": 10.0,
             "read": ddir(300, 150.0, 300 * 4096 // 2, 100000, {"100000": 300}),
             "write": ddir(100, 50.0, 100 * 4096 // 2, 300000, {"300000": 100})},
            {"jobname": "b", "job_runtime": 1000, "usr_cpu": 50.0, "sys_cpu": 0.0,
             "read": ddir(100, 100.0, 100 * 4096, 100000, {"100000": 100})}]}
        s = comparelib.summarize(data, "x.json")
        self.assertEqual(s["ios"], 500)
        self.assertAlmostEqual(s["iops"], 300.0)
        self.assertAlmostEqual(s["clat_mean_us"], (300 * 100 + 100 * 300 + 100 * 100) / 500)
        self.assertEqual(s["runtime_s"], 2.0)
        # 0.2 * 2 s + 0.5 * 1 s of fio's CPU over 500 I/Os
        self.assertAlmostEqual(s["fio_cpu_us_per_io"], 0.9 / 500 * 1e6)
        self.assertEqual((s["clat_p50_us"], s["clat_p99_us"]), (100.0, 300.0))
        self.assertEqual(s["percentiles_from"], "bins")

    def test_summarize_no_latency(self):
        # gtod_reduce=1: fio's JSON holds zeroes (N 0), which are no latency
        data = {"jobs": [{"jobname": "a", "job_runtime": 1000, "usr_cpu": 1.0, "sys_cpu": 1.0,
                          "read": ddir(100, 100.0, 100 * 4096, 0)}]}
        s = comparelib.summarize(data, "x.json")
        self.assertIsNone(s["clat_mean_us"])
        self.assertAlmostEqual(s["iops"], 100.0)

    def test_summarize_refuses(self):
        with self.assertRaisesRegex(comparelib.harness.FioJsonError, "no jobs"):
            comparelib.summarize({"jobs": []}, "x")
        with self.assertRaisesRegex(comparelib.harness.FioJsonError, "error 5"):
            comparelib.summarize({"jobs": [{"jobname": "a", "error": 5}]}, "x")


class Costs(unittest.TestCase):
    def test_kernel_path_against_its_engine(self):
        rs = [result("engine-nbd", clat=100.0, cpu=10.0, fio_cpu=5.0, iops=1000.0),
              result("kernel-loop", clat=150.0, cpu=25.0, fio_cpu=4.0, iops=800.0)]
        comparelib.add_costs(rs)
        c = rs[1]["vs_engine"]
        self.assertEqual(c["baseline"], "engine-nbd")
        self.assertAlmostEqual(c["latency_ratio"], 1.5)
        self.assertAlmostEqual(c["latency_extra_us"], 50.0)
        self.assertAlmostEqual(c["cpu_ratio"], 2.5)
        self.assertAlmostEqual(c["cpu_extra_us"], 15.0)
        self.assertAlmostEqual(c["fio_cpu_ratio"], 0.8)
        self.assertAlmostEqual(c["iops_ratio"], 0.8)
        self.assertNotIn("vs_engine", rs[0])

    def test_not_comparable_elsewhere(self):
        rs = [result("engine-tcmu"), result("kernel-tcmu", where="guest-tcg",
                                            functional_only=True)]
        comparelib.add_costs(rs)
        c = rs[1]["vs_engine"]
        self.assertEqual(c["baseline"], "engine-tcmu")
        self.assertIn("kernel-tcmu ran guest-tcg, engine-tcmu native", c["none_because"])
        self.assertNotIn("latency_ratio", c)

    def test_no_baseline_no_cost(self):
        rs = [result("engine-nbd", status="failed"), result("kernel-nbd")]
        comparelib.add_costs(rs)
        self.assertNotIn("vs_engine", rs[1])
        rs = [result("kernel-nbd")]
        comparelib.add_costs(rs)
        self.assertNotIn("vs_engine", rs[0])


class Table(unittest.TestCase):
    def test_rows(self):
        rs = [result("engine-nbd"), result("kernel-loop", clat=150.0, cpu=25.0),
              result("kernel-tcmu", where="guest-tcg", functional_only=True),
              result("engine-tcmu"), result("guest-virtio", status="skipped")]
        rs[1]["notes"].append("nbdfuse /x")
        comparelib.add_costs(rs)
        text = comparelib.table(rs)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("| path | where | IOPS | MiB/s |"))
        self.assertEqual(lines[1], "|" + "---|" * 12)
        self.assertIn("| engine-nbd | native | 1000 | 3.9 | 100.0 | 100.0 | 200.0 | 300.0 | "
                      "5.00 | 10.00 | – | – |", lines)
        self.assertIn("| kernel-loop | native | 1000 | 3.9 | 150.0 | 150.0 | 300.0 | 450.0 | "
                      "5.00 | 25.00 | 1.50x, +50.0 µs (engine-nbd) | 2.50x, +15.0 µs |", lines)
        row = next(line for line in lines if line.startswith("| kernel-tcmu |"))
        self.assertIn("guest-tcg **functional only**", row)
        self.assertIn("– (not comparable: engine-tcmu ran elsewhere)", row)
        self.assertIn("| guest-virtio | skipped | guest-virtio could not |", lines)
        self.assertEqual(lines[-1], "- kernel-loop: nbdfuse /x")

    def test_fmt(self):
        self.assertEqual(comparelib.fmt(None), "–")
        self.assertEqual(comparelib.fmt(12345.0), "12.3k")
        self.assertEqual(comparelib.fmt(1.234, 2), "1.23")


class Small(unittest.TestCase):
    def test_parse_size(self):
        self.assertEqual(comparelib.parse_size("256M"), 256 << 20)
        self.assertEqual(comparelib.parse_size("4GiB"), 4 << 30)
        self.assertEqual(comparelib.parse_size("512"), 512)
        with self.assertRaisesRegex(argparse.ArgumentTypeError, "not a size: '4X'"):
            comparelib.parse_size("4X")

    def test_resolve_fs(self):
        jobs = os.path.join(comparelib.REPO, "jobs")
        self.assertEqual(comparelib.resolve_fs("xfs", "/x.fio"), ("xfs", "--fs xfs"))
        self.assertEqual(comparelib.resolve_fs("auto", "/tmp/mine.fio"), ("none", None))
        fs, why = comparelib.resolve_fs("auto", os.path.join(jobs, "zerodisk-fs-randrw.fio"))
        self.assertEqual(fs, "ext4")
        self.assertIn("zerodisk-fs-randrw is a filesystem test", why)
        self.assertEqual(comparelib.resolve_fs("auto", os.path.join(jobs, "zerodisk-device.fio")),
                         ("none", None))

    def test_guest_failure(self):
        self.assertEqual(
            comparelib.guest_failure(125, ["x", "the guest did not start ...",
                                           "2 boots hung: giving up (exit 125)"], "", 606),
            "the guest failed before the command ran (scripts/guest exit 125): the guest did "
            "not start ... / 2 boots hung: giving up (exit 125)")
        self.assertEqual(comparelib.guest_failure(124, ["timed out after 606 s"], "", 606),
                         "scripts/guest timed out (exit 124, --timeout 606 s): "
                         "timed out after 606 s")
        self.assertEqual(comparelib.guest_failure(1, ["ignored"], "boom\n", 606),
                         "scripts/guest exited 1 without a result; it printed: boom")

    def test_list(self):
        import io
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as e:
            comparelib.parse_args(["--list"])
        self.assertEqual(e.exception.code, 0)
        self.assertEqual(out.getvalue().split(), comparelib.NAMES)

    def test_help_lists_the_records(self):
        text = comparelib.paths_text()
        for p in comparelib.PATHS:
            self.assertRegex(text, rf"(?m)^  {p.name} +{p.what.split()[0]}")
        self.assertIn("(natively or in the guest)", " ".join(text.split()))
        self.assertTrue(all(len(line) <= 78 for line in text.splitlines()), text)

    def test_unknown_path(self):
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as job:
            import io
            import contextlib
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                comparelib.parse_args([job.name, "--paths", "engine-nbd,kernel-fast"])
            self.assertEqual(e.exception.code, 2)
            self.assertIn("unknown path(s) kernel-fast: choose from engine-nbd,", err.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=2)
