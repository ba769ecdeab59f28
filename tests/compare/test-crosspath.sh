#!/bin/bash
# Data crosses paths intact (issue 12). One nbd-shim memory export, reached
# two ways: through the kernel (kernel-loop: nbdfuse shows the export as a
# file, losetup --direct-io=on makes /dev/loopN of it, fio with libaio and
# direct=1) and through the engine. What one path writes with
# verify=crc32c, the other must read back and verify:
#   A  kernel -> engine: bytes 0-16M, written and verified on /dev/loopN,
#      then verify_only through the engine;
#   B  engine -> kernel: bytes 32M-48M, written and verified through the
#      engine, then verify_only on a fresh loop device.
# The regions are apart, so that one direction's blocks cannot stand in for
# the other's: each 4 KiB verify header holds its offset. (A different seed
# alone would not do: fio 3.33's verify_only takes the seed from the header.)
# Negative control: a few 4 KiB blocks of B are overwritten through the
# engine, and verify_only of B must then fail with verify errors, through the
# kernel and through the engine.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "kernel-loop needs root (losetup, a FUSE mount)"
require "$FIO" nbdfuse losetup mountpoint umount
[ -f "$ENGINE" ] || skip "$ENGINE is not built (ninja -C build)"
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built (meson configure build -Dshims=true)"
[ -c /dev/fuse ] || skip "no /dev/fuse: this kernel has no FUSE (modprobe fuse)"
[ -c /dev/loop-control ] || skip "no /dev/loop-control: this kernel has no loop driver (modprobe loop)"

sock=$T/nbd.sock
uri="nbd+unix:///?socket=$sock"
mnt=$T/fuse
fuse_pid=
loopdev=
started=$SECONDS

