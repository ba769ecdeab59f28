"""What scripts/bench measures: its sections, each a record of SECTIONS
(its group, the programs it needs, its run function, its line for --help).
A run function declares what the section reports (its ratios, targets and
lean probe), starts its servers (shared within a placement) and runs its
clients in rounds through bench_run.Bench; to add a section, write its
function and add its record. The command's options, help and report are
bench_cli.py's.
"""

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cli  # noqa: E402
import bench_run  # noqa: E402
import servers  # noqa: E402

NET_TEXT = {"unix": "Unix socket", "tcp": "TCP loopback"}
FIO_PATCHED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fio-patched.sh")


# ------------------------------------------------------------ servers

def null_server(b, net):
    """The `nbdkit null` of --size over NET (unix or tcp) that the sections
    of a placement share."""
    def start():
        if net == "unix":
            return b.start(servers.nbdkit, "null", f"size={b.o.size}",
                           socket=b.path("null.sock"), log="null.sock.log")
        return b.start(servers.nbdkit, "null", f"size={b.o.size}", log="null-tcp.log",
                       what="nbdkit null (TCP)")
    return b.need(("null", net), start)


def probe_where(srv):
    """pipe-probe's address of the server SRV."""
    if srv.socket is not None:
        return f"unix:{srv.socket}"
    return f"tcp:{srv.host}:{srv.port}"


def null_tls_server(b, net, kind):
    """A TLS-only nbdkit null (--tls=require) over NET with KIND's
    credentials (certs or psk)."""
    certs, psk, _ = b.tls_keys()
    tls = {"tls_certificates": certs} if kind == "certs" else {"tls_psk": psk}

    def start():
        if net == "unix":
            return b.start(servers.nbdkit, "null", f"size={b.o.size}",
                           socket=b.path(f"null-{kind}.sock"), log=f"null-{kind}.sock.log", **tls)
        return b.start(servers.nbdkit, "null", f"size={b.o.size}", log=f"null-tcp-{kind}.log",
                       what=f"nbdkit null (TCP, TLS {kind})", **tls)
    return b.need(("null-tls", net, kind), start)


def shim(b, name, profile, store=None, size=None, extra=()):
    """nbd-shim PROFILE on NAME.sock."""
    return b.start(servers.nbd_shim, b.o.nbd_shim, profile, store=store, size=size,
                   socket=b.path(f"{name}.sock"), extra=extra, log=f"{name}.log",
                   what=f"nbd-shim {profile} {store or ''}".strip())


def std_shim(b):
    """nbd-shim standard (null), shared by the shim sections."""
    return b.need("std_shim", lambda: shim(b, "std_shim", "standard", "null", b.o.size))


def tcmu(b, name, store):
    """tcmu-shim --store STORE of --tcmu-size on NAME.sock."""
    return b.start(servers.tcmu_shim, b.o.tcmu_shim, b.path(f"{name}.sock"), store=store,
                   size=b.o.tcmu_size, log=f"{name}.log", what=f"tcmu-shim {store}")


# ------------------------------------------------------------ clients

def builtin(b, sid, label, uri, job, server=None, env=None):
    """fio's own nbd engine on URI."""
    return lambda r: b.fio(sid, label, r, ["--ioengine=nbd", f"--uri={uri}"] + job,
                           server, env)


def engine(b, sid, label, uri, job, server=None, extra=()):
    """This engine on URI, recorded as LABEL."""
    return lambda r: b.fio(sid, label, r, b.engine_args(uri, *job, *extra), server)


def probe(b, sid, label, srv, qd=64, bs=4096, mix=None, server=None):
    return lambda r: b.probe(sid, label, r, probe_where(srv), qd, bs, mix, server)


def rounds(b, *clients):
    """The rounds of a section: CLIENTS (each a function of the round)
    in turn."""
    for r in range(1, b.o.rounds + 1):
        bench_run.in_turn(r, [lambda c=c: c(r) for c in clients])


# ------------------------------------------------------------ engine sections

def randread4k_qd16(sid, net):
    def run(b):
        text = NET_TEXT[net]
        b.record("section", sid, f"4 KiB randread QD16, nbdkit null, {text}")
        b.record("target", sid, "cpu_us_per_io", "torus", "builtin", "<=", 0.55)
        # IOPS >= builtin; the server is the bottleneck, so 5% is left for noise.
        b.record("target", sid, "iops", "torus", "builtin", ">=", 0.95)
        b.record("ratio", sid, "clat_mean_us", "torus", "builtin")
        b.record("probe", sid, "probe", f"pipe-probe over the {text}, 4 KiB reads at QD16, no fio")
        b.record("ratio", sid, "iops", "torus", "probe")
        b.record("ratio", sid, "server_cpu_us_per_io", "torus", "probe")
        srv = null_server(b, net)
        job = ["--rw=randread", "--bs=4k", "--iodepth=16"]
        rounds(b, builtin(b, sid, "builtin", srv.uri, job, srv),
               engine(b, sid, "torus", srv.uri, job, srv),
               probe(b, sid, "probe", srv, 16, 4096, server=srv))
    return run


