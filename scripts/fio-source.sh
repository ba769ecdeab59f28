#!/bin/bash
# Fetch and configure the fio source tree that libtorus.so is compiled against.
#
#   scripts/fio-source.sh [DEST]        (DEST defaults to <repo>/.deps/fio)
#
# An external engine includes fio's headers (fio.h, io_u.h, ...) whose structs
# depend on config-host.h, so it must be built against the source of exactly
# the installed fio, configured the way Debian configured its binary. This
# script:
#   1. fetches `apt-get source fio=<installed version>` through a private apt
#      configuration (scripts/apt-source.sh: deb-src entries derived from this
#      machine's Debian sources; the system's apt configuration is not
#      touched),
#   2. runs ./configure with debian/rules' options and dpkg-buildflags'
#      environment (hardening=+all, as debian/rules asks),
#   3. generates FIO-VERSION-FILE (the only build-time file the version check
#      may want; no header an engine includes is generated at build time:
#      y.tab.h and lexer.h are used by parse.c only),
#   4. verifies the result (below) and writes DEST/.torus-stamp.
# Idempotent: when the stamp names the installed version, it only re-verifies.
#
# How config-host.h is checked against Debian's binary (check_features here;
# the layout check in the build):
#   - The CONFIG_* symbols that change a struct an engine sees were found by
#     grepping every header for preprocessor conditionals: struct io_u's
#     trailing union (CONFIG_LIBAIO, CONFIG_POSIXAIO, FIO_HAVE_SGIO,
#     CONFIG_SOLARISAIO, CONFIG_RDMA), struct thread_data's tail (CONFIG_CUDA),
#     fio.h's numa includes (CONFIG_LIBNUMA), ioengines.h (CONFIG_DYNAMIC_
#     ENGINES). struct thread_options and struct fio_file have none in 3.33.
#     Everything else in config-host.h is libc/kernel detection, identical on
#     the same Debian release.
#   - The binary says which of those it was built with: `fio --enghelp` lists
#     libaio, posixaio, sg, rdma and nbd only when compiled in; `fio
#     --cmdhelp=numa_cpu_nodes` / `gpu_dev_id` show a type only with
#     CONFIG_LIBNUMA / CONFIG_CUDA; no engine directory under /usr/lib/*/fio
#     means no dynamic engines. check_features compares each with the tree.
#     Result for Debian 12's fio 3.33-3: LIBAIO, POSIXAIO, SG, RDMA, LIBNUMA,
#     LIBNBD on; CUDA, SOLARISAIO, DYNAMIC_ENGINES off; the tree agrees.
#   - engines/layout_check.c, built by meson beside the engine and run by
#     scripts/build.sh and the engine-fio-layout test, is a throw-away engine
#     loaded into the real fio (2 jobs): it checks option values it was given
#     (first, middle and last members of struct thread_options), its io_u and
#     fio_file fields, and computes sizeof(struct thread_data) as the fio
#     binary sees it (the distance between the two jobs' thread_data in
#     fio's exported `segments` array) against the compiler's sizeof.
#   - --enable-gfio needs gtk2 headers; when absent it is dropped: gfio only
#     adds the gfio program (CONFIG_GFIO is used by no header).

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/.deps/fio}
stamp_name=.torus-stamp

die() {
	echo "fio-source: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found: run scripts/deps.sh (installs $2)"
}

# apt_source_fetch: `apt-get source` through a private apt configuration.
. "$repo/scripts/apt-source.sh"

need fio fio
need dpkg-query dpkg
need apt-get apt
need dpkg-source dpkg-dev
need cc build-essential
need pkg-config pkg-config

deb_version=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) ||
	die "the fio package is not installed: run scripts/deps.sh"
