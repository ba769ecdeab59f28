#!/bin/bash
# Fetch, configure and build a newer fio than Debian 12's, for CI to check
# that the engine still builds and works against it.
#
#   scripts/fio-upstream.sh [DEST]     (DEST defaults to <repo>/.deps/fio-upstream)
#
# The newer fio is the one in Debian unstable (sid). Its source package is in
# the mirror's index, but of its files only the upstream tarball can be
# fetched, so this script:
#   1. writes a private apt configuration with one deb-src entry for sid on the
#      Debian mirror this machine already uses (derived from its apt sources,
#      as scripts/fio-source.sh does; the system's apt configuration is not
#      touched), and runs `apt-get update` against it: apt checks the suite's
#      InRelease signature with the keyring the machine's entry names,
#   2. runs `apt-get source --print-uris fio` to read the .orig.tar.* URI and
#      its SHA256 from that signed index,
#   3. downloads the tarball with apt-helper, which refuses it unless the
#      SHA256 matches,
#   4. unpacks it, runs a plain ./configure and builds the fio binary only
#      (make fio): the engine is then compiled against this very tree, so the
#      tree and the binary agree on config-host.h by construction,
#   5. moves it to DEST, with DEST/bin/fio (a link to DEST/fio, for PATH) and a
#      stamp DEST/.torus-stamp naming the source package and the tarball hash.
# Idempotent: when the stamp names what the index lists, nothing is rebuilt.
# When the index cannot be read, a complete earlier build is used as it is.
#
# Exit status: 0 ready; 77 the newer fio is not available here (no Debian
# source to derive the entry from, the index or the tarball cannot be
# fetched, no fio in it) and nothing was cached: the caller should skip;
# 1 anything else (checksum mismatch, configure or build failure).
#
# Environment: FIO_UPSTREAM_SUITE (default sid), FIO_UPSTREAM_JOBS (make -j,
# default 2).

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/.deps/fio-upstream}
suite=${FIO_UPSTREAM_SUITE:-sid}
jobs=${FIO_UPSTREAM_JOBS:-2}
stamp=$dest/.torus-stamp

say() {
	echo "fio-upstream: $*"
}

die() {
	echo "fio-upstream: $*" >&2
	exit 1
}

cached() {
	[[ -f $stamp && -x $dest/fio && -f $dest/config-host.h && -f $dest/FIO-VERSION-FILE ]]
}

# unavailable REASON: the newer fio cannot be had; use the cache if any.
unavailable() {
	if cached; then
		say "$1"
		say "using the earlier build in $dest ($(head -n1 "$stamp"))"
		exit 0
	fi
	echo "fio-upstream: UNAVAILABLE: $1" >&2
	exit 77
}

for tool in apt-get cc make tar; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/deps.sh"
done
helper=/usr/lib/apt/apt-helper
[[ -x $helper ]] || die "$helper not found (package apt)"

# --- the private apt configuration -------------------------------------------

# sid_src_entries: one deb-src line for $suite per Debian archive (not
# security) that an enabled "deb" entry of this machine uses, with the keyring
# that entry names.
sid_src_entries() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk -v suite="$suite" '
		function flush() {
			if (deb && enabled && (debian || keyring ~ /debian-archive-keyring/)) {
				n = split(uris, u, /[ \t]+/)
				for (i = 1; i <= n; i++)
					if (u[i] != "" && u[i] !~ /security/)
						printf "deb-src [signed-by=%s] %s %s main\n",
						       keyring != "" ? keyring : "/usr/share/keyrings/debian-archive-keyring.gpg",
						       u[i], suite
			}
			deb = 0; enabled = 1; debian = 0; uris = ""; keyring = ""
		}
		BEGIN { enabled = 1 }
		/^[ \t]*$/ { flush(); next }
		/^#/ { next }
		/^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
		/^Enabled:[ \t]*no/ { enabled = 0 }
		/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0; debian = ($0 ~ /debian\.org/) }
		/^Signed-By:[ \t]*\// { sub(/^Signed-By:[ \t]*/, ""); keyring = $0 }
		END { flush() }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk -v suite="$suite" '
		$1 == "deb" && /debian\.org|debian-archive-keyring/ {
			opts = ""; i = 2
			if ($2 ~ /^\[/) {
				for (; i <= NF; i++) {
					opts = opts (opts == "" ? "" : " ") $i
					if ($i ~ /\]$/) { i++; break }
				}
			}
			if ($i !~ /security/)
				print "deb-src" (opts == "" ? "" : " " opts) " " $i " " suite " main"
		}' "$f"
	done
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/torus-fio-upstream.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
sid_src_entries | awk '!seen[$0]++' >"$tmp/src.list"
grep -q . "$tmp/src.list" ||
	unavailable "no enabled Debian archive entry in /etc/apt/sources.list{,.d} to derive a deb-src entry for $suite from"

