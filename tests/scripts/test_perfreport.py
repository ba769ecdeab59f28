#!/usr/bin/env python3
"""Unit tests of scripts/perfreport.py, the page of `scripts/bench
--report`, rendered from recorded figures (no fio): the run's date,
machine, mode and command; each section in both placements with its
ratios (median [min-max] of the rounds' own), targets, lean probe, figures
and the command that re-runs it."""

import os
import tempfile
import unittest

from testlib import main
import benchlib
import perfreport

META = [("meta", "command", "scripts/bench --report --quick"),
        ("meta", "rerun", "--rounds 3 --runtime 8 --size 8G"),
        ("meta", "mode", "full"), ("meta", "rounds", "3"), ("meta", "runtime", "8"),
        ("meta", "started", "2026-11-27 04:00 UTC"), ("meta", "finished", "2026-11-27 04:30 UTC"),
        ("meta", "commit", "abc1234"), ("meta", "cpu", "AMD EPYC 7B13"), ("meta", "cores", "2"),
        ("meta", "kernel", "6.1.0-27-amd64"), ("meta", "versions", "fio-3.33, nbdkit 1.32.5"),
        ("meta", "load_start", "0.10 0.20 0.30"), ("meta", "load_end", "1.00 0.50 0.40"),
        ("meta", "busy", "2 9 20")]


def section(sid, place, rounds, title="4 KiB randread QD16, nbdkit null, Unix socket",
            bench_section=None):
    """The records of one section in PLACE: ROUNDS is a list of (builtin,
    torus, probe) IOPS and (builtin, torus) CPU per I/O."""
    s = sid + ("@free" if place == "free" else "")
    recs = [("section", s, title, bench_section or sid),
            ("target", s, "cpu_us_per_io", "torus", "builtin", "<=", "0.55"),
            ("ratio", s, "iops", "torus", "builtin"),
            ("probe", s, "probe", "pipe-probe over the Unix socket, 4 KiB reads at QD16, no fio"),
            ("ratio", s, "iops", "torus", "probe")]
    for i, ((bi, ti, pi), (bc, tc)) in enumerate(rounds, 1):
        recs += [("value", s, "builtin", i, "iops", bi), ("value", s, "builtin", i, "cpu_us_per_io", bc),
                 ("value", s, "torus", i, "iops", ti), ("value", s, "torus", i, "cpu_us_per_io", tc),
                 ("value", s, "probe", i, "iops", pi)]
    return recs


PINNED = [((100e3, 200e3, 400e3), (10, 5)), ((110e3, 198e3, 396e3), (10, 4)),
          ((90e3, 210e3, 420e3), (10, 6))]
FREE = [((100e3, 150e3, 300e3), (10, 7)), ((100e3, 160e3, 320e3), (10, 8)),
        ((100e3, 140e3, 280e3), (10, 6))]


def render(records):
    """The page of RECORDS, saved as a run saves them and loaded again (the
    page a run writes and the one perfreport.py renders from the saved
    records are the same)."""
    rec = benchlib.Records(records)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "records.json")
        rec.save(path)
        page = perfreport.render(benchlib.load(path))
    assert page == perfreport.render(rec)
    return page


