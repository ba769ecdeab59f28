#!/usr/bin/env python3
"""scripts/compare --sweep's logic without fio or a server: the grid's
syntax and its errors (compare_sweep.parse_grid), the cells and their
names, a cell's job (only the swept parameters set), the kernel paths'
extra share of latency per cell, the crossover rule along each key, the
bookkeeping of --resume (the saved command, the settings that must match,
the cells left to run, results.json replaced whole), the command line
(comparelib.parse_args with --sweep and --resume) and the report
(sweep_report.write: the crossover in its first lines, the tables, the
picture)."""

import contextlib
import io
import json
import os
import unittest

from testlib import Tmp, main
import compare_rounds
import compare_sweep
import comparelib
import sweep_report
from compare_sweep import GridError


def figures(iops=1000.0, clat=100.0, cpu=10.0):
    return {"iops": iops, "bw_mib": iops * 4 / 1024, "clat_mean_us": clat,
            "clat_p50_us": clat, "clat_p99_us": clat * 2, "clat_p99.9_us": clat * 3,
            "fio_cpu_us_per_io": cpu / 2, "machine_cpu_us_per_io": cpu,
            "kernel_share_us_per_io": None, "percentiles_from": "bins"}


def merged(path, clats, where="native", functional_only=False, iops=None):
    """PATH's result over rounds with these mean latencies, as compare merges it."""
    iops = iops or [1000.0] * len(clats)
    transport = "tcmu" if "tcmu" in path else "nbd"
    return compare_rounds.merge_rounds([
        {"path": path, "transport": transport, "status": "ok", "reason": None,
         "where": where, "functional_only": functional_only, "notes": [],
         "figures": figures(i, c)} for i, c in zip(iops, clats)])


def cell_results(engine, kernel, tcmu=None, **kw):
    """One cell's results: engine-nbd's and kernel-loop's rounds' latencies."""
    rs = [merged("engine-nbd", engine), merged("kernel-loop", kernel, **kw)]
    if tcmu:
        rs.insert(1, merged("engine-tcmu", tcmu))
    compare_rounds.add_costs(rs)
    return rs


class Grid(unittest.TestCase):
    def test_syntax(self):
        self.assertEqual(compare_sweep.parse_grid(["bs=4k,16k", "iodepth=1,4"]),
                         [("bs", ["4k", "16k"]), ("iodepth", ["1", "4"])])
        # one string with spaces (rerun-documents), aliases, values sorted as sizes
        self.assertEqual(compare_sweep.parse_grid(["blocksize=1M,4k,64k readwrite=randread,read"]),
                         [("bs", ["4k", "64k", "1M"]), ("rw", ["randread", "read"])])
        self.assertEqual(compare_sweep.parse_grid(["iodepth=64,1,16"]),
                         [("iodepth", ["1", "16", "64"])])
        self.assertEqual(compare_sweep.parse_grid(["numjobs=2,1"]), [("numjobs", ["1", "2"])])

    def test_default(self):
        grid = compare_sweep.parse_grid([])
        self.assertEqual(grid, [("bs", ["4k", "16k", "64k", "256k"]),
                                ("iodepth", ["1", "4", "16", "64"])])
        self.assertEqual(len(compare_sweep.cells(grid)), 16)

    def test_errors(self):
        for items, said in ((["bs"], "not KEY=V1,V2"),
                            (["bs="], "an empty value"),
                            (["bs=4k,,8k"], "an empty value"),
                            (["bs=4k", "blocksize=8k"], "given twice"),
                            (["bs=4k,4k"], "a value is given twice"),
                            (["filename=/dev/sda"], "compare sets filename itself"),
                            (["runtime=1,2"], "compare sets runtime itself"),
                            (["uri=a,b"], "compare sets uri itself"),
                            (["bs=4k;8k"], "not a job value"),
                            (["b-s=4k"], "not a fio option name")):
            with self.assertRaises(GridError, msg=items) as e:
                compare_sweep.parse_grid(items)
            self.assertIn(said, str(e.exception), items)

    def test_job_file_after_sweep(self):
        with self.assertRaises(GridError) as e:
            compare_sweep.parse_grid([__file__])
        self.assertIn("the job file goes before --sweep", str(e.exception))

    def test_cells(self):
        grid = compare_sweep.parse_grid(["bs=4k,64k", "iodepth=1,8", "rw=read"])
        cells = compare_sweep.cells(grid)
        self.assertEqual([compare_sweep.cell_id(c) for c in cells],
                         ["bs4k_iodepth1_rwread", "bs4k_iodepth8_rwread",
                          "bs64k_iodepth1_rwread", "bs64k_iodepth8_rwread"])
        self.assertEqual(compare_sweep.cell_label(cells[1]), "bs=4k iodepth=8 rw=read")
        self.assertEqual(compare_sweep.cell_id({"bs": "4k:8k"}), "bs4k-8k")
        self.assertEqual(compare_sweep.grid_text(grid), "bs=4k,64k iodepth=1,8 rw=read")


