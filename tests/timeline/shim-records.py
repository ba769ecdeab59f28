#!/usr/bin/env python3
"""Check the record files a shim's --timeline wrote (test-shims.sh).

Reads the files as timeline/timeline_rec.h lays them out, with nothing but
the struct module: a 512-byte header, then 64-byte records. Checks that
every file is SOURCE-PID-N.rec with the header the shim must write, that
every record's stream is its file's N, that the stamps taken are non-zero
and in order (all four for reads and writes), and the counts and ranges
asked for. Prints one line of what it found; exits 1 with the first
problem.

  shim-records.py DIR SOURCE [--pid PID] [--io OP:COUNT:LEN]...
                  [--between FROM TO MIN_US MEDIAN_MAX_US]... [+ DIR ...]...

--between: over the reads and writes, the time from stamp FROM to stamp TO
is at least MIN_US and its median at most MEDIAN_MAX_US. Each "+" starts
the check of another directory (one python start for them all).
"""
import argparse
import os
import re
import statistics
import struct
import sys

HEADER = struct.Struct("=8sIIII32s32s160s")
HEADER_SIZE = 512
REC = struct.Struct("=QQIHH5Q")
REC_SIZE = 64
OPS = ["read", "write", "trim", "flush", "other"]
SOURCES = {
    "nbd-shim": ("nbd-cookie", ["received", "started", "stored", "replied"]),
    "tcmu-shim": ("tcmu-cmd-id", ["picked", "started", "stored", "completed"]),
}


def fail(msg):
    print(f"shim-records: {msg}", file=sys.stderr)
    sys.exit(1)


def text(raw):
    return raw.split(b"\0", 1)[0].decode()


def read_file(path, source, pid, n):
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    if len(data) < HEADER_SIZE or (len(data) - HEADER_SIZE) % REC_SIZE:
        fail(f"{name}: {len(data)} bytes, not a header and whole records")
    magic, version, rec_size, nr, hpid, src, key, stamps = \
        HEADER.unpack_from(data)
    key_want, stamps_want = SOURCES[source]
    got = (magic, version, rec_size, nr, hpid, text(src), text(key),
           [text(stamps[i * 32:(i + 1) * 32]) for i in range(4)])
    want = (b"TORUSTL1", 1, REC_SIZE, 4, pid, source, key_want, stamps_want)
    if got != want:
        fail(f"{name}: header {got}, expected {want}")
    recs = []
    for off in range(HEADER_SIZE, len(data), REC_SIZE):
        k, offset, length, op, stream, *t = REC.unpack_from(data, off)
        if stream != n:
            fail(f"{name}: a record of stream {stream}, expected {n}")
        if op >= len(OPS):
            fail(f"{name}: op {op} is not an enum tl_op")
        if not t[0] or not t[3] or t[4]:
            fail(f"{name}: key {k}: first or last stamp missing, or a "
                 f"fifth taken: {t}")
        taken = [x for x in t[:4] if x]
        if taken != sorted(taken):
            fail(f"{name}: key {k}: stamps out of order: {t[:4]}")
        if OPS[op] in ("read", "write") and len(taken) != 4:
            fail(f"{name}: key {k}: {OPS[op]} without all four stamps: "
                 f"{t[:4]}")
        recs.append((k, offset, length, OPS[op], t[:4]))
    return recs


def check(argv):
    ap = argparse.ArgumentParser(prog="shim-records.py")
    ap.add_argument("dir")
    ap.add_argument("source", choices=sorted(SOURCES))
    ap.add_argument("--pid", type=int)
    ap.add_argument("--io", action="append", default=[],
                    metavar="OP:COUNT:LEN")
    ap.add_argument("--between", nargs=4, action="append", default=[],
                    metavar=("FROM", "TO", "MIN_US", "MEDIAN_MAX_US"))
    a = ap.parse_args(argv)

    pattern = re.compile(re.escape(a.source) + r"-(\d+)-(\d+)\.rec$")
    recs, files = [], 0
    for name in sorted(os.listdir(a.dir)):
        m = pattern.match(name)
        if not m:
            continue
        pid, n = int(m.group(1)), int(m.group(2))
        if a.pid is not None and pid != a.pid:
            fail(f"{name}: pid {pid}, expected {a.pid}")
        recs += read_file(os.path.join(a.dir, name), a.source, pid, n)
        files += 1
    if not files:
        fail(f"no {a.source}-PID-N.rec in {a.dir}: {os.listdir(a.dir)}")

    counts = {op: sum(1 for r in recs if r[3] == op) for op in OPS}
    for spec in a.io:
        op, count, length = spec.split(":")
        mine = [r for r in recs if r[3] == op]
        if len(mine) != int(count):
            fail(f"{len(mine)} {op} records, expected {count} "
                 f"(all: {counts})")
        if any(r[2] != int(length) for r in mine):
            fail(f"{op} lengths {sorted({r[2] for r in mine})}, "
                 f"expected {length}")
        if len({r[1] for r in mine}) != len(mine):
            fail(f"{op} records name an offset twice")
    line = (f"{a.source}: {files} files, {len(recs)} records "
            f"({', '.join(f'{op} {c}' for op, c in counts.items() if c)})")
    io = [r for r in recs if r[3] in ("read", "write")]
    names = SOURCES[a.source][1]
    for first, last, low, high in a.between:
        i, j = names.index(first), names.index(last)
        span = [(r[4][j] - r[4][i]) / 1000 for r in io]
        if not span:
            fail(f"{line}: no reads or writes to time {first} to {last}")
        med = statistics.median(span)
        line += f"; {first} to {last}: min {min(span):.0f} us, " \
                f"median {med:.0f} us"
        if not (min(span) >= float(low) and med <= float(high)):
            fail(f"{line}: expected min >= {low} us and median <= "
                 f"{high} us")
    print(line)


def main():
    group = []
    for arg in sys.argv[1:] + ["+"]:
        if arg != "+":
            group.append(arg)
        elif group:
            check(group)
            group = []


if __name__ == "__main__":
    main()