# loop_down: detach the loop device, unmount nbdfuse and reap it. Also run
# from the EXIT trap, so it never calls fail; false when something stuck.
loop_down() {
	local ok=0 i sysfs
	if [ -n "$loopdev" ]; then
		losetup -d "$loopdev" 2>/dev/null || ok=1
		# The kernel defers the detach while anything holds the device
		# open; until it is done the FUSE file is busy and umount fails.
		sysfs=/sys/block/${loopdev#/dev/}/loop/backing_file
		for ((i = 0; i < 100 && ok == 0; i++)); do
			[ -e "$sysfs" ] || break
			sleep 0.05
		done
		if [ -e "$sysfs" ]; then
			echo "crosspath: $loopdev is still attached to $(cat "$sysfs" 2>/dev/null)" >&2
			ok=1
		fi
		loopdev=
	fi
	if [ -n "$fuse_pid" ]; then
		for ((i = 0; i < 50; i++)); do
			mountpoint -q "$mnt" || break
			umount "$mnt" 2>/dev/null && break
			sleep 0.1
		done
		# nbdfuse exits by itself once unmounted
		for ((i = 0; i < 100; i++)); do
			kill -0 "$fuse_pid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$fuse_pid" 2>/dev/null; then
			echo "crosspath: nbdfuse (pid $fuse_pid) did not exit after umount; killing it" >&2
			kill "$fuse_pid" 2>/dev/null
			sleep 0.5
			kill -9 "$fuse_pid" 2>/dev/null
			ok=1
		fi
		wait "$fuse_pid" 2>/dev/null
		if mountpoint -q "$mnt"; then
			umount -l "$mnt" 2>/dev/null
			ok=1
		fi
		fuse_pid=
	fi
	return $ok
}
trap 'loop_down; cleanup' EXIT
# Without these, bash would die of SIGTERM (meson's timeout) or SIGINT
# without running the EXIT trap.
trap 'exit 143' TERM
trap 'exit 130' INT

# loop_up: the export as /dev/loopN through nbdfuse; sets $loopdev and
# $kernel, fio's options for that path.
loop_up() {
	local i rc=0
	mkdir -p "$mnt"
	nbdfuse "$mnt" "$uri" </dev/null >>"$T/nbdfuse.log" 2>&1 &
	fuse_pid=$!
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$mnt" && [ -e "$mnt/nbd" ] && break
		if ! kill -0 "$fuse_pid" 2>/dev/null; then
			wait "$fuse_pid" || rc=$?
			fuse_pid=
			cat "$T/nbdfuse.log" >&2
			fail "nbdfuse $mnt $uri exited (status $rc) before mounting"
		fi
		sleep 0.05
	done
	[ -e "$mnt/nbd" ] || fail "nbdfuse did not show $mnt/nbd within 15 s"
	loopdev=$(losetup --find --show --direct-io=on "$mnt/nbd") ||
		fail "losetup --find --show --direct-io=on $mnt/nbd failed"
	[ -b "$loopdev" ] || fail "losetup printed '$loopdev', not a block device"
	# Buffered loop I/O would still reach the server by the detach, but
	# then the kernel path is not the one the comparison measures.
	[ "$(losetup --noheadings -O DIO "$loopdev" | tr -d ' ')" = 1 ] ||
		fail "$loopdev fell back to buffered I/O (DIO=0): not kernel-loop's direct path"
	kernel=(--ioengine=libaio --direct=1 --filename="$loopdev")
}

VERIFY_BAD='verify: bad|bad magic|verify failed|verify type mismatch'

# fio_pass LABEL ARGS...: fio must exit 0 with err=0 and no verify
# complaint; its output is kept in $T/LABEL.out.
fio_pass() {
	local label=$1 out=$T/$1.out rc=0
	shift
	"$FIO" "$@" >"$out" 2>&1 || rc=$?
	if [ $rc -ne 0 ] || grep -qE "err=[ ]*[1-9]|$VERIFY_BAD" "$out" ||
		! grep -qE 'err=[ ]*0' "$out"; then
		cat "$out" >&2
		fail "$label: fio exited $rc or reported errors: fio $*"
	fi
}

# expect_verify_fail LABEL ARGS...: fio must exit non-zero and name a bad
# block; shows the first complaint and how many there were.
expect_verify_fail() {
	local label=$1 out=$T/$1.out rc=0
	shift
	"$FIO" "$@" >"$out" 2>&1 || rc=$?
	if [ $rc -eq 0 ] || ! grep -qE "$VERIFY_BAD" "$out"; then
		cat "$out" >&2
		fail "negative control: $label exited $rc after B's region was overwritten, without the verify error it must report: fio $*"
	fi
	echo "crosspath: $label: fio exited $rc with $(grep -cE "$VERIFY_BAD" "$out") verify error(s), the first:"
	grep -E "$VERIFY_BAD" "$out" | head -n 1 | sed 's/^/  /'
}

# read_bytes LABEL: what fio read, in its own units ("16.0MiB"); a verify
# pass that read nothing would prove nothing.
read_bytes() {
	sed -n 's/^ *READ: .* io=\([^ ,]*\).*/\1/p' "$T/$1.out"
}

# Same name, seed and geometry on both paths, so that verify_only replays
# the writes the other path made and checks each block where it was written.
common=(--rw=randwrite --bsrange=4k-64k --iodepth=16 --size=16M
	--verify=crc32c --randrepeat=1)
job_a=(--name=crosspath-a --offset=0 "${common[@]}")
job_b=(--name=crosspath-b --offset=32M "${common[@]}")
engine=(--ioengine="external:$ENGINE" --uri="$uri")

start_bg "$NBD_SHIM" --profile standard --store memory --size 64M --listen "unix:$sock"
_servers_wait socket "$sock" "${_bg_pids[-1]}" "nbd-shim --profile standard --store memory"

# A: kernel -> engine
loop_up
fio_pass a-kernel-write "${job_a[@]}" "${kernel[@]}" --do_verify=1
dev_a=$loopdev
loop_down || fail "could not tear down kernel-loop ($dev_a, $mnt) after direction A"
fio_pass a-engine-verify "${job_a[@]}" "${engine[@]}" --verify_only=1
[ "$(read_bytes a-engine-verify)" = 16.0MiB ] ||
	{ cat "$T/a-engine-verify.out" >&2; fail "A: the engine's verify pass read $(read_bytes a-engine-verify), not 16.0MiB"; }

# B: engine -> kernel
fio_pass b-engine-write "${job_b[@]}" "${engine[@]}" --do_verify=1
loop_up
fio_pass b-kernel-verify "${job_b[@]}" "${kernel[@]}" --verify_only=1
[ "$(read_bytes b-kernel-verify)" = 16.0MiB ] ||
	{ cat "$T/b-kernel-verify.out" >&2; fail "B: the kernel's verify pass read $(read_bytes b-kernel-verify), not 16.0MiB"; }
dev_b=$loopdev
loop_down || fail "could not tear down kernel-loop ($dev_b, $mnt) after direction B"

# Negative control: 8 blocks of 4 KiB, 2 MiB apart, over B's region, then
# both verify passes over B must fail and say why.
fio_pass corrupt "${engine[@]}" --name=corrupt --offset=32M --size=16M \
	--rw=write:2044k --bs=4k --buffer_pattern=0x5a5aa5a5
[ "$(sed -n 's/^ *WRITE: .* io=\([^ ,]*\).*/\1/p' "$T/corrupt.out")" = 32.0KiB ] ||
	{ cat "$T/corrupt.out" >&2; fail "the negative control did not overwrite 8 blocks of 4 KiB"; }
loop_up
expect_verify_fail neg-kernel-verify "${job_b[@]}" "${kernel[@]}" --verify_only=1
dev_n=$loopdev
loop_down || fail "could not tear down kernel-loop ($dev_n, $mnt) after the negative control"
expect_verify_fail neg-engine-verify "${job_b[@]}" "${engine[@]}" --verify_only=1

echo "PASS: data crosses paths intact: A kernel-loop ($dev_a, libaio direct) wrote 16 MiB, the engine verified it; B the engine wrote 16 MiB at 32M, kernel-loop ($dev_b) verified it; 8 overwritten blocks failed both verify passes ($((SECONDS - started)) s)"
