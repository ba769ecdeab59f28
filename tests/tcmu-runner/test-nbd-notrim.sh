#!/bin/bash
# tcmu-shim's nbd store behind a server that offers no TRIM (nbd-shim's
# zeroos profile, as 0-Disk's nbdserver): the device is offered fully
# provisioned, so a trim job through the engine's TCMU transport is refused
# at start, as the same job over NBD is, instead of "running" trims that
# never reach the data. The store before a server with TRIM still thin
# provisions and trims (tcmu-fio-stores reads those trims back as zeroes).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built (meson builds it for this test)"

start_bg "$NBD_SHIM" --profile zeroos --store memory --listen "unix:$T/z.sock" --size 16M
wait_socket "$T/z.sock"
start_tcmu_shim "$T/t.sock" --store "nbd:nbd+unix:///default?socket=$T/z.sock"

# The same refusal as the job gets over NBD from this server, in the
# transport's terms (test-errors.sh checks the NBD one: "the server does
# not support trim (NBD_FLAG_SEND_TRIM not advertised)").
msg="tcmu+unix:///?socket=$T/t.sock: the device is not thin-provisioned (READ CAPACITY(16) has LBPME clear), so it takes no UNMAP; remove rw=trim/randtrim/trimwrite from the job"
rc=0
run_fio --name=tcmu --uri="tcmu+unix:///?socket=$T/t.sock" --rw=randtrim \
	--size=4M --bs=4k || rc=$?
[ $rc = 1 ] && grep -qF -- "$msg" "$T/fio.out" ||
	{ cat "$T/fio.out" >&2; fail "a trim job through a server without TRIM: expected fio to exit 1 with '$msg', got $rc"; }
echo ok
