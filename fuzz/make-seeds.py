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
    # The same sessions with the store copying, failing, and a client
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
    (5, "file:/tmp/disk.img,direct"), (5, "nbd:nbd+unix:///x?socket=/tmp/n.sock"),
    (5, "runner:qcow:/tmp/a.qcow2"), (5, "memory:1G"), (5, "tape"),
]


def seeds_shim_args():
    for i, (sel, s) in enumerate(ARGS):
        write("shim_args", f"{i:02d}-{'size rate uint listen hostport store'.split()[sel]}",
              bytes([sel]) + s.encode())


# ---- cdb (an initiator's CDBs, a target's replies and sense) ----------------

def le16(v):
    return struct.pack("<H", v)


def le32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def le64(v):
    return struct.pack("<Q", v & U64)


CDB, UNMAP_LIST, SENSE, RC16, INQ, VPD_BL = range(6)


def rec(kind, data, aux=0):
    return bytes([kind, aux]) + le16(len(data)) + data


def cdb16(op, b1, lba, n, ctl=0):
    return bytes([op, b1]) + be64(lba) + be32(n) + bytes([0, ctl])


def cdb10(op, b1, lba, n, ctl=0):
    return bytes([op, b1]) + be32(lba) + b"\0" + be16(n) + bytes([ctl])


def cdb12(op, b1, lba, n):
    return bytes([op, b1]) + be32(lba) + be32(n) + b"\0\0"


def unmap_list(descs, extra=b""):
    body = b"".join(be64(l) + be32(n) + b"\0" * 4 for l, n in descs)
    return be16(6 + len(body)) + be16(len(body)) + b"\0" * 4 + body + extra


def fixed_sense(key, asc, ascq, info=None, sks=None):
    b = bytearray(18)
    b[0] = 0x70 | (0x80 if info is not None else 0)
    if info is not None:
        b[3:7] = be32(info)
    b[2] = key
    b[7] = 10
    b[12], b[13] = asc, ascq
    if sks is not None:
        b[15:18] = bytes([sks[0]]) + be16(sks[1])
    return bytes(b)


