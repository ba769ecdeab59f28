#!/bin/bash
# The handler host's NBD store (shims/tcmu/backend_nbd.c), driven by
# store-io (no ring), against nbdkit memory and against nbd-shim's
# standard and torus profiles: writes read back, zeroes (WRITE_ZEROES
# where offered, written zeroes where not), trim, flush, a transfer
# larger than one request, and sessions (a connection each, in a thread
# of their own) seeing what the first connection wrote.
#
#   test-nbd-store.sh STORE_IO
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path store_io 1 "the store-io program"


io() {
	"$store_io" "$@" || fail "store-io $*"
}

steps=(write:0:1048576:0x5a read:0:1048576:0x5a zero:4096:8192
       read:4096:8192:0 read:0:4096:0x5a read:12288:4096:0x5a flush
       write:16777216:41943040:0x77 read:16777216:41943040:0x77
       session read:0:4096:0x5a write:512:512:0x12
       session read:512:512:0x12 read:1024:3072:0x5a)

start_nbdkit "$T/k.sock" memory 64M
uri="nbd+unix:///?socket=$T/k.sock"
[ "$("$store_io" "nbd:$uri" size)" = 67108864 ] || fail "nbdkit: size"
io "nbd:$uri" "${steps[@]}" trim:0:4096 read:0:4096:0
echo "nbdkit: ok"

if [ -x "$NBD_SHIM" ]; then
	start_bg "$NBD_SHIM" --profile standard --listen "unix:$T/s.sock" --size 64M
	wait_socket "$T/s.sock"
	io "nbd:nbd+unix:///?socket=$T/s.sock" "${steps[@]}"
	echo "nbd-shim standard: ok"
	# torus: EXPORT_NAME only, no WRITE_ZEROES (zeroes are written), one
	# connection per volume at a time, so no sessions here
	start_bg "$NBD_SHIM" --profile torus --listen "unix:$T/t.sock" --size 64M
	wait_socket "$T/t.sock"
	io "nbd:nbd+unix:///torus?socket=$T/t.sock" "${steps[@]:0:9}"
	echo "nbd-shim torus: ok"
else
	echo "nbd-shim: not built ($NBD_SHIM)"
fi

out=$("$store_io" "nbd:nbd+unix:///?socket=$T/none.sock" 2>&1) &&
	fail "a missing server: store-io succeeded"
want="store-io: nbd nbd+unix:///?socket=$T/none.sock: cannot connect to Unix socket $T/none.sock: No such file or directory (is the NBD server running?)"
[ "$out" = "$want" ] || fail "a missing server: expected '$want', got '$out'"
echo ok