class CellJob(Tmp):
    def test_only_swept_parameters_change(self):
        src = self.path("job.fio")
        with open(src, "w") as f:
            f.write("[global]\nrw=randrw\nblocksize=64k\niodepth=64\nsize=32M\n"
                    "gtod_reduce=1\n\n[a]\nbssplit=4k/50:8k/50\n[b]\nnumjobs=2\n")
        dst = self.path("cell.fio")
        compare_sweep.write_cell_job(src, dst, {"bs": "4k", "iodepth": "1"})
        with open(dst) as f:
            text = f.read()
        lines = text.splitlines()
        # the swept ones in every job section, the job's own (and aliases) commented out
        self.assertIn("; (scripts/compare) blocksize=64k", lines)
        self.assertIn("; (scripts/compare) iodepth=64", lines)
        self.assertIn("; (scripts/compare) bssplit=4k/50:8k/50", lines)
        self.assertEqual(lines.count("bs=4k"), 3)        # leading [global], [a], [b]
        self.assertEqual(lines.count("iodepth=1"), 3)
        # the rest is the user's
        for kept in ("rw=randrw", "size=32M", "gtod_reduce=1", "numjobs=2"):
            self.assertIn(kept, lines)
        self.assertTrue(lines[0].startswith("; scripts/compare --sweep's cell bs=4k iodepth=1"))


class Costs(unittest.TestCase):
    def test_share_from_each_round(self):
        # kernel-loop 125 and 200 µs against 100 and 100: shares 20% and 50%
        costs = compare_sweep.kernel_costs(cell_results([100.0, 100.0], [125.0, 200.0],
                                                        tcmu=[110.0, 110.0]))
        self.assertEqual(list(costs), ["kernel-loop"])     # engine-tcmu is no kernel path
        c = costs["kernel-loop"]
        self.assertEqual(c["baseline"], "engine-nbd")
        self.assertAlmostEqual(c["latency_share"][0], 0.35)
        self.assertAlmostEqual(c["latency_share"][1], 0.20)
        self.assertAlmostEqual(c["latency_share"][2], 0.50)
        self.assertEqual(c["latency_ratio"][1:], [1.25, 2.0])
        self.assertFalse(c["functional_only"])
        self.assertTrue(c["flagged"])          # its mean latency moved 1.6x

    def test_flag_and_functional_only(self):
        # the engine's IOPS moved 2x between rounds: the cell is flagged
        rs = [merged("engine-nbd", [100.0, 100.0], iops=[1000.0, 2000.0]),
              merged("kernel-loop", [150.0, 150.0])]
        compare_rounds.add_costs(rs)
        self.assertTrue(compare_sweep.kernel_costs(rs)["kernel-loop"]["flagged"])
        # emulated in the guest: not comparable with the host's engine, no share
        rs = [merged("engine-nbd", [100.0]),
              merged("kernel-loop", [900.0], where="guest-tcg", functional_only=True)]
        compare_rounds.add_costs(rs)
        c = compare_sweep.kernel_costs(rs)["kernel-loop"]
        self.assertTrue(c["functional_only"])
        self.assertIsNone(c["latency_share"])
        self.assertIn("none_because", c)


