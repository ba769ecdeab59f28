"""Running fio and reading its JSON: the one copy, for scripts/compare,
rerun-documents, the bench and the timeline. Standard library only.

run_fio(args, json=True, env=None, timeout=None, ...) -> FioRun;
load_fio_json(path_or_text); fio_summary(data, all_jobs=False,
jobname=None); fio_figure(data, kind, ddir); clat_percentiles(data);
merged_clat_percentiles(data, pcts); fio_messages(path_or_text).

Command line (harness.py offers it too):

  fio_json.py fio-summary FILE [--percentiles] [--job NAME | --all-jobs]
      "metric value" lines of one fio run (JSON, group_reporting: one job;
      --job: the jobs named NAME; --all-jobs: every job together; fio's
      messages before the JSON are skipped): iops bw_mib cpu_us_per_io
      clat_mean_us lat_mean_us cpu_pct ios runtime_s
  fio_json.py fio-messages FILE
      what fio wrote to its --output file before the JSON object
"""

import json as _json
import os
import sys
import subprocess
import tempfile

import stats
from procs import HarnessError, cli_main, exit_with, status_text


class FioError(HarnessError):
    pass


class FioJsonError(FioError, ValueError):
    """fio's output holds no usable JSON, or not the figures asked for."""

# ------------------------------------------------------------------ fio

def _is_text(path_or_text):
    return isinstance(path_or_text, bytes) or (
        isinstance(path_or_text, str) and ("{" in path_or_text or "\n" in path_or_text))


def _read(path_or_text):
    """(text, name): a str holding '{' or a newline (or bytes) is fio's
    output itself, anything else a path to it."""
    if isinstance(path_or_text, bytes):
        return path_or_text.decode(errors="replace"), "fio's output"
    if _is_text(path_or_text):
        return path_or_text, "fio's output"
    path = os.fspath(path_or_text)
    with open(path, errors="replace") as f:
        return f.read(), path


