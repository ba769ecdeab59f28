#!/bin/bash
# The kernel's NBD client, run inside scripts/guest by test-kernel-nbd.sh:
#
#   kernel-nbd-in-guest.sh OUTDIR
#
# nbdkit's memory plugin on a Unix socket in this guest, /dev/nbdN attached
# with scripts/nbd-kernel, fio with libaio and direct I/O writing with
# verify=crc32c; then detach, attach again (a new connection to the same
# server) and a read-verify pass (verify_only), and detach. fio's output is
# left in OUTDIR (a --share of the test's directory).

set -euo pipefail

out=${1:?usage: $0 OUTDIR}
src=${TORUS_SRC:?TORUS_SRC is not set}
nk=$src/scripts/nbd-kernel
sock=/tmp/kernel-nbd.sock
uri="nbd+unix:///?socket=$sock"
size=16M
dev=

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

finish() {
	local rc=$?
	if [[ $rc -ne 0 ]]; then
		[[ -n $dev ]] && "$nk" detach "$dev" >/dev/null 2>&1
		dmesg | tail -n 20 >&2
	fi
	[[ -f /tmp/kernel-nbd.pid ]] && kill "$(cat /tmp/kernel-nbd.pid)" 2>/dev/null
	exit $rc
}
trap finish EXIT

command -v fio >/dev/null || fail "fio is not installed"
command -v nbdkit >/dev/null || fail "nbdkit is not installed"

nbdkit --unix "$sock" --pidfile /tmp/kernel-nbd.pid memory "$size" ||
	fail "nbdkit memory $size on $sock did not start"
[[ -S $sock ]] || fail "nbdkit did not create $sock"

dev=$("$nk" attach "$uri") || fail "nbd-kernel attach $uri failed"
[[ $(blockdev --getsize64 "$dev") == $((16 << 20)) ]] ||
	fail "$dev has $(blockdev --getsize64 "$dev") bytes, not 16 MiB"

job=(--name=kernel-nbd --filename="$dev" --ioengine=libaio --direct=1
     --rw=randwrite --bsrange=4k-64k --iodepth=16 --size=8M
     --verify=crc32c --verify_fatal=1 --randrepeat=1)

check_fio() {
	local what=$1 file=$2
	if grep -qE 'err=[ ]*[1-9]|verify: bad|bad magic|crc32c: verify failed' "$file"; then
		cat "$file" >&2
		fail "fio reported errors in the $what pass"
	fi
	grep -qE 'err=[ ]*0' "$file" || { cat "$file" >&2; fail "no fio summary in the $what pass"; }
}

echo "fio: write pass with verify=crc32c on $dev" >&2
fio "${job[@]}" --do_verify=1 --output="$out/fio-write.out" ||
	{ cat "$out/fio-write.out" >&2; fail "fio's write pass exited non-zero"; }
check_fio write "$out/fio-write.out"

"$nk" detach "$dev" || fail "nbd-kernel detach $dev failed"
[[ -e /sys/block/${dev#/dev/}/pid ]] && fail "$dev is still connected after detach"
first=$dev
dev=$("$nk" attach "$uri") || fail "attaching $uri a second time failed"

echo "fio: read-verify pass on $dev (a new connection)" >&2
fio "${job[@]}" --filename="$dev" --verify_only=1 --output="$out/fio-verify.out" ||
	{ cat "$out/fio-verify.out" >&2; fail "fio's read-verify pass exited non-zero"; }
check_fio read-verify "$out/fio-verify.out"

"$nk" detach "$dev" || fail "nbd-kernel detach $dev failed"
dev=
echo "kernel-nbd: OK ($first, then a second connection: fio write+verify and read-verify passes clean)"
