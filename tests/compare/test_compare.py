#!/usr/bin/env python3
"""scripts/compare, short runs checked for real figures.

  test_compare.py            the paths that run on this machine's own kernel
                             (engine-nbd, engine-tcmu, kernel-loop as root),
                             raw, then kernel-loop again on ext4 (--fs)
  test_compare.py --guest    kernel-nbd and kernel-tcmu in scripts/guest
                             (--kernel guest, on ext4), reaching the host's
                             server through the guest's network, beside the
                             engine paths on the host

Each run is 2 s per path against the default nbd-shim memory server. Checks
non-zero figures, fio's JSON per path, results.json, the picture, the table,
and that paths asked for but not run are listed with a reason. kernel-loop
is only required when we are root and nbdfuse, losetup, /dev/fuse and
/dev/loop-control are there; otherwise it must be skipped with a reason.
Exit 77 (meson's skip) when the engine, the shims, fio or (--guest) qemu
are missing."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("TORUS_BUILD") or os.path.join(SRC, "build")
ENGINE = os.path.join(BUILD, "engines", "libtorus.so")
NBD_SHIM = os.path.join(BUILD, "shims", "nbd", "nbd-shim")
TCMU_SHIM = os.path.join(BUILD, "shims", "tcmu", "tcmu-shim")
FIGURES = ("iops", "bw_mib", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99.9_us",
           "fio_cpu_us_per_io")

JOB = """[global]
rw=randrw
rwmixread=70
bs=4k
iodepth=8
size=32M
; the engine's option: kept for engine paths, dropped for kernel ones
conns=1