def seeds_cdb():
    mb = 1 << 21
    good = [
        bytes([0x00, 0, 0, 0, 0, 0]),                      # TEST UNIT READY
        bytes([0x08, 0x01, 0x02, 0x03, 0x00, 0]),          # READ(6), 256 blocks
        bytes([0x0a, 0x00, 0x00, 0x10, 0x08, 0]),          # WRITE(6)
        cdb10(0x28, 0x08, 100, 8),                          # READ(10) FUA
        cdb10(0x2a, 0x10, mb - 8, 8),                       # WRITE(10) DPO
        cdb12(0xa8, 0, 7, 9),
        cdb12(0xaa, 0x08, 0, 1),
        cdb16(0x88, 0, mb - 1, 1),
        cdb16(0x8a, 0x08, 12345, 256),
        cdb10(0x35, 0x02, 0, 0),                            # SYNC(10) IMMED
        cdb16(0x91, 0, 0, 0),
        cdb16(0x93, 0x08, 4096, 1024),                      # WRITE SAME unmap
        cdb16(0x93, 0x19, 0, 0),                            # ANCHOR NDOB
        bytes([0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0]),          # UNMAP
        bytes([0x12, 0, 0, 0, 36, 0]),                      # INQUIRY
        bytes([0x12, 1, 0xb0, 0, 64, 0]),                   # Block Limits
        bytes([0x12, 1, 0x83, 1, 0, 0]),
        bytes([0x25]) + b"\0" * 9,                          # READ CAPACITY(10)
        bytes([0x9e, 0x10]) + b"\0" * 8 + be32(32) + b"\0\0",
        bytes([0x1a, 0x08, 0x3f, 0, 0xff, 0]),              # MODE SENSE(6)
        bytes([0x5a, 0x10, 0x08, 0, 0, 0, 0, 0x01, 0, 0]),
        bytes([0xa3, 0x0c, 0x01, 0x28, 0, 0]) + be32(512) + b"\0\0",
        bytes([0xa3, 0x0c, 0x82, 0x9e, 0, 0x10]) + be32(512) + b"\0\0",
    ]
    bad = [
        b"", bytes([0x28, 0, 0]), bytes([0xff]) + b"\0" * 15,
        bytes([0x7f, 0, 0, 0, 0, 0, 0, 24]) + b"\0" * 24,   # variable length
        bytes([0x03, 0, 0, 0, 18, 0]),                      # REQUEST SENSE: unknown
        cdb16(0x88, 0x20, 0, 1),                            # RDPROTECT
        cdb16(0x88, 0, U64, 2),                             # wraps
        cdb16(0x88, 0, mb, 1),                              # past the end
        cdb10(0x28, 0, 0, 1, ctl=0x04),                     # NACA
        bytes([0x12, 0, 0x80, 0, 36, 0]),                   # page without EVPD
        bytes([0x25, 0, 0, 0, 0, 1, 0, 0, 0, 0]),           # LBA without PMI
        bytes([0x9e, 0x11]) + b"\0" * 14,                   # other service action
        bytes([0xa3, 0x0c, 0x07]) + b"\0" * 9,              # options 7
        bytes([0x42, 1, 1, 0, 0, 0, 0, 0, 24, 0]),
    ]
    write("cdb", "good-cdbs", le64(mb) + b"".join(rec(CDB, c) for c in good))
    write("cdb", "bad-cdbs", le64(mb) + b"".join(rec(CDB, c) for c in bad))
    write("cdb", "empty-medium", le64(0) + rec(CDB, cdb16(0x88, 0, 0, 0)) +
          rec(CDB, cdb10(0x35, 0, 0, 0)))
    write("cdb", "huge-medium", le64(U64) + rec(CDB, cdb16(0x88, 0, U64 - 1, 1)) +
          rec(CDB, cdb16(0x93, 0, U64 - 2, 0xFFFFFFFF)))
    # A CDB longer than its group: the rest is the entry's padding.
    write("cdb", "long-cdb", le64(mb) + rec(CDB, cdb10(0x28, 0, 1, 1) + b"\xee" * 22))
    write("cdb", "unmap-lists", le64(mb) +
          rec(UNMAP_LIST, unmap_list([(0, 8)])) +
          rec(UNMAP_LIST, unmap_list([(8, 8), (mb - 1, 1), (0, 0)]), aux=2) +
          rec(UNMAP_LIST, unmap_list([(1, 1)], extra=b"\1" * 9)) +
          rec(UNMAP_LIST, unmap_list([(U64, 2)])) +
          rec(UNMAP_LIST, unmap_list([(mb, 1)])) +
          rec(UNMAP_LIST, b"\0\x06\0\0") +
          rec(UNMAP_LIST, be16(2) + be16(16) + b"\0" * 4) +
          rec(UNMAP_LIST, be16(0xffff) + be16(0xffff) + b"\0" * 4 + be64(1) + be32(1)) +
          rec(UNMAP_LIST, b""))
    write("cdb", "sense", le64(mb) +
          rec(SENSE, fixed_sense(5, 0x24, 0, sks=(0xc8 | 3, 1)), aux=5) +
          rec(SENSE, fixed_sense(3, 0x11, 0, info=0x1234)) +
          rec(SENSE, fixed_sense(7, 0x27, 7)[:14]) +
          rec(SENSE, fixed_sense(6, 0x29, 0)[:7], aux=1) +
          rec(SENSE, bytes([0x72, 5, 0x21, 0, 0, 0, 0, 24]) +
              bytes([0, 10, 0x80, 0]) + be64(1 << 40) +
              bytes([2, 6, 0, 0, 0xc0, 0, 9, 0])) +
          rec(SENSE, bytes([0x73, 2, 4, 1])) +
          rec(SENSE, bytes([0x72, 0xb, 0, 0, 0, 0, 0, 0xff]) + b"\0\xff") +
          rec(SENSE, b"\x71\0\x0e") + rec(SENSE, b"\x00"))
    rc16 = be64(mb - 1) + be32(512) + bytes([1, 3, 0xc0]) + b"\0" * 17
    inq = bytes([0, 0, 6, 2, 31, 1, 0, 2]) + b"TORUS   " + b"tcmu-shim       " + b"0001"
    vpd = bytearray(64)
    vpd[1], vpd[2:4] = 0xb0, be16(0x3c)
    vpd[6:8], vpd[8:12], vpd[12:16] = be16(8), be32(2048), be32(256)
    vpd[20:24], vpd[24:28], vpd[28:32] = be32(1 << 20), be32(64), be32(8)
    vpd[36:44] = be64(1 << 16)
    write("cdb", "replies", le64(mb) + rec(RC16, rc16) + rec(RC16, rc16[:12]) +
          rec(RC16, be64(U64) + be32(512)) + rec(RC16, be64(1) + be32(0)) +
          rec(INQ, inq) + rec(INQ, inq[:35]) +
          rec(INQ, inq[:8] + b"\0" * 8 + b" " * 16 + b"1 \0 ") +
          rec(VPD_BL, bytes(vpd)) + rec(VPD_BL, bytes(vpd[:16])) +
          rec(VPD_BL, bytes(vpd[:2]) + be16(0x10) + bytes(vpd[4:20])) +
          rec(VPD_BL, bytes(vpd[:2]) + be16(0x3c) + bytes(vpd[4:40])))