upstream=${deb_version#*:}
upstream=${upstream%-*}
binary_version=$(fio --version)
[[ $binary_version == "fio-$upstream" ]] ||
	die "fio on PATH ($(command -v fio)) reports '$binary_version' but the fio package is $deb_version: remove the other fio or fix PATH"

# --- verification -----------------------------------------------------------

has_define() {
	grep -q "^#define $1\b" "$dest/config-host.h"
}

# check_features: compare the layout-changing CONFIG_* of the tree with what
# the installed binary reports.
check_features() {
	local engines bad=0 sym bin tree
	engines=$(fio --enghelp)
	engine_has() { grep -qx "[[:space:]]*$1" <<<"$engines"; }
	option_has() { fio --cmdhelp="$1" 2>/dev/null | grep -q 'type:'; }

	for pair in CONFIG_LIBAIO:libaio CONFIG_POSIXAIO:posixaio CONFIG_RDMA:rdma \
		    CONFIG_LIBNBD:nbd; do
		sym=${pair%%:*}
		bin=no; engine_has "${pair#*:}" && bin=yes
		tree=no; has_define "$sym" && tree=yes
		if [[ $bin != "$tree" ]]; then
			echo "fio-source: $sym: binary $bin (engine ${pair#*:}), tree $tree" >&2
			bad=1
		fi
	done
	for pair in CONFIG_LIBNUMA:numa_cpu_nodes CONFIG_CUDA:gpu_dev_id; do
		sym=${pair%%:*}
		bin=no; option_has "${pair#*:}" && bin=yes
		tree=no; has_define "$sym" && tree=yes
		if [[ $bin != "$tree" ]]; then
			echo "fio-source: $sym: binary $bin (option ${pair#*:}), tree $tree" >&2
			bad=1
		fi
	done
	# FIO_HAVE_SGIO comes from os/os-linux.h, not from configure.
	engine_has sg || { echo "fio-source: the fio binary has no sg engine (FIO_HAVE_SGIO)" >&2; bad=1; }
	if has_define CONFIG_SOLARISAIO; then
		echo "fio-source: CONFIG_SOLARISAIO set on Linux" >&2
		bad=1
	fi
	if has_define CONFIG_DYNAMIC_ENGINES || compgen -G '/usr/lib/*/fio/*.so' >/dev/null; then
		echo "fio-source: CONFIG_DYNAMIC_ENGINES differs (Debian builds engines in)" >&2
		bad=1
	fi
	if [[ $bad -ne 0 ]]; then
		echo "fio-source: the configured tree does not match $(command -v fio): install the" >&2
		echo "fio-source: missing -dev packages (scripts/deps.sh), then: rm -rf $dest && $0" >&2
		return 1
	fi
}

# The layout check (engines/layout_check.c) is built by meson with the
# engine and run by scripts/build.sh and the engine-fio-layout test.
verify() {
	check_features
}

# --- up to date? --------------------------------------------------------------

stamp_want="fio $deb_version"
if [[ -f $dest/$stamp_name && -f $dest/config-host.h &&
      $(head -n1 "$dest/$stamp_name") == "$stamp_want" ]]; then
	verify || exit 1
	echo "fio-source: $dest is configured for $stamp_want"
	exit 0
fi

# --- fetch ----------------------------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/torus-fio-src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
apt_source_fetch fio "$deb_version" "$tmp" "fio-source: fetching the source of fio $deb_version"
srcdir=$apt_source_dir
[[ -n $srcdir && -f $srcdir/configure && -f $srcdir/debian/rules ]] ||
	die "apt-get source produced no fio tree in $tmp/src"

# --- configure ------------------------------------------------------------------

# Debian's options, read from debian/rules' override_dh_auto_configure.
read -r -a conf_opts < <(sed -n 's/^[[:space:]]*\.\/configure[[:space:]]*//p' "$srcdir/debian/rules" | head -n1)
[[ ${#conf_opts[@]} -gt 0 ]] || die "no ./configure line in debian/rules of fio $deb_version"
if ! pkg-config --exists gtk+-2.0 gthread-2.0 2>/dev/null; then
	# gfio is a separate GTK program; nothing an engine includes depends on it.
	kept=()
	for o in "${conf_opts[@]}"; do
		[[ $o == --enable-gfio ]] || kept+=("$o")
	done
	conf_opts=("${kept[@]}")
	echo "fio-source: gtk2 headers absent: dropping --enable-gfio (the gfio program only)"
fi
echo "fio-source: ./configure ${conf_opts[*]}"
if ! (cd "$srcdir" &&
      eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_LDFLAGS_MAINT_PREPEND=-Wl,-z,defs \
	      dpkg-buildflags --export=sh 2>/dev/null)" &&
      ./configure "${conf_opts[@]}" && sh FIO-VERSION-GEN) >"$tmp/configure.log" 2>&1; then
	tail -n 20 "$tmp/configure.log" >&2
	die "fio's ./configure failed (above): run scripts/deps.sh for the -dev packages it needs"
fi
cp "$tmp/configure.log" "$srcdir/torus-configure.log"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$srcdir" "$dest"
verify || die "$dest was configured but does not match the fio binary (above)"
{
	echo "$stamp_want"
	echo "configure ${conf_opts[*]}"
} >"$dest/$stamp_name"
echo "fio-source: $dest is configured for $stamp_want"
