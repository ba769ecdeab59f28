#!/bin/bash
# tcmu-shim end to end: ring-client (tests/tcmu/ring-client.c) plays the
# kernel's side of TCMU rings over the socket against a real tcmu-shim:
# INQUIRY, READ CAPACITY(16), patterns at depth 16, UNMAP then zeroes, an
# out-of-range READ, two rings at once, a detach by closing the socket,
# writes through a data area small enough to scatter their blocks, a
# ring of the wrong mailbox version refused with a message, a short
# benchmark; the file store with O_DIRECT; the command line's errors and a
# clean exit on SIGTERM and SIGINT.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

TCMU_SHIM=${TCMU_SHIM:-$TORUS_BUILD/shims/tcmu/tcmu-shim}
CLIENT=$TORUS_BUILD/tests/tcmu/ring-client
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -x "$CLIENT" ] || skip "$CLIENT is not built"

# bad_args 'MESSAGE' ARGS...: exit 2 and MESSAGE on stderr
bad_args() {
	local msg=$1 rc
	shift
	"$TCMU_SHIM" "$@" >"$T/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || { cat "$T/out" >&2; fail "exit $rc, expected 2: tcmu-shim $*"; }
	grep -qF -- "$msg" "$T/out" ||
		{ cat "$T/out" >&2; fail "expected '$msg' from: tcmu-shim $*"; }
}

"$TCMU_SHIM" --help >"$T/help" || fail "--help exited non-zero"
grep -q '^SYNOPSIS' "$T/help" && grep -q '^OPTIONS' "$T/help" ||
	fail "--help is not a man-style page"
# --version: the project's version from meson.build, exit 0
version=$(sed -n "s/^[[:space:]]*version : '\([^']*\)',/\1/p" "$TORUS_SRC/meson.build" | head -n 1)
got=$("$TCMU_SHIM" --version) || fail "--version exited non-zero"
[ "$got" = "tcmu-shim $version" ] || fail "--version: expected 'tcmu-shim $version', got '$got'"
bad_args 'give --listen unix:PATH' --size 1M
bad_args '--listen and --uio exclude each other' --listen "unix:$T/s" --uio /dev/uio0 --size 1M
bad_args '--listen and --uio exclude each other' --socket "$T/s" --uio /dev/uio0 --size 1M
bad_args '--listen tcp:127.0.0.1:1: use unix:PATH' --listen tcp:127.0.0.1:1 --size 1M
bad_args '--size is required with the memory store' --socket "$T/s"
bad_args '--size 12X' --socket "$T/s" --size 12X
bad_args '--block-size 1024: use 512 or 4096' --socket "$T/s" --size 1M --block-size 1024
bad_args '--size must be a multiple of --block-size' --socket "$T/s" --size 1000 
bad_args '--max-command-data must be a multiple of --block-size' --socket "$T/s" --size 1M --block-size 4096 --max-command-data 6K
# the deprecated spelling still works, with a warning naming the new one
bad_args "tcmu-shim: --max-transfer is deprecated: use --max-command-data (the engine's max_transfer is another setting: its split size)" \
	--socket "$T/s" --size 1M --block-size 4096 --max-transfer 6K
bad_args '--max-command-data must be a multiple of --block-size' --socket "$T/s" --size 1M --block-size 4096 --max-transfer 6K
bad_args '--store tape: no such store: use ' --socket "$T/s" --store tape
# --backend, the old spelling of --store, warns and works as --store
bad_args 'tcmu-shim: --backend is deprecated: use --store' --socket "$T/s" --backend tape
bad_args '--store tape: no such store' --socket "$T/s" --backend tape # is deprecated
bad_args '--size does not apply to --store nbd:' --socket "$T/s" --store nbd:nbd://127.0.0.1 --size 1M
bad_args '--plugin-dir is only for --store runner:' --socket "$T/s" --size 1M --plugin-dir /tmp
bad_args 'unknown option or missing value: --frobnicate' --socket "$T/s" --frobnicate
bad_args 'unexpected argument: extra' --socket "$T/s" --size 1M extra

# errors found when starting: exit 1 with the cause
: >"$T/empty"
"$TCMU_SHIM" --socket "$T/s" --store file:"$T/empty" >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q 'is empty; give --size' "$T/out" ||
	{ cat "$T/out" >&2; fail "an empty file without --size must fail clearly"; }
