#!/usr/bin/env python3
"""scripts/compare, short runs checked for real figures.

  test_compare.py            the paths that run on this machine's own kernel
                             (engine-nbd, engine-tcmu, kernel-loop as root),
                             raw, then an fsync=8 job through them (the
                             syncs each issued, within 10% of each other),
                             then kernel-loop again on ext4 (--fs)
  test_compare.py --guest    kernel-nbd and kernel-tcmu in scripts/guest
                             (--kernel guest, on ext4), reaching the host's
                             server through the guest's network, beside the
                             engine paths on the host

The first run is 2 rounds of 1 s per path, the others 1 round (the guest's
boots are slow; the default of 3 rounds is checked by
tests/scripts/test_comparelib.py), against the default nbd-shim memory
server. The job sets gtod_reduce=1, which compare must turn off. Checks
non-zero figures (latencies included, and engine-tcmu's kernel's submission
and completion shares in every round), fio's JSON per path and round,
results.json with every round's figures, medians and ranges, the ratios
from each round, the picture, the table, and that paths asked for but not
run are listed with a reason. kernel-loop
is only required when we are root and nbdfuse, losetup, /dev/fuse and
/dev/loop-control are there; otherwise it must be skipped with a reason.
Exit 77 (meson's skip) when the engine, the shims, fio or (--guest) qemu
are missing."""

import json
import os
import re
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
; latency recording off: compare runs it on, and says so
gtod_reduce=1
; the engine's option: kept for engine paths, dropped for kernel ones
conns=1

[mix]
"""

# fio's sync bursts (issue 34): every path one sync per 8 writes
FSYNC_JOB = """[global]
rw=randwrite
bs=4k
iodepth=16
size=32M
fsync=8
gtod_reduce=1

[fsync8]
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


