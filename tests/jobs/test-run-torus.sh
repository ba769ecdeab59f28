#!/bin/bash
# The torus document's jobs run for a couple of seconds through the engine
# against nbd-shim's coreos profile (replication 2, memory), with verify where they write;
# ddreadback reads back what ddwrite wrote, as in the document. Then the same
# over TCMU (the document's other front end): the engine's TCMU transport to
# tcmu-shim, whose NBD store forwards to nbd-shim's coreos profile taking one connection at
# a time, as the runner's -tcmu runs do.
. "$TORUS_SRC/tests/lib.sh"
require fio
[ -f "$ENGINE" ] || skip "no engine at $ENGINE (ninja -C build)"
[ -x "$NBD_SHIM" ] || skip "no shim at $NBD_SHIM (ninja -C build)"
J=$TORUS_SRC/jobs
export TORUS_SIZE=8M TORUS_RUNTIME=2
cd "$T" || fail "cd $T"

start_bg "$NBD_SHIM" --profile coreos --listen "unix:$T/torus.sock" --size 64M \
	--store memory --replicas 2
wait_socket "$T/torus.sock"
uri="nbd+unix:///torus?socket=$T/torus.sock"

expect_fio_ok --uri="$uri" --verify=crc32c "$J/torus-ddwrite.fio"
expect_fio_ok --uri="$uri" "$J/torus-ddreadback.fio"
grep -q 'read: IOPS=' "$T/fio.out" || fail "ddreadback read nothing"
expect_fio_ok --uri="$uri" --verify=crc32c "$J/randrw.fio"
expect_fio_ok --uri="$uri" --verify=crc32c "$J/torus-randrw-4k.fio"
echo "ok: the coreos-torus jobs run against nbd-shim's coreos profile"

[ -x "$TCMU_SHIM" ] || skip "no handler host at $TCMU_SHIM (ninja -C build)"
start_bg "$NBD_SHIM" --profile coreos --listen "unix:$T/torus2.sock" --size 64M \
	--store memory --replicas 2 --bandwidth 1gbit
wait_socket "$T/torus2.sock"
start_tcmu_shim "$T/tcmu.sock" --store "nbd:nbd+unix:///torus?socket=$T/torus2.sock"
uri="tcmu+unix:///?socket=$T/tcmu.sock"
expect_fio_ok --uri="$uri" --verify=crc32c "$J/torus-ddwrite.fio"
expect_fio_ok --uri="$uri" "$J/torus-ddreadback.fio"
grep -q 'read: IOPS=' "$T/fio.out" || fail "ddreadback over TCMU read nothing"
expect_fio_ok --uri="$uri" --verify=crc32c "$J/randrw.fio"
expect_fio_ok --uri="$uri" --verify=crc32c "$J/torus-randrw-4k.fio"
echo "ok: the coreos-torus jobs run over TCMU, tcmu-shim in front of nbd-shim's coreos profile"
