#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Wire-level conformance probe for nbd-shim's profiles.

Starts nbd-shim on private Unix sockets and checks, byte by byte, the
torus and 0-Disk wire behaviour the shim reproduces (docs/legacy-servers.md,
the row-by-row tables in docs/shims.md) and the basics of the standard
profile, with a raw client written here, independent of the project's codec.

    wire-probe.py NBD_SHIM [torus|torus_sync_fails|zeroos|standard ...]

torus_sync_fails needs WIRE_PROBE_FAIL_SYNC, a library to LD_PRELOAD that
makes every fsync and fdatasync fail (tests/shims/fail-sync.c).

How a connection ends is checked too: a close (EOF) and a reset
(ECONNRESET) are told apart, over TCP (where the shim resets with
SO_LINGER 0) and over a Unix socket (where the peer gets ECONNRESET when
the server closes with input left unread, as the real servers do).

Prints one line per check; exits 1 if any failed.
"""

import os
import re
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
    def __init__(self, addr):
        if isinstance(addr, tuple):
            self.s = socket.create_connection(addr, timeout=5)
        else:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(5)
            self.s.connect(addr)

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

    def outcome(self):
        """How the server ends: "reset", "eof", "data" or "timeout"."""
        try:
            got = self.s.recv(1)
        except ConnectionResetError:
            return "reset"
        except socket.timeout:
            return "timeout"
        return "data" if got else "eof"

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


running = []      # shims to stop if the probe fails half way


class Shim:
    """nbd-shim on a private Unix socket, or with tcp=True on a free port."""

    def __init__(self, shim, profile, *args, tcp=False, env=None):
        self.dir = tempfile.mkdtemp(prefix="wire-probe.")
        self.path = os.path.join(self.dir, "s.sock")
        listen = "tcp:127.0.0.1:0" if tcp else "unix:" + self.path
        self.p = subprocess.Popen([shim, "--profile", profile, "--listen",
                                   listen, *args],
                                  stderr=subprocess.PIPE, text=True, env=env)
        running.append(self.p)
        # the ready line comes once it accepts connections
        line = self.p.stderr.readline()
        m = re.search(r"listening on (unix:\S+|tcp:127\.0\.0\.1:(\d+))",
                      line)
        if not m:
            raise RuntimeError(f"{profile}: no ready line: {line!r}")
        self.addr = ("127.0.0.1", int(m.group(2))) if tcp else self.path

    def client(self):
        return Client(self.addr)

    def stop(self):
        self.p.terminate()
        _, err = self.p.communicate(timeout=10)
        running.remove(self.p)
        check("clean exit 0 on SIGTERM", self.p.returncode == 0,
              f"exit {self.p.returncode}: {err}")
        if os.path.exists(self.path):
            os.unlink(self.path)
        os.rmdir(self.dir)
        return err


def go_standard(name, infos=()):
    n = name.encode()
    return struct.pack(">I", len(n)) + n + struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos)


def go_prestandard(name, infos=()):
    n = name.encode()
    return struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos) + \
        struct.pack(">I", len(n)) + n


def torus_refusals(srv, how):
    """torus hangs up on any other option without reading its data."""
    for opt, data, end in ((OPT_GO, go_standard("torus"), "reset"),
                           (OPT_INFO, go_standard("torus"), "reset"),
                           (OPT_STRUCTURED_REPLY, b"", "eof"),
                           (OPT_STARTTLS, b"", "eof"),
                           (42, b"", "eof"), (42, b"xyz", "reset")):
        c = srv.client()
        c.greeting()
        c.cflags(1)
        c.option(opt, data)
        got = c.outcome()
        check(f"torus ({how}): option {opt} with {len(data)} bytes of data "
              f"ends in a {end}, no reply", got == end, got)
        c.close()
    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"nope")
    got = c.outcome()
    check(f"torus ({how}): unknown export name (read whole): a close",
          got == "eof", got)
    c.close()
    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_ABORT)
    check(f"torus ({how}): ABORT acked as LIST",
          c.reply() == (REPMAGIC, OPT_LIST, REP_ACK, b""))
    got = c.outcome()
    check(f"torus ({how}): ABORT then a close (the real server crashes)",
          got == "eof", got)
    c.close()


def torus_trims(c, label):
    """TRIM clears whole blocks, but brings back the flushed version of
    blocks written since the last flush."""
    def req(cmd, off, ln, data=b"", cookie=30):
        c.request(cmd, off, ln, cookie=cookie, data=data)
        return c.simple(ln if cmd == CMD_READ else 0)

    blk = 512 << 10
    # TRIM clears only whole 512 KiB blocks (flushed ones), and answers 0
    req(CMD_WRITE, 0, 4096, b"\xaa" * 4096)
    req(CMD_WRITE, blk, 4096, b"\xbb" * 4096)
    req(CMD_FLUSH, 0, 0)
    check(f"{label}: TRIM answers 0",
          req(CMD_TRIM, 4096, 2 * blk - 4096, cookie=22) ==
          (SIMPLE, 0, 22, b""))
    check(f"{label}: TRIM keeps a partly covered block",
          req(CMD_READ, 0, 4096)[3] == b"\xaa" * 4096)
    check(f"{label}: TRIM clears a wholly covered block",
          req(CMD_READ, blk, 4096)[3] == bytes(4096))
    # a TRIM of a block written since the last flush is undone: the
    # block reads back as it was at that flush
    b2, b3, b4 = 2 * blk, 3 * blk, 4 * blk
    req(CMD_WRITE, b2 + 8192, 4096, b"\xcc" * 4096)
    req(CMD_WRITE, b3, blk, b"\xee" * blk)
    check(f"{label}: FLUSH", req(CMD_FLUSH, 0, 0, cookie=25) ==
          (SIMPLE, 0, 25, b""))
    req(CMD_WRITE, b2 + 8192, 4096, b"\xdd" * 4096)
    req(CMD_WRITE, b3, blk, b"\x11" * blk)
    req(CMD_WRITE, b4 + 4096, 4096, b"\x22" * 4096)
    check(f"{label}: TRIM of blocks written since the flush answers 0",
          req(CMD_TRIM, b2, 3 * blk, cookie=26) == (SIMPLE, 0, 26, b""))
    got = req(CMD_READ, b2, 3 * 4096)[3]
    check(f"{label}: TRIM after a partial write: the block as of the flush",
          got == bytes(8192) + b"\xcc" * 4096, got[8192:8200].hex())
    got = req(CMD_READ, b3, blk)[3]
    check(f"{label}: TRIM after a whole-block write: the block as of the "
          "flush", got == b"\xee" * blk, got[:8].hex())
    check(f"{label}: TRIM of a block of zeroes at the flush: zeroes",
          req(CMD_READ, b4, 8192)[3] == bytes(8192))
    # TRIM synced: the restored block is the flushed one, and goes now
    req(CMD_TRIM, b3, blk)
    check(f"{label}: TRIM again, after TRIM's own sync, clears the block",
          req(CMD_READ, b3, blk)[3] == bytes(blk))


def torus(shim):
    print("# torus")
    srv = Shim(shim, "coreos", "--size", "4M")
    c = srv.client()
    check("torus: greeting NBDMAGIC IHAVEOPT 0x0001",
          c.greeting() == (NBDMAGIC, IHAVEOPT, 0x0001))
    c.close()
    torus_refusals(srv, "unix")

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
    check("torus: empty export name closes", c.outcome() == "eof")
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

    torus_trims(c, "torus")
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

    srv = Shim(shim, "coreos", "--size", "4M", tcp=True)
    torus_refusals(srv, "tcp")
    srv.stop()

    # two replicas behind storage shaping: the same trims
    srv = Shim(shim, "coreos", "--size", "4M", "--replicas", "2",
               "--latency-us", "1", "--shape-at", "storage")
    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"torus")
    c.recv(134)
    torus_trims(c, "torus (2 replicas, shaped storage)")
    c.close()
    srv.stop()


def torus_sync_fails(shim):
    """FLUSH and TRIM answer 0 when the sync fails; the error is logged."""
    print("# torus, every sync failing")
    lib = os.environ.get("WIRE_PROBE_FAIL_SYNC")
    if not lib:
        check("torus, every sync failing: WIRE_PROBE_FAIL_SYNC names the"
              " fail-sync library", False, "it is not set")
        return
    env = dict(os.environ)
    asan = env.get("TORUS_ASAN_RUNTIME")
    env["LD_PRELOAD"] = f"{asan}:{lib}" if asan else lib
    tmp = tempfile.mkdtemp(prefix="wire-probe.")
    img = os.path.join(tmp, "torus.img")
    srv = Shim(shim, "coreos", "--size", "4M", "--store", "file:" + img,
               env=env)
    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"torus")
    c.recv(134)
    c.request(CMD_WRITE, 0, 4096, cookie=1, data=b"\x5a" * 4096)
    check("torus: WRITE", c.simple() == (SIMPLE, 0, 1, b""))
    c.request(CMD_FLUSH, 0, 0, cookie=2)
    check("torus: FLUSH answers 0 although the sync failed",
          c.simple() == (SIMPLE, 0, 2, b""))
    c.request(CMD_TRIM, 0, 512 << 10, cookie=3)
    check("torus: TRIM answers 0 although its sync failed",
          c.simple() == (SIMPLE, 0, 3, b""))
    c.request(CMD_DISC, 0, 0)
    c.closed()
    c.close()
    err = srv.stop()
    check("torus: the failed syncs are only logged",
          err.count("sync error: Input/output error") >= 2, err)
    os.unlink(img)
    os.rmdir(tmp)


def zeroos_go_reply(opt, size=4 << 20):
    """The exact bytes 0-Disk sends for a pre-standard GO or INFO."""
    def rep(typ, data=b""):
        return struct.pack(">QIII", REPMAGIC, opt, typ, len(data)) + data
    return (rep(REP_INFO, struct.pack(">HQH", 0, size, 0x014D)) +
            rep(REP_INFO, b"\0\1default") +
            rep(REP_INFO, b"\0\2boot vdisk") +
            rep(REP_INFO, struct.pack(">HIII", 3, 1, 4096, 32 << 20)) +
            rep(REP_ACK))


def zeroos_go_resets(srv, how):
    """A conformant GO or INFO is misread ("Name is too long") and 0-Disk
    hangs up with the rest of it unread: a reset."""
    for opt in (OPT_GO, OPT_INFO):
        c = srv.client()
        c.greeting()
        c.cflags(1)
        c.option(opt, go_standard("default", (3,)))
        got = c.outcome()
        check(f"zeroos ({how}): conformant option {opt} for \"default\": "
              "a reset", got == "reset", got)
        c.close()
    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_EXPORT_NAME, b"")
    got = c.outcome()
    check(f"zeroos ({how}): empty EXPORT_NAME (no default export): a close",
          got == "eof", got)
    c.close()


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
    c.option(OPT_GO, go_prestandard(""))
    check("zeroos: GO (pre-standard) for \"\" (no default export): "
          "ERR_UNKNOWN", c.reply() == (REPMAGIC, OPT_GO, ERR_UNKNOWN, b""))
    # what libnbd sends: a standard GO for "" asking for block sizes
    c.option(OPT_GO, go_standard("", (3,)))
    check("zeroos: libnbd's GO for \"\" is misread: ERR_UNKNOWN",
          c.reply() == (REPMAGIC, OPT_GO, ERR_UNKNOWN, b""))
    want = zeroos_go_reply(OPT_INFO)
    c.option(OPT_INFO, go_prestandard("default"))
    got = c.recv(len(want))
    check("zeroos: pre-standard INFO: INFO_EXPORT, NAME, DESCRIPTION "
          "\"boot vdisk\", BLOCK_SIZE 1/4096/32M, ACK, byte for byte",
          got == want, got.hex())
    c.option(OPT_GO, go_standard("default"))
    got = c.outcome()
    check("zeroos: standard GO for \"default\": Name is too long, a reset",
          got == "reset", got)
    c.close()
    zeroos_go_resets(srv, "unix")

    c = srv.client()
    c.greeting()
    c.cflags(1)
    c.option(OPT_GO, go_prestandard("default", (3,)))
    want = zeroos_go_reply(OPT_GO)
    got = c.recv(len(want))
    check("zeroos: pre-standard GO: INFO_EXPORT (flags 0x014d), NAME, "
          "DESCRIPTION, BLOCK_SIZE, ACK, byte for byte", got == want,
          got.hex())
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
        c.option(OPT_EXPORT_NAME, b"default")
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
    got = c.outcome()
    check("zeroos: ABORT then a close", got == "eof", got)
    c.close()
    srv.stop()

    srv = Shim(shim, "zeroos", "--size", "4M", tcp=True)
    zeroos_go_resets(srv, "tcp")
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
    which = sys.argv[2:] or ["torus", "torus_sync_fails", "zeroos",
                             "standard"]
    for name in which:
        try:
            globals()[name](shim)
        except (Closed, socket.timeout, OSError, RuntimeError) as e:
            check(f"{name}: probe ran to the end", False, str(e))
        for p in running:
            p.kill()
            p.wait()
        running.clear()
    print(f"# {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
