#!/bin/bash
# The command line: --help, clear errors for bad arguments (exit 2), the
# ready line, --pidfile, and a clean exit 0 on SIGTERM and SIGINT that
# removes the socket and the pid file. --help and docs/shims.md list the
# same options.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"

"$NBD_SHIM" --help >"$T/help" || fail "--help exited non-zero"
grep -q '^NAME' "$T/help" && grep -q '^OPTIONS' "$T/help" ||
	fail "--help is not a man-style page"

# --version: the project's version from meson.build, exit 0
version=$(sed -n "s/^[[:space:]]*version : '\([^']*\)',/\1/p" "$TORUS_SRC/meson.build" | head -n 1)
got=$("$NBD_SHIM" --version) || fail "--version exited non-zero"
[ "$got" = "nbd-shim $version" ] || fail "--version: expected 'nbd-shim $version', got '$got'"

# every option in --help is in the options table of docs/shims.md and the
# other way round
grep -oE -- '^    (-[a-z], )?--[a-z-]*' "$T/help" | sed 's/^ *//; s/^-[a-z], //' | sort -u >"$T/help.opts"
grep -o -- '^| `--[a-z-]*' "$TORUS_SRC/docs/shims.md" | sed 's/^| `//' | sort -u >"$T/doc.opts"
diff "$T/help.opts" "$T/doc.opts" >"$T/opts.diff" ||
	{ cat "$T/opts.diff" >&2; fail "--help and docs/shims.md list different options"; }

# both shims list the same stores (one registry, storage/store.h) and the
# same store flags: the options --help prints between --store's entry and
# that of --backend (the old spelling), where the stores' flags go
stores() {
	"$1" --help | sed -n '/^    --store STORE/,/^    --[a-z]/p' | grep -E '^          [a-z]+' |
		awk '{print $1}'
}
store_flags() {
	"$1" --help | sed -n '/^    --store STORE/,/^    --backend STORE/p' | # old spelling
		grep -oE '^    --[a-z-]+' | grep -vxE '    --(store|backend)' # old spelling
}
stores "$NBD_SHIM" >"$T/nbd.stores"
grep -qx memory "$T/nbd.stores" ||
	{ cat "$T/nbd.stores" >&2; fail "nbd-shim --help does not list its default store, memory"; }
if [ -x "$TCMU_SHIM" ]; then
	stores "$TCMU_SHIM" >"$T/tcmu.stores"
	diff "$T/nbd.stores" "$T/tcmu.stores" >&2 ||
		fail "nbd-shim and tcmu-shim --help list different stores"
	diff <(store_flags "$NBD_SHIM") <(store_flags "$TCMU_SHIM") >&2 ||
		fail "nbd-shim and tcmu-shim --help list different store flags"
