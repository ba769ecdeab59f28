#!/bin/bash
# test-alloc.sh [tcmu|nbd|libnbd]: no allocation per I/O. fio with the engine (fio
# --thread, so one process holds fio, the engine and its client) and, for
# tcmu, tcmu-shim run under tests/tools/alloc-count.so (for nbd the server
# is nbdkit null, not counted), once for 10k and once for 100k 4 KiB random
# reads at QD32 (then the same with random writes); the malloc + calloc +
# aligned allocation counts of the two runs, and their realloc and free
# counts, may differ by a small constant (fio's own timers) but must not
# grow with the I/Os. On failure the busiest call sites are shown
# (MODULE+0xOFFSET: addr2line -f -e MODULE 0xOFFSET). With libnbd, libnbd
# itself allocates a command per nbd_aio_* call and frees it when the
# command retires (docs/libnbd.md): its call sites are left out of the
# counts and shown apart (at most one allocation per I/O), and everything
# else must not grow.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
require fio

TRANSPORT=${1:-tcmu}
TCMU_SHIM=${TCMU_SHIM:-$TORUS_BUILD/shims/tcmu/tcmu-shim}
COUNTER=$TORUS_BUILD/tests/tools/alloc-count.so
EXTRA=()
if [ "$TRANSPORT" = tcmu ]; then
	[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
	SIDES="fio shim"
else
	start_nbdkit "$T/null.sock" null 1G
	SIDES=fio
	if [ "$TRANSPORT" = libnbd ]; then
		"$FIO" --enghelp="$ENGINE" 2>&1 | grep -q '^tls_psk_file ' ||
			skip "the engine was built without libnbd"
		EXTRA=(--transport=libnbd)
	fi
fi
[ -f "$COUNTER" ] || skip "$COUNTER is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ -n "${TORUS_SANITIZE:-}" ] && skip "the sanitizers own malloc here"
SLACK=${ALLOC_SLACK:-20}

# field FILE NAME: the value of NAME in the counter's block in FILE; for
# allocs and free with transport=libnbd, less what libnbd's own call sites
# allocated (each of its allocations is freed by libnbd).
field() {
	local v
	v=$(awk -v k="$2" '$1 == k { print $2; exit }' "$1")
	if [ "$TRANSPORT" = libnbd ] && [ -n "$v" ] && { [ "$2" = allocs ] || [ "$2" = free ]; }; then
		v=$((v - $(libnbd_allocs "$1")))
	fi
	echo "$v"
}

# libnbd_allocs FILE: allocations made at libnbd's call sites (of the
# busiest sixteen the counter lists).
libnbd_allocs() {
	awk '$1 == "site" && $3 ~ /libnbd\.so/ { n += $2 } END { print n + 0 }' "$1"
}

# one_run RW IOS: fio (and the shim), each counted into $T/RW-IOS.{fio,shim}
one_run() {
	local rw=$1 ios=$2 sock=$T/alloc.sock pid rc uri="nbd+unix:///?socket=$T/null.sock"
	if [ "$TRANSPORT" = tcmu ]; then
		ALLOC_COUNT_OUT=$T/$rw-$ios.shim LD_PRELOAD=$COUNTER \
			"$TCMU_SHIM" --socket "$sock" --store memory --size 64M \
			2>"$T/shim.log" &
		pid=$!
		_bg_pids+=("$pid")
		_servers_wait socket "$sock" "$pid" tcmu-shim
		uri="tcmu+unix:///?socket=$sock"
	fi
	ALLOC_COUNT_OUT=$T/$rw-$ios.fio LD_PRELOAD=$COUNTER \
		"$FIO" --thread --name=alloc --ioengine="external:$ENGINE" \
		--uri="$uri" "${EXTRA[@]}" --rw="$rw" --bs=4k \
		--iodepth=32 --norandommap --randrepeat=0 \
		--io_size=$((ios * 4))k --output-format=terse \
		>"$T/fio.out" 2>&1 ||
		{ cat "$T/fio.out" >&2; fail "fio failed ($rw, $ios I/Os)"; }
	if [ "$TRANSPORT" = tcmu ]; then
		kill -TERM "$pid"
		wait "$pid"
		rc=$?
		[ $rc -eq 0 ] || { cat "$T/shim.log" >&2; fail "tcmu-shim exited $rc"; }
	fi
	for side in $SIDES; do
		[ "$(field "$T/$rw-$ios.$side" allocs)" ] ||
			fail "no count from $side ($rw, $ios I/Os): $(cat "$T/$rw-$ios.$side" 2>&1)"
	done
}

for rw in randread randwrite; do
	one_run "$rw" 10000
	one_run "$rw" 100000
	for side in $SIDES; do
		a=$T/$rw-10000.$side b=$T/$rw-100000.$side
		line="$side, $rw:"
		for k in allocs realloc free; do
			x=$(field "$a" $k) y=$(field "$b" $k)
			line+=" $k $x (10k I/Os) $y (100k I/Os);"
			d=$((y - x))
			if [ ${d#-} -ge "$SLACK" ]; then
				echo "--- 10k I/Os:" >&2; cat "$a" >&2
				echo "--- 100k I/Os:" >&2; cat "$b" >&2
				fail "$side allocates per I/O ($rw): $k went from $x to $y"
			fi
		done
		if [ "$TRANSPORT" = libnbd ]; then
			x=$(libnbd_allocs "$a") y=$(libnbd_allocs "$b")
			line+=" libnbd's own: $x (10k I/Os) $y (100k I/Os);"
			# at most one per I/O, as libnbd documents for nbd_aio_*
			[ $((y - x)) -le $((90000 + SLACK)) ] ||
				fail "libnbd allocates more than once per I/O ($rw): $x then $y"
		fi
		echo "$line"
	done
done
echo "ok"
