#!/bin/bash
# tcmu-shim's NBD store in front of a server that takes one connection per
# volume (nbd-shim --profile coreos, as coreos-torus itself): the connection made
# at start-up is closed again, so rings get the volume; the engine's probe
# ring and each job's ring take it in turn, fio after fio; and a ring whose
# client died mid-write (its queued writes still going out, slowly) is torn
# down, its connection closed, before the next ring's session connects.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

# 8 Mbit/s: a 256 KiB write takes a quarter of a second
start_bg "$NBD_SHIM" --profile coreos --listen "unix:$T/n.sock" --size 64M \
	--store memory --replicas 2 --bandwidth 8mbit
wait_socket "$T/n.sock"
start_tcmu_shim "$T/t.sock" --store "nbd:nbd+unix:///torus?socket=$T/n.sock"
uri="tcmu+unix:///?socket=$T/t.sock"

# probe ring, job ring; three times over
for i in 1 2 3; do
	expect_fio_ok --name="verify$i" --uri="$uri" --rw=randwrite \
		--verify=crc32c --size=256k --offset=$((i - 1))M --bs=4k --iodepth=8
done
echo "probe and job rings in turn: ok"

# A client killed while four 256 KiB writes wait on the shaped server.
"$FIO" --ioengine="external:$ENGINE" --thread --name=killed --uri="$uri" \
	--rw=write --bs=256k --size=16M --iodepth=4 --offset=16M \
	>"$T/killed.out" 2>&1 &
fio_pid=$!
sleep 0.6
kill -9 "$fio_pid"
wait "$fio_pid" 2>/dev/null
expect_fio_ok --name=next --uri="$uri" --rw=randread --size=256k --bs=4k
echo "a ring attached while a dead client's ring drains: ok"
echo ok
