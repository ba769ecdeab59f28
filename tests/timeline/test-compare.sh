#!/bin/bash
# Description: scripts/compare --timeline on a small job, engine-nbd,
# engine-tcmu and (when the engine has libnbd) engine-libnbd in one round
# of 1 s: results.json has each path's phases (the
# median round's, every I/O joined with its server's record, adding up to a
# total held to fio's clat and lat medians) and each round's, every
# path-round its timeline directory, report.md the table of phases,
# report.png exists.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

cat >"$T/small.fio" <<'JOB'
[global]
rw=randrw
bs=4k
iodepth=8
size=16m

[small]
JOB
# engine-libnbd: an engine path too, never "no kernel timeline"
paths=engine-nbd,engine-tcmu
"$FIO" --enghelp="$ENGINE" 2>&1 | grep -q '^tls_psk_file ' && paths+=,engine-libnbd
"$TORUS_SRC/scripts/compare" "$T/small.fio" --timeline --paths "$paths" \
	--rounds 1 --seconds 1 --size 64M --results "$T/cmp" --engine "$ENGINE" \
	--nbd-shim "$NBD_SHIM" --tcmu-shim "$TCMU_SHIM" >"$T/out" 2>&1 ||
	{ cat "$T/out" >&2; fail "scripts/compare --timeline exited non-zero"; }

python3 - "$T/cmp" <<'PY' || { cat "$T/out" >&2; fail "compare --timeline's results (above)"; }
import json, os, sys
d = sys.argv[1]
res = json.load(open(os.path.join(d, "results.json")))
bad = []
want = {"engine-nbd": ("nbd-shim", "wire out"), "engine-tcmu": ("tcmu-shim", "wake-up out"),
        "engine-libnbd": ("nbd-shim", "libnbd back")}
for r in res["paths"]:
    server, phase = want[r["path"]]
    t = r.get("timeline")
    if r["status"] != "ok" or not t or not t.get("phases"):
        bad.append(f"{r['path']}: no timeline ({r['status']}, {t})")
        continue
    names = [p["name"] for p in t["phases"]]
    if t["server"] != server or phase not in names or names[-1] != "total":
        bad.append(f"{r['path']}: phases {names} with {t['server']}, expected {server}'s")
    if t["join_rate"] != 1.0:
        bad.append(f"{r['path']}: {t['joined']} of {t['records']} I/Os joined "
                   f"({t['incomplete']} incomplete), expected all")
    # compare sets lat_percentiles=1 with --timeline: held to fio's median
    if "fio_p50_us" not in t["fio"] or not t["fio"]["within"]:
        bad.append(f"{r['path']}: the total against fio's latency: {t['fio']}")
    if not os.path.isfile(os.path.join(d, t["dir"], "timeline.json")):
        bad.append(f"{r['path']}: no {t['dir']}/timeline.json")
    if t["round"] != 1 or r["rounds"][0]["timeline"]["phases"] != t["phases"]:
        bad.append(f"{r['path']}: the round's timeline is not the path's")
    if "timeline" in r["figures"]:
        bad.append(f"{r['path']}: the timeline left in figures")
report = open(os.path.join(d, "report.md")).read()
for line in ("## Where the time goes", "| path | phase | where | mean µs | p50 | p99 |",
             "| engine-nbd | wire out | wire |", "| engine-tcmu | wake-up out | wire |",
             "| engine-nbd | **total** | total |",
             "I/Os joined with their nbd-shim record") + \
        (("| engine-libnbd | libnbd back | wire |",)
         if any(r["path"] == "engine-libnbd" for r in res["paths"]) else ()):
    if line not in report:
        bad.append(f"report.md lacks {line!r}")
if not os.path.getsize(os.path.join(d, "report.png")):
    bad.append("no report.png")
for b in bad:
    print(f"FAIL: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
sed -n '/## Where the time goes/,/^$/p' "$T/cmp/report.md"
grep -A30 '^| path | phase' "$T/cmp/report.md"
echo "PASS"
