#!/usr/bin/env python3
"""scripts/timeline_rec.py on record files written here with the layout of
timeline/timeline_rec.h (test_timelinelib.write_rec): a good file read
whole (a record a killed writer left half-written is not one), a header
this reader does not know refused naming the file and the problem, both
versions' records (version 2's stamps as distances), a
directory without record files refused saying which option writes them."""

import unittest

from testlib import main
import timeline_rec
from test_timelinelib import ENGINE_NBD, WRITE, Dir, write_rec


class Header(Dir):
    def test_good_file(self):
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD,
                  [(7, 4096, 512, WRITE, 2, [1, 2, 3, 4, 5])], tail=b"\1" * 10)
        rf = timeline_rec.read_rec(self.p("engine-1.rec"))
        self.assertEqual((rf.source, rf.key, rf.pid, rf.name),
                         ("engine-nbd", "nbd-cookie", 1234, "engine-1.rec"))
        self.assertEqual(rf.stamps, list(ENGINE_NBD))
        # the part of a record a killed writer left is not a record
        self.assertEqual(rf.records, [(7, 4096, 512, WRITE, 2, 1, 2, 3, 4, 5)])

    def test_versions(self):
        # version 2 keeps each stamp as its distance from the first: not
        # taken, before it, seconds after it (coarse: in units of 1024 ns)
        t0 = 5_000_000_000
        recs = [(1, 0, 4096, WRITE, 0, [t0, t0 + 100, 0, t0 - 600, t0 + 2_000_000_000])]
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD, recs)
        self.assertEqual(timeline_rec.read_rec(self.p("engine-1.rec")).records,
                         [(1, 0, 4096, WRITE, 0, t0, t0 + 100, 0, t0 - 600,
                           t0 + 2_000_000_000)])
        far = 3_000_000_000 >> 10
        with open(self.p("engine-1.rec"), "r+b") as f:
            f.seek(512)
            f.write(timeline_rec.RECORD.pack(1, 0, 4096, WRITE, 0b1000, 0, t0, 100, -2 ** 31,
                                             -600, far))
        self.assertEqual(timeline_rec.read_rec(self.p("engine-1.rec")).records[0][5:],
                         (t0, t0 + 100, 0, t0 - 600, t0 + (far << 10)))
        # version 1 files are still read
        write_rec(self.p("engine-1.rec"), "engine-nbd", "nbd-cookie", ENGINE_NBD, recs,
                  version=1)
        self.assertEqual(timeline_rec.read_rec(self.p("engine-1.rec")).records,
                         [(1, 0, 4096, WRITE, 0, t0, t0 + 100, 0, t0 - 600,
                           t0 + 2_000_000_000)])

    def test_bad_headers_name_the_file(self):
        path = self.p("engine-1.rec")
        cases = ((dict(magic=b"NOTATIME"), "is not a timeline record file"),
                 (dict(version=3), "is version 3, this reader knows 1 and 2"),
                 (dict(rec_size=32), "has 32-byte records, this reader knows 48 for "
                  "version 2"),
                 (dict(version=1, rec_size=48), "has 48-byte records, this reader knows "
                  "64 for version 1"))
        for kw, said in cases:
            write_rec(path, "engine-nbd", "nbd-cookie", ENGINE_NBD, [], **kw)
            with self.assertRaises(timeline_rec.TimelineError) as e:
                timeline_rec.read_rec(path)
            self.assertIn(path, str(e.exception))
            self.assertIn(said, str(e.exception))
        with open(path, "wb") as f:
            f.write(b"TORUSTL1")
        with self.assertRaisesRegex(timeline_rec.TimelineError,
                                    "shorter than the 512-byte header"):
            timeline_rec.read_rec(path)
        with self.assertRaisesRegex(timeline_rec.TimelineError, "cannot read"):
            timeline_rec.read_rec(self.p("none.rec"))

    def test_directory(self):
        with self.assertRaisesRegex(timeline_rec.TimelineError,
                                    "no .rec files in .*timeline=DIR"):
            timeline_rec.read_dir(self.d)
        with self.assertRaisesRegex(timeline_rec.TimelineError, "is not a directory"):
            timeline_rec.read_dir(self.p("none"))
        for n in ("engine-2.rec", "engine-1.rec"):
            write_rec(self.p(n), "engine-nbd", "nbd-cookie", ENGINE_NBD, [])
        with open(self.p("notes.txt"), "w") as f:
            f.write("not a record file\n")
        self.assertEqual([rf.name for rf in timeline_rec.read_dir(self.d)],
                         ["engine-1.rec", "engine-2.rec"])


if __name__ == "__main__":
    main()
