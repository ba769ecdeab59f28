#!/bin/bash
# Description: the shims' --timeline (issue 23). fio through the engine
# drives nbd-shim (the pipelined standard profile, the serial torus one,
# replies held by client shaping) and tcmu-shim (the memory store's
# synchronous path, the nbd store's asynchronous one); shim-records.py then
# reads every record file: the header each shim must write, one file per
# connection or ring named after it, exactly one record per request or
# command (reads, writes, trims and a flush, each range once), its four
# stamps non-zero and in order. A store that takes 1 ms per request
# (--latency-us 1000 --shape-at storage) shows it between started and
# stored, a fast one does not, and held replies show between received and
# replied. A bad --timeline DIR stops either shim at start, exit 2.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built"
[ -x "$TCMU_SHIM" ] || fail "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || fail "$ENGINE is not built"

# server KIND NAME ARGS...: nbd-shim or tcmu-shim on $T/NAME.sock, its
# log in $T/NAME.log, ready; its pid in pids[NAME]
declare -A pids
server() {
	local kind=$1 name=$2
	shift 2
	if [ "$kind" = nbd ]; then
		set -- "$NBD_SHIM" --listen "unix:$T/$name.sock" "$@"
	else
		set -- "$TCMU_SHIM" --listen "unix:$T/$name.sock" "$@"
	fi
	start_bg "$@" --pidfile "$T/$name.pid" 2>"$T/$name.log"
	pids[$name]=${_bg_pids[-1]}
	wait_pidfile "$T/$name.pid" "${pids[$name]}" "$*"
}

# stop NAME...: SIGTERM, and a clean exit within 10 s (files written)
stop() {
	local name
	for name in "$@"; do
		kill -TERM "${pids[$name]}"
	done
	for name in "$@"; do
		wait_gone "${pids[$name]}" 10 "$name did not stop within 10 s of SIGTERM"
		forget_bg "${pids[$name]}"
		[ "$gone_rc" = 0 ] || fail "$name exited with $gone_rc after SIGTERM: $(cat "$T/$name.log")"
	done
}

# expect_usage_error 'MESSAGE' CMD...: exit 2, MESSAGE its first line
expect_usage_error() {
	local msg=$1 rc=0 out
	shift
	out=$("$@" 2>&1) || rc=$?
	[ "$rc" = 2 ] || fail "$* exited with $rc, expected 2: $out"
	[ "$(head -n1 <<<"$out")" = "$msg" ] ||
		fail "$*: expected '$msg', got: $out"
	[ ! -e "$T/never.sock" ] || fail "$*: it listened anyway"
}

# A bad directory: named, with the fix, before anything starts.
touch "$T/file"
expect_usage_error \
	"nbd-shim: --timeline: $T/file is not a directory (give a directory for the timeline's files)" \
	"$NBD_SHIM" --profile standard --size 1M --listen "unix:$T/never.sock" --timeline "$T/file"
expect_usage_error \
	"tcmu-shim: --timeline: cannot make the directory $T/none/tl: No such file or directory (give one whose parent exists and is writable)" \
	"$TCMU_SHIM" --listen "unix:$T/never.sock" --size 1M --timeline "$T/none/tl"

# std: pipelined; torus: serial, each reply sent before the next request
# is read; held: replies held 2 ms (client shaping); slow: every request
# 1 ms in the store; mem: tcmu-shim's synchronous path; nbd: its nbd
# store's asynchronous requests, to slow.
server nbd std --profile standard --size 64M --timeline "$T/std"
server nbd torus --profile coreos --size 64M --timeline "$T/torus"
server nbd held --profile standard --size 64M --latency-us 2000 --timeline "$T/held"
server nbd slow --profile standard --size 64M --latency-us 1000 --shape-at storage \
	--timeline "$T/slow"
server tcmu mem --size 64M --timeline "$T/mem"
server tcmu nbd --store "nbd:nbd+unix:///?socket=$T/slow.sock" --timeline "$T/nbd"

# One fio for all: the trims (TRIM; UNMAP) after the verify jobs.
nbd="nbd+unix:///?socket=$T"
verify=(--rw=randwrite --bs=4k --size=1M --iodepth=16 --verify=crc32c --do_verify=1)
trim=(--stonewall --rw=trim --bs=64k --size=1M --iodepth=4)
expect_fio_ok \
	--name=std --uri="$nbd/std.sock" --conns=2 "${verify[@]}" --end_fsync=1 \
	--name=mem --uri="tcmu+unix:///?socket=$T/mem.sock" "${verify[@]}" \
	--name=torus --uri="nbd+unix:///torus?socket=$T/torus.sock" --rw=randwrite \
		--bs=4k --size=256k --iodepth=4 \
	--name=held --uri="$nbd/held.sock" --rw=randread --bs=4k --size=256k --iodepth=8 \
	--name=slow --uri="$nbd/slow.sock" --rw=randread --bs=4k --size=256k --iodepth=4 \
	--name=nbd --uri="tcmu+unix:///?socket=$T/nbd.sock" --rw=randread --bs=4k \
		--offset=256k --size=128k --iodepth=1 \
	--name=std-trim --uri="$nbd/std.sock" "${trim[@]}" \
	--name=mem-trim --uri="tcmu+unix:///?socket=$T/mem.sock" "${trim[@]}"
stop nbd mem std torus held
stop slow
grep -q "at most 1 in flight to the store" "$T/nbd.log" ||
	fail "tcmu-shim's nbd store did not take the asynchronous path: $(cat "$T/nbd.log")"

# Every file, its header, one record per request or command, the stamps
# in order; a fast store's time, a slow one's, replies held.
python3 "$TORUS_SRC/tests/timeline/shim-records.py" \
	"$T/std" nbd-shim --pid "${pids[std]}" --io write:256:4096 \
		--io read:256:4096 --io trim:16:65536 --io flush:1:0 \
		--between started stored 0 500 + \
	"$T/torus" nbd-shim --pid "${pids[torus]}" --io write:64:4096 + \
	"$T/held" nbd-shim --pid "${pids[held]}" --io read:64:4096 \
		--between received replied 2000 10000 --between started stored 0 500 + \
	"$T/slow" nbd-shim --pid "${pids[slow]}" --io read:96:4096 \
		--between started stored 1000 5000 + \
	"$T/mem" tcmu-shim --pid "${pids[mem]}" --io write:256:4096 \
		--io read:256:4096 --io trim:16:65536 --between started stored 0 500 + \
	"$T/nbd" tcmu-shim --pid "${pids[nbd]}" --io read:32:4096 \
		--between started stored 1000 5000 ||
	fail "the records are not what the shims must write (above)"
files=("$T"/std/nbd-shim-*.rec)
[ "${#files[@]}" -ge 3 ] ||
	fail "nbd-shim: not a file per connection (2 and the probe's): ${files[*]}"
echo PASS
