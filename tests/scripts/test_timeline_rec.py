#!/usr/bin/env python3
"""scripts/timeline_rec.py on record files written here with the layout of
timeline/timeline_rec.h (test_timelinelib.write_rec): a good file read
whole (a record a killed writer left half-written is not one), a header
this reader does not know refused naming the file and the problem, a
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

    def test_bad_headers_name_the_file(self):
        path = self.p("engine-1.rec")
        cases = ((dict(magic=b"NOTATIME"), "is not a timeline record file"),
                 (dict(version=2), "is version 2, this reader knows 1"),
                 (dict(rec_size=32), "has 32-byte records, this reader knows 64"))
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
