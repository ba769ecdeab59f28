#!/bin/bash
# Build fio with the patch series in upstream/fio/ (fixes to fio's built-in
# nbd engine), for tests/hostile/fio-nbd-engine.py --fio DEST/fio; or, with
# --engine-only, just its nbd engine, for --engine-so.
#
#   scripts/fio-patched.sh [--base debian|upstream] [--src DIR] [--unpatched]
#                          [--engine-only | --syncs --unittests] [DEST]
#
#   --base debian    (default) Debian 12's fio source, as scripts/fio-source.sh
#                    fetches it into .deps/fio
#   --base upstream  the newer fio of the newer-fio pass, as
#                    scripts/fio-upstream.sh fetches and builds it into
#                    .deps/fio-upstream (FIO_UPSTREAM_SRC=DIR: another tree)
#   --src DIR        this configured fio tree instead of --base's (the one a
#                    meson build with -Dfio_src=DIR compiles the engine against)
#   --unpatched      the same tree without the series: the "before" binary
#   --engine-only    build engines/nbd.c alone, in seconds, as fio builds its
#                    engines with --dynamic-libengines: DEST/engines/fio-nbd.so,
#                    for the unpatched fio binary of that very tree
#                    (--ioengine=DEST/engines/fio-nbd.so, by path; the tree's
#                    config-host.h is kept, so the engine sees fio's structs
#                    as that binary lays them out). Only the shared series
#                    (upstream/fio/*.patch) is applied, and only its
#                    engines/nbd.c is built: its fixes to fio's core
#                    (workqueue.c, options.c) and upstream/fio/<version>/
#                    are carried by the full build alone.
#   --syncs          then count the syncs DEST/fio issues for a 4 MiB 4 KiB
#                    randwrite with fsync=8 at iodepth 16 through the null,
#                    libaio and io_uring engines, and fail unless each issues
#                    one per 8 writes (within 10%)
#   --unittests      then build and run fio's unit tests (unittests/unittest,
#                    CUnit: libcunit1-dev, found when DEST is configured)
#   DEST             the build directory, outside the repository; default
#                    ${TMPDIR:-/tmp}/torus-fio-patched-<base>[-unpatched], or
#                    torus-fio-nbd-so-<base>[-unpatched] with --engine-only
#
# Steps: copy the source tree to DEST, commit it to a fresh git repository
# there (fio's .gitignore keeps build products out; they are then removed),
# `git am` the series (upstream/fio/*.patch, then upstream/fio/<version>/*.patch
# for fixes only that version needs), configure as Debian does plus fio CI's
# --extra-cflags=-Werror, and `make fio`. DEST/fio is the binary. Idempotent:
# when DEST/.torus-stamp names the same source and series, nothing is redone.
#
# --engine-only instead keeps the tree's configuration (config-host.*) and runs
# fio's own rule for a dynamic engine: make engines/fio-nbd.so with
# CONFIG_DYNAMIC_ENGINES (the ops exported as `ioengine`, -fPIC, -shared),
# the tree's CFLAGS, and -Werror.
#
# Exit status: 0 built (or up to date); 77 the base tree cannot be had here
# (the newer fio is unavailable): skip; 1 anything else (the series does not
# apply, configure finds no libnbd, a warning or error in the build).
#
# Environment: FIO_PATCHED_JOBS (make -j, default 2).

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
series_dir=$repo/upstream/fio
base=debian
patched=1
syncs=0
unittests=0
engine_only=0
src=
dest=

say() {
	echo "fio-patched: $*"
}

die() {
	echo "fio-patched: $*" >&2
	exit 1
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--base)
		[[ $# -ge 2 ]] || die "--base needs debian or upstream"
		base=$2
		shift 2
		;;
	--base=*)
		base=${1#--base=}
		shift
		;;
	--src)
		[[ $# -ge 2 ]] || die "--src needs a configured fio tree"
		src=$2
		shift 2
		;;
	--src=*)
		src=${1#--src=}
		shift
		;;
	--unpatched)
		patched=0
		shift
		;;
	--engine-only)
		engine_only=1
		shift
		;;
	--syncs)
		syncs=1
		shift
		;;
	--unittests)
		unittests=1
		shift
		;;
	-h|--help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*)
		die "unknown option $1 (--help lists them)"
		;;
	*)
		dest=$1
		shift
		;;
	esac
done

[[ $syncs -eq 0 || $engine_only -eq 0 ]] ||
	die "--syncs counts the syncs of a full build (3.33's fix is in fio's core): drop --engine-only"
[[ $unittests -eq 0 || $engine_only -eq 0 ]] ||
	die "--unittests runs fio's unit tests in a full build: drop --engine-only"

