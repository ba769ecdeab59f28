#!/bin/bash
# The legacy profiles fail where the real servers fail:
# - fio's built-in nbd engine (libnbd) cannot connect to torus or zeroos,
#   as it cannot connect to the real servers; it can to standard;
# - a second connection to a torus volume in use is refused, and the
#   volume is free again once the first ends;
# - the engine refuses a trim job against zeroos at start, with a message
#   (0-Disk does not advertise TRIM), and conns=2 against torus (no
#   multi-conn);
# - TRIM sent to zeroos anyway answers EIO: through fio with the
#   --advertise-trim test hook (and on the wire in test-wire).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" nbdinfo
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
# The comparison with fio's own nbd engine needs one: Debian's fio has it
# (built with libnbd); a fio configured without libnbd does not.
"$FIO" --enghelp=nbd >/dev/null 2>&1 ||
	skip "$("$FIO" --version) has no built-in nbd engine (configure fio with --enable-libnbd)"

start_bg "$NBD_SHIM" --profile coreos --size 64M --listen "unix:$T/torus.sock" \
	--verbose 2>"$T/torus.log"
start_bg "$NBD_SHIM" --profile zeroos --size 64M --listen "unix:$T/zeroos.sock"
start_bg "$NBD_SHIM" --profile standard --size 64M --listen "unix:$T/std.sock"
wait_socket "$T/torus.sock"
wait_socket "$T/zeroos.sock"
wait_socket "$T/std.sock"
torus="nbd+unix:///torus?socket=$T/torus.sock"
zeroos="nbd+unix:///default?socket=$T/zeroos.sock"
std="nbd+unix:///?socket=$T/std.sock"

# fio's built-in nbd engine
builtin() {
	"$FIO" --name=builtin --ioengine=nbd --uri="$1" --rw=read --bs=4k \
		--size=1M >"$T/builtin.out" 2>&1
}
builtin "$std" || { cat "$T/builtin.out" >&2; fail "fio's nbd engine fails against the standard profile"; }
for uri in "$torus" "$zeroos"; do
	if builtin "$uri"; then
		cat "$T/builtin.out" >&2
		fail "fio's nbd engine connected to $uri; the real server refuses libnbd"
	fi
done
echo "builtin nbd engine: fails against torus and zeroos, works with standard"
nbdinfo "$std" >/dev/null 2>&1 || fail "nbdinfo fails against standard"
! nbdinfo "$torus" >/dev/null 2>&1 || fail "nbdinfo connected to torus"
! nbdinfo "$zeroos" >/dev/null 2>&1 || fail "nbdinfo connected to zeroos"
echo "nbdinfo: fails against torus and zeroos"

# one connection per torus volume
"$FIO" --ioengine="external:$ENGINE" --name=first --uri="$torus" \
	--rw=randread --bs=4k --size=16M --time_based --runtime=4 \
	>"$T/first.out" 2>&1 &
first=$!
# wait until the first job holds the volume (after the engine's GO attempt)
for i in $(seq 200); do
	grep -q 'transmission' "$T/torus.log" && break
	sleep 0.05
done
grep -q 'transmission' "$T/torus.log" || fail "the first torus job did not connect"
expect_fio_error 'takes one connection only (as coreos-torus does) and is in use' \
	--name=second --uri="$torus" --rw=read --bs=4k --size=1M
wait $first || { cat "$T/first.out" >&2; fail "the first torus job failed"; }
expect_fio_ok --name=third --uri="$torus" --rw=read --bs=4k --size=1M
echo "torus: a second connection is refused while the first holds the volume"

expect_fio_error 'does not advertise multi-conn' \
	--name=conns --uri="$torus" --conns=2 --rw=read --bs=4k --size=1M
echo "torus: conns=2 refused by the engine"

expect_fio_error 'the server does not support trim' \
	--name=trim --uri="$zeroos" --rw=randtrim --bs=4k --size=1M
echo "zeroos: trim job refused at start"

start_bg "$NBD_SHIM" --profile zeroos --size 64M --listen "unix:$T/zt.sock" \
	--advertise-trim
wait_socket "$T/zt.sock"
expect_fio_error 'error=Input/output error' \
	--name=trim --uri="nbd+unix:///default?socket=$T/zt.sock" \
	--rw=randtrim --bs=4k --size=1M
grep -q 'trim offset=' "$T/fio.out" || fail "the EIO was not on a trim"
echo "zeroos: TRIM answers EIO through fio"

# zeroos advertises FUA: the engine's fua=1 goes through (FUA flushes)
expect_fio_ok --name=fua --uri="$zeroos" --rw=randwrite --bs=4k --size=1M \
	--fua=1 --verify=crc32c
expect_fio_error 'fua=1 but the server does not support FUA' \
	--name=fua --uri="$torus" --rw=randwrite --bs=4k --size=1M --fua=1
echo "fua: zeroos takes it, torus does not advertise it"
