#!/bin/bash
# A short read through the engine, as the kernel hands one to the
# initiator: short-host (tests/tcmu/short-host.c) answers every read of
# more than a block with half of it, GOOD with TCMU_UFLAG_READ_LEN. The
# engine completes the I/O with the bytes that came and the rest as its
# residual (io_u->resid), no error: fio counts the short I/Os (short_ios)
# and reads the rest again. UNKNOWN_OP's EIO and the bytes a short read
# copies are tested at the client (tcmu-completion).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO"
HOST=$TORUS_BUILD/tests/tcmu/short-host
[ -x "$HOST" ] || skip "$HOST is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

start_bg "$HOST" "$T/s.sock" 1048576
wait_socket "$T/s.sock"

# 8 KiB reads: 4 KiB come, then 2, 1, 0.5 (a block comes whole).
expect_fio_ok --name=short --uri="tcmu+unix:///?socket=$T/s.sock" --ring=private \
	--rw=read --bs=8k --size=64k --iodepth=4 --output-format=json \
	--output="$T/out.json"
python3 - "$T/out.json" <<'PY' || fail "fio did not count the short reads as the residuals make them: $(cat "$T/out.json")"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
r = j["read"]
# no error; every 8 KiB read came short at least once (fio requeues the
# rest: 4 KiB, then 2, 1, 0.5 and a whole block), so more I/Os than reads
assert j["error"] == 0, j["error"]
assert r["short_ios"] >= 8, r["short_ios"]
assert r["total_ios"] > r["short_ios"], (r["total_ios"], r["short_ios"])
PY
grep -q "torus: .*bytes at offset" "$T/fio.out" &&
	fail "a short read was reported as a failure: $(cat "$T/fio.out")"

# Split in two commands of 4 KiB, each answered with 2: what came up to the
# first gap counts (2 KiB), fio reads the other 6 again.
expect_fio_ok --name=split --uri="tcmu+unix:///?socket=$T/s.sock" --ring=private \
	--max_transfer=4k --rw=read --bs=8k --size=64k --iodepth=4 \
	--output-format=json --output="$T/out.json"
python3 - "$T/out.json" <<'PY' || fail "fio did not count the split reads' residuals: $(cat "$T/out.json")"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
assert j["error"] == 0, j["error"]
assert j["read"]["short_ios"] >= 8, j["read"]["short_ios"]
PY
true
