#!/bin/bash
# The tcmu-runner store over Debian's unmodified handler_qcow.so, driven by
# store-io (no ring): patterns written through it are exactly what qemu-io
# reads in the image, the image equals one qemu-io wrote the same way, and
# qemu-img check finds it sound; qcow's raw mode (a raw file whose size is
# the device's); what qemu wrote reads back through the handler.
#
#   test-runner-qcow.sh STORE_IO
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path store_io 1 "the store-io program"

plugins=/usr/lib/$(cc -print-multiarch)/tcmu-runner
require qemu-img qemu-io
[ -f "$plugins/handler_qcow.so" ] || skip "no $plugins/handler_qcow.so (the Debian package tcmu-runner)"

# io STORE STEP...: store-io, failing the test with its message
io() {
	"$store_io" "$@" || fail "store-io $*"
}

# qemu_reads IMG FMT 'PATTERN OFF LEN'...: qemu-io verifies each range
qemu_reads() {
	local img=$1 fmt=$2 out args=()
	shift 2
	for r in "$@"; do
		args+=(-c "read -P $r")
	done
	out=$(qemu-io -f "$fmt" "${args[@]}" "$img" 2>&1) || fail "qemu-io: $out"
	if grep -q 'verification failed\|error' <<<"$out"; then
		echo "$out" >&2
		fail "qemu-io found other bytes in $img than were written"
	fi
}

steps=(write:0:65536:0xa1 write:1048576:131072:0xb2 write:67043328:65536:0xc3
       zero:4096:4096 write:33554432:512:0x3e flush)
ranges=('0xa1 0 4096' '0 4096 4096' '0xa1 8192 57344' '0 65536 983040'
	'0xb2 1048576 131072' '0x3e 33554432 512' '0 33554944 512'
	'0xc3 67043328 65536')

# qcow2: written through the handler, read by qemu
qemu-img create -q -f qcow2 "$T/a.qcow2" 64M
[ "$("$store_io" "runner:qcow:$T/a.qcow2" size)" = 67108864 ] ||
	fail "size: expected the image's virtual size 67108864"
io "runner:qcow:$T/a.qcow2" "${steps[@]}" read:0:4096:0xa1 read:4096:4096:0 \
	read:1048576:131072:0xb2 read:67043328:65536:0xc3
qemu_reads "$T/a.qcow2" qcow2 "${ranges[@]}"
qemu-img check -q "$T/a.qcow2" || fail "qemu-img check: the handler left $T/a.qcow2 unsound"

# the same writes by qemu: identical images
qemu-img create -q -f qcow2 "$T/b.qcow2" 64M
qemu-io -f qcow2 -c 'write -P 0xa1 0 65536' -c 'write -P 0xb2 1048576 131072' \
	-c 'write -P 0xc3 67043328 65536' -c 'write -P 0 4096 4096' \
	-c 'write -P 0x3e 33554432 512' "$T/b.qcow2" >/dev/null
out=$(qemu-img compare -f qcow2 -F qcow2 "$T/a.qcow2" "$T/b.qcow2" 2>&1) ||
	fail "qemu-img compare: $out"
echo "qcow2: $out"

# written by qemu, read through the handler; --size given explicitly
qemu-io -f qcow2 -c 'write -P 0xd4 2097152 65536' "$T/b.qcow2" >/dev/null
io -s 67108864 -b 512 "runner:qcow:$T/b.qcow2" read:2097152:65536:0xd4 \
	read:1048576:131072:0xb2 read:2162688:4096:0

# qcow's raw mode: a raw file of exactly the device's size
truncate -s 16M "$T/r.raw"
io "runner:qcow:$T/r.raw" write:0:4096:0x71 write:8388608:65536:0x72 \
	read:0:4096:0x71 flush
qemu_reads "$T/r.raw" raw '0x71 0 4096' '0 4096 8384512' '0x72 8388608 65536'
truncate -s 16M "$T/ref.raw"
qemu-io -f raw -c 'write -P 0x71 0 4096' -c 'write -P 0x72 8388608 65536' \
	"$T/ref.raw" >/dev/null
cmp "$T/r.raw" "$T/ref.raw" || fail "raw mode: $T/r.raw differs from qemu's"
echo "raw: identical"
echo ok
