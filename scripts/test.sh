#!/bin/bash
# The whole test suite, from nothing: install, build, then four passes:
#   1. normal     meson test in build/ (unit, integration, shims, jobs, ...;
#                 shim-valgrind runs nbd-shim under valgrind here)
#   2. sanitized  the same suite again in build-san/: engine, shim and test
#                 programs built with ASan + UBSan (-fno-sanitize-recover=all),
#                 fio run with the ASan runtime preloaded (tests/lib.sh); any
#                 sanitizer report fails its test. Tests that run no compiled
#                 code of ours (the scripts' unit tests, docs, man parsers,
#                 the mutations, guest boots of the kernel alone) are not
#                 registered there: the normal pass runs them (the list:
#                 docs/testing.md)
#   3. fuzz       scripts/fuzz.sh --seconds 25, when that script exists
#   4. newer fio  scripts/fio-upstream.sh builds the fio in Debian unstable
#                 (cached in .deps/fio-upstream), the engine is built against
#                 it in build-fio-new/, and the integration suite runs under
#                 that fio ($FIO and `fio` on PATH); when the fio source
#                 cannot be fetched the pass says SKIP
# With the normal pass, the sanitized and newer-fio trees build beside it on
# the CPU its tests leave idle (nice 19, in an autogroup of their own), and
# those passes wait for their build before they run.
# Every pass runs even when an earlier one failed; the last lines name every
# skipped test with its reason and the passes that failed, and the exit
# status is 1 if any did. With CI=true a skip fails the run too (a skipped
# test, or a skipped pass), unless tests/skips-allowed lists it with its
# reason: CI has every tool the README's command installs, so a skip there
# means something broke (scripts/skips.py).
#
#   scripts/test.sh                   all passes (what CI runs)
#   scripts/test.sh --quick           the normal suite only
#   scripts/test.sh --sanitized       the sanitized suite only (leaves build/ alone)
#   scripts/test.sh --newer-fio       the newer-fio pass only (leaves build/ alone)
#   scripts/test.sh --suite unit      extra arguments go to both meson test runs
#   scripts/test.sh --help            this text
#
# SAN_BUILD=DIR puts the sanitized build elsewhere (default build-san);
# NEWER_FIO_BUILD=DIR the newer-fio build (default build-fio-new),
# NEWER_FIO_SRC=DIR that fio's tree (default .deps/fio-upstream).
set -euo pipefail
# -h, --help: the comment above, before anything is installed or built
case "${1:-}" in
-h|--help)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 0
	;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

normal=1 sanitized=1 fuzz=1 newer=1
case "${1:-}" in
--quick) sanitized=0 fuzz=0 newer=0; shift ;;
--sanitized) normal=0 fuzz=0 newer=0; shift ;;
--newer-fio) normal=0 sanitized=0 fuzz=0; shift ;;
esac
san_build=${SAN_BUILD:-build-san}
newer_build=${NEWER_FIO_BUILD:-build-fio-new}
newer_src=${NEWER_FIO_SRC:-$top/.deps/fio-upstream}
# pass, meson_suite, passes_summary: scripts/passes.sh
. scripts/passes.sh

# san_tree: configure and build the sanitized tree in $san_build.
san_tree() {
	local fio_src=${FIO_SRC:-$top/.deps/fio}

	if [ ! -f "$san_build/build.ninja" ]; then
		# b_lundef=false: the engine is a module with fio's symbols
		# undefined, as in the normal build
		meson setup "$san_build" -Dfio_src="$fio_src" \
			-Db_sanitize=address,undefined -Db_lundef=false \
			-Dc_args='-fno-sanitize-recover=all -fno-omit-frame-pointer' >/dev/null ||
			return 1
	else
		meson configure "$san_build" -Dfio_src="$fio_src" >/dev/null || return 1
	fi
	ninja -C "$san_build" >/dev/null
}

# lowest CMD...: CMD in a session, so an autogroup, of its own at nice 19,
# and at nice 19 within it: it gets the CPU the tests leave idle and
# little else (niced within the tests' autogroup it would still get half
# a CPU against a test's setsid'd process, such as scripts/guest's qemu).
lowest() {
	setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' \
		lowest "$@"
}

# With the normal pass, the sanitized tree builds beside it (lowest), and
# this waits for it; a failure there is met again, and shown, below.
sanitized_suite() {
	[ -z "${san_bg:-}" ] || wait "$san_bg" || true
	san_tree || return 1
	meson_suite sanitized "$san_build" "$@"
}

# The engine against the newer fio that scripts/fio-upstream.sh builds, and
# the integration suite run by that fio. Exits 77 (skip) when that fio's
# source cannot be fetched and no earlier build of it is cached.
# --build-only: stop once built (the build beside the normal pass, waited
# for here; the steps then find their work done).
newer_fio_suite() {
	local rc=0 log=${newer_build%/}.log

	[ -z "${newer_bg:-}" ] || wait "$newer_bg" || true
	scripts/fio-upstream.sh "$newer_src" || rc=$?
	if [ $rc = 77 ]; then
		echo "SKIP: newer fio: Debian unstable's fio source could not be fetched (above), so the engine was not built or tested against a newer fio"
		return 77
	fi
	[ $rc = 0 ] || return 1
	# the shims too: engine-data-safety serves a file through nbd-shim
	if { if [ ! -f "$newer_build/build.ninja" ]; then
		meson setup "$newer_build" -Dfio_src="$newer_src"
	     else
		meson configure "$newer_build" -Dfio_src="$newer_src" -Dshims=true
	     fi && ninja -C "$newer_build"; } >"$log" 2>&1; then
		rm -f "$log"
	else
		tail -n 40 "$log" >&2
		echo "test.sh: building the engine against $("$newer_src/fio" --version) in $newer_build failed (above; whole log: $log)" >&2
		return 1
	fi
	[ "${1:-}" != --build-only ] || return 0
	echo "test.sh: integration suite under $("$newer_src/fio" --version) ($newer_src/fio)"
	PATH=$newer_src/bin:$PATH FIO=$newer_src/fio \
		meson_suite newer-fio "$newer_build" --suite integration
}

if [ $normal = 1 ]; then
	scripts/build.sh
	# The sanitized and newer-fio trees build beside the normal pass, on
	# the CPU its tests leave idle (lowest); their passes wait for them.
	if [ $sanitized = 1 ]; then
		lowest env top="$top" san_build="$san_build" \
			bash -c "$(declare -f san_tree); san_tree" >/dev/null 2>&1 &
		san_bg=$!
	fi
	if [ $newer = 1 ]; then
		lowest env newer_build="$newer_build" newer_src="$newer_src" \
			bash -c "$(declare -f newer_fio_suite); newer_fio_suite --build-only" \
			>/dev/null 2>&1 &
		newer_bg=$!
	fi
	pass normal "normal suite (build/)" meson_suite normal build "$@"
else
	scripts/deps.sh
	[ $sanitized = 0 ] || [ -n "${FIO_SRC:-}" ] || scripts/fio-source.sh "$top/.deps/fio"
fi
[ $sanitized = 0 ] || pass sanitized "sanitized suite ($san_build/, ASan+UBSan)" sanitized_suite "$@"
if [ $fuzz = 1 ] && [ -f scripts/fuzz.sh ]; then
	pass fuzz "fuzz (scripts/fuzz.sh --seconds 25)" bash scripts/fuzz.sh --seconds 25
fi
[ $newer = 0 ] || pass newer-fio "newer fio ($newer_build/, integration suite under Debian unstable's fio)" newer_fio_suite

passes_summary
