#!/bin/bash
# Fetch the source of the installed tcmu-runner, for its headers only.
#
#   scripts/tcmu-runner-source.sh [DEST]   (DEST defaults to <repo>/.deps/tcmu-runner)
#
# The handler host in bridges/runner loads Debian's handler plugins
# (/usr/lib/<triplet>/tcmu-runner/handler_*.so) unmodified. Their ABI (struct
# tcmur_handler, struct tcmur_cmd, the functions they import) is defined by
# tcmu-runner's headers, and Debian ships no -dev package for it, so the
# build includes the headers of the source package of exactly the installed
# version. Nothing from this tree is compiled or copied into the project.
#
# Same technique as scripts/fio-source.sh (both use scripts/apt-source.sh):
# `apt-get source` through a private apt configuration (deb-src entries
# derived from this machine's Debian sources; the system's apt configuration
# is not touched). Debian's patches
# are applied (dpkg-source -x does it), since the binary was built with them.
# Idempotent: when DEST/.torus-stamp names the installed version, it only
# checks that the headers are there.

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/.deps/tcmu-runner}
stamp_name=.torus-stamp
# What bridges/runner includes.
headers=(libtcmu_common.h libtcmu.h libtcmu_log.h tcmu-runner.h tcmur_device.h
	 tcmur_cmd_handler.h tcmur_aio.h scsi_defs.h alua.h scsi.h
	 ccan/ccan/list/list.h)

die() {
	echo "tcmu-runner-source: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found: run scripts/deps.sh (installs $2)"
}

# apt_source_fetch: `apt-get source` through a private apt configuration.
. "$repo/scripts/apt-source.sh"

need dpkg-query dpkg
need apt-get apt
need dpkg-source dpkg-dev

deb_version=$(dpkg-query -W -f='${Version}' tcmu-runner 2>/dev/null) ||
	die "the tcmu-runner package is not installed: run scripts/deps.sh"
# Debian builds tcmu-runner from the source package "tcmu".
src_pkg=$(dpkg-query -W -f='${source:Package}' tcmu-runner)

check_headers() {
	local h missing=()
	for h in "${headers[@]}"; do
		[[ -f $dest/$h ]] || missing+=("$h")
	done
	if [[ ${#missing[@]} -gt 0 ]]; then
		echo "tcmu-runner-source: $dest lacks ${missing[*]}: rm -rf $dest && $0" >&2
		return 1
	fi
}

# --- up to date? --------------------------------------------------------------

stamp_want="tcmu-runner $deb_version"
if [[ -f $dest/$stamp_name && $(head -n1 "$dest/$stamp_name") == "$stamp_want" ]]; then
	check_headers || exit 1
	echo "tcmu-runner-source: $dest holds $stamp_want"
	exit 0
fi

# --- fetch ----------------------------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/torus-tcmu-runner-src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
apt_source_fetch "$src_pkg" "$deb_version" "$tmp" "tcmu-runner-source: fetching the source of tcmu-runner $deb_version"
srcdir=$apt_source_dir
[[ -n $srcdir && -f $srcdir/tcmu-runner.h ]] ||
	die "apt-get source $src_pkg produced no tcmu-runner tree in $tmp/src"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$srcdir" "$dest"
check_headers || die "the source of tcmu-runner $deb_version lacks headers the handler host includes (above)"
echo "$stamp_want" >"$dest/$stamp_name"
echo "tcmu-runner-source: $dest holds $stamp_want"