# ---- ring (both sides of the TCMU region) ------------------------------------

TCMU_OP_PAD, TCMU_OP_CMD, TCMU_OP_TMR = 0, 1, 2
MB_SIZE = 128
IOV_OFF, ENT_MIN = 48, 112


def entry_size(iov_cnt, cdb_len):
    base = max(IOV_OFF + 16 * iov_cnt, ENT_MIN)
    return (base + cdb_len + 7) & ~7


def cmd_entry(pos, cmd_id, cdb, iovs, cmdr_off=MB_SIZE, length=None):
    """A CMD entry at ring offset pos; iovs are (region offset, len)."""
    n = length or entry_size(len(iovs), len(cdb))
    cdb_off = cmdr_off + pos + entry_size(len(iovs), 0)
    e = bytearray(n)
    e[0:4] = le32(n | TCMU_OP_CMD)
    e[4:6] = le16(cmd_id)
    e[8:12] = le32(len(iovs))
    e[24:32] = le64(cdb_off)
    for i, (off, ln) in enumerate(iovs):
        e[48 + 16 * i:64 + 16 * i] = le64(off) + le64(ln)
    c = cdb_off - cmdr_off - pos
    e[c:c + len(cdb)] = cdb
    return bytes(e)


def hdr(op, n, cmd_id=0):
    return le32(n | op) + le16(cmd_id) + b"\0\0"


def ring_raw(ring, data, body, script, raw=0, iov_max=8, version=2,
             cmdr_off=MB_SIZE, cmdr_size=0, head=0, tail=0):
    return (bytes([0]) + le16(ring) + le16(data) + bytes([raw, iov_max]) +
            le16(version) + le32(cmdr_off) + le32(cmdr_size) + le32(head) +
            le32(tail) + le16(len(body)) + body + script)


# Mode 0's script: next, complete (slen, sense, index, status), head, byte.
H_NEXT = b"\x00"


def h_complete(index, status=0, sense=b"", rlen=None):
    op = 0x82 if rlen is not None else 0x02
    return (bytes([op, len(sense)]) + sense +
            (le32(rlen) if rlen is not None else b"") + bytes([index, status]))


