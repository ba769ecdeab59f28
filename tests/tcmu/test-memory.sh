#!/bin/bash
# The TCMU data area costs only what is in flight: a 64 KiB randrw job at
# QD32 (2 MiB in flight) through the default 1 GiB data area, for a few
# seconds, must leave tcmu-shim's and fio's resident shared memory (the
# region's memfd is the only shared memory either maps, besides fio's own
# small pools) at most 64 MiB. The engine takes the lowest free blocks,
# as the kernel does; a submitter that walks the whole area touches all
# of it within seconds.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

LIMIT_KB=$((64 * 1024))
RUNTIME=${MEMORY_RUNTIME:-3}

# shmem_kb PID: its RssShmem, in kB
shmem_kb() {
	awk '$1 == "RssShmem:" { print $2; exit }' "/proc/$1/status"
}

# region_kb PID: resident kB of its mappings of the TCMU region's memfd
region_kb() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { r = / \/memfd:torus-tcmu-region/ }
	     r && $1 == "Rss:" { kb += $2 } END { print kb + 0 }' "/proc/$1/smaps"
}

start_tcmu_shim "$T/m.sock" --store memory --size 256M
shim=${_bg_pids[-1]}
# --thread: one process holds fio, the engine and the region's mapping.
"$FIO" --ioengine="external:$ENGINE" --thread --name=memory \
	--uri="tcmu+unix:///?socket=$T/m.sock" --rw=randrw --bs=64k \
	--iodepth=32 --size=256M --time_based --runtime="$RUNTIME" \
	--norandommap --randrepeat=0 >"$T/fio.out" 2>&1 &
fio=$!
_bg_pids+=("$fio")

# Sample near the end of the run, when the most has been touched.
sleep $((RUNTIME - 1))
kill -0 "$fio" 2>/dev/null || { cat "$T/fio.out" >&2; fail "fio ended before it could be measured"; }
shim_shm=$(shmem_kb "$shim") shim_reg=$(region_kb "$shim")
fio_shm=$(shmem_kb "$fio") fio_reg=$(region_kb "$fio")
wait "$fio" || { cat "$T/fio.out" >&2; fail "fio failed"; }
forget_bg "$fio"
grep -q 'err=[ ]*[1-9]' "$T/fio.out" && { cat "$T/fio.out" >&2; fail "fio reported an I/O error"; }
ios=$(grep -oE 'issued rwts: total=[0-9]+,[0-9]+' "$T/fio.out" | grep -oE '[0-9]+,[0-9]+$')

echo "tcmu-shim: RssShmem $shim_shm kB (region $shim_reg kB); fio: RssShmem $fio_shm kB (region $fio_reg kB); I/Os (reads,writes): $ios"
[ "$shim_reg" -gt 0 ] && [ "$fio_reg" -gt 0 ] ||
	fail "no resident TCMU region found in /proc/PID/smaps (tcmu-shim $shim_reg kB, fio $fio_reg kB): the measurement is broken"
[ "$shim_shm" -le $LIMIT_KB ] ||
	fail "tcmu-shim's resident shared memory is $shim_shm kB (region $shim_reg kB) after ${RUNTIME} s of 64 KiB randrw QD32, expected at most $LIMIT_KB kB: the data area is touched beyond what is in flight"
[ "$fio_shm" -le $LIMIT_KB ] ||
	fail "fio's resident shared memory is $fio_shm kB (region $fio_reg kB) after ${RUNTIME} s of 64 KiB randrw QD32, expected at most $LIMIT_KB kB: the data area is touched beyond what is in flight"
echo "data area: only what is in flight is touched: ok"
