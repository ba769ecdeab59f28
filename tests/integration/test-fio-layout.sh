#!/bin/bash
# Description: the fio that runs the engine agrees with the configured fio
# tree the engine was built against on struct layouts (engines/layout_check.c).
. "$TORUS_SRC/tests/lib.sh"
require fio

check=$TORUS_BUILD/engines/fio-layout-check.so
[ -f "$check" ] || fail "$check was not built"
if ! "$FIO" --name=torus-layout --ioengine="external:$check" \
	--filename=torus-layout-file --rw=randread --bs=12k --thinktime_blocks=5 \
	--numjobs=2 --log_entries=4099 --size=1m --number_ios=64 \
	--output="$T/fio.json" >"$T/layout.log" 2>&1 ||
   grep -q '^layout: .*expected' "$T/layout.log" ||
   ! grep -q 'matches fio' "$T/layout.log"; then
	cat "$T/layout.log" "$T/fio.json" >&2 2>/dev/null
	fail "$("$FIO" --version) disagrees with the fio tree the engine was built against: rebuild against this fio's source (rm -rf .deps/fio build && scripts/build.sh)"
fi
grep '^layout:' "$T/layout.log"
echo PASS