def randrw64k_qd64(sid, net, mix=None):
    """fio's 50/50 mix, or MIX% reads (75: the torus document's mix)."""
    def run(b):
        text = NET_TEXT[net]
        title = "64 KiB randrw QD64" + (f" with {mix}% reads (the torus document's mix)"
                                        if mix else "")
        b.record("section", sid, f"{title}, nbdkit null, {text}")
        b.record("target", sid, "cpu_us_per_io", "torus", "builtin", "<=", 0.6)
        b.record("ratio", sid, "iops", "torus", "builtin")
        b.record("spread", sid, "cpu_us_per_io", "torus", "<=", 1.25, "builtin")
        b.record("spread", sid, "cpu_us_per_io", "builtin")
        b.record("probe", sid, "probe", f"pipe-probe over the {text}, 64 KiB at QD64, the same "
                 f"mix ({mix or 50}% reads), no fio")
        b.record("ratio", sid, "iops", "torus", "probe")
        b.record("ratio", sid, "server_cpu_us_per_io", "torus", "probe")
        srv = null_server(b, net)
        job = ["--rw=randrw"] + ([f"--rwmixread={mix}"] if mix else []) + \
            ["--bs=64k", "--iodepth=64"]
        rounds(b, builtin(b, sid, "builtin", srv.uri, job, srv),
               engine(b, sid, "torus", srv.uri, job, srv),
               probe(b, sid, "probe", srv, 64, 65536, mix or 50, server=srv))
    return run


def randread4k_qd1(sid, net):
    def run(b):
        text = NET_TEXT[net]
        b.record("section", sid, f"4 KiB randread QD1, nbdkit null, {text}")
        # as it comes (no busy-polling), and busy-polling when asked for
        b.record("ratio", sid, "lat_mean_us", "torus", "builtin")
        b.record("ratio", sid, "cpu_us_per_io", "torus", "builtin")
        # On total latency (fio's lat): fio stamps the built-in engine's issue
        # time after its ->queue has sent the request (it has no ->commit), so
        # that engine's clat leaves the send out; ours is stamped before it.
        b.record("target", sid, "lat_mean_us", "torus-poll", "builtin", "<=", 0.7)
        b.record("ratio", sid, "clat_mean_us", "torus-poll", "builtin")
        b.record("ratio", sid, "cpu_us_per_io", "torus-poll", "builtin")
        # the floor: pipe-probe busy-polling, no fio (its time per read)
        b.record("ratio", sid, "lat_mean_us", "probe-poll", "builtin")
        b.record("probe", sid, "probe-poll", f"pipe-probe -p over the {text}, busy-polling, "
                 "4 KiB reads at QD1, no fio")
        b.record("ratio", sid, "lat_mean_us", "torus-poll", "probe-poll")
        srv = null_server(b, net)
        job = ["--rw=randread", "--bs=4k", "--iodepth=1"]
        rounds(b, builtin(b, sid, "builtin", srv.uri, job),
               engine(b, sid, "torus", srv.uri, job),
               engine(b, sid, "torus-poll", srv.uri, job, extra=["--poll_us=50"]),
               lambda r: b.probe_qd1(sid, "probe-poll", r, probe_where(srv)))
    return run


def ceiling_qd64(b):
    """The engine against the transport's ceiling: pipe-probe and the
    engine take turns on one nbd-shim standard (null); the shim's CPU per
    I/O shows which side runs out first."""
    sid = "ceiling_qd64"
    b.record("section", sid, "4 KiB randread QD64, Unix socket, nbd-shim standard (null): "
             "the engine vs pipe-probe (lean pipelined client)")
    b.record("target", sid, "iops", "torus", "probe", ">=", 0.8)
    b.record("ratio", sid, "server_cpu_us_per_io", "torus", "probe")
    b.record("ratio", sid, "cpu_us_per_io", "torus", "probe")
    b.record("probe", sid, "probe", "pipe-probe over the Unix socket, 4 KiB reads at QD64, "
             "no fio")
    # a shim of its own, so that its CPU is this section's alone
    srv = shim(b, "ceiling_shim", "standard", "null", b.o.size)
    # fio's own cost per I/O on this job (its null engine): with
    # pipe-probe's, about the least any fio engine can spend per I/O here
    b.record("ratio", sid, "cpu_us_per_io", "fio-null", "probe")
    job = ["--rw=randread", "--bs=4k", "--iodepth=64"]
    rounds(b, probe(b, sid, "probe", srv, server=srv),
           engine(b, sid, "torus", srv.uri, job, srv),
           lambda r: b.fio(sid, "fio-null", r, ["--ioengine=null", f"--size={b.o.size}"] + job))


