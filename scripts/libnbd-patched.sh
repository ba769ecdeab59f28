#!/bin/bash
# Build libnbd with the patch in upstream/libnbd/ (LIBNBD_STRICT_BLOCK_SIZE:
# improper NBD_INFO_BLOCK_SIZE fails the handshake), for running a program
# over libnbd (fio's nbd engine, the hostile table) with LD_LIBRARY_PATH.
# Nothing is installed: the system's libnbd stays as it is.
#
#   scripts/libnbd-patched.sh [--src DIR] [--unpatched] [DEST]
#
#   --src DIR     this libnbd source tree instead of the installed libnbd's
#                 Debian source (apt-get source libnbd=<installed version>)
#   --unpatched   the same tree without the patch
#   DEST          the build directory, outside the repository; default
#                 ${TMPDIR:-/tmp}/torus-libnbd-patched[-unpatched]
#
# Steps: fetch the source (scripts/apt-source.sh: a private apt
# configuration), copy it to DEST, commit it to a fresh git repository, `git
# am` upstream/libnbd/<major.minor>/*.patch when that directory exists (a
# backport) or else upstream/libnbd/*.patch, autoreconf (the patch changes
# generator/API.ml and tests/Makefile.am: needs autoconf, automake, libtool,
# ocaml-nox, ocaml-findlib), configure without the language bindings, make,
# and run the patch's test (tests/errors-server-block-size). Prints the
# directory of the built libnbd.so.0 for LD_LIBRARY_PATH. Idempotent: when
# DEST/.torus-stamp names the same source and series, nothing is redone.
#
# A build takes minutes, so this is not run by CI.
#
# Environment: LIBNBD_PATCHED_JOBS (make -j, default 2).

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
series_dir=$repo/upstream/libnbd
patched=1
src=
dest=

say() {
	echo "libnbd-patched: $*"
}

die() {
	echo "libnbd-patched: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found: apt-get install $2"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--src)
		[[ $# -ge 2 ]] || die "--src needs a libnbd source tree"
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

need git git
need autoreconf "autoconf automake libtool"
need ocamlfind "ocaml-nox ocaml-findlib"
need make make
need cc build-essential

suffix=
[[ $patched -eq 1 ]] || suffix=-unpatched
dest=${dest:-${TMPDIR:-/tmp}/torus-libnbd-patched$suffix}
case $dest in
"$repo"|"$repo"/*) die "DEST $dest is inside the repository: give a directory outside it" ;;
esac

# apt_source_fetch: `apt-get source` through a private apt configuration.
. "$repo/scripts/apt-source.sh"

scratch=
cleanup() {
	[[ -z $scratch ]] || rm -rf "$scratch"
}
trap cleanup EXIT

if [[ -n $src ]]; then
	src=$(cd "$src" && pwd) || die "--src $src: no such directory"
	[[ -f $src/configure.ac && -d $src/generator ]] ||
		die "$src is not a libnbd source tree (no configure.ac, generator/)"
	version=$(sed -n 's/^AC_INIT(\[libnbd\],\[\{0,1\}\([0-9.]*\).*/\1/p' "$src/configure.ac")
else
	deb_version=$(dpkg-query -W -f='${Version}' libnbd0 2>/dev/null) ||
		die "libnbd0 is not installed: apt-get install libnbd-dev, or give --src DIR"
	version=${deb_version%-*}
	scratch=$(mktemp -d)
	apt_source_fetch libnbd "$deb_version" "$scratch" \
		"libnbd-patched: fetching libnbd $deb_version's source"
	# shellcheck disable=SC2154 # set by apt_source_fetch
	src=$apt_source_dir
	[[ -n $src ]] || die "apt-get source libnbd=$deb_version unpacked nothing"
fi
[[ -n $version ]] || die "cannot tell the libnbd version of $src"

series=()
if [[ $patched -eq 1 ]]; then
	if [[ -d $series_dir/${version%.*} ]]; then
		series=("$series_dir/${version%.*}"/*.patch)
	else
		series=("$series_dir"/*.patch)
	fi
fi

stamp="libnbd $version patched=$patched $(cat "${series[@]}" /dev/null | sha256sum | cut -d' ' -f1)"
if [[ -f $dest/.torus-stamp && $(cat "$dest/.torus-stamp") == "$stamp" &&
      -f $dest/lib/.libs/libnbd.so.0 ]]; then
	say "up to date: $dest"
	say "LD_LIBRARY_PATH=$dest/lib/.libs"
	exit 0
fi

rm -rf "$dest"
mkdir -p "$dest"
cp -a "$src"/. "$dest"/
rm -rf "$dest/.pc" "$dest/debian"
cd "$dest"
git init -q
git add -A -f
git -c user.name=torus -c user.email=torus@localhost commit -q -m "libnbd $version"
for p in "${series[@]}"; do
	say "git am $(basename "$p")"
	git -c user.name=torus -c user.email=torus@localhost am -q "$p" ||
		die "$(basename "$p") does not apply to libnbd $version"
done

jobs=${LIBNBD_PATCHED_JOBS:-2}
say "autoreconf, configure and make in $dest (minutes)"
autoreconf -fi >autoreconf.log 2>&1 || { tail -n 20 autoreconf.log >&2; die "autoreconf failed (above)"; }
./configure --disable-ocaml --disable-python --disable-golang --disable-rust \
	--disable-fuse --disable-ublk --without-gnutls >configure.log 2>&1 ||
	{ tail -n 20 configure.log >&2; die "configure failed (above)"; }
make -j"$jobs" >make.log 2>&1 || { tail -n 30 make.log >&2; die "make failed (above)"; }
if [[ $patched -eq 1 ]]; then
	make -C tests check TESTS=errors-server-block-size >check.log 2>&1 ||
		{ tail -n 30 tests/errors-server-block-size.log >&2; die "the patch's test failed (above)"; }
	say "tests/errors-server-block-size: PASS"
fi
echo "$stamp" >.torus-stamp
say "libnbd $version$([[ $patched -eq 1 ]] && echo " with ${#series[@]} patch(es)") in $dest"
say "LD_LIBRARY_PATH=$dest/lib/.libs"
