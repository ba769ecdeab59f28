#!/bin/bash
# test-crash.sh [nbd] [tcmu] [libnbd] (nbd and tcmu when none is named):
# what a completed
# flush covered, and every FUA write, survives a crash that loses every
# write not flushed. SIGKILL of a server on tmpfs or a disk never loses
# the page cache, so a store whose flush does nothing passes that test
# (test-data-safety.sh); here the images live on a layer that really drops
# unflushed writes at the crash:
#
#   server under test ──pwrite/fdatasync──▶ FUSE file (nbdfuse)
#     ──NBD──▶ nbdkit --filter=cache cache=writeback ──▶ file plugin ──▶ backing
#
# The cache filter keeps written blocks in its own unlinked temporary file
# and writes them to the plugin only on a flush (or a FUA write); SIGKILL of
# that nbdkit loses every dirty block. What was checked, in nbdkit 1.32.5,
# libnbd 1.14.2 and libfuse 3.14 (Debian 12), and is proved again by the
# control below on every run:
# - filters/cache/blk.c blk_write: in writeback mode a write only goes to
#   the cache file and marks the block dirty; cache.c cache_flush is the
#   only place dirty blocks reach the plugin (for_each_dirty_block), then
#   it flushes the plugin. reclaim.c does nothing unless cache-max-size is
#   set, so there is no size limit that writes back early.
# - fuse/operations.c: nbdfuse_fsync (fsync and fdatasync) sends an NBD
#   flush; there is no flush or release operation (close sends nothing).
# - libfuse lib/fuse_lowlevel.c do_init: the writeback cache is not among
#   the capabilities wanted by default and nbdfuse has no init operation
#   to ask for it, so the kernel sends each write to nbdfuse before
#   pwrite returns, and nbdfuse waits for the NBD reply.
# - nbdcopy follows block status, which the cache filter passes to the
#   plugin (a hole in the backing file reads as zeroes there): the control
#   reads the export with --no-extents.
#
# The crash kills the cache's nbdkit first and the server under test
# after it: from the first kill on, nothing the dying server does (its
# exit path may flush) can reach the backing file.
#
# Per server (nbdkit file and nbd-shim's file store over the native NBD
# transport, nbdkit file over transport=libnbd, tcmu-shim's file store),
# four crashes, fio writing 4 KiB blocks with verify=crc32c headers, each
# block once into a file of zeroes:
#   fsync      iodepth 1, fsync=N
#   fdatasync  iodepth 1, fdatasync=N
#   fua        iodepth 16, every write FUA (engine fua=1)
#   depth      iodepth 16, a job that ends with end_fsync=1, then one that
#              writes more and is crashed
# Which writes a completed flush covers. fio 3.33 (io_u.c get_rw_ddir)
# issues a sync when the count of writes issued is a multiple of N and the
# last completion was not a sync: W1..WN, SYNC, WN+1..W2N, SYNC, ... (seen
# on the wire with nbdkit's log filter). A sync has no line in the
# completion-latency log (only reads, writes and trims do, io_u.c
# account_io_completion), which has one line per write acknowledged, in
# completion order; at iodepth 1 that is issue order. So with A writes
# acknowledged, the sync after write kN completed if write kN+1 was
# acknowledged: the first N * floor((A - 1) / N) writes are covered. At
# depth, a sync is issued with writes in flight and the log cannot tell
# which it covers; only end_fsync is decidable (fio reaps every write
# before it), and it completed if the next job (stonewall) got any write
# acknowledged. A FUA write is covered once acknowledged.
#
# The check reads the backing file by another path than the one that
# wrote it: fio psync replaying the covered blocks as a read_iolog with
# verify=crc32c (the header carries the offset, so a misplaced block fails
# too), and the bytes verified must be all that was covered. The depth
# case also insists the crash lost some of the second job's unflushed
# writes, so that a layer that kept them could not pass unnoticed.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit nbdfuse nbdcopy fusermount3 python3
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ -c /dev/fuse ] || skip "no /dev/fuse: FUSE is not available here (nbdfuse needs it)"

