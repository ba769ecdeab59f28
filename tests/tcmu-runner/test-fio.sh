#!/bin/bash
# fio through the engine's TCMU transport into tcmu-shim, over the stores
# of this folder: an NBD export (nbdkit memory, nbd-shim) and a qcow2 image
# through Debian's handler_qcow.so. verify=crc32c passes, and what fio
# wrote into the image is there when qemu-io reads it.
#
# Placement: a store that puts a block at the wrong offset and reads it back
# from there passes a verify through itself. So each job is also replayed
# with verify_only by another path: the NBD server straight through the
# engine's NBD transport, the qcow2 image converted to raw by qemu-img and
# read with psync. fio's verify header holds the offset a block was written
# at, so a block anywhere else fails its header check, and an unwritten one
# its magic.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" qemu-img qemu-io python3
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built (meson builds it for this test)"
plugins=/usr/lib/$(cc -print-multiarch)/tcmu-runner
[ -f "$plugins/handler_qcow.so" ] || skip "no $plugins/handler_qcow.so (the Debian package tcmu-runner)"

# stop_last: stop the server started last (a tcmu-shim flushes its store
# on exit, so it goes before the NBD servers it uses)
stop_last() {
	kill "${_bg_pids[-1]}"
	wait "${_bg_pids[-1]}" 2>/dev/null
	unset '_bg_pids[-1]'
}

# Every job writes 16 MiB in random order, each block once.
job=(--rw=randwrite --verify=crc32c --fsync=8 --size=16M --bs=4k --iodepth=8)

verify_job() {
	local name=$1 sock=$2
	shift 2
	expect_fio_ok --name="$name" --uri="tcmu+unix:///?socket=$sock" \
		"${job[@]}" "$@"
	echo "$name: ok"
}

# replay NAME ARGS...: fio verify_only replays the job verify_job ran (its
# extra options and where to read from in ARGS): fio draws the same offsets
# and sizes again and checks every block it wrote, all 16 MiB of them.
replay() {
	local name=$1 bytes
	shift
	if ! "$FIO" --name="$name" "${job[@]}" "$@" --verify_only=1 \
		--verify_fatal=1 --output-format=json >"$T/replay.json" 2>&1; then
		cat "$T/replay.json" >&2
		fail "$name: what the job wrote is not where it wrote it, read by another path (fio $*)"
	fi
	bytes=$(python3 -c 'import json, sys
s = open(sys.argv[1]).read()
print(json.loads(s[s.index("{"):])["jobs"][0]["read"]["io_bytes"])' "$T/replay.json")
	[ "$bytes" = 16777216 ] || fail "$name: the replay verified $bytes bytes, not the 16777216 written"
	echo "$name: in place"
}

start_nbdkit "$T/k.sock" memory 64M
start_tcmu_shim "$T/t1.sock" --store "nbd:nbd+unix:///?socket=$T/k.sock"
verify_job nbdkit "$T/t1.sock"
replay nbdkit --ioengine="external:$ENGINE" --uri="nbd+unix:///?socket=$T/k.sock"
verify_job nbdkit-mixed "$T/t1.sock" --bsrange=4k-128k --offset=8M
replay nbdkit-mixed --ioengine="external:$ENGINE" --uri="nbd+unix:///?socket=$T/k.sock" \
	--bsrange=4k-128k --offset=8M
# Trims through the NBD store reach the NBD server: 8 MiB at 32 MiB filled,
# half trimmed as UNMAP and half as WRITE SAME(16) with the UNMAP bit
# through the handler host, then read from nbdkit itself, where a trim
# zeroes (its memory plugin).
t1="tcmu+unix:///?socket=$T/t1.sock"
expect_fio_ok --name=fill --uri="$t1" --offset=32M --size=8M --bs=64k --rw=write --verify=crc32c
expect_fio_ok --name=unmap --uri="$t1" --offset=32M --size=4M --bs=64k --rw=trim --trim_mode=unmap
expect_fio_ok --name=ws --uri="$t1" --offset=36M --size=4M --bs=64k --rw=trim --trim_mode=write_same
run_fio --name=zeroes --uri="nbd+unix:///?socket=$T/k.sock" --offset=32M --size=8M --bs=64k \
	--rw=read --verify=pattern --verify_pattern=0 ||
	{ cat "$T/fio.out" >&2; fail "nbd store: trims did not reach the NBD server (the 8 MiB trimmed through the handler host do not read back as zeroes from nbdkit)"; }
echo "nbd store: trims reach the server"
stop_last

start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/n.sock" --size 64M
wait_socket "$T/n.sock"
start_tcmu_shim "$T/t2.sock" --store "nbd:nbd+unix:///?socket=$T/n.sock"
verify_job nbd-shim "$T/t2.sock"
stop_last
replay nbd-shim --ioengine="external:$ENGINE" --uri="nbd+unix:///?socket=$T/n.sock"

qemu-img create -q -f qcow2 "$T/a.qcow2" 64M
start_tcmu_shim "$T/t3.sock" --store "runner:qcow:$T/a.qcow2"
verify_job qcow "$T/t3.sock"
# a pattern qemu can check: 8 MiB of 0xa5 at 32 MiB
expect_fio_ok --name=pattern --uri="tcmu+unix:///?socket=$T/t3.sock" \
	--rw=write --bs=64k --offset=32M --size=8M \
	--buffer_pattern=0xa5 --end_fsync=1
stop_last
qemu-img check -q "$T/a.qcow2" || fail "qemu-img check $T/a.qcow2"
# qemu's reading of the image, as a raw file
out=$(qemu-img convert -f qcow2 -O raw "$T/a.qcow2" "$T/a.raw" 2>&1) ||
	fail "qemu-img convert: $out"
replay qcow --ioengine=psync --filename="$T/a.raw"
out=$(qemu-io -f qcow2 -c 'read -P 0xa5 32M 8M' "$T/a.qcow2" 2>&1) ||
	fail "qemu-io: $out"
grep -q 'verification failed' <<<"$out" &&
	fail "qemu-io: the image does not hold fio's pattern: $out"
echo "qcow: the image holds what fio wrote"
echo ok
