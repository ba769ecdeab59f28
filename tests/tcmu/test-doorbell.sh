#!/bin/bash
# The doorbell (proto/tcmu/tcmu_doorbell.h): the engine and ring-client
# write the handler's kick eventfd only when tcmu-shim's ring thread may
# be asleep, and no wake-up is lost to it. ring-client --check-wake sends
# bursts timed to land while the ring thread goes to sleep, on a private
# ring; fio sends bursts with pauses between them (thinktime), two jobs
# on the device's shared ring and one on a private ring, and says how many
# of its wake-ups it sent. A lost wake-up leaves a burst in the ring with
# the ring thread asleep: ring-client fails after 5 s, and fio is bounded
# by its request_timeout and by timeout(1).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
CLIENT=$TORUS_BUILD/tests/tcmu/ring-client
[ -x "$CLIENT" ] || skip "$CLIENT is not built"

start_tcmu_shim "$T/s.sock" --store memory --size 64M
rc=0
timeout 100 "$CLIENT" --socket "$T/s.sock" --check-wake 20000 >"$T/out" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$T/out" >&2; fail "ring-client --check-wake failed (exit $rc)"; }
grep -q '^check-wake: all passed$' "$T/out" ||
	{ cat "$T/out" >&2; fail "ring-client --check-wake did not pass"; }
grep '^check-wake: ' "$T/out" | head -n 1

# sent_ok: every job's submission share line says it sent some of its
# wake-ups and skipped others
sent_ok() {
	local what=$1 lines
	lines=$(sed -n "s/^torus: tcmu: the kernel's submission share: .* of \([0-9]*\) wake-ups, \([0-9]*\) of them sent .*/\1 \2/p" "$T/fio.out")
	[ -n "$lines" ] || { cat "$T/fio.out" >&2; fail "$what: no submission share line"; }
	echo "$lines" | awk '{ exit !($2 > 0 && $2 < $1) }' ||
		{ cat "$T/fio.out" >&2; fail "$what: the doorbell did not both skip and send wake-ups: $lines"; }
	echo "$what: wake-ups and those sent: $(echo $lines)"
}

for ring in shared private; do
	jobs=2
	[ $ring = private ] && jobs=1
	rc=0
	timeout 100 "$FIO" --ioengine="external:$ENGINE" --name=bursts \
		--uri="tcmu+unix:///?socket=$T/s.sock" --ring=$ring --numjobs=$jobs \
		--rw=randrw --bs=4k --iodepth=8 --size=16M --offset_increment=16M \
		--io_size=16M --thinktime=100 --thinktime_blocks=6 \
		--request_timeout=10 >"$T/fio.out" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		cat "$T/fio.out" >&2
		# the engine's words when a command waited out request_timeout
		grep -q 'no completion from the handler within request_timeout' "$T/fio.out" &&
			fail "fio, ring=$ring, bursts with pauses: a wake-up was lost (a command waited in the ring, the ring thread asleep, until request_timeout)"
		fail "fio, ring=$ring, bursts with pauses: exit $rc"
	fi
	[ "$(grep -c 'err= 0:' "$T/fio.out")" -eq $jobs ] ||
		{ cat "$T/fio.out" >&2; fail "fio, ring=$ring: not every job finished with err=0"; }
	sent_ok "ring=$ring"
done
echo "ok: no wake-up lost to the doorbell, and kicks skipped while the ring thread was awake"