apt_opts=(-q -o "Dir::Etc::SourceList=$tmp/src.list" -o Dir::Etc::SourceParts=/dev/null
	  -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache")
[[ $(id -u) -eq 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)

say "reading the $suite source index ($(wc -l <"$tmp/src.list") entry derived from this machine's apt sources)"
if ! apt-get "${apt_opts[@]}" update >"$tmp/apt.log" 2>&1 ||
   grep -q '^E: \|^W: GPG error\|^W: Failed to fetch' "$tmp/apt.log"; then
	sed 's/^/  /' "$tmp/apt.log" >&2
	unavailable "apt-get update of the $suite deb-src entry failed (above)"
fi
if ! apt-get "${apt_opts[@]}" source --print-uris fio >"$tmp/uris" 2>"$tmp/uris.err"; then
	sed 's/^/  /' "$tmp/uris.err" >&2
	unavailable "the $suite index lists no fio source package (apt-get source --print-uris fio, above)"
fi

# Lines: 'URI' FILE SIZE SHA256:HEX
read -r orig_uri orig_file _ orig_hash < <(awk '$2 ~ /^fio_.*\.orig\.tar\.[a-z0-9]+$/ {
	gsub(/\047/, "", $1); print $1, $2, $3, $4; exit }' "$tmp/uris") || true
dsc=$(awk '$2 ~ /^fio_.*\.dsc$/ { print $2; exit }' "$tmp/uris")
[[ -n ${orig_uri:-} ]] || { cat "$tmp/uris" >&2; unavailable "apt-get source --print-uris fio names no .orig.tar.* (above)"; }
[[ ${orig_hash:-} == SHA256:* && ${#orig_hash} -eq 71 ]] ||
	die "no SHA256 for $orig_file in the $suite index (got '${orig_hash:-}'): refusing an unverified download"
upstream=${orig_file#fio_}
upstream=${upstream%.orig.tar.*}
deb_version=${dsc#fio_}
deb_version=${deb_version%.dsc}
deb_version=${deb_version:-$upstream}
want="fio $deb_version ($suite) $orig_file $orig_hash"

if cached && [[ $(head -n1 "$stamp") == "$want" ]]; then
	say "$dest is fio-$upstream, built from $orig_file ($orig_hash)"
	exit 0
fi

# --- fetch --------------------------------------------------------------------

say "downloading $orig_file (fio $deb_version in $suite), checked against $orig_hash"
helper_opts=()
[[ $(id -u) -eq 0 ]] && helper_opts+=(-o APT::Sandbox::User=root)
if ! "$helper" "${helper_opts[@]}" download-file "$orig_uri" "$tmp/$orig_file" "$orig_hash" \
	>"$tmp/download.log" 2>&1; then
	sed 's/^/  /' "$tmp/download.log" >&2
	if grep -qi 'hash sum mismatch\|hashes do not match\|size mismatch' "$tmp/download.log"; then
		die "$orig_file does not match the SHA256 in the signed index (above): not using it"
	fi
	unavailable "the mirror no longer serves $orig_file (above): the index is ahead of the pool or fio moved on"
fi

# --- configure and build ------------------------------------------------------

mkdir "$tmp/src"
tar -xf "$tmp/$orig_file" -C "$tmp/src" || die "cannot unpack $orig_file"
srcdir=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d | head -n1)
[[ -n $srcdir && -x $srcdir/configure ]] || die "$orig_file holds no fio tree with a configure script"

say "./configure && make -j$jobs fio in $srcdir"
if ! (cd "$srcdir" && ./configure) >"$tmp/configure.log" 2>&1; then
	tail -n 30 "$tmp/configure.log" >&2
	die "fio-$upstream's ./configure failed (above): run scripts/deps.sh for what it needs"
fi
if ! make -C "$srcdir" -j"$jobs" fio >"$tmp/make.log" 2>&1; then
	grep -E 'error|Error' "$tmp/make.log" | head -n 20 >&2 || true
	tail -n 30 "$tmp/make.log" >&2
	die "building fio-$upstream failed (above)"
fi
version=$("$srcdir/fio" --version)
[[ $version == "fio-$upstream" ]] ||
	die "the fio built from $orig_file reports '$version', not fio-$upstream"
grep -qx "FIO_VERSION = $version" "$srcdir/FIO-VERSION-FILE" ||
	die "$srcdir/FIO-VERSION-FILE does not name $version"
cp "$tmp/configure.log" "$srcdir/torus-configure.log"
mkdir "$srcdir/bin"
ln -s ../fio "$srcdir/bin/fio"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$srcdir" "$dest"
{
	echo "$want"
	echo "uri $orig_uri"
} >"$stamp"
say "$dest is $version, built from $orig_file ($orig_hash)"
