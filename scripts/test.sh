#!/bin/bash
# The whole test suite, from nothing: install, build, then three passes:
#   1. normal     meson test in build/ (unit, integration, shims, jobs, ...;
#                 shim-valgrind runs nbd-shim under valgrind here)
#   2. sanitized  the same suite again in build-san/: engine, shim and test
#                 programs built with ASan + UBSan (-fno-sanitize-recover=all),
#                 fio run with the ASan runtime preloaded (tests/lib.sh); any
#                 sanitizer report fails its test
#   3. fuzz       scripts/fuzz.sh --seconds 60, when that script exists
# Every pass runs even when an earlier one failed; the last lines name the
# passes that failed, and the exit status is 1 if any did.
#
#   scripts/test.sh                   all passes (what CI runs)
#   scripts/test.sh --quick           the normal suite only
#   scripts/test.sh --sanitized       the sanitized suite only (leaves build/ alone)
#   scripts/test.sh --suite unit      extra arguments go to both meson test runs
#
# SAN_BUILD=DIR puts the sanitized build elsewhere (default build-san).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

normal=1 sanitized=1 fuzz=1
case "${1:-}" in
--quick) sanitized=0 fuzz=0; shift ;;
--sanitized) normal=0 fuzz=0; shift ;;
esac
san_build=${SAN_BUILD:-build-san}
failed=()

# pass NAME CMD...: run one pass, remember it if it fails
pass() {
	local name=$1 start=$SECONDS
	shift
	echo "=== test.sh: $name ==="
	if "$@"; then
		echo "=== test.sh: $name passed ($((SECONDS - start)) s) ==="
	else
		echo "=== test.sh: $name FAILED ($((SECONDS - start)) s) ===" >&2
		failed+=("$name")
	fi
}

sanitized_suite() {
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
	ninja -C "$san_build" >/dev/null || return 1
	meson test -C "$san_build" --print-errorlogs "$@"
}

if [ $normal = 1 ]; then
	scripts/build.sh
	pass "normal suite (build/)" meson test -C build --print-errorlogs "$@"
else
	scripts/deps.sh
	[ -n "${FIO_SRC:-}" ] || scripts/fio-source.sh "$top/.deps/fio"
fi
[ $sanitized = 0 ] || pass "sanitized suite ($san_build/, ASan+UBSan)" sanitized_suite "$@"
if [ $fuzz = 1 ] && [ -f scripts/fuzz.sh ]; then
	pass "fuzz (scripts/fuzz.sh --seconds 60)" bash scripts/fuzz.sh --seconds 60
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "test.sh: FAILED: ${failed[*]}" >&2
	exit 1
fi
echo "test.sh: all passes passed"
