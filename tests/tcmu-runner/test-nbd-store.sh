#!/bin/bash
# The nbd store (bridges/store_nbd.c), driven by
# store-io (no ring), against nbdkit memory and against nbd-shim's
# standard and coreos profiles: writes read back, zeroes (WRITE_ZEROES
# where offered, written zeroes where not), trim, flush, a transfer
# larger than one request, and sessions (a connection each, in a thread
# of their own) seeing what the first connection wrote.
#
# What the store reads back it may have put anywhere, so the server's whole
# export is then read by qemu-io over an NBD connection of its own: every
# range holds the byte written there (adjacent blocks each their own), and
# zeroes where nothing was.
#
#   test-nbd-store.sh STORE_IO
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path store_io 1 "the store-io program"
require qemu-io
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built (meson builds it for this test)"

io() {
	"$store_io" "$@" || fail "store-io $*"
}

# holds NAME URI 'PATTERN OFF LEN'...: qemu-io finds each range so on the
# NBD server at URI
holds() {
	local name=$1 uri=$2 r out rc=0 args=()
	shift 2
	for r in "$@"; do
		args+=(-c "read -P $r")
	done
	out=$(qemu-io -f raw "${args[@]}" "$uri" 2>&1) || rc=$?
	if grep -q 'verification failed' <<<"$out"; then
		echo "$out" >&2
		fail "$name: the server holds other bytes than the store wrote there (qemu-io above)"
	fi
	[ $rc = 0 ] || fail "$name: qemu-io exited with $rc: $out"
}

steps=(write:0:1048576:0x5a read:0:1048576:0x5a zero:4096:8192
       read:4096:8192:0 read:0:4096:0x5a read:12288:4096:0x5a flush
       write:16777216:41943040:0x77 read:16777216:41943040:0x77
       session read:0:4096:0x5a write:512:512:0x12
       session read:512:512:0x12 read:1024:3072:0x5a)
# adjacent blocks, each its own byte
blocks=(write:2097152:65536:0x21 write:2162688:4096:0x22
	write:2166784:61440:0x23 write:2228224:65536:0x24)
# the 64 MiB export after steps and blocks, but for its first 4 KiB
export_rest=('0 4096 8192' '0x5a 12288 1036288' '0 1048576 1048576'
	     '0x21 2097152 65536' '0x22 2162688 4096' '0x23 2166784 61440'
	     '0x24 2228224 65536' '0 2293760 14483456'
	     '0x77 16777216 41943040' '0 58720256 8388608')

start_nbdkit "$T/k.sock" memory 64M
uri="nbd+unix:///?socket=$T/k.sock"
[ "$("$store_io" "nbd:$uri" size)" = 67108864 ] || fail "nbdkit: size"
io "nbd:$uri" "${steps[@]}" "${blocks[@]}" trim:0:4096 read:0:4096:0
# nbdkit memory's trim zeroes (plugins/memory/memory.c)
holds nbdkit "$uri" '0 0 4096' "${export_rest[@]}"
echo "nbdkit: ok"

start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/s.sock" --size 64M
wait_socket "$T/s.sock"
io "nbd:nbd+unix:///?socket=$T/s.sock" "${steps[@]}" "${blocks[@]}"
holds "nbd-shim standard" "nbd+unix:///?socket=$T/s.sock" \
	'0x5a 0 512' '0x12 512 512' '0x5a 1024 3072' "${export_rest[@]}"
echo "nbd-shim standard: ok"
# torus: EXPORT_NAME only, no WRITE_ZEROES (zeroes are written), one
# connection per volume at a time, so no sessions here; and no reading
# by qemu-io, which torus refuses (it closes on qemu's first option);
# the transfer larger than one request is the others' (it adds a second)
start_bg "$NBD_SHIM" --profile coreos --listen "unix:$T/t.sock" --size 64M
wait_socket "$T/t.sock"
io "nbd:nbd+unix:///torus?socket=$T/t.sock" "${steps[@]:0:7}"
echo "nbd-shim torus: ok"

out=$("$store_io" "nbd:nbd+unix:///?socket=$T/none.sock" 2>&1) &&
	fail "a missing server: store-io succeeded"
want="store-io: nbd nbd+unix:///?socket=$T/none.sock: cannot connect to Unix socket $T/none.sock: No such file or directory (is the NBD server running?)"
[ "$out" = "$want" ] || fail "a missing server: expected '$want', got '$out'"
echo ok
