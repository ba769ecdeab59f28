#!/bin/bash
# Description: every fio mode the engine must work in, with verify:
# processes and thread=1, numjobs>1, create_serialize=0,
# io_submit_mode=offload (fio's own nbd engine crashes in the last two),
# iodepth 1 to 1024, iodepth_batch, bs 512 B to the server's maximum.
# One transport per run: nbd (nbdkit memory), libnbd (the same nbdkit
# through transport=libnbd) or tcmu (the handler host tcmu-shim with its
# memory store).
. "$TORUS_SRC/tests/lib.sh"
transport=${1:-nbd}
require fio

case $transport in
nbd)
	sock=$T/nbd.sock
	start_nbdkit "$sock" memory 1G
	uri="nbd+unix:///?socket=$sock"
	;;
libnbd)
	sock=$T/nbd.sock
	start_nbdkit "$sock" memory 1G
	uri="nbd+unix:///?socket=$sock"
	;;
tcmu)
	sock=$T/tcmu.sock
	start_tcmu_shim "$sock" --store memory --size 1G
	uri="tcmu+unix:///?socket=$sock"
	;;
*)
	fail "usage: $0 [nbd|libnbd|tcmu]"
	;;
esac
# transport=libnbd reaches the same nbdkit through libnbd.
tp=()
[ "$transport" = libnbd ] && tp=(--transport=libnbd)
v=(--uri="$uri" "${tp[@]}" --verify=crc32c --verify_fatal=1)

expect_fio_ok --name=proc "${v[@]}" --size=32m --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok --name=thr "${v[@]}" --size=32m --rw=randwrite --bs=4k --iodepth=16 --thread=1
# Several jobs, each on its own region (verify needs disjoint ranges).
expect_fio_ok --name=nj "${v[@]}" --size=32m --offset_increment=32m --numjobs=4 --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok --name=njt "${v[@]}" --size=32m --offset_increment=32m --numjobs=4 --thread=1 --rw=randrw --bs=16k --iodepth=16
expect_fio_ok --name=cs0 "${v[@]}" --size=32m --offset_increment=32m --numjobs=2 --create_serialize=0 --rw=randwrite --bs=4k --iodepth=16
# Offload. fio (3.33 and 3.41) keeps an "external:PATH" engine path as a
# pointer into the string of the section it was given in (options.c,
# str_ioengine_external_cb); offload workers of a job whose path came from
# the global options read it after it was freed (upstream/fio/0006 fixes
# it). Loading the engine by plain path avoids that fio bug.
# fio 3.41 and 3.42 abort offload workers that verify ("inflight_idx already
# set", with psync and libaio too) through the write tracking that
# verify_state_save keeps (init_inflight_logging): these runs turn it off.
#
# fio up to 3.41 also deadlocks as an offload job starts its workers, now
# and then whatever the engine (here ioengine=null at iodepth 16 hangs in
# half the runs to all of them, by the machine's load; this engine in up to
# one run in five at iodepth 8 or 16, and one in forty even at 2).
# start_worker() (workqueue.c) sets a new worker's flags to SW_F_IDLE after
# pthread_create(), wiping the SW_F_RUNNING that the worker, once set up,
# may already have set; workqueue_init() then waits for it forever. No
# option avoids it: it is a race between two threads of fio. fio 3.42 fixed
# it (commit 736c2015), upstream/fio/0005 for 3.33 and 3.41. So the runs go
# to a server of their own that logs every request, and a hang counts as
# that fio bug only under fio 3.41 or older, when no request has reached the
# server and every thread of the job sleeps on a futex (fio's own waits; the
# engine waits in poll or io_uring_enter, never on a futex), besides fio's
# main loop and its helper thread (select). Such a run is tried again; any
# other hang fails the test.
case $transport in
nbd|libnbd)
	start_nbdkit "$T/off.sock" --filter=log memory 1G logfile="$T/off.log"
	off_uri="nbd+unix:///?socket=$T/off.sock"
	# a request's line, not its reply's ("...Write id=1 return=0")
	off_io=' (Read|Write|Trim|Zero|Flush|Cache) id='
	;;
tcmu)
	start_tcmu_shim "$T/off.sock" --store memory --size 1G -v --log "$T/off.log"
	off_uri="tcmu+unix:///?socket=$T/off.sock"
	# READ, WRITE, SYNCHRONIZE CACHE, UNMAP, WRITE SAME: not the probing
	off_io='command 0x(08|0a|28|2a|88|8a|35|91|41|42|93)[ :]'
	;;
