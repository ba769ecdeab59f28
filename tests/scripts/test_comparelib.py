#!/usr/bin/env python3
"""scripts/compare's modules, without fio or a server: the paths' records
(compare_paths.py), rewriting a job for a path (compare_job.py), fio's
figures (compare_run.py), the rounds (their order, medians, ranges, the
spread's flag) and the costs against the engine (each round's own ratio)
(compare_rounds.py), the latency override, the table (compare_report.py),
the filesystem choice, the command line (comparelib.py) and why a guest
run left no result. One file: the rounds' fixtures serve every module."""

import argparse
import os
import tempfile
import unittest

from testlib import main
import compare_job
import compare_paths
import compare_report
import compare_rounds
import compare_run
import kernel_shares
import comparelib
import fio_json
import issued
import stats


def ddir(ios, iops, bw, clat_ns, bins=None):
    d = {"total_ios": ios, "iops": iops, "bw_bytes": bw, "io_bytes": bw,
         "clat_ns": {"mean": clat_ns, "N": ios if clat_ns else 0},
         "lat_ns": {"mean": clat_ns + 1000}}
    if bins:
        d["clat_ns"]["bins"] = bins
    return d


def figures(iops=1000.0, clat=100.0, cpu=10.0, fio_cpu=5.0, share=None, sub_share=None):
    return {"iops": iops, "bw_mib": iops * 4 / 1024, "clat_mean_us": clat,
            "clat_p50_us": clat, "clat_p99_us": clat * 2, "clat_p99.9_us": clat * 3,
            "fio_cpu_us_per_io": fio_cpu, "machine_cpu_us_per_io": cpu,
            "kernel_submission_share_us_per_io": sub_share,
            "kernel_completion_share_us_per_io": share, "percentiles_from": "bins"}


def run(path, status="ok", where="native", functional_only=False, notes=(), **fig):
    """One round of PATH as run_path returns it."""
    return {"path": path, "transport": compare_paths.BY_NAME[path].transport, "status": status,
            "reason": None if status == "ok" else f"{path} could not", "where": where,
            "functional_only": functional_only, "notes": list(notes),
            "figures": figures(**fig) if status == "ok" else None}


def result(path, where="native", status="ok", clat=100.0, cpu=10.0, fio_cpu=5.0, iops=1000.0,
           functional_only=False):
    """PATH's result of one round, merged as compare merges its rounds."""
    return compare_rounds.merge_rounds([run(path, status, where, functional_only, clat=clat,
                                            cpu=cpu, fio_cpu=fio_cpu, iops=iops)])


def rounds(path, iops, clat=None, share=None, sub_share=None):
    """PATH's result over rounds with these IOPS (and mean latencies, and
    kernel's completion and submission shares)."""
    clat = clat or [100.0] * len(iops)
    share = share or [None] * len(iops)
    sub_share = sub_share or [None] * len(iops)
    return compare_rounds.merge_rounds([run(path, iops=i, clat=c, share=k, sub_share=u)
                                        for i, c, k, u in zip(iops, clat, share, sub_share)])


class Records(unittest.TestCase):
    def test_each_path_one_record(self):
        # the records themselves, not a list of names here: a new path is
        # one record in PATHS and nothing else to edit in this test
        names = [p.name for p in compare_paths.PATHS]
        self.assertGreaterEqual(len(names), 2)
        self.assertEqual(len(set(names)), len(names))
        for p in compare_paths.PATHS:          # each after its baseline (run first)
            if p.baseline:
                self.assertLess(names.index(p.baseline), names.index(p.name), p.name)
        self.assertEqual(compare_paths.NAMES, names)
        for p in compare_paths.PATHS:
            self.assertIn(p.transport, ("nbd", "tcmu"), p.name)
            self.assertIn(p.where, ("host", "native-or-guest", "guest"), p.name)
            self.assertTrue(callable(p.runner), p.name)
            self.assertTrue(p.what, p.name)
            if p.name == "engine-libnbd":
                # the other client of the same server, inside the same glue
                self.assertEqual(p.baseline, "engine-nbd")
            elif p.name.startswith("engine-"):
                self.assertIsNone(p.baseline, p.name)
            else:
                # a kernel path's baseline: the engine on its own transport
                base = compare_paths.BY_NAME[p.baseline]
                self.assertTrue(base.name.startswith("engine-"), p.name)
                self.assertEqual(base.transport, p.transport, p.name)

    def test_modules(self):
        self.assertEqual(compare_paths.BY_NAME["kernel-nbd"].modules, ("nbd",))
        self.assertIn("target_core_user", compare_paths.BY_NAME["kernel-tcmu"].modules)
        self.assertEqual(compare_paths.BY_NAME["kernel-loop"].modules, ("loop", "fuse"))