def seeds_ring():
    ring, data = 1024, 8192
    d0 = MB_SIZE + ring
    r16 = cdb16(0x88, 0, 0, 2)
    w10 = cdb10(0x2a, 0, 3, 1)
    body = (cmd_entry(0, 1, r16, [(d0, 1024)]) +
            cmd_entry(128, 2, w10, [(d0 + 1024, 512), (d0 + 4096, 100)]) +
            hdr(TCMU_OP_TMR, 16) + b"\0" * 8 +
            cmd_entry(272, 3, b"\x00" * 6, []))
    head = len(body)
    ok = ring_raw(ring, data, body, H_NEXT * 5 + h_complete(1, 2, fixed_sense(5, 0x24, 0)) +
                  h_complete(0, rlen=512) + H_NEXT + h_complete(0), head=head)
    write("ring", "handler-three", ok)
    # A PAD at the end of the ring, the next command at its start.
    pad_body = (cmd_entry(0, 7, r16, [(d0, 512)]) + b"\0" * (896 - 128) +
                hdr(TCMU_OP_PAD, 128) + b"\0" * 120)
    write("ring", "handler-wrap", ring_raw(ring, data, pad_body,
                                           H_NEXT * 3 + h_complete(0) + H_NEXT,
                                           head=128, tail=896))
    # Malformed entries: bad iovec, bad cdb_off, too short, past the head.
    bad_iov = cmd_entry(0, 4, r16, [(MB_SIZE, 16)])
    bad_cdb = bytearray(cmd_entry(0, 5, r16, []))
    bad_cdb[24:32] = le64(MB_SIZE + 8)
    write("ring", "handler-bad-iov", ring_raw(ring, data, bad_iov, H_NEXT + h_complete(0) + H_NEXT,
                                              head=len(bad_iov)))
    write("ring", "handler-bad-cdb-off", ring_raw(ring, data, bytes(bad_cdb),
                                                  H_NEXT + h_complete(0), head=len(bad_cdb)))
    write("ring", "handler-short-entry", ring_raw(ring, data, hdr(TCMU_OP_CMD, 64, 1),
                                                  H_NEXT * 2, head=64))
    write("ring", "handler-past-head", ring_raw(ring, data, hdr(TCMU_OP_CMD, 512, 1),
                                                H_NEXT * 2, head=128))
    write("ring", "handler-too-many-iovs",
          ring_raw(ring, data, cmd_entry(0, 9, r16, [(d0, 8)] * 4), H_NEXT + h_complete(0),
                   head=entry_size(4, 16), iov_max=2))
    write("ring", "handler-raw-mailbox",
          ring_raw(ring, data, body, H_NEXT * 4, raw=7, version=2, cmdr_off=256,
                   cmdr_size=512, head=128))
    write("ring", "handler-bad-version", ring_raw(ring, data, body, H_NEXT, raw=1, version=1))
    # The submitter moves cmd_head and writes the ring under the handler.
    write("ring", "handler-hostile",
          ring_raw(ring, data, body, H_NEXT + b"\x83" + le32(272) + H_NEXT +
                   b"\x04" + le16(128) + b"\x41" + H_NEXT + b"\x03" + le32(5) + H_NEXT +
                   h_complete(0), head=head))

    # The same through the handler host's SCSI target (raw bit 3).
    write("ring", "handler-scsi-512", ring_raw(ring, data, body, H_NEXT * 5 + h_complete(1) +
                                               h_complete(0) + H_NEXT + h_complete(0),
                                               raw=8, head=head))
    write("ring", "handler-scsi-4096", ring_raw(ring, data, body, H_NEXT * 5 + h_complete(2) +
                                                h_complete(1) + h_complete(0),
                                                raw=8 | 16 | 0x20, head=head))
    ring, d0 = 2048, MB_SIZE + 2048
    cmds = [
        (bytes([0x12, 1, 0xb0, 0, 64, 0]), [(d0, 64)]),
        (bytes([0x12, 0, 0, 0, 96, 0]), [(d0 + 64, 96)]),
        (bytes([0x9e, 0x10]) + b"\0" * 8 + be32(32) + b"\0\0", [(d0 + 256, 32)]),
        (bytes([0x42, 0, 0, 0, 0, 0, 0, 0, 40, 0]), [(d0 + 512, 40)]),
        (cdb16(0x93, 0x08, 8, 16), [(d0 + 1024, 512)]),
        (cdb16(0x8a, 0x08, 100, 2), [(d0 + 2048, 512), (d0 + 4096, 512)]),
        (cdb16(0x88, 0, 100, 2), [(d0 + 6144, 1024)]),
        (bytes([0x1a, 0, 0x3f, 0, 0xff, 0]), [(d0 + 7168, 255)]),
        (bytes([0xa3, 0x0c, 0x81, 0x28, 0, 0]) + be32(64) + b"\0\0", [(d0 + 7680, 64)]),
        (cdb10(0x35, 0, 0, 0), []),
        (cdb16(0x88, 0, 1 << 40, 1), [(d0, 512)]),
    ]
    mix, pos = b"", 0
    for i, (c, iovs) in enumerate(cmds):
        e = cmd_entry(pos, i + 1, c, iovs)
        mix += e
        pos += len(e)
    ulist = unmap_list([(0, 8), (64, 8)])
    dbytes = bytearray(data)
    dbytes[512:512 + len(ulist)] = ulist
    mix_body = mix + b"\0" * (ring - len(mix)) + bytes(dbytes[:1024])
    write("ring", "handler-scsi-mix", ring_raw(ring, data, mix_body,
                                               H_NEXT * 12 + h_complete(3) * 11,
                                               raw=8, head=pos))

    # Modes 1 and 2: the submitter's script (op values mean the same
    # modulo 5 and 6, so that each seed runs in both modes).
    def sub_input(mode, ring_sel, blk_sel, nblks, max_cmds, start, max_data, script):
        return (bytes([mode, ring_sel, blk_sel, nblks - 1, max_cmds - 1]) + le16(start) +
                le16(max_data - 1) + script)

    def queue(cdb, data_len, write_buf=False):
        return bytes([150 if write_buf else 0, len(cdb) - 1]) + cdb + le16(data_len)

    COMMIT, TAKE, REAP = b"\x01", b"\x02", b"\x04"

    def complete(index, status=0, sense=b"", rlen=None):
        op = 153 if rlen is not None else 3
        return (bytes([op, len(sense)]) + (le32(rlen) if rlen is not None else b"") +
                bytes([status]) + sense + bytes([index]))

    io = (queue(r16, 1024) + queue(w10, 512, True) + queue(b"\x00" * 6, 0) + COMMIT +
          TAKE * 3 + complete(1) + REAP + complete(0, 2, fixed_sense(3, 0x11, 0), rlen=100) +
          complete(0, rlen=0) + REAP +
          (queue(r16, 4096) + queue(w10, 3000, True) + COMMIT + TAKE + TAKE + complete(1) +
           complete(0) + REAP) * 6)
    for mode in (1, 2):
        write("ring", f"sub{mode}-io", sub_input(mode, 3, 0, 16, 8, 0, 4096, io))
        write("ring", f"sub{mode}-wrap-small", sub_input(mode, 1, 0, 4, 4, 256, 2048, io))
        write("ring", f"sub{mode}-full", sub_input(mode, 0, 1, 2, 16, 128, 8192,
                                                   queue(b"\x00", 0) * 20 + COMMIT + TAKE * 20 +
                                                   complete(5) * 20 + REAP + io))
        write("ring", f"sub{mode}-odd-blocks", sub_input(mode, 5, 3, 31, 16, 8, 9000,
                                                         io + queue(r16, 9000, True) +
                                                         queue(r16, 9001)))
    hostile = (queue(r16, 1024) + queue(w10, 512, True) + COMMIT + TAKE + TAKE + complete(0))
    write("ring", "hostile-tail-raw", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                                hostile + b"\x05" + le32(3) + REAP))
    write("ring", "hostile-tail-past", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                                 hostile + b"\x11" + le32(256) + REAP))
    write("ring", "hostile-len", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                           hostile + b"\x29" + le32(64 | 1) + le16(0) + REAP))
    write("ring", "hostile-cmd-id", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                              hostile + b"\x2f" + le32(9) + le16(0) + REAP))
    write("ring", "hostile-dup-id", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                              hostile + complete(0) + b"\x2f" + le32(1) +
                                              le16(128) + b"\x2f" + le32(1) + le16(0) + REAP))
    write("ring", "hostile-byte", sub_input(2, 3, 0, 16, 8, 0, 4096,
                                            hostile + b"\x35" + le32(0x42) + le16(4) + REAP +
                                            io))