def timeline_pairs(b, sid, uri, server, lean):
    """What timeline=DIR costs: on and off as two jobs of one fio run
    (side by side they share every change of the VM's speed, which runs
    taken in turn do not: those moved each other by ±20%), the job listed
    first alternating, then LEAN (a client) each round. The records go to
    a tmpfs: on a disk the page cache's writeback competes for CPU."""
    tl = b.path("timeline")
    if os.access("/dev/shm", os.W_OK):
        tl = tempfile.mkdtemp(prefix="torus-timeline.", dir="/dev/shm")
    b.record("target", sid, "cpu_us_per_io", "on", "off", "<=", 1.05)
    b.record("ratio", sid, "iops", "on", "off")
    b.record("ratio", sid, "clat_mean_us", "on", "off")
    try:
        for r in range(1, b.o.rounds + 1):
            jobs = ["--name=on", f"--timeline={tl}", "--name=off"]
            if r % 2 == 0:
                jobs = ["--name=off", "--name=on", f"--timeline={tl}"]
            b.fio_jobs(sid, r, "both", b.engine_args(uri, "--rw=randread", "--bs=4k",
                                                     "--iodepth=16") + jobs, server)
            lean(r)
    finally:
        shutil.rmtree(tl, ignore_errors=True)


def timeline_cost(b):
    sid = "timeline_cost"
    b.record("section", sid, "4 KiB randread QD16, nbd-shim standard (null), Unix socket: two "
             "jobs side by side in one fio run, the engine with timeline=DIR on a tmpfs (on) "
             "and without (off)")
    b.record("probe", sid, "probe", "pipe-probe over the Unix socket to the same nbd-shim, "
             "4 KiB reads at QD32 (the two jobs' QD16 together), no fio")
    b.record("ratio", sid, "iops", "both", "probe")
    srv = shim(b, "tl_shim", "standard", "null", b.o.size)
    timeline_pairs(b, sid, srv.uri, srv, probe(b, sid, "probe", srv, 32, 4096, server=srv))


def timeline_cost_tcmu(b):
    sid = "timeline_cost_tcmu"
    b.record("section", sid, f"4 KiB randread QD16, tcmu-shim --store null ({b.o.tcmu_size}):"
             " two jobs side by side in one fio run, the engine with timeline=DIR on a tmpfs "
             "(on) and without (off)")
    b.record("probe", sid, "ring-client", "ring-client --bench over a ring to the same "
             "tcmu-shim, 4 KiB random reads at QD32, no fio")
    b.record("ratio", sid, "iops", "both", "ring-client")
    srv = tcmu(b, "tl_tcmu", "null")
    timeline_pairs(b, sid, srv.uri, srv,
                   lambda r: b.ring_client(sid, "ring-client", r, srv.socket, srv))


def read256k_qd64(b):
    sid = "read256k_qd64"
    b.record("section", sid, f"256 KiB sequential read QD64 vs nbdcopy --no-extents of "
             f"{b.o.size}, nbdkit null")
    b.record("target", sid, "bw_mib", "torus", "nbdcopy", ">=", 1.0)
    b.record("ratio", sid, "bw_mib", "torus", "builtin")
    b.record("ratio", sid, "cpu_us_per_io", "torus", "builtin")
    b.record("probe", sid, "probe", "pipe-probe over the Unix socket, 256 KiB random reads at "
             "QD64, no fio")
    b.record("ratio", sid, "bw_mib", "torus", "probe")
    srv = null_server(b, "unix")
    job = ["--rw=read", "--bs=256k", "--iodepth=64"]
    rounds(b, builtin(b, sid, "builtin", srv.uri, job, srv),
           engine(b, sid, "torus", srv.uri, job, srv),
           lambda r: b.nbdcopy(sid, r, srv.uri),
           probe(b, sid, "probe", srv, 64, 262144, server=srv))


# ------------------------------------------------------------ transports

TRANSPORT_JOBS = {
    # work: (fio's job, its text, pipe-probe's QD, block size, read mix)
    "4k": (["--rw=randread", "--bs=4k", "--iodepth=16"], "4 KiB randread QD16", 16, 4096, None),
    "64k": (["--rw=randrw", "--bs=64k", "--iodepth=64"], "64 KiB randrw QD64", 64, 65536, 50),
}


def probe_text(net, qd, bs, mix, whom=""):
    return (f"pipe-probe over the {NET_TEXT[net]}{whom}, {bs // 1024} KiB at QD{qd}"
            + (f" ({mix}% reads)" if mix else "") + ", no fio")


