# Shared helpers for the shell tests. Source it:  . "$TORUS_SRC/tests/lib.sh"
#
# Every test gets a private temporary directory ($T) that is removed on exit,
# together with every server it started through start_bg. Tests skip with
# exit 77 and a reason when a tool they need is missing.

set -u

: "${TORUS_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${TORUS_BUILD:=$TORUS_SRC/build}"
# Absolute, as everything below moves into $T.
TORUS_SRC=$(realpath -- "$TORUS_SRC")
TORUS_BUILD=$(realpath -m -- "$TORUS_BUILD")
ENGINE="$TORUS_BUILD/engines/libtorus.so"
NBD_SHIM="$TORUS_BUILD/shims/nbd/nbd-shim"
TCMU_SHIM="$TORUS_BUILD/shims/tcmu/tcmu-shim"
FIO=${FIO:-fio}

# Meson runs a test in the build directory and passes paths relative to it
# (a library, a helper program). Below, lib.sh moves into $T, so the test's
# arguments and where it started are kept here, before anything changes
# directory: read a path argument with arg_path, never "$1".
TEST_ARGS=("$@")
TEST_CWD=$PWD

T=$(mktemp -d /tmp/torus-test.XXXXXX)
_bg_pids=()
# fio writes verify state files into its working directory: keep them here.
cd "$T" || exit 1

# san_reports: print every sanitizer report written so far; false if none.
san_reports() {
	local f found=1
	for f in "$T"/san/*; do
		[ -s "$f" ] || continue
		echo "=== sanitizer report ${f##*/} ===" >&2
		cat "$f" >&2
		found=0
	done
	return $found
}

cleanup() {
	local pid
	for pid in "${_bg_pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${_bg_pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ "${TORUS_SANITIZE:-0}" = 1 ] && san_reports; then
		echo "FAIL: the sanitizers reported errors (above)" >&2
		rm -rf "$T"
		exit 1
	fi
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# arg_path VAR N WHAT: set VAR to the test's Nth argument, a path that
# must exist (WHAT names it in the failure). A missing path fails the test:
# the check that needs it would otherwise not run.
arg_path() {
	local -n _out=$1
	local n=$2 what=$3 v=${TEST_ARGS[$(($2 - 1))]:-}
	[ -n "$v" ] ||
		fail "argument $n ($what) missing: run the test through meson (meson test -C build NAME), which passes it"
	[ "${v:0:1}" = / ] || v=$TEST_CWD/$v
	[ -e "$v" ] || fail "argument $n ($what): '$v' does not exist"
	_out=$(realpath -- "$v")
}

require() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			skip "$tool is not installed (scripts/deps.sh installs it)"
	done
}