class RewriteJob(unittest.TestCase):
    JOB = ("; a comment\n[global]\nioengine=psync\nconns=2\nbs=4k\n"
           "runtime = 30\n# conns=9 stays a comment\n\n[first]\nrw=read\n[second]\n"
           "filename=/dev/old\nrw=write\n")

    def rewrite(self, text, overrides, drop=()):
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in.fio"), os.path.join(tmp, "out.fio")
            with open(src, "w") as f:
                f.write(text)
            jobs = compare_job.rewrite_job(src, dst, overrides, drop)
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
        s = compare_run.summarize(data, "x.json")
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
        s = compare_run.summarize(data, "x.json")
        self.assertIsNone(s["clat_mean_us"])
        self.assertAlmostEqual(s["iops"], 100.0)

    def test_summarize_issued(self):
        data = {"jobs": [{"jobname": "a", "job_runtime": 1000, "usr_cpu": 1.0, "sys_cpu": 1.0,
                          "write": ddir(1024, 1024.0, 1024 * 4096, 1000),
                          "trim": ddir(10, 10.0, 0, 1000),
                          "sync": {"total_ios": 127, "lat_ns": {"N": 127}}}]}
        s = compare_run.summarize(data, "x.json")
        self.assertEqual([s[f"issued_{k}"] for k in ("writes", "syncs", "trims", "ios")],
                         [1024, 127, 10, 1034])

    def test_summarize_refuses(self):
        with self.assertRaisesRegex(fio_json.FioJsonError, "no jobs"):
            compare_run.summarize({"jobs": []}, "x")
        with self.assertRaisesRegex(fio_json.FioJsonError, "error 5"):
            compare_run.summarize({"jobs": [{"jobname": "a", "error": 5}]}, "x")


