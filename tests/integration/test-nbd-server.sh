#!/bin/bash
# Description: the official nbd-server (document 001's server), started on a
# loopback port with a private config: verify over read, write, trim and flush.
. "$TORUS_SRC/tests/lib.sh"
require fio nbd-server

port=$(free_port)
truncate -s 256M "$T/disk.img"
cat >"$T/nbd.conf" <<CONF
[generic]
	port = $port
	listenaddr = 127.0.0.1
	allowlist = true
[default]
	exportname = $T/disk.img
	trim = true
	flush = true
	fua = true
CONF
# nbd-server daemonises (its -d debug mode serves one client only).
nbd-server -C "$T/nbd.conf" -p "$T/nbd.pid" || fail "nbd-server did not start"
wait_port "$port"
_bg_pids+=("$(cat "$T/nbd.pid")")
uri="nbd://127.0.0.1:$port/default"

common=(--name=v --uri="$uri" --size=64m --verify=crc32c --verify_fatal=1)
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok "${common[@]}" --rw=randrw --bs=64k --iodepth=64 --fsync=16
expect_fio_ok "${common[@]}" --rw=write --bs=256k --iodepth=4 --end_fsync=1 --fua=1
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=trimwrite --bs=64k --iodepth=8

# An unknown export is named in the error.
expect_fio_error "server has no export named 'nosuch'" --name=x --uri="nbd://127.0.0.1:$port/nosuch" --size=1m --rw=read
echo "PASS"