class Page(unittest.TestCase):
    def setUp(self):
        self.page = render(META + section("randread4k_qd16", "pinned", PINNED)
                           + section("randread4k_qd16", "free", FREE))

    def test_the_run(self):
        p = self.page
        self.assertTrue(p.startswith("# Performance\n"))
        self.assertIn("[performance-history.md](performance-history.md)", p)
        self.assertIn("- **Command**: `scripts/bench --report --quick`", p)
        self.assertIn("- **Mode**: full (3 rounds of 8 s per client)", p)
        self.assertIn("- **Date**: 2026-11-27 04:00 UTC to 2026-11-27 04:30 UTC", p)
        self.assertIn("- **Commit**: abc1234", p)
        self.assertIn("- **Machine**: AMD EPYC 7B13, 2 cores, Linux 6.1.0-27-amd64", p)
        self.assertIn("- **Software**: fio-3.33, nbdkit 1.32.5", p)
        self.assertIn("pinned: servers on CPU 0, clients (fio, the probes) on CPU 1; free: no "
                      "pinning", p)
        self.assertIn("0.10 0.20 0.30 at the start, 1.00 0.50 0.40 at the end; busy machine: "
                      "2 of 9 runs started with a CPU over 15% busy after waiting 20 s", p)

    def test_section_both_placements(self):
        p = self.page
        self.assertEqual(p.count("## 4 KiB randread QD16, nbdkit null, Unix socket "
                                 "(`randread4k_qd16`)"), 1)
        self.assertIn("Re-run: `scripts/bench --sections randread4k_qd16 --placements "
                      "pinned,free --rounds 3 --runtime 8 --size 8G`", p)
        self.assertIn("Lean probe (`probe`): pipe-probe over the Unix socket, 4 KiB reads at "
                      "QD16, no fio.", p)
        # CPU per I/O torus/builtin: pinned 0.5, 0.4, 0.6; free 0.7, 0.8, 0.6
        self.assertIn("| CPU us per I/O: torus / builtin (fio's own engine) | 0.50 [0.40–0.60] | "
                      "0.70 [0.60–0.80] | ≤ 0.55: **PASS** pinned, **MISS** free |", p)
        # IOPS torus/probe: 0.5 every round in both
        self.assertIn("| IOPS: torus / probe (the lean probe) | 0.50 | 0.50 |  |", p)
        # the probe's ratio comes after the engine's
        sec = p[p.index("## 4 KiB"):]
        self.assertLess(sec.index("IOPS: torus / builtin"), sec.index("IOPS: torus / probe"))
        self.assertIn("| figure, median [min–max] | placement | builtin | torus | probe |", p)
        self.assertIn("| IOPS | pinned | 100.0k [90.0k–110.0k] | 200.0k [198.0k–210.0k] | "
                      "400.0k [396.0k–420.0k] |", p)
        self.assertIn("| IOPS | free | 100.0k | 150.0k [140.0k–160.0k] | 300.0k [280.0k–320.0k] |",
                      p)

    def test_summary(self):
        p = self.page
        summary = p[p.index("## Summary"):p.index("## 4 KiB")]
        self.assertIn("| `randread4k_qd16` | CPU us per I/O: torus / builtin (fio's own engine) | "
                      "0.50 [0.40–0.60] | 0.70 [0.60–0.80] |", summary)
        self.assertIn("| `randread4k_qd16` | IOPS: torus / probe (the lean probe) |", summary)
        # beside the probe's, the ratio to fio's engine on the same metric
        self.assertIn("| `randread4k_qd16` | IOPS: torus / builtin (fio's own engine) | "
                      "2.00 [1.80–2.33] | 1.50 [1.40–1.60] |  |", summary)
        self.assertIn("Targets, pinned: 1 PASS, 0 MISS.", summary)
        self.assertIn("Targets, free: 0 PASS, 1 MISS.", summary)


class Interval(unittest.TestCase):
    def test_target_over_six_rounds_shows_it(self):
        # CPU per I/O torus/builtin 0.40, 0.41, ... 0.49 in ten rounds:
        # median 0.445, 95% interval the 2nd and 9th (0.41 and 0.48)
        rounds = [((100e3, 200e3, 400e3), (100, 40 + i)) for i in (3, 9, 0, 5, 1, 8, 2, 7, 4, 6)]
        p = render(META + section("randread4k_qd16", "pinned", rounds))
        self.assertIn("| CPU us per I/O: torus / builtin (fio's own engine) | 0.45 [0.40–0.49] "
                      "(95%: 0.41–0.48) | ≤ 0.55: **PASS** pinned |", p)
        # a ratio that is not a target keeps median [min–max] alone
        self.assertIn("| IOPS: torus / builtin (fio's own engine) | 2.00 |", p)
        self.assertIn("the 95% interval of its median (95%: low–high)", p)

    def test_three_rounds_no_interval(self):
        self.assertNotRegex(render(META + section("randread4k_qd16", "pinned", PINNED)),
                            r"\(95%: [0-9]")


