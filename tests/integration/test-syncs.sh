#!/bin/bash
# Description: fio issues as many syncs through the engine as through its
# libaio engine on a file: a 4 KiB randwrite job of 4 MiB at iodepth 16 with
# fsync=8 and verify=crc32c. The engine's count (fio's JSON, scripts/issued.py)
# must be within 10% of libaio's: 10 * |engine - libaio| <= libaio. Before
# the engine completed its flushes within ->queue, fio sent them in bursts
# (520 and more for 1024 writes, libaio 127; docs/performance-history.md).
# One transport per run: nbd (nbdkit memory) or tcmu (tcmu-shim's memory
# store).
. "$TORUS_SRC/tests/lib.sh"
transport=${1:-nbd}
require fio python3

case $transport in
nbd)
	sock=$T/nbd.sock
	start_nbdkit "$sock" memory 64M
	uri="nbd+unix:///?socket=$sock"
	;;
tcmu)
	sock=$T/tcmu.sock
	start_tcmu_shim "$sock" --store memory --size 64M
	uri="tcmu+unix:///?socket=$sock"
	;;
*)
	fail "usage: $0 [nbd|tcmu]"
	;;
esac

job=(--name=syncs --rw=randwrite --bs=4k --size=4m --iodepth=16 --fsync=8
     --verify=crc32c --verify_fatal=1 --output-format=json)

# issued FILE: "writes syncs" of fio's JSON in FILE.
issued() {
	python3 "$TORUS_SRC/scripts/issued.py" "$1" |
		sed -n 's/.* writes=\([0-9]*\) syncs=\([0-9]*\) .*/\1 \2/p'
}

expect_fio_ok --uri="$uri" "${job[@]}" --output="$T/engine.json"
# The kernel's path on a file here: O_DIRECT, or the page cache where the
# filesystem of $T has no O_DIRECT (libaio's sync logic is the same).
touch "$T/file"
if ! "$FIO" --ioengine=libaio --filename="$T/file" --direct=1 "${job[@]}" \
	--output="$T/libaio.json" >"$T/libaio.out" 2>&1; then
	"$FIO" --ioengine=libaio --filename="$T/file" --direct=0 "${job[@]}" \
		--output="$T/libaio.json" >"$T/libaio.out" 2>&1 ||
		fail "fio's libaio engine failed on $T/file: $(cat "$T/libaio.out" "$T/libaio.json")"
fi

read -r ew es <<<"$(issued "$T/engine.json")"
read -r lw ls <<<"$(issued "$T/libaio.json")"
echo "engine ($transport): $ew writes, $es syncs; libaio: $lw writes, $ls syncs"
[ "$ew" = 1024 ] && [ "$lw" = 1024 ] ||
	fail "expected 1024 writes on both, got engine $ew, libaio $lw"
[ "$ls" -gt 0 ] || fail "libaio issued no syncs: $(cat "$T/libaio.json")"
diff=$((es > ls ? es - ls : ls - es))
[ $((10 * diff)) -le "$ls" ] ||
	fail "the engine issued $es syncs, libaio $ls: more than 10% apart (fio's sync burst is back: see engines/engine.c, queue_flush)"
echo "PASS"
