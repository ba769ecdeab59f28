#!/bin/bash
# A read-only store (file:PATH,ro) over both transports: nbd-shim
# advertises NBD_FLAG_READ_ONLY, tcmu-shim reports write protection (MODE
# SENSE's WP), and tcmu-shim over an NBD export the server offers
# read-only does too. The engine refuses a writing job before any I/O (the
# shims' -v logs show no write reaching them), reads verify the file's
# pattern, and the file is unchanged.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

MSG="the export is read-only but the job writes; use a read workload or a writable export"
# "abc\n" over and over: fio's verify_pattern 0x6162630a in every block.
yes abc | head -c 4M >"$T/img"
sum=$(md5sum <"$T/img")

# check URI WHAT: a writing job refused before I/O, a reading one verified.
check() {
	local rw
	for rw in write randrw trim; do
		expect_fio_error "$MSG" --name=ro --uri="$1" --rw=$rw --bs=4k --size=1m
	done
	expect_fio_ok --name=ro --uri="$1" --rw=randread --bs=4k --size=4m \
		--iodepth=8 --verify=pattern --verify_pattern=0x6162630a --do_verify=1
	grep -q 'READ: .*io=4096KiB' "$T/fio.out" ||
		{ cat "$T/fio.out" >&2; fail "$2: the reads did not cover the file"; }
	# a wrong pattern is caught: the reads are checked
	run_fio --name=ro --uri="$1" --rw=read --bs=4k --size=64k \
		--verify=pattern --verify_pattern=0x6162630b --do_verify=1 &&
		fail "$2: reads verified against the wrong pattern"
	[ "$(md5sum <"$T/img")" = "$sum" ] || fail "$2: the read-only file changed"
	echo "$2: writes refused before I/O, reads verified: ok"
}

# nbd-shim: READ_ONLY on the wire, no write request in its log
start_bg "$NBD_SHIM" -v --profile standard --listen "unix:$T/n.sock" \
	--store "file:$T/img,ro" 2>"$T/nbd.log"
_servers_wait socket "$T/n.sock" "${_bg_pids[-1]}" "nbd-shim"
check "nbd+unix:///?socket=$T/n.sock" "nbd-shim"
grep -E ' NBD_CMD_(WRITE|TRIM|WRITE_ZEROES) offset' "$T/nbd.log" &&
	fail "nbd-shim: a write reached the read-only export"
grep -q ' NBD_CMD_READ offset' "$T/nbd.log" || { tail "$T/nbd.log" >&2; fail "nbd-shim: its -v log shows no READ"; }

# tcmu-shim: WP in MODE SENSE, no WRITE, WRITE SAME or UNMAP in its log
# (0x0a 0x2a 0xaa 0x8a, 0x41 0x93, 0x42)
wcmd='command 0x(0a|2a|aa|8a|41|93|42) '
start_tcmu_shim "$T/t.sock" -v --store "file:$T/img,ro" --log "$T/tcmu.log"
check "tcmu+unix:///?socket=$T/t.sock" "tcmu-shim"
grep -E "$wcmd" "$T/tcmu.log" && fail "tcmu-shim: a write reached the read-only device"
grep -q 'command 0x1a ' "$T/tcmu.log" || { cat "$T/tcmu.log" >&2; fail "tcmu-shim: no MODE SENSE in its -v log"; }

# tcmu-shim over the read-only NBD export: the nbd store is read-only too
start_tcmu_shim "$T/tn.sock" -v --store "nbd:nbd+unix:///?socket=$T/n.sock" \
	--log "$T/tn.log"
check "tcmu+unix:///?socket=$T/tn.sock" "tcmu-shim --store nbd: (read-only export)"
grep -E "$wcmd" "$T/tn.log" && fail "tcmu-shim (nbd store): a write reached the device"

# what ",ro" refuses at start, each with its fix
bad() {
	"$NBD_SHIM" --profile standard --listen "unix:$T/bad.sock" "$@" >"$T/bad.out" 2>&1 &&
		fail "nbd-shim $* started"
	grep -qF -- "$msg" "$T/bad.out" || { cat "$T/bad.out" >&2; fail "expected '$msg' from nbd-shim $*"; }
}
: >"$T/empty"
msg='missing does not exist, and ",ro" does not make it; name an existing file' bad --store "file:$T/missing,ro"
[ -e "$T/missing" ] && fail "file:PATH,ro created PATH"
msg='is empty, and ",ro" serves it as it is' bad --store "file:$T/empty,ro"
msg='less than --size 8388608, and ",ro" does not extend it' bad --store "file:$T/img,direct,ro" --size 8M
echo "read-only store: ok"
