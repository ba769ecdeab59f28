#!/bin/bash
# Description: writes the engine saw acknowledged survive a SIGKILL of the
# server. For nbdkit file and the shim's file store (standard profile,
# multi-conn), at conns=1 and conns=4: fio writes 4 KiB blocks with
# verify=crc32c headers into a fresh file, the server is killed mid-run, fio
# must fail with EIO, then every acknowledged write is read back and
# verified through the engine from a server restarted on the same file.
#
# Which writes were acknowledged: fio's completion latency log with
# log_offset=1 has one line per write that completed without error (fio
# logs no sample for a failed one), with its offset. The count is checked
# against fio's own io_bytes. fio's verify_state_save/verify_only is not
# used: it assumes every write issued more than iodepth writes before the
# last one has completed, which out-of-order replies (several connections,
# nbdkit's parallel threads) break, so it read blocks whose writes had
# failed and reported them as corrupt.
#
# The check replays the log as reads (read_iolog) with verify=crc32c: in a
# read-only job fio checks each block's header (magic, length, the offset
# it was written at, header crc) and the crc32c of its data. Every block is
# written once (randommap) into a file of zeroes, so there is no older
# generation that could pass for the acknowledged one. The replay runs at
# iodepth=1 because fio 3.33 marks an iolog job done when the log runs out
# and never reaps, so never verifies, what is still in flight; the test
# insists the check read exactly as many blocks as were acknowledged.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

SIZE=2G
BS=4096
QD=32
# Writes must be flowing (this much of the file allocated) before the kill.
MIN_ALLOC=$((16 << 20))

# The images live in tmpfs when there is one: removing a file that took
# tens of thousands of random 4 KiB writes from a busy disk took up to 20 s.
IMG_DIR=$(mktemp -d /dev/shm/torus-data-safety.XXXXXX 2>/dev/null) || IMG_DIR=$T
trap '[ "$IMG_DIR" = "$T" ] || rm -rf "$IMG_DIR"; cleanup' EXIT
# Without these, bash would die of SIGTERM or SIGINT without the EXIT trap.
trap 'exit 143' TERM
trap 'exit 130' INT

# start_server KIND IMAGE NAME: a file-backed server on $T/NAME.sock,
# ready once its pid file exists; sets $srv_pid and $uri.
start_server() {
	local kind=$1 img=$2 name=$3
	case $kind in
	nbdkit)
		start_bg nbdkit --foreground --exit-with-parent -P "$T/$name.pid" \
			-U "$T/$name.sock" file "$img" ;;
	shim)
		start_bg "$NBD_SHIM" --profile standard --store "file:$img" \
			--size "$SIZE" --pidfile "$T/$name.pid" \
			--listen "unix:$T/$name.sock" ;;
	esac
	srv_pid=$!
	wait_pidfile "$T/$name.pid" $srv_pid "$kind on $img"
	uri="nbd+unix:///?socket=$T/$name.sock"
}

# json_field FILE EXPR: evaluate EXPR on fio's JSON report (the first job
# as j); fio may print error lines before the JSON.
json_field() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index('{'):])['jobs'][0]
print(eval(sys.argv[2]))
EOF
}

# run_case KIND CONNS
run_case() {
	local kind=$1 conns=$2 name="$1-c$2"
	local img=$IMG_DIR/$name.img i alloc delay fio_pid rc acked issued bytes read
	local start=$SECONDS

	rm -f "$T"/ack*.log
	truncate -s "$SIZE" "$img"
	start_server "$kind" "$img" "$name-a"

	"$FIO" --ioengine="external:$ENGINE" --uri="$uri" --conns="$conns" \
		--name=ds --rw=randwrite --bs=$BS --iodepth=$QD --size=$SIZE \
		--verify=crc32c --do_verify=0 \
		--write_lat_log="$T/ack" --log_offset=1 \
		--output-format=json >"$T/$name-w.json" 2>"$T/$name-w.err" &
	fio_pid=$!

	# Kill once writes are flowing (or after 2 s: the count of acknowledged
	# writes is checked below), after a further random 100-500 ms, so that
	# the kill lands at a different point of the stream each run.
	for ((i = 0; i < 40; i++)); do
		alloc=$(($(stat -c %b "$img") * 512))
		[ "$alloc" -ge $MIN_ALLOC ] && break
		kill -0 $fio_pid 2>/dev/null || break
		sleep 0.05
	done
	delay=0.$((RANDOM % 5 + 1))
	sleep "$delay"
	if ! kill -0 $fio_pid 2>/dev/null; then
		cat "$T/$name-w.err" >&2
		fail "$name: fio ended before the server was killed"
	fi
	kill -KILL "$srv_pid"
	wait "$srv_pid" 2>/dev/null

	# The engine fails what was outstanding; fio must stop on its own.
	wait_gone $fio_pid 30 "$name: fio still running 30 s after the server was killed"
	rc=$gone_rc
	if [ $rc -eq 0 ]; then
		cat "$T/$name-w.err" >&2
		fail "$name: fio succeeded although the server was killed mid-run"
	fi
	grep -q 'connection [0-9]* lost' "$T/$name-w.err" ||
		{ cat "$T/$name-w.err" >&2; fail "$name: the engine did not report a lost connection"; }
	[ "$(json_field "$T/$name-w.json" "j['error']")" = 5 ] ||
		{ cat "$T/$name-w.err" >&2; fail "$name: fio's error is not EIO (5)"; }

	# The acknowledged writes: ddir 1 (write) lines of the clat log.
	awk -F', *' -v bs=$BS '$3 == 1 {
		if ($4 != bs) { print "bad size " $4 > "/dev/stderr"; exit 1 }
		print "chk read " $5 " " $4
	}' "$T/ack_clat.1.log" >"$T/$name.reads" ||
		fail "$name: unexpected clat log line"
	acked=$(wc -l <"$T/$name.reads")
	bytes=$(json_field "$T/$name-w.json" "j['write']['io_bytes']")
	issued=$(json_field "$T/$name-w.json" "j['write']['total_ios']")
	[ $((acked * BS)) -eq "$bytes" ] ||
		fail "$name: the clat log has $acked writes, fio counted $bytes bytes"
	[ "$acked" -ge 1000 ] || fail "$name: only $acked writes acknowledged"
	[ "$issued" -gt "$acked" ] ||
		fail "$name: no write was outstanding at the kill ($issued issued)"
	{
		echo "fio version 2 iolog"
		echo "chk add"
		echo "chk open"
		cat "$T/$name.reads"
	} >"$T/$name.iolog"

	start_server "$kind" "$img" "$name-b"
	expect_fio_ok --uri="$uri" --conns="$conns" --name=chk \
		--read_iolog="$T/$name.iolog" --iodepth=1 \
		--verify=crc32c --verify_fatal=1 --output-format=json
	read=$(json_field "$T/fio.out" "j['read']['io_bytes']")
	[ "$read" -eq $((acked * BS)) ] ||
		fail "$name: verified $read bytes, expected $((acked * BS))"
	# Done with it: SIGKILL, as the shim's flush on a clean exit only costs
	# time here.
	kill -KILL "$srv_pid"
	wait "$srv_pid" 2>/dev/null
	rm -f "$img"
	echo "$name: killed $((alloc >> 20)) MiB + ${delay}s into the run: $issued writes issued," \
		"$acked acknowledged, all $acked verified after restart ($((SECONDS - start)) s)"
}

for kind in nbdkit shim; do
	for conns in 1 4; do
		run_case $kind $conns
	done
done
echo "PASS"
