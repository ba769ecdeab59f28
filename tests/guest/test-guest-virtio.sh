#!/bin/bash
# scripts/guest --nbd-disk: a virtio-blk disk in the guest backed by qemu's
# own NBD client to nbdkit's memory plugin on the host. In the guest, fio
# with libaio and direct I/O writes with verify=crc32c on $TORUS_GUEST_DISK
# and prints the disk's sha256; on the host, the same job's read-verify pass
# through fio's libnbd engine and nbdcopy's sha256 must agree: what the
# guest wrote is on the server.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require qemu-system-x86_64 cpio fio nbdkit nbdcopy sha256sum

sock=$T/nbd.sock
uri="nbd+unix:///?socket=$sock"
start_nbdkit "$sock" memory 16M

job=(--name=guest-virtio --ioengine=libaio --direct=1 --rw=randwrite --bsrange=4k-64k
     --iodepth=16 --size=8M --verify=crc32c --verify_fatal=1 --randrepeat=1)

rc=0
"$TORUS_SRC/scripts/guest" --timeout 600 --nbd-disk "$uri" --share "$T" -- bash -c '
	set -e
	out=$1; shift
	[ -b "$TORUS_GUEST_DISK" ] || { echo "no TORUS_GUEST_DISK block device (${TORUS_GUEST_DISK:-unset})" >&2; exit 1; }
	echo "$TORUS_GUEST_DISK" >"$out/disk"
	blockdev --getsize64 "$TORUS_GUEST_DISK" >"$out/size"
	fio "$@" --filename="$TORUS_GUEST_DISK" --do_verify=1 --output="$out/fio-guest.out"
	dd if="$TORUS_GUEST_DISK" bs=1M iflag=direct status=none | sha256sum | cut -d" " -f1 >"$out/guest.sum"
	' guest "$T" "${job[@]}" || rc=$?
if [ $rc -ne 0 ]; then
	[ -f "$T/fio-guest.out" ] && cat "$T/fio-guest.out" >&2
	fail "the guest's fio pass on the --nbd-disk failed (exit $rc)"
fi
[[ $(cat "$T/disk") == /dev/vd? ]] || fail "TORUS_GUEST_DISK was '$(cat "$T/disk")', not /dev/vdX"
[ "$(cat "$T/size")" = $((16 << 20)) ] || fail "the guest's disk has $(cat "$T/size") bytes, not 16 MiB"
if grep -qE 'err=[ ]*[1-9]|verify: bad|bad magic|crc32c: verify failed' "$T/fio-guest.out" ||
	! grep -qE 'err=[ ]*0' "$T/fio-guest.out"; then
	cat "$T/fio-guest.out" >&2
	fail "fio in the guest reported errors"
fi

# The host reads back what the guest wrote, straight from the server.
if ! "$FIO" "${job[@]}" --ioengine=nbd --uri="$uri" --direct=0 --verify_only=1 \
	--output="$T/fio-host.out"; then
	cat "$T/fio-host.out" >&2
	fail "fio's read-verify pass on the host (libnbd) failed"
fi
if grep -qE 'err=[ ]*[1-9]|verify: bad|bad magic|crc32c: verify failed' "$T/fio-host.out"; then
	cat "$T/fio-host.out" >&2
	fail "fio's read-verify pass on the host found bad blocks"
fi
host_sum=$(nbdcopy "$uri" - | sha256sum | cut -d' ' -f1)
[ "$host_sum" = "$(cat "$T/guest.sum")" ] ||
	fail "the disk's sha256 differs: guest $(cat "$T/guest.sum"), host (nbdcopy) $host_sum"
echo "PASS: scripts/guest --nbd-disk ($(cat "$T/disk") on qemu's NBD client): guest fio verify, host read-back and checksum agree"
