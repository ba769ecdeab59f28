"""Every test of the five benchmark documents: job file, server, scaling and the
documents' figures. Data for scripts/rerun-documents (and for the tests in
tests/jobs, which check that every job file in jobs/ appears here once).

Each test is a dict:
  id        short name, also the stem of the results files
  doc       which document (the seeds/ file and its subject)
  test      the document's name for the test
  job       the job file in jobs/
  server    'torus' (nbd-shim coreos profile, replication 2, 1 GbE shaping),
            'nbd-server' (the official server), 'zeroos' (nbd-shim zeroos
            profile on Redis), 'nbdkit' (nbdkit memory)
  size      the document's TORUS_SIZE (bytes) or None when the job has none
  runtime   the document's runtime in seconds (0: none, the job runs to size)
  nrfiles   the document's TORUS_NRFILES (small-file test only)
  maxbs     largest block size in the job (sizes are scaled in multiples of it)
  metrics   what to read from fio's JSON, each a dict:
              key     metric id (unique within the test)
              label   row label
              kind    'bw_MB' (10^6 bytes/s, dd's unit), 'bw_MiB', 'iops',
                      'elapsed' (seconds, scaled to the document's amount)
              ddir    'read' | 'write' | 'trim'
              job     fio job (section) name when the file has several groups
              doc     the documents' figures: [(setup, value), ...] (may be empty)
  kind      'filesystem' | 'device' | 'block-level' (what the kernel path is)
  note      what the engine-path figure means, for the report
  transport how the engine reaches the server: 'nbd' (the default: the engine's
            NBD client straight to it) or 'tcmu' (the engine's TCMU transport to
            tcmu-shim, whose NBD store forwards to the same server)
  base      the document's test this one runs (its own id for NBD; the TCMU
            variants, id <base>-tcmu, are made by _tcmu_variant from it)

The torus document measured every test through NBD and through TCMU: its tests
run twice, each run beside the figures of its front end (TORUS_NBD_SETUPS,
TORUS_TCMU_SETUPS).
"""

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

D000 = "000 torus (2016)"
D001 = "001 ZeroOS NBD baseline (2018)"
D002 = "002 GlusterFS on pine64"
D003 = "003 Lustre single client"
D004 = "004 0-Disk deduped volume (2017)"

TORUS_SETUPS = ("gRPC/nbd", "gRPC/TCMU", "TDP/nbd", "TDP/TCMU")
TORUS_NBD_SETUPS = ("gRPC/nbd", "TDP/nbd")
TORUS_TCMU_SETUPS = ("gRPC/TCMU", "TDP/TCMU")
TRANSPORTS = {"nbd": "NBD", "tcmu": "TCMU"}


def _torus(values):
    return list(zip(TORUS_SETUPS, values))


def _only(doc, setups):
    return [(label, v) for label, v in doc if label in setups]


def _tcmu_variant(test):
    """The TCMU run of a torus test: the same job and server, reached through
    tcmu-shim, beside the document's TCMU figures."""
    t = dict(test, id=test["id"] + "-tcmu", transport="tcmu", base=test["id"])
    t["metrics"] = [dict(m, doc=_only(m["doc"], TORUS_TCMU_SETUPS))
                    for m in test["metrics"]]
    t["note"] = ("through the engine's TCMU transport to tcmu-shim, whose NBD store "
                 "forwards each command to the torus shim; " + test["note"])
    return t


# The small-file tests: 2000 files of 4 KiB .. 60 KiB (mean 32 KiB), so the
# document-sized amount of data is 2000 * 32 KiB = 64000 KiB.
SMALLFILE_BYTES_PER_FILE = 32 * KiB
SMALLFILE_NRFILES = 2000