def compare(tmp, name, paths, extra, timeout, rounds=1, seconds=2, job_text=JOB):
    """One scripts/compare run; returns (results.json, report.md, results dir)."""
    job = os.path.join(tmp, f"{name}.fio")
    with open(job, "w") as f:
        f.write(job_text)
    res = os.path.join(tmp, name)
    cmd = [os.path.join(SRC, "scripts", "compare"), job, "--seconds", str(seconds),
           "--rounds", str(rounds), "--size", "64M",
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
    if summary["rounds"] != rounds or summary["order"] != paths:
        fail(f"{name}: results.json says {summary['rounds']} rounds of {summary['order']}")
    probes = summary["speed_probe_ms"]
    if len(probes) != rounds + 1 or not all(p and p > 0 for p in probes):
        fail(f"{name}: the CPU-speed probe before and after each round: {probes}")
    if "CPU-speed probe (scripts/bench_run.py's cpu_probe" not in report:
        fail(f"{name}: report.md does not give the CPU-speed probe")
    line = ("The job turns fio's latency recording off (gtod_reduce=1); compare ran it with "
            "gtod_reduce=0, so that every path's latency is measured")
    if line not in report or summary["latency"] != {"job_turns_off": ["gtod_reduce=1"],
                                                    "set": {"gtod_reduce": "0"}}:
        fail(f"{name}: the latency override is not reported: {summary['latency']}")
    return summary, report, res


def check_ran(summary, report, res, must):
    by = {p["path"]: p for p in summary["paths"]}
    rounds = summary["rounds"]
    for name in must:
        p = by.get(name)
        if not p or p["status"] != "ok":
            fail(f"{name} did not run: {p and p['reason']}")
        if len(p["rounds"]) != rounds:
            fail(f"{name}: {len(p['rounds'])} rounds in results.json, not {rounds}")
        for key in FIGURES:
            vals = [r["figures"].get(key) for r in p["rounds"]]
            if not all(v and v > 0 for v in vals):
                fail(f"{name}: {key} per round is {vals!r}")
            lo, hi = p["range"][key]
            if not lo <= p["figures"][key] <= hi or [lo, hi] != [min(vals), max(vals)]:
                fail(f"{name}: {key}'s median {p['figures'][key]} and range {[lo, hi]} "
                     f"are not those of its rounds {vals}")
        for n in range(1, rounds + 1):
            data_file = os.path.join(res, f"{name}.r{n}.json")
            with open(data_file) as f:
                if '"jobs"' not in f.read():
                    fail(f"{data_file} holds no fio JSON")
        with open(os.path.join(res, f"{name}.json")) as f:
            if '"jobs"' not in f.read():
                fail(f"{name}.json (its median round's) holds no fio JSON")
        with open(os.path.join(res, f"{name}.fio")) as f:
            jobtext = f.read()
        if "\ngtod_reduce=0\n" not in jobtext or "; (scripts/compare) gtod_reduce=1" not in jobtext:
            fail(f"{name}.fio does not turn latency recording on:\n{jobtext}")
        if name.startswith("kernel-"):
            if "ioengine=libaio" not in jobtext or "\nconns=1" in jobtext:
                fail(f"{name}.fio was not rewritten for libaio:\n{jobtext}")
        row = next((line for line in report.splitlines()
                    if line.startswith(f"| {name} |") or line.startswith(f"| {name} ‡ |")), None)
        if not row:
            fail(f"report.md has no row for {name}")
        ranged = bool(re.search(r"\(\S+–\S+\)", row))
        if (rounds > 1 and f" | {rounds} | " not in row) or (rounds > 1) != ranged:
            fail(f"report.md's row for {name} does not give {rounds} rounds' min–max: {row}")
    return by


def check_alternation(res, paths, rounds):
    """The runs happened in alternation, ABAB: by the time fio's JSON of
    each path and round says it was written."""
    runs = [(r, p) for r in range(1, rounds + 1) for p in paths]
    when = []
    for r, p in runs:
        with open(os.path.join(res, f"{p}.r{r}.json")) as f:
            text = f.read()
        data = json.JSONDecoder().raw_decode(text, text.index("{"))[0]
        when.append(data["timestamp_ms"])
    if when != sorted(when):
        fail(f"the runs were not in alternation: {sorted(zip(when, runs))}")


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


def check_syncs(tmp, paths):
    """An fsync=8 job through PATHS: each issued one sync per 8 writes
    (within 10%), none flagged in results.json or report.md."""
    summary, report, res = compare(tmp, "fsync", paths, ["--kernel", "native"], 120,
                                   seconds=1, job_text=FSYNC_JOB)
    by = check_ran(summary, report, res, paths)
    for name in paths:
        f = by[name]["figures"]
        rate = f["issued_syncs"] / f["issued_writes"] if f.get("issued_writes") else None
        print(f"{name}: {f.get('issued_writes')} writes, {f.get('issued_syncs')} syncs")
        if rate is None or abs(rate - 1 / 8) > 0.1 / 8:
            fail(f"{name} issued {f.get('issued_syncs')} syncs for {f.get('issued_writes')} "
                 "writes at fsync=8: not one per 8 within 10% (fio's sync burst?)")
        if f"| {name} | {f['issued_writes']:.0f} | {f['issued_syncs']:.0f} | " not in report:
            fail(f"report.md has no row of {name}'s syncs")
    if summary.get("issued_differ") != {} or "| **differs**" in report:
        fail(f"paths flagged for their syncs: {summary.get('issued_differ')}")


def native():
    missing = loop_missing()
    loop_ok = missing is None
    with tempfile.TemporaryDirectory(prefix="torus-compare-") as tmp:
        # --kernel native: guest-virtio (and any kernel path) must not boot a guest here
        summary, report, res = compare(
            tmp, "raw", ["engine-nbd", "engine-tcmu", "kernel-loop", "guest-virtio"],
            ["--kernel", "native"], 150, rounds=2, seconds=1)
        must = ["engine-nbd", "engine-tcmu"] + (["kernel-loop"] if loop_ok else [])
        by = check_ran(summary, report, res, must)
        check_alternation(res, must, 2)
        for name in ["engine-tcmu"] + (["kernel-loop"] if loop_ok else []):
            c = by[name].get("vs_engine") or {}
            per = [x.get("latency_ratio") for x in c.get("rounds") or []]
            if c.get("baseline") != "engine-nbd" or len(per) != 2 or not all(per) or \
                    c["range"]["latency_ratio"] != [min(per), max(per)]:
                fail(f"{name} has no cost against engine-nbd from each round: {c}")
            if f"| {name} | engine-nbd | " not in report:
                fail(f"report.md shows no cost of {name} against engine-nbd")
        # the kernel's shares: engine-tcmu's, both, every round, and said to be in its CPU
        for key in ("kernel_submission_share_us_per_io", "kernel_completion_share_us_per_io"):
            shares = [r["figures"].get(key) for r in by["engine-tcmu"]["rounds"]]
            nbd = [r["figures"].get(key) for r in by["engine-nbd"]["rounds"]]
            if not all(v and v > 0 for v in shares) or any(v is not None for v in nbd):
                fail(f"{key} per round: engine-tcmu {shares}, engine-nbd {nbd}")
        for said in ("engine-tcmu's CPU per I/O includes the kernel's shares, ",
                     "its submission share, ", "its completion share, "):
            if said not in report:
                fail(f"report.md does not say engine-tcmu's CPU holds the kernel's shares "
                     f"({said!r})")
        if not loop_ok and (by["kernel-loop"]["status"] != "skipped" or
                            not by["kernel-loop"]["reason"]):
            fail("kernel-loop could not run here but was not skipped with a reason")
        if by["guest-virtio"]["status"] != "skipped":
            fail(f"guest-virtio with --kernel native on this kernel: "
                 f"{by['guest-virtio']['status']}")
        if "| guest-virtio |" not in report:
            fail("report.md does not list the skipped guest-virtio")
        check_syncs(tmp, must)
        if not loop_ok:
            # what ran passed; kernel-loop, raw and on ext4, was not checked
            skip(f"scripts/compare ran {', '.join(must)}, but not kernel-loop: {missing}")
        # the documents' filesystem form: ext4 on the loop device, the job's files in it
        summary, report, res = compare(tmp, "fs", ["engine-nbd", "kernel-loop"],
                                       ["--kernel", "native", "--fs", "ext4"], 150, seconds=1)
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
    print("PASS: scripts/compare ran " + ", ".join(must) + " in 2 rounds with gtod_reduce "
          "turned off, an fsync=8 job through them (one sync per 8 writes on each), then "
          "engine-nbd and kernel-loop on ext4 (-o discard,noatime); skipped "
          "paths have reasons")


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