transports=("$@")
[ ${#transports[@]} -gt 0 ] || transports=(nbd tcmu)
servers=()
for t in "${transports[@]}"; do
	case $t in
	nbd)
		[ -x "$NBD_SHIM" ] || fail "no NBD shim at $NBD_SHIM: build the tree"
		servers+=(nbdkit shim) ;;
	tcmu)
		[ -x "$TCMU_SHIM" ] || fail "no handler host at $TCMU_SHIM: build the tree with -Dshims=true"
		servers+=(tcmu) ;;
	libnbd)
		servers+=(libnbd) ;;
	*)
		fail "usage: $0 [nbd] [tcmu] [libnbd]" ;;
	esac
done

# Far more than is written before the crash (about 1 MiB plus half a
# second), so that fio cannot finish first on a fast machine: the images
# are sparse, and only what is written takes room.
SIZE=$((256 << 20))
BS=4096
N=8
QD=16
# The depth case's first job (end_fsync) writes this much.
DSIZE=$((2 << 20))
# Crash once this much has been written (to the cache).
TRIGGER=$((1 << 20))
# Fewer covered writes than this and the run decides nothing.
MIN_COVERED=64

# Backing files and the cache filter's file live in tmpfs when there is
# one: fast, and still there after the crash like a disk.
IMG_DIR=$(mktemp -d /dev/shm/torus-crash.XXXXXX 2>/dev/null) || IMG_DIR=$T
mounts=()
unmount_all() {
	local m
	for m in "${mounts[@]}"; do
		fusermount3 -uz "$m" 2>/dev/null
	done
}
trap 'unmount_all; [ "$IMG_DIR" = "$T" ] || rm -rf "$IMG_DIR"; cleanup' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# alloc FILE: bytes allocated to FILE.
alloc() {
	echo $(($(stat -L -c %b "$1") * 512))
}

# layer_start NAME SIZE: a zeroed backing file of SIZE bytes behind the
# cache filter, mounted by nbdfuse as $vimg; sets $backing, $cache_pid,
# $cache_uri, $fuse_pid, $mnt.
layer_start() {
	local name=$1 size=$2
	backing=$IMG_DIR/$name.img
	mnt=$T/$name.mnt
	vimg=$mnt/img
	truncate -s "$size" "$backing"
	mkdir "$mnt"
	# 4 KiB cache blocks (the default is 64 KiB): a flush writes back the
	# blocks written, not their neighbours.
	start_bg env TMPDIR="$IMG_DIR" nbdkit --foreground --exit-with-parent \
		-U "$T/$name.cache.sock" -P "$T/$name.cache.pid" \
		--filter=cache file "$backing" cache=writeback cache-min-block-size=4k
	cache_pid=$!
	cache_uri="nbd+unix:///?socket=$T/$name.cache.sock"
	wait_pidfile "$T/$name.cache.pid" $cache_pid "nbdkit --filter=cache"
	# Its complaints after the crash (the server gone) are expected.
	start_bg nbdfuse -P "$T/$name.fuse.pid" "$vimg" --unix "$T/$name.cache.sock" \
		2>"$T/$name.fuse.log"
	fuse_pid=$!
	mounts+=("$mnt")
	wait_pidfile "$T/$name.fuse.pid" $fuse_pid nbdfuse
	[ "$(stat -c %s "$vimg")" = "$size" ] || fail "$name: nbdfuse's file is not $size bytes"
}

