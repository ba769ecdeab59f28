#!/bin/bash
# The command sizes the kernel sends tcmu-shim, in a qemu guest
# (scripts/guest): a 1 MiB sequential read job on a tcm_loop disk over
# LIO's user backstore arrives at the shim as READs of 128 blocks, what its
# Block Limits page offers (as tcmu-runner's does) and where engine-tcmu
# splits. The sequence and its assertions are kernel-tcmu-xfer-in-guest.sh's.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require qemu-system-x86_64 cpio fio
[ -x "$TORUS_BUILD/shims/tcmu/tcmu-shim" ] || skip "tcmu-shim is not built (meson -Dshims=true)"

rc=0
"$TORUS_SRC/scripts/guest" --timeout 900 --share "$T" \
	--env TORUS_SRC="$TORUS_SRC" --env TORUS_BUILD="$TORUS_BUILD" -- \
	bash "$TORUS_SRC/tests/integration/kernel-tcmu-xfer-in-guest.sh" "$T" || rc=$?
if [ $rc -ne 0 ]; then
	[ -f "$T/shim.log" ] && { echo "--- tcmu-shim's log (last lines):" >&2; tail -n 20 "$T/shim.log" >&2; }
	fail "the kernel TCMU transfer-size sequence failed in the guest (exit $rc)"
fi
[ -s "$T/xfer.txt" ] || fail "the guest left no xfer.txt: it did not count the commands"
echo "PASS: the kernel sent 128-block commands for 1 MiB reads"
