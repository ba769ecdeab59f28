"""scripts/compare's paths: one record of PATHS per way to the storage,
with the function that sets it up and runs the job through it (on the
host, or in scripts/guest), and run_path() that runs one and tears it
down. A new path is one record here (CONTRIBUTING.md)."""

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import procs
import servers
import timeline_runs
from compare_job import HERE
from compare_run import INSTALL, PathFailed, Skip, log, run_cmd, run_job, run_on_device

# the command (it runs itself in the guest, and again under the system python)
SCRIPT = os.path.join(HERE, "compare")
# the environment the documents' jobs are scaled with (jobs/README.md),
# passed on into a guest
JOB_ENV = ("TORUS_SIZE", "TORUS_RUNTIME", "TORUS_NRFILES")


def links_libnbd(engine):
    """Whether the engine ENGINE was built with transport=libnbd: it then
    needs libnbd.so (its dynamic section names it)."""
    try:
        with open(engine, "rb") as f:
            return b"libnbd.so" in f.read()
    except OSError:
        return False


def engine_in_guest(ctx, path, res):
    uri = ctx.guest_target()
    res["notes"].append(f"in the guest (--engine-in-guest), to the server as {uri}")
    return run_in_guest(ctx, path, res, ["--uri", uri], guest_opts=["--net"])


def path_engine_nbd(ctx, stack, res):
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-nbd", res)
    watch = [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-nbd",
                   {"ioengine": f"external:{ctx.engine}", "uri": ctx.target}, watch=watch)


def path_engine_libnbd(ctx, stack, res):
    """The engine on the same server through transport=libnbd: what a
    general client library costs next to the native transport inside the
    same glue (and the one engine path that reaches a TLS server)."""
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    if not links_libnbd(ctx.engine):
        raise Skip(f"{ctx.engine} has no transport=libnbd (built without libnbd-dev: "
                   "scripts/deps.sh, then meson setup again)")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-libnbd", res)
    res["notes"].append("transport=libnbd")
    watch = [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-libnbd",
                   {"ioengine": f"external:{ctx.engine}", "uri": ctx.target,
                    "transport": "libnbd"}, watch=watch)


def path_engine_tcmu(ctx, stack, res):
    ctx.need("fio")
    ctx.need_file(ctx.engine, "libtorus.so")
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    if ctx.args.engine_in_guest and not ctx.in_guest:
        return engine_in_guest(ctx, "engine-tcmu", res)
    sock = os.path.join(ctx.tmp, "tcmu.sock")
    shim = servers.tcmu_shim(ctx.args.tcmu_shim, sock, store=f"nbd:{ctx.target}",
                             log=ctx.server_log or ctx.out("servers.log"), log_header=True,
                             what="tcmu-shim (nbd store)",
                             timeline=timeline_runs.round_dir(ctx, "engine-tcmu")
                             if ctx.args.timeline else None)
    stack.callback(shim.stop)
    res["notes"].append(f"tcmu-shim --store nbd:{ctx.target}")
    watch = [shim.pid] + [s.pid for s in ctx.servers]
    return run_job(ctx, "engine-tcmu",
                   {"ioengine": f"external:{ctx.engine}", "uri": shim.uri}, watch=watch)


def path_kernel_loop(ctx, stack, res):
    ctx.need("fio", "nbdfuse", "losetup")
    ctx.need_root("kernel-loop")
    missing = ctx.modules_missing(BY_NAME["kernel-loop"].modules)
    if missing:
        raise Skip(f"this kernel lacks {', '.join(missing)} (modprobe loop fuse)")
    mnt = os.path.join(ctx.tmp, "fuse")
    os.makedirs(mnt, exist_ok=True)
    flog_name = ctx.rout("kernel-loop", "nbdfuse.log")
    flog = open(flog_name, "w")
    stack.callback(flog.close)
    fuse = subprocess.Popen([ctx.tool("nbdfuse"), mnt, ctx.target], stdin=subprocess.DEVNULL,
                            stdout=flog, stderr=flog)

    def stop_fuse():
        if os.path.ismount(mnt):
            subprocess.run(["umount", mnt], capture_output=True)
        procs.let_end(fuse, 5)
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    stack.callback(stop_fuse)
    nbdfile = os.path.join(mnt, "nbd")
    deadline = time.monotonic() + 15
    while not (os.path.ismount(mnt) and os.path.exists(nbdfile)):
        if fuse.poll() is not None:
            with open(flog_name, errors="replace") as f:
                said = " ".join(f.read().split())[-200:]
            raise PathFailed(f"nbdfuse exited ({procs.status_text(fuse.returncode)}) "
                             f"before mounting: {said or 'it said nothing'} (libnbd, and so "
                             "nbdfuse, cannot negotiate with some servers, such as the "
                             "torus and 0-Disk ones)")
        if time.monotonic() > deadline:
            raise PathFailed("nbdfuse did not mount the export within 15 s")
        time.sleep(0.05)
    dev = run_cmd(["losetup", "--find", "--show", "--direct-io=on", nbdfile],
                  "losetup --direct-io=on")
    stack.callback(lambda: subprocess.run(["losetup", "-d", dev], capture_output=True))
    log(f"kernel-loop: {ctx.target} -> nbdfuse {nbdfile} -> {dev}")
    try:
        dio = run_cmd(["losetup", "--noheadings", "-O", "DIO", dev], "losetup -O DIO")
        if dio.strip() != "1":
            res["notes"].append("the loop device fell back to buffered I/O (DIO=0)")
    except PathFailed:
        pass
    res["notes"].append(f"nbdfuse {mnt}/nbd + losetup --direct-io=on {dev}")
    watch = [fuse.pid] + [s.pid for s in ctx.servers]
    return run_on_device(ctx, stack, res, "kernel-loop", dev, watch=watch)


