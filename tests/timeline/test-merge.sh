#!/bin/bash
# Description: the join on real record files. fio through the engine
# (timeline=DIR) to nbd-shim --timeline DIR, two jobs of two connections
# each (cookies alike across connections: the join tells them apart):
# every engine record finds its server record (100%), the phases add up to
# the total, and the total passes the check against fio's latency medians
# (docs/timeline.md). TCMU's join is timeline-compare's (engine-tcmu to
# tcmu-shim).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

. "$TORUS_SRC/tests/timeline/join-check.sh"

# NBD: two jobs, two connections each
start_bg "$NBD_SHIM" --profile standard --store memory --size 64M \
	--listen "unix:$T/nbd.sock" --timeline "$T/nbd"
shim=${_bg_pids[-1]}
wait_socket "$T/nbd.sock"
expect_fio_ok --name=m --uri="nbd+unix:///?socket=$T/nbd.sock" --timeline="$T/nbd" \
	--conns=2 --numjobs=2 --rw=randrw --bs=4k --iodepth=8 --size=16m \
	--runtime=300ms --time_based=1 --lat_percentiles=1 --output-format=json \
	--output="$T/fio.json"
# the shim writes a connection's last records when it closes: let it end
kill "$shim"
wait_gone "$shim" 10 "nbd-shim did not end on SIGTERM"
forget_bg "$shim"
[ -s "$T/nbd/engine-1.rec" ] && [ -s "$T/nbd/engine-2.rec" ] ||
	fail "no engine-1.rec and engine-2.rec in $T/nbd: $(ls "$T/nbd")"
check "$T/nbd" engine-nbd nbd-shim 200

echo "PASS"