case $base in
debian)
	if [[ -n $src ]]; then
		src=$(cd "$src" && pwd) || die "--src $src: no such directory"
		[[ -f $src/FIO-VERSION-FILE ]] ||
			die "$src has no FIO-VERSION-FILE: give a configured fio tree (scripts/fio-source.sh makes one)"
	else
		src=$repo/.deps/fio
		[[ -f $src/FIO-VERSION-FILE ]] || "$repo/scripts/fio-source.sh" "$src"
	fi
	;;
upstream)
	src=${src:-${FIO_UPSTREAM_SRC:-$repo/.deps/fio-upstream}}
	if [[ ! -f $src/FIO-VERSION-FILE ]]; then
		rc=0
		"$repo/scripts/fio-upstream.sh" "$src" || rc=$?
		[[ $rc -eq 77 ]] && exit 77
		[[ $rc -eq 0 ]] || die "scripts/fio-upstream.sh failed (above)"
	fi
	;;
*)
	die "--base $base: use debian (Debian 12's fio) or upstream (the newer-fio pass's)"
	;;
esac

suffix=$base
[[ $patched -eq 1 ]] || suffix+=-unpatched
if [[ $engine_only -eq 1 ]]; then
	dest=${dest:-${TMPDIR:-/tmp}/torus-fio-nbd-so-$suffix}
	[[ -f $src/config-host.h && -f $src/config-host.mak ]] ||
		die "$src is not configured (no config-host.h): --engine-only builds against the configuration of the tree's fio binary (scripts/fio-source.sh, scripts/fio-upstream.sh)"
else
	dest=${dest:-${TMPDIR:-/tmp}/torus-fio-patched-$suffix}
