#!/bin/bash
# The plugin host driving a plugin as tcmu-runner does, through fio and
# tcmu-shim, with the asynchronous test plugin handler_depth (built here):
# an asynchronous plugin is driven at the ring's depth; one that takes
# whole SCSI commands gets the initiator's; a plugin without a flush callout answers SYNCHRONIZE CACHE with CHECK
# CONDITION, ILLEGAL REQUEST / INVALID COMMAND OPERATION CODE, as
# tcmu-runner does, so fio's fsync fails instead of reporting a flush
# that never happened; with one, flushes reach the plugin.
#
#   test-runner-host.sh PLUGIN_DIR
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path dir 1 "the directory handler_depth.so was built in"

require "$FIO"
[ -x "$TCMU_SHIM" ] || fail "$TCMU_SHIM is not built (meson builds it for this test)"
[ -f "$ENGINE" ] || fail "$ENGINE is not built (meson builds it for this test)"
[ -f "$dir/handler_depth.so" ] || fail "no $dir/handler_depth.so"

uri="tcmu+unix:///?socket=$T/t.sock"

# An asynchronous plugin (nr_threads 0) at the ring's depth: tcmu-runner
# calls its callouts as commands arrive and lets them complete later, so
# with fio at iodepth 32 it holds many at once, not one.
start_tcmu_shim "$T/d.sock" --plugin-dir "$dir" --size 64M \
	--store "runner:depth:delay_us=200@$T/dstats"
shim=${_bg_pids[-1]}
expect_fio_ok --name=depth --uri="tcmu+unix:///?socket=$T/d.sock" \
	--rw=randrw --bs=4k --size=32M --iodepth=32 --io_size=8M \
	--verify=crc32c --do_verify=1
kill "$shim"
wait_gone "$shim" 10 "tcmu-shim did not stop on SIGTERM"
depth=$(awk '$1 == "max_inflight" { print $2 }' "$T/dstats")
[ "${depth:-0}" -ge 16 ] ||
	fail "fio at iodepth 32: the plugin held at most '${depth}' commands at once; expected 16 or more ($(tr '\n' ' ' <"$T/dstats"))"
echo "an asynchronous plugin at depth: ok (at most $depth at once)"

# A plugin that takes whole SCSI commands (as fbo and zbc) gets the
# initiator's: the engine sends READ(16), WRITE(16) and SYNCHRONIZE
# CACHE(16), not commands the host made up; asynchronous, at depth too.
start_tcmu_shim "$T/s.sock" --plugin-dir "$dir" --size 64M \
	--store "runner:depth:scsi,delay_us=100@$T/sstats"
shim=${_bg_pids[-1]}
expect_fio_ok --name=scsi --uri="tcmu+unix:///?socket=$T/s.sock" \
	--rw=randrw --bs=4k --size=32M --iodepth=32 --io_size=4M --fsync=64 \
	--verify=crc32c --do_verify=1
kill "$shim"
wait_gone "$shim" 10 "tcmu-shim did not stop on SIGTERM"
ops=$(awk '$1 == "opcodes" { $1 = ""; print }' "$T/sstats")
depth=$(awk '$1 == "max_inflight" { print $2 }' "$T/sstats")
# (the host's own: READ CAPACITY(16) at open, SYNCHRONIZE CACHE(10) at exit)
[ "$ops" = " 35 88 8a 91 9e" ] ||
	fail "handle_cmd got opcodes '$ops'; expected the initiator's READ(16), WRITE(16) and SYNCHRONIZE CACHE(16) (88 8a 91), and the host's 35 and 9e, no READ/WRITE(10)"
[ "${depth:-0}" -ge 16 ] ||
	fail "a SCSI-only asynchronous plugin held at most '${depth}' commands at once; expected 16 or more"
echo "the initiator's CDBs at depth: ok (opcodes$ops, at most $depth at once)"

# A flush through a plugin that has one: it reaches the plugin, and the
# data written before it reads back.
start_tcmu_shim "$T/t.sock" --plugin-dir "$dir" --size 16M \
	--store "runner:depth:wc=1@$T/stats"
shim=${_bg_pids[-1]}
expect_fio_ok --name=flush --uri="$uri" --rw=write --bs=4k --size=1M \
	--iodepth=4 --fsync=8 --verify=crc32c --do_verify=1
kill "$shim"
wait_gone "$shim" 10 "tcmu-shim did not stop on SIGTERM"
flushes=$(awk '$1 == "flushes" { print $2 }' "$T/stats")
[ "${flushes:-0}" -ge 32 ] ||
	fail "fsync=8 over 256 writes: expected 32 or more flushes at the plugin, got '${flushes}' ($(tr '\n' ' ' <"$T/stats"))"
echo "flush reaches the plugin: ok ($flushes flushes)"

# No flush callout: fio's fsync fails with the sense tcmu-runner gives.
start_tcmu_shim "$T/n.sock" --plugin-dir "$dir" --size 16M \
	--store "runner:depth:noflush@$T/stats2"
expect_fio_error "ILLEGAL REQUEST: invalid command operation code" \
	--name=noflush --uri="tcmu+unix:///?socket=$T/n.sock" --rw=write \
	--bs=4k --size=64k --fsync=4
echo "no flush callout: CHECK CONDITION: ok"