# ---- tcmu_uri, tcmu_attach, tcmu_args ----------------------------------------

TCMU_URIS = {
    "socket": "tcmu+unix:///?socket=/tmp/tcmu.sock",
    "unknown-param": "tcmu+unix:///?socket=/tmp/t.sock&x=1",
    "no-socket": "tcmu+unix:///",
    "host": "tcmu://host/",
    "long": "tcmu+unix:///?socket=/" + "p" * 120,
    "escaped": "tcmu+unix:///?socket=/tmp/a%20b.sock",
    "nbd": "nbd://127.0.0.1/x",
}


def seeds_tcmu_uri():
    for name, uri in TCMU_URIS.items():
        write("tcmu_uri", name, uri.encode())


def seeds_tcmu_attach():
    # byte 0: bit 0 reply, bit 1 the magic is prepended by the target
    req = struct.pack("<IIQ", 1, 0, 8 << 20)
    write("tcmu_attach", "req", bytes([2]) + req)
    write("tcmu_attach", "req-version", bytes([2]) + struct.pack("<IIQ", 3, 0, 8 << 20))
    write("tcmu_attach", "req-flags", bytes([2]) + struct.pack("<IIQ", 1, 4, 1 << 40))
    write("tcmu_attach", "req-short", bytes([2]) + req[:10])
    write("tcmu_attach", "req-raw", bytes([0]) + b"TORUS-TCMU-RING\0" + req)
    msg = b"the ring's region is smaller than its mailbox says"
    reply = struct.pack("<II", 1, 22) + msg + bytes(232 - len(msg))
    write("tcmu_attach", "reply", bytes([3]) + reply)
    write("tcmu_attach", "reply-ok", bytes([3]) + struct.pack("<II", 1, 0) + bytes(232))
    write("tcmu_attach", "reply-unterminated", bytes([3]) + struct.pack("<II", 1, 5) + b"x" * 232)
    write("tcmu_attach", "reply-raw", bytes([1]) + b"TORUS-TCMU-ACK.\0" + reply)
    # bit 2: the host's hello (magic, then its version)
    write("tcmu_attach", "hello", bytes([6]) + struct.pack("<I", 2))
    write("tcmu_attach", "hello-long", bytes([6]) + struct.pack("<II", 2, 0))
    write("tcmu_attach", "hello-raw", bytes([4]) + b"TORUS-TCMU-HOST\0" + struct.pack("<I", 2))
    # what an NBD server greets with, read as a TCMU reply
    write("tcmu_attach", "reply-nbd-greeting", bytes([1]) + be64(NBDMAGIC) + be64(IHAVEOPT) + be16(3))