class Crossover(unittest.TestCase):
    def test_rule(self):
        cross = compare_sweep.crossover
        self.assertEqual(cross([0.5, 0.3, 0.08, 0.05], 0.10), 2)
        self.assertEqual(cross([0.5, 0.3, 0.08, 0.05], 0.25), 2)
        self.assertEqual(cross([0.2, 0.3, 0.08, 0.05], 0.25), 2)     # stays below from there
        self.assertEqual(cross([0.05, 0.06], 0.10), 0)               # below from the start
        self.assertIsNone(cross([0.5, 0.05, 0.3], 0.10))             # a dip is no crossover
        self.assertIsNone(cross([0.5, 0.4], 0.10))                   # not in the grid
        self.assertIsNone(cross([0.05, None], 0.10))                 # unknown at the end
        self.assertEqual(cross([None, 0.05], 0.10), 1)
        self.assertIsNone(cross([0.10], 0.10))                       # below, not at
        self.assertIsNone(cross([], 0.10))

    def test_over_the_grid(self):
        grid = compare_sweep.parse_grid(["bs=4k,64k", "iodepth=1,8"])
        shares = {("4k", "1"): 0.8, ("4k", "8"): 0.2, ("64k", "1"): 0.3, ("64k", "8"): 0.05}
        costs = {}
        for (bs, qd), s in shares.items():
            costs[compare_sweep.cell_id({"bs": bs, "iodepth": qd})] = {"kernel-loop": {
                "baseline": "engine-nbd", "functional_only": False, "flagged": False,
                "latency_share": [s, s, s]}}
        xs = compare_sweep.crossovers(grid, costs)
        at = {(x["along"], tuple(x["fixed"].items())): x["at"] for x in xs}
        self.assertEqual(at[("iodepth", (("bs", "4k"),))], {0.10: None, 0.25: "8"})
        self.assertEqual(at[("iodepth", (("bs", "64k"),))], {0.10: "8", 0.25: "8"})
        self.assertEqual(at[("bs", (("iodepth", "1"),))], {0.10: None, 0.25: None})
        self.assertEqual(at[("bs", (("iodepth", "8"),))], {0.10: "64k", 0.25: "4k"})
        text = [compare_sweep.crossover_text(x) for x in xs]
        self.assertIn("kernel-loop (against engine-nbd), bs=4k: below 10% not in the grid; "
                      "below 25% from iodepth=8", text)
        self.assertIn("kernel-loop (against engine-nbd), iodepth=8: below 10% from bs=64k; "
                      "below 25% from bs=4k", text)
        # a functional-only cell: that line says so, never a crossover
        costs[compare_sweep.cell_id({"bs": "64k", "iodepth": "8"})]["kernel-loop"][
            "functional_only"] = True
        xs = compare_sweep.crossovers(grid, costs)
        fo = [x for x in xs if x["functional_only"]]
        self.assertEqual(len(fo), 2)
        self.assertIn("functional only", compare_sweep.crossover_text(fo[0]))


class SweepArgs(Tmp):
    """A job in the scratch directory and a sweep's arguments over it."""

    def job(self):
        path = self.path("job.fio")
        with open(path, "w") as f:
            f.write("[a]\nrw=randread\n")
        return path

    def args(self, *extra):
        return comparelib.parse_args([self.job(), "--sweep", "bs=4k,64k", "iodepth=1,8",
                                      "--results", self.path("out")] + list(extra))

    def state(self, a, done_ids):
        return {"sweep": {"settings": compare_sweep.settings(a), "argv": a.argv},
                "cells": [{"id": i, "status": "done"} for i in done_ids]}


