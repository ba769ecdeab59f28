#!/usr/bin/env python3
"""scripts/timelinelib.py on record files written here with the layout of
timeline/timeline_rec.h: a bad header refused naming the file, the join
(key, offset, length, op and the window; a reused key; a server stamp just
outside the window), the phases adding up to the total, nearest-rank
percentiles, the form without server records, a low join rate said loudly,
the check against fio's latency, and scripts/timeline's output."""

import contextlib
import io
import json
import os
import struct
import subprocess
import tempfile
import unittest

from testlib import SRC, main
import timeline_rec
import timelinelib as tl

READ, WRITE = 0, 1


# The engine's own phases as engines/timeline.c writes them in engine-N.json
# (the timeline-engine test checks the engine's file itself).
ENGINE_OWN = {
    "engine-nbd": (("client submit", "client", "queued", "sent"),
                   ("server and wire", "server-and-wire", "sent", "header"),
                   ("payload", "wire", "header", "payload"),
                   ("hand back", "client", "payload", "handed"),
                   ("total", "total", "queued", "handed")),
    "engine-tcmu": (("client submit", "client", "queued", "published"),
                    ("handler and wake-ups", "server-and-wire", "published", "seen"),
                    ("hand back", "client", "seen", "handed"),
                    ("total", "total", "queued", "handed")),
    "engine-libnbd": (("libnbd, server and wire", "server-and-wire", "queued", "callback"),
                      ("hand back", "client", "callback", "handed"),
                      ("total", "total", "queued", "handed")),
}


def write_rec(path, source, key, stamps, records, magic=b"TORUSTL1", version=1,
              rec_size=64, tail=b""):
    """A record file as timeline_rec.c writes it; RECORDS: (key, offset,
    len, op, stream, [stamps...]). An engine's gets its engine-N.json
    beside it, as the engine writes at the job's end."""
    if source in ENGINE_OWN:
        with open(path[:-len(".rec")] + ".json", "w") as f:
            json.dump([{"name": n, "where": w, "from": a, "to": b, "count": 0}
                       for n, w, a, b in ENGINE_OWN[source]], f)
    names = [s.encode() for s in stamps] + [b""] * (5 - len(stamps))
    head = struct.pack("=8sIIII32s32s" + "32s" * 5, magic, version, rec_size, len(stamps),
                       1234, source.encode(), key.encode(), *names)
    head += b"\0" * (512 - len(head))
    body = b"".join(struct.pack("=QQIHH5Q", k, off, ln, op, stream,
                                *(list(t) + [0] * (5 - len(t))))
                    for k, off, ln, op, stream, t in records)
    with open(path, "wb") as f:
        f.write(head + body + tail)


ENGINE_NBD = ("queued", "sent", "header", "payload", "handed")
NBD_SHIM = ("received", "started", "stored", "replied")
ENGINE_TCMU = ("queued", "published", "seen", "handed")
TCMU_SHIM = ("picked", "started", "stored", "completed")
ENGINE_LIBNBD = ("queued", "callback", "handed")


def nbd_io(key, off, start, op=READ, stream=0, skew=0):
    """One I/O's engine and server records, 1000 ns apart per stamp from
    START (the server's first stamp SKEW ns earlier than that)."""
    s = start
    eng = (key, off, 4096, op, stream, [s, s + 1000, s + 7000, s + 7500, s + 8000])
    srv = (key, off, 4096, op, stream, [s + 2000 - skew, s + 3000, s + 5000, s + 6000])
    return eng, srv


