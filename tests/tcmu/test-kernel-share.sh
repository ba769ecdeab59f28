#!/bin/bash
# The kernel's shares: the TCMU engine says once per job, at close, how
# much submission work (the kernel's kworker's) and completion work (the
# kernel's, inside the handler's notify) it did in fio's thread, per
# command, and over how many commands. Those are exactly the job's I/O
# commands: as many as fio's I/Os when each fits one command,
# max_transfer's split when not, each job its own on a shared ring; the
# set-up commands (INQUIRY, READ CAPACITY...) are not counted. The
# submission side is timed on a sample: at least one command, at most all.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

start_tcmu_shim "$T/s.sock" --store memory --size 16M
uri="tcmu+unix:///?socket=$T/s.sock"
sub_re="^torus: tcmu: the kernel's submission share: \([0-9]*\) ns per command over \([0-9]*\) commands, timed on \([0-9]*\) and [0-9]* of [0-9]* wake-ups, [0-9]* of them sent (the others found the handler awake) (taking a cmd_id and data blocks, building the entry and CDB, copying a write's data in, publishing cmd_head, waking the handler: done in fio's thread here, in a kworker in the kernel)\$"
done_re="^torus: tcmu: the kernel's completion share: \([0-9]*\) ns per command over \([0-9]*\) commands (finding completions, copying reads out, freeing blocks and cmd_ids, handing each on: done in fio's thread here, inside the handler's notify write() in the kernel, which only queues the rest of the completion for a kworker)\$"

# shares SIDE: "NS CMDS [TIMED]" per line said, in order (SIDE: sub or done)
shares() {
	local re=$sub_re
	[ "$1" = done ] && re=$done_re
	if [ "$1" = sub ]; then
		sed -n "s/$re/\1 \2 \3/p" "$T/fio.out"
	else
		sed -n "s/$re/\1 \2/p" "$T/fio.out"
	fi
}

# ios JSON: each job's I/Os (read + write + trim), one a line, sorted
ios() {
	python3 -c 'import json, sys
for j in json.load(open(sys.argv[1]))["jobs"]:
    print(sum(j[d]["total_ios"] for d in ("read", "write", "trim")))' "$1" | sort -n
}

# check_shares PER-IO: every job's two lines once, ns > 0, commands =
# PER-IO x its I/Os, the submission side timed on 1 to all of them
check_shares() {
	local per=$1 side got want
	want=$(ios "$T/out.json" | awk -v k="$per" '{ print $1 * k }' | sort -n)
	[ -n "$want" ] && [ "$(ios "$T/out.json" | awk '$1 == 0' | wc -l)" = 0 ] ||
		fail "fio did no I/O: $(cat "$T/out.json")"
	for side in sub done; do
		got=$(shares $side | awk '$1 > 0 { print $2 }' | sort -n)
		[ "$got" = "$want" ] ||
			fail "kernel's $side share lines (ns > 0) over [$(echo $got)] commands, want [$(echo $want)] ($per a job's I/O); fio said: $(grep "kernel's" "$T/fio.out")"
	done
	got=$(shares sub | awk '$3 < 1 || $3 > $2')
	[ -z "$got" ] ||
		fail "kernel's submission share timed on none or more than its commands: $got"
}

# count_lines N WORD [S]: each side said N times (WORD and S for the message)
count_lines() {
	[ "$(shares sub | wc -l)" = "$1" ] ||
		fail "not $2 kernel's submission share line${3-}: $(cat "$T/fio.out")"
	[ "$(shares done | wc -l)" = "$1" ] ||
		fail "not $2 kernel's completion share line${3-}: $(cat "$T/fio.out")"
}

# One job, 4k at QD16: one command per I/O; a sample of about one in 16.
expect_fio_ok --name=one --uri="$uri" --size=8m --io_size=8m --rw=randrw --bs=4k \
	--iodepth=16 --output-format=json --output="$T/out.json"
count_lines 1 one
check_shares 1
shares sub | awk '{ exit !($3 >= $2 / 64 && $3 <= $2 / 4) }' ||
	fail "the submission side's sample is not about one in 16: $(shares sub)"

# 256k split into 64k commands: four commands per I/O.
expect_fio_ok --name=split --uri="$uri" --size=8m --io_size=8m --rw=randrw --bs=256k \
	--max_transfer=64k --iodepth=4 --output-format=json --output="$T/out.json"
check_shares 4

# Two jobs on the device's one ring: each counts its own, whoever reaped.
expect_fio_ok --name=two --uri="$uri" --size=8m --io_size=4m --rw=randrw --bs=4k \
	--iodepth=16 --numjobs=2 --output-format=json --output="$T/out.json"
count_lines 2 two s
check_shares 1

# A job refused at start says nothing.
expect_fio_error "data_size=65536 is out of range" --name=bad --uri="$uri" \
	--size=1m --rw=read --data_size=64k --max_transfer=128k
[ "$(grep -c "kernel's .* share" "$T/fio.out")" = 0 ] ||
	fail "a job that never ran said a kernel's share: $(cat "$T/fio.out")"
echo "ok: the kernel's submission and completion shares, per job, over exactly its I/O commands"