def _json_starts(text):
    """Where fio's JSON object may start: each '{' that begins a line, then
    the first '{' anywhere."""
    starts = [0] if text.startswith("{") else []
    i = text.find("\n{")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n{", i + 1)
    first = text.find("{")
    if first >= 0 and first not in starts:
        starts.append(first)
    return starts


def load_fio_json(path_or_text, name=None):
    """fio's JSON output as an object. fio (and an engine) may print
    messages before the JSON object, and some versions text after it: both
    are skipped. PATH_OR_TEXT is a path, or the output itself (a str with
    '{' or a newline in it, or bytes). NAME is used in messages."""
    text, default_name = _read(path_or_text)
    return parse_fio_json(text, name or default_name)


def parse_fio_json(text, name="fio's output"):
    """load_fio_json() of TEXT, always fio's output itself."""
    start, obj, error = _locate_json(text)
    if start is not None:
        return obj
    if error is None:
        raise FioJsonError(f"{name}: no JSON object in fio's output")
    raise FioJsonError(f"{name}: fio's JSON does not parse: {error}")


def _locate_json(text):
    """(start, object, None) of fio's JSON object in TEXT, or (None, None,
    the first decoding error or None when nothing looked like JSON)."""
    decoder = _json.JSONDecoder()
    error = None
    for start in _json_starts(text):
        try:
            obj, _ = decoder.raw_decode(text[start:])
        except ValueError as e:
            error = error or e
            continue
        if isinstance(obj, dict):
            return start, obj, None
    return None, None, error


def fio_messages(path_or_text):
    """What fio wrote before its JSON object (all of it when there is none)."""
    text, _ = _read(path_or_text)
    return _messages(text)


def _messages(text):
    start, _, _ = _locate_json(text)
    return text if start is None else text[:start]


DDIRS = ("read", "write", "trim")


def fio_summary(data, name="fio's output", percentiles=False, all_jobs=False, jobname=None):
    """The figures of one fio run with group_reporting (exactly one job; with
    ALL_JOBS, every job of the run together; with JOBNAME, the jobs of that
    name together), read, write and trim together:
    iops, bw_mib (summed), cpu_us_per_io (fio's usr+sys % / 100 * job
    runtime, summed, / I/Os: the fio process's CPU per I/O), clat_mean_us and
    lat_mean_us (weighted by I/Os), cpu_pct (over the longest job), ios,
    runtime_s (the longest job's). With PERCENTILES, also DDIR_clat_pNN_us
    for each direction that did I/O (clat_percentiles())."""
    jobs = data.get("jobs") or []
    if jobname is not None:
        jobs = [j for j in jobs if j.get("jobname") == jobname]
        if not jobs:
            raise FioJsonError(f"{name}: no job named {jobname!r} in fio's output")
        all_jobs = True
    if len(jobs) != 1 and not all_jobs:
        raise FioJsonError(f"{name}: expected one job (group_reporting), got {len(jobs)}")
    if not jobs:
        raise FioJsonError(f"{name}: no jobs in fio's output")
    for job in jobs:
        if job.get("error"):
            raise FioJsonError(f"{name}: fio job {job.get('jobname')} error {job['error']}")
    ios = iops = bw = clat = lat = cpu_s = 0.0
    for job in jobs:
        job_ios = 0
        for ddir in DDIRS:
            d = job.get(ddir) or {}
            n = d.get("total_ios", 0)
            if not n:
                continue
            job_ios += n
            iops += d["iops"]
            bw += d["bw_bytes"]
            clat += d["clat_ns"]["mean"] * n
            lat += d["lat_ns"]["mean"] * n
        ios += job_ios
        cpu_s += (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0
    if not ios:
        raise FioJsonError(f"{name}: the job did no I/O")
    runtime_s = max(job["job_runtime"] for job in jobs) / 1000.0
    out = {
        "iops": iops,
        "bw_mib": bw / 2**20,
        "cpu_us_per_io": cpu_s / ios * 1e6,
        "clat_mean_us": clat / ios / 1e3,
        "lat_mean_us": lat / ios / 1e3,
        "cpu_pct": 100.0 * cpu_s / runtime_s if runtime_s else 0.0,
        "ios": ios,
        "runtime_s": runtime_s,
    }
    if percentiles:
        for ddir, pcts in clat_percentiles({"jobs": jobs}).items():
            for p, us in pcts.items():
                out[f"{ddir}_clat_{p}_us"] = us
    return out


def _pct_name(key):
    # fio's "99.900000" -> "p99.9"
    return "p" + (f"{float(key):.6f}".rstrip("0").rstrip("."))


def clat_percentiles(data):
    """{ddir: {"p50": us, "p99.9": us, ...}} from fio's clat_ns percentiles,
    for each direction of each job that did I/O (later jobs overwrite
    earlier ones: meant for one job)."""
    out = {}
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            d = job.get(ddir) or {}
            pct = (d.get("clat_ns") or {}).get("percentile")
            if not d.get("total_ios") or not pct:
                continue
            out[ddir] = {_pct_name(k): v / 1e3 for k, v in
                         sorted(pct.items(), key=lambda kv: float(kv[0]))}
    return out


def merged_clat_percentiles(data, percentiles=(50.0, 99.0, 99.9)):
    """({"p50": us, ...}, how): completion-latency percentiles over every
    job and direction of a run together. From fio's latency histograms
    (clat_ns "bins", present with --output-format=json+) when there are
    any: how is "bins"; otherwise from fio's own percentiles of the
    direction that did the most I/O: how is "DDIR"."""
    bins = {}
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            for k, n in (((job.get(ddir) or {}).get("clat_ns") or {}).get("bins") or {}).items():
                bins[int(k)] = bins.get(int(k), 0) + n
    if sum(bins.values()):
        return {_pct_name(p): stats.hist_percentile(bins, p / 100.0) / 1e3
                for p in percentiles}, "bins"
    best, most = None, 0
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            n = (job.get(ddir) or {}).get("total_ios", 0)
            if n > most:
                best, most = ddir, n
    per = clat_percentiles(data).get(best, {})
    return {_pct_name(p): per.get(_pct_name(p)) for p in percentiles}, best


def fio_figure(data, kind, ddir, job=None, scale=None):
    """One figure over the jobs of a fio run (those named JOB, when given),
    in direction DDIR: 'iops' (summed), 'bw_MB' (10^6 bytes/s, summed),
    'bw_MiB', or 'elapsed' (the longest job's seconds; with SCALE, a dict
    with doc_amount, scaled to that many bytes from the bytes done)."""
    jobs = data.get("jobs") or []
    if job:
        jobs = [j for j in jobs if j.get("jobname") == job]
    if not jobs:
        raise FioJsonError(f"no fio job {job or ''} in the output")
    for j in jobs:
        if j.get("error"):
            raise FioJsonError(f"fio job {j.get('jobname')} failed with error {j['error']}")
    d = [j.get(ddir) or {} for j in jobs]
    if kind == "iops":
        return sum(x.get("iops", 0.0) for x in d)
    if kind == "bw_MB":
        return sum(x.get("bw_bytes", 0) for x in d) / 1e6
    if kind == "bw_MiB":
        return sum(x.get("bw_bytes", 0) for x in d) / 2**20
    if kind == "elapsed":
        seconds = max(j.get("job_runtime", 0) for j in jobs) / 1000.0
        done = sum(x.get("io_bytes", 0) for x in d)
        if not done:
            raise FioJsonError("no I/O done")
        # scaled to the document's amount of data
        return seconds * (scale["doc_amount"] / done) if scale else seconds
    raise ValueError(kind)


class FioRun:
    """A finished fio run: returncode, data (the parsed JSON, or None),
    output (the path of fio's --output, if kept), log (the path of its
    messages, if any), text (what fio printed, when neither took it)."""

    def __init__(self, returncode, data=None, output=None, log=None, text=None):
        self.returncode = returncode
        self.data = data
        self.output = output
        self.log = log
        self.text = text


def run_fio(args, json=True, env=None, timeout=None, *, fio="fio", output=None, log=None,
            cwd=None, pin=None, progress=False, check=True):
    """Run FIO with ARGS (a list, without the program) and return a FioRun.

    json: add --output-format=json and --output=OUTPUT (a temporary file,
      removed after reading, when OUTPUT is None), and parse it (.data).
    env: variables set over ours; a value None removes one.
    log: a path for fio's stdout and stderr, which starts with the
      command line (and ENV); without it they are captured into .text.
    progress: leave fio's stdout on our terminal (its --eta line), and
      clear that line afterwards.
    pin: CPUs for taskset -c.
    check: a non-zero exit raises FioError naming fio's last messages (from
      the log and from before the JSON); a timeout always raises FioError.
    """
    argv = [fio] + [str(a) for a in args]
    tmp = None
    if json:
        if output is None:
            fd, tmp = tempfile.mkstemp(prefix="fio-", suffix=".json")
            os.close(fd)
        argv[1:1] = ["--output-format=json", f"--output={output or tmp}"]
    elif output is not None:
        argv[1:1] = [f"--output={output}"]
    out_path = output or tmp
    if pin is not None:
        argv = ["taskset", "-c", str(pin)] + argv
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = str(v)
    shown_env = {k: v for k, v in (env or {}).items() if v is not None}
    logf = None
    try:
        if log is not None:
            logf = open(log, "w")
            logf.write(" ".join(f"{k}={v}" for k, v in sorted(shown_env.items())) + " " +
                       " ".join(argv) + "\n")
            logf.flush()
            stdout, stderr = (None if progress else logf), logf
        else:
            stdout = None if progress else subprocess.PIPE
            stderr = subprocess.STDOUT if not progress else subprocess.PIPE
        try:
            r = subprocess.run(argv, env=full_env, stdout=stdout, stderr=stderr,
                               stdin=subprocess.DEVNULL, timeout=timeout, cwd=cwd,
                               errors="replace" if log is None else None,
                               text=log is None)
        except subprocess.TimeoutExpired:
            raise FioError(f"fio did not finish within {timeout} s")
        finally:
            if progress:
                sys.stdout.write("\r\033[K")
                sys.stdout.flush()
            if logf is not None:
                logf.close()
        text = None
        if log is None:
            text = (r.stdout or "") + (r.stderr or "")
        if r.returncode != 0:
            if check:
                raise FioError(_fio_failure(r.returncode, log, out_path, text))
            return FioRun(r.returncode, None, output, log, text)
        data = load_fio_json(out_path, name=os.path.basename(out_path)) if json else None
        return FioRun(0, data, output, log, text)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _fio_failure(rc, log, output, text):
    """'fio exited with status N: its last three messages (see LOG)'."""
    said = []
    sources = [(log, 1)] if log else []
    if output:
        sources.append((output, 0))
    for path, skip in sources:
        try:
            with open(path, errors="replace") as f:
                t = f.read()
        except OSError:
            continue
        if path == output:
            t = _messages(t)
        said += [l.strip() for l in t.splitlines()[skip:] if l.strip()]
    if text:
        said += [l.strip() for l in text.splitlines() if l.strip()]
    said = list(dict.fromkeys(said))[-3:]
    status = f"status {rc}" if rc > 0 else status_text(rc)
    return (f"fio exited with {status}"
            + (f": {' / '.join(said)}" if said else "")
            + (f" (see {os.path.basename(log)})" if log else ""))


# ------------------------------------------------------------------ CLI

def add_cli(sub):
    """This module's subcommands on the argparse subparsers SUB (harness.py
    offers them too)."""
    p = sub.add_parser("fio-summary", help="metric lines of one fio JSON output")
    p.add_argument("file")
    p.add_argument("--percentiles", action="store_true")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--job", help="only the jobs of this name (a run without group_reporting)")
    which.add_argument("--all-jobs", action="store_true", help="every job of the run together")
    p = sub.add_parser("fio-messages", help="what fio wrote before its JSON")
    p.add_argument("file")


def run_cli(args):
    """Run the subcommand add_cli() parsed into ARGS; its exit status."""
    if args.cmd == "fio-summary":
        with open(args.file, errors="replace") as f:
            data = parse_fio_json(f.read(), args.file)
        for k, v in fio_summary(data, args.file, args.percentiles, args.all_jobs,
                                jobname=args.job).items():
            print(f"{k} {v:.6g}")
    elif args.cmd == "fio-messages":
        with open(args.file, errors="replace") as f:
            sys.stdout.write(_messages(f.read()))
    return 0


def main(argv=None):
    return cli_main("fio_json.py", __doc__, (sys.modules[__name__],), argv)


if __name__ == "__main__":
    exit_with(main, "fio_json")