TESTS = [
    # ---------------------------------------------------------------- torus
    dict(id="torus-ddwrite", doc=D000, test="ddwrite (dd bs=1K, 4 GB)",
         job="torus-ddwrite.fio", server="torus",
         size=4000000 * KiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MB", ddir="write",
                       doc=_torus([35.6, 37.0, 60.4, 61.5]))],
         note="filesystem test: the engine path sends each 1 KiB write as one NBD "
              "request at QD1 (no page cache, no writeback merging)"),
    dict(id="torus-ddreadback", doc=D000, test="ddreadback (dd bs=1K)",
         job="torus-ddreadback.fio", server="torus",
         size=4000000 * KiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="read", label="read", kind="bw_MB", ddir="read",
                       doc=_torus([60.2, 52.0, 132, 126]))],
         note="filesystem test: 1 KiB NBD reads at QD1 (no page cache, no readahead), "
              "of the data ddwrite wrote to the same server"),
    dict(id="torus-randrw-64k", doc=D000, test="fio randrw 64k QD64",
         job="randrw.fio", server="torus",
         size=4 * GiB, runtime=0, maxbs=1 * MiB, kind="device",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read",
                       doc=_torus([61, 58, 135, 133])),
                  dict(key="write", label="write", kind="iops", ddir="write",
                       doc=_torus([20, 19, 45, 44]))],
         note="direct I/O: the same requests as the kernel path"),
    dict(id="torus-randrw-4k", doc=D000, test="fio randrw 4k QD64",
         job="torus-randrw-4k.fio", server="torus",
         size=4 * GiB, runtime=0, maxbs=1 * MiB, kind="device",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read", doc=[]),
                  dict(key="write", label="write", kind="iops", ddir="write", doc=[])],
         note="no figure in the documents (a sibling torus file calls it painful)"),
    # ------------------------------------------------------- ZeroOS baseline
    dict(id="zeroos-baseline-randrw-4k", doc=D001, test="randrw-4k QD16 (nbd-server)",
         job="zeroos-baseline-randrw-4k.fio", server="nbd-server",
         size=1 * GiB, runtime=180, maxbs=1 * MiB, kind="device",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read",
                       doc=[("host nbd0", 29700), ("guest vda", 29069)]),
                  dict(key="write", label="write", kind="iops", ddir="write",
                       doc=[("host nbd0", 29700), ("guest vda", 29024)])],
         note="raw-device test: the same requests as the kernel path"),
    # -------------------------------------------------------------- GlusterFS
    dict(id="gluster-dd-1g-fsync", doc=D002, test="dd bs=1M 1 GiB conv=fsync",
         job="gluster-dd-1g-fsync.fio", server="nbdkit",
         size=1 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MB", ddir="write",
                       doc=[("HDD xfs", 37.5), ("flash xfs", 9.9),
                            ("FUSE local dist-repl", 32.0), ("FUSE local distributed", 35.5),
                            ("FUSE local dispersed", 35.0), ("remote dist-repl", 14.0),
                            ("remote distributed", 35.0), ("remote dispersed", 19.5)])],
         note="filesystem test: sequential 1 MiB NBD writes at QD1, then one flush"),
    dict(id="gluster-smallfiles-extract", doc=D002, test="small files: jar -xvf jenkins.war",
         job="gluster-smallfiles-extract.fio", server="nbdkit",
         size=None, runtime=0, nrfiles=SMALLFILE_NRFILES, maxbs=64 * KiB, kind="filesystem",
         metrics=[dict(key="elapsed", label="extract", kind="elapsed", ddir="write",
                       doc=[("local eMMC", 5.05), ("local SD", 14.45),
                            ("remote distributed", 67.5), ("remote dispersed", 76.0),
                            ("board distributed", 62.0), ("board dispersed", 105.0),
                            ("board dist-repl", 82.5)])],
         note="jenkins.war mirrored by 2000 files of 4-60 KiB; the engine path writes "
              "their data only (no filesystem metadata); time scaled to 64000 KiB; "
              "remote dist-repl failed after 19 min 48 s"),
    dict(id="gluster-smallfiles-delete", doc=D002, test="small files: rm -rf",
         job="gluster-smallfiles-delete.fio", server="nbdkit",
         size=SMALLFILE_NRFILES * SMALLFILE_BYTES_PER_FILE, runtime=0, maxbs=64 * KiB,
         kind="block-level",
         metrics=[dict(key="elapsed", label="delete", kind="elapsed", ddir="trim",
                       doc=[("local eMMC", 0.1), ("local SD", 0.2),
                            ("remote distributed", 7.85), ("remote dispersed", 9.4),
                            ("board distributed", 5.85), ("board dispersed", 5.9),
                            ("board dist-repl", 10.35)])],
         note="rm -rf as the discards it leaves on the device: one trim per file-sized "
              "extent at QD1; time scaled to 64000 KiB"),
    # ----------------------------------------------------------------- Lustre
    dict(id="lustre-single-writer", doc=D003, test="single writer, one OST (seq buffered)",
         job="lustre-single-writer.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MiB", ddir="write", doc=[])],
         note="plots only in the document; engine path: sequential 1 MiB writes at QD1"),
    dict(id="lustre-seq-buffered", doc=D003, test="sequential write, buffered",
         job="lustre-seq-buffered.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MiB", ddir="write", doc=[])],
         note="plots only; the engine has no page cache, so buffered = direct here"),
    dict(id="lustre-rand-buffered", doc=D003, test="random write, buffered",
         job="lustre-rand-buffered.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MiB", ddir="write", doc=[])],
         note="plots only (slightly slower than sequential buffered)"),
    dict(id="lustre-seq-direct", doc=D003, test="sequential write, direct",
         job="lustre-seq-direct.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MiB", ddir="write", doc=[])],
         note="plots only (direct about 5x slower than buffered on Lustre)"),
    dict(id="lustre-rand-direct", doc=D003, test="random write, direct",
         job="lustre-rand-direct.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="write", label="write", kind="bw_MiB", ddir="write", doc=[])],
         note="plots only (direct about 5x slower than buffered on Lustre)"),
    dict(id="lustre-bs-sweep", doc=D003, test="block size sweep, direct",
         job="lustre-bs-sweep.fio", server="nbdkit",
         size=200 * GiB, runtime=0, maxbs=16 * MiB, kind="filesystem",
         metrics=[dict(key=f"bs-{n}m", label=f"bs {n} MiB", kind="bw_MiB", ddir="write",
                       job=f"bs-{n}m", doc=[("IB (client)", ib)])
                  for n, ib in ((1, 200), (4, 580), (8, 805), (16, 969))],
         note="document: client IB rate (zfs wrote 522/959/1201/1369 MiB/s with raidz "
              "parity); engine path: sequential writes of each size at QD1"),
    # ----------------------------------------------------------------- 0-Disk
    dict(id="zerodisk-fs-randrw", doc=D004, test="filesystem randrw 4k QD4, 80% writes",
         job="zerodisk-fs-randrw.fio", server="zeroos",
         size=2000 * MiB, runtime=300, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read",
                       doc=[("VM, deduped", 566)]),
                  dict(key="write", label="write", kind="iops", ddir="write",
                       doc=[("VM, deduped", 2260)])],
         note="filesystem test, buffered in the document: the engine path has no page "
              "cache (every 4 KiB request reaches the server)"),
    dict(id="zerodisk-fs-readwrite", doc=D004, test="filesystem seq readwrite 4k QD4, 80% writes",
         job="zerodisk-fs-readwrite.fio", server="zeroos",
         size=2000 * MiB, runtime=300, maxbs=1 * MiB, kind="filesystem",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read",
                       doc=[("VM, deduped", 16894)]),
                  dict(key="write", label="write", kind="iops", ddir="write",
                       doc=[("VM, deduped", 67483)])],
         note="filesystem test; the document's figure is mostly its page cache "
              "(2000 MB in 6 s)"),
    dict(id="zerodisk-device", doc=D004, test="device test (invalid command, mirrored)",
         job="zerodisk-device.fio", server="zeroos",
         size=2000 * MiB, runtime=30, maxbs=1 * MiB, kind="device",
         metrics=[dict(key="read", label="read", kind="iops", ddir="read", doc=[]),
                  dict(key="write", label="write", kind="iops", ddir="write", doc=[])],
         note="the document shows no result; readwrite=1 mirrored as randrw"),
]

