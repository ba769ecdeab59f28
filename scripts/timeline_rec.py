"""The timeline's record files (timeline/timeline_rec.h, docs/timeline.md):
what the engine (timeline=DIR) and the shims (--timeline DIR) write, a
512-byte header (who wrote it, its stamps' names) and then one 64-byte
record per wire command, stamped on CLOCK_MONOTONIC; read into RecFiles,
one file or a whole directory, a file this reader does not know refused
with a message naming it. timelinelib.py joins and reports them.
"""

import os
import struct

MAGIC = b"TORUSTL1"
VERSION = 1
HEADER_SIZE = 512
REC_SIZE = 64
NR_STAMPS = 5
NAME_LEN = 32
# magic, version, rec_size, nr_stamps, pid, source, key, 5 stamp names
HEADER = struct.Struct("=8sIIII32s32s" + "32s" * NR_STAMPS)
# key, offset, len, op, stream, t[5]
RECORD = struct.Struct("=QQIHH" + "Q" * NR_STAMPS)
OPS = ("read", "write", "trim", "flush", "other")


class TimelineError(Exception):
    """A timeline directory or file that cannot be read: the message names
    it, the problem and the fix."""


class RecFile:
    """One record file: who wrote it (source, key, pid), its stamps' names,
    and its records as tuples (key, offset, len, op, stream, t0..t4)."""

    def __init__(self, path, source, key, pid, stamps, records):
        self.path, self.source, self.key, self.pid = path, source, key, pid
        self.stamps, self.records = stamps, records

    @property
    def name(self):
        return os.path.basename(self.path)


def _cstr(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_rec(path):
    """The record file PATH as a RecFile; TimelineError when its header is
    not one this reader knows (magic, version, record size, stamps)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TimelineError(f"timeline: cannot read {path}: {e.strerror}")
    if len(data) < HEADER_SIZE:
        raise TimelineError(f"timeline: {path} is {len(data)} bytes, shorter than the "
                            f"{HEADER_SIZE}-byte header: not a record file (or its writer "
                            "did not get to write it: did it exit cleanly?)")
    magic, version, rec_size, nr, pid, source, key, *names = \
        HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise TimelineError(f"timeline: {path} is not a timeline record file (magic "
                            f"{magic!r}, not {MAGIC.decode()}): keep only the engine's "
                            "and the shims' .rec files in the directory")
    if version != VERSION:
        raise TimelineError(f"timeline: {path} is version {version}, this reader knows "
                            f"{VERSION}: read it with the scripts of the build that wrote it")
    if rec_size != REC_SIZE:
        raise TimelineError(f"timeline: {path} has {rec_size}-byte records, this reader "
                            f"knows {REC_SIZE}: read it with the scripts of the build that "
                            "wrote it")
    if nr > NR_STAMPS:
        raise TimelineError(f"timeline: {path} says {nr} stamps, at most {NR_STAMPS}: "
                            "the file is damaged")
    body = len(data) - HEADER_SIZE
    whole = body - body % REC_SIZE      # a writer killed mid-write leaves a part
    records = list(RECORD.iter_unpack(memoryview(data)[HEADER_SIZE:HEADER_SIZE + whole]))
    return RecFile(path, _cstr(source), _cstr(key), pid,
                   [_cstr(n) for n in names[:nr]], records)


def read_dir(d):
    """Every *.rec file of the timeline directory D, as RecFiles in name
    order; TimelineError when there is none or one is bad."""
    if not os.path.isdir(d):
        raise TimelineError(f"timeline: {d} is not a directory (give the directory that "
                            "timeline=DIR or --timeline DIR wrote)")
    names = sorted(n for n in os.listdir(d) if n.endswith(".rec"))
    if not names:
        raise TimelineError(f"timeline: no .rec files in {d} (run fio with the engine's "
                            "timeline=DIR, and the shims with --timeline DIR)")
    return [read_rec(os.path.join(d, n)) for n in names]
