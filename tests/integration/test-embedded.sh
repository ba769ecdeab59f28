#!/bin/bash
# Description: with no uri, the engine starts nbdkit memory sized to the
# job on a private socket, says so, and stops it when fio ends; without
# nbdkit it says which package to install.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit

expect_fio_ok --name=e --size=48m --rw=randrw --bs=4k --iodepth=16 --verify=crc32c
grep -q "torus: no uri given: started the embedded default server 'nbdkit memory size=50331648'" "$T/fio.out" ||
	fail "no message about the embedded server: $(cat "$T/fio.out")"
sock=$(sed -n 's/.* on \(\/tmp\/torus-embedded-[^ ]*\) (pid .*/\1/p' "$T/fio.out")
pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/fio.out")
[ -n "$pid" ] || fail "no pid in the message"
kill -0 "$pid" 2>/dev/null && fail "embedded nbdkit (pid $pid) still runs after fio exited"
[ -e "$sock" ] && fail "socket $sock left behind"

# A write job then a verify-only job in one run share the server.
cat >"$T/two.fio" <<JOB
[global]
size=16m
bs=4k
iodepth=8
verify=crc32c
[write]
rw=randwrite
do_verify=0
verify_state_save=0
[check]
stonewall
rw=randread
verify_only=1
JOB
expect_fio_ok "$T/two.fio"

# thread=1 too.
expect_fio_ok --name=et --size=16m --rw=randwrite --bs=4k --iodepth=8 --verify=crc32c --thread=1

# No nbdkit on PATH: a clear error naming the package and the uri option.
mkdir "$T/bin"
ln -s "$(command -v "$FIO")" "$T/bin/fio"
if PATH=$T/bin fio --ioengine="external:$ENGINE" --name=nok --size=1m --rw=read >"$T/fio.out" 2>&1; then
	fail "fio succeeded without nbdkit"
fi
grep -qF "nbdkit (which serves the embedded default target) is not installed: install the Debian package nbdkit (apt-get install nbdkit), or point the engine at a server with uri=nbd://host:port/export" "$T/fio.out" ||
	fail "no message naming the package: $(cat "$T/fio.out")"
echo "PASS"