esac
fio_version=$("$FIO" --version)
[[ $fio_version =~ ^fio-([0-9]+)\.([0-9]+) ]] || fail "cannot read fio's version from '$fio_version'"
((BASH_REMATCH[1] * 1000 + BASH_REMATCH[2] < 3042)) && fio_start_race=1 || fio_start_race=0
off_undecided=()

# off_requests: how many requests the offload server has logged (awk fails
# loudly if there is no log, and then no hang passes for fio's).
off_requests() {
	awk -v re="$off_io" '$0 ~ re { n++ } END { print n + 0 }' "$T/off.log"
}

# off_threads PID...: one line per thread of the processes PID, its state
# and the kernel function it sleeps in.
off_threads() {
	local pid t
	for pid; do
		for t in /proc/"$pid"/task/*; do
			echo "$pid/${t##*/} $(cut -d' ' -f3 "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
		done
	done
}

# off_waits FIO-PID PID...: "futex poll other", how many threads of the
# processes PID sleep on a futex, in select or poll, or elsewhere; "busy"
# when one is running (or between sleeps). fio's main thread (FIO-PID's
# own) is left out: it runs fio's main loop, waking every 10 ms.
off_waits() {
	off_threads "${@:2}" | awk -v main="$1/$1" '
		$1 == main { next }
		$2 != "S" || $3 == "" || $3 == "0" { busy = 1; next }
		$3 ~ /^futex_/ { f++; next }
		$3 ~ /^(poll_schedule_timeout|do_select|core_sys_select|do_sys_poll)/ { p++; next }
		{ o++ }
		END { if (busy) print "busy"; else print f + 0, p + 0, o + 0 }'
}

# off_start_stall REQUESTS FIO-PID PID...: true when fio's processes PID
# (FIO-PID and its job's) are in fio's start-up deadlock (above): the server
# has no more than REQUESTS requests, and in three looks over two seconds
# every thread but fio's main one sleeps on a futex, except at most one in
# select (fio's helper thread). A look at a moment when a thread runs is
# taken again, up to 20 times.
off_start_stall() {
	local before=$1 look try w futex poll other
	shift
	for look in 1 2 3; do
		[ "$(off_requests)" -eq "$before" ] || return 1
		for try in {1..20}; do
			w=$(off_waits "$1" "$@")
			[ "$w" != busy ] && break
			sleep 0.05
		done
		[ "$w" != busy ] || return 1
		read -r futex poll other <<<"$w"
		((futex >= 2 && poll <= 1 && other == 0)) || return 1
		[ $look = 3 ] || sleep 1
	done
}