def quiet_main(argv):
    """timelinelib.main(ARGV), its output kept: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = tl.main(argv)
    return rc, out.getvalue(), err.getvalue()


class Dir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def p(self, name):
        return os.path.join(self.d, name)


class Header(Dir):
    """A directory analyse() cannot read says why (the files themselves:
    test_timeline_rec.py)."""

    def test_bad_headers_name_the_file(self):
        cases = ((dict(magic=b"NOTATIME"), "is not a timeline record file"),
                 (dict(version=2), "is version 2, this reader knows 1"),
                 (dict(rec_size=32), "has 32-byte records, this reader knows 64"))
        for kw, said in cases:
            path = self.p("engine-1.rec")
            write_rec(path, "engine-nbd", "nbd-cookie", ENGINE_NBD, [], **kw)
            with self.assertRaises(tl.TimelineError) as e:
                tl.analyse(self.d)
            self.assertIn(path, str(e.exception))
            self.assertIn(said, str(e.exception))

    def test_no_records(self):
        with self.assertRaisesRegex(tl.TimelineError, "no .rec files in .*timeline=DIR"):
            tl.analyse(self.d)
        with self.assertRaisesRegex(tl.TimelineError, "is not a directory"):
            tl.analyse(self.p("none"))
        write_rec(self.p("nbd-shim-1-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, [])
        with self.assertRaisesRegex(tl.TimelineError, "no engine records .*only nbd-shim"):
            tl.analyse(self.d)

    def test_stamps_missing(self):
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD[:2], [])
        with self.assertRaisesRegex(tl.TimelineError, "engine-1.rec .* lacks the stamp"):
            tl.analyse(self.d)


class Figures(unittest.TestCase):
    def test_summary(self):
        """Percentiles by nearest rank (stats.percentile)."""
        s = tl.summary("x", "client", [3000, 1000, 2000])
        self.assertEqual((s["count"], s["mean_us"], s["p50_us"], s["p99_us"], s["p99.9_us"]),
                         (3, 2.0, 2.0, 3.0, 3.0))


class Chains(unittest.TestCase):
    def test_every_form_is_a_chain(self):
        for path, server in list(tl.SERVER_PARTS) + [(e, None) for e in tl.ENGINES]:
            phases, total, _ = tl.path_phases(ENGINE_OWN[path], path, server)
            names = tl.chain(phases)
            self.assertEqual((names[0], names[-1]), total[2:], (path, server))
        with self.assertRaisesRegex(ValueError, "does not start where the last ended"):
            tl.chain((("a", "client", "queued", "sent"), ("b", "wire", "header", "handed")))


class Join(Dir):
    def write_nbd(self, pairs, server=True):
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD,
                  [e for e, _ in pairs])
        if server:
            write_rec(self.p("nbd-shim-99-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM,
                      [s for _, s in pairs])

    def test_merged_nbd(self):
        # key 1 used twice at the same offset: the window tells them apart
        pairs = [nbd_io(1, 0, 10_000), nbd_io(2, 4096, 10_500, op=WRITE),
                 nbd_io(1, 0, 50_000)]
        self.write_nbd(pairs)
        # the server's records in another order, one from another engine too
        srv = [s for _, s in pairs][::-1] + [(3, 8192, 4096, READ, 0, [1, 2, 3, 4])]
        write_rec(self.p("nbd-shim-99-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, srv)
        res = tl.analyse(self.d)
        r = res["paths"]["engine-nbd"]
        self.assertEqual((r["server"], r["form"], r["records"], r["joined"], r["join_rate"]),
                         ("nbd-shim", "merged", 3, 3, 1.0))
        self.assertEqual(r["unmatched_server"], 1)
        names = [p["name"] for p in r["phases"]]
        self.assertEqual(names, ["client submit", "wire out", "server queue", "storage",
                                 "server reply", "wire back", "payload", "hand back", "total"])
        self.assertEqual([p["where"] for p in r["phases"]],
                         ["client", "wire", "server", "server", "server", "wire", "wire",
                          "client", "total"])
        means = {p["name"]: p["mean_us"] for p in r["phases"]}
        self.assertEqual(means, {"client submit": 1.0, "wire out": 1.0, "server queue": 1.0,
                                 "storage": 2.0, "server reply": 1.0, "wire back": 1.0,
                                 "payload": 0.5, "hand back": 0.5, "total": 8.0})
        self.assertAlmostEqual(sum(p["mean_us"] for p in r["phases"][:-1]), 8.0)
        self.assertEqual(res["warnings"], [])
        self.assertEqual(r["negative"], {})

    def test_two_jobs_same_request(self):
        # jobs 1 and 2 send cookie 1 for offset 0 at once, each on its own
        # connection; job 1's server record is 500 ns early, job 2's fits
        # both windows: the nearest alone would swap them
        e1 = [(1, 0, 4096, READ, 0, [900, 1000, 9000, 9100, 9200])]
        e2 = [(1, 0, 4096, READ, 0, [1400, 1500, 9500, 9600, 9700])]
        s1 = [(1, 0, 4096, READ, 0, [500, 600, 700, 800])]
        s2 = [(1, 0, 4096, READ, 0, [2000, 3000, 4000, 8000])]
        # and I/Os of their own, which tell whose connection is whose
        for k in range(2, 6):
            e, s = nbd_io(k, k * 4096, 100_000 * k)
            e1.append(e)
            s1.append(s)
            e, s = nbd_io(k, k * 8192, 100_000 * k)
            e2.append(e)
            s2.append(s)
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD, e1)
        write_rec(self.p("engine-2.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD, e2)
        write_rec(self.p("nbd-shim-9-1.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, s2)
        write_rec(self.p("nbd-shim-9-2.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, s1)
        files = timeline_rec.read_dir(self.d)
        eng = [f for f in files if f.source == "engine-nbd"]
        srv = [f for f in files if f.source == "nbd-shim"]
        phases, _, window = tl.path_phases(ENGINE_OWN["engine-nbd"], "engine-nbd", "nbd-shim")
        chains, counts = tl.join(eng, srv, window, tl.chain(phases))
        self.assertEqual(counts["joined"], 10)
        got = {c[0]: c[2] for c in chains}             # queued -> received
        self.assertEqual((got[900], got[1400]), (500, 2000))

    def test_another_runs_server_file_left_out(self):
        # a shim file of an earlier run into the same directory: the same
        # cookies, offsets and ops, but seconds before this run's engine
        old = [nbd_io(k, k * 4096, 10_000 * k) for k in range(1, 4)]
        new = [nbd_io(k, k * 4096, 5_000_000_000 + 10_000 * k) for k in range(1, 4)]
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD,
                  [e for e, _ in new])
        write_rec(self.p("nbd-shim-7-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM,
                  [s for _, s in old])
        write_rec(self.p("nbd-shim-8-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM,
                  [s for _, s in new])
        res = tl.analyse(self.d)
        r = res["paths"]["engine-nbd"]
        self.assertEqual((r["server"], r["joined"]), ("nbd-shim", 3))
        self.assertEqual(res["warnings"], [
            "nbd-shim-7-0.rec: its records ended 5.0 s before engine-nbd's: another run's, "
            "left out of the join (give each run an empty directory)"])
        # only another run's: the path has no server records left
        os.unlink(self.p("nbd-shim-8-0.rec"))
        res = tl.analyse(self.d)
        self.assertEqual(res["paths"]["engine-nbd"]["form"], "server and wire")
        self.assertEqual(len(res["warnings"]), 1)

    def test_server_a_little_early(self):
        # the server read the request before the engine's send() returned
        pairs = [nbd_io(1, 0, 10_000, skew=1500)]
        self.write_nbd(pairs)
        r = tl.analyse(self.d)["paths"]["engine-nbd"]
        self.assertEqual(r["joined"], 1)
        self.assertEqual(r["negative"], {"wire out": 1})
        self.assertIn("phases still add up", tl.text_table(tl.analyse(self.d)))
        # beyond the slack it is another command's
        pairs = [nbd_io(1, 0, 100_000_000, skew=tl.SLACK_NS + 2000)]
        self.write_nbd(pairs)
        r = tl.analyse(self.d)["paths"]["engine-nbd"]
        self.assertEqual(r["joined"], 0)

    def test_reply_stamp_inside(self):
        # the server stamps its reply before the send that carries it, the
        # engine the header after its receive: a replied after the header
        # is a stamp on the wrong side, joined within the slack (its wire
        # back negative, said by below_zero), beyond it another command's
        e1, s1 = nbd_io(1, 0, 10_000)
        s1 = s1[:5] + (s1[5][:3] + [e1[5][2] + tl.SLACK_NS],)
        self.write_nbd([(e1, s1)])
        res = tl.analyse(self.d)
        r = res["paths"]["engine-nbd"]
        self.assertEqual((r["joined"], r["negative"]), (1, {"wire back": 1}))
        self.assertEqual(r["beyond_error"], {"wire back": 1})
        self.assertAlmostEqual(sum(p["mean_us"] for p in r["phases"][:-1]),
                               r["phases"][-1]["mean_us"])
        self.assertIn("engine-nbd: wire back: below zero for 1 I/Os by more than the "
                      "clocks' error (600 ns where a stamp is the engine's queued or handed (or "
                      "its value), else 0): a stamp read on the wrong side of its event",
                      res["warnings"])
        s1 = s1[:5] + (s1[5][:3] + [e1[5][2] + tl.SLACK_NS + 1],)
        self.write_nbd([(e1, s1)])
        r = tl.analyse(self.d)["paths"]["engine-nbd"]
        self.assertEqual((r["joined"], r["unmatched_server"]), (0, 1))
        # tcmu-shim's completed alike
        late = 20_000_000
        eng = [(5, 0, 4096, WRITE, 0, [1000, 2000, 9000, 9500])]
        srv = [(5, 0, 4096, WRITE, 0, [3000, 4000, 6000, 9000 + late])]
        write_rec(self.p("engine-1.rec"), "engine-tcmu", "tcmu-cmd-id", ENGINE_TCMU, eng)
        write_rec(self.p("tcmu-shim-9-0.rec"), "tcmu-shim", "tcmu-cmd-id", TCMU_SHIM, srv)
        os.unlink(self.p("nbd-shim-99-0.rec"))
        r = tl.analyse(self.d)["paths"]["engine-tcmu"]
        self.assertEqual((r["joined"], r["unmatched_server"]), (0, 1))

    def test_below_zero(self):
        def ph(name, mean, p50):
            return {"name": name, "mean_us": mean, "p50_us": p50}
        lim = tl.CLOCK_ERROR_NS / 1e3
        # the engine's clock against clock_gettime(): a little below zero
        ok = {"phases": [ph("client submit", -lim, -lim / 2), ph("total", 10.0, 9.0)],
              "beyond_error": {}}
        self.assertEqual(tl.below_zero(ok), [])
        bad = {"phases": [ph("wire back", -lim - 0.01, 1.0), ph("hand back", 1.0, -2 * lim),
                          ph("total", None, None)],
               "beyond_error": {"wire out": 3}}
        self.assertEqual(tl.below_zero(bad), [
            f"wire back: mean {-lim - 0.01:.2f} µs (below -{lim:g} µs, the clocks' error)",
            f"hand back: p50 {-2 * lim:.2f} µs (below -{lim:g} µs, the clocks' error)",
            "wire out: below zero for 3 I/Os by more than the clocks' error (600 ns where "
            "a stamp is the engine's queued or handed (or its value), else 0)"])
        # a kernel path's phases alone
        self.assertEqual(len(tl.below_zero({"phases": [ph("reap", -5.0, 1.0)]})), 1)
        # per I/O: 0 between two clock_gettime() stamps, CLOCK_ERROR_NS else
        phases = (("client submit", "client", "queued", "sent"),
                  ("wire out", "wire", "sent", "received"))
        e = tl.CLOCK_ERROR_NS
        chains = [(1000, 1000 - e, 1000 - e), (1000, 1000 - e - 1, 1000 - e - 2)]
        self.assertEqual(tl.beyond_error(chains, phases),
                         {"client submit": 1, "wire out": 1})
        # TCMU's published as its request's queued: the engine's clock
        phases = (("client submit", "client", "queued", "published"),
                  ("wake-up out", "wire", "published", "picked"))
        chains = [(1000, 1000, 1000 - e), (1000, 1300, 1299)]
        self.assertEqual(tl.beyond_error(chains, phases), {"wake-up out": 1})

    def test_fields_must_match(self):
        e, s = nbd_io(1, 0, 10_000)
        for other in ((2,) + s[1:], s[:1] + (4096,) + s[2:], s[:2] + (512,) + s[3:],
                      s[:3] + (WRITE,) + s[4:]):
            self.write_nbd([(e, other)])
            self.assertEqual(tl.analyse(self.d)["paths"]["engine-nbd"]["joined"], 0)

    def test_low_join_rate_is_loud(self):
        pairs = [nbd_io(k, k * 4096, 10_000 * k) for k in range(1, 21)]
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD,
                  [e for e, _ in pairs])
        write_rec(self.p("nbd-shim-99-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM,
                  [s for _, s in pairs[:18]])
        res = tl.analyse(self.d)
        r = res["paths"]["engine-nbd"]
        self.assertEqual((r["joined"], r["join_rate"]), (18, 0.9))
        self.assertEqual(r["phases"][-1]["count"], 18)
        self.assertTrue(any("only 18 of 20 I/Os (90.0%, below 95%)" in w
                            for w in res["warnings"]), res["warnings"])
        self.assertIn("WARNING: engine-nbd: only 18 of 20", tl.text_table(res))
        rc, _, err = quiet_main([self.d])
        self.assertEqual(rc, 1)
        self.assertIn("timeline: engine-nbd: only 18 of 20", err)

    def test_without_server(self):
        self.write_nbd([nbd_io(1, 0, 10_000), nbd_io(2, 4096, 20_000)], server=False)
        res = tl.analyse(self.d)
        r = res["paths"]["engine-nbd"]
        self.assertEqual((r["server"], r["form"], r["join_rate"]),
                         (None, "server and wire", None))
        self.assertEqual([(p["name"], p["where"], p["mean_us"]) for p in r["phases"]],
                         [("client submit", "client", 1.0),
                          ("server and wire", "server-and-wire", 6.0),
                          ("payload", "wire", 0.5), ("hand back", "client", 0.5),
                          ("total", "total", 8.0)])
        self.assertIn("no server records", tl.text_table(res))

    def test_phases_are_the_engines(self):
        """The engine names its phases in engine-N.json; without the file
        (a job that did not end) the records alone name none."""
        self.write_nbd([nbd_io(1, 0, 10_000)])
        os.unlink(self.p("engine-1.json"))
        with self.assertRaisesRegex(tl.TimelineError, "engine-1.json .*job again to its end"):
            tl.analyse(self.d)
        with open(self.p("engine-1.json"), "w") as f:
            json.dump([{"name": "all", "where": "total"}], f)
        with self.assertRaisesRegex(tl.TimelineError, "does not name its phases' stamps"):
            tl.analyse(self.d)
        other = (("client submit", "client", "queued", "header"),
                 ("server and wire", "server-and-wire", "header", "payload"),
                 ("total", "total", "queued", "payload"))
        with self.assertRaisesRegex(tl.TimelineError, "SERVER_PARTS .* must follow"):
            tl.path_phases(other, "engine-nbd", "nbd-shim")

    def test_incomplete_left_out(self):
        e, s = nbd_io(1, 0, 10_000)
        e2 = (2, 4096, 4096, READ, 0, [20_000, 21_000, 0, 0, 0])
        self.write_nbd([(e, s), (e2, s)])
        r = tl.analyse(self.d)["paths"]["engine-nbd"]
        self.assertEqual((r["records"], r["incomplete"], r["joined"], r["join_rate"]),
                         (2, 1, 1, 1.0))

    def test_server_without_store(self):
        # answered without the store (no started, stored): its server time
        # is all "server reply"; one without its reply is not joined
        e, s = nbd_io(1, 0, 10_000)
        e2, s2 = nbd_io(2, 4096, 20_000)
        s = s[:5] + ([s[5][0], 0, 0, s[5][3]],)
        s2 = s2[:5] + ([s2[5][0], s2[5][1], s2[5][2], 0],)
        self.write_nbd([(e, s), (e2, s2)])
        r = tl.analyse(self.d)["paths"]["engine-nbd"]
        self.assertEqual((r["joined"], r["records"]), (1, 2))
        means = {p["name"]: p["mean_us"] for p in r["phases"]}
        self.assertEqual((means["server queue"], means["storage"], means["server reply"],
                          means["total"]), (0.0, 0.0, 4.0, 8.0))

    def test_tcmu(self):
        eng = [(5, 0, 4096, WRITE, 0, [1000, 2000, 9000, 9500]),
               (6, 4096, 4096, READ, 0, [1000, 2500, 9900, 12000])]
        srv = [(5, 0, 4096, WRITE, 0, [3000, 4000, 6000, 8000]),
               (6, 4096, 4096, READ, 0, [3000, 3100, 3200, 3300])]
        write_rec(self.p("engine-1.rec"), "engine-tcmu", "tcmu-cmd-id", ENGINE_TCMU, eng)
        write_rec(self.p("tcmu-shim-9-0.rec"), "tcmu-shim", "tcmu-cmd-id", TCMU_SHIM, srv)
        # an nbd-shim under tcmu-shim --store nbd: is not the engine's server
        write_rec(self.p("nbd-shim-9-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM,
                  [(1, 0, 4096, WRITE, 0, [4100, 4200, 5000, 5100])])
        res = tl.analyse(self.d)
        self.assertEqual(list(res["paths"]), ["engine-tcmu"])
        r = res["paths"]["engine-tcmu"]
        self.assertEqual(r["join_rate"], 1.0)
        self.assertEqual([p["name"] for p in r["phases"]],
                         ["client submit", "wake-up out", "server queue", "storage",
                          "server reply", "wake-up back", "hand back", "total"])
        self.assertEqual(r["phases"][3]["mean_us"], (2.0 + 0.1) / 2)
        self.assertEqual(r["phases"][-1]["p99_us"], 11.0)
        self.assertAlmostEqual(sum(p["mean_us"] for p in r["phases"][:-1]),
                               r["phases"][-1]["mean_us"])
        # the write's storage was an NBD request to that nbd-shim
        sp = r["storage_split"]
        self.assertEqual((sp["matched"], sp["of"]), (1, 2))
        self.assertEqual([(p["name"], p["mean_us"]) for p in sp["phases"]],
                         [("storage: to nbd-shim", 0.1), ("storage: nbd-shim", 1.0),
                          ("storage: back", 0.9), ("storage", 2.0)])
        self.assertIn("storage, split at the NBD request of 1 of 2 tcmu-shim commands",
                      tl.text_table(res))
        # where the kernel runs each phase: a last column, and what it means
        lines = tl.text_table(res).splitlines()
        self.assertTrue(lines[2].endswith("share  kernel runs it in"), lines[2])
        runs = {line[:22].strip(): line for line in lines[3:11]}
        for phase, where in (("client submit", "initiator → kworker"),
                             ("wake-up out", "kworker → handler"), ("storage", "handler"),
                             ("wake-up back", "handler's notify"),
                             ("hand back", "handler's notify → kworker → initiator")):
            self.assertTrue(runs[phase].endswith("%  " + where), runs[phase])
        self.assertFalse(runs["total"].endswith("r"), runs["total"])
        self.assertIn("(kernel runs it in: where Linux 6.1 with tcm_loop runs each phase",
                      tl.text_table(res))

    def test_libnbd(self):
        # transport=libnbd: the window is [queued, callback]; key 1 twice on
        # one connection, a whole I/O apart
        eng = [(1, 0, 4096, READ, 0, [10_000, 17_000, 18_000]),
               (2, 4096, 4096, WRITE, 1, [10_500, 20_500, 22_500]),
               (1, 0, 4096, READ, 0, [30_000, 37_000, 38_000])]
        srv = [(1, 0, 4096, READ, 0, [12_000, 13_000, 15_000, 16_000]),
               (2, 4096, 4096, WRITE, 0, [13_500, 14_500, 15_500, 16_500]),
               (1, 0, 4096, READ, 0, [32_000, 33_000, 35_000, 36_000])]
        write_rec(self.p("engine-1.rec"), "engine-libnbd", "nbd-cookie", ENGINE_LIBNBD, eng)
        write_rec(self.p("nbd-shim-99-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, srv)
        res = tl.analyse(self.d)
        self.assertEqual(list(res["paths"]), ["engine-libnbd"])
        r = res["paths"]["engine-libnbd"]
        self.assertEqual((r["server"], r["form"], r["records"], r["joined"], r["join_rate"]),
                         ("nbd-shim", "merged", 3, 3, 1.0))
        self.assertEqual([(p["name"], p["where"]) for p in r["phases"]],
                         [("client and libnbd out", "wire"), ("server queue", "server"),
                          ("storage", "server"), ("server reply", "server"),
                          ("libnbd back", "wire"), ("hand back", "client"),
                          ("total", "total")])
        want = {"client and libnbd out": 7 / 3, "server queue": 1.0, "storage": 5 / 3,
                "server reply": 1.0, "libnbd back": 2.0, "hand back": 4 / 3,
                "total": 28 / 3}
        for p in r["phases"]:
            self.assertAlmostEqual(p["mean_us"], want[p["name"]], msg=p["name"])
        self.assertAlmostEqual(sum(p["mean_us"] for p in r["phases"][:-1]),
                               r["phases"][-1]["mean_us"])
        self.assertEqual((res["warnings"], r["negative"]), ([], {}))
        # after the callback the server's stamps are not this I/O's
        srv[1] = (2, 4096, 4096, WRITE, 0, [20_500 + tl.SLACK_NS + 1] * 4)
        write_rec(self.p("nbd-shim-99-0.rec"), "nbd-shim", "nbd-cookie", NBD_SHIM, srv)
        self.assertEqual(tl.analyse(self.d)["paths"]["engine-libnbd"]["joined"], 2)

    def test_libnbd_without_server(self):
        write_rec(self.p("engine-1.rec"), "engine-libnbd", "nbd-cookie", ENGINE_LIBNBD,
                  [(1, 0, 4096, READ, 0, [10_000, 17_000, 18_000]),
                   (2, 0, 4096, READ, 0, [20_000, 0, 0])])
        r = tl.analyse(self.d)["paths"]["engine-libnbd"]
        self.assertEqual((r["server"], r["form"], r["records"], r["incomplete"]),
                         (None, "server and wire", 2, 1))
        self.assertEqual([(p["name"], p["where"], p["mean_us"]) for p in r["phases"]],
                         [("libnbd, server and wire", "server-and-wire", 7.0),
                          ("hand back", "client", 1.0), ("total", "total", 8.0)])

    def fio_json(self, lat_ns, p50_ns=None):
        """fio's JSON of one job of 2 reads, its lat mean LAT_NS, its clat
        and lat medians P50_NS (a pair; lat_percentiles=1) when given."""
        clat, lat = {"mean": lat_ns - 100}, {"mean": lat_ns}
        if p50_ns is not None:
            for d, v in zip((clat, lat), p50_ns):
                d["percentile"] = {"1.000000": v // 2, "50.000000": v, "99.000000": v * 2}
        fio = self.p("fio.json")
        with open(fio, "w") as f:
            f.write("some message\n")
            json.dump({"jobs": [{"jobname": "j", "error": 0, "usr_cpu": 1, "sys_cpu": 1,
                                 "job_runtime": 1000,
                                 "read": {"total_ios": 2, "iops": 2, "bw_bytes": 8192,
                                          "clat_ns": clat, "lat_ns": lat}}]}, f)
        return fio

    def test_fio_check(self):
        # without fio's medians: the means within 10%
        self.write_nbd([nbd_io(1, 0, 10_000), nbd_io(2, 4096, 20_000)])
        for lat_ns, within in ((8500, True), (12_000, False)):
            fio = self.fio_json(lat_ns)
            res = tl.analyse(self.d, fio)
            got = res["paths"]["engine-nbd"]["fio"]
            self.assertEqual((got["lat_mean_us"], got["total_mean_us"], got["within"]),
                             (lat_ns / 1e3, 8.0, within))
            self.assertNotIn("fio_p50_us", got)
            self.assertNotIn("total_p50_us", got)
            rc, out, _ = quiet_main([self.d, "--fio-json", fio])
            self.assertEqual(rc, 0 if within else 1)
            self.assertIn(f"fio's mean latency (lat): {lat_ns / 1e3:.2f} µs", out)
            self.assertEqual("NOT within 10%" in out, not within)

    def test_fio_check_median(self):
        # every I/O's total is 8 µs
        self.write_nbd([nbd_io(1, 0, 10_000), nbd_io(2, 4096, 20_000)])
        for lat_ns, p50_ns, within in (
                # fio preempted outside the engine's window: its mean apart, its medians not
                (20_000, (7_900, 8_400), True),
                # fio's lat median above the total's (as a write's: it holds the verify fill)
                (9_000, (7_700, 9_000), True),
                (8_100, (7_300, 7_300), True),
                # the total's median outside fio's clat to lat medians, 10% leeway
                (12_000, (11_000, 12_000), False),
                (7_000, (7_000, 7_000), False),
                # the total's mean above fio's: a total wider than fio's own window
                (7_500, (8_000, 8_000), False)):
            fio = self.fio_json(lat_ns, p50_ns)
            got = tl.analyse(self.d, fio)["paths"]["engine-nbd"]["fio"]
            self.assertEqual((got["fio_p50_us"], got["total_p50_us"], got["within"]),
                             ([v / 1e3 for v in p50_ns], 8.0, within), (lat_ns, p50_ns))
            rc, out, err = quiet_main([self.d, "--fio-json", fio])
            self.assertEqual(rc, 0 if within else 1)
            self.assertIn(f"fio's latency: lat mean {lat_ns / 1e3:.2f} µs, medians from "
                          f"clat's {p50_ns[0] / 1e3:.2f} to lat's {p50_ns[1] / 1e3:.2f} µs; "
                          "the timeline's total: mean 8.00 µs", out)
            self.assertEqual("NOT between them with 10% leeway" in out, not within)
            self.assertEqual("are the records and the fio JSON of the same run?" in err,
                             not within)

    def test_command(self):
        self.write_nbd([nbd_io(1, 0, 10_000)])
        r = subprocess.run([os.path.join(SRC, "scripts", "timeline"), self.d],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("engine-nbd with nbd-shim: 1 I/Os, 1 joined with their nbd-shim "
                      "record (100.0%)", r.stdout)
        self.assertRegex(r.stdout, r"storage +server +2\.00 +2\.00 +2\.00 +2\.00 +25\.0%")
        with open(self.p("timeline.json")) as f:
            saved = json.load(f)
        self.assertEqual(saved["paths"]["engine-nbd"]["phases"][-1]["mean_us"], 8.0)
        write_rec(self.p("bad.rec"), "x", "y", [], [], magic=b"XXXXXXXX")
        r = subprocess.run([os.path.join(SRC, "scripts", "timeline"), self.d],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.rec is not a timeline record file", r.stderr)


if __name__ == "__main__":
    main()
