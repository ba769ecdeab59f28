#!/bin/bash
# One TCMU ring per handler device, as the kernel has one per TCMU device:
# numjobs=4 against one tcmu-shim, as processes and as threads, 4k randrw
# at iodepth 16 verified with crc32c, and the shim's log says one ring
# with 4 submitters; a job killed with SIGKILL mid-run while the others
# finish verified and the shim still answers; ring=private gives every
# job a ring of its own, as before.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
CLIENT=$TORUS_BUILD/tests/tcmu/ring-client
[ -x "$CLIENT" ] || skip "$CLIENT is not built"

# jobs4 SOCK ARGS...: four jobs, each on its own 16 MiB of the device
jobs4() {
	local sock=$1
	shift
	"$FIO" --ioengine="external:$ENGINE" --name=j \
		--uri="tcmu+unix:///?socket=$sock" --bs=4k --iodepth=16 \
		--numjobs=4 --size=16M --offset_increment=16M \
		--verify=crc32c "$@"
}

# verified OUT: four jobs, each err=0, no verify failure
verified() {
	local n
	n=$(grep -c 'err= 0:' "$1")
	[ "$n" -eq 4 ] && ! grep -q 'verify:' "$1" ||
		{ cat "$1" >&2; fail "${2:-four jobs} did not all finish verified"; }
}

# one_ring LOG: one ring set up, three jobs joined it, detached with 4
one_ring() {
	local log=$1 what=$2
	[ "$(grep -c ': attached, shared ' "$log")" -eq 1 ] ||
		{ cat "$log" >&2; fail "$what: not exactly one shared ring set up"; }
	grep -Eq '^tcmu-shim: ring [0-9]+: job [0-9]+ joined \(4 submitters\)$' "$log" ||
		{ cat "$log" >&2; fail "$what: no 'job N joined (4 submitters)' line"; }
	wait_for_log "$log" 'detached, one ring for its 4 submitters' ||
		{ cat "$log" >&2; fail "$what: no detach line for one ring of 4 submitters"; }
}