[mix]
"""


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def fail(why):
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def fio_wrapper(tmp):
    """The sanitized engine is a module in an uninstrumented fio: fio gets
    the ASan runtime first, as tests/lib.sh's wrapper does."""
    if os.environ.get("TORUS_SANITIZE") != "1":
        return []
    rt = os.path.realpath(os.environ["TORUS_ASAN_RUNTIME"])
    wrap = os.path.join(tmp, "fio")
    with open(wrap, "w") as f:
        f.write("#!/bin/sh\nexport LD_PRELOAD=%s "
                "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\"\n"
                "exec %s \"$@\"\n" % (rt, shutil.which("fio")))
    os.chmod(wrap, 0o755)
    return ["--fio", wrap]


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return os.access("/usr/bin/python3", os.X_OK) and subprocess.run(
            ["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode == 0


def compare(tmp, name, paths, extra, timeout):
    """One scripts/compare run; returns (results.json, report.md, results dir)."""
    job = os.path.join(tmp, "mix.fio")
    with open(job, "w") as f:
        f.write(JOB)
    res = os.path.join(tmp, name)
    cmd = [os.path.join(SRC, "scripts", "compare"), job, "--seconds", "2", "--size", "64M",
           "--paths", ",".join(paths), "--results", res, "--engine", ENGINE,
           "--nbd-shim", NBD_SHIM, "--tcmu-shim", TCMU_SHIM] + extra + fio_wrapper(tmp)
    print("+", " ".join(cmd), flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"scripts/compare did not finish within {timeout} s")
    print(r.stdout)
    print(r.stderr, file=sys.stderr)
    if r.returncode != 0:
        fail(f"scripts/compare exited {r.returncode}")
    with open(os.path.join(res, "results.json")) as f:
        summary = json.load(f)
    with open(os.path.join(res, "report.md")) as f:
        report = f.read()
    png = os.path.join(res, "report.png")
    if not (os.path.exists(png) and os.path.getsize(png) > 1000):
        fail(f"{name}: no report.png")
    for p in summary["paths"]:
        if p["status"] == "skipped" and not (p["reason"] or "").strip():
            fail(f"{p['path']} skipped without a reason")
        if p["status"] == "failed":
            fail(f"{p['path']} failed: {p['reason']}")
    return summary, report, res


def check_ran(summary, report, res, must):
    by = {p["path"]: p for p in summary["paths"]}
    for name in must:
        p = by.get(name)
        if not p or p["status"] != "ok":
            fail(f"{name} did not run: {p and p['reason']}")
        fig = p["figures"]
        for key in FIGURES:
            if not fig.get(key) or fig[key] <= 0:
                fail(f"{name}: {key} is {fig.get(key)!r}")
        data_file = os.path.join(res, f"{name}.json")
        with open(data_file) as f:
            if '"jobs"' not in f.read():
                fail(f"{data_file} holds no fio JSON")
        if name.startswith("kernel-"):
            with open(os.path.join(res, f"{name}.fio")) as f:
                jobtext = f.read()
            if "ioengine=libaio" not in jobtext or "\nconns=1" in jobtext:
                fail(f"{name}.fio was not rewritten for libaio:\n{jobtext}")
        if f"| {name} |" not in report:
            fail(f"report.md has no row for {name}")
    return by


def loop_missing():
    """Why kernel-loop (raw and on ext4) cannot run here, or None."""
    if os.geteuid() != 0:
        return "kernel-loop needs root (losetup, a FUSE mount)"
    for tool in ("nbdfuse", "losetup", "mkfs.ext4"):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/deps.sh)"
    for dev, why in (("/dev/fuse", "FUSE"), ("/dev/loop-control", "the loop driver")):
        if not os.path.exists(dev):
            return f"no {dev}: kernel-loop needs {why}"
    return None


def native():
    missing = loop_missing()
    loop_ok = missing is None
    with tempfile.TemporaryDirectory(prefix="torus-compare-") as tmp:
        # --kernel native: guest-virtio (and any kernel path) must not boot a guest here
        summary, report, res = compare(
            tmp, "raw", ["engine-nbd", "engine-tcmu", "kernel-loop", "guest-virtio"],
            ["--kernel", "native"], 150)
        must = ["engine-nbd", "engine-tcmu"] + (["kernel-loop"] if loop_ok else [])
        by = check_ran(summary, report, res, must)
        if loop_ok:
            c = by["kernel-loop"].get("vs_engine") or {}
            if c.get("baseline") != "engine-nbd" or not c.get("latency_ratio"):
                fail(f"kernel-loop has no cost against engine-nbd: {c}")
            if "(engine-nbd)" not in report:
                fail("report.md shows no cost against the engine")
        elif by["kernel-loop"]["status"] != "skipped" or not by["kernel-loop"]["reason"]:
            fail("kernel-loop could not run here but was not skipped with a reason")
        if by["guest-virtio"]["status"] != "skipped":
            fail(f"guest-virtio with --kernel native on this kernel: "
                 f"{by['guest-virtio']['status']}")
        if "| guest-virtio |" not in report:
            fail("report.md does not list the skipped guest-virtio")
        if not loop_ok:
            # what ran passed; kernel-loop, raw and on ext4, was not checked
            skip(f"scripts/compare ran {', '.join(must)}, but not kernel-loop: {missing}")
        # the documents' filesystem form: ext4 on the loop device, the job's files in it
        summary, report, res = compare(tmp, "fs", ["engine-nbd", "kernel-loop"],
                                       ["--kernel", "native", "--fs", "ext4"], 150)
        by = check_ran(summary, report, res, ["engine-nbd", "kernel-loop"])
        with open(os.path.join(res, "kernel-loop.fio")) as f:
            jobtext = f.read()
        if "\ndirectory=" not in jobtext or "\nfilename=" in jobtext:
            fail(f"kernel-loop.fio on ext4 does not use a directory:\n{jobtext}")
        fs = by["kernel-loop"].get("filesystem") or {}
        if fs != {"type": "ext4", "mount_options": "discard,noatime"}:
            fail(f"kernel-loop's filesystem in results.json: {fs}")
        if "a filesystem (ext4) made on the device" not in report:
            fail("report.md does not say the kernel paths ran on ext4")
    print("PASS: scripts/compare ran " + ", ".join(must) + ", then engine-nbd and kernel-loop "
          "on ext4 (-o discard,noatime); skipped paths have reasons")


def guest():
    if not shutil.which("qemu-system-x86_64") or not shutil.which("socat"):
        skip("qemu-system-x86_64 or socat is missing (scripts/deps.sh)")
    paths = ["engine-nbd", "engine-tcmu", "kernel-nbd", "kernel-tcmu"]
    with tempfile.TemporaryDirectory(prefix="torus-compare-guest-") as tmp:
        summary, report, res = compare(tmp, "guest", paths,
                                       ["--kernel", "guest", "--fs", "ext4"], 1100)
        by = check_ran(summary, report, res, paths)
        for name in ("kernel-nbd", "kernel-tcmu"):
            p = by[name]
            if not p["where"].startswith("guest-"):
                fail(f"{name} ran {p['where']}, not in the guest")
            if p["where"] == "guest-tcg" and not p["functional_only"]:
                fail(f"{name} ran under TCG but is not marked functional only")
            if not any("10.0.2.2" in n for n in p["notes"]):
                fail(f"{name} did not reach the host's server over the guest's network: "
                     f"{p['notes']}")
            if (p.get("filesystem") or {}).get("type") != "ext4":
                fail(f"{name} did not run on ext4: {p.get('filesystem')}")
            c = p.get("vs_engine") or {}
            if "none_because" not in c:
                fail(f"{name} in the guest was compared with the engine on the host: {c}")
        if "functional only" not in report:
            fail("report.md does not mark the guest's rows functional only")
    print("PASS: scripts/compare --kernel guest: kernel-nbd and kernel-tcmu on ext4 in the "
          "guest against the host's server (socat relay, user-mode network), beside the "
          "engine paths; functional only under TCG")


def main():
    for f, what in ((ENGINE, "libtorus.so"), (NBD_SHIM, "nbd-shim"), (TCMU_SHIM, "tcmu-shim")):
        if not os.path.exists(f):
            skip(f"{what} is not built ({f})")
    if not shutil.which("fio"):
        skip("fio is not installed")
    if not have_matplotlib():
        skip("matplotlib is not installed (python3-matplotlib): report.png cannot be checked")
    if sys.argv[1:] == ["--guest"]:
        guest()
    else:
        native()


if __name__ == "__main__":
    main()
