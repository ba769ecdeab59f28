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
# (a --share of the test's directory). What the shim saw is asserted: in
# each pass exactly one READ(10) or WRITE(10) per I/O fio reports, nothing
# else, and every command of the whole run answered GOOD; the opcodes the
# kernel sent are also listed on stdout.

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
"$shim" --uio "$uio" --store memory --size "$size" --block-size 512 -v --log "$log" &
shim_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -q 'serving' "$log" 2>/dev/null && break
	kill -0 "$shim_pid" 2>/dev/null || { cat "$log" >&2; fail "tcmu-shim exited before serving $uio"; }
	sleep 0.1
done
grep -q 'serving' "$log" || fail "tcmu-shim did not report serving $uio within 10 s"

sd=$("$tk" attach --name "$name" --timeout 120) || fail "tcmu-kernel attach failed"

# 16 MiB in blocks of 4 to 64 KiB. The disk's limits must let each of
# fio's I/Os reach the shim as one command (64 KiB is hw_max_sectors, 128,
# tcmu-kernel's default; a page-aligned 64 KiB buffer is 16 segments), and
# merging is off, so that the counts below are exact: one command per I/O.
size_job=16777216
job=(--name=kernel-tcmu --filename="$sd" --ioengine=libaio --direct=1
     --rw=randwrite --bsrange=4k-64k --iodepth=16 --size=$size_job
     --verify=crc32c --verify_fatal=1 --randrepeat=1 --output-format=json)
q=/sys/block/${sd##*/}/queue
(($(cat "$q/max_sectors_kb") >= 64)) ||
	fail "$sd takes at most $(cat "$q/max_sectors_kb") KiB per command: a 64 KiB I/O would be split"
(($(cat "$q/max_segments") >= 16)) ||
	fail "$sd takes at most $(cat "$q/max_segments") segments per command: a 64 KiB I/O would be split"
echo 2 >"$q/nomerges" || fail "cannot turn merging off on $sd ($q/nomerges)"

# fio_counts FILE: "error write_bytes write_ios read_bytes read_ios" of the
# one job in fio's JSON output FILE (anything before the JSON is skipped).
fio_counts() {
	python3 -c '
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
print(job["error"], job["write"]["io_bytes"], job["write"]["total_ios"],
      job["read"]["io_bytes"], job["read"]["total_ios"])' "$1"
}

# log_mark: how many lines the shim has logged (one per command, written
# before the command completes, so a pass's commands are all in by the
# time fio exits).
log_mark() {
	wc -l <"$log"
}

# shim_ops FROM TO: "reads writes others", the READ(10), WRITE(10) and any
# other commands the shim logged in lines FROM+1 to TO.
shim_ops() {
	sed -n "$(($1 + 1)),$2p" "$log" | awk '
		/command 0x28[ :]/ { r++; next }
		/command 0x2a[ :]/ { w++; next }
		/command 0x/ { o++ }
		END { print r + 0, w + 0, o + 0 }'
}

# run_pass WHAT FILE FIO-ARGS...: one fio pass; sets err wbytes wios rbytes
# rios from its report and sreads swrites sothers from the shim's log.
run_pass() {
	local what=$1 file=$2 a b counts
	shift 2
	echo "fio: $what pass on $sd" >&2
	a=$(log_mark)
	fio "${job[@]}" "$@" --output="$file" 2>"$file.err" ||
		{ cat "$file" "$file.err" >&2; fail "fio's $what pass exited non-zero"; }
	b=$(log_mark)
	if grep -qE 'verify: bad|bad magic|crc32c: verify failed' "$file.err"; then
		cat "$file.err" >&2
		fail "fio reported errors in the $what pass"
	fi
	# (no process substitution: the guest's /dev has no /dev/fd)
	counts=$(fio_counts "$file") || { cat "$file" >&2; fail "no JSON report from fio's $what pass"; }
	read -r err wbytes wios rbytes rios <<<"$counts"
	read -r sreads swrites sothers <<<"$(shim_ops "$a" "$b")"
	echo "$what pass: fio counted $wbytes bytes written in $wios I/Os, $rbytes read in $rios;" \
		"the shim got $swrites WRITE(10), $sreads READ(10), $sothers other commands" >&2
	[[ $err -eq 0 ]] || fail "fio reported error $err in the $what pass"
	[[ $sothers -eq 0 ]] ||
		fail "the shim got $sothers commands other than READ(10) and WRITE(10) during the $what pass"
}

# The write pass writes the whole 16 MiB once (randwrite covers every block
# once), then reads every block back to verify it: as many reads as writes,
# each one command at the shim.
run_pass write "$out/fio-write.json" --do_verify=1
[[ $wbytes -eq $size_job ]] || fail "the write pass wrote $wbytes bytes, not $size_job"
[[ $rbytes -eq $size_job && $rios -eq $wios ]] ||
	fail "the write pass verified $rbytes bytes in $rios reads, not $size_job in $wios (one per write)"
[[ $swrites -eq $wios && $sreads -eq $rios ]] ||
	fail "the write pass did $wios writes and $rios reads but the shim got $swrites WRITE(10) and $sreads READ(10)"
written=$wios

# The read-verify pass replays the same writes (randrepeat=1) without
# issuing them (fio still counts them as written) and reads each block
# back: the same I/Os over the same 16 MiB, and no WRITE at the shim.
run_pass read-verify "$out/fio-verify.json" --verify_only=1
[[ $wbytes -eq $size_job && $wios -eq $written ]] ||
	fail "the read-verify pass replayed $wbytes bytes in $wios writes, not the write pass's $size_job in $written"
[[ $rbytes -eq $size_job && $rios -eq $written ]] ||
	fail "the read-verify pass read $rbytes bytes in $rios I/Os, not $size_job in $written (one per write of the write pass)"
[[ $swrites -eq 0 && $sreads -eq $rios ]] ||
	fail "the read-verify pass did $rios reads and no writes but the shim got $sreads READ(10) and $swrites WRITE(10)"

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
# Every command of the whole run, the kernel's probing and teardown
# included, was answered GOOD: the shim logs anything else as "failed" or
# with its sense.
total=$(grep -c 'command 0x' "$log") || fail "the shim logged no commands"
good=$(grep -c 'command 0x.*: good$' "$log") || good=0
echo "commands: $total, GOOD: $good"
# Nothing but the write pass writes: the kernel's own probing only reads.
writes=$(grep -c 'command 0x2a[ :]' "$log") || writes=0
[[ $writes -eq $written ]] ||
	fail "the shim got $writes WRITE(10) in the whole run, but the write pass made $written"
[[ $good -eq $total ]] || {
	grep 'command 0x' "$log" | grep -v ': good$' | sort | uniq -c >&2
	fail "$((total - good)) of the $total commands the kernel sent were not answered GOOD"
}
echo "kernel-tcmu: OK ($sd, $size backstore, fio write+verify and read-verify passes clean)"
