#!/usr/bin/env python3
"""scripts/compare, short: the paths that run natively on a root machine
with loop and FUSE (engine-nbd, engine-tcmu, kernel-loop), 2 s each, against
the default nbd-shim memory server. Checks non-zero figures, fio's JSON per
path, results.json, the picture, the table, and that a path asked for but
not run (guest-virtio: here it stays out of the guest) is listed with a
reason. kernel-loop is only required when we are root and nbdfuse, losetup,
/dev/fuse and /dev/loop-control are there; otherwise it must be skipped with
a reason. Exit 77 (meson's skip) when the engine, the shims or fio are
missing."""

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


def main():
    for f, what in ((ENGINE, "libtorus.so"), (NBD_SHIM, "nbd-shim"), (TCMU_SHIM, "tcmu-shim")):
        if not os.path.exists(f):
            skip(f"{what} is not built ({f})")
    if not shutil.which("fio"):
        skip("fio is not installed")
    loop_ok = (os.geteuid() == 0 and shutil.which("nbdfuse") and shutil.which("losetup")
               and os.path.exists("/dev/fuse") and os.path.exists("/dev/loop-control"))
    with tempfile.TemporaryDirectory(prefix="torus-compare-") as tmp:
        job = os.path.join(tmp, "mix.fio")
        with open(job, "w") as f:
            f.write(JOB)
        res = os.path.join(tmp, "results")
        # --kernel native: guest-virtio (and any kernel path) must not boot a guest here
        cmd = [os.path.join(SRC, "scripts", "compare"), job, "--seconds", "2", "--size", "64M",
               "--paths", "engine-nbd,engine-tcmu,kernel-loop,guest-virtio",
               "--kernel", "native", "--results", res, "--engine", ENGINE,
               "--nbd-shim", NBD_SHIM, "--tcmu-shim", TCMU_SHIM]
        if os.environ.get("TORUS_SANITIZE") == "1":
            # The sanitized engine is a module in an uninstrumented fio: fio
            # gets the ASan runtime first, as tests/lib.sh's wrapper does.
            rt = os.path.realpath(os.environ["TORUS_ASAN_RUNTIME"])
            wrap = os.path.join(tmp, "fio")
            with open(wrap, "w") as f:
                f.write("#!/bin/sh\nexport LD_PRELOAD=%s "
                        "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\"\n"
                        "exec %s \"$@\"\n" % (rt, shutil.which("fio")))
            os.chmod(wrap, 0o755)
            cmd += ["--fio", wrap]
        print("+", " ".join(cmd), flush=True)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
        except subprocess.TimeoutExpired:
            fail("scripts/compare did not finish within 150 s")
        print(r.stdout)
        print(r.stderr, file=sys.stderr)
        if r.returncode != 0:
            fail(f"scripts/compare exited {r.returncode}")
        with open(os.path.join(res, "results.json")) as f:
            summary = json.load(f)
        by = {p["path"]: p for p in summary["paths"]}
        must = ["engine-nbd", "engine-tcmu"] + (["kernel-loop"] if loop_ok else [])
        for name in must:
            p = by.get(name)
            if not p or p["status"] != "ok":
                fail(f"{name} did not run: {p and p['reason']}")
            fig = p["figures"]
            for key in ("iops", "bw_mib", "clat_mean_us", "clat_p50_us", "clat_p99_us",
                        "clat_p99.9_us", "fio_cpu_us_per_io"):
                if not fig.get(key) or fig[key] <= 0:
                    fail(f"{name}: {key} is {fig.get(key)!r}")
            data_file = os.path.join(res, f"{name}.json")
            with open(data_file) as f:
                text = f.read()
            if '"jobs"' not in text:
                fail(f"{data_file} holds no fio JSON")
            if name.startswith("kernel-"):
                jobtext = open(os.path.join(res, f"{name}.fio")).read()
                if "ioengine=libaio" not in jobtext or "\nconns=1" in jobtext:
                    fail(f"{name}.fio was not rewritten for libaio:\n{jobtext}")
        if loop_ok:
            c = by["kernel-loop"].get("vs_engine") or {}
            if c.get("baseline") != "engine-nbd" or not c.get("latency_ratio"):
                fail(f"kernel-loop has no cost against engine-nbd: {c}")
        else:
            if by["kernel-loop"]["status"] != "skipped" or not by["kernel-loop"]["reason"]:
                fail("kernel-loop could not run here but was not skipped with a reason")
        for p in summary["paths"]:
            if p["status"] == "skipped" and not (p["reason"] or "").strip():
                fail(f"{p['path']} skipped without a reason")
            if p["status"] == "failed":
                fail(f"{p['path']} failed: {p['reason']}")
        gv = by["guest-virtio"]
        if gv["status"] != "skipped":
            fail(f"guest-virtio with --kernel native on this kernel: {gv['status']}")
        png = os.path.join(res, "report.png")
        try:
            import matplotlib  # noqa: F401
            have_mpl = True
        except ImportError:
            have_mpl = os.access("/usr/bin/python3", os.X_OK) and subprocess.run(
                ["/usr/bin/python3", "-c", "import matplotlib"],
                capture_output=True).returncode == 0
        if have_mpl and not (os.path.exists(png) and os.path.getsize(png) > 1000):
            fail("no report.png")
        report = open(os.path.join(res, "report.md")).read()
        for name in must + ["guest-virtio"]:
            if f"| {name} |" not in report:
                fail(f"report.md has no row for {name}")
        if loop_ok and "kernel-loop" in report and "(engine-nbd)" not in report:
            fail("report.md shows no cost against the engine")
    print("PASS: scripts/compare ran " + ", ".join(must) + "; skipped paths have reasons")


if __name__ == "__main__":
    main()