class Diffs(unittest.TestCase):
    def test_difference_rows(self):
        s = "transports_tls"
        recs = [("section", s, "TLS against plain", s),
                ("ratio", s, "cpu_us_per_io", "libnbd-tls", "libnbd-plain"),
                ("diff", s, "cpu_us_per_io", "libnbd-tls", "libnbd-plain")]
        # rounds' own differences +1.000, +0.250, +0.500
        for i, (t, p) in enumerate([(3.0, 2.0), (2.75, 2.5), (2.5, 2.0)], 1):
            recs += [("value", s, "libnbd-plain", i, "cpu_us_per_io", p),
                     ("value", s, "libnbd-tls", i, "cpu_us_per_io", t)]
        p = render(META + recs)
        self.assertIn("| CPU us per I/O: libnbd-tls / libnbd-plain | 1.25 [1.10–1.50] |  |", p)
        self.assertIn("| CPU us per I/O: libnbd-tls − libnbd-plain | +0.500 [+0.250–+1.000] |  |",
                      p)
        summary = p[p.index("## Summary"):p.index("## TLS against plain")]
        self.assertIn("| `transports_tls` | CPU us per I/O: libnbd-tls − libnbd-plain | "
                      "+0.500 [+0.250–+1.000] |  |", summary)
        self.assertNotIn("libnbd-tls / libnbd-plain", summary)
        sec = p[p.index("## TLS against plain"):]
        self.assertLess(sec.index("libnbd-tls / libnbd-plain"),
                        sec.index("libnbd-tls − libnbd-plain"))


class Modes(unittest.TestCase):
    def test_quick_says_so(self):
        meta = [m for m in META if m[1] not in ("mode", "rounds", "runtime")]
        meta += [("meta", "mode", "quick"), ("meta", "rounds", "1"), ("meta", "runtime", "2")]
        p = render(meta + section("randread4k_qd16", "pinned", PINNED[:1]))
        self.assertIn("- **Mode**: quick (1 round of 2 s per client): a smoke run", p)
        # one round: figures without a range
        self.assertIn("| IOPS | pinned | 100.0k | 200.0k | 400.0k |", p)

    def test_one_placement(self):
        p = render(META + section("randread4k_qd16", "free", FREE))
        self.assertIn("--placements free ", p)
        self.assertIn("| ratio, median [min–max] of the rounds' own | free | target |", p)
        self.assertNotIn("| pinned |", p)
        self.assertIn("Targets, free: 0 PASS, 1 MISS.", p)

    def test_section_of_a_group(self):
        # shim_docs records sections of other ids: the command names shim_docs
        p = render(META + section("shim_doc_torus4k", "pinned", PINNED, title="torus document",
                                  bench_section="shim_docs"))
        self.assertIn("`scripts/bench --sections shim_docs --placements pinned ", p)

    def test_no_quiet_wait(self):
        meta = [m for m in META if m[1] != "busy"] + [("meta", "busy", "0 0 0")]
        p = render(meta + section("randread4k_qd16", "pinned", PINNED))
        self.assertIn("busy machine: not checked (--quiet-wait 0)", p)


class Spread(unittest.TestCase):
    def test_spread_judged_per_placement(self):
        recs = META + section("s", "pinned", PINNED) + section("s", "free", FREE)
        for sid in ("s", "s@free"):
            recs.append(("spread", sid, "cpu_us_per_io", "torus", "<=", "1.25", "builtin"))
        p = render(recs)
        # torus CPU per I/O: pinned 4..6 (1.50, builtin steady: MISS); free 6..8 (1.33: MISS)
        self.assertIn("| CPU us per I/O: torus, max / min over the rounds | 1.50 | 1.33 | "
                      "≤ 1.25 where builtin's is: **MISS** pinned, **MISS** free |", p)

    def test_one_round_not_judged(self):
        recs = META + section("s", "pinned", PINNED[:1])
        recs.append(("spread", "s", "cpu_us_per_io", "torus", "<=", "1.25", "builtin"))
        p = render(recs)
        self.assertIn("| CPU us per I/O: torus, max / min over the rounds | n/a | "
                      "≤ 1.25 where builtin's is: n/a pinned |", p)
        # counted neither way
        self.assertIn("Targets, pinned: 1 PASS, 0 MISS.", p)


class Summary(unittest.TestCase):
    def test_cpu_against_the_probe_stays_in_its_section(self):
        recs = META + section("s", "pinned", PINNED)
        recs.append(("ratio", "s", "cpu_us_per_io", "torus", "probe"))
        recs += [("value", "s", "probe", i, "cpu_us_per_io", 2) for i in (1, 2, 3)]
        p = render(recs)
        summary = p[p.index("## Summary"):p.index("## 4 KiB")]
        self.assertNotIn("CPU us per I/O: torus / probe", summary)
        self.assertIn("| CPU us per I/O: torus / probe (the lean probe) | 2.50 [2.00–3.00] |  |",
                      p)


