#!/bin/bash
# The torus and 0-Disk wire behaviour the shim reproduces
# (docs/legacy-servers.md, docs/shims.md), checked on the wire by a raw
# client (wire-probe.py), plus the basics of the standard profile.
# $1: the fail-sync library (tests/shims/fail-sync.c), for torus's answers
# to FLUSH and TRIM when its sync fails.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path fail_sync 1 "the fail-sync library"

require python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"

WIRE_PROBE_FAIL_SYNC=$fail_sync \
python3 "$TORUS_SRC/tests/shims/wire-probe.py" "$NBD_SHIM" >"$T/probe.out" 2>&1
rc=$?
cat "$T/probe.out"
[ $rc -eq 0 ] || fail "wire probe: $(grep -c '^FAIL' "$T/probe.out") check(s) failed"