# Sanitized builds (meson setup build-san -Db_sanitize=address,undefined;
# its test environment sets TORUS_SANITIZE=1 and TORUS_ASAN_RUNTIME, the ASan
# runtime the compiler links against). Our own programs carry their runtime.
# The engine is a module that the uninstrumented Debian fio loads, and ASan
# must be the first library of the process: fio runs with that runtime in
# LD_PRELOAD, through a wrapper that $FIO and `fio` on PATH both name. Only
# fio gets it: python3 and the other helpers never do, and nbdkit, which the
# engine starts from inside fio for its embedded default, is reached through
# a second wrapper that drops it again. (ld.so --preload would not leak into
# children, but then ASan names every fio frame after ld.so, wrongly.)
# Every sanitizer report goes to a file in $T/san; cleanup prints them into
# the test log and fails the test, also where a report would not show in an
# exit status (a server in the background, a fio run meant to fail). fio's own
# leaks are not ours: leak checking is off in fio, on in our programs.
if [ "${TORUS_SANITIZE:-0}" = 1 ]; then
	mkdir -p "$T/san" "$T/san-bin"
	export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:print_summary=1:log_path=$T/san/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="abort_on_error=1:halt_on_error=1:print_stacktrace=1:print_summary=1:log_path=$T/san/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
	_san_fio=$(command -v "${FIO:-fio}") || skip "fio is not installed (scripts/deps.sh installs it)"
	_san_rt=$(readlink -f "${TORUS_ASAN_RUNTIME:-$(${CC:-cc} -print-file-name=libasan.so)}")
	[ -f "$_san_rt" ] || fail "TORUS_SANITIZE=1 but no ASan runtime at '$_san_rt'"
	printf '#!/bin/sh\nexport LD_PRELOAD=%s ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"\nexec %s "$@"\n' \
		"$_san_rt" "$_san_fio" >"$T/san-bin/fio"
	if _san_nbdkit=$(command -v nbdkit); then
		printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$_san_nbdkit" >"$T/san-bin/nbdkit"
	fi
	chmod +x "$T"/san-bin/*
	FIO=$T/san-bin/fio
	PATH=$T/san-bin:$PATH
fi

# start_bg CMD...: run a server in the background, remembered for cleanup.
start_bg() {
	"$@" &
	_bg_pids+=($!)
}

# forget_bg PID: a server start_bg started has been reaped (killed and
# waited for); cleanup must not signal its pid again, which may belong to
# another process by then.
forget_bg() {
	local i
	for i in "${!_bg_pids[@]}"; do
		[ "${_bg_pids[$i]}" = "$1" ] && unset '_bg_pids[i]'
	done
	_bg_pids=("${_bg_pids[@]}")
}

# wait_pidfile PATH PID WHAT: wait up to 10 s for a server's pid file,
# failing as soon as the server (PID) has exited.
wait_pidfile() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "$3 exited before it was ready"
		sleep 0.05
	done
	fail "$3 not ready within 10 s (no pid file $1)"
}

# wait_gone PID SECONDS MESSAGE: wait up to SECONDS for the background
# process PID to end by itself; if it does not, kill it and fail with
# MESSAGE. Sets $gone_rc to its exit status.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1"
		fail "$3"
	fi
	gone_rc=0
	wait "$1" || gone_rc=$?
}

# allocated FILE OFFSET LENGTH: how many bytes of that range of FILE hold
# data (the rest are holes).
allocated() {
	python3 "$TORUS_SRC/tests/integration/allocated.py" "$@"
}

# expect_trimmed WHO FILE OFFSET LENGTH: the trims of that range reached
# WHO, which punched a hole there: nothing allocated, and zeroes.
expect_trimmed() {
	local who=$1 img=$2 off=$3 len=$4 got
	got=$(allocated "$img" "$off" "$len")
	[ "$got" = 0 ] ||
		fail "trims did not reach $who: $got bytes of the $len trimmed at $off still allocated in $img"
	cmp -i "$off:0" -n "$len" "$img" /dev/zero >/dev/null ||
		fail "the $len trimmed at $off in $img are not zeroes"
}

# Servers, ports and waiting are scripts/servers.py's (shared with the
# scripts): one way to start each server.
_servers() {
	python3 "$TORUS_SRC/scripts/servers.py" "$@"
}

# _servers_wait KIND TARGET [PID WHAT]: wait up to 10 s for the Unix socket
# TARGET (KIND socket) or for 127.0.0.1:TARGET to listen (KIND port); with
# PID, fail as soon as that server has exited, naming WHAT and its status.
_servers_wait() {
	local kind=$1 target=$2 pid=${3:-} what=${4:-} msg rc=0
	msg=$(_servers "wait-$kind" "$target" 10 ${pid:+--pid "$pid" --what "$what"} 2>&1) ||
		rc=$?
	[ $rc = 0 ] && return 0
	# 3: the server had gone; its exit status is ours to collect
	if [ $rc = 3 ]; then
		rc=0
		wait "$pid" || rc=$?
		msg="$msg (exit status $rc)"
	fi
	fail "$msg"
}

# wait_socket PATH: wait up to 10 s for a Unix socket to appear.
wait_socket() {
	_servers_wait socket "$1"
}

# wait_port PORT: wait up to 10 s for a TCP port on 127.0.0.1 to listen.
wait_port() {
	_servers_wait port "$1"
}

# free_port: print a TCP port on loopback that nothing listens on.
free_port() {
	_servers free-port
}

# start_nbdkit SOCKET PLUGIN ARGS...: nbdkit on a private Unix socket.
# start_nbd_server IMAGE: the official nbd-server (its defaults: no trim,
# no FUA) exporting IMAGE (16 MiB, made here) as "d" on 127.0.0.1:$nbd_port.
start_nbd_server() {
	local started
	require nbd-server
	truncate -s 16M "$1"
	started=$(_servers nbd-server "$1" "$T" --export d --server-defaults) ||
		fail "nbd-server did not start"
	nbd_port=${started% *}
	_bg_pids+=("${started#* }")
}

start_nbdkit() {
	local sock=$1
	shift
	require nbdkit
	# servers.py execs nbdkit: the background pid is nbdkit's
	start_bg python3 "$TORUS_SRC/scripts/servers.py" exec nbdkit "$sock" "$@"
	_servers_wait socket "$sock" "${_bg_pids[-1]}" "nbdkit $*"
}

# start_tcmu_shim SOCKET ARGS...: the TCMU handler host on a private Unix
# socket (ARGS: --store, --size and the like).
start_tcmu_shim() {
	local sock=$1
	shift
	[ -x "$TCMU_SHIM" ] || fail "no handler host at $TCMU_SHIM: build the tree (scripts/build.sh)"
	start_bg python3 "$TORUS_SRC/scripts/servers.py" exec tcmu-shim "$sock" "$TCMU_SHIM" "$@"
	_servers_wait socket "$sock" "${_bg_pids[-1]}" "tcmu-shim $*"
}

# run_fio ARGS...: fio with the engine loaded; engine options may follow.
# Output goes to $T/fio.out; the exit code is fio's.
run_fio() {
	"$FIO" --ioengine="external:$ENGINE" "$@" >"$T/fio.out" 2>&1
}

# expect_fio_ok ARGS...: run_fio and fail the test unless fio succeeds
# with err=0 in its summary.
expect_fio_ok() {
	if ! run_fio "$@"; then
		cat "$T/fio.out" >&2
		fail "fio exited non-zero: fio $*"
	fi
	if grep -q 'err=[ ]*[1-9]' "$T/fio.out"; then
		cat "$T/fio.out" >&2
		fail "fio reported an I/O error: fio $*"
	fi
}

# expect_fio_error 'MESSAGE' ARGS...: run_fio, expect failure and MESSAGE.
expect_fio_error() {
	local msg=$1
	shift
	if run_fio "$@"; then
		cat "$T/fio.out" >&2
		fail "fio succeeded but should have failed with: $msg"
	fi
	if ! grep -qF -- "$msg" "$T/fio.out"; then
		echo "--- expected: $msg" >&2
		echo "--- actual fio output:" >&2
		cat "$T/fio.out" >&2
		fail "error message not found"
	fi
}
