#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Wire-level conformance probe for nbd-shim's profiles.

Starts nbd-shim on private Unix sockets and checks, byte by byte, the
torus and 0-Disk wire behaviour the shim reproduces (docs/legacy-servers.md,
the row-by-row tables in docs/shims.md) and the basics of the standard
profile, with a raw client written here, independent of the project's codec.

    wire-probe.py NBD_SHIM [torus|zeroos|standard ...]

Prints one line per check; exits 1 if any failed.
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPMAGIC = 0x0003E889045565A9
REQMAGIC = 0x25609513
SIMPLE = 0x67446698
STRUCT = 0x668E33EF

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_STARTTLS = 1, 2, 3, 5
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY = 6, 7, 8
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
ERR_UNSUP, ERR_INVALID, ERR_UNKNOWN = 0x80000001, 0x80000003, 0x80000006
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_WRITE_ZEROES = 6
FLAG_FUA = 1

failures = 0


def check(name, cond, detail=""):
    global failures
    if cond:
        print(f"ok   {name}")
    else:
        failures += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))


class Closed(Exception):
    pass


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(5)
        self.s.connect(path)

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            try:
                got = self.s.recv(n - len(buf))
            except ConnectionResetError:
                got = b""
            if not got:
                raise Closed(f"closed after {len(buf)} of {n} bytes")
            buf += got
        return buf

    def send(self, data):
        self.s.sendall(data)

    def closed(self):
        """True when the server closes without sending anything more."""
        try:
            got = self.s.recv(1)
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        return got == b""

    def greeting(self):
        magic, opts, flags = struct.unpack(">QQH", self.recv(18))
        return magic, opts, flags

    def cflags(self, flags):
        self.send(struct.pack(">I", flags))

    def option(self, opt, data=b""):
        self.send(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)

    def reply(self):
        magic, opt, typ, ln = struct.unpack(">QIII", self.recv(20))
        return magic, opt, typ, self.recv(ln)

    def request(self, cmd, off, length, cookie=1, flags=0, data=b""):
        self.send(struct.pack(">IHHQQI", REQMAGIC, flags, cmd, cookie, off,
                              length) + data)

    def simple(self, datalen=0):
        magic, err, cookie = struct.unpack(">IIQ", self.recv(16))
        return magic, err, cookie, self.recv(datalen) if not err else b""

    def close(self):
        self.s.close()


class Shim:
    def __init__(self, shim, profile, *args):
        self.dir = tempfile.mkdtemp(prefix="wire-probe.")
        self.path = os.path.join(self.dir, "s.sock")
        self.p = subprocess.Popen([shim, "--profile", profile, "--listen",
                                   "unix:" + self.path, *args],
                                  stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(self.path):
                return
            time.sleep(0.02)
        raise RuntimeError(f"{profile}: no socket")

    def client(self):
        return Client(self.path)

    def stop(self):
        self.p.terminate()
        _, err = self.p.communicate(timeout=10)
        check("clean exit 0 on SIGTERM", self.p.returncode == 0,
              f"exit {self.p.returncode}: {err}")
        os.rmdir(self.dir)


def go_standard(name, infos=()):
    n = name.encode()
    return struct.pack(">I", len(n)) + n + struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos)


def go_prestandard(name, infos=()):
    n = name.encode()
    return struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos) + \
        struct.pack(">I", len(n)) + n


