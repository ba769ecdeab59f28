#!/usr/bin/env python3
"""scripts/timeline_runs.py: compare --timeline's run of a path-round (its
directory, the servers' files moved in, the entry in results) and the
pieces that need no fio: the median round's timeline, the report's
section, the picture's bars. Record files as test_timelinelib.py writes
them."""

import os
import unittest

from testlib import main
import timeline_runs as tr
from test_timelinelib import (ENGINE_LIBNBD, ENGINE_NBD, NBD_SHIM, READ, Dir,
                              nbd_io, write_rec)


def phases(total_us, server=True):
    """A phase summary of TOTAL_US per I/O split in two."""
    def one(name, where, mean):
        return {"name": name, "where": where, "count": 10, "mean_us": mean, "p50_us": mean,
                "p99_us": 2 * mean, "p99.9_us": 3 * mean}
    return [one("client submit", "client", total_us / 4),
            one("storage" if server else "server and wire",
                "server" if server else "server-and-wire", 3 * total_us / 4),
            one("total", "total", total_us)]


class FakeCtx:
    """What CompareRun reads of compare's Context."""

    def __init__(self, results):
        self.results, self.round = results, 1

    def out(self, name):
        return os.path.join(self.results, name)

    def rout(self, path, ext):
        return self.out(f"{path}.r{self.round}.{ext}")


class CompareRuns(Dir):
    def test_engine_run(self):
        ctx = FakeCtx(self.d)
        servers = tr.servers_dir(ctx)
        old = os.path.join(servers, "nbd-shim-9-1.rec")
        write_rec(old, "nbd-shim", "nbd-cookie", NBD_SHIM, [])
        run = tr.CompareRun(ctx, "engine-nbd")
        self.assertEqual(run.job_options(), {"timeline": self.p("engine-nbd.r1.timeline"),
                                             "lat_percentiles": "1"})
        with run.around_fio({"device": None}):
            # the run's engine and its connection's server file
            e, s = nbd_io(1, 0, 10_000)
            write_rec(os.path.join(run.dir, "engine-1.rec"), "engine-nbd", "nbd-cookie",
                      ENGINE_NBD, [e])
            write_rec(os.path.join(servers, "nbd-shim-9-2.rec"), "nbd-shim", "nbd-cookie",
                      NBD_SHIM, [s])
        t = run.result(None)
        self.assertEqual((t["dir"], t["server"], t["join_rate"]),
                         ("engine-nbd.r1.timeline", "nbd-shim", 1.0))
        self.assertEqual(t["phases"][-1]["mean_us"], 8.0)
        # only the file the run's connection wrote moved
        self.assertEqual(os.listdir(servers), ["nbd-shim-9-1.rec"])
        self.assertTrue(os.path.isfile(os.path.join(run.dir, "timeline.txt")))

    def test_libnbd_is_an_engine_path(self):
        ctx = FakeCtx(self.d)
        servers = tr.servers_dir(ctx)
        run = tr.CompareRun(ctx, "engine-libnbd")
        self.assertEqual(run.job_options(), {"timeline": self.p("engine-libnbd.r1.timeline"),
                                             "lat_percentiles": "1"})
        with run.around_fio({"device": None}):
            write_rec(os.path.join(run.dir, "engine-1.rec"), "engine-libnbd", "nbd-cookie",
                      ENGINE_LIBNBD, [(1, 0, 4096, READ, 0, [10_000, 17_000, 18_000])])
            write_rec(os.path.join(servers, "nbd-shim-9-2.rec"), "nbd-shim", "nbd-cookie",
                      NBD_SHIM, [(1, 0, 4096, READ, 0, [12_000, 13_000, 15_000, 16_000])])
        t = run.result(None)
        self.assertEqual((t["source"], t["server"], t["join_rate"], t["phases"][-1]["mean_us"]),
                         ("records", "nbd-shim", 1.0, 8.0))

    def test_no_records(self):
        run = tr.CompareRun(FakeCtx(self.d), "engine-tcmu")
        with run.around_fio({}):
            pass
        self.assertIn("no timeline: timeline: no .rec files", run.result(None)["none"])

    def test_kernel_path_not_traced(self):
        run = tr.CompareRun(FakeCtx(self.d), "guest-virtio")
        self.assertEqual(run.job_options(), {})
        with run.around_fio({"device": "/dev/vda"}):
            pass
        self.assertRegex(run.result(None)["none"], "^no kernel timeline: ")