def transports_plain(sid, net, work):
    """One server (nbdkit null over NET) and three clients inside fio: the
    engine's native transport (torus), the engine with transport=libnbd
    (libnbd), fio's nbd engine (builtin, itself on libnbd); and pipe-probe.
    libnbd / torus is what a general client library costs next to the lean
    one inside the same glue; libnbd / builtin the glue's own cost."""
    def run(b):
        job, text, qd, bs, mix = TRANSPORT_JOBS[work]
        b.record("section", sid, f"{text}, nbdkit null, {NET_TEXT[net]}: the engine's native "
                 "transport (torus), the engine with transport=libnbd (libnbd), fio's nbd "
                 "engine (builtin)")
        for rec in [("cpu_us_per_io", "libnbd", "torus"), ("cpu_us_per_io", "builtin", "torus"),
                    ("cpu_us_per_io", "libnbd", "builtin"), ("iops", "libnbd", "torus"),
                    ("iops", "builtin", "torus"), ("clat_mean_us", "libnbd", "torus"),
                    ("clat_mean_us", "builtin", "torus"),
                    ("server_cpu_us_per_io", "libnbd", "torus")]:
            b.record("ratio", sid, *rec)
        b.record("probe", sid, "probe", probe_text(net, qd, bs, mix, " to the same server"))
        b.record("ratio", sid, "iops", "torus", "probe")
        b.record("ratio", sid, "iops", "libnbd", "probe")
        srv = null_server(b, net)
        rounds(b, engine(b, sid, "torus", srv.uri, job, srv),
               engine(b, sid, "libnbd", srv.uri, job, srv, ["--transport=libnbd"]),
               builtin(b, sid, "builtin", srv.uri, job, srv),
               probe(b, sid, "probe", srv, qd, bs, mix, server=srv))
    return run


def transports_tls(sid, net, work):
    """What TLS costs each client that has it, as TLS / plain (and TLS -
    plain) of the same client on a plain and a TLS-only nbdkit null over
    NET: the engine with transport=libnbd over certificates (libnbd-tls)
    and a PSK (libnbd-psk), fio's nbd engine over certificates
    (builtin-tls: it takes them from libnbd's default directory,
    $HOME/.pki/libnbd, run with HOME set to one made for it; as root libnbd
    looks in /etc/pki/libnbd instead, and finding none does TLS without
    checking the server: the same cipher, the same cost per I/O). fio's
    engine cannot use a PSK and the native transport has no TLS; the lean
    probe runs on the plain server (pipe-probe speaks no TLS)."""
    def run(b):
        job, text, qd, bs, mix = TRANSPORT_JOBS[work]
        b.record("section", sid, f"{text}, nbdkit null, {NET_TEXT[net]}: TLS (certificates, "
                 "PSK) against plain, the engine with transport=libnbd (libnbd-*) and fio's nbd "
                 "engine (builtin-*)")
        tls_labels = ("libnbd-tls", "libnbd-psk", "builtin-tls")
        for l in tls_labels:
            plain = l.split("-")[0] + "-plain"
            b.record("ratio", sid, "cpu_us_per_io", l, plain)
            b.record("diff", sid, "cpu_us_per_io", l, plain)
        for l in tls_labels:
            b.record("ratio", sid, "iops", l, l.split("-")[0] + "-plain")
        b.record("ratio", sid, "clat_mean_us", "libnbd-tls", "libnbd-plain")
        b.record("ratio", sid, "clat_mean_us", "builtin-tls", "builtin-plain")
        b.record("ratio", sid, "server_cpu_us_per_io", "libnbd-tls", "libnbd-plain")
        b.record("diff", sid, "server_cpu_us_per_io", "libnbd-tls", "libnbd-plain")
        b.record("ratio", sid, "cpu_us_per_io", "libnbd-tls", "builtin-tls")
        b.record("probe", sid, "probe", probe_text(net, qd, bs, mix, " to the plain server") +
                 "; TLS has no lean probe (pipe-probe speaks no TLS)")
        b.record("ratio", sid, "iops", "libnbd-plain", "probe")
        plain = null_server(b, net)
        certs = null_tls_server(b, net, "certs")
        psk = null_tls_server(b, net, "psk")
        cert_dir, psk_file, home = b.tls_keys()
        libnbd = ["--transport=libnbd"]
        rounds(b, engine(b, sid, "libnbd-plain", plain.uri, job, plain, libnbd),
               engine(b, sid, "libnbd-tls", certs.uri, job, certs,
                      libnbd + [f"--tls_certificates={cert_dir}"]),
               engine(b, sid, "libnbd-psk", psk.uri, job, psk,
                      libnbd + [f"--tls_psk_file={psk_file}", "--tls_username=torus"]),
               builtin(b, sid, "builtin-plain", plain.uri, job, plain),
               builtin(b, sid, "builtin-tls", certs.uri, job, certs, env={"HOME": home}),
               probe(b, sid, "probe", plain, qd, bs, mix, server=plain))
    return run


def unix_and_tcp(make, sid, work):
    """The section MAKE(sid, net, work) over the Unix socket, then over TCP
    loopback as SID_tcp, one after the other."""
    def run(b):
        make(sid, "unix", work)(b)
        make(f"{sid}_tcp", "tcp", work)(b)
    return run


