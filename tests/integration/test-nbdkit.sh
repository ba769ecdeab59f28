#!/bin/bash
# Description: read, write, trim and flush workloads with verify=crc32c
# against nbdkit memory, over a Unix socket and over TCP, with conns 1 and 4,
# with simple and structured replies.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit

sock=$T/nbd.sock
start_nbdkit "$sock" memory 256M
uri="nbd+unix:///?socket=$sock"

common=(--name=v --size=64m --verify=crc32c --verify_fatal=1 --do_verify=1)
for conns in 1 4; do
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=4k --iodepth=32
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randrw --bs=64k --iodepth=64
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=write --bs=1m --iodepth=8 --fsync=4 --end_fsync=1
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=8k --iodepth=16 --fdatasync=8
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=4k --iodepth=16 --structured_replies=1
done

# Trims: the trimmed range reads back as zeroes from nbdkit memory.
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=trimwrite --bs=64k --iodepth=16
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=randtrim --bs=4k --iodepth=16
expect_fio_ok --name=w --uri="$uri" --size=32m --rw=write --bs=64k --iodepth=16 --buffer_pattern=0xab
expect_fio_ok --name=t --uri="$uri" --size=32m --rw=trim --bs=64k --iodepth=16
expect_fio_ok --name=r --uri="$uri" --size=32m --rw=read --bs=64k --iodepth=16 --verify=pattern --verify_pattern=0x00 --verify_only=1

# FUA on every write (nbdkit memory advertises it).
expect_fio_ok "${common[@]}" --uri="$uri" --rw=randwrite --bs=4k --iodepth=16 --fua=1

# TCP on loopback.
port=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$port" memory 128M
wait_port "$port"
expect_fio_ok "${common[@]}" --uri="nbd://127.0.0.1:$port/" --rw=randrw --bs=16k --iodepth=32 --conns=4
echo "PASS"