class Costs(unittest.TestCase):
    def test_kernel_path_against_its_engine(self):
        rs = [result("engine-nbd", clat=100.0, cpu=10.0, fio_cpu=5.0, iops=1000.0),
              result("kernel-loop", clat=150.0, cpu=25.0, fio_cpu=4.0, iops=800.0)]
        compare_rounds.add_costs(rs)
        c = rs[1]["vs_engine"]
        self.assertEqual(c["baseline"], "engine-nbd")
        self.assertAlmostEqual(c["latency_ratio"], 1.5)
        self.assertAlmostEqual(c["latency_extra_us"], 50.0)
        self.assertAlmostEqual(c["cpu_ratio"], 2.5)
        self.assertAlmostEqual(c["cpu_extra_us"], 15.0)
        self.assertAlmostEqual(c["fio_cpu_ratio"], 0.8)
        self.assertAlmostEqual(c["iops_ratio"], 0.8)
        self.assertNotIn("vs_engine", rs[0])

    def test_each_rounds_own_ratio(self):
        # the median of the rounds' ratios (0.5, 1.5, 0.5), not the ratio of
        # the medians (150 / 200)
        rs = [rounds("engine-nbd", [100.0, 200.0, 300.0]),
              rounds("kernel-nbd", [50.0, 300.0, 150.0], clat=[100.0, 120.0, 110.0])]
        compare_rounds.add_costs(rs)
        c = rs[1]["vs_engine"]
        self.assertAlmostEqual(c["iops_ratio"], 0.5)
        self.assertEqual(c["range"]["iops_ratio"], [0.5, 1.5])
        self.assertEqual([x["iops_ratio"] for x in c["rounds"]], [0.5, 1.5, 0.5])
        self.assertAlmostEqual(c["latency_ratio"], 1.1)
        self.assertAlmostEqual(c["latency_extra_us"], 10.0)
        self.assertEqual(c["range"]["latency_extra_us"], [0.0, 20.0])

    def test_tcmu_against_nbd(self):
        rs = [result("engine-nbd", iops=1000.0), result("engine-tcmu", iops=600.0)]
        compare_rounds.add_costs(rs)
        self.assertEqual(rs[1]["vs_engine"]["baseline"], "engine-nbd")
        self.assertAlmostEqual(rs[1]["vs_engine"]["iops_ratio"], 0.6)
        self.assertEqual(compare_rounds.baseline_of("kernel-tcmu"), "engine-tcmu")
        self.assertIsNone(compare_rounds.baseline_of("engine-nbd"))

    def test_libnbd_against_native(self):
        rs = [result("engine-libnbd", clat=120.0, cpu=15.0, fio_cpu=9.0, iops=900.0),
              result("engine-nbd", clat=100.0, cpu=10.0, fio_cpu=6.0, iops=1000.0)]
        compare_rounds.add_costs(rs)
        c = rs[0]["vs_engine"]
        self.assertEqual(c["baseline"], "engine-nbd")
        self.assertAlmostEqual(c["iops_ratio"], 0.9)
        self.assertAlmostEqual(c["fio_cpu_ratio"], 1.5)
        self.assertAlmostEqual(c["cpu_extra_us"], 5.0)
        self.assertNotIn("vs_engine", rs[1])
        self.assertIn("| engine-libnbd | engine-nbd | 0.90x | 1.20x | +20.0 | 1.50x | +5.0 |",
                      compare_report.table(rs))

    def test_libnbd_skipped_without_it(self):
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as job, \
                tempfile.NamedTemporaryFile(suffix=".so") as engine:
            ctx = compare_run.Context(comparelib.parse_args(
                [job.name, "--paths", "engine-libnbd", "--engine", engine.name]))
            engine.write(b"\x7fELF NEEDED liburing.so.2 libc.so.6")
            engine.flush()
            with self.assertRaises(compare_run.Skip) as e:
                compare_paths.path_engine_libnbd(ctx, None, {"notes": []})
            self.assertEqual(str(e.exception), f"{engine.name} has no transport=libnbd (built "
                             "without libnbd-dev: scripts/deps.sh, then meson setup again)")

    def test_not_comparable_elsewhere(self):
        rs = [result("engine-tcmu"), result("kernel-tcmu", where="guest-tcg",
                                            functional_only=True)]
        compare_rounds.add_costs(rs)
        c = rs[1]["vs_engine"]
        self.assertEqual(c["baseline"], "engine-tcmu")
        self.assertIn("kernel-tcmu ran guest-tcg, engine-tcmu native", c["none_because"])
        self.assertNotIn("latency_ratio", c)

    def test_no_baseline_no_cost(self):
        rs = [result("engine-nbd", status="failed"), result("kernel-nbd")]
        compare_rounds.add_costs(rs)
        self.assertNotIn("vs_engine", rs[1])
        rs = [result("kernel-nbd")]
        compare_rounds.add_costs(rs)
        self.assertNotIn("vs_engine", rs[0])