class BadRecords(unittest.TestCase):
    def test_bad_line_named(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('[["value", "s", "builtin"]]')
        try:
            with self.assertRaisesRegex(ValueError, r"record 1: not a record a bench run saves"):
                benchlib.load(f.name)
        finally:
            os.unlink(f.name)



class Runs(unittest.TestCase):
    """A partial re-run replaces its sections and keeps the others: each
    from the newest run that measured it, in the bench's order, the page
    naming every run it still draws on."""

    def runs(self):
        old = META + [("meta", "order", "a b")] + section("a", "pinned", PINNED) + \
            section("b", "pinned", PINNED)
        new = [m if m[1] != "commit" else ("meta", "commit", "def5678") for m in META] + \
            [("meta", "order", "a b")] + section("a", "pinned", FREE)
        return benchlib.merge_runs([[list(r) for r in old]], [list(r) for r in new])

    def test_merge_keeps_the_newest(self):
        runs = self.runs()
        self.assertEqual(len(runs), 2)
        self.assertEqual({benchlib.record_sid(r) for r in runs[0]}, {None, "b"})
        self.assertEqual({benchlib.record_sid(r) for r in runs[1]}, {None, "a"})
        # a run left with no section goes
        again = benchlib.merge_runs(runs, runs[0])
        self.assertEqual(len(again), 2)
        self.assertEqual(benchlib.merge_runs(runs, runs[0] + runs[1])[-1], runs[0] + runs[1])

    def test_page_of_two_runs(self):
        p = perfreport.render_runs([benchlib.Records(r) for r in self.runs()])
        self.assertIn("## The runs", p)
        self.assertNotIn("## This run", p)
        self.assertIn("### Run 2: 2026-11-27 04:00 UTC", p)
        self.assertIn("- **Commit**: def5678", p)
        self.assertIn("- **Sections**: `b`", p)
        self.assertIn("- **Sections**: `a`", p)
        # a first, as the bench orders them, measured in run 2 (FREE's figures)
        self.assertLess(p.index("(`a`)"), p.index("(`b`)"))
        a = p[p.index("(`a`)"):p.index("(`b`)")]
        self.assertIn("Measured in run 2.", a)
        self.assertIn("| IOPS: torus / builtin (fio's own engine) | 1.50 [1.40–1.60] |", a)

    def test_saved_and_loaded(self):
        runs = self.runs()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "page.json")
            benchlib.save_runs(path, runs)
            self.assertEqual(benchlib.load_runs(path), runs)
            # a run's own file is one run
            one = os.path.join(d, "run.json")
            benchlib.Records(runs[0]).save(one)
            self.assertEqual(benchlib.load_runs(one), [runs[0]])
            with open(path, "w") as f:
                f.write('[[["value", "s"]]]')
            with self.assertRaisesRegex(ValueError, r"run 1, record 1: not a record"):
                benchlib.load_runs(path)


class ServerBound(unittest.TestCase):
    """A ratio to the lean probe where the server ran at 90% of a CPU or
    more under both clients is marked, and the page says what that means;
    one where it did not, or that is not a rate, is not."""

    def page(self, pcts):
        recs = META + section("randread4k_qd16", "pinned", PINNED)
        s = "randread4k_qd16"
        recs.append(("ratio", s, "server_cpu_us_per_io", "torus", "probe"))
        for i in range(1, 4):
            for label, pct in pcts.items():
                recs += [("value", s, label, i, "server_cpu_pct", pct),
                         ("value", s, label, i, "server_cpu_us_per_io", 9.5)]
        return render(recs)

    def test_marked(self):
        p = self.page({"torus": 95.0, "probe": 91.0})
        self.assertIn("| IOPS: torus / probe (the lean probe) | 0.50 ‡ |", p)
        self.assertIn("| server CPU us/IO: torus / probe (the lean probe) | 1.00 |",
                      p)
        self.assertIn("‡ server-bound: the server ran at 90% of a CPU or more under both "
                      "clients (its `server CPU %` median), so the ratio says how each client's "
                      "traffic lets the server work, not the client's gap to the transport's "
                      "limit.", p)
        # once after the summary's table, once after the section's
        self.assertEqual(p.count("‡ server-bound"), 2)

    def test_not_marked(self):
        p = self.page({"torus": 95.0, "probe": 89.9})
        self.assertIn("| IOPS: torus / probe (the lean probe) | 0.50 |", p)
        self.assertNotIn("‡", p)


if __name__ == "__main__":
    main()
