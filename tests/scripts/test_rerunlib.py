#!/usr/bin/env python3
"""scripts/rerunlib.py's own logic, without fio or a server: sizes, how
each document test is scaled to this machine (its job's environment and
the export it needs), the report's order and numbers, which programs
the chosen tests lack, and --sweep ID's grid around a job's point and its
scripts/compare command."""

import argparse
import contextlib
import datetime
import io
import os
import tempfile
import types
import unittest

from testlib import main
import compare_paths
import docs_tests
import rerunlib
from docs_tests import KiB, MiB, GiB


def args(**kw):
    a = {"seconds": 60, "size_cap": 512 * MiB, "short": False, "kernel_paths": []}
    a.update(kw)
    return types.SimpleNamespace(**a)


class Sizes(unittest.TestCase):
    def test_parse_size(self):
        for text, n in (("64M", 64 * MiB), ("2G", 2 * GiB), (" 2 GiB ", 2 * GiB), ("4k", 4 * KiB),
                        ("512", 512), ("1t", 1 << 40), ("8MB", 8 * MiB)):
            self.assertEqual(rerunlib.parse_size(text), n, text)
        for bad in ("", "M", "1.5G", "2X", "-1M"):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, "not a size", msg=bad):
                rerunlib.parse_size(bad)

    def test_human_bytes(self):
        self.assertEqual(rerunlib.human_bytes(64 * MiB), "64 MiB")
        self.assertEqual(rerunlib.human_bytes(3 * GiB // 2), "1536 MiB")
        self.assertEqual(rerunlib.human_bytes(4096000000), "4000000 KiB")       # exact first
        self.assertEqual(rerunlib.human_bytes(4096000001), "3.8 GiB")
        self.assertEqual(rerunlib.human_bytes(100), "100 B")

    def test_fmt(self):
        self.assertEqual([rerunlib.fmt(v) for v in (None, 12345, 250.4, 12.34, 1.234)],
                         ["—", "12.3k", "250", "12.3", "1.23"])


class Plan(unittest.TestCase):
    """plan(): the job's TORUS_* environment and the export size."""

    def test_size_capped_to_whole_blocks(self):
        t = docs_tests.by_id("torus-randrw-64k")          # 4 GiB, 1 MiB blocks at most
        env, need, scale = rerunlib.plan(t, args(size_cap=100 * MiB + 5, seconds=3))
        self.assertEqual(env, {"TORUS_RUNTIME": "3", "TORUS_SIZE": str(100 * MiB)})
        self.assertEqual(need, 100 * MiB)
        self.assertIsNone(scale)

    def test_runtime(self):
        t = docs_tests.by_id("zerodisk-device")           # the document: 30 s
        self.assertEqual(rerunlib.plan(t, args(seconds=60))[0]["TORUS_RUNTIME"], "30")
        self.assertEqual(rerunlib.plan(t, args(seconds=5))[0]["TORUS_RUNTIME"], "5")
        self.assertEqual(rerunlib.plan(t, args(seconds=0))[0]["TORUS_RUNTIME"], "30")
        t = docs_tests.by_id("torus-ddwrite")             # until the size is done
        self.assertEqual(rerunlib.plan(t, args(seconds=7))[0]["TORUS_RUNTIME"], "7")

    def test_small_files(self):
        t = docs_tests.by_id("gluster-smallfiles-extract")
        env, need, scale = rerunlib.plan(t, args())
        self.assertEqual(env["TORUS_NRFILES"], "2000")
        self.assertNotIn("TORUS_SIZE", env)
        self.assertEqual(need, 64 * KiB)
        per = docs_tests.SMALLFILE_BYTES_PER_FILE
        self.assertEqual(scale, {"amount": 2000 * per, "doc_amount": 2000 * per})
        env, _, scale = rerunlib.plan(t, args(short=True))
        self.assertEqual(env["TORUS_NRFILES"], "200")
        self.assertEqual(scale["amount"], 200 * per)

    def test_delete_trims_what_extract_wrote(self):
        t = docs_tests.by_id("gluster-smallfiles-delete")
        per = docs_tests.SMALLFILE_BYTES_PER_FILE
        env, need, scale = rerunlib.plan(t, args(short=True))
        self.assertEqual(env["TORUS_SIZE"], str(docs_tests.SMALLFILE_NRFILES // 10 * per))
        self.assertEqual(scale, {"amount": docs_tests.SMALLFILE_NRFILES // 10 * per,
                                 "doc_amount": t["size"]})

    def test_kernel_paths_room_for_a_filesystem(self):
        t = docs_tests.by_id("gluster-dd-1g-fsync")      # filesystem, one job section
        _, need, _ = rerunlib.plan(t, args(size_cap=64 * MiB))
        _, need_fs, _ = rerunlib.plan(t, args(size_cap=64 * MiB, kernel_paths=["kernel-loop"]))
        self.assertEqual(need, 64 * MiB)
        self.assertEqual(need_fs, 64 * MiB + 8 * MiB + 64 * MiB)
        t = docs_tests.by_id("zerodisk-device")           # no filesystem: as it was
        self.assertEqual(rerunlib.plan(t, args(kernel_paths=["kernel-loop"]))[1],
                         rerunlib.plan(t, args())[1])


class Report(unittest.TestCase):
    def test_order(self):
        ids = ["torus-randrw-4k-tcmu", "gluster-dd-1g-fsync", "torus-randrw-4k",
               "torus-ddwrite-tcmu", "torus-ddwrite"]
        rs = [{"id": i, "base": docs_tests.by_id(i)["base"],
               "transport": docs_tests.by_id(i)["transport"]} for i in ids]
        self.assertEqual([r["id"] for r in rerunlib.report_order(rs)],
                         ["torus-ddwrite", "torus-ddwrite-tcmu", "torus-randrw-4k",
                          "torus-randrw-4k-tcmu", "gluster-dd-1g-fsync"])

    def test_kernel_cell(self):
        m = {"key": "iops"}
        self.assertEqual(rerunlib.kernel_cell(None, m), "—")
        self.assertEqual(rerunlib.kernel_cell({"status": "skipped"}, m), "skipped (below)")
        self.assertEqual(rerunlib.kernel_cell({"status": "ok", "figures": {"iops": 1500.0},
                                               "functional_only": True}, m),
                         "1500 (functional only)")

    def test_kernel_paths_are_compare_paths(self):
        """Every compare path that is not an engine's, those on this machine
        first, straight from compare's PATHS: a new path needs no edit here
        nor in rerunlib's --help, which lists them."""
        kernel = [p for p in compare_paths.PATHS if not p.name.startswith("engine-")]
        self.assertTrue(kernel)
        self.assertEqual(sorted(rerunlib.KERNEL_PATHS), sorted(p.name for p in kernel))
        where = [compare_paths.BY_NAME[n].where for n in rerunlib.KERNEL_PATHS]
        self.assertEqual(where, sorted(where, key=lambda w: w != "host"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
            rerunlib.main(["--help"])
        said = " ".join(out.getvalue().split())
        self.assertIn("docs/compare.md: " + ", ".join(rerunlib.KERNEL_PATHS) + "), each", said)


class Issued(unittest.TestCase):
    """The syncs and trims of each run: a test's engine runs and kernel
    paths side by side, a test whose runs differ by more than 10% said."""

    @staticmethod
    def counts(writes, syncs, trims=0):
        return {"writes": writes, "syncs": syncs, "trims": trims, "ios": writes + trims}

    def results(self):
        c = self.counts
        return [{"id": "torus-ddwrite-tcmu", "base": "torus-ddwrite", "transport": "tcmu",
                 "figures": {}, "issued": c(1000, 0)},
                {"id": "gluster-dd-1g-fsync", "base": "gluster-dd-1g-fsync",
                 "transport": "nbd", "figures": {}, "issued": c(1024, 1),
                 "kernel": {"kernel-loop": {"status": "ok", "figures": {},
                                            "issued": c(1024, 1)},
                            "kernel-nbd": {"status": "failed", "reason": "x"}}},
                {"id": "torus-ddwrite", "base": "torus-ddwrite", "transport": "nbd",
                 "figures": {}, "issued": c(1000, 0),
                 "kernel": {"kernel-loop": {"status": "ok", "figures": {},
                                            "issued": c(1000, 125)}}}]

    def test_groups(self):
        c = self.counts
        self.assertEqual(rerunlib.issued_groups(self.results()), {
            "torus-ddwrite": {"engine-nbd": c(1000, 0), "kernel-loop": c(1000, 125),
                              "engine-tcmu": c(1000, 0)},
            "gluster-dd-1g-fsync": {"engine-nbd": c(1024, 1), "kernel-loop": c(1024, 1),
                                    "kernel-nbd": None}})

    def test_report(self):
        with tempfile.TemporaryDirectory() as out:
            rerunlib.write_report(self.results(), args(timeline=False), out,
                                  datetime.datetime(2026, 1, 1), 1.0)
            with open(os.path.join(out, "report.md")) as f:
                lines = f.read().splitlines()
        self.assertIn("## Syncs and trims", lines)
        self.assertIn("| gluster-dd-1g-fsync | engine-nbd | 1024 | 1 | 0.001 | 1024 | 0 | "
                      "0.000 |  |", lines)
        self.assertIn("| torus-ddwrite | kernel-loop | 1000 | 125 | 0.125 | 1000 | 0 | 0.000 | "
                      "**differs**: syncs per write |", lines)
        self.assertIn("- torus-ddwrite: kernel-loop: syncs per write 0.125 against the paths' "
                      "median 0.000", lines)
        self.assertFalse(any("gluster-dd-1g-fsync: " in line for line in lines))


class Timeline(unittest.TestCase):
    PH = [{"name": "client submit", "where": "client", "mean_us": 1.0, "p50_us": 1.0,
           "p99_us": 2.0},
          {"name": "total", "where": "total", "mean_us": 10.0, "p50_us": 9.0, "p99_us": 20.0}]

    def test_lines_per_test_and_kernel_path(self):
        rs = [{"id": "torus-randrw-4k", "base": "torus-randrw-4k", "transport": "nbd",
               "timeline": {"phases": self.PH, "form": "server and wire"},
               "kernel": {"kernel-loop": {"status": "ok", "timeline": {"phases": self.PH}},
                          "kernel-nbd": {"status": "failed", "timeline": {"phases": self.PH}}}},
              {"id": "torus-randrw-4k-tcmu", "base": "torus-randrw-4k", "transport": "tcmu",
               "timeline": {"none": "no timeline: no records"}}]
        text = "\n".join(rerunlib.timeline_lines(rs))
        self.assertIn("## Where the time goes", text)
        self.assertIn("| torus-randrw-4k (engine-nbd) | client submit | client | 1.0 |", text)
        self.assertIn("| torus-randrw-4k (kernel-loop) | **total** |", text)
        self.assertNotIn("kernel-nbd", text)
        self.assertIn("- torus-randrw-4k-tcmu (engine-tcmu): no timeline: no records", text)

    def test_kernel_paths_get_compare_timeline(self):
        seen = []
        real = rerunlib.subprocess.run
        rerunlib.subprocess.run = lambda cmd, **kw: seen.append(cmd)
        try:
            with tempfile.TemporaryDirectory() as out:
                for on in (True, False):
                    a = args(kernel_paths=["kernel-loop"], kernel="native", engine="e",
                             fio="fio", nbd_shim="n", tcmu_shim="t", timeline=on)
                    rerunlib.run_kernel_paths(docs_tests.by_id("lustre-rand-direct"),
                                              "nbd://x", {}, a, out)
        finally:
            rerunlib.subprocess.run = real
        self.assertIn("--timeline", seen[0])
        self.assertNotIn("--timeline", seen[1])

    def test_engine_option(self):
        t = docs_tests.by_id("torus-randrw-4k")
        self.assertEqual(rerunlib.timeline_dir(t, "/r"), "/r/torus-randrw-4k.timeline")


class Programs(unittest.TestCase):
    def test_needs(self):
        self.assertEqual(rerunlib.needs(docs_tests.by_id("torus-ddwrite-tcmu")),
                         ["nbd-shim", "tcmu-shim"])
        self.assertEqual(rerunlib.needs(docs_tests.by_id("zerodisk-device")),
                         ["nbd-shim", "redis-server"])

    def test_missing(self):
        a = types.SimpleNamespace(fio="/usr/bin/fio", engine="/nonexistent/libtorus.so",
                                  nbd_shim="/nonexistent/nbd-shim", tcmu_shim=None,
                                  nbdkit="/usr/bin/nbdkit", nbd_server=None, redis_server=None)
        tests = [docs_tests.by_id("gluster-dd-1g-fsync"), docs_tests.by_id("torus-ddwrite")]
        missing = rerunlib.check_programs(tests, a)
        self.assertEqual(sorted(missing), ["libtorus.so", "nbd-shim"])
        self.assertIn("ninja -C build", missing["nbd-shim"])


class Sweep(unittest.TestCase):
    """--sweep ID: the test's job through scripts/compare --sweep around its
    own point."""

    def test_point_and_grid(self):
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as f:
            f.write("[global]\nblocksize=64k\n[a]\niodepth=16\n[b]\nbs=1m\niodepth=1\n")
            f.flush()
            self.assertEqual(rerunlib.job_point(f.name), {"bs": "64k", "iodepth": "16"})
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as f:
            f.write("[a]\nrw=read\n")                 # fio's defaults
            f.flush()
            self.assertEqual(rerunlib.job_point(f.name), {"bs": "4k", "iodepth": "1"})
        self.assertEqual(rerunlib.sweep_grid({"bs": "64k", "iodepth": "64"}),
                         ["bs=16k,64k,256k", "iodepth=16,64,256"])
        self.assertEqual(rerunlib.sweep_grid({"bs": "1k", "iodepth": "1"}),
                         ["bs=512,1k,4k", "iodepth=1,4"])
        # every document's job has a point the grid takes
        import compare_sweep
        for t in docs_tests.TESTS:
            grid = rerunlib.sweep_grid(rerunlib.job_point(f"{rerunlib.JOBS}/{t['job']}"))
            self.assertEqual(len(compare_sweep.parse_grid(grid)), 2, t["id"])

    def test_command(self):
        seen = {}

        def run(cmd, env, stdin):
            seen["cmd"], seen["env"] = cmd, env
            return types.SimpleNamespace(returncode=0)
        args = argparse.Namespace(results="/r", kernel="native", engine="/e", nbd_shim="/n",
                                  tcmu_shim="/t", timeline=False, kernel_paths=["kernel-nbd"],
                                  short=True, seconds=3, size_cap=64 * MiB)
        with contextlib.redirect_stdout(io.StringIO()):
            orig = rerunlib.subprocess.run
            rerunlib.subprocess.run = run
            try:
                rc = rerunlib.run_sweep(docs_tests.by_id("zerodisk-device"), args, 3)
            finally:
                rerunlib.subprocess.run = orig
        self.assertEqual(rc, 0)
        cmd = seen["cmd"]
        self.assertTrue(cmd[0].endswith("scripts/compare"))
        self.assertTrue(cmd[1].endswith("jobs/zerodisk-device.fio"))
        i = cmd.index("--sweep")
        self.assertEqual(cmd[i + 1:i + 3], ["bs=1k,4k,16k", "iodepth=1,4,16"])
        self.assertEqual(cmd[cmd.index("--paths") + 1], "engine-nbd,kernel-nbd")
        self.assertEqual(cmd[cmd.index("--seconds") + 1], "3")
        self.assertEqual(seen["env"]["TORUS_SIZE"], str(64 * MiB))


if __name__ == "__main__":
    main()
