#!/bin/bash
# Description: the official nbd-server (document 001's server), started on a
# loopback port with a private config: verify over read, write, trim and flush.
#
# Trims: nbd-server may discard a trimmed range but need not (nbd-server(5),
# "trim"); what it does is punch a hole in the export's file (exptrim in
# nbd-server's nbdsrv.c: fallocate PUNCH_HOLE), which then reads as zeroes
# (fallocate(2)). So a trim is checked on the file: the range that held
# data is a hole of zeroes, and the rest is untouched.
. "$TORUS_SRC/tests/lib.sh"
require fio nbd-server python3
truncate -s 256M "$T/disk.img"
# nbd-server daemonises (its -d debug mode serves one client only), with
# trim, flush and fua on (scripts/servers.py's nbd_server)
started=$(python3 "$TORUS_SRC/scripts/servers.py" nbd-server "$T/disk.img" "$T") ||
	fail "nbd-server did not start"
port=${started% *}
_bg_pids+=("${started#* }")
uri="nbd://127.0.0.1:$port/default"

common=(--name=v --uri="$uri" --size=64m --verify=crc32c --verify_fatal=1)
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok "${common[@]}" --rw=randrw --bs=64k --iodepth=64 --fsync=16
expect_fio_ok "${common[@]}" --rw=write --bs=256k --iodepth=4 --end_fsync=1 --fua=1
# that wrote all of the first 64 MiB: trim the first half of it
[ "$(allocated "$T/disk.img" 0 64M)" = 67108864 ] ||
	fail "the 64 MiB fio wrote are not all allocated in $T/disk.img"
expect_fio_ok --name=t --uri="$uri" --size=32m --rw=trim --bs=64k --iodepth=8
expect_trimmed nbd-server "$T/disk.img" 0 32M
[ "$(allocated "$T/disk.img" 32M 32M)" = 33554432 ] ||
	fail "trimming [0, 32 MiB) freed data beyond it in $T/disk.img"
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=trimwrite --bs=64k --iodepth=8

# An unknown export is named in the error.
expect_fio_error "server has no export named 'nosuch'" --name=x --uri="nbd://127.0.0.1:$port/nosuch" --size=1m --rw=read
echo "PASS"