def tcmu_kernel_native(ctx, stack, res, store):
    """LIO user backstore + tcm_loop on this kernel, tcmu-shim --uio with
    STORE; fio on the /dev/sdX."""
    ctx.need("fio")
    ctx.need_root("kernel-tcmu")
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    tk = os.path.join(HERE, "tcmu-kernel")
    name = f"cmp{os.getpid() % 100000}"
    size = str(ctx.size)
    uio = run_cmd([tk, "setup", "--name", name, "--size", size], "tcmu-kernel setup", 120)
    shim_holder = {}

    def teardown():
        subprocess.run([tk, "teardown", "--name", name], capture_output=True, timeout=120)
        shim = shim_holder.get("shim")
        if shim is not None:
            procs.let_end(shim, 5)     # removing the backstore ends it
    stack.callback(teardown)
    slog = ctx.rout("kernel-tcmu", "shim.log")
    argv = [ctx.args.tcmu_shim, "--uio", uio, "--store", store, "--log", slog]
    if store in ("memory", "null"):
        argv += ["--size", size]
    shim = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    shim_holder["shim"] = shim
    deadline = time.monotonic() + 10
    while True:
        try:
            with open(slog) as f:
                if "serving" in f.read():
                    break
        except OSError:
            pass
        if shim.poll() is not None:
            raise PathFailed(f"tcmu-shim --uio {uio} exited "
                             f"({procs.status_text(shim.returncode)}); see "
                             f"{os.path.basename(slog)}")
        if time.monotonic() > deadline:
            raise PathFailed(f"tcmu-shim did not serve {uio} within 10 s")
        time.sleep(0.05)
    sd = run_cmd([tk, "attach", "--name", name, "--timeout", "120"], "tcmu-kernel attach", 180)
    log(f"kernel-tcmu: tcmu-shim --uio {uio} --store {store} -> tcm_loop {sd}")
    res["notes"].append(f"tcmu-shim --uio {uio} --store {store}, tcm_loop {sd}")
    return run_on_device(ctx, stack, res, "kernel-tcmu", sd, watch=[shim.pid])


def run_in_guest(ctx, path, res, extra, guest_opts=()):
    """Run this script inside scripts/guest for PATH (--in-guest), the
    results folder shared; returns the figures, with res['where'] set to
    guest-tcg or guest-kvm."""
    env = [f"--env={k}" for k in JOB_ENV if k in os.environ]
    timeout = ctx.seconds * 3 + 600
    cmd = [ctx.guest, "--timeout", str(timeout), "--share", ctx.results,
           "--mem", str(ctx.args.guest_mem)] + env + list(guest_opts) + [
           "--", "/usr/bin/python3", SCRIPT,
           os.path.abspath(ctx.args.job), "--in-guest", "--paths", path,
           "--results", ctx.results, "--seconds", str(ctx.seconds), "--size", str(ctx.size),
           "--round", str(ctx.round),
           "--engine", ctx.engine, "--fio", ctx.fio, "--tcmu-shim", ctx.args.tcmu_shim,
           "--nbd-shim", ctx.args.nbd_shim or "", "--fs", ctx.fs,
           "--mount-options", ctx.args.mount_options] + extra + \
        (["--as-written"] if ctx.args.as_written else []) + \
        (["--job-direct"] if ctx.args.job_direct else []) + \
        (["--timeline"] if ctx.args.timeline else [])
    log(f"{path}: in the guest (scripts/guest; a boot takes seconds)")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    accel = None
    said = []                                  # scripts/guest's own messages
    for line in proc.stderr:
        sys.stderr.write("  [guest] " + line)
        m = re.match(r"guest: (TCG|KVM) \(", line)
        if m:
            accel = m.group(1).lower()
        elif line.startswith("guest: "):
            said.append(line[7:].strip())
    stdout = proc.stdout.read()
    rc = proc.wait()
    res["where"] = f"guest-{accel or '?'}"
    res["functional_only"] = accel != "kvm"
    frag = ctx.out(f"{path}.guest-result.json")
    if os.path.exists(frag):
        with open(frag) as f:
            inner = json.load(f)
        os.unlink(frag)
        res["notes"] += inner.get("notes", [])
        if inner.get("filesystem"):
            res["filesystem"] = inner["filesystem"]
        if inner["status"] == "skipped":
            raise Skip("in the guest: " + inner["reason"])
        if inner["status"] != "ok":
            raise PathFailed("in the guest: " + inner.get("reason", "failed"))
        return inner["figures"]
    raise PathFailed(guest_failure(rc, said, stdout, timeout))


