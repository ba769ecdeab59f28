#!/usr/bin/env python3
"""Static checks of jobs/*.fio against scripts/docs_tests.py (used by test-parse.sh).

- every test of the documents (jobs/documents.tsv) has its job file in jobs/, an entry in
  docs_tests.TESTS with the same job and server, and a mention in docs/documents.md;
- every job file is listed once in docs_tests.TESTS (once per document test: the TCMU
  runs of a test, jobs/documents.tsv's transports, reuse its job), and every listed job
  exists;
- every transport jobs/documents.tsv gives a test has its run in docs_tests.TESTS
  (<id> over NBD, <id>-tcmu over TCMU), and no run has a transport the table does not
  give; docs/documents.md names every run;
- no job names an ioengine or a target (ioengine, filename, directory, uri);
- every job has the header: which document, the original, how to run, how to scale;
- every size=, runtime= and nrfiles= is written "${TORUS_X}+DEFAULT" with DEFAULT the
  document's value as docs_tests records it (so an unset variable gives the document's
  value: see jobs/README.md).
"""
import os
import re
import sys

src = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(src, "scripts"))
import docs_tests  # noqa: E402

JOBS = os.path.join(src, "jobs")
errors = []


def err(msg):
    errors.append(msg)


def fio_bytes(text):
    """A fio size as fio reads it (k, m, g = powers of 1024)."""
    m = re.fullmatch(r"(\d+)([kKmMgGtT]?)", text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())


files = sorted(f for f in os.listdir(JOBS) if f.endswith(".fio"))
# one run per document test (its NBD run); other transports reuse its job
BASES = [t for t in docs_tests.TESTS if t["id"] == t["base"]]
listed = [t["job"] for t in BASES]
for t in docs_tests.TESTS:
    if t["id"] != t["base"]:
        try:
            base = docs_tests.by_id(t["base"])
        except KeyError:
            err(f"{t['id']}: its base {t['base']} is not in scripts/docs_tests.py")
            continue
        if (t["job"], t["server"]) != (base["job"], base["server"]):
            err(f"{t['id']}: runs {t['job']} on {t['server']}, its base {base['job']} "
                f"on {base['server']}")
        if t["id"] != f"{t['base']}-{t['transport']}":
            err(f"{t['id']}: a {t['transport']} run of {t['base']} is named "
                f"{t['base']}-{t['transport']}")
for f in files:
    if listed.count(f) != 1:
        err(f"{f}: listed {listed.count(f)} times in scripts/docs_tests.py (want once)")
for f in listed:
    if f not in files:
        err(f"scripts/docs_tests.py lists {f}, which is not in jobs/")
if "randrw.fio" not in files:
    err("jobs/randrw.fio is missing")

for t in BASES:
    path = os.path.join(JOBS, t["job"])
    if not os.path.exists(path):
        continue
    text = open(path).read()
    lines = text.splitlines()
    header = []
    for line in lines:
        if not line.startswith(";"):
            break
        header.append(line)
    head = "\n".join(header)
    for word in ("Document", "Original", "Reported", "Run", "Scale"):
        if not re.search(rf"^; {word}\b", head, re.M):
            err(f"{t['job']}: the header has no '; {word}' paragraph")
    if "seeds/" not in head:
        err(f"{t['job']}: the header does not name the document (seeds/...)")
    if t["kind"] == "filesystem" and "Filesystem test" not in head:
        err(f"{t['job']}: a filesystem test whose header does not say so")
    body = [l.strip() for l in lines if l.strip() and not l.lstrip().startswith((";", "#"))]
    for l in body:
        key = l.split("=", 1)[0].strip().lower()
        if key in ("ioengine", "filename", "directory", "uri", "conns"):
            err(f"{t['job']}: names '{key}' (the engine or kernel path is chosen on the "
                "command line)")
    values = {}
    for l in body:
        if "=" not in l:
            continue
        key, val = (x.strip() for x in l.split("=", 1))
        if key in ("size", "runtime", "nrfiles"):
            var = {"size": "TORUS_SIZE", "runtime": "TORUS_RUNTIME",
                   "nrfiles": "TORUS_NRFILES"}[key]
            m = re.fullmatch(r"\$\{" + var + r"\}\+(\w+)", val)
            if not m:
                err(f"{t['job']}: {key}={val} is not written ${{{var}}}+DEFAULT")
                continue
            values.setdefault(key, set()).add(m.group(1))
    if t["size"]:
        want = t["size"]
        got = {fio_bytes(v) for v in values.get("size", set())}
        if got != {want}:
            err(f"{t['job']}: size defaults {sorted(got)}, the document's is {want}")
    if t["size"] is None and "size" in values:
        err(f"{t['job']}: has size= but docs_tests has none")
    got = {int(v) for v in values.get("runtime", set())}
    if got != {t["runtime"]}:
        err(f"{t['job']}: runtime defaults {sorted(got)}, the document's is {t['runtime']}")
    if t.get("nrfiles"):
        got = {int(v) for v in values.get("nrfiles", set())}
        if got != {t["nrfiles"]}:
            err(f"{t['job']}: nrfiles defaults {sorted(got)}, want {t['nrfiles']}")

