#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check the 0-Disk deduped layout that nbd-shim --profile zeroos wrote.

    redis-layout.py --storage HOST:PORT,... [--meta HOST:PORT,...]
                    --vdisk NAME [--block-size 4096] [--blocks FIRST:COUNT]

Checks, with a small RESP client of its own:
- lba:<vdisk> exists on the metadata servers only (by default the storage
  servers), sector S on server S % M of the M of them; each field is a
  decimal sector index whose value is 128 hashes of 32 bytes;
- every storage key is a 32-byte blake2b-256 of its value, a block of
  --block-size bytes, kept on server hash[0] % N;
- every non-nil hash in the block map has its content on the right server.

Prints one JSON object: keys per storage server, lba fields, mapped blocks,
distinct hashes, and with --blocks the distinct hashes of that block range
("nil" counted as one). Exits 1 with a message on the first violation.
"""

import argparse
import hashlib
import json
import socket
import sys


class Redis:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.reply()

    def reply(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")

    def scan(self, *args):
        cursor = b"0"
        while True:
            cursor, items = self.cmd("SCAN", cursor, *args)
            yield from items
            if cursor == b"0":
                return


def die(msg):
    print(f"redis-layout: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--storage", required=True)
    ap.add_argument("--meta", help="default: the storage servers")
    ap.add_argument("--vdisk", required=True)
    ap.add_argument("--block-size", type=int, default=4096)
    ap.add_argument("--blocks")
    a = ap.parse_args()

    saddrs = a.storage.split(",")
    maddrs = (a.meta or a.storage).split(",")
    storage = [Redis(x) for x in saddrs]
    metas = [Redis(x) for x in maddrs]
    key = "lba:" + a.vdisk
    n = len(storage)

    keys = []
    for i, r in enumerate(storage):
        ks = [k for k in r.scan("COUNT", "1000") if not k.startswith(b"lba:")]
        for k in ks:
            if len(k) != 32:
                die(f"storage {i}: key {k!r} is not a 32-byte hash")
            if k[0] % n != i:
                die(f"storage {i}: hash {k.hex()} belongs on server {k[0] % n}")
            v = r.cmd("GET", k)
            if len(v) != a.block_size:
                die(f"storage {i}: {k.hex()} holds {len(v)} bytes")
            if hashlib.blake2b(v, digest_size=32).digest() != k:
                die(f"storage {i}: {k.hex()} is not the blake2b-256 of its block")
        if saddrs[i] not in maddrs and r.cmd("EXISTS", key):
            die(f"storage {i} has {key}; it belongs on the metadata servers")
        keys.append(len(ks))
    stored = set()
    for i, r in enumerate(storage):
        stored.update(k for k in r.scan("COUNT", "1000") if len(k) == 32)

    lba = {}
    for j, meta in enumerate(metas):
        fields = meta.cmd("HGETALL", key) or []
        for f, v in zip(fields[::2], fields[1::2]):
            if not f.isdigit():
                die(f"{key}: field {f!r} is not a decimal sector index")
            if int(f) % len(metas) != j:
                die(f"{key}: sector {f.decode()} is on metadata server {j}, "
                    f"not {int(f) % len(metas)}")
            lba[int(f)] = v
    for f, v in sorted(lba.items()):
        f = str(f).encode()
        if len(v) != 128 * 32:
            die(f"{key}: field {f.decode()} has {len(v)} bytes, not 4096")
        if v == bytes(4096):
            die(f"{key}: field {f.decode()} is all nil; 0-Disk deletes those")

    mapped, hashes = 0, set()
    for sector, v in lba.items():
        for slot in range(128):
            h = v[slot * 32:(slot + 1) * 32]
            if h == bytes(32):
                continue
            mapped += 1
            hashes.add(h)
            if h not in stored:
                die(f"block {sector * 128 + slot}: hash {h.hex()} is not stored")

    out = {"keys": keys, "lba_fields": len(lba), "mapped_blocks": mapped,
           "distinct_hashes": len(hashes),
           "lba_per_meta": [sum(1 for f in lba if f % len(metas) == j)
                            for j in range(len(metas))]}
    if a.blocks:
        first, count = (int(x) for x in a.blocks.split(":"))
        seen = set()
        for b in range(first, first + count):
            v = lba.get(b // 128)
            seen.add(v[(b % 128) * 32:(b % 128 + 1) * 32] if v else bytes(32))
        out["range_hashes"] = len(seen)
        out["range_nil"] = bytes(32) in seen
    print(json.dumps(out))


if __name__ == "__main__":
    main()