class Resume(SweepArgs):
    def test_defaults_of_a_sweep(self):
        a = self.args()
        self.assertEqual(a.paths, ["engine-nbd", "engine-tcmu", "kernel-loop"])
        self.assertEqual(a.seconds, 3)
        self.assertEqual(a.grid, [("bs", ["4k", "64k"]), ("iodepth", ["1", "8"])])
        self.assertNotIn("--results", a.argv)
        b = comparelib.parse_args([self.job()])              # compare itself: unchanged
        self.assertEqual(b.seconds, 10)
        self.assertEqual(b.paths, comparelib.NAMES)
        self.assertIsNone(b.sweep)
        c = comparelib.parse_args([self.job(), "--sweep"])
        self.assertEqual(len(compare_sweep.cells(c.grid)), 16)

    def test_bad_grid_is_a_usage_error(self):
        with self.assertRaises(SystemExit) as e:
            comparelib.parse_args([self.job(), "--sweep", "bs"])
        self.assertEqual(e.exception.code, 2)

    def test_cells_left(self):
        a = self.args()
        cells = compare_sweep.cells(a.grid)
        os.makedirs(a.results)
        compare_sweep.write_state(a.results, self.state(a, ["bs4k_iodepth1", "bs4k_iodepth8"]))
        self.assertFalse(os.path.exists(os.path.join(a.results, "results.json.tmp")))
        done = compare_sweep.resumed_cells(compare_sweep.load_state(a.results),
                                           compare_sweep.settings(a))
        self.assertEqual(sorted(done), ["bs4k_iodepth1", "bs4k_iodepth8"])
        self.assertEqual(compare_sweep.todo(cells, done), cells[2:])
        # an interrupted cell (not done) is run again
        st = self.state(a, ["bs4k_iodepth1"])
        st["cells"].append({"id": "bs4k_iodepth8", "status": "interrupted"})
        self.assertEqual(list(compare_sweep.resumed_cells(st, compare_sweep.settings(a))),
                         ["bs4k_iodepth1"])

    def test_resume_alone_takes_the_saved_command(self):
        a = self.args("--rounds", "2")
        os.makedirs(a.results)
        compare_sweep.write_state(a.results, self.state(a, ["bs4k_iodepth1"]))
        b = comparelib.parse_args(["--resume", a.results])
        self.assertEqual((b.grid, b.rounds, b.results), (a.grid, 2, a.results))
        self.assertEqual(list(b.done), ["bs4k_iodepth1"])
        # the same command again with --resume: the same
        c = comparelib.parse_args(a.argv + ["--resume", a.results])
        self.assertEqual(list(c.done), ["bs4k_iodepth1"])

    def test_resume_otherwise_refused(self):
        a = self.args()
        os.makedirs(a.results)
        compare_sweep.write_state(a.results, self.state(a, []))
        with self.assertRaises(GridError) as e:
            b = self.args("--rounds", "5")
            compare_sweep.resumed_cells(compare_sweep.load_state(a.results),
                                        compare_sweep.settings(b))
        self.assertIn("rounds: 3 then, 5 now", str(e.exception))
        with open(a.job, "a") as f:                # the job changed under it
            f.write("bs=8k\n")
        with self.assertRaises(GridError) as e:
            compare_sweep.resumed_cells(compare_sweep.load_state(a.results),
                                        compare_sweep.settings(a))
        self.assertIn("job_sha256", str(e.exception))
        with self.assertRaises(GridError) as e:
            compare_sweep.load_state(self.path("nowhere"))
        self.assertIn("no sweep to carry on", str(e.exception))
        with self.assertRaises(SystemExit):         # --resume needs a sweep
            comparelib.parse_args([a.job, "--resume", a.results])


