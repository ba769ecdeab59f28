#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/.

Each seed is a meaningful conversation in the target's input format (see
the comment at the top of fuzz/fuzz_<target>.c): valid handshakes of every
mode, reply streams of every kind, a full shim session per profile. The
output is deterministic; run it again after changing a target's format
and commit the result. Files it did not write are left alone.
"""
import os
import struct
import sys

TOP = os.path.dirname(os.path.abspath(__file__))

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
OLDSTYLE = 0x0000420281861253
REP_MAGIC = 0x0003E889045565A9
REQ_MAGIC = 0x25609513
SIMPLE = 0x67446698
STRUCT = 0x668E33EF

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_STARTTLS = 1, 2, 3, 5
OPT_INFO, OPT_GO, OPT_STRUCTURED = 6, 7, 8
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
ERR = 1 << 31
ERR_UNSUP, ERR_POLICY, ERR_UNKNOWN, ERR_TLS = ERR | 1, ERR | 2, ERR | 6, ERR | 5
INFO_EXPORT, INFO_NAME, INFO_DESC, INFO_BLOCK = 0, 1, 2, 3
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_CACHE, CMD_WZ, CMD_BS = 5, 6, 7
FLAG_FUA, FLAG_NO_HOLE = 1, 2
DONE = 1
T_NONE, T_DATA, T_HOLE, T_BS = 0, 1, 2, 5
T_ERROR, T_ERROR_OFFSET = (1 << 15) | 1, (1 << 15) | 2

U64 = (1 << 64) - 1


def be16(v):
    return struct.pack(">H", v)


def be32(v):
    return struct.pack(">I", v)


def be64(v):
    return struct.pack(">Q", v & U64)


def write(target, name, data):
    d = os.path.join(TOP, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- uri ------------------------------------------------------------------

URIS = {
    "tcp-host": "nbd://localhost",
    "tcp-export": "nbd://127.0.0.1:10809/disk",
    "tcp-port": "nbd://example.org:4321/torus",
    "tcp-ipv6": "nbd://[::1]:10809/x",
    "tcp-ipv6-noport": "nbd://[fe80::1%25eth0]/",
    "tcp-pct": "nbd://h/exp%20name%2Fwith%2fslash",
    "tcp-query": "nbd://h/e?foo=bar",
    "tcp-tls-query": "nbd://h/e?tls-certificates=/x",
    "tcp-badport": "nbd://h:99999/e",
    "tcp-emptyport": "nbd://h:/e",
    "unix": "nbd+unix:///disk?socket=/run/nbd.sock",
    "unix-default": "nbd+unix://?socket=/tmp/s",
    "unix-pct": "nbd+unix:///a%2Fb?x=1&socket=%2Ftmp%2Fs.sock&y",
    "unix-nosocket": "nbd+unix:///disk",
    "unix-host": "nbd+unix://host/disk?socket=/s",
    "tls": "nbds://h/e",
    "tls-unix": "nbds+unix:///e?socket=/s",
    "other": "http://h/e",
    "badpct": "nbd://h/%4",
    "long": "nbd://h/" + "e" * 4100,
    "tcp-user": "nbd://alice@h:10809/e",
    "tcp-user-ipv6": "nbd://bob@[::1]/e?x=1&y",
    "tcp-unknown-params": "nbd://h/e?a=1&b&&" + "c" * 100 + "=2",
    "tcp-socket-param": "nbd://h/e?socket=/s",
    "unix-two-sockets": "nbd+unix:///e?socket=/a&socket=/b&tls=off",
    "unix-empty-socket": "nbd+unix:///e?socket=&socket",
    "unix-many-warnings": "nbd+unix:///e?socket=/s&" + "&".join("p%d=%d" % (i, i) for i in range(30)),
}


def seeds_uri():
    for name, uri in URIS.items():
        write("uri", name, uri.encode())


# ---- handshake (the server's side) ------------------------------------------

def greeting(hflags):
    return be64(NBDMAGIC) + be64(IHAVEOPT) + be16(hflags)


def optrep(opt, rtype, data=b""):
    return be64(REP_MAGIC) + be32(opt) + be32(rtype) + be32(len(data)) + data


def info_export(size, tflags):
    return optrep(OPT_GO, REP_INFO, be16(INFO_EXPORT) + be64(size) + be16(tflags))


def info_block(mn, pref, mx):
    return optrep(OPT_GO, REP_INFO, be16(INFO_BLOCK) + be32(mn) + be32(pref) + be32(mx))


def export_reply(size, tflags, zeroes):
    return be64(size) + be16(tflags) + (b"\0" * 124 if zeroes else b"")


def hs_input(mode, structured, name_sel, server, close_at=0xFFFF, seed=1,
             misfeed=False):
    b0 = mode | (4 if structured else 0) | (name_sel << 3) | (0x20 if misfeed else 0)
    return bytes([b0]) + be16(close_at) + be32(seed) + server


AUTO, GO, EXPORT_NAME = 0, 1, 2
TF = 0x1 | 0x4 | 0x8 | 0x20 | 0x100  # HAS_FLAGS FLUSH FUA TRIM MULTI_CONN


def seeds_handshake():
    go_ok = info_export(1 << 30, TF) + info_block(1, 4096, 32 << 20) + optrep(OPT_GO, REP_ACK)
    sr_ack = optrep(OPT_STRUCTURED, REP_ACK)
    for mode, mname in ((AUTO, "auto"), (GO, "go")):
        for sel in (0, 1):
            write("handshake", f"{mname}-go-name{sel}",
                  hs_input(mode, False, sel, greeting(3) + go_ok))
            write("handshake", f"{mname}-structured-name{sel}",
                  hs_input(mode, True, sel, greeting(3) + sr_ack + go_ok))
        write("handshake", f"{mname}-structured-refused",
              hs_input(mode, True, 1, greeting(3) +
                       optrep(OPT_STRUCTURED, ERR_UNSUP) + go_ok))
        write("handshake", f"{mname}-go-name-info",
              hs_input(mode, False, 1, greeting(1) +
                       optrep(OPT_GO, REP_INFO, be16(INFO_NAME) + b"disk") +
                       optrep(OPT_GO, REP_INFO, be16(INFO_DESC) + b"a disk") +
                       info_export(4096, 0x3) + optrep(OPT_GO, REP_ACK)))
        write("handshake", f"{mname}-go-unsup",
              hs_input(mode, False, 1, greeting(1) + optrep(OPT_GO, ERR_UNSUP) +
                       export_reply(1 << 20, 0x3, True)))
        write("handshake", f"{mname}-go-unknown",
              hs_input(mode, False, 1, greeting(3) +
                       optrep(OPT_GO, ERR_UNKNOWN, b"no such export")))
        write("handshake", f"{mname}-go-tls",
              hs_input(mode, False, 0, greeting(3) + optrep(OPT_GO, ERR_TLS)))
        write("handshake", f"{mname}-go-policy-long-name",
              hs_input(mode, False, 2, greeting(3) +
                       optrep(OPT_GO, ERR_POLICY, b"m" * 300)))
        write("handshake", f"{mname}-go-no-export-info",
              hs_input(mode, False, 1, greeting(3) + optrep(OPT_GO, REP_ACK)))
        # torus: closes on OPT_GO; auto reconnects with EXPORT_NAME.
        torus = greeting(1)
        write("handshake", f"{mname}-torus-close",
              hs_input(mode, False, 1, torus + torus +
                       export_reply(1 << 30, 0x25, True), close_at=len(torus)))
        # 0-Disk: resets after reading part of the GO reply.
        zd = greeting(3) + optrep(OPT_GO, ERR_UNSUP)[:7]
        write("handshake", f"{mname}-zerodisk-reset",
              hs_input(mode, True, 1, zd + greeting(3) +
                       export_reply(1 << 30, 0x14D, False), close_at=len(zd)))
    for sel in (0, 1, 2):
        write("handshake", f"export-name-nozeroes-name{sel}",
              hs_input(EXPORT_NAME, False, sel, greeting(3) +
                       export_reply(1 << 30, TF, False)))
    write("handshake", "export-name-zeroes",
          hs_input(EXPORT_NAME, True, 1, greeting(1) + export_reply(1 << 20, 0x25, True)))
    write("handshake", "export-name-closed",
          hs_input(EXPORT_NAME, False, 1, greeting(1) + export_reply(1, 1, True)[:5]))
    write("handshake", "auto-not-fixed",
          hs_input(AUTO, True, 1, greeting(0) + export_reply(1 << 20, 0x1, True)))
    write("handshake", "go-not-fixed", hs_input(GO, False, 1, greeting(0)))
    old = be64(NBDMAGIC) + be64(OLDSTYLE) + be64(1 << 30) + be32(0x10003) + b"\0" * 124
    for mode, mname in ((AUTO, "auto"), (GO, "go"), (EXPORT_NAME, "export-name")):
        write("handshake", f"{mname}-oldstyle", hs_input(mode, False, 0, old))
    write("handshake", "name-too-long", hs_input(AUTO, False, 3, greeting(3) + go_ok))
    write("handshake", "misfeed", hs_input(AUTO, False, 1, greeting(3) + go_ok,
                                           misfeed=True))
    write("handshake", "bad-magic", hs_input(AUTO, False, 1, b"HTTP/1.1 400 Bad\r\n" * 2))
    write("handshake", "split-seed", hs_input(AUTO, True, 1, greeting(3) + sr_ack + go_ok,
                                              seed=0xDEADBEEF))


# ---- replies (the server's side) --------------------------------------------

def simple(cookie, error=0, payload=b""):
    return be32(SIMPLE) + be32(error) + be64(cookie) + payload


def chunk(cookie, ctype, body, flags=0):
    return be32(STRUCT) + be16(flags) + be16(ctype) + be64(cookie) + be32(len(body)) + body


def data_chunk(cookie, off, data, flags=0):
    return chunk(cookie, T_DATA, be64(off) + data, flags)


def hole_chunk(cookie, off, size, flags=0):
    return chunk(cookie, T_HOLE, be64(off) + be32(size), flags)


def err_chunk(cookie, err, msg=b"", flags=DONE, offset=None):
    body = be32(err) + be16(len(msg)) + msg
    if offset is None:
        return chunk(cookie, T_ERROR, body, flags)
    return chunk(cookie, T_ERROR_OFFSET, body + be64(offset), flags)


def pat(n, k=0):
    return bytes((i * 7 + k) & 0xFF for i in range(n))


def rx_input(structured, path, max_body_idx, stream, mask=0xFFFF, seed=1,
             rearm=False):
    b0 = (1 if structured else 0) | (path << 1) | (8 if rearm else 0)
    return bytes([b0, max_body_idx]) + be16(mask) + be32(seed) + stream


def seeds_replies():
    # Simple replies to every request in the table (fuzz_replies.c).
    every = (simple(1, 0, pat(4096)) + simple(6) + simple(7, 5) + simple(8) +
             simple(9, 0, pat(13, 1)) + simple(0, 0, b"\x55") +
             simple(3, 0, b"\xAA") + simple(5) + simple(2, 0, pat(4096, 2)) +
             simple(0x10, 0, b"xy") + simple(0x100000001, 1) +
             simple(1 << 63, 95) + simple(0x42, 108) +
             simple(12345, 22))
    for path in (0, 1, 2):
        write("replies", f"simple-all-path{path}", rx_input(False, path, 7, every))
        write("replies", f"simple-all-structured-path{path}",
              rx_input(True, path, 7, every, seed=path + 7))
    write("replies", "simple-large", rx_input(False, 3, 7, simple(4, 0, pat(65539, 3)),
                                              seed=3))
    write("replies", "simple-rearm", rx_input(False, 2, 5, every + every, rearm=True))
    write("replies", "simple-unknown-cookie", rx_input(False, 0, 7, simple(99)))
    write("replies", "simple-not-outstanding",
          rx_input(False, 0, 7, simple(1, 0, pat(4096)), mask=0xFFFE))
    write("replies", "simple-twice", rx_input(False, 0, 7, simple(6) + simple(6)))
    write("replies", "bad-magic", rx_input(False, 0, 7, b"\x12\x34\x56\x78" * 8))

    # Structured: a read in pieces, out of order, with holes.
    c = 12345  # READ 8193 bytes at 4095
    pieces = (data_chunk(c, 4095 + 4096, pat(2048, 9)) +
              hole_chunk(c, 4095, 1000) +
              data_chunk(c, 4095 + 1000, pat(3096, 4)) +
              data_chunk(c, 4095 + 6144, pat(2049, 5)) +
              chunk(c, T_NONE, b"", DONE))
    for path in (0, 1, 3):
        write("replies", f"structured-pieces-path{path}",
              rx_input(True, path, 7, pieces, seed=11 + path))
    write("replies", "structured-pieces-small-body",
          rx_input(True, 2, 2, pieces, seed=5))
    write("replies", "structured-whole-done",
          rx_input(True, 0, 7, data_chunk(1, 0, pat(4096), DONE) +
                   data_chunk(2, U64 - 4095, pat(4096), DONE) +
                   hole_chunk(3, U64, 1, DONE) +
                   data_chunk(0x10, (1 << 63) - 1, b"ab", DONE) +
                   data_chunk(U64, U64 - 65535, pat(65536), DONE)))
    write("replies", "structured-missing-bytes",
          rx_input(True, 0, 7, data_chunk(1, 0, pat(100)) + chunk(1, T_NONE, b"", DONE)))
    write("replies", "structured-overlap",
          rx_input(True, 0, 7, data_chunk(1, 0, pat(100)) + data_chunk(1, 50, pat(100), DONE)))
    write("replies", "structured-outside",
          rx_input(True, 0, 7, data_chunk(2, U64 - 4095, pat(4097), DONE)))
    write("replies", "structured-hole-wrap",
          rx_input(True, 0, 7, hole_chunk(3, U64, 2, DONE)))
    many = b"".join(data_chunk(1, 2 * i, b"z") for i in range(20)) + chunk(1, T_NONE, b"", DONE)
    write("replies", "structured-too-many-pieces", rx_input(True, 0, 7, many))
    write("replies", "structured-errors",
          rx_input(True, 0, 7, err_chunk(9, 5, b"disk on fire", flags=0) +
                   data_chunk(9, 7, pat(13), DONE) +
                   err_chunk(6, 28, b"full") +
                   err_chunk(7, 1, b"", offset=1 << 63) +
                   chunk(8, (1 << 15) | 77, b"???", DONE) +
                   chunk(0x42, T_BS, b"\0" * 12, 0) + simple(0x42) +
                   err_chunk(1, 0, b"zero error")))
    write("replies", "structured-not-negotiated",
          rx_input(False, 0, 7, data_chunk(1, 0, pat(4096), DONE)))
    write("replies", "structured-data-for-write",
          rx_input(True, 0, 7, data_chunk(6, 4096, pat(512), DONE)))
    write("replies", "structured-body-too-big",
          rx_input(True, 0, 1, err_chunk(9, 5, b"a long message")))
    write("replies", "structured-interleaved",
          rx_input(True, 2, 6, data_chunk(1, 0, pat(2048)) +
                   data_chunk(13 - 13 + 9, 7, pat(13), DONE) +
                   data_chunk(1, 2048, pat(2048, 1), DONE) +
                   simple(6) + hole_chunk(0, 0, 1, DONE), seed=99, rearm=True))


# ---- shim (the client's side) -----------------------------------------------

def opt(o, data=b""):
    return be64(IHAVEOPT) + be32(o) + be32(len(data)) + data


def go_std(o, name, infos=()):
    return opt(o, be32(len(name)) + name + be16(len(infos)) + b"".join(be16(i) for i in infos))


def go_zeroos(o, name, infos=()):
    # 0-Disk's pre-standard order: u16 count, infos, u32 length, name.
    return opt(o, be16(len(infos)) + b"".join(be16(i) for i in infos) + be32(len(name)) + name)


def req(rtype, cookie, off, length, flags=0, payload=b""):
    return be32(REQ_MAGIC) + be16(flags) + be16(rtype) + be64(cookie) + be64(off) + be32(length) + payload


def io(size, profile):
    """A transmission phase inside an export of size bytes, each request
    one the profile serves; the ones it refuses or drops the connection
    on come last."""
    fua = 0 if profile == "torus" else FLAG_FUA
    out = (req(CMD_WRITE, 1, 0, 512, 0, pat(512)) +
           req(CMD_READ, 2, 0, 512) +
           req(CMD_WRITE, 3, size - 100, 100, fua, pat(100, 1)) +
           req(CMD_READ, 4, size - 4096, 4096) +
           req(CMD_READ, 5, 1000, 3000, fua) +
           req(CMD_FLUSH, 6, 0, 0) +
           req(CMD_TRIM, 7, 4096, 8192) +
           req(CMD_WRITE, 8, 513, 1, 0, b"w"))
    if profile != "torus":
        out += req(CMD_WZ, 9, 100, 5000, fua)
    if profile == "standard":
        out += (req(CMD_READ, 10, size, 1) + req(CMD_TRIM, 11, size - 1, 2) +
                req(CMD_READ, 12, 0, 1, 0x80) + req(CMD_CACHE, 13, 0, 1))
    if profile == "torus":
        out += req(CMD_READ, 10, size, 100) + req(CMD_WRITE, 11, size - 1, 2, 0, b"zz")
    return out + req(CMD_DISC, 99, 0, 0)


def shim_input(config, data):
    return bytes([config]) + data


def seeds_shim():
    mb = 1 << 20
    # torus (configs 0 and 1): EXPORT_NAME and LIST only, always zeroes.
    for cfg in (0, 1):
        write("shim", f"torus{cfg}-export-name",
              shim_input(cfg, be32(1) + opt(OPT_LIST) + opt(OPT_EXPORT_NAME, b"torus") + io(mb, "torus")))
        write("shim", f"torus{cfg}-list-payload",
              shim_input(cfg, be32(0) + opt(OPT_LIST, b"junk") + opt(OPT_EXPORT_NAME, b"torus") +
                         req(CMD_READ, 1, 0, 4096) + req(CMD_READ, 2, 3 * mb, 100) +
                         req(CMD_DISC, 3, 0, 0)))
    write("shim", "torus-go-closes", shim_input(0, be32(1) + go_std(OPT_GO, b"torus", (3,))))
    write("shim", "torus-abort", shim_input(0, be32(1) + opt(OPT_ABORT)))
    write("shim", "torus-bad-command",
          shim_input(0, be32(1) + opt(OPT_EXPORT_NAME, b"torus") + req(CMD_CACHE, 1, 0, 1)))
    write("shim", "torus-wrong-name", shim_input(0, be32(1) + opt(OPT_EXPORT_NAME, b"other")))
    # zeroos (configs 2, 3, 7).
    for cfg, size in ((2, mb), (3, 1 << 40), (7, 64 << 10)):
        write("shim", f"zeroos{cfg}-go",
              shim_input(cfg, be32(3) + opt(OPT_LIST) + opt(OPT_STARTTLS) +
                         go_zeroos(OPT_INFO, b"default", (3,)) +
                         go_zeroos(OPT_GO, b"", ()) + io(size, "zeroos")))
        write("shim", f"zeroos{cfg}-export-name",
              shim_input(cfg, be32(1) + opt(OPT_STRUCTURED) +
                         opt(OPT_EXPORT_NAME, b"default") + io(size, "zeroos")))
    write("shim", "zeroos-standard-go",
          shim_input(2, be32(3) + go_std(OPT_GO, b"default", (3,))))
    write("shim", "zeroos-go-unknown",
          shim_input(2, be32(3) + go_zeroos(OPT_GO, b"nope", (1, 3)) + opt(OPT_ABORT)))
    write("shim", "zeroos-bad-request",
          shim_input(2, be32(3) + opt(OPT_EXPORT_NAME) + req(CMD_READ, 1, 0, 0)))
    write("shim", "zeroos-trim",
          shim_input(3, be32(3) + opt(OPT_EXPORT_NAME) + req(CMD_TRIM, 1, 0, 4096) +
                     req(CMD_DISC, 2, 0, 0)))
    # standard (configs 4, 5, 6).
    for cfg, size, name in ((4, mb, b""), (5, 1 << 40, b"disk"), (6, 64 << 10, b"")):
        write("shim", f"standard{cfg}-go-structured",
              shim_input(cfg, be32(3) + opt(OPT_STRUCTURED) + opt(OPT_LIST) +
                         go_std(OPT_INFO, name, (3, 1)) + opt(OPT_STARTTLS) +
                         go_std(OPT_GO, name, (3,)) + io(size, "standard")))
        write("shim", f"standard{cfg}-go-simple",
              shim_input(cfg, be32(1) + go_std(OPT_GO, b"", ()) + io(size, "standard")))
        write("shim", f"standard{cfg}-export-name",
              shim_input(cfg, be32(3) + opt(OPT_EXPORT_NAME, name) + io(size, "standard")))
    write("shim", "standard-errors",
          shim_input(4, be32(3) + opt(OPT_STRUCTURED, b"x") + opt(OPT_LIST, b"y") +
                     go_std(OPT_GO, b"nope") + opt(OPT_GO, b"\0\0") + opt(OPT_STRUCTURED) +
                     go_std(OPT_GO, b"") +
                     req(CMD_READ, 1, mb, 1) + req(CMD_WRITE, 2, mb, 1, 0, b"x") +
                     req(CMD_READ, 3, 0, 0) + req(CMD_READ, 4, 0, 1, 0x80) +
                     req(CMD_BS, 5, 0, 1) + req(CMD_WRITE, 6, 0, (32 << 20) + 1)))
    # The same sessions with the backend copying, failing, and a client
    # that hangs up without reading its replies (byte 0's high bits).
    sessions = {
        "torus0": (0, be32(1) + opt(OPT_EXPORT_NAME, b"torus") + io(mb, "torus")),
        "zeroos2": (2, be32(3) + go_zeroos(OPT_GO, b"") + io(mb, "zeroos")),
        "standard4": (4, be32(3) + opt(OPT_STRUCTURED) + go_std(OPT_GO, b"") +
                      io(mb, "standard")),
        "standard5": (5, be32(1) + go_std(OPT_GO, b"disk") + io(1 << 40, "standard")),
    }
    for name, (cfg, data) in sessions.items():
        write("shim", f"{name}-no-peek", shim_input(cfg | 8, data))
        write("shim", f"{name}-hang-up", shim_input(cfg | 16, data))
        for every in (1, 2, 3):
            write("shim", f"{name}-fail-every-{every}",
                  shim_input(cfg | 8 | (every << 5), data))
    write("shim", "standard-bad-cflags", shim_input(4, be32(0x80)))
    write("shim", "standard-bad-option-magic", shim_input(4, be32(3) + b"X" * 16))
    write("shim", "standard-huge-option", shim_input(4, be32(3) + be64(IHAVEOPT) + be32(99) + be32(1 << 20)))
    write("shim", "standard-bad-request-magic",
          shim_input(4, be32(3) + opt(OPT_EXPORT_NAME) + b"Y" * 28))


# ---- shim_args -------------------------------------------------------------

ARGS = [
    (0, "4096"), (0, "1M"), (0, "2GiB"), (0, "16EB"), (0, "18446744073709551615"),
    (0, "1x"), (1, "125M"), (1, "1gbit"), (1, "100mbit"), (1, "10B/s"), (1, "0"),
    (2, "65535"), (2, "65536"), (3, "unix:/tmp/s.sock"), (3, "tcp:127.0.0.1:10809"),
    (3, "tcp:[::1]:0"), (3, "tcp:host"), (3, "unix:" + "p" * 120),
    (4, "localhost"), (4, "[::1]:6380"), (4, "h:"), (5, "memory"), (5, "null"),
    (5, "file:/tmp/disk.img"), (5, "redis:127.0.0.1:6379,[::1]:6380,h"),
    (5, "redis:" + ",".join(["h:1"] * 65)), (5, "redis:a,,b"),
]


def seeds_shim_args():
    for i, (sel, s) in enumerate(ARGS):
        write("shim_args", f"{i:02d}-{'size rate uint listen hostport backend'.split()[sel]}",
              bytes([sel]) + s.encode())


def main():
    seeds_uri()
    seeds_handshake()
    seeds_replies()
    seeds_shim()
    seeds_shim_args()
    return 0


if __name__ == "__main__":
    sys.exit(main())