fi
case $dest in
"$repo"|"$repo"/*)
	die "$dest is inside the repository: give a DEST outside it"
	;;
esac

version=$(sed -n 's/^FIO_VERSION = //p' "$src/FIO-VERSION-FILE")
[[ -n $version ]] || die "$src/FIO-VERSION-FILE names no version"

shopt -s nullglob
patches=("$series_dir"/*.patch)
[[ ${#patches[@]} -gt 0 ]] || die "no patches in $series_dir"
[[ $engine_only -eq 1 ]] || patches+=("$series_dir/${version#fio-}"/*.patch)
shopt -u nullglob
[[ $patched -eq 1 ]] || patches=()

# count_syncs ENGINE: "WRITES SYNCS" of the fsync=8 job through ENGINE.
count_syncs() {
	local file=$dest/syncs.dat
	"$dest/fio" --name=syncs --ioengine="$1" --filename="$file" --size=4m --bs=4k \
		--rw=randwrite --iodepth=16 --fsync=8 --output-format=json 2>/dev/null |
		python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
print(j["write"]["total_ios"], j["sync"]["total_ios"])'
	rm -f "$file"
}

check_syncs() {
	local engine out writes n bad=0
	for engine in null libaio io_uring; do
		if ! out=$(count_syncs "$engine") || [[ -z $out ]]; then
			say "syncs: $engine cannot run here, skipped"
			continue
		fi
		read -r writes n <<<"$out"
		say "syncs: $engine issued $n syncs for $writes writes with fsync=8"
		if (( n * 8 * 10 < writes * 9 || n * 8 * 10 > writes * 11 )); then
			echo "fio-patched: $engine's sync count $n is not one per 8 of $writes writes (within 10%)" >&2
			bad=1
		fi
	done
	return $bad
}

# run_unittests: build fio's unit tests in DEST and run them.
run_unittests() {
	grep -q '^CUnit *yes' "$dest/configure.out" ||
		die "$dest was configured without CUnit: apt-get install libcunit1-dev, rm -rf $dest, and run this again"
	say "make unittests/unittest"
	make -C "$dest" -j"${FIO_PATCHED_JOBS:-2}" unittests/unittest >"$dest/unittests.out" 2>&1 ||
		{ grep -E 'error|warning' "$dest/unittests.out" | head -n 20 >&2; die "fio's unit tests did not build (above)"; }
	say "unittests/unittest"
	(cd "$dest" && ./unittests/unittest) || die "fio's unit tests failed (above)"
}

# tree_fio: the fio binary the tree was configured for (the newer-fio pass's
# tree holds its own; Debian's is the installed one scripts/fio-source.sh
# checked the tree against).
tree_fio() {
	if [[ -x $src/fio ]]; then
		echo "$src/fio"
	elif command -v fio >/dev/null 2>&1 && [[ $(fio --version) == "$version" ]]; then
		command -v fio
	else
		echo "(no $version binary found: the tree's fio)"
	fi
}

so=$dest/engines/fio-nbd.so
series_hash=$(cat "${patches[@]}" /dev/null | sha256sum | cut -d' ' -f1)
want="$version $src series:${#patches[@]}:$series_hash"
[[ $engine_only -eq 0 ]] || want+=" engine-only"
stamp=$dest/.torus-stamp

if [[ $engine_only -eq 1 && -f $stamp && -f $so && $(cat "$stamp") == "$want" ]]; then
	say "$so is $version's nbd engine with ${#patches[@]} patches, up to date, for $(tree_fio)"
	exit 0
fi
if [[ $engine_only -eq 0 && -f $stamp && -x $dest/fio && $(cat "$stamp") == "$want" ]]; then
	say "$dest/fio is $version with ${#patches[@]} patches, up to date"
	[[ $syncs -eq 0 ]] || check_syncs || exit 1
	[[ $unittests -eq 0 ]] || run_unittests
	exit 0
fi

for tool in git make cc pkg-config; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/deps.sh"
done
pkg-config --exists libnbd || die "libnbd's development files are missing: apt-get install libnbd-dev"

say "copying $src ($version) to $dest"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -a "$src" "$dest"
cd "$dest"
rm -rf .git .pc bin .torus-stamp torus-configure.log

export GIT_AUTHOR_NAME=torus GIT_AUTHOR_EMAIL=torus@localhost
export GIT_COMMITTER_NAME=torus GIT_COMMITTER_EMAIL=torus@localhost
git init -q
git add -A
git commit -q -m "$version as fetched ($base)"
# What .gitignore kept out: objects, binaries, config-host.*.
git clean -q -fdX

for p in "${patches[@]}"; do
	git am -q "$p" || {
		git am --abort >/dev/null 2>&1 || true
		die "$(basename "$p") does not apply to $version ($src): the series needs a version for it (upstream/fio/README.md)"
	}
done
[[ $patched -eq 0 ]] || say "applied ${#patches[@]} patches: $(git log --format=%s -1)"

if [[ $engine_only -eq 1 ]]; then
	# The configuration of the tree's fio binary, which git clean removed.
	cp "$src/config-host.h" "$src/config-host.mak" .
	# fio's rule for a dynamic engine; CONFIG_DYNAMIC_ENGINES in the C
	# flags exports the ops as `ioengine`, which dlopen_ioengine() looks up.
	# LDFLAGS emptied: Debian's -Wl,-z,defs refuses a module whose fio
	# symbols the binary resolves at load.
	say "make engines/fio-nbd.so (fio's rule for a dynamic engine, the tree's CFLAGS, -Werror)"
	make CONFIG_DYNAMIC_ENGINES=y CONFIG_LIBNBD=y \
		LIBNBD_CFLAGS="$(pkg-config --cflags libnbd)" LIBNBD_LIBS="$(pkg-config --libs libnbd)" \
		EXTFLAGS="-DCONFIG_DYNAMIC_ENGINES -Werror" LDFLAGS= engines/fio-nbd.so >make.out 2>&1 ||
		{ grep -E 'error|warning' make.out | head -n 20 >&2; die "the build failed (above; make.out)"; }
	nm -D --defined-only "$so" | grep -qw ioengine ||
		die "$so exports no ioengine: fio cannot load it as an external engine"
	if [[ $patched -eq 1 ]] && ! grep -q request_timeout "$so"; then
		die "$so has no request_timeout option: the series did not take"
	fi
	echo "$want" >"$stamp"
	say "$so is $version's nbd engine with ${#patches[@]} patches, for $(tree_fio) --ioengine=$so"
	exit 0
fi

say "./configure --disable-native --enable-libnbd --extra-cflags=-Werror"
./configure --disable-native --enable-libnbd --extra-cflags=-Werror >configure.out 2>&1 ||
	{ tail -n 20 configure.out >&2; die "configure failed (above)"; }
grep -q '^NBD engine *yes' configure.out ||
	die "configure did not enable the nbd engine (configure.out): is libnbd-dev installed?"
say "make -j${FIO_PATCHED_JOBS:-2} fio"
make -j"${FIO_PATCHED_JOBS:-2}" fio >make.out 2>&1 ||
	{ grep -E 'error|warning' make.out | head -n 20 >&2; die "the build failed (above; make.out)"; }
./fio --enghelp=nbd >/dev/null 2>&1 || die "$dest/fio has no nbd engine"
if [[ $patched -eq 1 ]] && ! ./fio --enghelp=nbd | grep -q request_timeout; then
	die "$dest/fio's nbd engine has no request_timeout: the series did not take"
fi
echo "$want" >"$stamp"
say "$dest/fio is $(./fio --version) with ${#patches[@]} patches"
[[ $syncs -eq 0 ]] || check_syncs || exit 1
[[ $unittests -eq 0 ]] || run_unittests
