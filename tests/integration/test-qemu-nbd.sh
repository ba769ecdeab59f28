#!/bin/bash
# Description: qemu-nbd over a Unix socket, one connection and (with -e 4)
# four; verify over read, write, trim and flush.
#
# Trims: with --discard=unmap qemu-nbd passes them to the file system
# (qemu-nbd(8)); a raw image on a file then gets a hole punched (qemu's
# file-posix discard: fallocate PUNCH_HOLE), which reads as zeroes
# (fallocate(2)). So the trimmed range is checked on the image file.
. "$TORUS_SRC/tests/lib.sh"
require fio qemu-nbd python3
truncate -s 256M "$T/disk.img"
sock=$T/q.sock
start_bg qemu-nbd -t -f raw -k "$sock" -e 4 --discard=unmap --cache=writeback -x disk "$T/disk.img"
wait_socket "$sock"
uri="nbd+unix:///disk?socket=$sock"

common=(--name=v --uri="$uri" --size=64m --verify=crc32c --verify_fatal=1)
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16
# that job wrote every block of the first 64 MiB; trim them all (before the
# other jobs: the trims' mutation then fails in seconds)
[ "$(allocated "$T/disk.img" 0 64M)" = 67108864 ] ||
	fail "the 64 MiB fio wrote are not all allocated in $T/disk.img"
expect_fio_ok --name=t --uri="$uri" --size=64m --rw=randtrim --bs=64k --iodepth=8
expect_trimmed qemu-nbd "$T/disk.img" 0 64M
expect_fio_ok "${common[@]}" --rw=randrw --bs=64k --iodepth=64 --conns=4 --fsync=8
expect_fio_ok "${common[@]}" --rw=randwrite --bs=4k --iodepth=16 --structured_replies=1 --fua=1
echo "PASS"
