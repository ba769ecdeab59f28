#!/bin/bash
# Description: the join on real record files. fio through the engine
# (timeline=DIR) to nbd-shim --timeline DIR, two jobs of two connections
# each (cookies alike across connections: the join tells them apart):
# every engine record finds its server record (100%), the phases add up to
# the total, and the total's mean is within 10% of fio's own mean latency
# (lat). TCMU's join is timeline-compare's (engine-tcmu to tcmu-shim).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

# check DIR PATH SERVER IOS_AT_LEAST: scripts/timeline on DIR with fio's
# JSON, then its timeline.json: PATH joined with SERVER, every record.
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
if abs(f["ratio"] - 1) > 0.10:
    bad.append(f"total {f['total_mean_us']:.1f} us, fio's lat mean {f['lat_mean_us']:.1f} us: "
               "more than 10% apart")
for b in bad:
    print(f"FAIL: {path}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# NBD: two jobs, two connections each
start_bg "$NBD_SHIM" --profile standard --backend memory --size 64M \
	--listen "unix:$T/nbd.sock" --timeline "$T/nbd"
shim=${_bg_pids[-1]}
wait_socket "$T/nbd.sock"
expect_fio_ok --name=m --uri="nbd+unix:///?socket=$T/nbd.sock" --timeline="$T/nbd" \
	--conns=2 --numjobs=2 --rw=randrw --bs=4k --iodepth=8 --size=16m \
	--runtime=300ms --time_based=1 --output-format=json --output="$T/fio.json"
# the shim writes a connection's last records when it closes: let it end
kill "$shim"
wait_gone "$shim" 10 "nbd-shim did not end on SIGTERM"
forget_bg "$shim"
[ -s "$T/nbd/engine-1.rec" ] && [ -s "$T/nbd/engine-2.rec" ] ||
	fail "no engine-1.rec and engine-2.rec in $T/nbd: $(ls "$T/nbd")"
check "$T/nbd" engine-nbd nbd-shim 200

echo "PASS"
