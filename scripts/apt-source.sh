# shellcheck shell=bash
# `apt-get source` through a private apt configuration, sourced by
# scripts/fio-source.sh and scripts/tcmu-runner-source.sh.
#
# The deb-src entries are derived from this machine's Debian sources (or the
# default mirror for this release); the system's apt configuration is not
# touched. The sourcing script defines die (prints its message and exits).

# debian_src_entries: deb-src stanzas (deb822) for every enabled Debian "deb"
# entry configured on this machine.
debian_src_entries() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
		     /(^|\n)Types:[^\n]*\<deb\>/ && !/(^|\n)Enabled:[ \t]*no/ &&
		     (/(^|\n)URIs:[^\n]*debian\.org/ || /debian-archive-keyring/) {
			sub(/Types:[^\n]*/, "Types: deb-src"); print
		     }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '$1 == "deb" && /debian\.org|debian-archive-keyring/ {
			$1 = "deb-src"; print
		     }' "$f"
	done
}

# apt_source_fetch SRC_PKG VERSION TMP ANNOUNCE: fetch and unpack (Debian's
# patches applied) the source package SRC_PKG=VERSION under TMP/src, using
# TMP (an empty scratch directory the caller removes) for apt's lists, cache
# and log. ANNOUNCE is printed just before the download. Sets
# apt_source_dir to the unpacked tree (empty if none was found).
apt_source_fetch() {
	local pkg=$1 version=$2 tmp=$3 announce=$4 codename srclist apt_opts

	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"
	debian_src_entries >"$tmp/entries"
	if ! grep -q . "$tmp/entries"; then
		codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		[[ -n $codename ]] || die "no Debian apt source found and no VERSION_CODENAME in /etc/os-release"
		echo "deb-src http://deb.debian.org/debian $codename main" >"$tmp/entries"
	fi
	# apt picks the format from the file name.
	if grep -q '^Types:' "$tmp/entries"; then
		mv "$tmp/entries" "$tmp/src.sources"
		srclist=$tmp/src.sources
	else
		mv "$tmp/entries" "$tmp/src.list"
		srclist=$tmp/src.list
	fi

	apt_opts=(-q -o "Dir::Etc::SourceList=$srclist" -o Dir::Etc::SourceParts=/dev/null
		  -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache")
	[[ $(id -u) -eq 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)

	echo "$announce"
	if ! apt-get "${apt_opts[@]}" update >"$tmp/apt.log" 2>&1; then
		cat "$tmp/apt.log" >&2
		die "apt-get update of the deb-src entries failed (entries: $srclist, shown above); check the network and /etc/apt/sources.list.d"
	fi
	if ! (cd "$tmp/src" && apt-get "${apt_opts[@]}" source "$pkg=$version") >>"$tmp/apt.log" 2>&1; then
		tail -n 20 "$tmp/apt.log" >&2
		die "apt-get source $pkg=$version failed (above): is that version still in the archive? (snapshot.debian.org keeps old ones)"
	fi
	# shellcheck disable=SC2034 # the caller's result
	apt_source_dir=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d -name "$pkg-*" | head -n1)
}
