#!/bin/bash
# Description: the fio that runs the engine agrees with the configured fio
# tree the engine was built against on struct layouts (engines/layout_probe.c).
. "$TORUS_SRC/tests/lib.sh"
require fio

probe=$TORUS_BUILD/engines/fio-layout-probe.so
[ -f "$probe" ] || fail "$probe was not built"
if ! "$FIO" --name=torus-probe --ioengine="external:$probe" \
	--filename=torus-probe-file --rw=randread --bs=12k --thinktime_blocks=5 \
	--numjobs=2 --log_entries=4099 --size=1m --number_ios=64 \
	--output="$T/fio.json" >"$T/probe.log" 2>&1 ||
   grep -q '^probe: .*expected' "$T/probe.log" ||
   ! grep -q 'matches fio' "$T/probe.log"; then
	cat "$T/probe.log" "$T/fio.json" >&2 2>/dev/null
	fail "$("$FIO" --version) disagrees with the fio tree the engine was built against: rebuild against this fio's source (rm -rf .deps/fio build && scripts/build.sh)"
fi
grep '^probe:' "$T/probe.log"
echo PASS