class Rounds(unittest.TestCase):
    def test_alternation(self):
        self.assertEqual(compare_rounds.schedule(["a", "b", "c"], 3),
                         [(1, "a"), (1, "b"), (1, "c"), (2, "a"), (2, "b"), (2, "c"),
                          (3, "a"), (3, "b"), (3, "c")])
        self.assertEqual(compare_rounds.schedule(["a"], 1), [(1, "a")])

    def test_default_three_rounds(self):
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as job:
            self.assertEqual(comparelib.parse_args([job.name]).rounds, 3)
            self.assertEqual(comparelib.parse_args([job.name, "--rounds", "1"]).rounds, 1)
            import io
            import contextlib
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                comparelib.parse_args([job.name, "--rounds", "0"])
            self.assertEqual(e.exception.code, 2)
            self.assertIn("--rounds must be at least 1", err.getvalue())

    def test_median_and_range(self):
        self.assertEqual(stats.summary([3.0, 1.0, 2.0]), (2.0, 1.0, 3.0))
        self.assertEqual(stats.summary([4.0, None, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0))
        self.assertIsNone(stats.summary([None, None]))
        med, rng = compare_rounds.combine([{"iops": 10.0, "how": "bins", "clat": None},
                                           {"iops": 30.0, "how": "read", "clat": 5.0},
                                           {"iops": 20.0, "how": "bins", "clat": 7.0}])
        self.assertEqual(med, {"iops": 20.0, "how": "bins", "clat": 6.0})
        self.assertEqual(rng, {"iops": [10.0, 30.0], "clat": [5.0, 7.0]})

    def test_merge(self):
        r = rounds("engine-nbd", [1000.0, 1200.0, 1100.0], clat=[100.0, 90.0, 95.0])
        self.assertEqual(r["status"], "ok")
        self.assertEqual(r["figures"]["iops"], 1100.0)
        self.assertEqual(r["figures"]["clat_mean_us"], 95.0)
        self.assertEqual(r["range"]["iops"], [1000.0, 1200.0])
        self.assertEqual(r["figures"]["percentiles_from"], "bins")
        self.assertAlmostEqual(r["spread"]["iops"], 1.2)
        self.assertEqual(r["flagged"], [])
        self.assertEqual(r["median_round"], 3)
        # every round's raw figures, for results.json
        self.assertEqual([x["figures"]["iops"] for x in r["rounds"]], [1000.0, 1200.0, 1100.0])
        self.assertEqual([x["round"] for x in r["rounds"]], [1, 2, 3])
        # even rounds: the lower middle one stands for the path
        self.assertEqual(rounds("engine-nbd", [4.0, 1.0, 3.0, 2.0])["median_round"], 4)

    def test_spread_flag(self):
        # exactly 1.25x is not flagged; more is, on IOPS or mean latency
        self.assertEqual(rounds("engine-nbd", [1000.0, 1250.0])["flagged"], [])
        self.assertEqual(rounds("engine-nbd", [1000.0, 1260.0])["flagged"], ["iops"])
        r = rounds("engine-nbd", [1000.0, 1000.0], clat=[100.0, 140.0])
        self.assertEqual(r["flagged"], ["clat_mean_us"])
        self.assertAlmostEqual(r["spread"]["clat_mean_us"], 1.4)
        self.assertEqual(result("engine-nbd")["flagged"], [])

    def test_a_round_that_did_not_run(self):
        r = compare_rounds.merge_rounds([run("kernel-loop", status="skipped")])
        self.assertEqual((r["status"], r["reason"]), ("skipped", "kernel-loop could not"))
        self.assertIsNone(r["figures"])
        r = compare_rounds.merge_rounds([run("kernel-loop"), run("kernel-loop", status="skipped")])
        self.assertEqual((r["status"], r["reason"]), ("failed", "round 2: kernel-loop could not"))
        self.assertIsNone(r["figures"])
        self.assertEqual(r["rounds"][0]["figures"]["iops"], 1000.0)

    def test_notes_once(self):
        r = compare_rounds.merge_rounds([run("kernel-loop", notes=["a", "b"]),
                                         run("kernel-loop", notes=["a", "c"])])
        self.assertEqual(r["notes"], ["a", "b", "c"])

    def test_probe(self):
        # scripts/bench_run.py's own probe, run as compare runs it
        ms = comparelib.cpu_probe()
        self.assertIsInstance(ms, float)
        self.assertGreater(ms, 0)
        self.assertEqual(compare_report.probe_text([None, None]), None)
        text = compare_report.probe_text([400.0, 250.4, None])
        self.assertIn("scripts/bench_run.py's cpu_probe", text)
        self.assertTrue(text.endswith(": before round 1 400 ms; after round 1 250 ms."), text)


class Latency(unittest.TestCase):
    def job(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_found(self):
        job = self.job("[global]\ngtod_reduce=1\n; disable_clat=1\n[a]\ndisable_clat = true\n"
                       "[b]\ngtod_reduce=1\n")
        self.assertEqual(compare_job.latency_off(job), ["gtod_reduce=1", "disable_clat=true"])
        self.assertEqual(compare_job.latency_on(["gtod_reduce=1", "disable_clat=true"]),
                         {"gtod_reduce": "0", "disable_clat": "0"})
        self.assertEqual(compare_job.latency_off(self.job("[a]\ngtod_reduce\n")), ["gtod_reduce"])
        self.assertEqual(compare_job.latency_off(
            self.job("[a]\ngtod_reduce=0\ndisable_clat=off\ndisable_slat=1\n")), [])

    def test_run_with_latency_on(self):
        job = self.job("[global]\nbs=4k\ngtod_reduce=1\n[a]\nrw=read\n")
        args = comparelib.parse_args([job])
        ctx = compare_run.Context(args)
        self.assertEqual(ctx.latency_on, {"gtod_reduce": "0"})
        out = job + ".out"
        self.addCleanup(os.unlink, out)
        compare_job.rewrite_job(job, out, ctx.latency_on)
        with open(out) as f:
            lines = f.read().splitlines()
        self.assertIn("; (scripts/compare) gtod_reduce=1", lines)
        self.assertEqual(lines[lines.index("[a]") + 1], "gtod_reduce=0")
        self.assertEqual(compare_report.latency_text(ctx.latency_found, ctx.latency_on),
                         "The job turns fio's latency recording off (gtod_reduce=1); compare "
                         "ran it with gtod_reduce=0, so that every path's latency is measured "
                         "(at the cost of reading the clock per I/O).")
        # --as-written runs the job as it is
        ctx = compare_run.Context(comparelib.parse_args([job, "--as-written"]))
        self.assertEqual(ctx.latency_on, {})
        self.assertIn("--as-written keeps it so",
                      compare_report.latency_text(ctx.latency_found, ctx.latency_on))
        ctx = compare_run.Context(comparelib.parse_args([self.job("[a]\nrw=read\n")]))
        self.assertEqual((ctx.latency_found, ctx.latency_on), ([], {}))
        self.assertIsNone(compare_report.latency_text([], {}))


class Table(unittest.TestCase):
    def test_rows(self):
        rs = [result("engine-nbd"), result("kernel-loop", clat=150.0, cpu=25.0),
              result("kernel-tcmu", where="guest-tcg", functional_only=True),
              result("engine-tcmu", iops=500.0), result("guest-virtio", status="skipped")]
        rs[1]["notes"].append("nbdfuse /x")
        compare_rounds.add_costs(rs)
        text = compare_report.table(rs)
        lines = text.splitlines()
        self.assertEqual(lines[0], "| path | where | rounds | IOPS | MiB/s | clat mean µs | p50 "
                         "| p99 | p99.9 | fio CPU µs/IO | machine CPU µs/IO "
                         "| kernel's submission share µs/IO | kernel's completion share µs/IO |")
        self.assertEqual(lines[1], "|" + "---|" * 13)
        # one round: no min–max; no kernel's shares but on engine-tcmu
        self.assertIn("| engine-nbd | native | 1 | 1000 | 3.9 | 100.0 | 100.0 | 200.0 | 300.0 | "
                      "5.00 | 10.00 | – | – |", lines)
        row = next(line for line in lines if line.startswith("| kernel-tcmu |"))
        self.assertIn("guest-tcg **functional only**", row)
        self.assertIn("| kernel-loop | engine-nbd | 1.00x | 1.50x | +50.0 | 2.50x | +15.0 |",
                      lines)
        self.assertIn("| engine-tcmu | engine-nbd | 0.50x | 1.00x | +0.0 | 1.00x | +0.0 |",
                      lines)
        self.assertIn("| kernel-tcmu | engine-tcmu | not comparable: kernel-tcmu ran guest-tcg, "
                      "engine-tcmu native (--engine-in-guest compares them there) | – | – | – "
                      "| – |", lines)
        self.assertIn("| guest-virtio | skipped | guest-virtio could not |", lines)
        self.assertEqual(lines[-1], "- kernel-loop: nbdfuse /x")
        self.assertNotIn("IOPS of every round", text)

    def test_rounds_and_flag(self):
        rs = [rounds("engine-nbd", [1000.0, 1300.0, 1100.0]),
              rounds("kernel-loop", [900.0, 1000.0, 950.0], clat=[110.0, 100.0, 105.0])]
        compare_rounds.add_costs(rs)
        lines = compare_report.table(rs).splitlines()
        self.assertIn("| engine-nbd ‡ | native | 3 | 1100 (1000–1300) ‡ | 4.3 (3.9–5.1) | "
                      "100.0 (100.0–100.0) | 100.0 (100.0–100.0) | 200.0 (200.0–200.0) | "
                      "300.0 (300.0–300.0) | 5.00 (5.00–5.00) | 10.00 (10.00–10.00) | – | – "
                      "|",
                      lines)
        self.assertTrue(any(line.startswith("| kernel-loop | native | 3 | 950 (900–1000) | ")
                            for line in lines), lines)
        self.assertIn("‡ The rounds of these paths moved more than 1.25x (max/min), so their "
                      "medians say less than the others': more --rounds, a longer --seconds or "
                      "a quieter machine narrow them.", lines)
        self.assertIn("- engine-nbd: IOPS 1.30x", lines)
        self.assertFalse(any(line.startswith("- kernel-loop: IOPS") for line in lines))
        self.assertIn("- engine-nbd: 1000, 1300, 1100", lines)
        self.assertIn("- kernel-loop: 900, 1000, 950", lines)
        # each ratio the median of the rounds' own: 0.90, 0.77, 0.86 -> 0.86
        row = next(line for line in lines if line.startswith("| kernel-loop | engine-nbd |"))
        self.assertTrue(row.startswith("| kernel-loop | engine-nbd | 0.86x (0.77–0.90) | "
                                       "1.05x (1.00–1.10) | +5.0 (+0.0–+10.0) |"), row)

    def test_kernel_shares(self):
        """engine-tcmu's kernel's shares: a column each, median and min–max,
        and a line under the costs saying its CPU figure holds them, with
        where the kernel does each."""
        rs = [rounds("engine-nbd", [1000.0, 1000.0, 1000.0]),
              rounds("engine-tcmu", [900.0, 950.0, 1000.0], share=[0.5, 0.25, 0.75],
                     sub_share=[0.125, 0.25, 0.0625])]
        compare_rounds.add_costs(rs)
        lines = compare_report.table(rs).splitlines()
        row = next(line for line in lines if line.startswith("| engine-tcmu | native |"))
        self.assertTrue(row.endswith("| 10.00 (10.00–10.00) | 0.12 (0.06–0.25) "
                                     "| 0.50 (0.25–0.75) |"), row)
        row = next(line for line in lines if line.startswith("| engine-nbd | native |"))
        self.assertTrue(row.endswith("| 10.00 (10.00–10.00) | – | – |"), row)
        self.assertIn("engine-tcmu's CPU per I/O includes the kernel's shares, work the engine "
                      "does in fio's thread that the kernel does elsewhere: its submission "
                      "share, 0.12 (0.06–0.25) µs/IO (taking a cmd_id and data blocks, building "
                      "the ring entry and CDB, copying a write's data in, publishing cmd_head, "
                      "waking the handler: the kernel does this in a kworker "
                      "(target_queued_submit_work → tcmu_queue_cmd → queue_cmd_ring; "
                      "tcmu_unplug_device → uio_event_notify)); and its completion share, 0.50 "
                      "(0.25–0.75) µs/IO (finding completions, copying reads out, freeing "
                      "blocks and cmd_ids, handing each on: the kernel does this inside the "
                      "handler's notify write() (tcmu_irqcontrol → tcmu_handle_completions) and "
                      "charges it to the handler, queueing the rest of each completion for a "
                      "kworker (target_complete_cmd)).", lines)
        self.assertEqual([x["figures"]["kernel_completion_share_us_per_io"]
                          for x in rs[1]["rounds"]], [0.5, 0.25, 0.75])
        self.assertEqual([x["figures"]["kernel_submission_share_us_per_io"]
                          for x in rs[1]["rounds"]], [0.125, 0.25, 0.0625])
        # one side only (an engine of before the submission share): that one
        rs = [rounds("engine-nbd", [1000.0]), rounds("engine-tcmu", [900.0], share=[0.5])]
        compare_rounds.add_costs(rs)
        line = next(x for x in compare_report.table(rs).splitlines()
                    if x.startswith("engine-tcmu's CPU"))
        self.assertIn("elsewhere: its completion share, 0.50 µs/IO (", line)
        self.assertNotIn("submission", line)
        # no engine-tcmu with a share: no line
        rs = [rounds("engine-nbd", [1000.0]), rounds("engine-tcmu", [900.0])]
        compare_rounds.add_costs(rs)
        self.assertNotIn("kernel's shares, ", compare_report.table(rs))

    def test_issued(self):
        """The syncs each path issued, medians of the rounds, in a table of
        their own; a path more than 10% off the others' rate is marked."""
        def counted(path, syncs):
            runs = [run(path) for _ in syncs]
            for r, s in zip(runs, syncs):
                r["figures"].update(issued.as_figures(
                    {"writes": 1024, "syncs": s, "trims": 0, "ios": 1024}))
            return compare_rounds.merge_rounds(runs)
        rs = [counted("engine-nbd", [665, 600, 640]), counted("engine-tcmu", [127, 127, 127]),
              counted("kernel-loop", [127, 128, 126]), result("kernel-nbd", status="skipped")]
        compare_rounds.add_costs(rs)
        lines = compare_report.table(rs).splitlines()
        self.assertEqual(lines[0].count("|"), 14)       # the figures' table as it was
        self.assertIn("| engine-nbd | 1024 | 640 | 0.625 | 1024 | 0 | 0.000 | "
                      "**differs**: syncs per write |", lines)
        self.assertIn("| kernel-loop | 1024 | 127 | 0.124 | 1024 | 0 | 0.000 |  |", lines)
        self.assertTrue(any(line.startswith("**The paths did not issue the same syncs")
                            for line in lines), lines)
        self.assertEqual(issued.differing(issued.of_results(rs)), {"engine-nbd": ["syncs"]})
        # no syncs, no trims: no such table
        rs = [counted("engine-nbd", [0]), counted("kernel-loop", [0])]
        self.assertNotIn("Syncs and trims", compare_report.table(rs))
        self.assertNotIn("Syncs and trims", compare_report.table([result("engine-nbd")]))

    def test_parse_kernel_shares(self):
        done = ("torus: tcmu: the kernel's completion share: {} ns per command over {} "
                "commands (finding completions, copying reads out, freeing blocks and cmd_ids, "
                "handing each on: done in fio's thread here, inside the handler's notify "
                "write() in the kernel, which only queues the rest of the completion for a "
                "kworker)\n")
        sub = ("torus: tcmu: the kernel's submission share: {} ns per command over {} "
               "commands, timed on {} and 9 of 99 wake-ups (taking a cmd_id and data blocks, "
               "building the entry and CDB, copying a write's data in, publishing cmd_head, "
               "waking the handler: done in fio's thread "
               "here, in a kworker in the kernel)\n")
        text = ("fio-3.33\n" + sub.format(100, 1000, 60) + done.format(800, 1000) + "other\n"
                + sub.format(300, 3000, 190) + done.format(1200, 3000))
        # two jobs: (800*1000 + 1200*3000) ns over 4000 I/Os = 1.1 µs
        self.assertAlmostEqual(kernel_shares.per_io(text, 4000, "completion"), 1.1)
        # (100*1000 + 300*3000) ns over 4000 I/Os = 0.25 µs; the sample's size aside
        self.assertAlmostEqual(kernel_shares.per_io(text, 4000, "submission"), 0.25)
        self.assertEqual(kernel_shares.figures(text, 4000),
                         {"kernel_submission_share_us_per_io": 0.25,
                          "kernel_completion_share_us_per_io": 1.1})
        # split requests: per I/O, not per command
        self.assertAlmostEqual(kernel_shares.per_io(done.format(500, 4000), 1000,
                                                        "completion"), 2.0)
        self.assertAlmostEqual(kernel_shares.per_io(sub.format(500, 4000, 9), 1000,
                                                        "submission"), 2.0)
        # one side's line is not the other's
        self.assertIsNone(kernel_shares.per_io(done.format(500, 10), 10, "submission"))
        self.assertIsNone(kernel_shares.per_io(sub.format(500, 10, 1), 10, "completion"))
        self.assertEqual(kernel_shares.figures("torus: nbd: whatever\n", 4000),
                         {"kernel_submission_share_us_per_io": None,
                          "kernel_completion_share_us_per_io": None})
        self.assertIsNone(kernel_shares.per_io(done.format(500, 10), 0, "completion"))

    def test_fmt(self):
        self.assertEqual(compare_report.fmt(None), "–")
        self.assertEqual(compare_report.fmt(12345.0), "12.3k")
        self.assertEqual(compare_report.fmt(1.234, 2), "1.23")
        self.assertEqual(compare_report.cell(2.0, [1.0, 3.0], True), "2.0 (1.0–3.0)")
        self.assertEqual(compare_report.cell(2.0, [1.0, 3.0], False), "2.0")
        self.assertEqual(compare_report.cell(None, None, True), "–")
        self.assertEqual(compare_report.cell(0.5, [0.25, 1.0], True, digits=2, unit="x"),
                         "0.50x (0.25–1.00)")
        self.assertEqual(compare_report.cell(-1.0, [-2.0, 3.0], True, form=compare_report.fmt_extra),
                         "-1.0 (-2.0–+3.0)")


class Small(unittest.TestCase):
    def test_parse_size(self):
        self.assertEqual(comparelib.parse_size("256M"), 256 << 20)
        self.assertEqual(comparelib.parse_size("4GiB"), 4 << 30)
        self.assertEqual(comparelib.parse_size("512"), 512)
        with self.assertRaisesRegex(argparse.ArgumentTypeError, "not a size: '4X'"):
            comparelib.parse_size("4X")

    def test_resolve_fs(self):
        jobs = os.path.join(compare_job.REPO, "jobs")
        self.assertEqual(compare_job.resolve_fs("xfs", "/x.fio"), ("xfs", "--fs xfs"))
        self.assertEqual(compare_job.resolve_fs("auto", "/tmp/mine.fio"), ("none", None))
        fs, why = compare_job.resolve_fs("auto", os.path.join(jobs, "zerodisk-fs-randrw.fio"))
        self.assertEqual(fs, "ext4")
        self.assertIn("zerodisk-fs-randrw is a filesystem test", why)
        self.assertEqual(compare_job.resolve_fs("auto", os.path.join(jobs, "zerodisk-device.fio")),
                         ("none", None))

    def test_guest_failure(self):
        self.assertEqual(
            compare_paths.guest_failure(125, ["x", "the guest did not start ...",
                                              "2 boots hung: giving up (exit 125)"], "", 606),
            "the guest failed before the command ran (scripts/guest exit 125): the guest did "
            "not start ... / 2 boots hung: giving up (exit 125)")
        self.assertEqual(compare_paths.guest_failure(124, ["timed out after 606 s"], "", 606),
                         "scripts/guest timed out (exit 124, --timeout 606 s): "
                         "timed out after 606 s")
        self.assertEqual(compare_paths.guest_failure(1, ["ignored"], "boom\n", 606),
                         "scripts/guest exited 1 without a result; it printed: boom")

    def test_list(self):
        import io
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as e:
            comparelib.parse_args(["--list"])
        self.assertEqual(e.exception.code, 0)
        self.assertEqual(out.getvalue().split(), compare_paths.NAMES)

    def test_help_says_rounds(self):
        import io
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
            comparelib.parse_args(["--help"])
        text = " ".join(out.getvalue().split())
        for said in ("--rounds N", "(default 3)",
                     "--rounds N rounds of every path, run in alternation",
                     "once per round (ABC ABC ABC)",
                     "median of the rounds with its min-max", "median of each round's own ratio",
                     "more than 1.25x (max/min)", "CPU-speed probe",
                     "gtod_reduce=1, disable_clat=1) runs with it on (gtod_reduce=0"):
            self.assertIn(said, text)

    def test_help_lists_the_records(self):
        text = compare_paths.paths_text()
        for p in compare_paths.PATHS:
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
    main()
