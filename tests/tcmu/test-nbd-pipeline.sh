#!/bin/bash
# tcmu-shim's nbd store, pipelined: fio at iodepth 32 through the engine's
# TCMU transport into tcmu-shim over an NBD server. The ring's I/O is
# started on the store, not waited for, so more than one request is in
# flight to the server (the ring's line at detach says how many, at most);
# data passes verify=crc32c, also in requests of mixed sizes whose data
# lies in scattered blocks of the ring's data area, and is where fio put
# it when read back over NBD, also when every command goes to a server
# that takes at most 16 KiB, in pieces. conns=2 spreads a ring over two
# connections where the server offers multi-conn, and is refused where it
# does not.
# A server killed mid-job fails the outstanding commands with MEDIUM
# ERROR and a message naming the server, and fio ends, no hang.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built (meson builds it for this test)"

# shim LOG SOCKET STORE: tcmu-shim with its messages in LOG
shim() {
	start_bg "$TCMU_SHIM" --socket "$2" --store "$3" 2>"$1"
	_servers_wait socket "$2" "${_bg_pids[-1]}" "tcmu-shim --store $3"
}

# depth LOG: the most in flight to the store of the last ring that
# detached with I/O, once its line is there (rings detach after fio ends)
depth() {
	local i line
	for ((i = 0; i < 100; i++)); do
		line=$(grep -E '^tcmu-shim: ring [0-9]+: [0-9]+ commands, at most [0-9]+ in flight to the store$' "$1" |
			grep -v ' 0 in flight' | tail -n 1)
		[ -n "$line" ] && break
		sleep 0.05
	done
	[ -n "$line" ] || { cat "$1" >&2; fail "no 'ring N: M commands, at most D in flight to the store' line in tcmu-shim's log"; }
	line=${line% in flight to the store}
	echo "${line##* }"
}

job=(--rw=randrw --verify=crc32c --size=16M --bs=4k --iodepth=32)
# A data area of 512 KiB: commands of every size completing out of order
# leave holes, so most commands' data lies in scattered blocks.
mixed=(--rw=randwrite --verify=crc32c --size=24M --offset=16M
       --bsrange=4k-256k --iodepth=16 --data_size=512k)

start_nbdkit "$T/k.sock" memory 64M
k="nbd+unix:///?socket=$T/k.sock"
shim "$T/a.log" "$T/a.sock" "nbd:$k"
expect_fio_ok --name=qd32 --uri="tcmu+unix:///?socket=$T/a.sock" "${job[@]}"
d=$(depth "$T/a.log")
[ "$d" -gt 1 ] || fail "iodepth=32: at most $d request in flight to the NBD server, expected more than 1"
echo "iodepth 32: verified, at most $d in flight to the store"

# A server whose largest request is 16 KiB: every 64 KiB command goes to
# it in pieces, whatever the data area's layout, each at its own offset.
# (read back through a second nbdkit on the same file, without the limit)
truncate -s 16M "$T/p.img"
start_nbdkit "$T/p.sock" --filter=blocksize-policy file "$T/p.img" blocksize-maximum=16384
start_nbdkit "$T/p2.sock" file "$T/p.img"
shim "$T/p.log" "$T/pp.sock" "nbd:nbd+unix:///?socket=$T/p.sock"
pieces=(--rw=randwrite --verify=crc32c --size=16M --bs=64k --iodepth=8)
expect_fio_ok --name=pieces --uri="tcmu+unix:///?socket=$T/pp.sock" "${pieces[@]}"
run_fio --name=pieces --uri="nbd+unix:///?socket=$T/p2.sock" "${pieces[@]}" --verify_only=1 --verify_fatal=1 ||
	{ cat "$T/fio.out" >&2; fail "64 KiB commands in 16 KiB pieces: what the job wrote through the ring is not where it wrote it, read over NBD"; }
echo "pieces: verified, and in place over NBD"

# Blocks of the data area taken and freed in every size: scattered iovecs.
expect_fio_ok --name=mixed --uri="tcmu+unix:///?socket=$T/a.sock" "${mixed[@]}"
run_fio --name=mixed --uri="$k" "${mixed[@]}" --verify_only=1 --verify_fatal=1 ||
	{ cat "$T/fio.out" >&2; fail "mixed sizes: what the job wrote through the ring is not where it wrote it, read over NBD"; }
echo "mixed sizes: verified, and in place over NBD"

shim "$T/b.log" "$T/b.sock" "nbd:$k,conns=2"
expect_fio_ok --name=conns2 --uri="tcmu+unix:///?socket=$T/b.sock" "${job[@]}"
echo "conns=2: verified"

# torus's one connection per volume: no multi-conn, so conns=2 is refused.
start_bg "$NBD_SHIM" --profile coreos --listen "unix:$T/t.sock" --size 16M
wait_socket "$T/t.sock"
want="tcmu-shim: nbd nbd+unix:///torus?socket=$T/t.sock: conns=2, but the server does not offer multi-conn (NBD_FLAG_CAN_MULTI_CONN), so a flush on one connection would not cover writes on the others; use one connection"
rc=0
out=$("$TCMU_SHIM" --socket "$T/x.sock" --store "nbd:nbd+unix:///torus?socket=$T/t.sock,conns=2" 2>&1) || rc=$?
[ $rc != 0 ] && grep -qxF -- "$want" <<<"$out" ||
	fail "conns=2 to a server without multi-conn: expected a non-zero exit with '$want', got $rc: $out"
echo "conns=2 without multi-conn: refused"

# The server killed with commands in flight.
start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/n.sock" --size 64M
nbd_pid=${_bg_pids[-1]}
wait_socket "$T/n.sock"
shim "$T/c.log" "$T/c.sock" "nbd:nbd+unix:///?socket=$T/n.sock"
"$FIO" --ioengine="external:$ENGINE" --name=killed --uri="tcmu+unix:///?socket=$T/c.sock" \
	--rw=randrw --size=32M --bs=4k --iodepth=32 --time_based --runtime=30 \
	>"$T/killed.out" 2>&1 &
fio_pid=$!
# the engine's probe ring detaches before the job's ring attaches
for ((i = 0; i < 200; i++)); do
	grep -q '^tcmu-shim: ring 1: ' "$T/c.log" && break
	sleep 0.05
done
sleep 0.5
kill -9 "$nbd_pid"
wait "$nbd_pid" 2>/dev/null
forget_bg "$nbd_pid"
for ((i = 0; i < 200; i++)); do
	kill -0 "$fio_pid" 2>/dev/null || break
	sleep 0.05
done
if kill -0 "$fio_pid" 2>/dev/null; then
	kill -9 "$fio_pid"
	fail "the NBD server killed mid-job: fio still runs 10 s later (a hang)"
fi
rc=0
wait "$fio_pid" || rc=$?
[ $rc != 0 ] && grep -q 'MEDIUM ERROR' "$T/killed.out" ||
	{ cat "$T/killed.out" >&2; fail "the NBD server killed mid-job: expected fio to fail with MEDIUM ERROR, got exit $rc"; }
lost="torus: nbd+unix:///?socket=$T/n.sock: connection 1 lost: "
grep -qF -- "$lost" "$T/c.log" ||
	{ cat "$T/c.log" >&2; fail "the NBD server killed mid-job: no '$lost...' in tcmu-shim's log"; }
echo "server killed mid-job: outstanding commands failed, fio ended"
echo ok
