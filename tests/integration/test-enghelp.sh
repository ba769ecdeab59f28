#!/bin/bash
# Description: fio --enghelp lists every engine option with help text, and
# the README's option table documents exactly those options.
. "$TORUS_SRC/tests/lib.sh"
require fio

"$FIO" --enghelp="$ENGINE" >"$T/help" 2>&1 || fail "fio --enghelp failed: $(cat "$T/help")"
opts=$(awk -F: '/^[a-z_]+ +:/ { gsub(/ /, "", $1); print $1 }' "$T/help" | sort)
[ -n "$opts" ] || fail "no options in: $(cat "$T/help")"
for o in uri conns handshake fua structured_replies poll_us; do
	grep -qx "$o" <<<"$opts" || fail "--enghelp lacks option $o"
done
while read -r o; do
	grep -q "^| \`$o\` |" "$TORUS_SRC/README.md" || fail "README's option table lacks $o"
	grep -q "^$o  *: [A-Z]" "$T/help" || fail "option $o has no help text"
done <<<"$opts"
# Every option's help ends with its default and, where enforced, its range.
bad=$(grep -E '^[a-z_]+ +: ' "$T/help" | grep -vE ' \(default: [^;()]+(; range: [^ ;()]+ to [^ ;()]+)?\)$') &&
	fail "options whose help lacks ' (default: VALUE[; range: MIN to MAX])': $bad"
# One default per option (tls_username once said two).
bad=$(grep -E '\(default:.*\(default:' "$T/help") &&
	fail "options whose help gives two defaults: $bad"
for want in "transport:nbd" "request_timeout:30; range: 0 to 86400" "poll_us:0; range: 0 to 1000000" \
	"ring_size:8M; range: 64k to 256M" "data_size:1G; range: 4k to 64G" "max_transfer:0; range: 0 to 1G" "hold_batch:0"; do
	grep -E "^${want%%:*} +: " "$T/help" | grep -qF " (default: ${want#*:})" ||
		fail "--enghelp's ${want%%:*} does not end with (default: ${want#*:}): $(cat "$T/help")"
done
# The uri's help names the engine's version, meson.build's.
version=$(sed -n "s/^[[:space:]]*version : '\([^']*\)',\$/\1/p" "$TORUS_SRC/meson.build" | head -n 1)
[ -n "$version" ] || fail "no version in $TORUS_SRC/meson.build"
grep -qE "^uri +: Target of torus ${version//./\\.}: " "$T/help" ||
	fail "the uri's help does not name torus $version: $(cat "$T/help")"
documented=$(sed -n 's/^| `\([a-z_]*\)` | .*/\1/p' "$TORUS_SRC/README.md" | sort)
[ "$documented" = "$opts" ] || fail "README documents [$documented] but --enghelp lists [$opts]"
echo "PASS"
