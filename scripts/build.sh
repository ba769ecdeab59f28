#!/bin/bash
# Install what is missing, fetch and configure the matching fio source, and
# build everything. Leaves ./libtorus.so (a link to build/engines/libtorus.so)
# so that `fio --ioengine=external:./libtorus.so ...` works from the top.
#
#   scripts/build.sh                  build against the installed fio
#   scripts/build.sh --for run        the engine alone, with only what that
#                                     needs installed (scripts/run.sh)
#   FIO_SRC=/path/to/fio scripts/build.sh   against your own configured tree
#
# --for run sets up a new build/ with -Dshims=false -Dtests=false; a build/
# that exists keeps its options (scripts/test.sh turns shims and tests back
# on).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

mode="test"
case "${1:-}" in
--for)
	case ${2:-} in
	run|test) mode=$2 ;;
	*) echo "build: --for takes run or test, not '${2:-}'" >&2; exit 2 ;;
	esac
	;;
"") ;;
*) echo "usage: $0 [--for run|test]" >&2; exit 2 ;;
esac

scripts/deps.sh --for "$mode"
if [ -n "${FIO_SRC:-}" ]; then
	fio_src=$FIO_SRC
else
	scripts/fio-source.sh "$top/.deps/fio"
	fio_src=$top/.deps/fio
fi
# The tcmu-runner plugin host (bridges/runner, built with the shims) is
# compiled against the installed tcmu-runner's headers, from its Debian
# source package.
options=()
if [ "$mode" = test ]; then
	scripts/tcmu-runner-source.sh "$top/.deps/tcmu-runner"
	options=(-Dshims=true -Dtests=true)
elif [ ! -f build/build.ninja ]; then
	options=(-Dshims=false -Dtests=false)
fi

# meson's and ninja's output goes to a log, shown (its end) when a step fails.
log=$(mktemp "${TMPDIR:-/tmp}/torus-build.XXXXXX.log")

# failed WHAT: say why the build stopped and what to try, then exit 1.
failed() {
	local version=unknown
	[ -f "$fio_src/FIO-VERSION-FILE" ] &&
		version=$(sed -n 's/^FIO_VERSION = //p' "$fio_src/FIO-VERSION-FILE")
	{
		if grep -q '^FAILED: ' "$log"; then
			echo "build: $1 failed; what failed first:"
			sed -n '/^FAILED: /,$p' "$log" | head -n 60 | sed 's/^/  /'
		else
			echo "build: $1 failed; the end of its output:"
			tail -n 40 "$log" | sed 's/^/  /'
		fi
		echo "build: the whole output is in $log"
		echo "build: the engine is compiled against the fio source tree $fio_src (${version:-unknown})."
		echo "build: it must be a configured fio tree (./configure run: config-host.h and FIO-VERSION-FILE"
		echo "build: present) of a supported fio, 3.33 (Debian 12) to 3.42, and the tree of the fio that"
		echo "build: will load the engine. Then:"
		if [ -n "${FIO_SRC:-}" ]; then
			echo "build:   against another tree:        FIO_SRC=/path/to/configured/fio scripts/build.sh"
			echo "build:   against the installed fio:   unset FIO_SRC; rm -rf build && scripts/build.sh"
		else
			echo "build:   refetch the installed fio's source: rm -rf .deps/fio build && scripts/build.sh"
			echo "build:   against your own tree:          FIO_SRC=/path/to/configured/fio scripts/build.sh"
		fi
		echo "build:   a stale build directory:     rm -rf build && scripts/build.sh"
	} >&2
	exit 1
}

if [ ! -f build/build.ninja ]; then
	meson setup build -Dfio_src="$fio_src" "${options[@]}" >>"$log" 2>&1 ||
		failed "meson setup build"
else
	meson configure build -Dfio_src="$fio_src" "${options[@]}" >>"$log" 2>&1 ||
		failed "meson configure build"
fi
ninja -C build >>"$log" 2>&1 || failed "ninja -C build"
# fio and the tree must agree on struct layouts before anything runs (the
# test engine-fio-layout, run here without meson: --for run builds no tests).
if [ -z "${FIO_SRC:-}" ] &&
   ! TORUS_SRC=$top TORUS_BUILD=$top/build tests/integration/test-fio-layout.sh >>"$log" 2>&1; then
	failed "the layout check (fio against $fio_src/config-host.h)"
fi
rm -f "$log"
ln -sfn build/engines/libtorus.so libtorus.so
echo "build: ./libtorus.so -> build/engines/libtorus.so (fio source: $fio_src)"
