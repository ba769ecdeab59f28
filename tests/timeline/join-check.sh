# Sourced by the timeline's shell tests (after tests/lib.sh), with fio's
# JSON of the run in $T/fio.json.

# check DIR PATH SERVER IOS_AT_LEAST: scripts/timeline on DIR with fio's
# JSON (of a run with lat_percentiles=1), then its timeline.json: PATH
# joined with SERVER, every record, the total held to fio's median.
check() {
	local dir=$1 path=$2 server=$3 least=$4
	"$TORUS_SRC/scripts/timeline" "$dir" --fio-json "$T/fio.json" >"$T/table" 2>&1 || {
		cat "$T/table" >&2
		fail "scripts/timeline $dir exited non-zero (a join rate below 95%, or fio's check)"
	}
	cat "$T/table"
	python3 - "$dir/timeline.json" "$path" "$server" "$least" <<'PY' || fail "$path: the join (above)"
import json, sys
res = json.load(open(sys.argv[1]))
path, server, least = sys.argv[2], sys.argv[3], int(sys.argv[4])
r = res["paths"][path]
bad = []
if r["server"] != server or r["form"] != "merged":
    bad.append(f"joined with {r['server']} ({r['form']}), expected {server} (merged)")
if r["records"] < least:
    bad.append(f"{r['records']} records, expected at least {least}")
if r["incomplete"] or r["joined"] != r["records"]:
    bad.append(f"{r['joined']} of {r['records']} joined ({r['incomplete']} incomplete), "
               "expected all")
ph = r["phases"]
if sum(p["mean_us"] for p in ph[:-1]) - ph[-1]["mean_us"] > 1e-6 * ph[-1]["mean_us"]:
    bad.append("the phases do not add up to the total")
f = r["fio"]
# the runs set lat_percentiles=1: the check is on the medians
if "fio_p50_us" not in f or not f["within"]:
    bad.append(f"the total against fio's latency: {f}: expected fio's medians, the "
               "total's between them and its mean not 5% above fio's")
for b in bad:
    print(f"FAIL: {path}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
