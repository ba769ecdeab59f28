#!/bin/bash
# The kernel's NBD client end to end, in a qemu guest (scripts/guest):
# nbdkit's memory plugin on a Unix socket inside the guest, /dev/nbdN
# attached with scripts/nbd-kernel, fio with libaio and direct I/O writing
# with verify=crc32c, then a read-verify pass over a second connection. The
# sequence is kernel-nbd-in-guest.sh.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require qemu-system-x86_64 cpio fio nbdkit nbd-client

rc=0
"$TORUS_SRC/scripts/guest" --timeout 600 --share "$T" --env TORUS_SRC="$TORUS_SRC" -- \
	bash "$TORUS_SRC/tests/guest/kernel-nbd-in-guest.sh" "$T" || rc=$?
[ $rc -eq 0 ] || fail "the kernel NBD sequence failed in the guest (exit $rc)"
for f in fio-write.out fio-verify.out; do
	[ -s "$T/$f" ] || fail "the guest left no $f"
	if grep -qE 'err=[ ]*[1-9]' "$T/$f"; then
		cat "$T/$f" >&2
		fail "fio reported an error ($f)"
	fi
done
echo "PASS: kernel NBD path (nbd.ko + nbd-client + nbdkit) with fio verify"
