#!/bin/bash
# The kernel's share: the TCMU engine says once per job, at close, how
# much completion work it did in fio's thread that the kernel does in the
# handler's notify, per command, and over how many commands. Those are
# exactly the job's I/O commands: as many as fio's I/Os when each fits one
# command, max_transfer's split when not, each job its own on a shared
# ring; the set-up commands (INQUIRY, READ CAPACITY...) are not counted.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

start_tcmu_shim "$T/s.sock" --store memory --size 16M
uri="tcmu+unix:///?socket=$T/s.sock"
re="^torus: tcmu: the kernel's share: \([0-9]*\) ns of completion work per command over \([0-9]*\) commands (finding completions, copying reads out, freeing blocks and cmd_ids, completing to fio: done in fio's thread here, inside the handler's notify write() in the kernel)\$"

# shares: "NS CMDS" per line said, in order
shares() {
	sed -n "s/$re/\1 \2/p" "$T/fio.out"
}

# ios JSON: each job's I/Os (read + write + trim), one a line, sorted
ios() {
	python3 -c 'import json, sys
for j in json.load(open(sys.argv[1]))["jobs"]:
    print(sum(j[d]["total_ios"] for d in ("read", "write", "trim")))' "$1" | sort -n
}

# check_shares PER-IO: every job's line once, ns > 0, commands = PER-IO x its I/Os
check_shares() {
	local per=$1 got want
	got=$(shares | awk '$1 > 0 { print $2 }' | sort -n)
	want=$(ios "$T/out.json" | awk -v k="$per" '{ print $1 * k }' | sort -n)
	[ -n "$want" ] && [ "$(ios "$T/out.json" | awk '$1 == 0' | wc -l)" = 0 ] ||
		fail "fio did no I/O: $(cat "$T/out.json")"
	[ "$got" = "$want" ] ||
		fail "kernel's share lines (ns > 0) over [$(echo $got)] commands, want [$(echo $want)] ($per a job's I/O); fio said: $(grep "kernel's share" "$T/fio.out")"
}

# One job, 4k at QD16: one command per I/O.
expect_fio_ok --name=one --uri="$uri" --size=8m --io_size=8m --rw=randrw --bs=4k \
	--iodepth=16 --output-format=json --output="$T/out.json"
[ "$(shares | wc -l)" = 1 ] || fail "not one kernel's share line: $(cat "$T/fio.out")"
check_shares 1

# 256k split into 64k commands: four commands per I/O.
expect_fio_ok --name=split --uri="$uri" --size=8m --io_size=8m --rw=randrw --bs=256k \
	--max_transfer=64k --iodepth=4 --output-format=json --output="$T/out.json"
check_shares 4

# Two jobs on the device's one ring: each counts its own, whoever reaped.
expect_fio_ok --name=two --uri="$uri" --size=8m --io_size=4m --rw=randrw --bs=4k \
	--iodepth=16 --numjobs=2 --output-format=json --output="$T/out.json"
[ "$(shares | wc -l)" = 2 ] || fail "not two kernel's share lines: $(cat "$T/fio.out")"
check_shares 1

# A job refused at start says nothing.
expect_fio_error "data_size=65536 is out of range" --name=bad --uri="$uri" \
	--size=1m --rw=read --data_size=64k --max_transfer=128k
[ "$(shares | wc -l)" = 0 ] || fail "a job that never ran said a kernel's share: $(cat "$T/fio.out")"
echo "ok: the kernel's share, per job, over exactly its I/O commands"
