#!/usr/bin/env python3
"""Checks one job's timeline=DIR output against fio's own figures.

  check_engine.py REC JSON FIO_JSON FIO_STDERR TRANSPORT CMDS_PER_IO
  check_engine.py --wire REC SERVER_REC...

REC and JSON are the engine's DIR/engine-N.rec and .json; FIO_JSON is
fio's --output-format=json; FIO_STDERR what fio printed on stderr.
CMDS_PER_IO: wire commands per request (a split request has several).
--wire: every record of REC has the server's record of the same command
(key, offset, length and op) among the SERVER_RECs (the shims'
--timeline files): the key is what went on the wire.
Prints what is wrong, expected vs actual, and exits 1; else prints OK.
"""
import json
import struct
import sys

HEADER = struct.Struct("<8sIIII32s32s" + "32s" * 5)
REC = struct.Struct("<QQIHH5Q")
TABLE_HEADER = ("torus: timeline: %-22s %10s %10s %10s %10s %10s"
                % ("phase", "mean", "p50", "p99", "p99.9", "count"))

EXPECT = {
    "nbd": ("engine-nbd", "nbd-cookie",
            ["queued", "sent", "header", "payload", "handed"],
            [("client submit", "client"), ("server and wire", "server-and-wire"),
             ("payload", "wire"), ("hand back", "client"),
             ("total", "total")]),
    "tcmu": ("engine-tcmu", "tcmu-cmd-id",
             ["queued", "published", "seen", "handed"],
             [("client submit", "client"),
              ("handler and wake-ups", "server-and-wire"),
              ("hand back", "client"), ("total", "total")]),
    "libnbd": ("engine-libnbd", "nbd-cookie",
               ["queued", "callback", "handed"],
               [("libnbd, server and wire", "server-and-wire"),
                ("hand back", "client"), ("total", "total")]),
}

errors = []


def check(cond, what, expected, actual):
    if not cond:
        errors.append(f"{what}: expected {expected}, got {actual}")


def cstr(b):
    return b.split(b"\0", 1)[0].decode()


def read_rec(path):
    data = open(path, "rb").read()
    h = HEADER.unpack_from(data, 0)
    head = {
        "magic": h[0], "version": h[1], "rec_size": h[2],
        "nr_stamps": h[3], "source": cstr(h[5]), "key": cstr(h[6]),
        "stamps": [cstr(s) for s in h[7:7 + h[3]]],
    }
    body = data[512:]
    check(len(body) % 64 == 0, "record bytes", "a multiple of 64",
          len(body))
    recs = [REC.unpack_from(body, o) for o in range(0, len(body) - 63, 64)]
    return head, recs


def wire(rec, servers):
    _, recs = read_rec(rec)
    seen = set()
    for path in servers:
        seen.update(r[:4] for r in read_rec(path)[1])
    missing = [r[:4] for r in recs if r[:4] not in seen]
    check(recs and not missing,
          "engine records without the server's record of the command",
          f"none of {len(recs)}",
          f"{len(missing)}, e.g. (key, offset, len, op) {missing[:3]}")
    if errors:
        print(f"{rec}:")
        for e in errors:
            print("  " + e)
        return 1
    print(f"OK {rec}: all {len(recs)} keys seen by the server")
    return 0


