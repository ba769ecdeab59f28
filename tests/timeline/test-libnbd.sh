#!/bin/bash
# Description: the join of transport=libnbd's records (engine-libnbd:
# queued, callback, handed, keyed by libnbd's cookie) with nbd-shim's.
# fio through the engine with transport=libnbd (timeline=DIR) to nbd-shim
# --timeline DIR, two jobs of two connections each: every engine record
# finds its server record (100%: the cookie libnbd sends is the key both
# sides write), the phases add up to the total, and the total passes the
# check against fio's medians (docs/timeline.md). Before it, one verified
# job alone: its records and its own phases (check_engine.py). Skipped
# only when the engine was built without libnbd.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || fail "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || fail "$ENGINE is not built"
# tls_psk_file= is transport=libnbd's own option (as tests/libnbd/tls.sh checks)
"$FIO" --enghelp="$ENGINE" 2>&1 | grep -q '^tls_psk_file ' ||
	skip "the engine was built without libnbd: no transport=libnbd (install libnbd-dev: scripts/deps.sh, then meson setup again)"

. "$TORUS_SRC/tests/timeline/join-check.sh"

start_bg "$NBD_SHIM" --profile standard --store memory --size 64M \
	--listen "unix:$T/nbd.sock" --timeline "$T/tl"
shim=${_bg_pids[-1]}
wait_socket "$T/nbd.sock"
# one job, data verified: the engine's records, its phases and its table
"$FIO" --ioengine="external:$ENGINE" --uri="nbd+unix:///?socket=$T/nbd.sock" \
	--transport=libnbd --name=one --size=4m --rw=randrw --bs=4k --iodepth=8 \
	--verify=crc32c --verify_fatal=1 --lat_percentiles=1 --timeline="$T/one" --output-format=json \
	--output="$T/fio.json" 2>"$T/fio.err" ||
	{ cat "$T/fio.err" >&2; fail "fio with transport=libnbd and timeline= exited non-zero"; }
python3 "$TORUS_SRC/tests/timeline/check_engine.py" "$T/one/engine-1.rec" \
	"$T/one/engine-1.json" "$T/fio.json" "$T/fio.err" libnbd 1 ||
	fail "timeline of the transport=libnbd job (above)"
expect_fio_ok --name=l --uri="nbd+unix:///?socket=$T/nbd.sock" --transport=libnbd \
	--timeline="$T/tl" --conns=2 --numjobs=2 --rw=randrw --bs=4k --iodepth=8 \
	--size=16m --runtime=300ms --time_based=1 --lat_percentiles=1 --output-format=json \
	--output="$T/fio.json"
# the shim writes a connection's last records when it closes: let it end
kill "$shim"
wait_gone "$shim" 10 "nbd-shim did not end on SIGTERM"
forget_bg "$shim"
[ -s "$T/tl/engine-1.rec" ] && [ -s "$T/tl/engine-2.rec" ] ||
	fail "no engine-1.rec and engine-2.rec in $T/tl: $(ls "$T/tl")"
check "$T/tl" engine-libnbd nbd-shim 200
grep -q "libnbd back" "$T/table" || fail "scripts/timeline's table has no 'libnbd back' phase"

echo "PASS"