class Loop(SweepArgs):
    """compare_sweep.run with a fake cell: the progress lines, results.json
    after every cell, Ctrl-C in a cell, and --resume running only the rest."""

    def fake(self, stop_at=None):
        ran = []

        def run_one(cell, folder):
            cid = compare_sweep.cell_id(cell)
            if cid == stop_at:
                raise KeyboardInterrupt
            # results.json holds every cell finished before this one
            with open(os.path.join(a_results[0], "results.json")) as f:
                self.assertEqual(len(json.load(f)["cells"]), len(ran) + len(a_done[0]))
            ran.append(cid)
            return {"id": cid, "params": cell, "status": "done", "dir": folder,
                    "paths": [{"path": "engine-nbd", "status": "ok"}]}
        a_results, a_done = [None], [{}]
        return ran, run_one, a_results, a_done

    def run_sweep(self, a, run_one, a_results, a_done, ticks):
        a_results[0], a_done[0] = a.results, a.done
        os.makedirs(a.results, exist_ok=True)
        clock = iter(ticks).__next__
        with contextlib.redirect_stderr(io.StringIO()) as err:
            state = compare_sweep.run(a, "a server", run_one, clock=clock)
        return state, err.getvalue()

    def test_interrupted_then_resumed(self):
        a = self.args("--rounds", "1", "--seconds", "1")
        ran, run_one, ra, rd = self.fake(stop_at="bs64k_iodepth1")
        # the clock: start, before cells 1, 2, 3, at the end
        state, said = self.run_sweep(a, run_one, ra, rd, [0, 0, 30, 60, 70])
        self.assertEqual(ran, ["bs4k_iodepth1", "bs4k_iodepth8"])
        self.assertTrue(state["interrupted"])
        self.assertEqual(compare_sweep.exit_status(state), 130)
        self.assertIn("sweep: cell 1 of 4 (bs=4k iodepth=1): elapsed 0s, ETA 30s (a guess)", said)
        self.assertIn("sweep: cell 2 of 4 (bs=4k iodepth=8): elapsed 30s, ETA 1m30s", said)
        self.assertIn("sweep: cell 3 of 4 (bs=64k iodepth=1): elapsed 1m00s, ETA 1m00s", said)
        self.assertIn(f"interrupted; 2 of 4 cells finished: carry on with scripts/compare "
                      f"--resume {a.results}", said)
        saved = compare_sweep.load_state(a.results)
        self.assertEqual([c["id"] for c in saved["cells"]], ran)
        self.assertTrue(saved["interrupted"])
        # --resume DIR alone: the rest, and only the rest
        b = comparelib.parse_args(["--resume", a.results])
        ran2, run_one, ra, rd = self.fake()
        state, said = self.run_sweep(b, run_one, ra, rd, [0, 0, 10, 20])
        self.assertEqual(ran2, ["bs64k_iodepth1", "bs64k_iodepth8"])
        self.assertIn("2 finished before (--resume)", said)
        self.assertIn("sweep: cell 3 of 4 (bs=64k iodepth=1): elapsed 0s, ETA 15s (a guess)", said)
        self.assertNotIn("cell 1 of 4", said)
        self.assertFalse(state["interrupted"])
        self.assertEqual([c["id"] for c in state["cells"]],
                         [compare_sweep.cell_id(c) for c in compare_sweep.cells(a.grid)])
        self.assertEqual(state["sweep"]["started"], saved["sweep"]["started"])
        self.assertEqual(len(state["sweep"]["resumed"]), 1)
        self.assertEqual(compare_sweep.exit_status(state), 0)


def swept_state(grid, latency):
    """A finished sweep's state over GRID: engine-nbd and kernel-loop in 2
    rounds per cell, their mean latencies LATENCY(cell) -> (engine's, kernel's)."""
    cells = []
    for c in compare_sweep.cells(grid):
        rs = cell_results(*latency(c))
        cells.append({"id": compare_sweep.cell_id(c), "params": c, "status": "done",
                      "paths": rs, "kernel": compare_sweep.kernel_costs(rs)})
    return {"sweep": {"settings": {"job": "/x/job.fio", "grid": grid,
                                   "paths": ["engine-nbd", "kernel-loop"], "rounds": 2,
                                   "seconds": 1},
                      "grid": compare_sweep.grid_text(grid), "target": "a server",
                      "started": "now", "kernel": "k", "commit": "abc", "spread_limit": 1.25,
                      "cells_total": len(cells)},
            "cells": cells, "interrupted": False}