def main():
    if sys.argv[1] == "--wire":
        return wire(sys.argv[2], sys.argv[3:])
    rec, js, fio_json, fio_err, transport = sys.argv[1:6]
    cmds = int(sys.argv[6])
    source, key, stamps, phases = EXPECT[transport]
    head, recs = read_rec(rec)
    check(head["magic"] == b"TORUSTL1", "magic", "TORUSTL1", head["magic"])
    check(head["rec_size"] == 64, "record size", 64, head["rec_size"])
    check(head["source"] == source, "source", source, head["source"])
    check(head["key"] == key, "key", key, head["key"])
    check(head["stamps"] == stamps, "stamps", stamps, head["stamps"])
    n = head["nr_stamps"]

    job = json.load(open(fio_json))["jobs"][0]
    depth = int(job["job options"]["iodepth"])
    ios = sum(job[d]["total_ios"] for d in ("read", "write", "trim"))
    check(len(recs) == ios * cmds, "records",
          f"fio's {ios} I/Os x {cmds} command(s)", len(recs))

    bad = 0
    requests = {}
    for r in recs:
        k, off, ln, op, stream, t = r[0], r[1], r[2], r[3], r[4], r[5:5 + n]
        if not all(t) or list(t) != sorted(t):
            bad += 1
            if bad <= 3:
                errors.append(f"record key {k:#x} offset {off}: stamps "
                              f"not all taken and in order: {list(t)}")
        if transport == "nbd":
            # cookie: the client's slot below, its use count above
            check(k & 0xffffffff < depth and k >> 32 >= 1,
                  "NBD cookie", f"slot < {depth}, use >= 1", hex(k))
        elif transport == "libnbd":
            # libnbd's cookies are positive
            check(k >= 1, "libnbd cookie", ">= 1", k)
        else:
            check(1 <= k <= 65535, "TCMU cmd_id", "1..65535", k)
        requests.setdefault((t[0], t[n - 1], op), []).append((off, ln, t[1]))
    check(bad == 0, "records with stamps missing or out of order", 0, bad)
    # A split request: its commands share queued and handed, and cover
    # its range once, end to end. Only its first command may take the
    # request's queued stamp as its own published (one clock read for
    # both, engines/tcmu/tcmu_transport.c); the others are published later
    # and read the clock themselves: their client submit is not 0.
    if cmds > 1:
        shared = split = 0
        for (queued, _, _), parts in requests.items():
            parts.sort()
            check(len(parts) % cmds == 0, "commands of one request",
                  f"a multiple of {cmds}", len(parts))
            if len(parts) == cmds:
                ok = all(parts[i][0] + parts[i][1] == parts[i + 1][0]
                         for i in range(cmds - 1))
                check(ok, "a split request's commands", "contiguous", parts)
                split += 1
                if transport == "tcmu" and \
                        sum(1 for p in parts if p[2] == queued) > 1:
                    shared += 1
        check(shared == 0, "split requests with more than one command "
              "published at the request's queued stamp", f"none of {split}",
              shared)

    summary = json.load(open(js))
    names = [(p["name"], p["where"]) for p in summary]
    check(names == phases, "phases", phases, names)
    # each phase's stamps (scripts/timelinelib.py takes the phases from
    # here): one after the other, the total from the first to the last
    spans = [(p.get("from"), p.get("to")) for p in summary]
    want = list(zip(stamps, stamps[1:])) + [(stamps[0], stamps[-1])]
    check(spans == want, "phases' from and to", want, spans)
    for p in summary:
        for f in ("count", "mean_us", "p50_us", "p99_us", "p99.9_us"):
            check(f in p, f"phase {p['name']}: field", f, sorted(p))
        check(p["count"] == len(recs), f"phase {p['name']}: count",
              len(recs), p["count"])
        h = p.get("histogram", {})
        check(len(h.get("edges_ns", [])) == len(h.get("counts", [])) + 1
              and sum(h.get("counts", [])) == p["count"],
              f"phase {p['name']}: histogram", "edges = counts + 1, "
              "counts summing to count", {k: len(v) for k, v in h.items()})
        check(p["p50_us"] <= p["p99_us"] <= p["p99.9_us"],
              f"phase {p['name']}: percentiles", "in order",
              (p["p50_us"], p["p99_us"], p["p99.9_us"]))

    # The total phase against fio's own latency. Each request's window
    # (->queue to ->getevents) lies inside fio's lat (from before it
    # writes its verify pattern to its completion) and holds fio's clat
    # (from ->commit to the completion) but for the few instructions from
    # ->getevents to fio's stamp. So, per direction, the total's median
    # lies between fio's clat and lat medians (10% leeway), and its mean is
    # not above fio's lat mean: a clock running slow or fast shows.
    # Medians, because fio preempted between its stamp and the engine's on
    # a loaded machine moves the means apart (the other I/Os in flight wait
    # in both, that one in fio's only) and not the medians.
    lat = sum(job[d]["lat_ns"]["mean"] * job[d]["total_ios"]
              for d in ("read", "write", "trim")) / ios / 1000
    total = summary[-1]["mean_us"]
    mean = sum(r[4 + n] - r[5] for r in recs) / len(recs) / 1000
    check(abs(total - mean) <= 0.001 * mean + 0.01, "total phase's mean",
          f"the records' {mean:.3f} us", f"{total:.3f} us")
    check(total <= 1.05 * lat, "total phase's mean",
          f"at most 5% above fio's lat mean {lat:.2f} us", f"{total:.2f} us")
    medians = []
    for op, d in ((0, "read"), (1, "write")):
        ours = sorted(q[1] - q[0] for q in requests if q[2] == op)
        if len(ours) < 100:
            continue
        p50 = ours[len(ours) // 2] / 1000
        clat50 = job[d]["clat_ns"]["percentile"]["50.000000"] / 1000
        lat50 = job[d]["lat_ns"]["percentile"]["50.000000"] / 1000
        medians.append(f"{d} p50 {p50:.1f} us, fio's {clat50:.1f} to {lat50:.1f} us")
        check(0.9 * clat50 <= p50 <= 1.1 * lat50, f"total phase's {d} median",
              f"between 90% of fio's clat p50 {clat50:.2f} us and 110% of its lat "
              f"p50 {lat50:.2f} us", f"{p50:.2f} us")

    err = open(fio_err).read().splitlines()
    check(TABLE_HEADER in err, "the stderr table's header", TABLE_HEADER,
          [l for l in err if "timeline" in l])
    rows = [l.split()[2] for l in err if l.startswith("torus: timeline: ")
            and l != TABLE_HEADER and l.endswith(str(len(recs)))]
    check(len(rows) == len(phases), "stderr table rows", len(phases),
          len(rows))

    if errors:
        print(f"{rec}:")
        for e in errors:
            print("  " + e)
        return 1
    print(f"OK {rec}: {len(recs)} records, total {total:.1f} us, "
          f"fio lat {lat:.1f} us; " + "; ".join(medians))
    return 0


if __name__ == "__main__":
    sys.exit(main())