# Every test runs over NBD unless it says otherwise; the torus tests also run
# over TCMU, right after the NBD runs and on the same torus shim (so
# torus-ddreadback-tcmu reads what torus-ddwrite-tcmu wrote through tcmu-shim).
_TORUS = [t for t in TESTS if t["server"] == "torus"]
_TCMU = [_tcmu_variant(t) for t in _TORUS]
for _t in TESTS:
    _t.setdefault("transport", "nbd")
    _t.setdefault("base", _t["id"])
    if _t["server"] == "torus":
        for _m in _t["metrics"]:
            _m["doc"] = _only(_m["doc"], TORUS_NBD_SETUPS)
_at = TESTS.index(_TORUS[-1]) + 1
TESTS[_at:_at] = _TCMU
del _t, _m, _at

UNITS = {"bw_MB": "MB/s", "bw_MiB": "MiB/s", "iops": "IOPS", "elapsed": "s"}

SERVERS = {
    "torus": "nbd-shim torus (replication 2, 1 GbE shaping)",
    "nbd-server": "nbd-server (official)",
    "zeroos": "nbd-shim zeroos on Redis",
    "nbdkit": "nbdkit memory",
}


def server_text(test):
    """The server as the report names it, with tcmu-shim in front for TCMU."""
    if test.get("transport") == "tcmu":
        return "tcmu-shim, NBD store to " + SERVERS[test["server"]]
    return SERVERS[test["server"]]


def variants(base_id):
    """The runs of one of the documents' tests (its NBD run, then any TCMU)."""
    return [t for t in TESTS if t["base"] == base_id]


def by_id(test_id):
    for t in TESTS:
        if t["id"] == test_id:
            return t
    raise KeyError(test_id)
