#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Several connections to one 0-Disk vdisk, each with its own block map.

    zeroos-conns.py SOCKET

SOCKET is nbd-shim --profile zeroos --store redis:... serving "default"
over a vdisk that is empty at the start. As in 0-Disk, every connection
has its own copy of the block map: a block's content goes to the storage
servers at once, but its map entry only at FLUSH (or FUA, DISC), after
which the connection's copy is dropped and loaded again when needed. So:

- another connection does not see a write its writer has not flushed;
- nor one flushed after it loaded the sector, until it flushes itself;
- flushing writes the whole sector as this connection has it, over what
  another connection flushed meanwhile (a lost update);
- a connection that goes away without FLUSH or DISC loses its map changes;
  DISC flushes them.

Prints one line per check; exits 1 if any failed.
"""

import socket
import struct
import sys

IHAVEOPT = 0x49484156454F5054
REQMAGIC = 0x25609513
SIMPLE = 0x67446698
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3
BS = 4096

failures = 0


def check(name, cond, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + name +
          ("" if cond or not detail else f": {detail}"))
    if not cond:
        failures += 1


class Conn:
    """A raw client on the export "default"."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(10)
        self.s.connect(path)
        self.recv(18)
        self.s.sendall(struct.pack(">I", 3) +
                       struct.pack(">QII", IHAVEOPT, 1, 7) + b"default")
        self.recv(10)
        self.cookie = 0

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            got = self.s.recv(n - len(buf))
            if not got:
                raise RuntimeError("connection closed")
            buf += got
        return buf

    def req(self, cmd, block=0, data=b""):
        self.cookie += 1
        ln = len(data) if cmd == CMD_WRITE else BS if cmd == CMD_READ else 0
        self.s.sendall(struct.pack(">IHHQQI", REQMAGIC, 0, cmd, self.cookie,
                                   block * BS, ln) + data)
        if cmd == CMD_DISC:
            return None
        magic, err, cookie = struct.unpack(">IIQ", self.recv(16))
        if (magic, err, cookie) != (SIMPLE, 0, self.cookie):
            raise RuntimeError(f"bad reply {magic:x} {err} {cookie}")
        return self.recv(BS) if cmd == CMD_READ else None

    def read(self, block):
        return self.req(CMD_READ, block)

    def write(self, block, fill):
        self.req(CMD_WRITE, block, bytes([fill]) * BS)

    def flush(self):
        self.req(CMD_FLUSH)

    def disc(self):
        self.req(CMD_DISC)
        self.s.recv(1)
        self.s.close()

    def close(self):
        self.s.close()


def content(data):
    return "zeroes" if data == bytes(BS) else f"0x{data[0]:02x}..."


def main():
    path = sys.argv[1]
    zero = bytes(BS)
    a, b = Conn(path), Conn(path)
    check("B reads block 0 (zeroes): its copy of sector 0 is loaded",
          b.read(0) == zero)
    a.write(0, 0xA1)
    got = b.read(0)
    check("A writes block 0; B does not see it (A has not flushed)",
          got == zero, content(got))
    got = a.read(0)
    check("A reads its own write", got == bytes([0xA1]) * BS, content(got))
    a.flush()
    got = b.read(0)
    check("A flushed; B still reads its copy loaded before (zeroes)",
          got == zero, content(got))
    c = Conn(path)
    got = c.read(0)
    check("a new connection C loads the sector after A's flush: A's data",
          got == bytes([0xA1]) * BS, content(got))
    c.close()
    b.write(1, 0xB1)
    b.flush()
    d = Conn(path)
    got = d.read(0), d.read(1)
    check("B writes block 1 of the same sector and flushes: its whole copy "
          "of the sector replaces A's, block 0 is lost",
          got == (zero, bytes([0xB1]) * BS),
          f"{content(got[0])}, {content(got[1])}")
    d.close()
    got = b.read(0)
    check("B's flush dropped its copy: it reads what is stored now",
          got == zero, content(got))

    a.write(2, 0xA2)
    a.close()           # gone without FLUSH or DISC
    e = Conn(path)
    got = e.read(2)
    check("A went away unflushed: its map change is lost", got == zero,
          content(got))
    e.write(3, 0xE3)
    e.disc()
    f = Conn(path)
    got = f.read(3)
    check("E disconnected with DISC, which flushed: its write is there",
          got == bytes([0xE3]) * BS, content(got))
    f.close()
    b.close()
    print(f"# {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
