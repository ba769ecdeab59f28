#!/usr/bin/env python3
"""Unit tests of scripts/bench's modules without running a benchmark:
bench_cli.py (the options and their errors), bench_run.py (the rotation of the clients,
the CPU-speed probe, the machine's busy share, a child's CPU time, the
records a section makes) and bench_sections.py (the table: every section
once, its groups, what it needs). The real run of one section is
test-bench-report.sh."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

from testlib import main
import bench_cli
import bench_run
import bench_sections


def options(*argv):
    return bench_cli.Options(list(argv), bench_sections.groups(), list(bench_sections.SECTIONS))


class Page(unittest.TestCase):
    """--report replaces the sections it ran on the page and keeps the
    others; a records file it cannot read is named, with the fix."""

    def run_of(self, sid, commit):
        import benchlib
        r = benchlib.Records()
        for rec in [("meta", "commit", commit), ("meta", "started", commit),
                    ("section", sid, f"title {sid}", sid), ("ratio", sid, "iops", "a", "b"),
                    ("value", sid, "a", 1, "iops", 2.0), ("value", sid, "b", 1, "iops", 1.0)]:
            r.add(*rec)
        return r

    def test_partial_rerun(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            page = os.path.join(d, "page.md")
            bench_cli.write_page(page, self.run_of("s1", "c1"))
            bench_cli.write_page(page, self.run_of("s2", "c2"))
            bench_cli.write_page(page, self.run_of("s1", "c3"))
            with open(page) as f:
                text = f.read()
            self.assertTrue(os.path.exists(os.path.join(d, "page.json")))
        self.assertNotIn("c1", text)
        self.assertIn("- **Commit**: c2", text)
        self.assertIn("- **Commit**: c3", text)
        self.assertIn("(`s1`)", text)
        self.assertIn("(`s2`)", text)

    def test_bad_records_named(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "page.json"), "w") as f:
                f.write("{}")
            with self.assertRaisesRegex(bench_cli.BenchError,
                                        r"page.json: not the records .*: remove .*page.json"):
                bench_cli.write_page(os.path.join(d, "page.md"), self.run_of("s1", "c1"))


class Options(unittest.TestCase):
    def test_defaults(self):
        o = options()
        self.assertEqual((o.runtime, o.rounds, o.size, o.mode), (8, 3, "8G", "full"))
        self.assertEqual(o.sections, bench_sections.groups()["engine"])
        self.assertEqual(o.placements, ["pinned"] if os.cpu_count() >= 2 else ["free"])
        self.assertIsNone(o.report)

    def test_quick_and_its_overrides(self):
        o = options("--quick")
        self.assertEqual((o.runtime, o.rounds, o.size, o.mode), (2, 1, "1G", "quick"))
        o = options("--quick", "--runtime", "1")
        self.assertEqual((o.runtime, o.rounds), (1, 1))

    def test_report_runs_everything_in_both_placements(self):
        with tempfile.TemporaryDirectory() as d:
            o = options("--report", os.path.join(d, "page.md"))
        self.assertEqual(o.sections, bench_sections.groups()["all"])
        if os.cpu_count() >= 2:
            self.assertEqual(o.placements, ["pinned", "free"])
        o = options("--report", "--sections", "randread4k_qd16")
        self.assertTrue(o.report.endswith(os.path.join("docs", "performance.md")))
        self.assertEqual(o.sections, ["randread4k_qd16"])

    def test_groups_and_ids(self):
        o = options("--sections", "shims,transports_tls_64k")
        self.assertEqual(o.sections, ["shim_std_qd64", "shim_probe", "shim_docs",
                                      "transports_tls_64k"])

    def test_errors_name_the_fix(self):
        for argv, msg in [(["--sections", "nope"], "unknown section 'nope'"),
                          (["--placements", "both"], "use pinned, free or pinned,free"),
                          (["--rounds", "0"], "--rounds wants a positive number"),
                          (["--runtime", "0"], "--runtime wants whole seconds"),
                          (["--size", "lots"], "not a size"),
                          (["--report", "/no/such/dir/page.md"], "give a file in an existing")]:
            with self.assertRaisesRegex(bench_cli.BenchError, msg):
                options(*argv)

    def test_engine_from_build(self):
        o = options("--build", "/b")
        self.assertEqual(o.engine, "/b/engines/libtorus.so")
        self.assertEqual(o.pipe_probe, os.environ.get("PIPE_PROBE",
                                                      "/b/tests/shims/pipe-probe"))


class Pieces(unittest.TestCase):
    def test_in_turn_rotates(self):
        orders = []
        for r in (1, 2, 3, 4):
            seen = []
            bench_run.in_turn(r, [lambda x=x: seen.append(x) for x in "ABC"])
            orders.append("".join(seen))
        self.assertEqual(orders, ["ABC", "BCA", "CAB", "ABC"])

    def test_cpu_probe(self):
        before = os.sched_getaffinity(0)
        ms = bench_run.cpu_probe(min(before), loops=300000)
        self.assertGreater(ms, 0)
        self.assertEqual(os.sched_getaffinity(0), before)

    def test_busiest_cpu(self):
        pct = bench_run.busiest_cpu_pct(0.05)
        self.assertGreaterEqual(pct, 0)
        self.assertLessEqual(pct, 100)

    def test_timed_run(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            rc, cpu = bench_run.timed_run(
                [sys.executable, "-c", "sum(range(3000000)); print(7)"], out, out)
            self.assertEqual(rc, 0)
            self.assertGreater(cpu, 0)
            with open(out) as f:
                self.assertEqual(f.read(), "7\n")
            rc, _ = bench_run.timed_run(["false"], out, out)
            self.assertEqual(rc, 1)


class Records(unittest.TestCase):
    def test_free_placement_and_section_names(self):
        with tempfile.TemporaryDirectory() as d:
            b = bench_run.Bench(options("--no-speed-probe"), d)
            b.place("free", "randread4k_qd16")
            b.record("section", "s", "a title")
            b.value("s", "torus", 1, "iops", 5.0)
            b.o.runtime = 2
            with contextlib.redirect_stdout(io.StringIO()):
                note = b.server_end("s", "torus", 1, object(), bench_run.CLK_TCK, 1000)
        self.assertEqual(b.records.all[0], ("section", "s@free", "a title", "randread4k_qd16"))
        self.assertEqual(b.records.values["s@free"]["torus"]["iops"], [5.0])
        # one second of CPU over 1000 I/Os in a run of 2 s
        self.assertEqual(b.records.values["s@free"]["torus"]["server_cpu_us_per_io"], [1000.0])
        self.assertEqual(b.records.values["s@free"]["torus"]["server_cpu_pct"], [50.0])
        self.assertIn("1000.000 us CPU/IO (50%)", note)

    def test_derived_difference_and_its_target(self):
        """engine-own: the engine's CPU per I/O less fio's null engine's in
        each round, and the target a ratio of those rounds to ring-client's."""
        import benchlib
        with tempfile.TemporaryDirectory() as d:
            b = bench_run.Bench(options("--no-speed-probe"), d)
            b.place("free", "tcmu_ceiling_qd32")
            b.record("section", "t", "a title")
            b.record("target", "t", "cpu_us_per_io", "engine-own", "ring-client", "<=", 1.5)
            for r, (e, n, rc) in enumerate([(1.6, 0.5, 0.5), (1.4, 0.5, 0.6),
                                            (1.9, 0.4, 0.5)], 1):
                b.value("t", "engine", r, "cpu_us_per_io", e)
                b.value("t", "fio-null", r, "cpu_us_per_io", n)
                b.value("t", "ring-client", r, "cpu_us_per_io", rc)
            ds = b.derive_diff("t", "engine-own", "engine", "fio-null", "cpu_us_per_io")
            # a client that missed a round gives nothing to derive
            b.value("t", "half", 1, "cpu_us_per_io", 1.0)
            none = b.derive_diff("t", "x", "half", "fio-null", "cpu_us_per_io")
        self.assertEqual([round(v, 6) for v in ds], [1.1, 0.9, 1.5])
        self.assertEqual(none, [])
        vals = b.records.values["t@free"]
        self.assertEqual([round(v, 6) for v in vals["engine-own"]["cpu_us_per_io"]],
                         [1.1, 0.9, 1.5])
        self.assertNotIn("x", vals)
        # rounds' own ratios 2.2, 1.5, 3.0: median 2.2, a MISS of <= 1.5
        r = benchlib.paired_ratio(vals, "engine-own", "ring-client", "cpu_us_per_io")
        self.assertAlmostEqual(r, 2.2)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            missed = benchlib.report(b.records)
        self.assertEqual(missed, 1)
        self.assertIn("engine-own/ring-client 2.20 (target <= 1.50: MISS)", out.getvalue())


class Table(unittest.TestCase):
    def test_every_section_once_with_its_needs(self):
        groups = bench_sections.groups()
        self.assertEqual(groups["all"], [n for g, ns in groups.items() if g != "all"
                                         for n in ns])
        attrs = vars(options())
        for s in bench_sections.SECTIONS.values():
            self.assertTrue(callable(s.run), s.name)
            for need in s.needs:
                self.assertTrue(need in attrs or "_" not in need, (s.name, need))
            # a section outside every group runs only when named: its help says so
            self.assertEqual(s.name in groups["all"], "(by name only)" not in s.what, s.name)

    def test_help_lists_the_sections(self):
        text = bench_sections.sections_text()
        for name in bench_sections.SECTIONS:
            self.assertIn(name, text)


if __name__ == "__main__":
    main()