class Report(Tmp):
    def test_one_key_and_three(self):
        # one key: a single row of heat map, one line along it
        grid = compare_sweep.parse_grid(["rw=randread,randwrite"])
        text = sweep_report.write(self.tmp, swept_state(
            grid, lambda c: ([100.0, 100.0], [105.0, 106.0] if c["rw"] == "randwrite"
                             else [200.0, 210.0])))
        self.assertIn("- kernel-loop (against engine-nbd): below 10% from rw=randwrite; "
                      "below 25% from rw=randwrite", text)
        self.assertIn("|  \\ rw | randread | randwrite |", text)
        # three keys: a heat map and lines per value of the third, crossovers along each
        grid = compare_sweep.parse_grid(["bs=4k,64k", "iodepth=1,8", "numjobs=1,2"])
        text = sweep_report.write(self.tmp, swept_state(
            grid, lambda c: ([100.0, 100.0], [300.0, 300.0] if c["bs"] == "4k"
                             else [102.0, 103.0])))
        lines = [x for x in text.splitlines() if x.startswith("- kernel-loop")]
        self.assertEqual(len(lines), 12)        # 4 along bs, 4 along iodepth, 4 along numjobs
        self.assertIn("- kernel-loop (against engine-nbd), iodepth=1 numjobs=2: below 10% "
                      "from bs=64k; below 25% from bs=64k", lines)
        self.assertIn("**kernel-loop** against engine-nbd, numjobs=2: (kernel", text)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return
        self.assertTrue(os.path.exists(self.path("report.png")))

    def test_functional_only_cells(self):
        # kernel-loop in an emulated guest in one cell: never a figure
        grid = compare_sweep.parse_grid(["bs=4k,64k", "iodepth=1"])
        cells = []
        for c in compare_sweep.cells(grid):
            fo = c["bs"] == "64k"
            rs = [merged("engine-nbd", [100.0, 100.0], where="guest-tcg" if fo else "native",
                         functional_only=fo),
                  merged("kernel-loop", [150.0, 160.0], where="guest-tcg" if fo else "native",
                         functional_only=fo)]
            compare_rounds.add_costs(rs)
            cells.append({"id": compare_sweep.cell_id(c), "params": c, "status": "done",
                          "paths": rs, "kernel": compare_sweep.kernel_costs(rs)})
        state = {"sweep": {"settings": {"job": "/x/job.fio", "grid": grid,
                                        "paths": ["engine-nbd", "kernel-loop"], "rounds": 2,
                                        "seconds": 1},
                           "grid": compare_sweep.grid_text(grid), "target": "a server",
                           "started": "now", "kernel": "k", "commit": "abc",
                           "spread_limit": 1.25, "cells_total": 2},
                 "cells": cells, "interrupted": False}
        cells[0]["paths"][0]["timeline"] = {"phases": [
            {"name": "wire out", "where": "wire", "mean_us": 20.0},
            {"name": "storage", "where": "server", "mean_us": 5.0},
            {"name": "total", "where": "total", "mean_us": 25.0}]}
        text = sweep_report.write(self.tmp, state)
        # --timeline: each path's phases per cell, and their picture
        self.assertIn("- bs=4k iodepth=1, engine-nbd: wire out 20.0, storage 5.0 (total 25.0 µs)",
                      text)
        self.assertIn("| 64k | functional only |", text)
        self.assertIn("- kernel-loop (against engine-nbd), iodepth=1: functional only", text)
        self.assertIn("| bs=64k iodepth=1 | kernel-loop | guest-tcg **functional only** |", text)
        self.assertNotIn("2 of 2 cells (interrupted", text)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return
        self.assertTrue(os.path.exists(self.path("report.png")))
        self.assertTrue(os.path.exists(self.path("timeline.png")))

    def test_report(self):
        grid = compare_sweep.parse_grid(["bs=4k,64k", "iodepth=1,8"])
        lat = {("4k", "1"): ([100.0, 100.0], [300.0, 320.0]),
               ("4k", "8"): ([400.0, 410.0], [450.0, 470.0]),
               ("64k", "1"): ([200.0, 200.0], [230.0, 240.0]),
               ("64k", "8"): ([800.0, 790.0], [820.0, 830.0])}
        cells = []
        for c in compare_sweep.cells(grid):
            rs = cell_results(*lat[(c["bs"], c["iodepth"])])
            cells.append({"id": compare_sweep.cell_id(c), "params": c, "status": "done",
                          "paths": rs, "kernel": compare_sweep.kernel_costs(rs)})
        state = {"sweep": {"settings": {"job": "/x/job.fio", "grid": grid,
                                        "paths": ["engine-nbd", "kernel-loop"], "rounds": 2,
                                        "seconds": 1},
                           "grid": compare_sweep.grid_text(grid), "target": "a server",
                           "started": "now", "kernel": "k", "commit": "abc",
                           "spread_limit": 1.25, "cells_total": 4},
                 "cells": cells[:3], "interrupted": True}
        text = sweep_report.write(self.tmp, state)
        head = text.split("\n## Extra share")[0]
        self.assertIn("- kernel-loop (against engine-nbd), bs=4k: below 10% not in the grid; "
                      "below 25% from iodepth=8", head)
        self.assertIn("3 of 4 cells (interrupted: carry on with scripts/compare --resume", head)
        self.assertIn("| 4k | 68% (67%–69%) | 12% (11%–13%) |", text)
        self.assertIn("| 64k | 15% (13%–17%) | – |", text)      # the cell that did not run
        self.assertIn("| bs=4k iodepth=1 | kernel-loop | native | 1000 (1000–1000) |", text)
        with open(self.path("report.md")) as f:
            self.assertEqual(f.read(), text)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return
        self.assertGreater(os.path.getsize(self.path("report.png")), 10000)


if __name__ == "__main__":
    main()