# wait_for_log LOG TEXT: the line may follow fio's exit by a moment
wait_for_log() {
	local _
	for _ in $(seq 50); do
		grep -qF -- "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

# A data area that holds two of the commands: the four jobs take turns in
# it, a job with nothing in flight asleep until room comes back (it once
# spun, and its waiting requests were never sent). With room for four, a
# job was left with nothing in flight too seldom for the mutation
# tcmu-waiting-never-sent to be caught every time. It takes a second or
# two; TORUS_ROOM_DEADLINE (60 s) is lowered by the mutation that hangs it,
# and it comes first, so that the mutant hangs at once.
deadline=${TORUS_ROOM_DEADLINE:-60}
log=$T/room.log
start_tcmu_shim "$T/r.sock" --store memory --size 64M --log "$log"
timeout "$deadline" "$FIO" --ioengine="external:$ENGINE" --name=j \
	--uri="tcmu+unix:///?socket=$T/r.sock" --bs=64k --iodepth=16 \
	--numjobs=4 --size=16M --offset_increment=16M --data_size=128k \
	--rw=randwrite --verify=crc32c >"$T/room.out" 2>&1 ||
	{ cat "$T/room.out" >&2; fail "four jobs on a ring with room for two commands did not finish within $deadline s"; }
verified "$T/room.out" "four jobs on a ring with room for two commands"

for mode in process thread; do
	log=$T/$mode.log
	start_tcmu_shim "$T/$mode.sock" --store memory --size 64M --log "$log"
	thread=0
	[ $mode = thread ] && thread=1
	jobs4 "$T/$mode.sock" --rw=randrw --thread=$thread \
		>"$T/$mode.out" 2>&1 ||
		{ cat "$T/$mode.out" >&2; fail "numjobs=4 ($mode) failed"; }
	verified "$T/$mode.out" "numjobs=4 ($mode)"
	one_ring "$log" "numjobs=4 ($mode)"
done

# Each submitter is woken for its own completions only.
log=$T/wake.log
start_tcmu_shim "$T/w.sock" --store memory --size 64M --log "$log"
"$CLIENT" --socket "$T/w.sock" --check-shared >"$T/wake.out" 2>&1 ||
	{ cat "$T/wake.out" "$log" >&2; fail "ring-client --check-shared failed"; }

# ring=private: four rings, none shared
log=$T/private.log
start_tcmu_shim "$T/p.sock" --store memory --size 64M --log "$log"
jobs4 "$T/p.sock" --rw=randrw --ring=private >"$T/private.out" 2>&1 ||
	{ cat "$T/private.out" >&2; fail "ring=private failed"; }
verified "$T/private.out" "ring=private"
! grep -q 'shared\|joined' "$log" ||
	{ cat "$log" >&2; fail "ring=private: a ring was shared"; }

# A job killed mid-run: the others finish verified, the shim still serves.
# fio's main process (fio 3.33, any engine, a ring of its own or not)
# frees a killed job's engine options twice as it reaps it: under the
# sanitizers that report is set aside, and any other is kept.
log=$T/kill.log
start_tcmu_shim "$T/k.sock" --store memory --size 64M --log "$log"
san_opts=${ASAN_OPTIONS:-}
[ "${TORUS_SANITIZE:-0}" = 1 ] && mkdir -p "$T/san-kill" &&
	san_opts="$ASAN_OPTIONS:log_path=$T/san-kill/asan"
ASAN_OPTIONS=$san_opts jobs4 "$T/k.sock" --rw=randwrite --rate_iops=1500 \
	--request_timeout=10 >"$T/kill.out" 2>&1 &
fio=$!
_bg_pids+=("$fio")
wait_for_log "$log" 'joined (4 submitters)' ||
	{ cat "$log" >&2; fail "the four jobs did not join one ring"; }
sleep 1
# The background subshell runs fio, whose children are the jobs.
main=$(pgrep -P "$fio" | head -n 1)
victim=$(pgrep -P "${main:-0}" | tail -n 1)
[ -n "$victim" ] || fail "no fio job process to kill"
kill -KILL "$victim"
# fio's main process may fail after losing a job: the jobs' own lines
# tell. The other three read back all of their 16 MiB, verified.
wait "$fio" || true
for f in "$T"/san-kill/*; do
	[ -s "$f" ] || continue
	if grep -q 'attempting double-free' "$f" &&
	   grep -q 'in fio_options_free ' "$f" && ! grep -q libtorus "$f"; then
		echo "note: fio's own double free of the killed job's options, set aside" >&2
	else
		mv "$f" "$T/san/"
	fi
done
grep -q "pid=$victim, got signal=9" "$T/kill.out" ||
	{ cat "$T/kill.out" >&2; fail "fio did not see its job $victim killed"; }
n=$(grep -c 'read: IOPS=.*(16.0MiB/' "$T/kill.out")
[ "$n" -ge 3 ] && ! grep -q 'verify:' "$T/kill.out" ||
	{ cat "$T/kill.out" "$log" >&2; fail "after a job was killed, the other three did not finish verified"; }
wait_for_log "$log" 'detached, one ring for its 4 submitters' ||
	{ cat "$log" >&2; fail "the ring did not detach after its jobs left"; }
# The shim is not wedged: a new ring serves a verified job.
"$FIO" --ioengine="external:$ENGINE" --name=after \
	--uri="tcmu+unix:///?socket=$T/k.sock" --bs=4k --iodepth=16 \
	--size=8M --rw=randwrite --verify=crc32c >"$T/after.out" 2>&1 &&
	grep -q 'err= 0:' "$T/after.out" ||
	{ cat "$T/after.out" "$log" >&2; fail "the shim did not serve a job after one was killed"; }
echo "one ring per device: numjobs=4 (processes, threads), a killed job, ring=private: ok"
