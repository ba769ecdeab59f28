#!/bin/bash
# The kernel's TCMU path, run inside scripts/guest by test-kernel-tcmu.sh:
#
#   kernel-tcmu-in-guest.sh OUTDIR
#
# LIO's user backstore (scripts/tcmu-kernel setup), tcmu-shim on its UIO
# device (memory store), a tcm_loop LUN (attach), then fio with libaio and
# direct I/O on the /dev/sdX: a write pass with verify=crc32c and a separate
# read-verify pass (verify_only). Teardown, then the shim must exit 0. The
# shim's log (-v: one line per command) and fio's output are left in OUTDIR
# (a --share of the test's directory); the opcodes the kernel sent are
# counted on stdout.

set -euo pipefail

out=${1:?usage: $0 OUTDIR}
src=${TORUS_SRC:?TORUS_SRC is not set}
build=${TORUS_BUILD:-$src/build}
shim=$build/shims/tcmu/tcmu-shim
tk=$src/scripts/tcmu-kernel
name=fio0
size=64M
log=/tmp/tcmu-shim.log
shim_pid=

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

finish() {
	local rc=$?
	[[ -f $log ]] && cp "$log" "$out/shim.log"
	if [[ $rc -ne 0 ]]; then
		"$tk" teardown --name "$name" >/dev/null 2>&1 || true
		[[ -n $shim_pid ]] && kill "$shim_pid" 2>/dev/null
		dmesg | tail -n 30 >&2
	fi
	exit $rc
}
trap finish EXIT

[[ -x $shim ]] || fail "$shim is not built (meson compile -C $build)"
command -v fio >/dev/null || fail "fio is not installed"

uio=$("$tk" setup --name "$name" --size "$size") || fail "tcmu-kernel setup failed"

# The handler first: the kernel's first INQUIRY comes with attach.
"$shim" --uio "$uio" --backend memory --size "$size" --block-size 512 -v --log "$log" &
shim_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -q 'serving' "$log" 2>/dev/null && break
	kill -0 "$shim_pid" 2>/dev/null || { cat "$log" >&2; fail "tcmu-shim exited before serving $uio"; }
	sleep 0.1
done
grep -q 'serving' "$log" || fail "tcmu-shim did not report serving $uio within 10 s"

sd=$("$tk" attach --name "$name" --timeout 120) || fail "tcmu-kernel attach failed"

job=(--name=kernel-tcmu --filename="$sd" --ioengine=libaio --direct=1
     --rw=randwrite --bsrange=4k-64k --iodepth=16 --size=16M
     --verify=crc32c --verify_fatal=1 --randrepeat=1)

check_fio() {
	local what=$1 file=$2
	if grep -qE 'err=[ ]*[1-9]|verify: bad|bad magic|crc32c: verify failed' "$file"; then
		cat "$file" >&2
		fail "fio reported errors in the $what pass"
	fi
	grep -qE 'err=[ ]*0' "$file" || { cat "$file" >&2; fail "no fio summary in the $what pass"; }
}

echo "fio: write pass with verify=crc32c on $sd" >&2
fio "${job[@]}" --do_verify=1 --output="$out/fio-write.out" ||
	{ cat "$out/fio-write.out" >&2; fail "fio's write pass exited non-zero"; }
check_fio write "$out/fio-write.out"

echo "fio: read-verify pass on $sd" >&2
fio "${job[@]}" --verify_only=1 --output="$out/fio-verify.out" ||
	{ cat "$out/fio-verify.out" >&2; fail "fio's read-verify pass exited non-zero"; }
check_fio read-verify "$out/fio-verify.out"

"$tk" teardown --name "$name" || fail "tcmu-kernel teardown failed"

# Removing the backstore removes the UIO device: the shim stops by itself;
# otherwise it is asked to.
for ((i = 0; i < 50; i++)); do
	kill -0 "$shim_pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$shim_pid" 2>/dev/null && kill "$shim_pid"
rc=0
wait "$shim_pid" || rc=$?
shim_pid=
cp "$log" "$out/shim.log"
[[ $rc -eq 0 ]] || { tail -n 5 "$log" >&2; fail "tcmu-shim exited $rc after teardown"; }

# What the kernel sent the handler, by opcode.
declare -A names=([00]="TEST UNIT READY" [12]="INQUIRY" [1a]="MODE SENSE(6)" [5a]="MODE SENSE(10)"
	[25]="READ CAPACITY(10)" [9e]="SERVICE ACTION IN(16) (READ CAPACITY(16))"
	[a3]="MAINTENANCE IN (REPORT SUPPORTED OPERATION CODES)" [a0]="REPORT LUNS"
	[08]="READ(6)" [0a]="WRITE(6)" [28]="READ(10)" [2a]="WRITE(10)" [88]="READ(16)" [8a]="WRITE(16)"
	[35]="SYNCHRONIZE CACHE(10)" [91]="SYNCHRONIZE CACHE(16)" [42]="UNMAP" [93]="WRITE SAME(16)"
	[41]="WRITE SAME(10)" [1b]="START STOP UNIT" [1e]="PREVENT ALLOW MEDIUM REMOVAL")
echo "opcodes the kernel sent tcmu-shim (count, opcode, name, outcome):"
sed -n 's/.*command 0x\([0-9a-f][0-9a-f]\)[^:]*: \(.*\)$/\1 \2/p' "$log" | sort | uniq -c |
while read -r count op outcome; do
	printf '  %6d  0x%s  %-50s %s\n' "$count" "$op" "${names[$op]:-?}" "$outcome"
done
total=$(grep -c 'command 0x' "$log" || true)
notgood=$(grep 'command 0x' "$log" | grep -vc ': good$' || true)
echo "commands: $total, not GOOD: $notgood"
echo "kernel-tcmu: OK ($sd, $size backstore, fio write+verify and read-verify passes clean)"
