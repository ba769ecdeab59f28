#!/usr/bin/env python3
"""allocated.py FILE OFFSET LENGTH: prints how many bytes of FILE's range
[OFFSET, OFFSET + LENGTH) the file system holds data for, as lseek's
SEEK_DATA and SEEK_HOLE report it: 0 for a hole (a trim that a server passed
on as FALLOC_FL_PUNCH_HOLE), LENGTH for a range that was written. OFFSET and
LENGTH are bytes, or KiB, MiB, GiB with a suffix k, m, g (fio's 4k, 64M)."""
import errno
import os
import sys


def size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:].lower())
    return int(s[:-1]) * mult if mult else int(s)


def allocated(path, off, length):
    end = off + length
    n = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while off < end:
            try:
                data = os.lseek(fd, off, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after off
                    break
                raise
            if data >= end:
                break
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
            n += hole - data
            off = hole
    finally:
        os.close(fd)
    return n


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: allocated.py FILE OFFSET LENGTH")
    print(allocated(sys.argv[1], size(sys.argv[2]), size(sys.argv[3])))