"$TCMU_SHIM" --socket "$T/s" --store file:"$T/missing" >"$T/out" 2>&1
[ $? -eq 1 ] && grep -qF "file store: $T/missing does not exist; name an existing file, or give --size to make it (sparse)" "$T/out" ||
	{ cat "$T/out" >&2; fail "a missing file without --size must fail clearly"; }
[ ! -e "$T/missing" ] || fail "a refused file:$T/missing was left behind"
"$TCMU_SHIM" --uio "$T/uio9" --size 1M >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q 'is it a UIO device' "$T/out" ||
	{ cat "$T/out" >&2; fail "a missing UIO device must fail clearly"; }

# the memory store: every check, then the wrong mailbox version
sock=$T/tcmu.sock
start_bg "$TCMU_SHIM" --socket "$sock" --size 64M --pidfile "$T/pid" -v \
	--log "$T/shim.log"
pid=${_bg_pids[-1]}
_servers_wait socket "$sock" "$pid" tcmu-shim
for i in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.05; done
[ "$(cat "$T/pid")" = "$pid" ] || fail "pid file does not hold $pid"
grep -q "^tcmu-shim: listening on $sock" "$T/shim.log" ||
	fail "no ready line in the log: $(cat "$T/shim.log")"

"$CLIENT" --socket "$sock" --check >"$T/check.out" 2>&1 ||
	{ cat "$T/check.out" "$T/shim.log" >&2; fail "ring-client --check failed"; }
grep -q 'ILLEGAL REQUEST: logical block address out of range' "$T/check.out" ||
	{ cat "$T/check.out" >&2; fail "the out-of-range READ did not say LBA OUT OF RANGE"; }
"$CLIENT" --socket "$sock" --check-scatter >"$T/scatter.out" 2>&1 ||
	{ cat "$T/scatter.out" >&2; fail "ring-client --check-scatter failed"; }

"$CLIENT" --socket "$sock" --attach-version 3 >"$T/version.out" 2>&1 ||
	{ cat "$T/version.out" >&2; fail "a version 3 ring was not refused"; }
grep -q 'ring version 3, the handler host speaks TCMU mailbox version 2' "$T/version.out" ||
	{ cat "$T/version.out" >&2; fail "the refusal does not name the versions"; }

"$CLIENT" --socket "$sock" --bench 0.5 --qd 8 --bs 4096 >"$T/bench.out" 2>&1 ||
	{ cat "$T/bench.out" >&2; fail "ring-client --bench failed"; }
iops=$(sed -n 's/^iops //p' "$T/bench.out")
[ "${iops:-0}" -gt 0 ] || fail "no IOPS from the benchmark: $(cat "$T/bench.out")"
echo "memory store, 4k random reads, QD8: $iops IOPS"

# three rings attached by --check, one each by --check-scatter and --bench:
# each detached when its socket closed, exactly five (the refused ring never
# attached). The shim logs a detach when it sees the socket closed, maybe
# after ring-client has exited: wait up to 5 s for the fifth.
for i in $(seq 50); do
	n=$(grep -c 'the client closed its socket: detached' "$T/shim.log")
	[ "$n" -ge 5 ] && break
	sleep 0.1
done
[ "$n" -eq 5 ] || { cat "$T/shim.log" >&2; fail "expected 5 detaches in the log, saw $n"; }
grep -q 'attach refused: ring version 3' "$T/shim.log" ||
	fail "the shim did not log the refused ring"

kill -TERM "$pid"
wait "$pid"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc after SIGTERM, expected 0"
[ ! -e "$sock" ] || fail "socket left behind after SIGTERM"
[ ! -e "$T/pid" ] || fail "pid file left behind after SIGTERM"

# the file store with O_DIRECT: the data path, and the data in the file
img=$T/disk.img
start_bg "$TCMU_SHIM" --listen "unix:$sock" --store "file:$img,direct" --size 16M \
	--max-command-data 1M
pid=${_bg_pids[-1]}
_servers_wait socket "$sock" "$pid" "tcmu-shim file,direct"
"$CLIENT" --socket "$sock" --check-rw >"$T/rw.out" 2>&1 ||
	{ cat "$T/rw.out" >&2; fail "ring-client --check-rw on file,direct failed"; }
"$CLIENT" --socket "$sock" --bench 0.3 --qd 4 --bs 65536 --rw randwrite >"$T/bench.out" 2>&1 ||
	{ cat "$T/bench.out" >&2; fail "random writes on file,direct failed"; }
kill -INT "$pid"
wait "$pid"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc after SIGINT, expected 0"
[ "$(stat -c %s "$img")" = $((16 << 20)) ] || fail "the image is not 16M"
echo "ok"
