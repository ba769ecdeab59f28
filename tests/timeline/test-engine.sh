#!/bin/bash
# Description: timeline=DIR, the engine's stamps. A verified 4 KiB randrw
# job at QD8 over NBD (nbd-shim memory) and over TCMU (tcmu-shim memory),
# and one whose requests TCMU splits into 4 commands: fio succeeds, the
# record file has one record per wire command (fio's I/Os, verify reads
# included), every stamp taken and in order, the JSON summary parses with
# every phase counted, its total within 10% of fio's own latency, and the
# table is on stderr (check_engine.py). A directory that cannot be made
# fails the job with a message naming it and the fix.
. "$TORUS_SRC/tests/lib.sh"
require fio python3
[ -x "$NBD_SHIM" ] || fail "no nbd-shim at $NBD_SHIM: build the tree"

check="$TORUS_SRC/tests/timeline/check_engine.py"
job=(--name=tl --size=8m --rw=randrw --bs=4k --iodepth=8 --verify=crc32c
	--verify_fatal=1 --output-format=json)

# run_checked TRANSPORT CMDS URI FIO-ARGS...: one job into $T/tl-TRANSPORT.
run_checked() {
	local tp=$1 cmds=$2 uri=$3 dir=$T/tl-$1-$2
	shift 3
	if ! "$FIO" --ioengine="external:$ENGINE" --uri="$uri" "${job[@]}" \
		--timeline="$dir" "$@" --output="$T/fio.json" 2>"$T/fio.err"; then
		cat "$T/fio.err" >&2
		fail "fio exited non-zero with timeline=$dir"
	fi
	python3 "$check" "$dir/engine-1.rec" "$dir/engine-1.json" \
		"$T/fio.json" "$T/fio.err" "$tp" "$cmds" 8 ||
		fail "timeline of the $tp job (above)"
}

start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/nbd.sock" \
	--backend memory --size 64M
wait_socket "$T/nbd.sock"
run_checked nbd 1 "nbd+unix:///?socket=$T/nbd.sock"

start_tcmu_shim "$T/tcmu.sock" --backend memory --size 64M
run_checked tcmu 1 "tcmu+unix:///?socket=$T/tcmu.sock"
run_checked tcmu 4 "tcmu+unix:///?socket=$T/tcmu.sock" --bs=16k \
	--max_transfer=4k

# A directory that cannot be made: the job fails, naming it and the fix.
touch "$T/file"
expect_fio_error "torus: timeline: $T/file is not a directory (give a directory for the timeline's files)" \
	--name=bad --uri="nbd+unix:///?socket=$T/nbd.sock" --size=1m \
	--timeline="$T/file"
if [ "$(id -u)" = 0 ]; then
	# root writes anywhere: a parent that is a file cannot hold it either
	parent=$T/file why="Not a directory"
else
	mkdir "$T/ro" && chmod 555 "$T/ro"
	parent=$T/ro why="Permission denied"
fi
expect_fio_error "torus: timeline: cannot make the directory $parent/tl: $why (give one whose parent exists and is writable)" \
	--name=bad --uri="nbd+unix:///?socket=$T/nbd.sock" --size=1m \
	--timeline="$parent/tl"
echo "PASS"
