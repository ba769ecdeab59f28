#!/bin/bash
# pipe-probe, the benchmark's lean NBD client, in each of its ways of
# driving the socket (poll, -p busy-poll, -u io_uring; -B batches): reads and a 64 KiB
# mix over a Unix socket and TCP to nbd-shim get answers, and its mistakes
# get a message and a failing status.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

PROBE=$TORUS_BUILD/tests/shims/pipe-probe
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -x "$PROBE" ] || skip "$PROBE is not built"

start_bg "$NBD_SHIM" --listen "unix:$T/s.sock" --profile standard --store null --size 1G
wait_socket "$T/s.sock"
port=$(free_port)
start_bg "$NBD_SHIM" --listen "tcp:127.0.0.1:$port" --profile standard --store null --size 1G
wait_port "$port"

# probe WHERE ARGS...: a quarter second; it must answer with a positive IOPS.
probe() {
	local out
	out=$(timeout 20 "$PROBE" "$@" -t 0.25 2>"$T/probe.err") ||
		fail "pipe-probe $*: status $?: $(cat "$T/probe.err")"
	[[ $out =~ ^[0-9]+$ && $out -gt 0 ]] || fail "pipe-probe $*: printed '$out', not IOPS"
}
for where in "unix:$T/s.sock" "tcp:127.0.0.1:$port"; do
	for mode in "" -u; do
		probe "$where" -q 16 -b 4096 $mode
		probe "$where" -q 64 -b 65536 -m 50 $mode
		probe "$where" -q 1 -b 4096 -w $mode
	done
	probe "$where" -q 1 -b 4096 -p
	probe "$where" -q 16 -b 4096 -B 8
	probe "$where" -q 16 -b 4096 -B 8 -p
done

# Its mistakes: a usage message (status 2), or the connection's (status 1).
rc=0
"$PROBE" "unix:$T/s.sock" -p -u >"$T/out" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "usage: pipe-probe" "$T/out" || fail "-p -u: status $rc: $(cat "$T/out")"
rc=0
"$PROBE" "unix:$T/s.sock" -q 4 -B 5 >"$T/out" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "usage: pipe-probe" "$T/out" || fail "-q 4 -B 5: status $rc: $(cat "$T/out")"
rc=0
"$PROBE" "unix:$T/s.sock" -t 0 >"$T/out" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "usage: pipe-probe" "$T/out" || fail "-t 0: status $rc: $(cat "$T/out")"
rc=0
"$PROBE" "unix:$T/none.sock" -u -t 1 >"$T/out" 2>&1 || rc=$?
[ $rc = 1 ] && grep -q "pipe-probe: cannot connect to Unix socket $T/none.sock" "$T/out" ||
	fail "no server: status $rc: $(cat "$T/out")"
echo "PASS"
