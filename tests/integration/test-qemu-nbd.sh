#!/bin/bash
# Description: qemu-nbd over a Unix socket, one connection and (with -e 4)
# four; verify over read, write, trim and flush.
. "$TORUS_SRC/tests/lib.sh"
require fio qemu-nbd

truncate -s 256M "$T/disk.img"
sock=$T/q.sock
start_bg qemu-nbd -t -f raw -k "$sock" -e 4 --discard=unmap --cache=writeback -x disk "$T/disk.img"
wait_socket "$sock"
uri="nbd+unix:///disk?socket=$sock"

common=(--name=v --uri="$uri" --size=64m --verify=crc32c --verify_fatal=1)
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok "${common[@]}" --rw=randrw --bs=64k --iodepth=64 --conns=4 --fsync=8
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16 --structured_replies=1 --fua=1
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=randtrim --bs=64k --iodepth=8
echo "PASS"
