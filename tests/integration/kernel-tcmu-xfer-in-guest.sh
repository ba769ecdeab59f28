#!/bin/bash
# The command sizes a kernel sends tcmu-shim, run inside scripts/guest by
# test-kernel-tcmu.sh, after kernel-tcmu-in-guest.sh (the same boot):
#
#   kernel-tcmu-xfer-in-guest.sh OUTDIR
#
# LIO's user backstore (512-byte blocks, the kernel's default
# hw_max_sectors), tcmu-shim on its UIO device writing its timeline
# records (one per command, with the bytes it moves), a tcm_loop disk, and
# fio reading 16 MiB sequentially in 1 MiB direct I/Os. The shim's Block
# Limits page offers 128 blocks as maximum and optimal transfer, as
# tcmu-runner's does, so sd must cut each 1 MiB into 16 READs of 128
# blocks: the commands engine-tcmu sends for the same job (it splits at
# 128 blocks). The queue's limits and the commands the shim got are
# asserted; the sizes are printed, and left in OUTDIR/xfer.txt.

set -euo pipefail

out=${1:?usage: $0 OUTDIR}
src=${TORUS_SRC:?TORUS_SRC is not set}
build=${TORUS_BUILD:-$src/build}
shim=$build/shims/tcmu/tcmu-shim
tk=$src/scripts/tcmu-kernel
name=xfer0
size=64M
# (the guest's /tmp lies over the host's: a fresh directory of our own)
work=$(mktemp -d /tmp/kernel-tcmu-xfer.XXXXXX)
log=$work/tcmu-shim.log
tl=$work/timeline
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
"$shim" --uio "$uio" --store memory --size "$size" --block-size 512 \
	--timeline "$tl" --log "$log" &
shim_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -q 'serving' "$log" 2>/dev/null && break
	kill -0 "$shim_pid" 2>/dev/null || { cat "$log" >&2; fail "tcmu-shim exited before serving $uio"; }
	sleep 0.1
done
grep -q 'serving' "$log" || fail "tcmu-shim did not report serving $uio within 10 s"

sd=$("$tk" attach --name "$name" --timeout 120) || fail "tcmu-kernel attach failed"

# What sd made of the page: 128 blocks of 512 bytes, 64 KiB, as both.
q=/sys/block/${sd##*/}/queue
max_kb=$(cat "$q/max_sectors_kb")
opt=$(cat "$q/optimal_io_size")
echo "$sd: max_sectors_kb $max_kb, optimal_io_size $opt"

# 16 MiB at 32 MiB, away from what the kernel reads when it probes the disk.
off=$((32 << 20))
len=$((16 << 20))
fio --name=xfer --filename="$sd" --ioengine=libaio --direct=1 --rw=read \
	--bs=1m --iodepth=4 --offset=$off --size=$len --output="$out/fio-xfer.txt" ||
	{ cat "$out/fio-xfer.txt" >&2; fail "fio's 1 MiB read job exited non-zero"; }

"$tk" teardown --name "$name" || fail "tcmu-kernel teardown failed"
for ((i = 0; i < 50; i++)); do
	kill -0 "$shim_pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$shim_pid" 2>/dev/null && kill "$shim_pid"
rc=0
wait "$shim_pid" || rc=$?
shim_pid=
[[ $rc -eq 0 ]] || { tail -n 5 "$log" >&2; fail "tcmu-shim exited $rc after teardown"; }
mkdir -p "$out/timeline" && cp "$tl"/*.rec "$out/timeline/" ||
	fail "tcmu-shim left no timeline records in $tl"

# The shim's records of the READs within the job's 16 MiB, by size.
PYTHONPATH=$src/scripts python3 - "$tl" "$off" "$len" >"$out/xfer.txt" <<'EOF' ||
import sys
from collections import Counter
from timeline_rec import OPS, read_dir

d, off, length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sizes = Counter()
for f in read_dir(d):
    for rec in f.records:
        if OPS[rec[3]] == "read" and off <= rec[1] < off + length:
            sizes[rec[2]] += 1
for n, count in sorted(sizes.items()):
    print(n, count)
EOF
	fail "reading the shim's timeline records in $tl failed"
echo "READ commands of the 1 MiB job at the shim (bytes, count):"
sed 's/^/  /' "$out/xfer.txt"
# (the limits after the counts: a wrong page shows the commands it made)
[[ $max_kb -eq 64 ]] ||
	fail "$sd takes $max_kb KiB per command, not the 64 KiB (128 blocks) the Block Limits page offers"
[[ $opt -eq 65536 ]] ||
	fail "$sd's optimal_io_size is $opt, not the 65536 bytes (128 blocks) the Block Limits page offers"
want="65536 256"
got=$(tr '\n' ' ' <"$out/xfer.txt")
[[ ${got% } == "$want" ]] ||
	fail "16 MiB read in 1 MiB I/Os reached the shim as READs of (bytes count) '${got% }', not 256 of 65536 bytes (128 blocks, as engine-tcmu splits)"
echo "kernel-tcmu-xfer: OK ($sd: each 1 MiB read arrived as 16 READs of 128 blocks)"