# the documents: every test in jobs/documents.tsv (the list behind docs/documents.md)
# has its job file, its docs_tests entry, and its place in docs/documents.md
TSV = os.path.join(JOBS, "documents.tsv")
want_tests = {}
rows = []
with open(TSV) as f:
    lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
columns = lines[0].split("\t") if lines else []
for n, line in enumerate(lines[1:], 2):
    fields = line.split("\t")
    if len(fields) != len(columns):
        err(f"jobs/documents.tsv: row {n} has {len(fields)} fields, want {len(columns)}")
        continue
    row = dict(zip(columns, fields))
    rows.append(row)
    want_tests.setdefault(row["doc"], set()).add(row["id"])
if sorted(want_tests) != ["000", "001", "002", "003", "004"] or len(rows) < 17:
    err(f"jobs/documents.tsv: {len(rows)} tests of documents {sorted(want_tests)} "
        "(want the 17 tests of documents 000 to 004)")
have = {}
for t in docs_tests.TESTS:
    have.setdefault(t["doc"][:3], set()).add(t["id"])
for doc, ids in want_tests.items():
    if not ids <= have.get(doc, set()):
        err(f"document {doc}: no test for {sorted(ids - have.get(doc, set()))}")
documents_md = open(os.path.join(src, "docs", "documents.md")).read()
for row in rows:
    if row["job"] not in files:
        err(f"jobs/documents.tsv: {row['id']}: no job file jobs/{row['job']}")
    try:
        t = docs_tests.by_id(row["id"])
    except KeyError:
        continue
    if t["job"] != row["job"] or t["server"] != row["server"]:
        err(f"{row['id']}: jobs/documents.tsv says {row['job']} on {row['server']}, "
            f"scripts/docs_tests.py {t['job']} on {t['server']}")
    for word in (row["id"], row["job"]):
        if word not in documents_md:
            err(f"docs/documents.md does not name {word}")
    transports = row.get("transports", "").split(",")
    if transports[:1] != ["nbd"] or not set(transports) <= set(docs_tests.TRANSPORTS):
        err(f"jobs/documents.tsv: {row['id']}: transports {row.get('transports')!r} "
            f"(want nbd first, of {sorted(docs_tests.TRANSPORTS)})")
    runs = {v["transport"]: v["id"] for v in docs_tests.variants(row["id"])}
    if sorted(runs) != sorted(transports):
        err(f"{row['id']}: jobs/documents.tsv gives transports {transports}, "
            f"scripts/docs_tests.py runs it over {sorted(runs)}")
    for transport, run in runs.items():
        if run not in documents_md:
            err(f"docs/documents.md does not name {run} (its {transport} run)")
sweep = [m["job"] for m in docs_tests.by_id("lustre-bs-sweep")["metrics"]]
if sweep != ["bs-1m", "bs-4m", "bs-8m", "bs-16m"]:
    err(f"lustre-bs-sweep: sections {sweep}")

for e in errors:
    print("check_jobs:", e, file=sys.stderr)
print(f"check_jobs: {len(files)} job files, {len(BASES)} tests "
      f"({len(docs_tests.TESTS)} runs), "
      f"{len(errors)} problems")
sys.exit(1 if errors else 0)