def guest_failure(rc, said, stdout, timeout):
    """Why a run in scripts/guest left no result, from its exit status and
    its own 'guest:' lines."""
    if rc == 124:
        why = f"scripts/guest timed out (exit 124, --timeout {timeout} s)"
    elif rc == 125:
        why = "the guest failed before the command ran (scripts/guest exit 125)"
    else:
        why = f"scripts/guest exited {rc} without a result"
    if said and rc in (124, 125):
        why += ": " + " / ".join(said[-2:])
    if stdout.strip():
        why += f"; it printed: {stdout.strip()[-300:]}"
    return why


def path_kernel_tcmu(ctx, stack, res):
    if ctx.in_guest:
        return tcmu_kernel_native(ctx, stack, res, f"nbd:{ctx.target}")
    where = ctx.kernel_where("kernel-tcmu", BY_NAME["kernel-tcmu"].modules)
    ctx.need_file(ctx.args.tcmu_shim, "tcmu-shim")
    if where == "native":
        return tcmu_kernel_native(ctx, stack, res, f"nbd:{ctx.target}")
    uri = ctx.guest_target()
    res["notes"].append(f"the guest's tcmu-shim reaches the server as {uri} (user-mode network)")
    return run_in_guest(ctx, "kernel-tcmu", res, ["--uri", uri], guest_opts=["--net"])


def path_kernel_nbd(ctx, stack, res):
    script = os.path.join(HERE, "nbd-kernel")
    if not os.access(script, os.X_OK):
        raise Skip("not built yet: scripts/nbd-kernel does not exist")
    where = "native" if ctx.in_guest else ctx.kernel_where("kernel-nbd", BY_NAME["kernel-nbd"].modules)
    if where == "guest":
        uri = ctx.guest_target()
        res["notes"].append(f"the guest's nbd-client reaches the server as {uri} "
                            "(user-mode network)")
        return run_in_guest(ctx, "kernel-nbd", res, ["--uri", uri], guest_opts=["--net"])
    ctx.need("fio", "nbd-client")
    ctx.need_root("kernel-nbd")
    dev = run_cmd([script, "attach", ctx.target], "nbd-kernel attach", 120)
    stack.callback(lambda: subprocess.run([script, "detach", dev], capture_output=True,
                                          timeout=120))
    log(f"kernel-nbd: {ctx.target} -> nbd-client -> {dev}")
    res["notes"].append(f"nbd-client (scripts/nbd-kernel) {dev}")
    return run_on_device(ctx, stack, res, "kernel-nbd", dev,
                         watch=[s.pid for s in ctx.servers])


def path_guest_virtio(ctx, stack, res):
    if ctx.in_guest:
        dev = os.environ.get("TORUS_GUEST_DISK")
        if not dev:
            raise PathFailed("the guest has no NBD disk (TORUS_GUEST_DISK is not set)")
        ctx.need("fio")
        log(f"guest-virtio: qemu's NBD client -> virtio-blk {dev}")
        res["notes"].append(f"qemu --nbd-disk (raw, cache=none) as {dev} in the guest")
        return run_on_device(ctx, stack, res, "guest-virtio", dev)
    if ctx.args.kernel == "native":
        raise Skip("--kernel native: guest-virtio always needs a guest (scripts/guest)")
    try:
        helptext = subprocess.run([ctx.guest, "--help"], capture_output=True, text=True,
                                  timeout=30).stdout
    except OSError:
        helptext = ""
    if "--nbd-disk" not in helptext:
        raise Skip("not built yet: scripts/guest cannot attach an NBD export as a virtio disk")
    if not shutil.which("qemu-system-x86_64"):
        raise Skip(f"qemu is missing: {INSTALL['qemu-system-x86_64']}")
    # qemu runs on the host: its NBD client reaches the host's server itself
    return run_in_guest(ctx, "guest-virtio", res, [], guest_opts=["--nbd-disk", ctx.target])