# offload ARGS...: an offload run; a hang fails the test unless it is fio's
# start-up deadlock, which is tried again (6 tries: each hangs in at most
# one run in five).
# A run has 60 s; one that has made no request for 5 s is looked at sooner.
offload() {
	local try rc pid kids t before
	for try in 1 2 3 4 5 6; do
		before=$(off_requests)
		"$FIO" --ioengine="$ENGINE" --uri="$off_uri" "${tp[@]}" --verify_state_save=0 "$@" >"$T/fio.out" 2>&1 &
		pid=$!
		for ((t = 1; t <= 600; t++)); do
			sleep 0.1
			kill -0 "$pid" 2>/dev/null || break
			((t % 10 == 0 && t >= 50)) || continue
			[ "$(off_requests)" -eq "$before" ] || continue
			# fio's job processes run in a session of their own
			kids=$(pgrep -P "$pid")
			((fio_start_race)) && off_start_stall "$before" "$pid" $kids && break
		done
		if ! kill -0 "$pid" 2>/dev/null; then
			rc=0
			wait "$pid" || rc=$?
			[ $rc -eq 0 ] || { cat "$T/fio.out" >&2; fail "offload run failed (exit $rc): $*"; }
			grep -q 'err=[ ]*[1-9]' "$T/fio.out" && { cat "$T/fio.out" >&2; fail "I/O error: $*"; }
			return 0
		fi
		kids=$(pgrep -P "$pid")
		if ! { ((fio_start_race)) && off_start_stall "$before" "$pid" $kids; }; then
			{
				echo "--- threads (process/thread, state, where it sleeps):"
				off_threads "$pid" $kids
				echo "--- requests the server got in this run: $(($(off_requests) - before))"
				cat "$T/fio.out"
			} >&2
			kill -KILL "$pid" $kids
			fail "offload run hung ($fio_version), not in fio's start-up deadlock: $*"
		fi
		kill -KILL "$pid" $kids
		wait "$pid" 2>/dev/null
		echo "NOTE: try $try: $fio_version hit its offload start-up deadlock (workqueue.c, start_worker; fixed in fio 3.42): no request reached the server and every thread of the job waits on a futex; trying again" >&2
	done
	off_undecided+=("$*")
}
offload --name=off --verify=crc32c --verify_fatal=1 --size=16m --io_submit_mode=offload --rw=randwrite --bs=4k --iodepth=16
offload --name=offt --verify=crc32c --verify_fatal=1 --size=16m --io_submit_mode=offload --thread=1 --rw=randrw --bs=4k --iodepth=8
expect_fio_ok --name=qd1 "${v[@]}" --size=8m --rw=randwrite --bs=4k --iodepth=1
expect_fio_ok --name=qd1024 "${v[@]}" --size=64m --rw=randwrite --bs=4k --iodepth=1024
expect_fio_ok --name=batch "${v[@]}" --size=32m --rw=randwrite --bs=4k --iodepth=64 --iodepth_batch_submit=16 --iodepth_batch_complete_min=8 --iodepth_batch_complete_max=32
# At depth 16 and over the engine holds new requests back while the server
# is busy; fio's pauses (rate limit, thinktime, iodepth_low, polling with
# min 0) must still see every request sent and completed.
expect_fio_ok --name=rate "${v[@]}" --size=8m --rw=randwrite --bs=4k --iodepth=64 --rate_iops=4000
expect_fio_ok --name=think "${v[@]}" --size=8m --rw=randwrite --bs=4k --iodepth=64 --thinktime=2000 --thinktime_blocks=48
expect_fio_ok --name=low "${v[@]}" --size=16m --rw=randrw --bs=4k --iodepth=64 --iodepth_low=40
expect_fio_ok --name=min0 "${v[@]}" --size=16m --rw=randwrite --bs=4k --iodepth=32 --iodepth_batch_complete_min=0
expect_fio_ok --name=bs512 "${v[@]}" --size=4m --rw=randwrite --bs=512 --iodepth=32
expect_fio_ok --name=bsrange "${v[@]}" --size=32m --rw=randwrite --bsrange=512-128k --iodepth=16
if [ "$transport" != tcmu ]; then
	# nbdkit advertises no block size limit: the engine's 32 MiB default maximum.
	expect_fio_ok --name=bsmax "${v[@]}" --size=128m --rw=write --bs=32m --iodepth=2
	expect_fio_error "write block size 67108864 exceeds the server's maximum request size 33554432" \
		--name=bstoo --uri="$uri" "${tp[@]}" --size=128m --rw=write --bs=64m
else
	# Split at max_transfer (64k) into 512 commands each, as the block
	# layer splits; and with a data area too small for one whole request.
	expect_fio_ok --name=bsbig "${v[@]}" --size=128m --rw=write --bs=32m --iodepth=2
	expect_fio_ok --name=smallarea "${v[@]}" --size=16m --rw=randrw --bs=1m --iodepth=8 --data_size=256k --max_transfer=128k
	expect_fio_ok --name=smallring "${v[@]}" --size=16m --rw=randwrite --bs=4k --iodepth=256 --ring_size=64k
	expect_fio_ok --name=trim "${v[@]}" --size=8m --rw=randtrim --bs=64k --iodepth=16
	expect_fio_ok --name=trimws "${v[@]}" --size=8m --rw=trimwrite --bs=64k --iodepth=16 --trim_mode=write_same
	expect_fio_ok --name=fua "${v[@]}" --size=8m --rw=randwrite --bs=4k --iodepth=16 --fua=1 --fsync=8
fi
# Time-based runs exercise getevents with fio's own timeouts.
expect_fio_ok --name=timed --uri="$uri" "${tp[@]}" --size=64m --rw=randread --bs=4k --iodepth=8 --time_based --runtime=1
# An offload run that never got past fio's deadlock was not checked.
((${#off_undecided[@]} == 0)) ||
	skip "every try of these offload runs hit $fio_version's start-up deadlock (workqueue.c start_worker; fixed in fio 3.42), so they were not checked: ${off_undecided[*]}"
echo "PASS"