class Compare(unittest.TestCase):
    """compare --timeline's pieces that need no fio: the median round's
    timeline, the report's section, the picture's bars."""

    def result(self):
        rounds = []
        for i, tot in enumerate((30.0, 10.0, 20.0), 1):
            t = {"dir": f"engine-nbd.r{i}.timeline", "source": "records", "server": "nbd-shim",
                 "form": "merged", "records": 100, "incomplete": 0, "joined": 100,
                 "join_rate": 1.0, "phases": phases(tot),
                 "fio": {"lat_mean_us": tot, "total_mean_us": tot * 0.98, "ratio": 0.98,
                         "within": True}}
            rounds.append({"round": i, "figures": {"iops": 1000 * i, "timeline": t}})
        return {"path": "engine-nbd", "status": "ok", "functional_only": False,
                "rounds": rounds, "figures": {"iops": 2000, "timeline": rounds[0]},
                "median_round": 2}

    def test_median_round(self):
        r = self.result()
        tr.merge_rounds(r)
        self.assertNotIn("timeline", r["figures"])
        self.assertEqual(r["timeline"]["round"], 2)
        self.assertEqual(r["timeline"]["phases"][-1]["mean_us"], 10.0)
        self.assertEqual([x["timeline"]["phases"][-1]["mean_us"] for x in r["rounds"]],
                         [30.0, 10.0, 20.0])
        self.assertTrue(all("timeline" not in x["figures"] for x in r["rounds"]))

    def test_report(self):
        r = self.result()
        tr.merge_rounds(r)
        k = {"path": "kernel-nbd", "status": "ok", "functional_only": True,
             "timeline": {"none": "no kernel timeline: bpftrace is missing"}}
        low = {"path": "engine-tcmu", "status": "ok", "functional_only": False,
               "timeline": dict(r["timeline"], server="tcmu-shim", joined=90,
                                join_rate=0.9, fio=None)}
        med = {"path": "engine-libnbd", "status": "ok", "functional_only": False,
               "timeline": dict(r["timeline"], fio={
                   "lat_mean_us": 12.0, "total_mean_us": 9.8, "ratio": 9.8 / 12.0,
                   "fio_p50_us": [11.0, 12.5], "total_p50_us": 9.5, "within": False})}
        text = "\n".join(tr.report_lines([r, k, low, med]))
        self.assertIn("## Where the time goes", text)
        self.assertIn("| path | phase | where | mean µs | p50 | p99 |", text)
        self.assertIn("| engine-nbd | storage | server | 7.5 | 7.5 | 15.0 |", text)
        self.assertIn("| engine-nbd | **total** | total | 10.0 | 10.0 | 20.0 |", text)
        self.assertIn("- engine-nbd: 100 of 100 I/Os joined with their nbd-shim record "
                      "(100.0%)", text)
        self.assertIn("- engine-nbd: the phases' total 9.8 µs against fio's mean latency "
                      "10.0 µs (-2.0%)", text)
        self.assertNotIn("- engine-nbd: the phases' total 9.8 µs against fio's mean latency "
                         "10.0 µs (-2.0%):", text)
        self.assertIn("- engine-libnbd: the phases' total 9.8 µs against fio's mean latency "
                      "12.0 µs (-18.3%); its median 9.5 µs against fio's clat and lat medians "
                      "11.0 to 12.5 µs: NOT the same run's, or records are missing", text)
        self.assertIn("- kernel-nbd: no kernel timeline: bpftrace is missing", text)
        self.assertIn("(90.0%, BELOW 95%: the phases are of those only)", text)
        self.assertEqual(tr.report_lines([{"path": "x", "status": "ok"}]), [])

    def test_report_kernel_runs(self):
        """engine-tcmu's phases say where the kernel runs each, and where
        its median round's kernel's shares sit among them; other paths
        have the column empty."""
        r = self.result()
        tr.merge_rounds(r)
        t = dict(r["timeline"], server="tcmu-shim", phases=[
            {"name": n, "where": w, "mean_us": 1.0, "p50_us": 1.0, "p99_us": 2.0}
            for n, w in (("client submit", "client"), ("wake-up out", "wire"),
                         ("storage", "server"), ("wake-up back", "wire"),
                         ("hand back", "client"), ("total", "total"))])
        rounds = [{"round": i, "figures": {"kernel_submission_share_us_per_io": sub,
                                           "kernel_completion_share_us_per_io": done}}
                  for i, (sub, done) in enumerate(((0.5, 0.6), (0.125, 0.25), (0.7, 0.8)), 1)]
        tcmu = {"path": "engine-tcmu", "status": "ok", "functional_only": False,
                "rounds": rounds, "timeline": t}
        lines = tr.report_lines([r, tcmu])
        self.assertIn("| path | phase | where | mean µs | p50 | p99 | kernel runs it in |",
                      lines)
        for row in ("| engine-tcmu | client submit | client | 1.0 | 1.0 | 2.0 | "
                    "initiator → kworker |",
                    "| engine-tcmu | wake-up out | wire | 1.0 | 1.0 | 2.0 | kworker → handler |",
                    "| engine-tcmu | storage | server | 1.0 | 1.0 | 2.0 | handler |",
                    "| engine-tcmu | wake-up back | wire | 1.0 | 1.0 | 2.0 | handler's notify |",
                    "| engine-tcmu | hand back | client | 1.0 | 1.0 | 2.0 | "
                    "handler's notify → kworker → initiator |",
                    "| engine-tcmu | **total** | total | 1.0 | 1.0 | 2.0 |  |",
                    "| engine-nbd | storage | server | 7.5 | 7.5 | 15.0 |  |"):
            self.assertIn(row, lines)
        text = "\n".join(lines)
        self.assertIn("- engine-tcmu: kernel runs it in: where Linux 6.1 with tcm_loop runs "
                      "each phase", text)
        self.assertIn("target_queued_submit_work → tcmu_queue_cmd → queue_cmd_ring", text)
        self.assertIn("tcmu_irqcontrol → tcmu_handle_completions", text)
        # the timeline's round (2) gives the shares, not the medians
        self.assertIn("- engine-tcmu: of these phases, the kernel's submission share, 0.12 µs "
                      "per I/O, is inside wake-up out (client submit under hold_batch); its "
                      "completion share, 0.25 µs per I/O, inside hand back", text)
        self.assertNotIn("- engine-nbd: kernel runs it in", text)
        # without server records: the submission share is in handler and wake-ups
        t["phases"] = [p for p in t["phases"] if p["name"] in ("client submit", "hand back",
                                                                "total")]
        t["phases"].insert(1, {"name": "handler and wake-ups", "where": "server-and-wire",
                               "mean_us": 2.0, "p50_us": 2.0, "p99_us": 4.0})
        text = "\n".join(tr.report_lines([tcmu]))
        self.assertIn("| engine-tcmu | handler and wake-ups | server-and-wire | 2.0 | 2.0 | "
                      "4.0 | kworker → handler → handler's notify |", text)
        self.assertIn("submission share, 0.12 µs per I/O, is inside handler and wake-ups "
                      "(client submit under hold_batch)", text)
        # without the engine's lines: the labels, no shares
        for x in rounds:
            x["figures"] = {}
        text = "\n".join(tr.report_lines([tcmu]))
        self.assertIn("- engine-tcmu: kernel runs it in:", text)
        self.assertNotIn("of these phases", text)

    def test_picture(self):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.skipTest("matplotlib is missing (python3-matplotlib)")
        r = self.result()
        tr.merge_rounds(r)
        fig, ax = plt.subplots()
        self.assertTrue(tr.draw(ax, [r, {"path": "kernel-nbd", "status": "ok",
                                         "timeline": {"none": "why"}}]))
        self.assertEqual([t.get_text() for t in ax.get_yticklabels()], ["engine-nbd"])
        self.assertEqual(len(ax.patches), 2)     # two phases, the total not drawn
        self.assertFalse(tr.draw(ax, [{"path": "x", "status": "ok"}]))
        plt.close(fig)


if __name__ == "__main__":
    main()
