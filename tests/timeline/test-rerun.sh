#!/bin/bash
# scripts/rerun-documents --timeline: a torus test over NBD and over TCMU
# (nbd-shim and tcmu-shim keep records: every I/O joined) and a Lustre test
# on nbdkit (no server records: the server and the wire are one phase), one
# second each; report.md has the phases, results.json a timeline per test.
# (The kernel paths' runs are compare --timeline's: timeline-compare,
# timeline-kernel; that rerun-documents asks for it is a unit test.)
. "$TORUS_SRC/tests/lib.sh"
require fio python3 nbdkit
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || python3 -c 'import matplotlib' 2>/dev/null ||
	skip "matplotlib is not installed (python3-matplotlib)"

if ! "$TORUS_SRC/scripts/rerun-documents" --engine "$ENGINE" --nbd-shim "$NBD_SHIM" \
	--tcmu-shim "$TCMU_SHIM" --short --seconds 1 --timeline --only '^(torus-randrw-4k|torus-randrw-4k-tcmu|lustre-rand-direct)$' \
	--results "$T/res" >"$T/out" 2>&1; then
	cat "$T/out" >&2
	fail "rerun-documents --timeline failed"
fi
python3 - "$T/res" <<'PY' || { cat "$T/out" >&2; fail "no timeline in the results"; }
import json, os, sys
res = sys.argv[1]
tests = {t["id"]: t for t in json.load(open(os.path.join(res, "results.json")))["tests"]}
for tid in ("torus-randrw-4k", "torus-randrw-4k-tcmu"):
    tl = tests[tid]["timeline"]
    assert "phases" in tl, (tid, tl)
    # all but a stray one: under load one I/O in thousands was once left
    # out (its server stamp beyond the slack); test-merge.sh wants all
    assert tl["server"] and tl["join_rate"] >= 0.999, (tid, tl.get("server"), tl.get("join_rate"))
    # the torus jobs set gtod_reduce=1 as the document did: fio has no latency to check
    assert tl["fio"]["ratio"] is None and tl["fio"]["total_mean_us"] > 0, (tid, tl["fio"])
    assert os.path.exists(os.path.join(res, tid + ".timeline", "timeline.json")), tid
lu = tests["lustre-rand-direct"]
assert [p["name"] for p in lu["timeline"]["phases"]] == \
    ["client submit", "server and wire", "payload", "hand back", "total"], lu["timeline"]
# rerun-documents --timeline sets lat_percentiles=1: held to fio's median
assert "fio_p50_us" in lu["timeline"]["fio"] and lu["timeline"]["fio"]["within"], lu["timeline"]["fio"]
md = open(os.path.join(res, "report.md")).read()
assert "## Where the time goes" in md
for row in ("| torus-randrw-4k (engine-nbd) | wire out |", "| torus-randrw-4k-tcmu (engine-tcmu) | storage |",
            "| lustre-rand-direct (engine-nbd) | server and wire |",
            "- torus-randrw-4k (engine-nbd): fio recorded no latency (the job sets gtod_reduce=1"):
    assert row in md, row
print("ok: lustre-rand-direct's phases against fio's latency:", round(lu["timeline"]["fio"]["ratio"], 3))
PY
echo "ok: rerun-documents --timeline"