# cache_file: the cache filter's (unlinked) file, as /proc/PID/fd/N.
cache_file() {
	local f
	for f in /proc/$cache_pid/fd/*; do
		case $(readlink "$f") in
		"$IMG_DIR"/*" (deleted)")
			echo "$f"
			return ;;
		esac
	done
	fail "no cache file among nbdkit's open files"
}

# layer_stop: after the crash, nbdfuse (whose nbdkit is gone) and its
# mount. Asked to unmount, it would wait seconds for the commands the dead
# nbdkit never answered.
layer_stop() {
	kill -KILL $fuse_pid 2>/dev/null
	wait $fuse_pid 2>/dev/null
	forget_bg $fuse_pid
	fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" ||
		fail "cannot unmount $mnt"
	mounts=("${mounts[@]/"$mnt"/}")
}

# server_start KIND NAME: the server under test on $vimg; sets $srv_pid,
# $uri and $transport (the engine's transport= option, if not the uri's).
server_start() {
	local kind=$1 name=$2
	transport=()
	case $kind in
	nbdkit | libnbd)
		[ "$kind" = libnbd ] && transport=(--transport=libnbd)
		start_bg nbdkit --foreground --exit-with-parent -P "$T/$name.pid" \
			-U "$T/$name.sock" file "$vimg"
		srv_pid=$!
		wait_pidfile "$T/$name.pid" $srv_pid "nbdkit file"
		uri="nbd+unix:///?socket=$T/$name.sock" ;;
	shim)
		start_bg "$NBD_SHIM" --profile standard --store "file:$vimg" \
			--size "$SIZE" --pidfile "$T/$name.pid" \
			--listen "unix:$T/$name.sock"
		srv_pid=$!
		wait_pidfile "$T/$name.pid" $srv_pid nbd-shim
		uri="nbd+unix:///?socket=$T/$name.sock" ;;
	tcmu)
		start_tcmu_shim "$T/$name.sock" --store "file:$vimg"
		srv_pid=${_bg_pids[-1]}
		uri="tcmu+unix:///?socket=$T/$name.sock" ;;
	esac
}

# crash: the cache's nbdkit first (see the top), then the server.
crash() {
	kill -KILL $cache_pid $srv_pid
	wait $cache_pid $srv_pid 2>/dev/null
	forget_bg $cache_pid
	forget_bg $srv_pid
}

# json_field FILE EXPR: EXPR on fio's JSON report (its jobs as jobs); fio
# may print error lines before the JSON.
json_field() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
s = open(sys.argv[1]).read()
jobs = json.loads(s[s.index('{'):])['jobs']
print(eval(sys.argv[2]))
EOF
}

# acked LOG: the offsets of the writes LOG (a clat log) acknowledged, in
# completion order.
acked() {
	[ -f "$1" ] || fail "no completion log $1"
	awk -F', *' -v bs=$BS '$3 == 1 {
		if ($4 != bs) { print "bad size " $4 > "/dev/stderr"; exit 1 }
		print $5
	}' "$1" || fail "unexpected line in $1"
}

# lost FILE OFFSETS: how many of the blocks at OFFSETS (a file of them)
# read as zeroes in FILE, that is, never arrived.
lost() {
	python3 - "$1" "$2" $BS <<'EOF'
import sys
bs = int(sys.argv[3])
n = 0
with open(sys.argv[1], 'rb') as f:
    for line in open(sys.argv[2]):
        f.seek(int(line))
        n += f.read(bs) == bytes(bs)
print(n)
EOF
}

# control: the layer itself. A write with fdatasync reaches the backing
# file; one without, acknowledged by pwrite (so at nbdkit: read there over
# NBD while the file is still open) and then closed, does not, and is gone
# after the crash. A layer that kept it would let a flush that does
# nothing pass, so it fails the test.
control() {
	layer_start control $((16 << 20))
	python3 - "$vimg" "$backing" "$cache_uri" "$IMG_DIR/control.nbd" <<'EOF'
import os, subprocess, sys
vimg, backing, uri, copy = sys.argv[1:]
synced, unsynced = os.urandom(4096), os.urandom(4096)
S, U = 1 << 20, 2 << 20
def at(path, off):
    with open(path, 'rb') as f:
        f.seek(off)
        return f.read(4096)
fd = os.open(vimg, os.O_RDWR)
os.pwrite(fd, synced, S)
os.fdatasync(fd)
os.pwrite(fd, unsynced, U)
subprocess.run(['nbdcopy', '--no-extents', uri, copy], check=True)
if at(copy, U) != unsynced:
    sys.exit('a write pwrite acknowledged was not at nbdkit: the kernel caches writes to the FUSE file')
os.close(fd)
if at(backing, S) != synced:
    sys.exit('fdatasync on the FUSE file did not reach the backing file')
if at(backing, U) != bytes(4096):
    sys.exit('a write without fdatasync reached the backing file before the crash (written back on close, or by the cache)')
open(backing + '.want', 'wb').write(synced)
EOF
	[ $? = 0 ] || fail "control: the layer is not what this test needs (above)"
	kill -KILL $cache_pid
	wait $cache_pid 2>/dev/null
	forget_bg $cache_pid
	layer_stop
	python3 - "$backing" <<'EOF' || fail "control: the layer does not drop unflushed writes at the crash, so this test could not see a flush that does nothing"
import sys
with open(sys.argv[1], 'rb') as f:
    f.seek(1 << 20); s = f.read(4096)
    f.seek(2 << 20); u = f.read(4096)
want = open(sys.argv[1] + '.want', 'rb').read()
if s != want:
    sys.exit('control: the fdatasynced write is not in the backing file after the crash')
if u != bytes(4096):
    sys.exit('control: the unflushed write survived the crash')
EOF
	rm -f "$backing" "$backing.want" "$IMG_DIR/control.nbd"
	echo "control: fdatasync reached the backing file; an unflushed write reached nbdkit and was lost at the crash"
}

# run_case KIND MODE
run_case() {
	local kind=$1 mode=$2 name=$1-$2 start=$SECONDS
	local -a job
	local fio_pid i rc delay n acked_n covered uncovered gone verified

	case $mode in
	fsync | fdatasync)
		job=(--name=w --iodepth=1 --$mode=$N --size=$SIZE) ;;
	fua)
		job=(--name=w --iodepth=$QD --fua=1 --size=$SIZE) ;;
	depth)
		job=(--name=d --iodepth=$QD --size=$DSIZE --end_fsync=1
		     --name=m --stonewall --iodepth=$QD --offset=$DSIZE
		     --size=$((SIZE - DSIZE))) ;;
	esac
	layer_start "$name" $SIZE
	server_start "$kind" "$name"

	"$FIO" --ioengine="external:$ENGINE" --uri="$uri" "${transport[@]}" --rw=randwrite --bs=$BS \
		--verify=crc32c --do_verify=0 \
		--write_lat_log="$T/$name" --log_offset=1 \
		--output-format=json "${job[@]}" >"$T/$name.json" 2>"$T/$name.err" &
	fio_pid=$!

	# Crash once writes are flowing (this much has reached the cache; in
	# the depth case, beyond what the first job wrote), whether or not
	# flushes work, after a further random 100-500 ms so that the crash
	# lands at a different point each run.
	local watch trigger=$TRIGGER
	watch=$(cache_file) || exit 1
	[ $mode = depth ] && trigger=$((DSIZE + TRIGGER))
	for ((i = 0; i < 200; i++)); do
		[ "$(alloc "$watch")" -ge $trigger ] && break
		kill -0 $fio_pid 2>/dev/null || break
		sleep 0.05
	done
	delay=0.$((RANDOM % 5 + 1))
	sleep $delay
	if ! kill -0 $fio_pid 2>/dev/null; then
		cat "$T/$name.err" >&2
		fail "$name: fio ended before the crash"
	fi
	crash

	wait_gone $fio_pid 30 "$name: fio still running 30 s after the crash"
	rc=$gone_rc
	layer_stop
	if [ $rc -eq 0 ]; then
		cat "$T/$name.err" >&2
		fail "$name: fio succeeded although its server was killed mid-run"
	fi

	# Covered and uncovered writes (see the top).
	case $mode in
	fsync | fdatasync | fua)
		acked "$T/${name}_clat.1.log" >"$T/$name.acked"
		acked_n=$(wc -l <"$T/$name.acked")
		[ $((acked_n * BS)) -eq "$(json_field "$T/$name.json" "jobs[0]['write']['io_bytes']")" ] ||
			fail "$name: the completion log and fio's byte count disagree"
		if [ $mode = fua ]; then
			covered=$acked_n
		else
			covered=$((acked_n >= 1 ? (acked_n - 1) / N * N : 0))
		fi
		head -n $covered "$T/$name.acked" >"$T/$name.covered"
		tail -n +$((covered + 1)) "$T/$name.acked" >"$T/$name.uncovered"
		;;
	depth)
		acked "$T/${name}_clat.1.log" >"$T/$name.covered"
		covered=$(wc -l <"$T/$name.covered")
		[ "$(json_field "$T/$name.json" "jobs[0]['error']")" = 0 ] &&
			[ $covered -eq $((DSIZE / BS)) ] ||
			fail "$name: the end_fsync job did not complete all $((DSIZE / BS)) writes ($covered)"
		# No log: the second job never got a write through.
		: >"$T/$name.uncovered"
		[ ! -f "$T/${name}_clat.2.log" ] ||
			acked "$T/${name}_clat.2.log" >"$T/$name.uncovered"
		n=$(wc -l <"$T/$name.uncovered")
		[ "$n" -ge 1 ] ||
			fail "$name: the second job had no write acknowledged before the crash, so the end_fsync is not known to have completed"
		[ $((n * BS)) -eq "$(json_field "$T/$name.json" "jobs[1]['write']['io_bytes']")" ] ||
			fail "$name: the second job's completion log and fio's byte count disagree"
		;;
	esac
	uncovered=$(wc -l <"$T/$name.uncovered")
	[ $covered -ge $MIN_COVERED ] ||
		fail "$name: only $covered writes covered by a completed flush (of $((covered + uncovered)) acknowledged): too few to decide"

	gone=$(lost "$backing" "$T/$name.covered") || fail "$name: cannot read $backing"
	[ "$gone" -eq 0 ] ||
		fail "$name: $gone of the $covered acknowledged writes that a completed flush (or FUA) covered are lost after the crash"
	{
		echo "fio version 2 iolog"
		echo "$backing add"
		echo "$backing open"
		awk -v f="$backing" -v bs=$BS '{ print f " read " $1 " " bs }' "$T/$name.covered"
	} >"$T/$name.iolog"
	if ! "$FIO" --name=chk --ioengine=psync --read_iolog="$T/$name.iolog" \
		--iodepth=1 --verify=crc32c --verify_fatal=1 \
		--output-format=json >"$T/$name-chk.json" 2>"$T/$name-chk.err"; then
		cat "$T/$name-chk.err" >&2
		fail "$name: an acknowledged write that a completed flush (or FUA) covered is corrupt in the backing file after the crash (fio verify above)"
	fi
	verified=$(json_field "$T/$name-chk.json" "jobs[0]['read']['io_bytes']")
	[ "$verified" -eq $((covered * BS)) ] ||
		fail "$name: verified $verified bytes of the backing file, expected $((covered * BS))"

	gone=$(lost "$backing" "$T/$name.uncovered") || fail "$name: cannot read $backing"
	[ $mode != depth ] || [ "$gone" -ge 1 ] ||
		fail "$name: none of the second job's $uncovered unflushed writes was lost at the crash: the layer did not drop them, so this run cannot tell"
	rm -f "$backing"
	echo "$name: crashed ${delay}s after the trigger: $covered covered writes verified;" \
		"$gone of $uncovered acknowledged but unflushed lost ($((SECONDS - start)) s)"
}

echo "(after each crash the server's errors about its image are expected)"
control
for kind in "${servers[@]}"; do
	for mode in fsync fdatasync fua depth; do
		run_case $kind $mode
	done
done
echo "PASS"
