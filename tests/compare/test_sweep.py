#!/usr/bin/env python3
"""scripts/compare --sweep run for real: a 2 x 2 grid (bs=4k,64k x
iodepth=1,8) of engine-nbd, engine-tcmu and kernel-loop (as root with
nbdfuse, losetup, FUSE and loop; skipped with a reason otherwise) against
the default nbd-shim memory server, in seconds.

1. Uninterrupted, 2 rounds of 1 s per path and cell: every cell of every
   path in results.json with its figures, medians and min-max from its
   rounds; each cell's fio JSON ran the cell's bs and iodepth; kernel-loop's
   extra share of latency per cell; report.md's crossover lines (along
   iodepth for each bs, along bs for each iodepth) before its tables, its
   matrices with min-max; report.png; a progress line per cell.
2. Interrupted: the same grid in 1 round, Ctrl-C (SIGINT to its process
   group, as a terminal sends it) once a cell has finished: exit 130, the
   finished cells kept and reported, the run's temporary folder (FUSE mount,
   socket) gone. Then scripts/compare --resume DIR: the cells left run, the
   finished ones are not re-run, and the cells, their paths and statuses are
   those of the uninterrupted run.

Exit 77 (meson's skip) when the engine, the shims, fio or matplotlib are
missing."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_compare import (ENGINE, FIGURES, JOB, NBD_SHIM, SRC, TCMU_SHIM,  # noqa: E402
                          fail, fio_wrapper, have_matplotlib, loop_missing, skip)

GRID = ["bs=4k,64k", "iodepth=1,8"]
IDS = ["bs4k_iodepth1", "bs4k_iodepth8", "bs64k_iodepth1", "bs64k_iodepth8"]
PATHS = ["engine-nbd", "engine-tcmu", "kernel-loop"]


def command(tmp, res, rounds):
    job = os.path.join(tmp, "mix.fio")
    with open(job, "w") as f:
        f.write(JOB)
    return [os.path.join(SRC, "scripts", "compare"), job, "--sweep"] + GRID + [
        "--paths", ",".join(PATHS), "--rounds", str(rounds), "--seconds", "1",
        "--size", "64M", "--kernel", "native", "--results", res, "--engine", ENGINE,
        "--nbd-shim", NBD_SHIM, "--tcmu-shim", TCMU_SHIM] + fio_wrapper(tmp)


def run(cmd, timeout, want=0):
    print("+", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"scripts/compare --sweep did not finish within {timeout} s")
    print(f"(took {time.monotonic() - t0:.1f} s)")
    print(r.stdout)
    print(r.stderr, file=sys.stderr)
    if r.returncode != want:
        fail(f"scripts/compare exited {r.returncode}, not {want}")
    return r


def load(res):
    with open(os.path.join(res, "results.json")) as f:
        return json.load(f)


def shape(state):
    """What must be the same between two sweeps of one grid: the cells in
    order, their parameters, and each path's status."""
    return [(c["id"], c["params"], [(p["path"], p["status"]) for p in c["paths"]])
            for c in state["cells"]]


def check_full(res, stderr, loop_ok, rounds, ran=IDS):
    """The sweep in RES has every cell and path with its figures, report.md
    its crossover lines, report.png; its progress (STDERR) went through the
    cells RAN and no others."""
    state = load(res)
    if [c["id"] for c in state["cells"]] != IDS or state["interrupted"]:
        fail(f"results.json's cells: {[c['id'] for c in state['cells']]}, interrupted "
             f"{state['interrupted']}")
    must = PATHS if loop_ok else PATHS[:2]
    for c in state["cells"]:
        by = {p["path"]: p for p in c["paths"]}
        if list(by) != PATHS:
            fail(f"{c['id']}: paths {list(by)}")
        if not loop_ok and (by["kernel-loop"]["status"] != "skipped" or
                            not by["kernel-loop"]["reason"]):
            fail(f"{c['id']}: kernel-loop could not run here but was not skipped with a reason")
        for name in must:
            p = by[name]
            if p["status"] != "ok" or len(p["rounds"]) != rounds:
                fail(f"{c['id']} {name}: {p['status']} {p['reason']}, "
                     f"{len(p['rounds'])} rounds")
            for key in FIGURES:
                vals = [r["figures"].get(key) for r in p["rounds"]]
                lo, hi = p["range"][key]
                if not all(v and v > 0 for v in vals) or \
                        [lo, hi] != [min(vals), max(vals)] or not lo <= p["figures"][key] <= hi:
                    fail(f"{c['id']} {name}: {key} {p['figures'][key]} {[lo, hi]} of {vals}")
            with open(os.path.join(res, c["dir"], f"{name}.r1.json")) as f:
                text = f.read()
            data = json.JSONDecoder().raw_decode(text, text.index("{"))[0]
            opts = data["jobs"][0]["job options"]
            if opts.get("bs") != c["params"]["bs"] or \
                    opts.get("iodepth") != c["params"]["iodepth"]:
                fail(f"{c['id']} {name} ran bs={opts.get('bs')} iodepth={opts.get('iodepth')}")
        if loop_ok:
            k = (c.get("kernel") or {}).get("kernel-loop") or {}
            s = k.get("latency_share")
            if k.get("baseline") != "engine-nbd" or not s or len(s) != 3 or \
                    not s[1] <= s[0] <= s[2]:
                fail(f"{c['id']}: kernel-loop's extra share of latency: {k}")
    with open(os.path.join(res, "report.md")) as f:
        report = f.read()
    head = report.split("## Extra share")[0]
    if loop_ok:
        lines = re.findall(r"^- kernel-loop \(against engine-nbd\), (bs=\w+|iodepth=\d+): "
                           r"(below 10% (?:from \w+=\w+|not in the grid)); "
                           r"(below 25% (?:from \w+=\w+|not in the grid))$", head, re.M)
        if sorted(x[0] for x in lines) != ["bs=4k", "bs=64k", "iodepth=1", "iodepth=8"]:
            fail(f"report.md's first lines do not state kernel-loop's crossover:\n{head}")
        if not re.search(r"^\| 4k \| -?\d+% \(-?\d+%–-?\d+%\)", report, re.M):
            fail("report.md's matrix of the extra share has no min–max")
    if "| bs=64k iodepth=8 | engine-tcmu |" not in report:
        fail("report.md has no figures of engine-tcmu at bs=64k iodepth=8")
    png = os.path.join(res, "report.png")
    if not (os.path.exists(png) and os.path.getsize(png) > 10000):
        fail("no report.png")
    progress = re.findall(r"sweep: cell (\d) of 4 \(bs=\w+ iodepth=\d\): elapsed \S+, "
                          r"ETA \S+", stderr)
    if progress != [str(IDS.index(i) + 1) for i in ran]:
        fail(f"progress lines for the cells {progress}, not for {ran}")
    return state