TCMU_ARGS = {
    "memory": ["--listen", "unix:/tmp/t.sock", "--size", "1G"],
    "socket-alias": ["--socket", "/tmp/t.sock", "--size", "64M", "-v"],
    "uio-file": ["--uio", "/dev/uio0", "--store", "file:/tmp/d.img,direct",
                 "--block-size", "4096", "--max-command-data", "1M"],
    "max-transfer": ["--socket", "/tmp/t.sock", "--size", "1M", "--max-transfer", "6K"],
    "nbd": ["--listen", "unix:/tmp/t.sock", "--store",
            "nbd:nbd+unix:///x?socket=/tmp/n.sock", "--timeout", "0"],
    "runner": ["--listen", "unix:/tmp/t.sock", "--plugin-dir", "/tmp",
               "--store", "runner:qcow:/tmp/a.qcow2"],
    "redis": ["--listen", "unix:/tmp/t.sock", "--store", "redis:h:1,[::1]:2",
              "--redis-meta", "m:3", "--vdisk", "v", "--size", "4M"],
    "both": ["--listen", "unix:/tmp/t.sock", "--uio", "/dev/uio0", "--size", "1M"],
    "version": ["--version"],
    "help": ["--help", "--log", "/tmp/log", "--pidfile", "/tmp/pid"],
}


def seeds_tcmu_args():
    for name, args in TCMU_ARGS.items():
        write("tcmu_args", name, b"\0".join(a.encode() for a in args))


def main():
    seeds_uri()
    seeds_handshake()
    seeds_replies()
    seeds_shim()
    seeds_shim_args()
    seeds_cdb()
    seeds_ring()
    seeds_tcmu_uri()
    seeds_tcmu_attach()
    seeds_tcmu_args()
    return 0


if __name__ == "__main__":
    sys.exit(main())
