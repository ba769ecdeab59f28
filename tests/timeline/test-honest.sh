#!/bin/bash
# Description: the phases put a known delay where it is. nbdkit memory with
# --filter=delay rdelay=2ms (no server records: the "server and wire"
# form): reads spend 2 ms in "server and wire" and under 100 µs in each
# client phase. nbd-shim with a 1 ms delay on its store (--latency-us 1000
# --shape-at storage): the 1 ms is in "storage", and no other phase holds a
# quarter of it. Medians (p50) of one I/O in flight: the mean of a short
# run on a shared machine moves with every preemption. A delay's phase may
# be 5% short of it (clocks) and 40% over: a sleep ends late, later on a
# loaded machine, and the server's own work on the request is in the same
# phase (nbdkit's). The other phases, below a quarter of the delay, are
# what says that it went nowhere else.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3 nbdkit
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
nbdkit --filter=delay memory --dump-plugin >/dev/null 2>&1 ||
	skip "nbdkit has no memory plugin or delay filter (Debian package nbdkit)"

# run_timed DIR RW: fio through the engine into the timeline DIR, one I/O
# in flight for 0.4 s
run_timed() {
	expect_fio_ok --name=h --uri="$uri" --timeline="$1" --rw="$2" --bs=4k \
		--iodepth=1 --size=16m --runtime=400ms --time_based=1
}

# expect DIR CHECK...: scripts/timeline on DIR, then each CHECK on the p50
# (µs) of a phase of engine-nbd: "NAME<N", "NAME>N", or "*-NAME<N" (every
# phase but NAME and the total)
expect() {
	"$TORUS_SRC/scripts/timeline" "$1" >"$T/table" 2>&1 ||
		{ cat "$T/table" >&2; fail "scripts/timeline $1 exited non-zero"; }
	cat "$T/table"
	python3 - "$1/timeline.json" "${@:2}" <<'PY' || fail "the phases of $1 (above)"
import json, re, sys
r = json.load(open(sys.argv[1]))["paths"]["engine-nbd"]
p50 = {p["name"]: p["p50_us"] for p in r["phases"]}
bad = 0
for check in sys.argv[2:]:
    name, op, value = re.fullmatch(r"(.+?)([<>])([0-9.]+)", check).groups()
    names = [n for n in p50 if n not in ("total", name[2:])] if name.startswith("*-") \
        else [name]
    for n in names:
        if n not in p50:
            print(f"FAIL: no phase {n!r} in {sorted(p50)}", file=sys.stderr)
            bad = 1
        elif not (p50[n] < float(value) if op == "<" else p50[n] > float(value)):
            print(f"FAIL: {n}: p50 {p50[n]:.1f} us, expected {op} {value}", file=sys.stderr)
            bad = 1
sys.exit(bad)
PY
}

# nbdkit: 2 ms on every read, no server records
start_nbdkit "$T/kit.sock" --filter=delay memory 64M rdelay=2ms
uri="nbd+unix:///?socket=$T/kit.sock"
run_timed "$T/kit" randread
expect "$T/kit" "server and wire>1900" "server and wire<2800" \
	"client submit<100" "payload<100" "hand back<100"

# nbd-shim: 1 ms on every operation on its store
start_bg "$NBD_SHIM" --profile standard --store memory --size 64M \
	--listen "unix:$T/shim.sock" --timeline "$T/shim" --latency-us 1000 --shape-at storage
shim=${_bg_pids[-1]}
wait_socket "$T/shim.sock"
uri="nbd+unix:///?socket=$T/shim.sock"
run_timed "$T/shim" randrw
kill "$shim"
wait_gone "$shim" 10 "nbd-shim did not end on SIGTERM"
forget_bg "$shim"
expect "$T/shim" "storage>950" "storage<1400" "*-storage<250"
echo "PASS"