@dataclasses.dataclass(frozen=True)
class Path:
    """One way to the storage: a new path is one record here."""
    name: str
    transport: str          # "nbd" or "tcmu": the table's and the picture's grouping
    baseline: str           # the engine path on the same transport (None: an engine)
    where: str              # "host", "native-or-guest" (--kernel) or "guest"
    modules: tuple          # the kernel modules it needs natively
    runner: object          # runner(ctx, stack, res) -> figures; raises Skip, PathFailed
    what: str               # one line, for --list


PATHS = (
    Path("engine-nbd", "nbd", None, "host", (), path_engine_nbd,
         "libtorus.so over NBD to the server"),
    Path("engine-libnbd", "nbd", "engine-nbd", "host", (), path_engine_libnbd,
         "libtorus.so with transport=libnbd (the NBD client library) to the server; "
         "costed against engine-nbd"),
    Path("engine-tcmu", "tcmu", None, "host", (), path_engine_tcmu,
         "libtorus.so over a TCMU ring to tcmu-shim --store nbd:<server>"),
    Path("kernel-nbd", "nbd", "engine-nbd", "native-or-guest", ("nbd",), path_kernel_nbd,
         "nbd-client (scripts/nbd-kernel) attaches the export as /dev/nbdN; fio with "
         "libaio, direct I/O"),
    Path("kernel-tcmu", "tcmu", "engine-tcmu", "native-or-guest",
         ("configfs", "target_core_mod", "target_core_user", "uio", "tcm_loop"),
         path_kernel_tcmu, "LIO's user backstore served by tcmu-shim --uio, tcm_loop's "
         "/dev/sdX; fio with libaio, direct I/O"),
    Path("kernel-loop", "nbd", "engine-nbd", "host", ("loop", "fuse"), path_kernel_loop,
         "nbdfuse shows the export as a file, losetup --direct-io=on makes /dev/loopN of it "
         "(one hop more than kernel-nbd, through FUSE); fio with libaio, direct I/O"),
    Path("guest-virtio", "nbd", "engine-nbd", "guest", (), path_guest_virtio,
         "qemu's NBD client as the guest's virtio-blk disk; fio in the guest"),
)
BY_NAME = {p.name: p for p in PATHS}
WHERE = {"host": "on this machine", "native-or-guest": "natively or in the guest",
         "guest": "in the guest"}


def paths_text():
    """The paths for --help, from their records."""
    return "\n".join(textwrap.fill(f"{p.name:13} {p.what} ({WHERE[p.where]})", 78,
                                    initial_indent="  ", subsequent_indent=" " * 16)
                      for p in PATHS)
NAMES = [p.name for p in PATHS]


def run_path(ctx, path):
    res = {"path": path, "transport": BY_NAME[path].transport, "status": "ok", "reason": None,
           "where": "native", "functional_only": False, "notes": [], "figures": None}
    t0 = time.monotonic()
    log(f"{path}: setting up")
    with contextlib.ExitStack() as stack:      # tear-downs, in reverse, always
        try:
            res["figures"] = BY_NAME[path].runner(ctx, stack, res)
            if os.path.exists(ctx.rout(path, "json")):
                res["fio_json"] = os.path.basename(ctx.rout(path, "json"))
        except Skip as e:
            res["status"], res["reason"] = "skipped", str(e)
        except (PathFailed, procs.HarnessError, OSError, subprocess.SubprocessError) as e:
            res["status"], res["reason"] = "failed", str(e)
        except Exception as e:                 # a bug here: keep the other paths going
            import traceback
            traceback.print_exc()
            res["status"], res["reason"] = "failed", f"internal error: {e!r}"
        finally:
            if res["status"] == "ok":
                log(f"{path}: tearing down")
    dt = time.monotonic() - t0
    if res["status"] == "ok":
        f = res["figures"]
        clat = ("not recorded by fio" if f["clat_mean_us"] is None
                else f"{f['clat_mean_us']:.1f} us")
        log(f"{path}: {f['iops']:.0f} IOPS, {f['bw_mib']:.1f} MiB/s, "
            f"mean clat {clat} ({dt:.1f} s)")
    else:
        log(f"{path}: {res['status']}: {res['reason']}")
    return res