def fio_nbd_builds(b):
    """fio's nbd engine built alone, with the series of upstream/fio/ and
    without, from one configured tree (FIO_SRC, default .deps/fio: the
    installed fio's) by scripts/fio-patched.sh --engine-only, for the fio
    on PATH: {"patched": .so, "unpatched": .so}. Both are loaded by the
    same fio binary, so the two differ by the series alone."""
    out = {}
    src = ["--src", os.environ["FIO_SRC"]] if os.environ.get("FIO_SRC") else []
    for label, unpatched in (("patched", []), ("unpatched", ["--unpatched"])):
        dest = b.path(f"fio-nbd-{label}")
        r = subprocess.run([FIO_PATCHED, "--engine-only", *src, *unpatched, dest],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise bench_run.BenchError(f"{r.stdout}{r.stderr}scripts/fio-patched.sh "
                                       f"--engine-only {' '.join(unpatched)} failed (above)")
        out[label] = os.path.join(dest, "engines", "fio-nbd.so")
    with open(b.path("fio-nbd-patched/FIO-VERSION-FILE")) as f:
        tree = f.read().split("=")[-1].strip()
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    if fio != tree:
        raise bench_run.BenchError(f"fio on PATH is {fio}, the tree is {tree}: the engines "
                                   "must be built against the tree of the very fio that loads "
                                   "them (FIO_SRC=its configured tree)")
    return out


def fio_nbd_series(b):
    """What the series of upstream/fio/ costs fio's own nbd engine: the
    engine with it and without, each built alone from the installed fio's
    tree and loaded by that fio, in turn each round."""
    sos = fio_nbd_builds(b)
    srv = null_server(b, "unix")
    jobs = {"fio_nbd_series": ("4 KiB randread QD16", ["--rw=randread", "--bs=4k",
                                                         "--iodepth=16"]),
            "fio_nbd_series_64k": ("64 KiB randrw QD64 (50/50)", ["--rw=randrw", "--bs=64k",
                                                                  "--iodepth=64"])}
    for sid, (title, job) in jobs.items():
        b.record("section", sid, f"{title}, nbdkit null, Unix socket: fio's nbd engine with "
                 "the series of upstream/fio/ (patched) and without (unpatched), both built "
                 "alone from the installed fio's tree and loaded by that fio")
        b.record("ratio", sid, "cpu_us_per_io", "patched", "unpatched")
        b.record("diff", sid, "cpu_us_per_io", "patched", "unpatched")
        b.record("ratio", sid, "iops", "patched", "unpatched")
        b.record("ratio", sid, "clat_mean_us", "patched", "unpatched")
        for label in sos:
            b.record("spread", sid, "cpu_us_per_io", label)
            b.record("spread", sid, "iops", label)
        rounds(b, *(lambda r, sid=sid, job=job, so=so, label=label: b.fio(
            sid, label, r, [f"--ioengine={so}", f"--uri={srv.uri}"] + job, srv)
            for label, so in sos.items()))


# ------------------------------------------------------------ shim sections

def shim_std_qd64(b):
    sid = "shim_std_qd64"
    b.record("section", sid, "4 KiB randread QD64 through the engine: nbd-shim standard (null) "
             "vs nbdkit null")
    b.record("target", sid, "iops", "shim", "nbdkit", ">=", 2.0)
    b.record("ratio", sid, "cpu_us_per_io", "shim", "nbdkit")
    b.record("probe", sid, "probe", "pipe-probe over the Unix socket to nbd-shim standard, "
             "4 KiB reads at QD64, no fio")
    b.record("ratio", sid, "iops", "shim", "probe")
    null, std = null_server(b, "unix"), std_shim(b)
    job = ["--rw=randread", "--bs=4k", "--iodepth=64"]
    auto = ["--handshake=auto"]
    rounds(b, engine(b, sid, "nbdkit", null.uri, job, null, auto),
           engine(b, sid, "shim", std.uri, job, std, auto),
           probe(b, sid, "probe", std, server=std))


def shim_probe(b):
    sid = "shim_probe"
    b.record("section", sid, "4 KiB read QD64 by pipe-probe (no engine): nbd-shim standard "
             "(null) vs nbdkit null")
    b.record("ratio", sid, "iops", "shim", "nbdkit")
    b.record("probe", sid, "shim", "the section is the probe: pipe-probe over the Unix socket, "
             "4 KiB reads at QD64, no fio")
    null, std = null_server(b, "unix"), std_shim(b)
    rounds(b, probe(b, sid, "nbdkit", null, server=null), probe(b, sid, "shim", std, server=std))


def shim_docs(b):
    """Each profile's IOPS on the documents' workloads, memory store."""
    sz = "1G"
    works = {"torus64k": (["--rw=randrw", "--rwmixread=75", "--bs=64k", "--iodepth=64"], 64,
                          65536),
             "torus4k": (["--rw=randrw", "--rwmixread=75", "--bs=4k", "--iodepth=64"], 64, 4096),
             "zeroos4k": (["--rw=randrw", "--rwmixwrite=80", "--bs=4k", "--iodepth=4"], 4, 4096)}
    b.record("section", "shim_doc_torus64k", f"torus document: 64 KiB randrw QD64 rwmixread=75 "
             f"({sz}), memory store")
    b.record("ratio", "shim_doc_torus64k", "iops", "torus", "standard")
    b.record("section", "shim_doc_torus4k", "torus document, 4 KiB variant: 4 KiB randrw QD64 "
             f"rwmixread=75 ({sz}), memory store")
    b.record("ratio", "shim_doc_torus4k", "iops", "torus", "standard")
    b.record("section", "shim_doc_zeroos4k", f"0-Disk document: 4 KiB randrw QD4 rwmixwrite=80 "
             f"({sz}), memory store (and 8 + 1 redis)")
    b.record("ratio", "shim_doc_zeroos4k", "iops", "zeroos", "standard")
    for d, (_, qd, bs) in works.items():
        b.record("probe", f"shim_doc_{d}", "probe", f"pipe-probe over the Unix socket to "
                 f"nbd-shim standard, {bs // 1024} KiB reads at QD{qd}, no fio")
        b.record("ratio", f"shim_doc_{d}", "iops", "standard", "probe")
    torus = shim(b, "doc_torus", "coreos", size="2G", extra=["--replicas", "2"])
    torus1g = shim(b, "doc_torus_1g", "coreos", size="2G",
                   extra=["--replicas", "2", "--bandwidth", "1gbit", "--shape-at", "storage"])
    b.record("ratio", "shim_doc_torus64k", "iops", "torus-1gbit", "standard")
    b.record("ratio", "shim_doc_torus4k", "iops", "torus-1gbit", "standard")
    zeroos = shim(b, "doc_zeroos", "zeroos", size="2G")
    std = shim(b, "doc_std", "standard", size="2G")
    redis = None
    if shutil.which("redis-server"):
        b.record("ratio", "shim_doc_zeroos4k", "iops", "zeroos-redis", "standard")
        # 8 storage + 1 metadata, as in document 004
        rs = [b.start(servers.redis_server, b.path(f"redis{i}"), log=f"redis{i}.log",
                      what=f"redis-server {i}") for i in range(9)]
        redis = shim(b, "doc_zeroos_redis", "zeroos", size="2G",
                     store="redis:" + ",".join(r.address for r in rs[:8]),
                     extra=["--redis-meta", rs[8].address, "--vdisk", "bench"])
    auto = ["--handshake=auto"]
    size = [f"--size={sz}"]

    def clients(d, first):
        job, qd, bs = works[d]
        sid = f"shim_doc_{d}"
        return first + [engine(b, sid, "standard", std.uri, job + size, std, auto),
                        probe(b, sid, "probe", std, qd, bs, server=std)]

    def fio_on(d, label, srv):
        return engine(b, f"shim_doc_{d}", label, srv.uri, works[d][0] + size, extra=auto)
    for r in range(1, b.o.rounds + 1):
        for d in ("torus64k", "torus4k"):
            cs = clients(d, [fio_on(d, "torus", torus), fio_on(d, "torus-1gbit", torus1g)])
            bench_run.in_turn(r, [lambda c=c: c(r) for c in cs])
        first = [fio_on("zeroos4k", "zeroos", zeroos)]
        if redis:
            first.append(fio_on("zeroos4k", "zeroos-redis", redis))
        cs = clients("zeroos4k", first)
        bench_run.in_turn(r, [lambda c=c: c(r) for c in cs])


# ------------------------------------------------------------ TCMU sections

def tcmu_vs_nbd_qd32(b):
    sid = "tcmu_vs_nbd_qd32"
    size = b.o.tcmu_size
    job = ["--rw=randread", "--bs=4k", "--iodepth=32", f"--size={size}"]
    b.record("section", sid, f"4 KiB randread QD32 through the engine, memory stores of {size}: "
             "TCMU ring (tcmu-shim) vs NBD over a Unix socket (nbd-shim standard)")
    b.record("target", sid, "iops", "tcmu", "nbd", ">=", 1.5)
    b.record("ratio", sid, "cpu_us_per_io", "tcmu", "nbd")
    b.record("ratio", sid, "server_cpu_us_per_io", "tcmu", "nbd")
    b.record("ratio", sid, "clat_mean_us", "tcmu", "nbd")
    b.record("probe", sid, "ring-client", "ring-client --bench over the ring to tcmu-shim memory,"
             " 4 KiB random reads at QD32, no fio")
    b.record("probe", sid, "nbd-probe", "pipe-probe over the Unix socket to nbd-shim memory, "
             "4 KiB reads at QD32, no fio")
    b.record("ratio", sid, "iops", "tcmu", "ring-client")
    b.record("ratio", sid, "iops", "nbd", "nbd-probe")
    ring = tcmu(b, "tcmu_mem", "memory")
    nbd = shim(b, "nbd_mem", "standard", "memory", size)
    b.prefill(ring.uri)
    b.prefill(nbd.uri)
    rounds(b, engine(b, sid, "tcmu", ring.uri, job, ring),
           lambda r: b.ring_client(sid, "ring-client", r, ring.socket, ring),
           engine(b, sid, "nbd", nbd.uri, job, nbd),
           probe(b, sid, "nbd-probe", nbd, 32, 4096, server=nbd))


def tcmu_ceiling_qd32(b):
    """The engine against the ring's lean driver, fio's own cost measured
    in the same rounds (its null engine at the same job) and taken away:
    engine-own is the engine's CPU per I/O less fio-null's, round by
    round."""
    sid = "tcmu_ceiling_qd32"
    job = ["--rw=randread", "--bs=4k", "--iodepth=32", f"--size={b.o.tcmu_size}"]
    b.record("section", sid, f"4 KiB randread QD32, tcmu-shim --store null ({b.o.tcmu_size}):"
             " the engine vs ring-client --bench (a lean ring driver), fio's own cost (its null"
             " engine) beside them")
    # issue 33: the engine's own work near the lean driver's
    b.record("target", sid, "cpu_us_per_io", "engine-own", "ring-client", "<=", 1.5)
    b.record("diff", sid, "cpu_us_per_io", "engine", "fio-null")
    b.record("ratio", sid, "iops", "engine", "ring-client")
    b.record("ratio", sid, "cpu_us_per_io", "engine", "ring-client")
    b.record("ratio", sid, "server_cpu_us_per_io", "engine", "ring-client")
    b.record("probe", sid, "ring-client", "ring-client --bench over the ring, 4 KiB random reads "
             "at QD32, no fio")
    ring = tcmu(b, "tcmu_null", "null")
    rounds(b, lambda r: b.fio(sid, "fio-null", r, ["--ioengine=null"] + job),
           engine(b, sid, "engine", ring.uri, job, ring),
           lambda r: b.ring_client(sid, "ring-client", r, ring.socket, ring))
    b.derive_diff(sid, "engine-own", "engine", "fio-null", "cpu_us_per_io")


def tcmu_shared_jobs(b):
    sid = "tcmu_shared_jobs"
    job = ["--rw=randread", "--bs=4k", "--iodepth=32", f"--size={b.o.tcmu_size}"]
    b.record("section", sid, f"4 KiB randread QD32 a job, tcmu-shim --store null "
             f"({b.o.tcmu_size}), numjobs 1, 2 and 4 on one device: ring=shared (the "
             "device's one ring, as the kernel's) vs ring=private (a ring and a handler "
             "thread a job)")
    for n in (1, 2, 4):
        b.record("ratio", sid, "cpu_us_per_io", f"shared-{n}", f"private-{n}")
        b.record("ratio", sid, "iops", f"shared-{n}", f"private-{n}")
        b.record("ratio", sid, "server_cpu_us_per_io", f"shared-{n}", f"private-{n}")
        b.record("spread", sid, "cpu_us_per_io", f"shared-{n}")
        b.record("spread", sid, "cpu_us_per_io", f"private-{n}")
    ring = tcmu(b, "tcmu_jobs", "null")
    # Pair by pair: each pair's rounds side by side in time.
    for n in (1, 2, 4):
        rounds(b, *(engine(b, sid, f"{mode}-{n}", ring.uri, job, ring,
                           (f"--numjobs={n}", f"--ring={mode}"))
                    for mode in ("shared", "private")))


# ------------------------------------------------------------ the table

@dataclasses.dataclass(frozen=True)
class Section:
    """One bench section: a new section is one record here."""
    name: str
    group: str          # engine, shims, tcmu, or "" (run by name only)
    needs: tuple        # programs: on $PATH, or bench_cli.Options attributes
    run: object         # run(bench_run.Bench): declares, starts its servers, runs its rounds
    what: str           # one line, for --help


NBD = ("nbdkit", "pipe_probe")
SECTIONS = {s.name: s for s in (
    Section("randread4k_qd16", "engine", NBD, randread4k_qd16("randread4k_qd16", "unix"),
            "4 KiB randread QD16, the engine vs fio's nbd engine, nbdkit null, Unix socket"),
    Section("randread4k_qd16_tcp", "engine", NBD,
            randread4k_qd16("randread4k_qd16_tcp", "tcp"), "the same over TCP loopback"),
    Section("randrw64k_qd64", "engine", NBD, randrw64k_qd64("randrw64k_qd64", "unix"),
            "64 KiB randrw QD64 (50/50), with the spread of the engine's CPU per I/O"),
    Section("randrw64k_qd64_tcp", "engine", NBD, randrw64k_qd64("randrw64k_qd64_tcp", "tcp"),
            "the same over TCP loopback"),
    Section("randrw64k_qd64_r75", "engine", NBD,
            randrw64k_qd64("randrw64k_qd64_r75", "unix", 75),
            "64 KiB randrw QD64 with 75% reads (the torus document's, jobs/randrw.fio)"),
    Section("randrw64k_qd64_r75_tcp", "engine", NBD,
            randrw64k_qd64("randrw64k_qd64_r75_tcp", "tcp", 75), "the same over TCP loopback"),
    Section("randread4k_qd1", "engine", NBD, randread4k_qd1("randread4k_qd1", "unix"),
            "4 KiB randread QD1: the engine as it is and with --poll_us=50, vs pipe-probe -p"),
    Section("randread4k_qd1_tcp", "engine", NBD, randread4k_qd1("randread4k_qd1_tcp", "tcp"),
            "the same over TCP loopback"),
    Section("read256k_qd64", "engine", NBD + ("nbdcopy",), read256k_qd64,
            "256 KiB sequential read QD64, also vs nbdcopy --no-extents of the whole server"),
    Section("ceiling_qd64", "engine", NBD + ("nbd_shim",), ceiling_qd64,
            "4 KiB randread QD64 on nbd-shim standard (null): the engine vs pipe-probe"),
    Section("timeline_cost", "engine", NBD + ("nbd_shim",), timeline_cost,
            "what timeline=DIR costs: on and off as two jobs of one fio run (nbd-shim)"),
    Section("transports_plain", "engine", NBD,
            unix_and_tcp(transports_plain, "transports_plain", "4k"),
            "4 KiB randread QD16: native transport, transport=libnbd, fio's nbd engine"),
    Section("transports_tls", "engine", NBD + ("certtool", "psktool"),
            unix_and_tcp(transports_tls, "transports_tls", "4k"),
            "the same, TLS (certificates, PSK) against plain: TLS's cost per client"),
    Section("fio_nbd_series", "engine", ("nbdkit",), fio_nbd_series,
            "fio's nbd engine with the series of upstream/fio/ vs without, 4 KiB QD16 and "
            "64 KiB QD64"),
    Section("shim_std_qd64", "shims", NBD + ("nbd_shim",), shim_std_qd64,
            "4 KiB randread QD64: nbd-shim standard (null) vs nbdkit null (target >= 2x)"),
    Section("shim_probe", "shims", NBD + ("nbd_shim",), shim_probe,
            "the same two servers measured by pipe-probe (informational)"),
    Section("shim_docs", "shims", NBD + ("nbd_shim",), shim_docs,
            "each nbd-shim profile on the documents' workloads (torus, 0-Disk; redis when "
            "installed)"),
    Section("tcmu_vs_nbd_qd32", "tcmu", NBD + ("nbd_shim", "tcmu_shim", "ring_client"),
            tcmu_vs_nbd_qd32, "4 KiB randread QD32: the TCMU ring vs NBD (nbd-shim), memory "
            "stores (target >= 1.5x)"),
    Section("tcmu_ceiling_qd32", "tcmu", ("tcmu_shim", "ring_client"), tcmu_ceiling_qd32,
            "4 KiB randread QD32 on tcmu-shim null: the engine (fio's null engine's cost "
            "taken away) vs ring-client --bench (target <= 1.5x)"),
    Section("timeline_cost_tcmu", "tcmu", ("tcmu_shim", "ring_client"), timeline_cost_tcmu,
            "timeline_cost over the ring to tcmu-shim null"),
    Section("tcmu_shared_jobs", "tcmu", ("tcmu_shim",), tcmu_shared_jobs,
            "4 KiB randread QD32, numjobs 1/2/4 on one tcmu-shim null: ring=shared vs "
            "ring=private"),
    # run by name only: in every group the page would take some 40 minutes more
    Section("transports_plain_64k", "", NBD,
            unix_and_tcp(transports_plain, "transports_plain_64k", "64k"),
            "transports_plain with fio's 50/50 64 KiB randrw at QD64 (by name only)"),
    Section("transports_tls_64k", "", NBD + ("certtool", "psktool"),
            unix_and_tcp(transports_tls, "transports_tls_64k", "64k"),
            "transports_tls with 64 KiB randrw at QD64 (by name only)"),
)}


def groups():
    """{group: [section ids]}: each group of SECTIONS, and "all" of them
    (every section but those run by name only)."""
    out = {}
    for s in SECTIONS.values():
        if s.group:
            out.setdefault(s.group, []).append(s.name)
    out["all"] = [n for g in list(out) for n in out[g]]
    return out


def sections_text():
    """The sections for --help, from their records."""
    return "\n".join(f"  {s.name:23} {s.what}" for s in SECTIONS.values())


def main(argv=None):
    return bench_cli.main(sys.argv[1:] if argv is None else argv, SECTIONS, groups(),
                          sections_text())