fi
# "no such store" lists them all, in the registry's order
store_list=$(awk 'NR > 1 { printf "%s", (last ? ", " last : "") } { last = $0 }
	END { print (NR > 1 ? " or " : "") last }' "$T/nbd.stores" | sed 's/^, //')

# bad_args 'MESSAGE' ARGS...: exit 2 and MESSAGE on stderr
bad_args() {
	local msg=$1 rc
	shift
	"$NBD_SHIM" "$@" >"$T/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || { cat "$T/out" >&2; fail "exit $rc, expected 2: nbd-shim $*"; }
	grep -qF -- "$msg" "$T/out" ||
		{ cat "$T/out" >&2; fail "expected '$msg' from: nbd-shim $*"; }
}

bad_args '--profile is required' --size 1M
bad_args '--profile nbdkit: use coreos, zeroos or standard' --profile nbdkit
bad_args '--size is required with the memory store' --profile standard
# --backend, the old spelling of --store, warns and works as --store
bad_args 'nbd-shim: --backend is deprecated: use --store' --profile standard --backend tape
bad_args '--store tape: no such store' --profile standard --backend tape # is deprecated
bad_args '--size 12X' --profile standard --size 12X
bad_args '--listen /tmp/x: use unix:PATH or tcp:HOST:PORT' --profile standard --size 1M --listen /tmp/x
bad_args '--store redis:127.0.0.1:1 is only for --profile zeroos' --profile standard --size 1M --store redis:127.0.0.1:1
bad_args '--store nbd:nbd://127.0.0.1 is only for --profile zeroos' --profile coreos --store nbd:nbd://127.0.0.1
bad_args "--store tape: no such store: use $store_list" --profile standard --size 1M --store tape
bad_args '--replicas needs a store whose copies are separate data' --profile coreos --replicas 2 --store runner:qcow:/x.qcow2 --size 1M
bad_args '--plugin-dir is only for --store runner:SUBTYPE:CFG' --profile standard --size 1M --plugin-dir /tmp
bad_args '--replicas is only for --profile coreos' --profile zeroos --size 1M --replicas 2
bad_args 'multiple of the block size for coreos' --profile coreos --size 1000K
bad_args 'coreos-torus refuses empty volume names' --profile coreos --size 1M --export ''
# --profile torus, the old spelling of coreos, warns and works as coreos
bad_args 'nbd-shim: --profile torus is deprecated: use --profile coreos' --profile torus --size 1M --export ''
bad_args 'coreos-torus refuses empty volume names' --profile torus --size 1M --export '' # old spelling
bad_args '--redis-meta is only for --store redis:' --profile zeroos --size 1M --redis-meta 127.0.0.1:1
bad_args '--bandwidth fast' --profile standard --size 1M --bandwidth fast
bad_args 'unknown option or missing value: --frobnicate' --profile standard --frobnicate
bad_args 'unexpected argument: extra' --profile standard --size 1M extra

# errors found when starting: exit 1 with the cause
: >"$T/empty"
"$NBD_SHIM" --profile standard --store file:"$T/empty" >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q 'is empty; give --size' "$T/out" ||
	{ cat "$T/out" >&2; fail "an empty file without --size must fail clearly"; }
"$NBD_SHIM" --profile standard --store file:"$T/missing" >"$T/out" 2>&1
[ $? -eq 1 ] && grep -qF "file store: $T/missing does not exist; name an existing file, or give --size to make it (sparse)" "$T/out" ||
	{ cat "$T/out" >&2; fail "a missing file without --size must fail clearly"; }
[ ! -e "$T/missing" ] || fail "a refused file:$T/missing was left behind"
"$NBD_SHIM" --profile zeroos --size 1M --store redis:127.0.0.1:1 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q 'cannot connect to 127.0.0.1:1' "$T/out" ||
	{ cat "$T/out" >&2; fail "an unreachable redis must fail clearly"; }

# ready line, pid file, clean exit on each signal; --listen unix:PATH and
# its alias --socket PATH (tcmu-shim's spelling), -v and --verbose
for sig in TERM INT; do
	sock=$T/$sig.sock
	if [ $sig = TERM ]; then
		where=(--listen "unix:$sock" -v)
	else
		where=(--socket "$sock" --verbose)
	fi
	"$NBD_SHIM" --profile standard --size 1M "${where[@]}" \
		--pidfile "$T/pid" 2>"$T/$sig.err" &
	pid=$!
	wait_socket "$sock"
	for i in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.05; done
	[ "$(cat "$T/pid")" = "$pid" ] || fail "pid file does not hold $pid"
	grep -q "^nbd-shim: listening on unix:$sock" "$T/$sig.err" ||
		fail "no ready line: $(cat "$T/$sig.err")"
	kill -$sig $pid
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "exit $rc after SIG$sig, expected 0"
	[ ! -e "$sock" ] || fail "socket left behind after SIG$sig"
	[ ! -e "$T/pid" ] || fail "pid file left behind after SIG$sig"
done

# TCP port 0: the ready line gives the real port
"$NBD_SHIM" --profile standard --size 1M --listen tcp:127.0.0.1:0 2>"$T/tcp.err" &
pid=$!
for i in $(seq 100); do grep -q listening "$T/tcp.err" && break; sleep 0.05; done
port=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' "$T/tcp.err")
[ -n "$port" ] && [ "$port" != 0 ] || fail "no port in: $(cat "$T/tcp.err")"
wait_port "$port"
kill $pid
wait $pid || fail "TCP server did not exit 0"
echo "cli: ok"