def torus(shim):
    print("# torus")
    srv = Shim(shim, "torus", "--size", "4M")
    c = srv.client()
    check("torus: greeting NBDMAGIC IHAVEOPT 0x0001",
          c.greeting() == (NBDMAGIC, IHAVEOPT, 0x0001))
    c.close()

    for opt, data in ((OPT_GO, go_standard("torus")),
                      (OPT_INFO, go_standard("torus")),
                      (OPT_STRUCTURED_REPLY, b""), (OPT_STARTTLS, b""),
                      (42, b"")):
        c = srv.client()
        c.greeting()
        c.cflags(1)
        c.option(opt, data)
        check(f"torus: option {opt} closes the connection, no reply",
              c.closed())
        c.close()

    c = srv.client()
    c.greeting()
    c.cflags(3)
    c.option(OPT_LIST)
    m, opt, typ, data = c.reply()
    check("torus: LIST gives SERVER \"torus\"",
          (m, opt, typ, data) == (REPMAGIC, OPT_LIST, REP_SERVER,
                                  struct.pack(">I", 5) + b"torus"))
    check("torus: LIST then ACK", c.reply() == (REPMAGIC, OPT_LIST, REP_ACK,
                                                 b""))
    c.option(OPT_EXPORT_NAME, b"")
    check("torus: empty export name closes", c.closed())
    c.close()

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"nope")
    check("torus: unknown export name closes", c.closed())
    c.close()

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_ABORT)
    check("torus: ABORT acked as LIST",
          c.reply() == (REPMAGIC, OPT_LIST, REP_ACK, b""))
    check("torus: ABORT then closed", c.closed())
    c.close()

    c = srv.client()
    c.greeting()
    c.cflags(3)          # NO_ZEROES asked: torus sends the zeroes anyway
    c.option(OPT_EXPORT_NAME, b"torus")
    size, tflags = struct.unpack(">QH", c.recv(10))
    check("torus: size and flags 0x0025", (size, tflags) == (4 << 20, 0x25),
          f"{size} 0x{tflags:x}")
    check("torus: 124 zero bytes although NO_ZEROES was asked",
          c.recv(124) == bytes(124))

    c2 = srv.client()
    c2.greeting()
    c2.cflags(1)
    c2.option(OPT_EXPORT_NAME, b"torus")
    check("torus: second connection to the volume is dropped", c2.closed())
    c2.close()

    data = bytes(range(256)) * 2
    c.request(CMD_WRITE, 100, 512, cookie=7, flags=FLAG_FUA, data=data)
    check("torus: unaligned WRITE (512 B at 100) with FUA ignored",
          c.simple() == (SIMPLE, 0, 7, b""))
    c.request(CMD_READ, 100, 512, cookie=8)
    check("torus: READ back", c.simple(512) == (SIMPLE, 0, 8, data))
    # pipelined: three requests sent at once, replies in order
    c.send(b"".join(struct.pack(">IHHQQI", REQMAGIC, 0, CMD_READ, k,
                                4096 * k, 4096) for k in (11, 12, 13)))
    cookies = [c.simple(4096)[2] for _ in range(3)]
    check("torus: pipelined requests answered in order",
          cookies == [11, 12, 13], str(cookies))
    # TRIM clears only whole 512 KiB blocks, and answers 0
    c.request(CMD_WRITE, 0, 4096, cookie=20, data=b"\xaa" * 4096)
    c.simple()
    c.request(CMD_WRITE, 512 << 10, 4096, cookie=21, data=b"\xbb" * 4096)
    c.simple()
    c.request(CMD_TRIM, 4096, (1 << 20) - 4096, cookie=22)
    check("torus: TRIM answers 0", c.simple() == (SIMPLE, 0, 22, b""))
    c.request(CMD_READ, 0, 4096, cookie=23)
    check("torus: TRIM keeps a partly covered block",
          c.simple(4096)[3] == b"\xaa" * 4096)
    c.request(CMD_READ, 512 << 10, 4096, cookie=24)
    check("torus: TRIM clears a wholly covered block",
          c.simple(4096)[3] == bytes(4096))
    c.request(CMD_FLUSH, 0, 0, cookie=25)
    check("torus: FLUSH", c.simple() == (SIMPLE, 0, 25, b""))
    c.request(CMD_WRITE_ZEROES, 0, 4096, cookie=26)
    check("torus: WRITE_ZEROES (unknown to torus) closes", c.closed())
    c.close()
    time.sleep(0.1)

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"torus")
    c.recv(134)
    check("torus: volume free again once its connection closed", True)
    c.request(CMD_DISC, 0, 0)
    check("torus: DISC closes", c.closed())
    c.close()
    srv.stop()