def interrupted(tmp, res, timeout):
    """The sweep stopped by SIGINT to its process group once a cell finished."""
    cmd = command(tmp, res, 1)
    print("+", " ".join(cmd), "(then Ctrl-C)", flush=True)
    with open(os.path.join(tmp, "int.err"), "w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if load(res)["cells"]:
                    break
            except (OSError, ValueError, KeyError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
                fail("the sweep to interrupt finished no cell")
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            fail("the interrupted sweep did not stop within 60 s")
        err.seek(0)
        said = err.read()
    print(said, file=sys.stderr)
    if rc != 130:
        fail(f"the interrupted sweep exited {rc}, not 130")
    if "sweep: interrupted; " not in said or f"scripts/compare --resume {res}" not in said:
        fail("the interrupted sweep did not say how to carry on")
    state = load(res)
    n = len(state["cells"])
    if not state["interrupted"] or not 1 <= n < 4 or \
            [c["id"] for c in state["cells"]] != IDS[:n]:
        fail(f"the interrupted sweep's results.json: {n} cells, {state['interrupted']}")
    with open(os.path.join(res, "report.md")) as f:
        if f"{n} of 4 cells (interrupted" not in f.read():
            fail("report.md of the interrupted sweep does not say it was")
    for tmpdir in set(re.findall(r"(/tmp/compare-[^/\s]+)/", said)):
        if os.path.exists(tmpdir):
            fail(f"the interrupted sweep left {tmpdir} behind")
    return state


def main():
    for f, what in ((ENGINE, "libtorus.so"), (NBD_SHIM, "nbd-shim"), (TCMU_SHIM, "tcmu-shim")):
        if not os.path.exists(f):
            skip(f"{what} is not built ({f})")
    if not have_matplotlib():
        skip("matplotlib is not installed (python3-matplotlib): report.png cannot be checked")
    missing = loop_missing()
    with tempfile.TemporaryDirectory(prefix="torus-sweep-") as tmp:
        full = os.path.join(tmp, "full")
        r = run(command(tmp, full, 2), 240)
        whole = check_full(full, r.stderr, missing is None, 2)
        part = os.path.join(tmp, "part")
        before = interrupted(tmp, part, 120)
        r = run([os.path.join(SRC, "scripts", "compare"), "--resume", part], 240)
        # the finished cells are not run again: no progress line of theirs
        after = check_full(part, r.stderr, missing is None, 1,
                           ran=IDS[len(before["cells"]):])
        if shape(after) != shape(whole):
            fail(f"the resumed sweep's cells differ from the uninterrupted one's:\n"
                 f"{shape(after)}\n{shape(whole)}")
        if after["cells"][:len(before["cells"])] != before["cells"]:
            fail("--resume ran a finished cell again (its results changed)")
    if missing:
        skip(f"the sweep ran engine-nbd and engine-tcmu, but not kernel-loop: {missing}")
    print("PASS: scripts/compare --sweep bs=4k,64k iodepth=1,8 of engine-nbd, engine-tcmu and "
          "kernel-loop: every cell and path with min–max, the crossover, the picture; "
          "interrupted by Ctrl-C and resumed, the same cells")


if __name__ == "__main__":
    main()
