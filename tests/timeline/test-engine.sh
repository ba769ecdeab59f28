#!/bin/bash
# Description: timeline=DIR, the engine's stamps. Verified 4 KiB randrw
# jobs at QD8 over NBD (nbd-shim memory) and over TCMU (tcmu-shim memory),
# one whose requests TCMU splits into 4 commands, and one at QD16 with
# hold_batch=1: fio succeeds, the record file has one record per wire
# command (fio's I/Os, verify reads included), every stamp taken and in
# order, a split request's commands but its first published at a stamp of
# their own (not its queued), every key a cookie or a cmd_id, the JSON summary parses with every
# phase counted and its total as the records give it, that total's mean
# not above fio's latency and its median, per direction, between fio's
# clat and lat medians (10% leeway), and the table is on stderr
# (check_engine.py); every key is one the shims saw on the wire (their
# --timeline records). A directory that cannot be made fails
# the job with a message naming it and the fix; so does offload.
. "$TORUS_SRC/tests/lib.sh"
require fio python3
[ -x "$NBD_SHIM" ] || fail "no nbd-shim at $NBD_SHIM: build the tree"

check="$TORUS_SRC/tests/timeline/check_engine.py"
job=(--name=tl --size=8m --rw=randrw --bs=4k --iodepth=8 --verify=crc32c
	--verify_fatal=1 --lat_percentiles=1 --output-format=json)

# run_checked NAME TRANSPORT CMDS URI FIO-ARGS...: one job into $T/NAME.
run_checked() {
	local dir=$T/$1 tp=$2 cmds=$3 uri=$4
	shift 4
	if ! "$FIO" --ioengine="external:$ENGINE" --uri="$uri" "${job[@]}" \
		--timeline="$dir" "$@" --output="$T/fio.json" 2>"$T/fio.err"; then
		cat "$T/fio.err" >&2
		fail "fio exited non-zero with timeline=$dir"
	fi
	python3 "$check" "$dir/engine-1.rec" "$dir/engine-1.json" \
		"$T/fio.json" "$T/fio.err" "$tp" "$cmds" ||
		fail "timeline of the $tp job (above)"
}

# The shims stamp too: the engine's keys must be the ones on the wire.
start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/nbd.sock" \
	--store memory --size 64M --timeline "$T/srv"
nbd_pid=${_bg_pids[-1]}
wait_socket "$T/nbd.sock"
run_checked nbd nbd 1 "nbd+unix:///?socket=$T/nbd.sock"

start_tcmu_shim "$T/tcmu.sock" --store memory --size 64M --timeline "$T/srv"
tcmu_pid=${_bg_pids[-1]}
run_checked tcmu tcmu 1 "tcmu+unix:///?socket=$T/tcmu.sock"
run_checked tcmu-split tcmu 4 "tcmu+unix:///?socket=$T/tcmu.sock" \
	--bs=16k --max_transfer=4k
# held commands are published (and stamped) at the next submit
run_checked tcmu-hold tcmu 1 "tcmu+unix:///?socket=$T/tcmu.sock" \
	--iodepth=16 --hold_batch=1

# Stopped, the shims have written all their records.
for pid in "$nbd_pid" "$tcmu_pid"; do
	kill -TERM "$pid"
	wait "$pid"
	forget_bg "$pid"
done
python3 "$check" --wire "$T/nbd/engine-1.rec" "$T"/srv/nbd-shim-*.rec ||
	fail "NBD cookies (above)"
for d in tcmu tcmu-split tcmu-hold; do
	python3 "$check" --wire "$T/$d/engine-1.rec" "$T"/srv/tcmu-shim-*.rec ||
		fail "TCMU cmd_ids (above)"
done

# A directory that cannot be made: the job fails, naming it and the fix.
start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/nbd2.sock" \
	--store null --size 64M
wait_socket "$T/nbd2.sock"
touch "$T/file"
expect_fio_error "torus: timeline: $T/file is not a directory (give a directory for the timeline's files)" \
	--name=bad --uri="nbd+unix:///?socket=$T/nbd2.sock" --size=1m \
	--timeline="$T/file"
if [ "$(id -u)" = 0 ]; then
	# root writes anywhere: a parent that is a file cannot hold it either
	parent=$T/file why="Not a directory"
else
	mkdir "$T/ro" && chmod 555 "$T/ro"
	parent=$T/ro why="Permission denied"
fi
expect_fio_error "torus: timeline: cannot make the directory $parent/tl: $why (give one whose parent exists and is writable)" \
	--name=bad --uri="nbd+unix:///?socket=$T/nbd2.sock" --size=1m \
	--timeline="$parent/tl"
# Offload: fio's workers would each open the job's file with an engine of
# their own; refused before anything runs.
expect_fio_error "torus: timeline= does not work with io_submit_mode=offload (its worker threads queue the job's I/O, each with an engine of its own): use io_submit_mode=inline, or drop timeline=" \
	--name=bad --uri="nbd+unix:///?socket=$T/nbd2.sock" --size=1m \
	--io_submit_mode=offload --timeline="$T/offload"
echo "PASS"