def zeroos(shim):
    print("# zeroos")
    srv = Shim(shim, "zeroos", "--size", "4M")
    c = srv.client()
    check("zeroos: greeting NBDMAGIC IHAVEOPT 0x0003",
          c.greeting() == (NBDMAGIC, IHAVEOPT, 0x0003))
    c.cflags(3)
    c.option(OPT_STRUCTURED_REPLY)
    check("zeroos: STRUCTURED_REPLY gets ERR_UNSUP",
          c.reply() == (REPMAGIC, OPT_STRUCTURED_REPLY, ERR_UNSUP, b""))
    c.option(99, b"abc")
    check("zeroos: unknown option gets ERR_UNSUP",
          c.reply() == (REPMAGIC, 99, ERR_UNSUP, b""))
    c.option(OPT_STARTTLS)
    check("zeroos: STARTTLS gets ERR_UNSUP",
          c.reply() == (REPMAGIC, OPT_STARTTLS, ERR_UNSUP, b""))
    c.option(OPT_LIST)
    check("zeroos: LIST gives SERVER \"default\"",
          c.reply() == (REPMAGIC, OPT_LIST, REP_SERVER,
                        struct.pack(">I", 7) + b"default"))
    check("zeroos: LIST then ACK",
          c.reply() == (REPMAGIC, OPT_LIST, REP_ACK, b""))
    c.option(OPT_INFO, go_prestandard("nope"))
    check("zeroos: INFO (pre-standard) for an unknown name: ERR_UNKNOWN",
          c.reply() == (REPMAGIC, OPT_INFO, ERR_UNKNOWN, b""))
    # what libnbd sends: a standard GO for "" asking for block sizes
    c.option(OPT_GO, go_standard("", (3,)))
    check("zeroos: libnbd's GO for \"\" is misread: ERR_UNKNOWN",
          c.reply() == (REPMAGIC, OPT_GO, ERR_UNKNOWN, b""))
    c.option(OPT_GO, go_standard("default"))
    check("zeroos: standard GO for \"default\": Name is too long, closed",
          c.closed())
    c.close()

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_GO, go_prestandard("default", (3,)))
    infos = [c.reply() for _ in range(5)]
    exp = struct.pack(">HQH", 0, 4 << 20, 0x014D)
    check("zeroos: pre-standard GO: INFO_EXPORT, flags 0x014d",
          infos[0] == (REPMAGIC, OPT_GO, REP_INFO, exp), repr(infos[0]))
    check("zeroos: INFO_NAME, INFO_DESCRIPTION",
          infos[1][3] == b"\0\1default" and infos[2][3] == b"\0\2")
    check("zeroos: INFO_BLOCK_SIZE 1 / 4096 / 32M",
          infos[3][3] == struct.pack(">HIII", 3, 1, 4096, 32 << 20))
    check("zeroos: then ACK", infos[4] == (REPMAGIC, OPT_GO, REP_ACK, b""))
    c.request(CMD_TRIM, 0, 4096, cookie=3)
    check("zeroos: TRIM answers EIO", c.simple() == (SIMPLE, 5, 3, b""))
    data = os.urandom(1000)
    c.request(CMD_WRITE, 4000, 1000, cookie=4, flags=FLAG_FUA, data=data)
    check("zeroos: unaligned WRITE with FUA",
          c.simple() == (SIMPLE, 0, 4, b""))
    c.request(CMD_READ, 4000, 1000, cookie=5)
    check("zeroos: READ back", c.simple(1000) == (SIMPLE, 0, 5, data))
    c.request(CMD_WRITE_ZEROES, 4096, 4096, cookie=6)
    check("zeroos: WRITE_ZEROES", c.simple() == (SIMPLE, 0, 6, b""))
    c.request(CMD_READ, 4000, 1000, cookie=7)
    check("zeroos: WRITE_ZEROES cleared its range",
          c.simple(1000)[3] == data[:96] + bytes(904))
    c.send(b"".join(struct.pack(">IHHQQI", REQMAGIC, 0, CMD_READ, k,
                                4096 * k, 4096) for k in (11, 12, 13)))
    cookies = [c.simple(4096)[2] for _ in range(3)]
    check("zeroos: pipelined requests answered in order",
          cookies == [11, 12, 13], str(cookies))
    c.request(CMD_READ, (4 << 20) - 512, 1024, cookie=8)
    check("zeroos: READ past the end drops the connection", c.closed())
    c.close()

    for what, off, ln in (("length 0", 0, 0), ("over 32 MiB", 0, 33 << 20)):
        c = srv.client()
        c.greeting()
        c.cflags(3)
        c.option(OPT_EXPORT_NAME, b"")
        check(f"zeroos: NO_ZEROES honoured ({what} case)",
              struct.unpack(">QH", c.recv(10)) == (4 << 20, 0x014D))
        c.request(CMD_READ, off, ln, cookie=9)
        check(f"zeroos: READ {what} drops the connection", c.closed())
        c.close()

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"default")
    c.recv(10)
    check("zeroos: 124 zeroes without NO_ZEROES", c.recv(124) == bytes(124))
    c.request(5, 0, 4096, cookie=10)
    check("zeroos: unknown command drops the connection", c.closed())
    c.close()

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_ABORT)
    check("zeroos: ABORT acked", c.reply() == (REPMAGIC, OPT_ABORT, REP_ACK,
                                                b""))
    check("zeroos: ABORT then closed", c.closed())
    c.close()
    srv.stop()


