#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A scriptable, misbehaving NBD server for the engine's tests.

It plays a correct fixed-newstyle NBD server (doc/proto.md of
NetworkBlockDevice/nbd) on an in-memory export, except for the one
misbehaviour that --case names. Python 3 standard library only.

  nbd-hostile.py SOCKET --case NAME [--tcp-port PORT] [--tcp-port-file FILE]
                 [--size BYTES] [--after N] [--trigger FILE]
  nbd-hostile.py --list

Handshake cases misbehave on every connection (the engine probes with one
connection, then opens its own, and may reconnect for legacy fallbacks).
Transmission cases misbehave once per connection, on the (after+1)-th
request they apply to (--after, default 0: the first), and answer every
other request correctly. When a misbehaviour fires, the server appends a
line to the --trigger file, so a test can tell that it was exercised and
when (e.g. to signal fio while the server stalls).
"""

import argparse
import os
import select
import socket
import struct
import sys
import threading
import time

# Magics, numbers and flags from doc/proto.md.
NBDMAGIC = 0x4E42444D41474943          # "NBDMAGIC"
IHAVEOPT = 0x49484156454F5054          # "IHAVEOPT"
REP_MAGIC = 0x0003E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCTURED_MAGIC = 0x668E33EF

FLAG_FIXED_NEWSTYLE = 1 << 0
FLAG_NO_ZEROES = 1 << 1

TF_HAS_FLAGS = 1 << 0
TF_SEND_FLUSH = 1 << 2
TF_SEND_FUA = 1 << 3
TF_SEND_TRIM = 1 << 5
TF_CAN_MULTI_CONN = 1 << 8

OPT_EXPORT_NAME = 1
OPT_ABORT = 2
OPT_LIST = 3
OPT_INFO = 6
OPT_GO = 7
OPT_STRUCTURED_REPLY = 8

REP_ACK = 1
REP_SERVER = 2
REP_INFO = 3
REP_ERR_UNSUP = (1 << 31) | 1
REP_ERR_INVALID = (1 << 31) | 3

INFO_EXPORT = 0
INFO_BLOCK_SIZE = 3

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_TRIM = 4

REPLY_FLAG_DONE = 1 << 0
TYPE_NONE = 0
TYPE_OFFSET_DATA = 1
TYPE_OFFSET_HOLE = 2
TYPE_ERROR = (1 << 15) | 1

EIO = 5
EINVAL = 22

PAGE = 4096
U64 = 1 << 64

# Every case this server knows; the driver's table refers to these names.
HANDSHAKE_CASES = {
    'bad-greeting': 'first greeting magic is not NBDMAGIC',
    'bad-greeting2': 'second greeting magic is not IHAVEOPT',
    'bs-min0': 'NBD_INFO_BLOCK_SIZE with minimum 0',
    'bs-npow2': 'NBD_INFO_BLOCK_SIZE with minimum 1000 (not a power of two)',
    'bs-max-lt-min': 'NBD_INFO_BLOCK_SIZE with maximum below minimum',
    'size-zero': 'export size 0',
    'size-2e63': 'export size 2^63 (legal; a small job must work)',
    'hs-silent-accept': 'accept, then never send the greeting',
    'hs-silent-greeting': 'send the greeting, then never read or answer',
    'hs-silent-flags': 'read the client flags, then silence',
    'hs-silent-option': 'read the first option, then never answer it',
    'hs-silent-mid-reply': 'send half of the first option reply header, then silence',
    'hs-trickle': 'send every handshake byte alone, one every 2 s',
    'hs-huge-reply': 'first option reply announces 0xffffffff bytes',
    'hs-accept-close': 'accept, then close at once',
}
TRANSMISSION_CASES = {
    'good': 'no misbehaviour',
    'bad-magic': 'reply with a wrong magic',
    'unknown-cookie': 'reply to a cookie that was never sent',
    'duplicate-reply': 'send the same reply twice, back to back',
    'truncated-close': 'send half a reply, then close',
    'truncated-silence': 'send half a reply, then silence',
    'silent': 'never answer a request (--after: the Nth), nor any after it',
    'data-too-large': 'OFFSET_DATA 4 KiB longer than the request',
    'data-undersize': 'OFFSET_DATA chunk of length 4 (< 8)',
    'data-before': 'OFFSET_DATA starting 512 bytes before the request',
    'data-wrap': 'OFFSET_DATA at 2^64-4096, so offset+length wraps to 0',
    'data-after': 'OFFSET_DATA ending 512 bytes after the request',
    'hole-before': 'OFFSET_HOLE starting 512 bytes before the request',
    'hole-after': 'OFFSET_HOLE ending 512 bytes after the request',
    'hole-wrap': 'OFFSET_HOLE at 2^64-4096, so offset+size wraps to 0',
    'hole-zero': 'OFFSET_HOLE of size 0',
    'overlap': 'two OFFSET_DATA chunks that overlap by 512 bytes',
    'overlap-hole': 'an OFFSET_HOLE over part of an earlier OFFSET_DATA',
    'done-no-data': 'a read answered by DONE alone, no data',
    'half-data': 'a read answered with its first half only, then DONE',
    'error-chunk': 'NBD_REPLY_TYPE_ERROR (EIO) for a read: an I/O error',
    'error-malformed': 'error chunk whose message length exceeds the chunk',
    'oversize-chunk': 'a 1 MiB NBD_REPLY_TYPE_ERROR chunk',
    'structured-unnegotiated': 'refuse structured replies, then send them',
    'reverse-chunks': 'reads split in four, sent last piece first (legal)',
    'reorder': 'answer each run of pipelined requests last first (legal)',
    'simple-error': 'a read answered by a simple reply with EIO and no data',
}
CASES = {**HANDSHAKE_CASES, **TRANSMISSION_CASES}

# Transmission cases that only make sense for a read.
READ_ONLY_CASES = {c for c in TRANSMISSION_CASES
                   if c.startswith(('data-', 'hole-', 'overlap', 'done-', 'half-',
                                    'error-', 'oversize', 'structured-',
                                    'reverse-', 'simple-'))}


def log(msg):
    print(f'nbd-hostile: {msg}', file=sys.stderr, flush=True)


class Export:
    """A sparse in-memory export: 4 KiB pages, absent pages read as zeros."""

    def __init__(self, size):
        self.size = size
        self.pages = {}
        self.lock = threading.Lock()

    def read(self, off, n):
        # Anywhere in 0..2^64 (out-of-range chunks are built from this too).
        out = bytearray(n)
        with self.lock:
            pos = 0
            while pos < n:
                a = off + pos
                page, inpage = divmod(a, PAGE)
                take = min(PAGE - inpage, n - pos)
                data = self.pages.get(page)
                if data is not None:
                    out[pos:pos + take] = data[inpage:inpage + take]
                pos += take
        return bytes(out)

    def write(self, off, data):
        with self.lock:
            pos = 0
            while pos < len(data):
                page, inpage = divmod(off + pos, PAGE)
                take = min(PAGE - inpage, len(data) - pos)
                buf = self.pages.setdefault(page, bytearray(PAGE))
                buf[inpage:inpage + take] = data[pos:pos + take]
                pos += take

    def trim(self, off, n):
        self.write(off, bytes(n))


class Closed(Exception):
    """The client closed the connection (or we decided to)."""


class Conn:
    def __init__(self, srv, sock, num):
        self.srv = srv
        self.sock = sock
        self.num = num
        self.case = srv.case
        self.structured = False
        self.no_zeroes = False
        self.eligible = 0          # requests the case applied to so far
        self.fired = False
        self.held = []             # 'reorder': replies not sent yet

    # --- I/O helpers -------------------------------------------------
    def recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise Closed()
            buf += chunk
        return bytes(buf)

    def send(self, data):
        self.sock.sendall(data)

    def hs_send(self, data):
        # Handshake output: trickled a byte at a time in hs-trickle.
        if self.case == 'hs-trickle':
            for b in data:
                self.sock.sendall(bytes([b]))
                time.sleep(2)
        else:
            self.sock.sendall(data)

    def silence(self):
        # Say nothing more; read and discard until the client gives up.
        while True:
            try:
                if not self.sock.recv(65536):
                    break
            except OSError:
                break
        raise Closed()

    def fire(self, what):
        self.fired = True
        self.srv.trigger(f'conn {self.num}: {self.case}: {what}')

    # --- handshake ---------------------------------------------------
    def handshake(self):
        case = self.case
        if case == 'hs-accept-close':
            self.fire('closing at once')
            raise Closed()
        if case == 'hs-silent-accept':
            self.fire('silent before the greeting')
            self.silence()
        first = NBDMAGIC if case != 'bad-greeting' else 0x4E42444D41474958
        second = IHAVEOPT if case != 'bad-greeting2' else 0x0123456789ABCDEF
        if case in ('bad-greeting', 'bad-greeting2', 'hs-trickle'):
            self.fire('greeting')
        self.hs_send(struct.pack('>QQH', first, second,
                                 FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
        if case == 'hs-silent-greeting':
            self.fire('silent after the greeting')
            self.silence()
        (cflags,) = struct.unpack('>I', self.recv(4))
        self.no_zeroes = bool(cflags & FLAG_NO_ZEROES)
        if case == 'hs-silent-flags':
            self.fire('silent after the client flags')
            self.silence()
        first_option = True
        while True:
            magic, opt, length = struct.unpack('>QII', self.recv(16))
            if magic != IHAVEOPT:
                log(f'conn {self.num}: bad option magic {magic:#x}')
                raise Closed()
            if length > 65536:
                log(f'conn {self.num}: option {opt} of {length} bytes')
                raise Closed()
            data = self.recv(length)
            if first_option:
                first_option = False
                if case == 'hs-silent-option':
                    self.fire(f'silent after option {opt}')
                    self.silence()
                if case == 'hs-silent-mid-reply':
                    self.fire(f'half a reply to option {opt}')
                    self.hs_send(struct.pack('>QII', REP_MAGIC, opt, REP_ACK)[:10])
                    self.silence()
                if case == 'hs-huge-reply':
                    self.fire(f'0xffffffff-byte reply to option {opt}')
                    self.hs_send(struct.pack('>QIII', REP_MAGIC, opt, REP_ACK,
                                             0xFFFFFFFF))
                    self.silence()
            if self.option(opt, data):
                return

    def opt_reply(self, opt, rtype, data=b''):
        self.hs_send(struct.pack('>QIII', REP_MAGIC, opt, rtype, len(data)) + data)

    def export_size(self):
        if self.case == 'size-zero':
            self.fire('export size 0')
            return 0
        if self.case == 'size-2e63':
            self.fire('export size 2^63')
        return self.srv.export.size

    def tflags(self):
        return TF_HAS_FLAGS | TF_SEND_FLUSH | TF_SEND_FUA | TF_SEND_TRIM | TF_CAN_MULTI_CONN

    def block_size(self):
        limits = {'bs-min0': (0, 4096, 1 << 25),
                  'bs-npow2': (1000, 4096, 1 << 25),
                  'bs-max-lt-min': (4096, 4096, 1024)}
        if self.case in limits:
            self.fire('block size info %d/%d/%d' % limits[self.case])
            return limits[self.case]
        return (1, 4096, 1 << 25)

    def option(self, opt, data):
        """Answers one option; True when transmission starts."""
        if opt == OPT_EXPORT_NAME:
            reply = struct.pack('>QH', self.export_size(), self.tflags())
            if not self.no_zeroes:
                reply += bytes(124)
            self.hs_send(reply)
            return True
        if opt == OPT_STRUCTURED_REPLY:
            if data:
                self.opt_reply(opt, REP_ERR_INVALID)
            elif self.case == 'structured-unnegotiated':
                self.opt_reply(opt, REP_ERR_UNSUP)
            else:
                self.structured = True
                self.opt_reply(opt, REP_ACK)
            return False
        if opt in (OPT_GO, OPT_INFO):
            if len(data) < 6:
                self.opt_reply(opt, REP_ERR_INVALID)
                return False
            (nlen,) = struct.unpack('>I', data[:4])
            if 4 + nlen + 2 > len(data):
                self.opt_reply(opt, REP_ERR_INVALID)
                return False
            (ninfo,) = struct.unpack('>H', data[4 + nlen:6 + nlen])
            if len(data) != 6 + nlen + 2 * ninfo:
                self.opt_reply(opt, REP_ERR_INVALID)
                return False
            # Any export name is this export; always send both infos.
            self.opt_reply(opt, REP_INFO, struct.pack('>HQH', INFO_EXPORT,
                                                      self.export_size(),
                                                      self.tflags()))
            self.opt_reply(opt, REP_INFO, struct.pack('>HIII', INFO_BLOCK_SIZE,
                                                      *self.block_size()))
            self.opt_reply(opt, REP_ACK)
            return opt == OPT_GO
        if opt == OPT_ABORT:
            self.opt_reply(opt, REP_ACK)
            raise Closed()
        if opt == OPT_LIST:
            self.opt_reply(opt, REP_SERVER, struct.pack('>I', 0))
            self.opt_reply(opt, REP_ACK)
            return False
        self.opt_reply(opt, REP_ERR_UNSUP)
        return False

    # --- transmission ------------------------------------------------
    @staticmethod
    def simple(cookie, error=0, data=b'', magic=SIMPLE_MAGIC):
        return struct.pack('>IIQ', magic, error, cookie) + data

    @staticmethod
    def chunk(cookie, ctype, payload, flags=0, length=None):
        if length is None:
            length = len(payload)
        return struct.pack('>IHHQI', STRUCTURED_MAGIC, flags, ctype, cookie,
                           length) + payload

    def data_chunk(self, cookie, off, n, done=False):
        return self.chunk(cookie, TYPE_OFFSET_DATA,
                          struct.pack('>Q', off % U64) + self.srv.export.read(off % U64, n),
                          REPLY_FLAG_DONE if done else 0)

    def hole_chunk(self, cookie, off, n, done=False):
        return self.chunk(cookie, TYPE_OFFSET_HOLE, struct.pack('>QI', off % U64, n),
                          REPLY_FLAG_DONE if done else 0)

    def error_chunk(self, cookie, err, msg=b'', done=True):
        return self.chunk(cookie, TYPE_ERROR, struct.pack('>IH', err, len(msg)) + msg,
                          REPLY_FLAG_DONE if done else 0)

    def normal_reply(self, cmd, cookie, off, n):
        """The correct answer to a request (writes were applied already)."""
        exp = self.srv.export
        if cmd == CMD_READ:
            if off + n > exp.size:
                if self.structured:
                    return self.error_chunk(cookie, EINVAL, b'read past the end')
                return self.simple(cookie, EINVAL)
            if self.structured:
                return self.data_chunk(cookie, off, n, done=True)
            return self.simple(cookie, 0, exp.read(off, n))
        if cmd in (CMD_WRITE, CMD_TRIM) and off + n > exp.size:
            return self.simple(cookie, EINVAL)
        if cmd in (CMD_WRITE, CMD_FLUSH, CMD_TRIM):
            return self.simple(cookie, 0)
        return self.simple(cookie, EINVAL)

    def applies(self, cmd, off, n):
        if self.case not in TRANSMISSION_CASES or self.case == 'good' or self.fired:
            return False
        if self.case in READ_ONLY_CASES and cmd != CMD_READ:
            return False
        # Need room before the request for the "before" cases.
        if self.case in ('data-before', 'hole-before') and off < PAGE:
            return False
        if self.case == 'overlap-hole' and n < 2 * 512:
            return False
        self.eligible += 1
        return self.eligible > self.srv.after

    def transmission(self):
        exp = self.srv.export
        while True:
            magic, flags, cmd, cookie, off, n = struct.unpack('>IHHQQI', self.recv(28))
            if magic != REQUEST_MAGIC:
                log(f'conn {self.num}: bad request magic {magic:#x}')
                raise Closed()
            if cmd == CMD_WRITE:
                payload = self.recv(n)
                if off + n <= exp.size:
                    exp.write(off, payload)
            elif cmd == CMD_TRIM and off + n <= exp.size:
                exp.trim(off, n)
            elif cmd == CMD_DISC:
                raise Closed()
            if self.case == 'reorder':
                self.reorder(self.normal_reply(cmd, cookie, off, n))
            elif self.applies(cmd, off, n):
                self.misbehave(cmd, cookie, off, n)
            else:
                self.send(self.normal_reply(cmd, cookie, off, n))

    def reorder(self, reply):
        """Holds replies while more requests are already waiting (up to
        8), then sends them last first, in one write."""
        self.held.append(reply)
        more = select.select([self.sock], [], [], 0)[0]
        if more and len(self.held) < 8:
            return
        if len(self.held) > 1 and not self.fired:
            self.fire(f'{len(self.held)} replies in reverse order')
        self.send(b''.join(reversed(self.held)))
        self.held = []

    def misbehave(self, cmd, cookie, off, n):
        case = self.case
        self.fire(f'request cmd={cmd} cookie={cookie} offset={off} length={n}')
        good = self.normal_reply(cmd, cookie, off, n)
        if case == 'bad-magic':
            self.send(self.simple(cookie, 0, magic=0x12345678))
        elif case == 'unknown-cookie':
            self.send(self.normal_reply(cmd, cookie + (1 << 40), off, n))
        elif case == 'duplicate-reply':
            # One send, so the copy lands right behind the original.
            self.send(good + good)
        elif case in ('truncated-close', 'truncated-silence'):
            self.send(good[:max(len(good) // 2, 8)])
            if case == 'truncated-close':
                raise Closed()
            self.silence()
        elif case == 'silent':
            self.silence()
        elif case == 'data-too-large':
            self.send(self.data_chunk(cookie, off, n + PAGE, done=True))
        elif case == 'data-undersize':
            self.send(self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack('>I', 0),
                                 REPLY_FLAG_DONE))
        elif case in ('data-before', 'data-after', 'data-wrap',
                      'hole-before', 'hole-after', 'hole-wrap', 'hole-zero'):
            bad_off, bad_n = {'before': (off - 512, n), 'after': (off + 512, n),
                              'wrap': (U64 - PAGE, PAGE), 'zero': (off, 0)}[case.split('-')[1]]
            build = self.data_chunk if case.startswith('data') else self.hole_chunk
            # The bad chunk, then the whole read done right: a client that
            # let the bad chunk through would see a complete read.
            self.send(build(cookie, bad_off, bad_n) + self.data_chunk(cookie, off, n, True))
        elif case == 'overlap':
            half = n // 2
            self.send(self.data_chunk(cookie, off, half + 512) +
                      self.data_chunk(cookie, off + half, n - half, True))
        elif case == 'overlap-hole':
            self.send(self.data_chunk(cookie, off, n) +
                      self.hole_chunk(cookie, off + n - 1024, 1024, True))
        elif case == 'done-no-data':
            self.send(self.chunk(cookie, TYPE_NONE, b'', REPLY_FLAG_DONE))
        elif case == 'half-data':
            self.send(self.data_chunk(cookie, off, n // 2) +
                      self.chunk(cookie, TYPE_NONE, b'', REPLY_FLAG_DONE))
        elif case == 'error-chunk':
            self.send(self.error_chunk(cookie, EIO, b'nbd-hostile: injected read error'))
        elif case == 'error-malformed':
            # Message length 200 in a chunk that has room for none.
            self.send(self.chunk(cookie, TYPE_ERROR, struct.pack('>IH', EIO, 200),
                                 REPLY_FLAG_DONE))
        elif case == 'oversize-chunk':
            body = struct.pack('>IH', EIO, 0) + bytes((1 << 20) - 6)
            self.send(self.chunk(cookie, TYPE_ERROR, body, REPLY_FLAG_DONE))
        elif case == 'structured-unnegotiated':
            self.send(self.data_chunk(cookie, off, n, done=True))
        elif case == 'simple-error':
            self.send(self.simple(cookie, EIO))
        elif case == 'reverse-chunks':
            self.send(self.reversed_read(cookie, off, n))
            # Legal behaviour: keep doing it for every read.
            self.fired = False
        else:
            raise AssertionError(case)

    def reversed_read(self, cookie, off, n):
        exp = self.srv.export
        piece = max(n // 4, 1)
        starts = list(range(0, n, piece))
        out = b''
        for i, s in enumerate(reversed(starts)):
            size = min(piece, n - s)
            done = i == len(starts) - 1
            data = exp.read(off + s, size)
            if data.count(0) == size:
                out += self.hole_chunk(cookie, off + s, size, done)
            else:
                out += self.data_chunk(cookie, off + s, size, done)
        return out

    def run(self):
        try:
            self.handshake()
            log(f'conn {self.num}: transmission, structured={int(self.structured)}')
            self.transmission()
        except (Closed, ConnectionError, BrokenPipeError):
            pass
        except OSError as e:
            log(f'conn {self.num}: {e}')
        finally:
            try:
                self.sock.close()
            except OSError:
                pass
            log(f'conn {self.num}: closed')


class Server:
    def __init__(self, args):
        self.case = args.case
        self.after = args.after
        self.export = Export(1 << 63 if args.case == 'size-2e63' else args.size)
        self.trigger_path = args.trigger
        self.lock = threading.Lock()
        self.nconns = 0

    def trigger(self, line):
        log(line)
        if self.trigger_path:
            with self.lock, open(self.trigger_path, 'a') as f:
                f.write(line + '\n')

    def serve(self, lsock):
        while True:
            sock, _ = lsock.accept()
            with self.lock:
                self.nconns += 1
                num = self.nconns
            log(f'conn {num}: accepted')
            threading.Thread(target=Conn(self, sock, num).run, daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description='A misbehaving NBD server for tests.')
    ap.add_argument('socket', nargs='?', help='Unix socket path to listen on')
    ap.add_argument('--case', default='good', choices=sorted(CASES))
    ap.add_argument('--size', type=int, default=16 << 20, help='export size in bytes')
    ap.add_argument('--after', type=int, default=0,
                    help='answer this many applicable requests correctly first')
    ap.add_argument('--trigger', help='file to append a line to when the case fires')
    ap.add_argument('--tcp-port', type=int,
                    help='also listen on 127.0.0.1 at this port (0: a free one)')
    ap.add_argument('--tcp-port-file', help='write the TCP port here (implies --tcp-port 0)')
    ap.add_argument('--list', action='store_true', help='list the cases and exit')
    args = ap.parse_args()
    if args.list:
        for name in sorted(CASES):
            print(f'{name:24} {CASES[name]}')
        return 0
    if not args.socket:
        ap.error('the socket path is required')

    srv = Server(args)
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    if args.tcp_port is not None or args.tcp_port_file:
        tsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tsock.bind(('127.0.0.1', args.tcp_port or 0))
        tsock.listen(16)
        log(f'listening on 127.0.0.1:{tsock.getsockname()[1]}')
        if args.tcp_port_file:
            # Write then rename, so a reader never sees half a number.
            with open(args.tcp_port_file + '.tmp', 'w') as f:
                f.write(f'{tsock.getsockname()[1]}\n')
            os.rename(args.tcp_port_file + '.tmp', args.tcp_port_file)
        threading.Thread(target=srv.serve, args=(tsock,), daemon=True).start()
    usock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Bind under a temporary name and rename: the socket appears ready.
    tmp = args.socket + '.tmp'
    if os.path.exists(tmp):
        os.unlink(tmp)
    usock.bind(tmp)
    usock.listen(16)
    os.rename(tmp, args.socket)
    log(f'case {args.case}, export {srv.export.size} bytes, listening on {args.socket}')
    try:
        srv.serve(usock)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
