"""scripts/compare's job: the user's fio job file rewritten for each path
(the settings every path makes, the engine's options dropped for the
kernel paths, latency recording turned back on), and the filesystem
--fs auto picks for it. No process runs here but fio --enghelp."""

import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# the engine's options (fio --enghelp), dropped from the job for kernel paths
ENGINE_OPTIONS = {"uri", "transport", "fua", "request_timeout", "conns", "handshake",
                  "structured_replies", "poll_us", "ring_size", "data_size",
                  "max_transfer", "trim_mode", "hold_batch", "ring", "timeline"}
# options every path sets itself
OVERRIDDEN = {"ioengine", "filename", "filename_format", "directory", "opendir", "runtime",
              "time_based", "group_reporting", "direct", "buffered", "output",
              "output-format"}
# what --as-written leaves to the job
AS_WRITTEN = {"runtime", "time_based", "group_reporting"}
# fio's switches that turn completion-latency recording off, and the value
# each is run with so that the table has latencies
LATENCY_SWITCHES = {"gtod_reduce": "0", "disable_clat": "0"}


def rewrite_job(src, dst, overrides, drop=(), header="scripts/compare's settings for this path"):
    """Copy the fio job file SRC to DST with the keys of OVERRIDES (and those
    in DROP) removed from every section, then OVERRIDES set in every job
    section (not [global]), under a comment HEADER. Returns the job
    sections' names."""
    with open(src) as f:
        lines = f.read().splitlines()
    drop = {k.lower() for k in drop} | {k.lower() for k in overrides}
    # first in a [global] of their own, so that the engine is known before
    # the job's own [global] names its options; then in every job section
    out, jobs = [f"; {header}", "[global]"], []
    out += [f"{k}={v}" if v is not None else k for k, v in overrides.items()]
    for line in lines:
        s = line.strip()
        m = re.fullmatch(r"\[([^\]]+)\]", s)
        if m:
            out.append(line)
            if m.group(1).strip().lower() != "global":
                jobs.append(m.group(1).strip())
                out += [f"{k}={v}" if v is not None else k for k, v in overrides.items()]
            continue
        if s and not s.startswith((";", "#")):
            key = re.split(r"[=\s]", s, 1)[0].strip().lower()
            if key in drop:
                out.append("; (scripts/compare) " + s)
                continue
        out.append(line)
    if not jobs:
        raise SystemExit(f"compare: {src} has no job section ([name] other than [global])")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    return jobs


def engine_options(ctx):
    """The engine's options, from fio --enghelp (the fixed list when that fails)."""
    try:
        r = subprocess.run([ctx.fio, f"--enghelp={ctx.engine}"], capture_output=True,
                           text=True, timeout=20)
        names = {l.split()[0] for l in r.stdout.splitlines() if l.strip()}
        if r.returncode == 0 and "uri" in names:
            return names
    except (OSError, subprocess.TimeoutExpired):
        pass
    return ENGINE_OPTIONS


def latency_off(job):
    """The settings of the fio job file JOB that turn completion-latency
    recording off (LATENCY_SWITCHES set to anything but false), as written
    there, each once: ["gtod_reduce=1"], or []."""
    found = []
    with open(job) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith((";", "#", "[")):
                continue
            key, _, val = s.partition("=")
            key, val = key.strip().lower(), val.strip()
            if key not in LATENCY_SWITCHES or val.lower() in ("0", "false", "no", "off"):
                continue
            text = f"{key}={val}" if val else key
            if text not in found:
                found.append(text)
    return found


def latency_on(found):
    """The overrides that turn back on what latency_off FOUND."""
    return {k: LATENCY_SWITCHES[k] for k in (t.split("=")[0] for t in found)}


def resolve_fs(fs, job):
    """--fs auto: ext4 when jobs/documents.tsv lists JOB as a filesystem test."""
    if fs != "auto":
        return fs, f"--fs {fs}"
    table = os.path.join(REPO, "jobs", "documents.tsv")
    try:
        with open(table) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and l[0] != "#"]
    except OSError:
        return "none", None
    head = rows[0] if rows else []
    if "job" not in head or "path" not in head:
        return "none", None
    for r in rows[1:]:
        if len(r) == len(head) and r[head.index("job")] == os.path.basename(job) and \
                os.path.dirname(job) == os.path.join(REPO, "jobs"):
            if r[head.index("path")] == "filesystem":
                return "ext4", f"jobs/documents.tsv: {r[head.index('id')]} is a filesystem test"
    return "none", None