def standard(shim):
    print("# standard")
    srv = Shim(shim, "standard", "--size", "4M")
    c = srv.client()
    check("standard: greeting 0x0003",
          c.greeting() == (NBDMAGIC, IHAVEOPT, 0x0003))
    c.cflags(3)
    c.option(OPT_STRUCTURED_REPLY)
    check("standard: STRUCTURED_REPLY acked",
          c.reply() == (REPMAGIC, OPT_STRUCTURED_REPLY, REP_ACK, b""))
    c.option(99)
    check("standard: unknown option ERR_UNSUP",
          c.reply() == (REPMAGIC, 99, ERR_UNSUP, b""))
    c.option(OPT_GO, go_standard("", (3,)))
    r1, r2, r3 = c.reply(), c.reply(), c.reply()
    check("standard: GO: INFO_EXPORT with multi-conn flags 0x016d",
          r1 == (REPMAGIC, OPT_GO, REP_INFO,
                 struct.pack(">HQH", 0, 4 << 20, 0x016D)), repr(r1))
    check("standard: GO: INFO_BLOCK_SIZE 1 / 4096 / 32M",
          r2[3] == struct.pack(">HIII", 3, 1, 4096, 32 << 20))
    check("standard: GO: ACK", r3 == (REPMAGIC, OPT_GO, REP_ACK, b""))
    data = os.urandom(4096)
    c.request(CMD_WRITE, 8192, 4096, cookie=1, flags=FLAG_FUA, data=data)
    check("standard: WRITE FUA", c.simple() == (SIMPLE, 0, 1, b""))
    c.request(CMD_READ, 8192, 4096, cookie=2)
    hdr = struct.unpack(">IHHQI", c.recv(20))
    off = struct.unpack(">Q", c.recv(8))[0]
    check("standard: READ as a structured OFFSET_DATA chunk, DONE",
          hdr == (STRUCT, 1, 1, 2, 4104) and off == 8192 and
          c.recv(4096) == data, repr(hdr))
    c.request(CMD_READ, 4 << 20, 4096, cookie=3)
    hdr = struct.unpack(">IHHQI", c.recv(20))
    err = struct.unpack(">IH", c.recv(6))
    c.recv(hdr[4] - 6)
    check("standard: READ past the end: structured ERROR EINVAL",
          hdr[:4] == (STRUCT, 1, 0x8001, 3) and err[0] == 22, repr(hdr))
    c.request(CMD_TRIM, 0, 4096, cookie=4)
    check("standard: TRIM", c.simple() == (SIMPLE, 0, 4, b""))
    c.request(CMD_WRITE_ZEROES, 8192, 4096, cookie=5)
    check("standard: WRITE_ZEROES", c.simple() == (SIMPLE, 0, 5, b""))
    c.request(CMD_DISC, 0, 0)
    check("standard: DISC closes", c.closed())
    c.close()
    srv.stop()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    shim = sys.argv[1]
    which = sys.argv[2:] or ["torus", "zeroos", "standard"]
    for name in which:
        try:
            globals()[name](shim)
        except (Closed, socket.timeout, OSError) as e:
            check(f"{name}: probe ran to the end", False, str(e))
    print(f"# {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
