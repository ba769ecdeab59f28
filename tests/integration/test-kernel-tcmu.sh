#!/bin/bash
# The kernel's TCMU path end to end, in one qemu guest (scripts/guest): LIO's
# user backstore served by tcmu-shim on its UIO device, a tcm_loop disk.
#  1. kernel-tcmu-in-guest.sh: fio with libaio and direct I/O writing with
#     verify=crc32c and reading it back in a separate verify pass; every
#     I/O fio reports reached the shim as one READ(10) or WRITE(10), the
#     whole 16 MiB written, verified and read back, every command answered
#     GOOD; the opcodes the kernel sent the shim are printed into the log.
#  2. kernel-tcmu-xfer-in-guest.sh: the command sizes the kernel sends: a
#     1 MiB sequential read job arrives at the shim as READs of 128 blocks,
#     what its Block Limits page offers (as tcmu-runner's does) and where
#     engine-tcmu splits.
# Both run in the one boot (a boot is most of the time under TCG); each
# sequence's assertions are its script's.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require qemu-system-x86_64 cpio fio
[ -x "$TORUS_BUILD/shims/tcmu/tcmu-shim" ] || skip "tcmu-shim is not built (meson -Dshims=true)"

here=$TORUS_SRC/tests/integration
rc=0
"$TORUS_SRC/scripts/guest" --timeout 900 --share "$T" \
	--env TORUS_SRC="$TORUS_SRC" --env TORUS_BUILD="$TORUS_BUILD" -- \
	bash -c 'bash "$0" "$2" || exit 10; bash "$1" "$2" || exit 20' \
	"$here/kernel-tcmu-in-guest.sh" "$here/kernel-tcmu-xfer-in-guest.sh" "$T" || rc=$?
if [ $rc -ne 0 ]; then
	[ -f "$T/shim.log" ] && { echo "--- tcmu-shim's log (last lines):" >&2; tail -n 20 "$T/shim.log" >&2; }
	[ $rc -eq 20 ] && fail "the kernel TCMU transfer-size sequence failed in the guest"
	fail "the kernel TCMU sequence failed in the guest (exit $rc)"
fi
# The guest checked fio's reports; they must be there, or it did not run
# the passes it says it ran.
for f in fio-write.json fio-verify.json; do
	[ -s "$T/$f" ] || fail "the guest left no $f"
done
echo "PASS: kernel TCMU path (tcm_loop + target_core_user + tcmu-shim) with fio verify"
[ -s "$T/xfer.txt" ] || fail "the guest left no xfer.txt: it did not count the commands"
echo "PASS: the kernel sent 128-block commands for 1 MiB reads"
